"""Stage, check and merge a collection of real sbatch scripts for the next test part.

A test part is collected by people who do not work on the rules (``corpus-collection.md``
beside this file gives their briefs). Each collector writes a *staged part* outside the
project: the scripts copied byte for byte, ``SOURCES.tsv``, ``LABELS.json``, ``SHIPS.tsv``
and ``NOTES.md``. This tool holds the checks every earlier round applied by hand, so that a
new machine (where the last round's notes are gone) applies the same ones:

    python benchmarks/corpus_staging.py check STAGE/PART     # what is wrong with a part
    python benchmarks/corpus_staging.py similar FILE         # the corpus files closest to FILE
    python benchmarks/corpus_staging.py merge --into DIR [--dry-run] PART... [--drop NAME]...
    python benchmarks/corpus_staging.py merge --into DIR --reviews PART...  # drops from reviews

``check`` and ``similar`` read the scripts, never lint them: collectors and reviewers may run
them without seeing what lint says. Run by hand, not in tests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.score_lint_corpus import CORPUS, LABEL_KINDS, scripts
from benchmarks.score_lint_corpus import read_rows as rows
from slurmkit.lint.rules import RULE_IDS

STAGED_EXTRA = {"NOTES.md"}
NEAR_COPY = 0.6  # a script sharing this share of its distinct lines with another is a copy
# One GitHub owner gives at most this many scripts to a test part (2% of holdout8's 1,116):
# a lab that keeps six jobs in each of ten pipeline repositories would otherwise weigh as
# much as forty independent authors (the 2026-11-30 round staged 75 from one lab).
OWNER_CAP = 24
RENAMED_OWNERS = {"natlabrockies": "nrel"}  # NREL's organisation, renamed in 2025
JUDGED = Path(__file__).with_name("corpus-judged.txt")  # fetched by a round, left out
VERSIONS = {"22.05", "24.11", "26.05"}
SOURCE_COLUMNS = ("file", "repository", "path", "commit", "licence", "labels")
SHIPS_COLUMNS = ("repository", "directory", "commit", "evidence")


def script_files(directory: Path) -> list[Path]:
    """The scorer's scripts of a directory, less a staged part's NOTES.md."""
    return [directory / name for name in scripts(directory) if name not in STAGED_EXTRA]


def corpus_directories() -> list[Path]:
    return [CORPUS, *sorted(p for p in CORPUS.iterdir() if p.is_dir())]


def corpus_repositories(deepening: Path | None = None) -> set[str]:
    """Every repository of every subset, lower case (GitHub names are case-insensitive).

    ``deepening``: a test part whose own repositories may give more scripts (a deepening
    pass takes more different jobs from repositories the part already holds).
    """
    return {
        r["repository"].lower()
        for d in corpus_directories()
        if (d / "SOURCES.tsv").is_file()
        and (deepening is None or d.resolve() != deepening.resolve())
        for r in rows(d / "SOURCES.tsv")
    }


def _bytes(path: Path) -> bytes:
    """A file's bytes; none for one another collector removed since it was listed.

    Collectors stage at the same time, each dropping near-copies of its own; a check of
    one part reads every other part, and must not crash on a file gone a moment later.
    """
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def distinct_lines(path: Path) -> frozenset[str]:
    """The non-blank lines, stripped: what two copies of one job share whatever the layout.

    The commonest shebang is left out, so that two three-line scripts are not copies for it.
    """
    text = _bytes(path).decode("utf-8", "replace")
    return frozenset(
        s for s in (line.strip() for line in text.splitlines()) if s and s != "#!/bin/bash"
    )


@dataclass(frozen=True)
class Near:
    share: float
    other: Path


def closest(path: Path, pool: Iterable[Path], count: int = 5) -> list[Near]:
    """The pool's files holding the largest share of ``path``'s distinct lines."""
    mine = distinct_lines(path)
    if not mine:
        return []
    found = [
        Near(len(mine & distinct_lines(other)) / len(mine), other)
        for other in pool
        if other.resolve() != path.resolve()
    ]
    return sorted(found, key=lambda near: -near.share)[:count]


def staged_parts(stage: Path) -> list[Path]:
    return sorted(p for p in stage.iterdir() if p.is_dir() and (p / "SOURCES.tsv").is_file())


def pool_beside(part: Path) -> list[Path]:
    """Every corpus script and every script of the other staged parts."""
    pool = [p for d in corpus_directories() for p in script_files(d)]
    for other in staged_parts(part.parent):
        if other.resolve() != part.resolve():
            pool += script_files(other)
    return pool


def check_part(part: Path, deepening: Path | None = None) -> list[str]:
    """Everything that would keep a staged part out of the test part, one line each."""
    problems: list[str] = []
    source_path = part / "SOURCES.tsv"
    sources = rows(source_path) if source_path.is_file() else []
    if not sources:
        return ["SOURCES.tsv is missing or empty"]
    problems += _check_sources(part, sources, deepening)
    problems += _check_copies(part, deepening is not None)
    problems += _check_labels(part)
    problems += _check_ships(part)
    return problems


def judged_repositories() -> set[str]:
    if not JUDGED.is_file():
        return set()
    lines = (line.strip() for line in JUDGED.read_text().splitlines())
    return {line.lower() for line in lines if line and not line.startswith("#")}


def owner_of(repository: str) -> str:
    owner = repository.split("/")[0].lower()
    return RENAMED_OWNERS.get(owner, owner)


def owner_counts(stage: Path) -> Counter[str]:
    """Scripts per owner in the test parts not yet scored and in every staged part.

    A staged part stays on disk after its merge, so a script is counted once by its name:
    its merged copy and its staged one are the same script.
    """
    parts = [d for d in corpus_directories() if d.name.startswith("holdout")]
    parts += staged_parts(stage)
    owners = {
        r["file"]: owner_of(r["repository"])
        for d in parts
        if (d / "SOURCES.tsv").is_file()
        for r in rows(d / "SOURCES.tsv")
    }
    return Counter(owners.values())


def _check_owner_cap(part: Path, sources: list[dict[str, str]]) -> list[str]:
    counts = owner_counts(part.parent)
    over = sorted(
        {owner_of(r["repository"]) for r in sources}
        & {o for o, n in counts.items() if n > OWNER_CAP}
    )
    return [
        f"owner {o}: {counts[o]} scripts in the test part and the stage, above the cap of "
        f"{OWNER_CAP}: leave out whole repositories"
        for o in over
    ]


def _check_sources(part: Path, sources: list[dict[str, str]], deepening: Path | None) -> list[str]:
    problems = _check_owner_cap(part, sources)
    used = corpus_repositories(deepening)
    judged = judged_repositories()
    used_names = {repo.split("/")[-1] for repo in used}
    elsewhere = {
        r["repository"].lower(): other.name
        for other in staged_parts(part.parent)
        if other.resolve() != part.resolve()
        for r in rows(other / "SOURCES.tsv")
    }
    for row in sources:
        name, repo = row.get("file", ""), row.get("repository", "").lower()
        problems += [f"{name}: empty {c}" for c in SOURCE_COLUMNS if not row.get(c)]
        if repo in used:
            problems.append(f"{name}: {row['repository']} is already in the corpus")
        elif repo in judged:
            problems.append(
                f"{name}: {row['repository']} was fetched and left out by an earlier round "
                f"({JUDGED.name}): say why it qualifies now, or leave it out"
            )
        elif repo.split("/")[-1] in used_names:
            problems.append(
                f"{name}: WARNING {repo} has a corpus repository's name: a fork or rename?"
            )
        if repo in elsewhere and deepening is None:
            problems.append(f"{name}: {row['repository']} is also staged in {elsewhere[repo]}")
        if len(row.get("commit", "")) != 40:
            problems.append(f"{name}: the commit is not 40 hex digits")
    listed = {row["file"] for row in sources}
    present = {p.name for p in script_files(part)}
    problems += [f"{n}: in SOURCES.tsv, no such file" for n in sorted(listed - present)]
    problems += [f"{n}: a file SOURCES.tsv does not list" for n in sorted(present - listed)]
    return problems


def _check_copies(part: Path, deepening: bool = False) -> list[str]:
    """Byte copies and near-copies, the share counted on this part's script.

    A deepening part comes after the scripts already taken from its repositories, so one of
    its scripts can hold a smaller taken script whole (a job with a stage added): the share
    is then counted on the taken script too, and the deepener's copy is the one to drop.
    """
    problems = []
    pool = pool_beside(part)
    digests = {hashlib.md5(body).hexdigest(): p for p in pool if (body := _bytes(p))}
    mine = script_files(part)
    for path in mine:
        copy = digests.get(hashlib.md5(path.read_bytes()).hexdigest())
        if copy is not None:
            problems.append(f"{path.name}: a byte copy of {copy}")
        near = closest(path, pool + mine, 1)
        if near and near[0].share >= NEAR_COPY:
            share, other = near[0].share, near[0].other
            problems.append(f"{path.name}: shares {share:.0%} of its distinct lines with {other}")
        if deepening:
            problems += [
                f"{path.name}: holds {share:.0%} of the distinct lines of {other}, taken before"
                for share, other in _held_in(path, pool)
                if share >= NEAR_COPY
            ][:1]
    return problems


def _held_in(path: Path, pool: Iterable[Path]) -> list[tuple[float, Path]]:
    """The pool's scripts by the share of their own distinct lines that ``path`` holds."""
    mine = distinct_lines(path)
    found = [
        (len(mine & theirs) / len(theirs), other)
        for other in pool
        if (theirs := distinct_lines(other)) and other.resolve() != path.resolve()
    ]
    return sorted(found, key=lambda pair: -pair[0])


