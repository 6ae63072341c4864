"""The one stderr helper: notices prefixed once, lines as given, progress only on a terminal."""

from __future__ import annotations

import io

import pytest

from slurmkit import stderr


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_say_prefixes_line_does_not(capsys: pytest.CaptureFixture[str]) -> None:
    stderr.say("no nodes match")
    stderr.line("+ squeue --all")
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == "slurmkit: no nodes match\n+ squeue --all\n"


def test_progress_only_when_a_person_watches(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe, tty = io.StringIO(), _Tty()
    monkeypatch.setattr("sys.stderr", pipe)
    stderr.progress("job 5 RUNNING")
    monkeypatch.setattr("sys.stderr", tty)
    stderr.progress("job 5 RUNNING")
    assert pipe.getvalue() == "" and tty.getvalue() == "job 5 RUNNING\n"


def test_the_library_default_notice_channels_are_the_helper() -> None:
    from slurmkit.faulty import drain
    from slurmkit.pyspy.collect import Settings
    from slurmkit.remote.base import RemoteOptions

    assert RemoteOptions().notify is stderr.say
    assert Settings().notify is stderr.say
    assert drain.reconcile.__defaults__ == (stderr.say,)


def test_nothing_else_writes_to_stderr_itself() -> None:
    """issue 15: one stderr helper. Prompts (click.confirm) and the node-side script are apart:
    pyspy's node_script runs alone on the nodes, outside the package."""
    import re
    from pathlib import Path

    import slurmkit

    root = Path(slurmkit.__file__).parent
    own = re.compile(r"click\.echo\([^\n]*err=True|file=sys\.stderr|sys\.stderr\.write")
    found = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        if path.name not in {"stderr.py", "node_script.py"}
        for number, text in enumerate(path.read_text().splitlines(), 1)
        if own.search(text)
    ]
    assert found == []
