"""Round nine of issue 32, continued-into-command and bash-syntax: what the ninth test part
showed once read.

Each class below is one the rule read wrong (a backslash that joins nothing, a line after an
operator) or placed on the wrong line (a quote that never closes); each test also
keeps the finding the class resembles.
"""

from __future__ import annotations

import shutil

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V22 = LintContext(SlurmVersion.parse("22.05"))
HEADER = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks=1\n"


def _lines(body: str, rule: str, header: str = HEADER) -> list[int]:
    """Lines of every ``rule`` finding at 22.05 (the body starts on line 4)."""
    return [f.line for f in lint_text(header + body, "t.sh", V22) if f.rule == rule]


def test_a_line_after_an_operator_and_backslash_is_a_command_of_its_own() -> None:
    """``run --opt x || \\`` then ``echo failed``: after ``||`` (or ``&&``, ``|``, ``;``)
    the line end is only continued to the next command, which runs on its own (the
    fallback). Without the operator, echo is an argument of python."""
    fallback = 'python evaluate.py \\\n    --seeds 0 || \\\n    echo "evaluation failed"\n'
    assert _lines(fallback, "continued-into-command") == []
    lost = 'python evaluate.py \\\n    --seeds 0 \\\n    echo "evaluation failed"\n'
    assert _lines(lost, "continued-into-command") == [6]


def test_an_even_run_of_backslashes_joins_no_line() -> None:
    """``\\\\`` at a line end is one literal backslash: in ``bash -c "…; \\\\"`` it is the
    inner shell's backslash after a ``;``, and the next ``export`` is the inner shell's own
    command, not more arguments of the one above. One backslash still joins the lines."""
    inner = 'srun bash -c "\n    export A=1; \\\\\n    export B=2; \\\\\n    python run.py\n"\n'
    assert _lines(inner, "continued-into-command") == []
    joined = "export A=1 \\\n export B=2\n"
    assert _lines(joined, "continued-into-command") == [5]


needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="bash -n judges these")


@needs_bash
def test_an_unclosed_quote_is_where_it_opens() -> None:
    """bash names the end of the file ("unexpected EOF while looking for matching"), the
    grammar a later line where the shifted pairs leave a quote open; the quote that stays
    open is on the first line without which bash reads the whole script: there the fix is
    made. Closed, the script has no finding."""
    body = (
        "cat data | while read -r line; do\n"
        '    if echo "$line" | grep -q x; then\n'
        '        update "$(echo "$line" | grep -oP \'\\d+(?=/))" "$N"\n'
        "    fi\n"
        "done\n"
        "if [ -f log ]; then\n"
        "    cut -d'|' -f3- log | sort\n"
        "fi\n"
        "echo done\n"
    )
    assert _lines(body, "bash-syntax") == [6]
    closed = body.replace("'\\d+(?=/))\"", "'\\d+(?=/)')\"")
    assert _lines(closed, "bash-syntax") == []