def _check_labels(part: Path) -> list[str]:
    try:
        document = json.loads((part / "LABELS.json").read_text())
        scripts = document["scripts"]
    except (OSError, ValueError, KeyError) as error:
        return [f"LABELS.json is unreadable: {error}"]
    problems = []
    if not str(document.get("format", "")).startswith("labels 1"):
        problems.append("LABELS.json: its format must start with 'labels 1'")
    present = {p.name for p in script_files(part)}
    problems += [f"{n}: no entry in LABELS.json" for n in sorted(present - set(scripts))]
    problems += [f"LABELS.json names {n}: no such file" for n in sorted(set(scripts) - present)]
    kinds = RULE_IDS | LABEL_KINDS
    for name in sorted(set(scripts) & present):
        last = (part / name).read_bytes().count(b"\n") + 1
        for defect in scripts[name]["defects"]:
            if not 1 <= defect.get("line", 0) <= last:
                problems.append(f"{name}: label line {defect.get('line')} is outside the file")
            if defect.get("kind") not in kinds:
                problems.append(f"{name}: unknown kind {defect.get('kind')}")
            if not isinstance(defect.get("high"), bool):
                problems.append(f"{name}: 'high' must be true or false")
            if not set(defect.get("versions", [])) <= VERSIONS:
                problems.append(f"{name}: versions must be among {sorted(VERSIONS)}")
            if not defect.get("why"):
                problems.append(f"{name}: a label without 'why'")
    return problems


