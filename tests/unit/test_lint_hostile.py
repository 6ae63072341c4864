"""``lint`` on inputs that are not scripts, or scripts built to hurt it (issues 14 and 21).

A FIFO blocked lint forever; a 5000-deep ``$(…)`` raised RecursionError; a file
of binary data or of hundreds of megabytes must be refused at once, in one line.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmkit.cli import cli
from slurmkit.errors import UsageError
from slurmkit.lint import LintContext, SlurmVersion, lint_text, read_script
from slurmkit.lint.shell import parse


def lint(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["lint", "--slurm-version", "22.05", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def refused(path: Path, why: str) -> None:
    code, out, err = lint(str(path))
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith(f"slurmkit: cannot lint {path}: ")
    assert why in err


def test_a_fifo_is_refused_without_opening_it_for_good(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    box: dict[str, object] = {}
    thread = threading.Thread(target=lambda: box.update(r=lint(str(fifo))), daemon=True)
    thread.start()
    thread.join(20)  # a hang guard: lint used to block here for ever
    if thread.is_alive():
        with open(fifo, "wb"):  # release the blocked reader so the test process can end
            pass
        pytest.fail("lint blocked on a FIFO")
    code, out, err = box["r"]  # type: ignore[misc]
    assert (code, out) == (2, "") and "not a regular file" in err and err.count("\n") == 1


def test_a_device_is_refused() -> None:
    code, _, err = lint("/dev/zero")
    assert code == 2 and "not a regular file" in err


def test_binary_data_after_the_first_block_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "late.bin"
    script.write_bytes(b"#!/bin/bash\n" + b"echo x\n" * 2000 + b"\0\1\2")
    refused(script, "not a text file")


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    script = tmp_path / "huge.sh"
    with script.open("wb") as out:
        out.truncate(100 * 1024 * 1024)  # 100 MB, sparse: costs nothing to make
    refused(script, "larger than 10 MB")


def test_stdin_over_the_size_limit_is_refused() -> None:
    code, _, err = lint("-", stdin=b"echo x\n" * (11 * 1024 * 1024 // 7))
    assert code == 2 and "larger than 10 MB" in err and err.count("\n") == 1


def test_read_script_refuses_non_regular_files(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        read_script(fifo)


@pytest.mark.parametrize("opening", ["$(", "<(", '"$('])
def test_deep_substitutions_are_read_not_a_recursion_error(opening: str) -> None:
    """The grammar reads a 5,000-deep $(…) (the hand lexer recursed, then refused it)."""
    closing = {"$(": ")", "<(": ")", '"$(': ')"'}[opening]
    text = "#!/bin/bash\nx=" + opening * 5000 + "true" + closing * 5000 + "\n"
    assert lint_text(text, "deep.sh") == []
    assert sum(c.name == "true" for c in parse(text).commands) == 1
    code, out, err = lint("-", stdin=text.encode())
    assert (code, out) == (0, "") and "0 errors" in err
    unclosed = "#!/bin/bash\nx=" + opening * 5000 + "true\n"
    (finding,) = lint_text(unclosed, "deep.sh")
    assert (finding.line, finding.rule) == (2, "bash-syntax")


def test_ordinary_nesting_still_reads_every_command() -> None:
    parsed = parse("a=$(b $(c $(d)))\n")
    assert sorted(c.words[0].text for c in parsed.commands if c.depth) == ["b", "c", "d"]


def test_many_variables_and_sruns_keep_each_sruns_environment() -> None:
    """The environment each srun sees is still its own after the linear rewrite."""
    lines = ["#!/bin/bash", "#SBATCH -c 4", "#SBATCH -t 10"]
    for i in range(300):
        lines += [f"export V{i}=x", "srun true"]
    lines += ["export SRUN_CPUS_PER_TASK=4", "srun true", "unset SRUN_CPUS_PER_TASK", "srun x"]
    text = "\n".join(lines) + "\n"
    findings = lint_text(text, "many.sh", LintContext(SlurmVersion(22, 5, 0), "option"))
    flagged = {f.line for f in findings if f.rule == "srun-cpus-per-task"}
    assert len(lines) - 2 not in flagged  # the srun after the export is fine
    assert len(lines) in flagged  # the one after the unset is not
    from slurmkit.lint.script import Script

    sruns = Script("many.sh", text).sruns
    assert "V1" not in sruns[0].env and "V1" in sruns[1].env and "V299" in sruns[299].env
    assert sruns[-1].env.get("SRUN_CPUS_PER_TASK") is None
    assert sruns[-2].env["SRUN_CPUS_PER_TASK"].exported
    assert len(sruns[299].env) == 300 and len(list(sruns[299].shell)) == 300
    assert dict(sruns[0].env) == {"V0": sruns[0].env["V0"]}
