"""Candidate repositories for a test part's collectors (issue 32), run by hand.

The study archive ``converged-computing/jobspec-conversion`` keeps about 18,000 published
batch scripts verbatim under ``results/**/<owner>/<name>/<path>/original-script.sh``. Its
owner/repository pairs, minus every repository a corpus part uses and every one an earlier
round fetched and judged (``corpus-judged.txt``), are repositories known to hold batch
scripts that nobody has looked at: the collectors then spend a fetch only to learn the
licence. Nothing is copied from the archive itself.

Usage (the archive fetched first; ARCHIVE is its bare git directory, e.g.
``/work/.mirror/converged-computing+jobspec-conversion/repo``):
``python benchmarks/corpus_candidates.py ARCHIVE > candidates.tsv``

Writes ``owner/name<TAB>archived scripts<TAB>one archive path``, sorted by owner.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_staging import corpus_repositories, judged_repositories

ARCHIVED = re.compile(
    r"results/(?:manual/|gemini/|gemma/)?(?:parsed/)?([^/]+)/([^/]+)/(?:.+/)?original-script\.sh"
)


def archived_pairs(archive: Path) -> dict[tuple[str, str], list[str]]:
    listing = subprocess.run(
        ["git", "--git-dir", str(archive), "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    pairs: dict[tuple[str, str], list[str]] = {}
    for path in listing.splitlines():
        if match := ARCHIVED.fullmatch(path):
            pairs.setdefault((match[1], match[2]), []).append(path)
    return pairs


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    pairs = archived_pairs(Path(argv[0]))
    seen = corpus_repositories() | judged_repositories()
    kept: dict[str, tuple[str, list[str]]] = {}
    for (owner, name), paths in pairs.items():
        repository = f"{owner}/{name}"
        if repository.lower() not in seen:
            kept.setdefault(repository.lower(), (repository, paths))
    for _, (repository, paths) in sorted(kept.items()):
        print(f"{repository}\t{len(paths)}\t{paths[0]}")
    print(f"{len(pairs)} archived repositories, {len(kept)} candidates", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