def _check_ships(part: Path) -> list[str]:
    if not (part / "SHIPS.tsv").is_file():
        return ["SHIPS.tsv is missing (a header alone when no log directory is shipped)"]
    return [
        f"SHIPS.tsv: a row without {', '.join(SHIPS_COLUMNS)}: {row}"
        for row in rows(part / "SHIPS.tsv")
        if not all(row.get(c) for c in SHIPS_COLUMNS)
    ]


def merge(
    into: Path, parts: list[Path], drops: set[str], dry_run: bool, deepening: bool = False
) -> list[str]:
    """Append staged parts to a test part; returns what was refused, one line each.

    A repository already in the corpus or in two parts, a byte copy and a name the corpus
    has are refused; SHIPS rows follow their repository.
    """
    used = corpus_repositories(into if deepening else None)
    digests = {
        hashlib.md5(p.read_bytes()).hexdigest(): p
        for d in corpus_directories()
        for p in script_files(d)
    }
    names = {p.name for d in corpus_directories() for p in script_files(d)}
    labels = json.loads((into / "LABELS.json").read_text())
    added: list[dict[str, str]] = []
    ships: list[dict[str, str]] = []
    staged_in: dict[str, str] = {}
    per_owner = Counter(owner_of(r["repository"]) for r in rows(into / "SOURCES.tsv"))
    refused: list[str] = []
    for part in parts:
        part_labels = json.loads((part / "LABELS.json").read_text())["scripts"]
        kept: set[str] = set()
        for row in rows(part / "SOURCES.tsv"):
            name, repo = row["file"], row["repository"].lower()
            body = (part / name).read_bytes()
            digest = hashlib.md5(body).hexdigest()
            why = (
                "dropped on the reviewers' word"
                if name in drops
                else "its repository is in the corpus"
                if repo in used
                else f"its repository is also in {staged_in[repo]}"
                if staged_in.setdefault(repo, part.name) != part.name
                else f"a byte copy of {digests[digest]}"
                if digest in digests
                else "the corpus has that name"
                if name in names
                else f"its owner has {OWNER_CAP} scripts already (the cap)"
                if per_owner[owner_of(repo)] >= OWNER_CAP
                else ""
            )
            if why:
                refused.append(f"{part.name}/{name}: {why}")
                continue
            digests[digest], kept = part / name, kept | {repo}
            names.add(name)
            per_owner[owner_of(repo)] += 1
            added.append(row)
            labels["scripts"][name] = part_labels[name]
            if not dry_run:
                shutil.copyfile(part / name, into / name)
        ships += [s for s in rows(part / "SHIPS.tsv") if s["repository"].lower() in kept]
    if not dry_run:
        _append(into, labels, added, ships)
    repos = {row["repository"].lower() for row in added}
    print(
        f"{'would add' if dry_run else 'added'} {len(added)} scripts from {len(repos)} "
        f"repositories to {into}"
    )
    return refused


