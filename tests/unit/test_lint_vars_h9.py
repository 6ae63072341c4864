"""unset-variable-option after the review of round six (issue 32): a script that defaults
its own lower-case inputs still has its slips found, and the rule stays linear in the
number of names, emptiness tests and uses (20,000 of each once took minutes).

Linearity is counted, not timed: the calls made from the rule's own module while
linting a script and one twice its size."""

from __future__ import annotations

import random
import sys
from types import FrameType

from slurmkit.lint import LintContext, SlurmVersion, lint_text
from slurmkit.lint.rules import variables

V = LintContext(SlurmVersion.parse("24.11.5"))
HEAD = "#!/bin/bash\n#SBATCH --time=1:00:00\n"
UNSET = "unset-variable-option"


def unset_lines(text: str) -> list[int]:
    return [f.line for f in lint_text(text, "t.sh", V) if f.rule == UNSET]


def test_a_slip_is_found_in_a_script_that_defaults_its_own_inputs() -> None:
    """/tmp/rv/seed.sh of the review: ``seed=${seed:-0}`` once silenced the whole rule."""
    text = HEAD + (
        "seed=${seed:-0}\nhead_node_ip=$(hostname -i)\n"
        "srun python train.py --seed $seed --ip $head_node_io\n"
    )
    assert unset_lines(text) == [5]


def test_other_inputs_of_a_script_that_defaults_its_own_stay_quiet() -> None:
    text = HEAD + (
        "seed=${seed:-0}\nhead_node_ip=$(hostname -i)\n"
        "srun python train.py --seed $seed --ip $head_node_ip --out $outdir\n"
    )
    assert unset_lines(text) == []


def _calls_in_the_rule(text: str) -> int:
    """Calls (Python and built-in) made from variables.py while ``text`` is linted."""
    calls = 0
    module = variables.__file__

    def count(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call") and frame.f_code.co_filename == module:
            calls += 1

    previous = sys.getprofile()
    sys.setprofile(count)
    try:
        lint_text(text, "big.sh", V)
    finally:
        sys.setprofile(previous)
    return calls


def _growth(script: object) -> float:
    assert callable(script)
    small, large = _calls_in_the_rule(script(300)), _calls_in_the_rule(script(600))
    return large / small


def _names_and_tests(count: int) -> str:
    """/tmp/rv/p_var_a.sh, smaller: every test was checked against every name set."""
    names = "".join(f"v{i}=1\n" for i in range(count))
    return HEAD + names + '[ -n "$foo" ] && echo x\n' * count


def _tests_and_uses(count: int) -> str:
    """/tmp/rv/p_var_b.sh, smaller: every use was checked against every test."""
    return HEAD + '[ -n "$foo" ] && echo x\nprog --opt $foo\n' * count


def test_slips_are_decided_once_per_name_not_per_test_and_name() -> None:
    assert unset_lines(_names_and_tests(3)) == []
    assert _growth(_names_and_tests) < 2.5


def test_uses_are_placed_among_the_tests_by_bisection() -> None:
    assert unset_lines(_tests_and_uses(3)) == [3]
    assert _growth(_tests_and_uses) < 2.5


def _slip_by_scan(name: str, assigned: set[str]) -> bool:
    """The rule's former definition, name by name: the index must agree with it."""
    for other in assigned:
        if other.startswith(name + "_") or other.endswith("_" + name):
            return True
        if other == name or abs(len(other) - len(name)) > 1:
            continue
        if len(other) == len(name):
            if sum(x != y for x, y in zip(name, other, strict=True)) == 1:
                return True
            continue
        short, long = sorted((name, other), key=len)
        if any(long[:i] + long[i + 1 :] == short for i in range(len(long))):
            return True
    return False


def test_the_slip_index_agrees_with_a_scan_of_every_name() -> None:
    rng = random.Random(32)

    def word() -> str:
        return "".join(rng.choice("ab_") for _ in range(rng.randint(1, 6)))

    assigned = {word() for _ in range(40)}
    slips = variables._Slips(assigned)
    for name in {word() for _ in range(400)} - assigned:
        assert (name in slips) == _slip_by_scan(name, assigned), name
    assert "head_node_io" in variables._Slips({"head_node_ip"})
    assert "rankmap" in variables._Slips({"rankmap_file"})
    assert "file" in variables._Slips({"rankmap_file"})
    assert "xyz" not in variables._Slips({"head_node_ip"})


def test_a_line_is_inside_the_merged_spans_exactly_when_inside_one() -> None:
    rng = random.Random(6)
    for _ in range(200):
        spans = [(a, a + rng.randint(0, 5)) for a in (rng.randint(1, 40) for _ in range(6))]
        merged = variables._merged(spans)
        for line in range(0, 50):
            assert variables._inside(merged, line) == any(a <= line <= b for a, b in spans)
