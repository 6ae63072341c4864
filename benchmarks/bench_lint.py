"""``slurmkit lint`` on 40,000-line scripts: it must stay linear (run by hand, not in tests).

Usage: .venv/bin/python benchmarks/bench_lint.py [--lines 40000] [--runs 3] [--shape NAME]

Three shapes, each ``--lines`` long:

- ``samples``: the real scripts of tests/unit/lint_samples, one after another,
  repeated (heredocs, launchers, arrays, ``$(...)``, comments);
- ``export+srun``: ``export Vi=x`` then ``srun ...`` alternating, the case that was
  quadratic (each srun copied every variable: 59 s and 10 GB for 40,000 lines);
- ``pipelines``: ``srun python train.py --lr 0.1 | tee log`` on every line;
- ``heredocs``: ``sbatch <<EOF`` job scripts of five lines each, one after another, the
  case that was quadratic (each body was linted padded to its place in the file:
  4,000 of them in 20,000 lines took 15 s).

Prints a markdown table: lines, findings, best-of-N seconds of tree-sitter's parse alone
(the floor: the bash grammar reading the bytes, nothing of lint), in-process
(``lint_text``) and one whole ``slurmkit lint`` process. The goal (issue 32) is under
0.6 s in process for 40,000 lines.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slurmkit.lint import LintContext, SlurmVersion, lint_text
from slurmkit.lint.shell import _parser

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "unit" / "lint_samples"
HEADER = ["#!/bin/bash", "#SBATCH -N 2", "#SBATCH -c 4", "#SBATCH -t 10"]


def shape_samples(lines: int) -> str:
    body: list[str] = []
    for path in sorted(SAMPLES.iterdir()):
        if path.suffix in (".slurm", ".sh"):
            text = path.read_text()
            body.extend(text.split("\n", 1)[1].splitlines() if text.startswith("#!") else [])
    out = list(HEADER)
    while len(out) < lines:
        out.extend(body)
    return "\n".join(out[:lines]) + "\n"


def shape_export_srun(lines: int) -> str:
    out = list(HEADER)
    i = 0
    while len(out) < lines:
        out += [f"export V{i}=x", "srun python train.py"]
        i += 1
    return "\n".join(out[:lines]) + "\n"


def shape_pipelines(lines: int) -> str:
    out = list(HEADER)
    out += ["srun python train.py --lr 0.1 | tee log"] * (lines - len(out))
    return "\n".join(out) + "\n"


def shape_heredocs(lines: int) -> str:
    out = list(HEADER)
    i = 0
    while len(out) < lines:
        out += ["sbatch <<EOF", "#!/bin/bash", "#SBATCH -c 8", f"srun python train.py {i}", "EOF"]
        i += 1
    return "\n".join(out) + "\n"


SHAPES = {
    "samples": shape_samples,
    "export+srun": shape_export_srun,
    "pipelines": shape_pipelines,
    "heredocs": shape_heredocs,
}


def best_of(runs: int, work) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=40_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shape", choices=sorted(SHAPES), action="append", help="(repeatable)")
    args = parser.parse_args()
    context = LintContext(SlurmVersion(22, 5, 0), "option")
    slurmkit = str(Path(sys.executable).parent / "slurmkit")
    print(
        "| shape | lines | findings | tree-sitter parse alone (s) | lint_text (s) "
        "| slurmkit lint process (s) |"
    )
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in SHAPES.items():
            if args.shape and name not in args.shape:
                continue
            text = make(args.lines)
            findings = len(lint_text(text, name, context))
            data = text.encode()
            parse = best_of(args.runs, lambda d=data: _parser().parse(d))
            seconds = best_of(args.runs, lambda t=text, n=name: lint_text(t, n, context))
            path = Path(tmp) / f"{name}.sh"
            path.write_text(text)
            argv = [slurmkit, "lint", "--slurm-version", "22.05", str(path)]
            process = best_of(
                args.runs,
                lambda argv=argv: subprocess.run(argv, capture_output=True, check=False),
            )
            lines = text.count("\n")
            print(
                f"| {name} | {lines} | {findings} | {parse:.3f} | {seconds:.2f} | {process:.2f} |"
            )


if __name__ == "__main__":
    main()
