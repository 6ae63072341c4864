"""``slurmkit why JOB``: the verdict line first, then its evidence; ``--json`` the same."""

from __future__ import annotations

import click

from slurmkit.cli._group import exit_with
from slurmkit.cli._options import json_option
from slurmkit.errors import EXIT_FINDINGS, EXIT_OK, UsageError


@click.command("why")
@click.argument("job", required=False)
@click.option(
    "--train", "train_name", metavar="NAME", help="The failing (else current) run of train NAME."
)
@click.option(
    "--dir",
    "train_dir",
    type=click.Path(file_okay=False),
    help="Where the trains live (with --train; default ./.slurmkit/trains).",
)
@click.option(
    "--log",
    "log_paths",
    multiple=True,
    metavar="PATH",
    help="Also read this log's tail (repeatable); default: the job's StdOut/StdErr.",
)
@click.option(
    "--stale",
    metavar="DURATION",
    help="A running job whose output has not grown for this long is suspect (default 10m).",
)
@click.option("--stacks", is_flag=True, help="Dump a running job's Python stacks (py-spy).")
@json_option()
def why_command(
    job: str | None,
    train_name: str | None,
    train_dir: str | None,
    log_paths: tuple[str, ...],
    stale: str | None,
    stacks: bool,
    as_json: bool,
) -> None:
    """Why a job is pending, why it ended, and how well it used what it asked for.

    JOB is a job id, an array task (1234_7) or a whole array (1234: a summary per state).
    The verdict comes first, then its evidence with where each fact came from. Exit 0: a
    verdict with nothing bad; 1: it ended badly or wasted what it asked for; 2: unknown
    job or usage error.
    """
    from slurmkit.why.explain import explain

    if (job is None) == (train_name is None):
        raise UsageError("give a JOB or --train NAME (one of them)")
    target = job if job is not None else _train_run(train_name or "", train_dir)
    seconds = None
    if stale is not None:
        from slurmkit.grammar.duration import parse_duration

        seconds = float(parse_duration(stale, "--stale"))
    verdict = explain(target, log_paths=log_paths, stale=seconds, stacks=stacks)
    if as_json:
        from slurmkit.cli._output import print_json

        print_json(verdict.to_json())
    else:
        click.echo(render(verdict))
    exit_with(EXIT_FINDINGS if verdict.severity in ("warning", "bad") else EXIT_OK)


def render(verdict: object) -> str:
    from slurmkit.printable import printable
    from slurmkit.why.model import Verdict

    assert isinstance(verdict, Verdict)
    lines = [printable(verdict.headline)]
    for item in verdict.evidence:
        source = f"  [{printable(item.source)}]" if item.source else ""
        lines.append(f"  {printable(item.label)}: {printable(item.text)}{source}")
    lines += [f"  advice: {printable(a)}" for a in verdict.advice]
    lines += [f"  note: {printable(n)}" for n in verdict.notes]
    return "\n".join(lines)


def _train_run(name: str, directory: str | None) -> str:
    """The id of the train's last failed run, else its running one, else its last array."""
    from slurmkit.train import find, root_dir
    from slurmkit.train.status import gather

    status = gather(find(root_dir(directory), name))
    if status.failed:
        return status.failed[-1].id
    if status.running is not None:
        return status.running.id
    if status.arrays:
        return str(status.arrays[-1].get("id") or status.arrays[-1].get("job_id"))
    raise UsageError(f"train {name!r} has no run yet")
