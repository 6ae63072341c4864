"""Reading a script's #SBATCH header the way sbatch does, and the start-time refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit.errors import UsageError
from slurmkit.sbatch.header import parse_header, parse_words, read_header
from slurmkit.train.submit import default_name, training_header

SEED_SCRIPT = """\
#!/bin/bash
#SBATCH --job-name=tr8-104B
#SBATCH --nodes=64
#SBATCH --ntasks-per-node=1          # crucial - only 1 task per dist per node!
#SBATCH --cpus-per-task=96           # number of cores per tasks
#SBATCH --gres=gpu:8                 # number of gpus
#SBATCH --time 20:00:00              # maximum execution time (HH:MM:SS)
#SBATCH --output=%x-%j.out           # output file name
#SBATCH --partition=dev

source tr8-104B-64.slurm
"""


def test_seed_header_normalised_to_long_words() -> None:
    header = parse_header(SEED_SCRIPT)
    assert header.words == [
        "--job-name=tr8-104B",
        "--nodes=64",
        "--ntasks-per-node=1",
        "--cpus-per-task=96",
        "--gres=gpu:8",
        "--time=20:00:00",
        "--output=%x-%j.out",
        "--partition=dev",
    ]
    assert header.value("time") == "20:00:00"
    assert [d.line for d in header.directives][:2] == [2, 3]
    assert header.ignored_lines == ()


def test_short_options_flags_and_several_per_line() -> None:
    header = parse_header("#!/bin/bash\n#SBATCH -N2 -n 4 -c1 -HO -p gpu -t 5 --exclusive\n")
    assert header.words == [
        "--nodes=2",
        "--ntasks=4",
        "--cpus-per-task=1",
        "--hold",
        "--overcommit",
        "--partition=gpu",
        "--time=5",
        "--exclusive",
    ]


def test_quoted_values_and_comments() -> None:
    header = parse_header("#!/bin/bash\n#SBATCH --comment 'a b' -o \"x %j.out\" # note\n")
    assert header.words == ["--comment=a b", "--output=x %j.out"]


def test_directives_after_the_first_command_are_ignored_like_sbatch() -> None:
    text = "#!/bin/bash\n# a comment\n\n#SBATCH -N1\necho hi\n#SBATCH -N4\n# SBATCH -N8\n"
    header = parse_header(text)
    assert header.words == ["--nodes=1"]
    assert header.ignored_lines == (6,)


def test_later_option_wins() -> None:
    header = parse_header("#!/bin/bash\n#SBATCH -N1\n#SBATCH --nodes=3\n")
    assert header.value("nodes") == "3"


def test_aliases_become_canonical_names() -> None:
    words = ["--tasks-per-node=2", "--workdir", "/w", "--partition", "cpu"]
    assert [d.word for d in parse_words(words)] == [
        "--ntasks-per-node=2",
        "--chdir=/w",
        "--partition=cpu",
    ]


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["-N"], "needs a value"),
        (["--time"], "needs a value"),
        (["-Y"], "unknown sbatch option -Y"),
        (["train.py"], "not an sbatch option"),
    ],
)
def test_bad_option_words(words: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_words(words)


def test_indented_and_lower_case_directives_are_not_read() -> None:
    header = parse_header("#!/bin/bash\n#SBATCH -N1\n  #SBATCH -N2\n#sbatch -N3\n")
    assert header.words == ["--nodes=1"]
    assert header.ignored_lines == (3, 4)


def _write(tmp_path: Path, text: str, name: str = "train.slurm") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_training_header_drops_array_and_job_name_with_notices(tmp_path: Path) -> None:
    script = _write(tmp_path, "#!/bin/bash\n#SBATCH -N1 --array=1-9 -J x -t 5\necho\n#SBATCH -N2\n")
    header, extra, notices = training_header(script, ["--partition", "cpu"])
    assert header.words == ["--nodes=1", "--time=5", "--partition=cpu"]
    assert extra == ["--partition=cpu"]
    assert any("--array=1-9 ignored" in n for n in notices)
    assert any("--job-name=x ignored" in n for n in notices)
    assert any("sbatch ignores #SBATCH on line 4" in n for n in notices)


def test_no_sbatch_lines_is_refused(tmp_path: Path) -> None:
    script = _write(tmp_path, "#!/bin/bash\npython train.py\n")
    with pytest.raises(UsageError, match="no #SBATCH lines"):
        training_header(script, [])


def test_no_nodes_is_refused_unless_given_as_extra(tmp_path: Path) -> None:
    script = _write(tmp_path, "#!/bin/bash\n#SBATCH --time=5 -c1\n")
    with pytest.raises(UsageError, match="no --nodes"):
        training_header(script, [])
    header, _, _ = training_header(script, ["-N", "2"])
    assert header.value("nodes") == "2"


@pytest.mark.parametrize(
    ("extra", "use"),
    [
        (["--array=1-3"], "--runs"),
        (["-J", "x"], "--name"),
        (["--dependency=afterany:3"], "--after"),
    ],
)
def test_extra_options_the_train_owns_are_refused(
    tmp_path: Path, extra: list[str], use: str
) -> None:
    script = _write(tmp_path, "#!/bin/bash\n#SBATCH -N1\n")
    with pytest.raises(UsageError, match=f"use the train's {use}"):
        training_header(script, extra)


def test_unreadable_scripts(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        read_header(tmp_path / "missing.slurm")
    with pytest.raises(UsageError, match="is a directory"):
        read_header(tmp_path)
    binary = tmp_path / "a.out"
    binary.write_bytes(b"\x7fELF\0\0")
    with pytest.raises(UsageError, match="binary"):
        read_header(binary)


def test_default_name(tmp_path: Path) -> None:
    assert default_name(_write(tmp_path, SEED_SCRIPT)) == "tr8-104B"
    assert default_name(_write(tmp_path, "#!/bin/bash\n#SBATCH -N1\n", "tr9.slurm")) == "tr9"
