"""Whether a script parses as bash, before a train sources it in every run."""

from __future__ import annotations

from pathlib import Path

from slurmkit import _proc


def bash_syntax_error(script: Path, data: bytes | None = None) -> str | None:
    """``bash -n``'s first complaint about ``script``, None when it parses (or bash is absent).

    A run sourcing an unparsable script fails at once (exit 2): refused at ``start`` and
    ``switch``, shown by ``status`` when the script was edited into that state. ``data``:
    the script as the caller read it (after checking whose it is); bash reads it on
    stdin, so the bytes checked are the bytes read, never the path read again.
    """
    argv = ["bash", "-n", str(script) if data is None else _STDIN]
    text = None if data is None else data.decode(errors="replace")
    try:
        result = _proc.run(argv, timeout=30, input=text)
    except FileNotFoundError:
        return None
    if result.returncode == 0:
        return None
    lines = result.stderr.strip().splitlines()
    if not lines:
        return f"bash -n exited {result.returncode}"
    first = lines[0]
    return f"{script}{first[len(_STDIN) :]}" if first.startswith(_STDIN + ":") else first


# bash names the file it reads in its messages ("/dev/stdin: line 3: ..."), and only a
# named file gets line numbers: the script's own name is put back in its place.
_STDIN = "/dev/stdin"
