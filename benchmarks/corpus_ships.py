"""Write the SHIPS.tsv rows of a corpus directory from git mirrors of its repositories.

The scorer rebuilds each script's repository around it (``score_lint_corpus.lint_corpus``)
so that the file-system rules see what a user's checkout holds. A directory the repository
ships that the rebuild leaves out turns into a false ``output-dir-missing``; one listed too
many cannot mislead, since it is really there. So every directory the repository ships at the
recorded commit (``git ls-tree``) is listed when its name appears anywhere in one of that
repository's ``#SBATCH`` lines: a log or ``--chdir`` directory at any depth, whatever option
spelling or ``%x`` the line uses. Found from git alone, without running lint.

    python benchmarks/corpus_ships.py tests/fixtures/real-scripts/holdout3 \\
        --mirrors /work/.mirror > SHIPS.tsv

A mirror is ``<mirrors>/<owner>+<name>/repo`` (what the ``fetch`` tool of the corpus
collectors made); run by hand when a part is collected, not in tests.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
from pathlib import Path, PurePosixPath

DIRECTIVE = re.compile(r"#\s*SBATCH", re.IGNORECASE)
SEPARATORS = re.compile(r"[\s=/\"'`:,;()<>|]+")


def directive_words(part: Path, rows: list[dict[str, str]]) -> dict[tuple[str, str], set[str]]:
    """Every word of every #SBATCH line, per repository and commit."""
    words: dict[tuple[str, str], set[str]] = {}
    for row in rows:
        text = (part / row["file"]).read_bytes().decode("utf-8", "replace")
        bag = words.setdefault((row["repository"], row["commit"]), set())
        for line in text.splitlines():
            if DIRECTIVE.match(line.strip()):
                bag |= {w for w in SEPARATORS.split(line.strip()) if w}
    return words


def shipped_directories(mirror: Path, commit: str) -> dict[str, str]:
    """Directory -> one file in it, for every directory of the tree at the commit.

    Names are read NUL-separated (``-z``): otherwise git quotes a name with non-ASCII
    letters (``"V\303\251os/x"``) and the quote became part of a directory's name.
    """
    listing = subprocess.run(
        ["git", "-C", str(mirror), "ls-tree", "-r", "-z", "--name-only", commit],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    listing = [name for name in listing if name]
    directories: dict[str, str] = {}
    for name in listing:
        parent = PurePosixPath(name).parent
        while str(parent) != ".":
            directories.setdefault(str(parent), name)
            parent = parent.parent
    return directories


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", type=Path)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args(argv)
    with open(args.part / "SOURCES.tsv", newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t"))
    out = csv.writer(sys.stdout, delimiter="\t", lineterminator="\n")
    out.writerow(("repository", "directory", "commit", "evidence"))
    for (repository, commit), words in sorted(directive_words(args.part, rows).items()):
        mirror = args.mirrors / repository.replace("/", "+") / "repo"
        for directory, example in sorted(shipped_directories(mirror, commit).items()):
            if PurePosixPath(directory).name in words:
                out.writerow((repository, directory, commit, f"git ls-tree: {example}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
