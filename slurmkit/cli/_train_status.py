"""``slurmkit train status`` as text: where a train stands, one fact a line, then its runs.

Only shown here: what the facts are, and how they are gathered, is
:mod:`slurmkit.train.status`'s (``--json`` prints them as they are).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from slurmkit.cli._output import print_table

if TYPE_CHECKING:
    from slurmkit.train.status import TrainStatus


def _clock(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def print_status(status: TrainStatus) -> None:
    """The status as a table of its facts, then the finished runs, one line each."""
    rows = _rows(status)
    width = max(len(key) for key, _ in rows)
    for key, value in rows:
        click.echo(f"{key:<{width}}  {value}")
    if status.finished:
        click.echo("")
        print_table(
            [
                (
                    r.id,
                    r.state,
                    "-" if r.exit_code is None else f"{r.exit_code}:{r.signal or 0}",
                    r.start.isoformat(timespec="seconds") if r.start else "-",
                    _clock(r.elapsed),
                    r.nodes or "-",
                )
                for r in status.finished
            ],
            headers=["RUN", "STATE", "EXIT", "START", "ELAPSED", "NODES"],
        )


def _rows(status: TrainStatus) -> list[tuple[str, str]]:
    arrays = ", ".join(
        f"{a['job_id']} ({a['runs']} runs{', after ' + a['after'] if a['after'] else ''})"
        for a in status.arrays
    )
    start = status.next_start.isoformat() if status.next_start else ""
    next_start = f"{start} {status.next_start_note}".strip() if status.pending else "-"
    switch = status.kill_switch
    rows = [
        ("train", f"{status.name} ({status.path})"),
        ("state", status.state),
        ("arrays", arrays),
        ("running", _running(status)),
        ("pending", _pending(status)),
        ("next start", next_start),
        ("next script", _script(status)),
        ("kill switch", f"ON since {switch.since}" if switch.on else "off"),
        ("finished", _finished(status)),
    ]
    if status.never_ran:
        rows.append(("never ran", f"{status.never_ran} (cancelled or skipped before starting)"))
    if status.last_event:
        rows.append(("last change", status.last_event))
    return rows


def _running(status: TrainStatus) -> str:
    run = status.running
    if not run:
        return "-"
    limit = f" (limit {_clock(run.time_limit)})" if run.time_limit else ""
    return f"{run.id} on {run.nodes or '?'} for {_clock(run.elapsed)}{limit}"


def _pending(status: TrainStatus) -> str:
    pending = str(status.pending)
    if status.pending:
        pending += " (held)" if status.held else f" ({status.pending_reason or 'waiting'})"
        if status.pending_priority is not None and not status.held:
            pending += f", priority {status.pending_priority}"
    return pending


def _script(status: TrainStatus) -> str:
    """The next script, with what is wrong with it: the run would fail or refuse it."""
    script = status.next_script or "missing"
    if status.next_script and not status.next_script_exists:
        script += " (MISSING: the next run will fail)"
    elif status.next_script_error:
        script += f" (DOES NOT PARSE: {status.next_script_error})"
    if status.next_script_trusted:
        script += f" (UNTRUSTED: runs will refuse it: {status.next_script_trusted})"
    if status.current_changed_by:
        who = status.current_changed_by
        name = who["user"] if who["user"] != f"uid {who['uid']}" else "?"
        script += f"; set by {name} (uid {who['uid']}) at {status.current_changed_at}"
    return script


def _finished(status: TrainStatus) -> str:
    if status.finished is None:
        finished = "unknown (accounting unavailable)"
    else:
        finished = f"{len(status.finished)}"
    failed = status.failed
    if failed:
        shown = ", ".join(f"{r.id} {r.state} exit {r.exit_code}" for r in failed[:5])
        finished += f" ({len(failed)} failed: {shown}{', ...' if len(failed) > 5 else ''})"
    return finished
