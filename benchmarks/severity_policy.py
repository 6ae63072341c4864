"""Would "severity from unseen precision" have met issue 32's goal? Replayed, not guessed.

The idea: a rule that was wrong on earlier test parts more often than a threshold shows
its findings as info (not counted, not alarming) until it is fixed. Judged fairly, the
decision for test part k may use only parts 2..k-1 (what was known on the day part k was
scored), and the result is part k's precision and recall with those rules demoted. Each
part is linted with the code and labels of its scoring commit (as
``unseen_precision.py`` does), so nothing here was tuned on the part it scores.

Run by hand (a minute; needs the git history):
``.venv/bin/python benchmarks/severity_policy.py``. Prints a markdown table.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from unseen_precision import SCORED, VERSIONS, Records, records_at, shown_by_rule

THRESHOLDS = (None, 0.5, 0.7, 0.9)
MIN_FINDINGS = 4  # a rule judged on fewer earlier findings keeps its severity


def demoted(earlier: list[Records], threshold: float | None) -> set[str]:
    """Rules whose shown (error and warning) findings on earlier parts were right too rarely."""
    if threshold is None:
        return set()
    right: Counter[str] = Counter()
    shown: Counter[str] = Counter()
    for records in earlier:
        for rule, (ok, n) in shown_by_rule(records["findings"]).items():
            right[rule] += ok
            shown[rule] += n
    return {r for r, n in shown.items() if n >= MIN_FINDINGS and right[r] / n < threshold}


def never_right_unseen(by_part: dict[str, tuple[int, int]]) -> bool:
    """Wrong more often than right on the scored test parts pooled (10 findings or more)
    and on the last part it showed anything on (``by_part`` in the order the parts were
    scored): the fixes of each round, made on the part before, did not carry over to the
    next, so the rule's tuned figure says nothing. A rule a fix has since brought right on a
    part keeps its severity. ``tests/unit/test_lint_corpus.py`` applies it to the committed
    record (``precision_unseen.UNSEEN_SHOWN``)."""
    right = sum(r for r, _ in by_part.values())
    shown = sum(n for _, n in by_part.values())
    last_right, last_shown = list(by_part.values())[-1]
    return shown >= 10 and right / shown < 0.5 and last_right / last_shown < 0.5


def demoted_consistently(earlier: list[Records]) -> set[str]:
    """The rules :func:`never_right_unseen` quiets, judged on the earlier parts only."""
    by_rule: dict[str, dict[str, tuple[int, int]]] = {}
    for index, records in enumerate(earlier):
        for rule, (right, n) in shown_by_rule(records["findings"]).items():
            by_rule.setdefault(rule, {})[str(index)] = (right, n)
    return {rule for rule, by_part in by_rule.items() if never_right_unseen(by_part)}


def score(records: Records, quiet: set[str], version: str) -> str:
    shown: Counter[str] = Counter()
    right: Counter[str] = Counter()
    seen = set()
    for v, file, line, rule, severity, ok in records["findings"]:
        if v == version and severity != "info" and rule not in quiet:
            shown[severity] += 1
            right[severity] += ok
            seen.add((file, line, rule))
    high = [h for h in records["high"] if h[0] == version]
    found = sum(any((h[1], n, h[3]) in seen for n in h[2]) for h in high)
    return " | ".join(
        f"{round(100 * a / b)}% ({a}/{b})" if b else "-"
        for a, b in (
            (right["error"], shown["error"]),
            (right["warning"], shown["warning"]),
            (found, len(high)),
        )
    )


def main() -> int:
    parts = [(part, records_at(part, commit)) for part, commit in SCORED]
    heads = ("part", "rules demoted", "Slurm", "errors right", "warnings right", "recall (high)")
    print("| demote below | " + " | ".join(heads) + " |")
    print("|---|---|---|---|---|---|---|")
    policies: list[tuple[str, float | str | None]] = [
        (f"{t:.0%}" if t is not None else "never", t) for t in THRESHOLDS
    ]
    policies.append(("consistently under 50%", "consistent"))
    for name, threshold in policies:
        for k in range(1, len(parts)):
            earlier = [r for _, r in parts[:k]]
            quiet = (
                demoted(earlier, threshold)
                if not isinstance(threshold, str)
                else demoted_consistently(earlier)
            )
            for version in VERSIONS:
                print(
                    f"| {name} | {parts[k][0]} | {len(quiet)} | {version} | "
                    f"{score(parts[k][1], quiet, version)} |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
