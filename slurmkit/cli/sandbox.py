"""``slurmkit sandbox``: a real local Slurm cluster for trying slurmkit and for its tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from slurmkit import stderr
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import json_option
from slurmkit.errors import EXIT_FINDINGS

dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="SLURMKIT_SANDBOX_DIR",
    default="/tmp/slurmkit-sandbox",
    show_default=True,
    help="Where the sandbox keeps its configs, logs and state (env: SLURMKIT_SANDBOX_DIR).",
)


def _slurm_source_option(help_text: str) -> Callable[[Any], Any]:
    """``--slurm-source``, one option for ``up`` and ``build``; each says it in its own words."""
    return click.option(
        "--slurm-source",
        type=click.Path(dir_okay=False),
        default=None,
        metavar="TARBALL",
        help=help_text,
    )


def _progress(message: str) -> None:
    stderr.line(f"sandbox: {message}")


@click.group("sandbox")
def sandbox_group() -> None:
    """Run a real multi-node Slurm cluster on this machine (root, Debian/Ubuntu).

    Each node is a slurmd with its own PID/UTS namespace and its own sshd, so
    'ssh node-2' and 'srun -N4' behave as on a real cluster. Accounting
    (slurmdbd + MariaDB) is on.

    'up --slurm 24.11|26.05' runs that version from a Debian root built on first
    use (/var/cache/slurmkit/roots/VERSION); 'env' then also puts wrappers for
    its client commands first on PATH.
    """


@sandbox_group.command("up")
@dir_option
@click.option("--nodes", default=4, show_default=True, help="Number of nodes (node-1 .. node-N).")
@click.option("--cpus", default=8, show_default=True, help="CPUs each node claims.")
@click.option(
    "--gpus", default=4, show_default=True, help="GPU gres each node claims (plain files)."
)
@click.option(
    "--port-base", default=17800, show_default=True, help="First of the ports the sandbox uses."
)
@click.option(
    "--net",
    default=1,
    show_default=True,
    help="Node addresses 127.0.NET.1 .. N: a second sandbox beside a first needs its own.",
)
@click.option(
    "--profile",
    type=click.Choice(["production", "test"]),
    default="production",
    show_default=True,
    help="Slurm's timings: production keeps its defaults; test shortens MessageTimeout, "
    "SlurmdTimeout and the schedulers' intervals (what the test suite waits on).",
)
@click.option(
    "--slurm",
    "slurm",
    default="",
    metavar="VERSION",
    help="Slurm version: 22.05, 24.11, 25.11 or 26.05 (default: the host's packages, 22.05 on "
    "Debian 12). 24.11/26.05 run from a Debian root built on first use and cached "
    "in /var/cache/slurmkit/roots/VERSION; 25.11 is built from source (see 'sandbox build').",
)
@click.option("--no-install", is_flag=True, help="Do not apt-get install missing packages.")
@_slurm_source_option(
    "Source tarball for a version built from source (25.11); else $SLURMKIT_SLURM_SOURCE, "
    "else ../shared/vendor/ beside the repository."
)
@click.option(
    "--virtual-nodes",
    default=0,
    show_default=True,
    help="Extra nodes vnode-[1-N] defined but never started (down), for benchmarks.",
)
def sandbox_up(
    directory: Path,
    nodes: int,
    cpus: int,
    gpus: int,
    port_base: int,
    net: int,
    profile: str,
    slurm: str,
    no_install: bool,
    slurm_source: str | None,
    virtual_nodes: int,
) -> None:
    """Start the cluster (idempotent: a healthy sandbox is left as it is).

    Several may run side by side, each with its own --dir, --port-base (400 apart) and
    --net; an 'up' that would share a port or a node address with a running sandbox is
    refused and names it.
    """
    import shlex

    from slurmkit import sandbox

    spec = sandbox.SandboxSpec(
        dir=directory,
        nodes=nodes,
        cpus=cpus,
        gpus=gpus,
        port_base=port_base,
        net=net,
        profile=profile,
        slurm=slurm,
        virtual_nodes=virtual_nodes,
    )
    report = sandbox.up(spec, install=not no_install, progress=_progress, slurm_source=slurm_source)
    where = f"Slurm {report.spec.slurm}, {report.spec.nodelist} in {report.spec.dir}"
    if report.already_up:
        _progress(f"already up: {where}")
    else:
        if report.root_seconds:
            what = "" if report.spec.prefix else " root"
            _progress(f"built Slurm {report.spec.slurm}{what} in {report.root_seconds:.0f} s")
        _progress(f"up in {report.seconds:.1f} s: {where}")
        quoted = shlex.quote(str(report.spec.dir))
        _progress(f'use it with: eval "$(slurmkit sandbox env --dir {quoted})"')


@sandbox_group.command("build")
@click.option(
    "--slurm", "slurm", required=True, metavar="VERSION", help="The series: 24.11, 25.11, 26.05."
)
@_slurm_source_option(
    "slurm-VERSION.N.tar.bz2 from https://download.schedmd.com/slurm/ (else "
    "$SLURMKIT_SLURM_SOURCE, else ../shared/vendor/ beside the repository)."
)
def sandbox_build(slurm: str, slurm_source: str | None) -> None:
    """Prepare a Slurm version the host does not ship, once: what 'up --slurm' would do first.

    25.11 is built from source into /opt/slurmkit/slurm-VERSION (about 5-15 min on 2 cores;
    stamped with the tarball's sha256 and reused; a half build is redone). 24.11 and 26.05
    get their Debian root in /var/cache/slurmkit/roots/VERSION (about 1 min). Useful before
    starting sandboxes of several versions at once, so none of them waits for a build.
    """
    from slurmkit.errors import UsageError
    from slurmkit.sandbox import build, rootfs, versions

    release = versions.offered(slurm)
    if release.from_source:
        prefix, seconds = build.ensure_built(slurm, slurm_source, progress=_progress)
        where, what = prefix, f"built Slurm {slurm}"
        ready = f"Slurm {slurm} is already built in {prefix} ({build.stamp_of(slurm)[:12]})"
    elif slurm_source:
        raise UsageError(f"--slurm-source is for a version built from source, not {slurm}")
    elif slurm != versions.host_series():
        where, seconds = rootfs.ensure_root(release, _progress)
        what, ready = f"built the Slurm {slurm} root", f"the Slurm {slurm} root is ready in {where}"
    else:
        raise UsageError(f"Slurm {slurm} is the host's own: nothing to build")
    _progress(f"{what} in {where} in {seconds:.0f} s" if seconds else ready)


@sandbox_group.command("down")
@dir_option
def sandbox_down(directory: Path) -> None:
    """Stop every daemon 'up' started (by recorded pid) and remove the ssh Include."""
    from slurmkit import _proc, sandbox

    stopped = sandbox.down(directory, progress=_progress if _proc.is_verbose() else lambda _: None)
    _progress(f"stopped {len(stopped)} processes" if stopped else "nothing was running")


@sandbox_group.command("status")
@dir_option
@json_option("Machine-readable output.")
def sandbox_status(directory: Path, as_json: bool) -> None:
    """Show daemons and node states; exit 0 when the cluster is up, 1 when not."""
    from slurmkit import sandbox
    from slurmkit.cli._output import print_json, print_table

    report = sandbox.status(directory)
    if as_json:
        print_json(report)
    elif report.up:
        faults = {f.node: f for f in report.faults or []}

        def shown(node: str) -> str:
            if report.faults is None:
                return "unknown"
            f = faults.get(node)
            return "-" if f is None else f"{f.fault} {f.rate}".rstrip()

        print_table(
            [(n.name, n.state, shown(n.name)) for n in report.nodes], ["node", "state", "fault"]
        )
    else:
        stderr.line(f"sandbox in {report.dir} is down: {report.problem}")
    if not report.up:
        exit_with(EXIT_FINDINGS)


@sandbox_group.command("env")
@dir_option
def sandbox_env(directory: Path) -> None:
    """Print the export lines for Slurm's commands: eval "$(slurmkit sandbox env)"."""
    from slurmkit import sandbox

    for line in sandbox.env_lines(directory):
        click.echo(line)


@sandbox_group.command("fault")
@click.argument("node")
@click.argument("action", type=click.Choice(["net-down", "net-slow", "clear"]))
@dir_option
@click.option(
    "--rate",
    default="",
    metavar="RATE",
    help="net-slow: what the node's data traffic is policed to, per second and direction "
    "(bytes, kbytes or mbytes; default 4mbytes: a 16 MB transfer takes a few seconds).",
)
def sandbox_fault(node: str, action: str, directory: Path, rate: str) -> None:
    """Break (net-down), slow (net-slow) or restore (clear) one node's network, for real.

    The node's data network goes: TCP/UDP to or from its address (127.0.1.N) with a
    fixed port in 1024-32767 at either end is dropped (net-down) or policed to RATE
    (net-slow). Its slurmd port and the ssh port stay open, so the node stays up in
    Slurm and srun, ssh and pdsh still reach it; a rendezvous or all-reduce with it
    fails or crawls. Done with nftables (one table per sandbox, removed by 'down'):
    the kernel here has no netem. 'sandbox status' lists the faults in force.
    """
    from slurmkit import sandbox

    done = sandbox.fault(directory, node, action, rate)
    if action == "clear":
        if done:
            _progress(f"{node}: cleared " + ", ".join(f.fault for f in done))
        else:
            _progress(f"{node}: had no network fault")
    else:
        (f,) = done
        what = (
            "data traffic dropped"
            if f.fault == "net-down"
            else f"data traffic policed to {f.rate}/s"
        )
        _progress(f"{node}: {f.fault} ({what}; its slurmd and ssh ports still open)")
