"""Round seven of issue 32: what the seventh test part showed, once it was scored and read."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit import _proc
from slurmkit.lint import LintContext, SlurmVersion, bash_check, lint_text

V22 = LintContext(SlurmVersion.parse("22.05"))


def _rules(text: str, context: LintContext = V22) -> list[tuple[int, str]]:
    return [(f.line, f.rule) for f in lint_text(text, "t.sh", context)]


SPENT7 = Path(__file__).parent.parent / "fixtures" / "real-scripts" / "spent-holdout7"
# valid bash the grammar misreads (a stray-looking `fi` on line 31): bash -n accepts it
VALID = (SPENT7 / "desisim--etc_quickquasar_slurm_script.sh").read_text()


def test_bash_decides_what_bash_refuses() -> None:
    """bash -n is the authority: a grammar error bash does not make is dropped; one bash
    makes too stays, where the grammar places it."""
    assert bash_check.verdict(VALID) == bash_check.Verdict(ok=True)
    assert "bash-syntax" not in {rule for _, rule in _rules(VALID)}
    refused = '#!/bin/bash\n#SBATCH -t 5\necho "open\nsrun hostname\n'
    assert bash_check.verdict(refused) == bash_check.Verdict(
        ok=False, line=3, message="unexpected EOF while looking for matching `\"'"
    )
    assert (3, "bash-syntax") in _rules(refused)


def test_without_bash_the_grammar_reading_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    """No bash (or one too slow): no verdict, lint says what the grammar says, no traceback."""

    def missing(*args: object, **kwargs: object) -> _proc.Completed:
        raise FileNotFoundError(2, "No such file or directory", "bash")

    monkeypatch.setattr(_proc, "runner", missing)
    assert bash_check.verdict(VALID) is None
    grammar_only = _rules(VALID)
    assert any(rule == "bash-syntax" for _, rule in grammar_only)  # the grammar's misreading
    off = LintContext(SlurmVersion.parse("22.05"), bash_check=False)
    assert _rules(VALID, off) == grammar_only


def test_a_job_script_in_a_heredoc_is_judged_by_the_grammar(tmp_path: Path) -> None:
    """The outer bash reads a heredoc as a string: its body's syntax is the grammar's call."""
    text = '#!/bin/bash\nsbatch <<EOF\n#!/bin/bash\n#SBATCH -t 5\necho "open\nEOF\necho done\n'
    assert any(rule == "bash-syntax" for _, rule in _rules(text))


def test_a_site_plugin_option_given_twice_is_the_plugin_s_business() -> None:
    """PC2's --fpgalink adds one link per line; only a stock option is judged twice."""
    links = "".join(f'#SBATCH --fpgalink="n0{i}:acl0:ch0-n0{i}:acl1:ch1"\n' for i in range(3))
    text = f"#!/bin/bash\n#SBATCH -t 5\n{links}srun hostname\n"
    assert "sbatch-option-twice" not in {rule for _, rule in _rules(text)}


def test_an_abbreviated_option_is_the_option_it_abbreviates() -> None:
    """getopt takes an unambiguous prefix: --accoun=a then --account=b is one option twice."""
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --accoun=a\n#SBATCH --account=b\nsrun hostname\n"
    assert (3, "sbatch-option-twice") in _rules(text)
