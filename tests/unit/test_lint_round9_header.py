"""Round nine of issue 32, sbatch-misspelt: what the ninth test part showed once read.

Each class is a comment that only looks like a misspelt directive; each test also keeps
the warning the class resembles.
"""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text

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
