"""``node show NODE``: one node's state, why and by whom it is out, its jobs, its history.

Three calls, whatever the cluster's size: the node (``scontrol show node``, exact
reason), the jobs on it (one ``squeue -w``), and its recent jobs from accounting (one
``sacct --nodelist``). Accounting being down is a note, not a failure: the rest still
answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from slurmkit.errors import NotFound, SlurmError, UsageError
from slurmkit.hostlist import expand, targets
from slurmkit.slurm import nodeops, query
from slurmkit.slurm.records import Job, Node

DEFAULT_DAYS = 7
HISTORY_LIMIT = 20


@dataclass
class NodeView:
    node: Node
    jobs: list[Job]
    history: list[Job] = field(default_factory=list)
    history_error: str = ""
    since: datetime | None = None

    def to_json(self) -> dict[str, object]:
        n = self.node
        return {
            "node": n.name,
            "state": n.state_text,
            "reason": n.reason,
            "reason_user": n.reason_user,
            "reason_time": _iso(n.reason_time),
            "boot_time": _iso(n.boot_time),
            "slurmd_start_time": _iso(n.slurmd_start_time),
            "partitions": list(n.partitions),
            "cpus": n.cpus,
            "cpus_alloc": n.cpus_alloc,
            "gres": n.gres,
            "jobs": [_job(j) for j in self.jobs],
            "history_since": _iso(self.since),
            "history": [_job(j) for j in self.history],
            "history_error": self.history_error or None,
        }


def _iso(when: datetime | None) -> str | None:
    return when.isoformat(timespec="seconds") if when else None


def _job(job: Job) -> dict[str, object]:
    return {
        "job": job.display_id,
        "name": job.name,
        "user": job.user,
        "state": job.state,
        "start": _iso(job.start_time),
        "end": _iso(job.end_time),
        "exit_code": job.exit_code,
        "nodes": job.nodelist,
    }


def show(name: str, days: int = DEFAULT_DAYS, limit: int = HISTORY_LIMIT) -> NodeView:
    names = expand(str(targets(name, what="NODE")))
    if len(names) != 1:
        raise UsageError(f"NODE: {name!r} names {len(names)} nodes; node show takes one")
    if days < 0:
        raise UsageError("--days must not be negative")
    (node_name,) = names
    found = [n for n in query.nodes(node_name, exact_reasons=True) if n.name == node_name]
    if not found:
        raise NotFound(f"node {node_name} is not known to Slurm")
    jobs = [j for j in query.jobs(nodelist=node_name) if j.state != "PENDING"]
    since = (datetime.now() - timedelta(days=days)).replace(microsecond=0)
    view = NodeView(found[0], jobs, since=since)
    try:
        history = nodeops.node_history(node_name, since)
        history.sort(key=lambda j: j.start_time or j.submit_time or since, reverse=True)
        view.history = history[:limit] if limit else history
    except SlurmError as exc:
        view.history_error = f"no history: {exc}"
    return view