def review_drops(part: Path) -> tuple[set[str], list[str]]:
    """The scripts a part's blind review leaves out, read from its ``## Drop`` list.

    The review is ``review-PART.md`` beside the part. Only the list's own bullets count: a
    review that goes on with prose and a "kept, although similar" list under the same heading
    once had a kept script read as a drop. A bullet naming no staged file is reported, not
    guessed at.
    """
    review = part.parent / f"review-{part.name}.md"
    if not review.is_file():
        return set(), [f"{part.name}: no review at {review}"]
    drops: set[str] = set()
    problems: list[str] = []
    in_list = bulleted = False
    for line in review.read_text().splitlines():
        if line.startswith("## "):
            if in_list:
                break
            in_list = line.strip() == "## Drop"
        elif in_list and line.startswith("- "):
            bulleted = True
            name = line[2:].split(":", 1)[0].strip().strip("`*")
            if (part / name).is_file():
                drops.add(name)
            else:
                problems.append(f"{review.name}: a drop names no staged file: {name!r}")
        elif in_list and bulleted and line.strip() and not line.startswith(" "):
            break
    return drops, problems


def _append(
    into: Path, labels: dict, added: list[dict[str, str]], ships: list[dict[str, str]]
) -> None:
    labels["scripts"] = dict(sorted(labels["scripts"].items()))
    (into / "LABELS.json").write_text(json.dumps(labels, indent=1))
    with open(into / "SOURCES.tsv", "a") as stream:
        stream.writelines("\t".join(row[c] for c in SOURCE_COLUMNS) + "\n" for row in added)
    have = {tuple(row[c] for c in SHIPS_COLUMNS) for row in rows(into / "SHIPS.tsv")}
    with open(into / "SHIPS.tsv", "a") as stream:
        for row in ships:
            values = tuple(row[c] for c in SHIPS_COLUMNS)
            if values not in have:
                have.add(values)
                stream.write("\t".join(values) + "\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    checking = verbs.add_parser("check")
    checking.add_argument("part", type=Path)
    checking.add_argument(
        "--deepening", type=Path, help="a test part whose repositories may give more"
    )
    similar = verbs.add_parser("similar")
    similar.add_argument("file", type=Path)
    similar.add_argument(
        "--stage",
        type=Path,
        help="the staging directory whose parts to compare with (default: the file's part's)",
    )
    merging = verbs.add_parser("merge")
    merging.add_argument("--into", type=Path, required=True)
    merging.add_argument("--dry-run", action="store_true")
    merging.add_argument("--drop", action="append", default=[])
    merging.add_argument(
        "--reviews", action="store_true", help="drop what each part's review-PART.md lists"
    )
    merging.add_argument("--deepening", action="store_true", help="allow --into's repositories")
    merging.add_argument("parts", type=Path, nargs="+")
    args = parser.parse_args(argv)
    if args.verb == "similar":
        # a candidate still outside the stage (in /tmp) is compared with the stage it is
        # meant for, not with whatever lies beside /tmp
        stage = args.stage or args.file.parent.parent
        pool = [p for d in corpus_directories() for p in script_files(d)]
        if stage.is_dir():
            pool += [p for d in staged_parts(stage) for p in script_files(d)]
        for near in closest(args.file, list(dict.fromkeys(p.resolve() for p in pool))):
            print(f"{near.share:.0%}\t{near.other}")
        return 0
    if args.verb == "check":
        problems = check_part(args.part, args.deepening)
        print("\n".join(problems) if problems else "no problem")
        return 1 if problems else 0
    drops = set(args.drop)
    if args.reviews:
        for part in args.parts:
            listed, problems = review_drops(part)
            if problems:
                print("\n".join(problems), file=sys.stderr)
                return 2
            drops |= listed
    refused = merge(args.into, args.parts, drops, args.dry_run, args.deepening)
    print("\n".join(refused), file=sys.stderr)
    return 1 if any("dropped on" not in line for line in refused) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
