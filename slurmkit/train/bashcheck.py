"""Whether a script parses as bash, before a train sources it in every run."""

from __future__ import annotations

from pathlib import Path

from slurmkit import _proc


def bash_syntax_error(script: Path) -> str | None:
    """``bash -n``'s first complaint about ``script``, None when it parses (or bash is absent).

    A run sourcing an unparsable script fails at once (exit 2): refused at ``start`` and
    ``switch``, shown by ``status`` when the script was edited into that state.
    """
    try:
        result = _proc.run(["bash", "-n", str(script)], timeout=30)
    except FileNotFoundError:
        return None
    if result.returncode == 0:
        return None
    lines = result.stderr.strip().splitlines()
    return lines[0] if lines else f"bash -n exited {result.returncode}"
