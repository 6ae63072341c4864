"""Round nine of issue 32, the lead's share: sbatch-misspelt, srun's pyxis switches, `==`.

What the ninth test part showed once read. Each test also keeps the finding the fixed
class resembles.
"""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text
from slurmkit.lint.script import Script

V24 = LintContext(SlurmVersion.parse("24.11"))
RULE = "sbatch-misspelt"


def _misspelt(text: str) -> list[tuple[int, str]]:
    """(line, severity) of every sbatch-misspelt finding at 24.11."""
    return [(f.line, f.severity) for f in lint_text(text, "t.sh", V24) if f.rule == RULE]


def test_a_hyphenated_word_of_prose_is_no_magic_word() -> None:
    """`#  BATCH-SIZE PILOT` is a heading: BATCH and -SIZE are one word, not a near miss of
    #SBATCH followed by an option. `#SBATH -N 2` (a blank after the word) still is."""
    prose = "#!/bin/bash\n#  BATCH-SIZE PILOT: settle the batch size\n#SBATCH -N 1\nhostname\n"
    assert _misspelt(prose) == []
    typo = "#!/bin/bash\n#SBATH -N 2\n#SBATCH -t 10\nhostname\n"
    assert _misspelt(typo) == [(2, "warning")]


def test_switched_off_alternatives_beside_the_options_they_replace_are_info() -> None:
    """`# SBATCH --gres=gpu:1` beside a read `#SBATCH --gres=gpu:l40s:4` is the other choice
    kept on purpose: the author knows the blank switches a line off, so the partition and
    constraint that went with that choice are switched off the same way (info, not a
    warning). Without such a pair a lone `# SBATCH` line is still a warning."""
    pair = (
        "#!/bin/bash\n#SBATCH --gres=gpu:l40s:4\n# SBATCH --gres=gpu:1\n"
        "# SBATCH --constraint='ampere'\n#SBATCH -p short\nhostname\n"
    )
    assert _misspelt(pair) == [(3, "info"), (4, "info")]
    lone = "#!/bin/bash\n#SBATCH -N 1\n# SBATCH --partition=main\nhostname\n"
    assert _misspelt(lone) == [(3, "warning")]
    short = "#!/bin/bash\n#SBATCH -p gpu\n# SBATCH -p main\nhostname\n"
    assert _misspelt(short) == [(3, "info")]


def test_pyxis_switches_take_no_value() -> None:
    """`srun --no-container-mount-home bash -lc "ray start ..."`: pyxis's switches take no
    value, so bash is the step's program (read as the switch's value, the step had none and
    the launcher in its string looked like the batch step's). A value option of pyxis
    (`--container-image IMG`) still takes the next word."""
    text = (
        "#!/bin/bash\n#SBATCH -N 2\nsrun -N1 --container-image img --no-container-mount-home "
        "--container-writable bash -lc 'ray start --head --block' &\nwait\n"
    )
    (srun,) = Script("t.sh", text).sruns
    assert [w.text for w in srun.program][:2] == ["bash", "-lc"]
    image = srun.option("container-image")
    assert image is not None and image.value == "img"
    found = {f.rule for f in lint_text(text, "t.sh", V24)}
    assert "launcher-outside-srun" not in found


def test_a_double_equals_is_no_assignment() -> None:
    """`if trial == 0; then` runs a command `trial` (a comparison written outside `[ ]`), but
    nothing was meant to be assigned: not assignment-with-spaces. `trial = 0` still is."""
    compared = "#!/bin/bash\n#SBATCH -N 1\nif trial == 0; then echo a; fi\n"
    assigned = "#!/bin/bash\n#SBATCH -N 1\ntrial = 0\n"
    rule = "assignment-with-spaces"
    assert [f.line for f in lint_text(compared, "t.sh", V24) if f.rule == rule] == []
    assert [f.line for f in lint_text(assigned, "t.sh", V24) if f.rule == rule] == [3]
