"""A faulty-node scan: one discovery job, one task per node, one result line per node and check.

The ``faulty-node-check`` template does the work on the nodes; this module picks the
nodes, sizes the job (GPUs per node only when a GPU check runs: the nodes' own count,
which must be the same on all of them), waits, reads the result lines and builds the
per-node report. Everything the template takes can be overridden with
``sets`` (``--set KEY=VALUE``), e.g. ``disk_min_gb`` or ``python``.

A scan with a network check (``net``, ``nccl-multi``) submits ``net-check``
instead: the same per-node checks first, then pairs of nodes across the network,
still one job; :mod:`.net` reads the pairs and names the bad node.

The job runs in ``/`` (``--chdir=/``), not the folder the scan was started in: root's
Python checks must not start where a user can leave a module. A relative path in
``--set setup=...`` or a ``cmd:`` check is therefore relative to ``/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from slurmkit import checkjob, safeexec
from slurmkit.errors import UsageError
from slurmkit.faulty import captures, net
from slurmkit.faulty.checks import across_nodes, needs_gpus
from slurmkit.faulty.history import SCAN_JOB_PREFIX
from slurmkit.faulty.report import ScanReport, node_results, outside
from slurmkit.faulty.targets import Targets, choose
from slurmkit.hostlist import HostSet, expand
from slurmkit.slurm import wait as slurm_wait
from slurmkit.slurm.submit import trusted_folder
from slurmkit.templating.results import parse_check_lines

TEMPLATE = "faulty-node-check"
DEFAULT_TIMEOUT = 900.0
DEFAULT_DIR = checkjob.DEFAULT_WORK_DIR


@dataclass(frozen=True)
class NetOptions:
    """The network checks' knobs; ``rounds`` None: min(n-1, 3), 0: all of them;
    ``pair_timeout`` None: the scan's --timeout shared among the rounds (at most 60 s)."""

    port: int = net.DEFAULT_PORT
    size_mb: int = net.DEFAULT_SIZE_MB
    rounds: int | None = None
    slow_ratio: float = net.DEFAULT_SLOW_RATIO
    pair_timeout: float | None = None


@dataclass(frozen=True)
class ScanOptions:
    checks: tuple[str, ...]
    partition: str | None = None
    nodes: int | None = None
    nodelist: HostSet | None = None
    timeout: float = DEFAULT_TIMEOUT
    work_dir: Path = DEFAULT_DIR
    sets: Mapping[str, str] = field(default_factory=dict)
    poll: float = slurm_wait.MAX_POLL
    xid_since: datetime | None = None  # xid: only events from then on (None: since boot)
    net: NetOptions = field(default_factory=NetOptions)


def template_values(options: ScanOptions, targets: Targets) -> dict[str, object]:
    """The job's size; GPU checks on nodes with different GPU counts need a choice."""
    gpu_checks = needs_gpus(options.checks)
    if gpu_checks and targets.mixed_gpus and "gpus_per_node" not in options.sets:
        counts = ", ".join(f"{n}: {c}" for n, c in sorted(targets.gpus.items()))
        raise UsageError(
            f"the nodes to scan have different GPU counts ({counts}): a GPU check would see "
            "only the smallest count everywhere; scan them in groups (-w) or pass "
            "--set gpus_per_node=N"
        )
    values: dict[str, object] = {
        "nodes": targets.count,
        "checks": list(options.checks),
        "gpus_per_node": targets.gpus_per_node if gpu_checks else 0,
        "time": checkjob.time_limit(options.timeout),
    }
    if options.partition:
        values["partition"] = options.partition
    if across_nodes(options.checks):
        values.update(net_values(options, targets))
    return values


def net_values(options: ScanOptions, targets: Targets) -> dict[str, object]:
    """The net-check template's own parameters."""
    given = options.net
    last = given.port + targets.count // 2 - 1  # a round's pairs use port, port+1, ...
    if last > 65535:
        raise UsageError(
            f"--net-port {given.port}: {targets.count // 2} pairs per round need ports up to "
            f"{last}, past 65535; pick a lower port"
        )
    seconds = given.pair_timeout or net.pair_timeout(options.timeout, targets.count, given.rounds)
    return {
        "net_port": given.port,
        "net_size": given.size_mb,
        "net_rounds": net.DEFAULT_ROUNDS if given.rounds is None else given.rounds,
        "pair_timeout": max(1, int(seconds)),
    }


def template_for(options: ScanOptions, targets: Targets) -> str:
    """faulty-node-check, or net-check when a check runs across nodes (it needs 2 or more)."""
    across = across_nodes(options.checks)
    if not across:
        return TEMPLATE
    if targets.count < 2:
        raise UsageError(
            f"--checks {','.join(across)} needs at least 2 nodes (it runs across pairs of "
            f"nodes); only {targets.count} can run a job now"
        )
    return net.TEMPLATE


def scan(options: ScanOptions, progress: checkjob.Progress) -> ScanReport:
    trusted_folder(options.work_dir, "--dir")  # refused before any Slurm call (issue 14)
    targets = choose(options.partition, options.nodes, options.nodelist)
    # Root's checks start in a folder only root can write (issue 28): the admin's
    # current folder, or /tmp where slurmstepd cannot enter it, may hold a user's files.
    extra: tuple[str, ...] = (f"--chdir={safeexec.CHECK_JOB_CHDIR}",)
    extra += (f"--nodelist={targets.nodelist}",) if targets.nodelist else ()
    template = template_for(options, targets)
    job = checkjob.submit_check(
        template,
        template_values(options, targets),
        options.work_dir,
        SCAN_JOB_PREFIX.rstrip("-"),
        extra,
        options.sets,
    )
    progress(f"slurmkit: submitted check job {job.job_id} ({targets.count} node(s)), log {job.log}")
    finished = checkjob.wait(job, options.timeout, progress, options.poll)
    scanned = finished.nodelist or targets.nodelist or ""
    allocation = expand(scanned) if scanned else []
    captured = captures.results(finished.log_text, options.xid_since)
    results = parse_check_lines(finished.log_text) + [r for r, _ in captured]
    results += net.results(options.checks, allocation, finished.log_text, options.net.slow_ratio)
    nodes = node_results(options.checks, allocation, results, targets.unavailable)
    by_name = {n.node: n for n in nodes}
    for result, verdict in captured:
        if result.node in by_name and result.check in options.checks and verdict.findings:
            by_name[result.node].findings[result.check] = [f.to_json() for f in verdict.findings]
    return ScanReport(
        job_id=job.job_id,
        job_state=finished.state,
        checks=options.checks,
        nodes=nodes,
        log=str(job.log),
        timed_out=finished.timed_out,
        allocation=scanned,
        ignored=list(
            dict.fromkeys(outside(results, allocation) + net.outside(finished.log_text, allocation))
        ),
    )
