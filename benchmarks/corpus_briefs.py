"""Fill in the helpers' briefs of a test-part round from corpus-collection.md (issue 32), by hand.

A round's staging area lives outside the checkout and is lost with the machine; twice a new
machine had to rebuild the briefs by hand from ``corpus-collection.md``. This writes them from
that file alone, so the briefs the helpers read are always the ones the project documents.

Usage (STAGING is the round's directory, holding ``candidates.tsv``):
``python benchmarks/corpus_briefs.py collect STAGING PART INITIALS FETCHES LOOKUPS STOPTIME``
(add ``--second-wave`` for a collector sent after the first eight)
``python benchmarks/corpus_briefs.py review STAGING PART``
``python benchmarks/corpus_briefs.py deepen STAGING PART REPOSFILE STOPTIME``

Each writes ``STAGING/brief-PART.md`` (``review-brief-PART.md`` for a review) and prints its path.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
CHECKOUT = BENCH.parent
DOC = BENCH / "corpus-collection.md"
HOLDOUT = CHECKOUT / "tests/fixtures/real-scripts/holdout10"


def section(text: str, start: str, end: str) -> str:
    """The doc's text from the line starting ``start`` up to (not including) the line ``end``."""
    begin = text.index(start)
    return text[begin : text.index(end, begin)]


def collector_text(text: str) -> str:
    body = section(text, "You are helping the slurmkit project", "## The reviewer's brief")
    held = len(json.loads((HOLDOUT / "LABELS.json").read_text())["scripts"])
    return body.replace("it holds HELD scripts", f"it holds {held:,} scripts")


def second_wave_text(text: str) -> str:
    quoted = section(text, "> ### Second wave", "\nA deepener gets")
    return (
        "\n".join(line.removeprefix(">").removeprefix(" ") for line in quoted.splitlines()) + "\n\n"
    )


def fill_common(body: str, staging: Path) -> str:
    candidates = staging / "candidates.tsv"
    if candidates.exists():
        count = sum(1 for _ in candidates.open())
        body = body.replace("lists CANDIDATES GitHub", f"lists {count:,} GitHub")
    return body.replace("the project checkout", str(CHECKOUT)).replace("$STAGING", str(staging))


def collect(
    text: str,
    staging: Path,
    part: str,
    initials: str,
    fetches: str,
    lookups: str,
    stop: str,
    second_wave: bool,
) -> str:
    body = collector_text(text)
    body = body.replace("**INITIALS**", f"**{initials}**")
    body = body.replace("**FETCHES `fetch` calls**", f"**{fetches} `fetch` calls**")
    body = body.replace("**LOOKUPS look-ups**", f"**{lookups} look-ups**")
    body = body.replace("**STOPTIME UTC**", f"**{stop} UTC**")
    body = re.sub(
        r"PART = \*\*PARTNAME\*\*.*",
        f"PART = **{part}**; INITIALS = **{initials}**; "
        f"FETCHES = **{fetches}**; LOOKUPS = **{lookups}**; STOPTIME = **{stop}**.",
        body,
    )
    if second_wave:
        body = second_wave_text(text) + body
    return fill_common(body, staging)


def review(text: str, staging: Path, part: str) -> str:
    body = section(
        text,
        "You are helping the slurmkit project (`the project checkout`, a SLURM "
        "toolbox with a batch-script linter).",
        "## The deepener's section",
    )
    body = body.replace("PART = **PARTNAME**", f"PART = **{part}**")
    body = body.replace("$STAGING/review-PART.md", f"$STAGING/review-{part}.md")
    return fill_common(body, staging)


def deepen(text: str, staging: Path, part: str, repos_file: str, stop: str) -> str:
    body = collector_text(text)
    deepener = text[text.index("### You are a DEEPENER") :]
    deepener = deepener.replace("`REPOSFILE`", f"`{repos_file}`").replace(
        "STOPT UTC", f"{stop} UTC"
    )
    body = re.sub(
        r"### Your share and budgets\n.*?(?=### What counts)", deepener + "\n", body, flags=re.S
    )
    body = re.sub(
        r"### How to find and copy \(tips\)\n.*?(?=### Files you write)", "", body, flags=re.S
    )
    body = re.sub(
        r"### This round's source of candidates.*?(?=### Slurm facts)", "", body, flags=re.S
    )
    body = re.sub(
        r"PART = \*\*PARTNAME\*\*.*",
        f"PART = **{part}**; REPOS = **{repos_file}**; STOPTIME = **{stop}**.",
        body,
    )
    return fill_common(body, staging)


def main(argv: list[str]) -> int:
    text = DOC.read_text()
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    mode, staging, part, *rest = argv
    staging_dir = Path(staging).resolve()
    if mode == "collect" and len(rest) in (4, 5):
        brief = collect(text, staging_dir, part, *rest[:4], second_wave="--second-wave" in rest)
        name = f"brief-{part}.md"
    elif mode == "review" and not rest:
        brief, name = review(text, staging_dir, part), f"review-brief-{part}.md"
    elif mode == "deepen" and len(rest) == 2:
        brief, name = deepen(text, staging_dir, part, *rest), f"brief-{part}.md"
    else:
        print(__doc__, file=sys.stderr)
        return 2
    out = staging_dir / name
    out.write_text(brief)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
