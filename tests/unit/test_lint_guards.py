"""Issue 32 item 6: code behind a guard on Slurm's own counts that never runs is not judged."""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text

HEAD = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
SLIP = '  [ -z "$x"] && echo empty\n'  # test-bracket-unclosed wherever it runs


def lines(text: str) -> list[int]:
    context = LintContext(SlurmVersion.parse("24.11"))
    return [f.line for f in lint_text(text, "t", context) if f.rule == "test-bracket-unclosed"]


@pytest.mark.parametrize(
    ("condition", "then_runs", "else_runs"),
    [
        ('[ "$SLURM_NNODES" -eq 1 ]', False, True),
        ('[ "$SLURM_NNODES" -gt 1 ]', True, False),
        ("[[ $SLURM_JOB_NUM_NODES -ge 2 ]]", True, False),
        ('[ "${SLURM_NNODES}" != 2 ]', False, True),
        ('[ "$OTHER" -gt 1 ]', True, True),  # not Slurm's: unknown, both may run
    ],
)
def test_if_guards_on_the_node_count(condition: str, then_runs: bool, else_runs: bool) -> None:
    text = HEAD + f"if {condition}; then\n{SLIP}else\n{SLIP}fi\n"
    assert lines(text) == [6] * then_runs + [8] * else_runs


def test_an_unknown_count_decides_nothing() -> None:
    text = (
        HEAD.replace("--nodes=2", "--nodes=1-4") + f'if [ "$SLURM_NNODES" -gt 1 ]; then\n{SLIP}fi\n'
    )
    assert lines(text) == [6]


def test_elif_chains_stop_at_the_first_true_branch() -> None:
    text = (
        HEAD + f'if [ "$SLURM_NNODES" -eq 1 ]; then\n{SLIP}'
        f'elif [ "$SLURM_NNODES" -eq 2 ]; then\n{SLIP}else\n{SLIP}fi\n'
    )
    assert lines(text) == [8]


@pytest.mark.parametrize(
    "loop",
    [
        "for i in $(seq 1 $((SLURM_NNODES - 1))); do",
        "for ((i = 1; i < SLURM_NNODES; i++)); do",
    ],
)
@pytest.mark.parametrize(("nodes", "runs"), [("1", False), ("2", True)])
def test_loops_bounded_by_the_node_count(loop: str, nodes: str, runs: bool) -> None:
    text = HEAD.replace("--nodes=2", f"--nodes={nodes}") + f"{loop}\n{SLIP}done\n"
    assert lines(text) == [6] * runs


def test_bash_still_reads_code_that_never_runs() -> None:
    text = HEAD + 'if [ "$SLURM_NNODES" -eq 1 ]; then\n  a && && b\nfi\n'
    rules = {f.rule for f in lint_text(text, "t", LintContext(SlurmVersion.parse("24.11")))}
    assert "bash-syntax" in rules
