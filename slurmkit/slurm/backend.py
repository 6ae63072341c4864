"""Which backend answers the read-only queries: Slurm's commands, or pyslurm's C API.

Chosen once per process: ``--backend pyslurm|commands`` (the CLI calls :func:`choose`),
else ``$SLURMKIT_BACKEND``, else automatically: pyslurm when it is installed, its
Slurm series (pyslurm 25.11.x is built for Slurm 25.11) matches the cluster's
(``sinfo --version`` of the clients on PATH), and a configuration exists for
libslurm to read. Anything else falls back to the commands with one line under
``-v``, never a traceback.

Two facts shape the checks, both measured on 25.11: ``import pyslurm`` initialises
libslurm, and libslurm without a configuration (no ``SLURM_CONF``, no
``/etc/slurm/slurm.conf``) prints ``fatal: Could not establish a configuration
source`` and ends the whole Python process; so does a libslurm reading another
release's configuration it cannot parse. So nothing imports pyslurm before the
configuration and the versions were checked, and the installed pyslurm's version is
read from its package metadata, not by importing it.

``--backend pyslurm`` where pyslurm is not installed is an error (exit 2) that says
how to install it; where it is installed but the versions differ it says so on one
line and the command runs on the commands (a wrong backend must never answer).

What a backend answers is one protocol, :class:`QueryBackend`: the commands'
implementation is :class:`slurmkit.slurm.query.CommandsBackend`, pyslurm's is
:class:`slurmkit.slurm.backend_pyslurm.PyslurmBackend`; each module assigns an
instance to a ``QueryBackend`` variable, so mypy checks that both implement it.
:mod:`.query` stays the entry point callers use: each of its read-only queries
asks :func:`current` once, and no caller knows which backend answered.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import util
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeAlias

from slurmkit import stderr
from slurmkit.errors import EnvironmentProblem, NotFound, SlurmkitError, UsageError

if TYPE_CHECKING:
    from slurmkit.hostlist import HostSet
    from slurmkit.slurm.records import DrainReason, Job, Node, Partition

# Nodes as the library takes them: a HostSet, or names (each may be a hostlist such as
# node-[1-4]); never one string, which is parsed once at the edge (CLI, config).
NodeNames: TypeAlias = "HostSet | Sequence[str]"
# Job ids, or state words: one word (``"all"``, ``"123_4"``) or several.
Words: TypeAlias = "str | Sequence[str]"


class QueryBackend(Protocol):
    """The read-only queries both backends answer, with the same records."""

    def nodes(self, names: NodeNames | None = None, *, exact_reasons: bool = False) -> list[Node]:
        """All nodes, or those named; NotFound names the first unknown one."""
        ...

    def jobs(
        self,
        job_ids: Words | None = None,
        user: str | None = None,
        name: str | None = None,
        states: Words | None = None,
        nodelist: NodeNames | None = None,
    ) -> list[Job]:
        """squeue's answer: the jobs matching every filter, in squeue's order."""
        ...

    def job(self, job_id: str) -> Job:
        """One job with scontrol's ``-d`` detail; NotFound for an unknown id."""
        ...

    def partitions(self) -> list[Partition]: ...

    def drain_reasons(self) -> list[DrainReason]:
        """sinfo -R: nodes down, drained, draining or failing, grouped by reason."""
        ...

    def job_nodelist(self, jobid: str) -> str:
        """The compact nodelist of a job; an error for one with no nodes yet."""
        ...

    def partition_nodelist(self, name: str) -> str: ...


# What both implementations conclude from the records they read: one rule, one wording, so
# the two cannot answer the same cluster differently (the parity tests compare them).


def record_asked(job_id: str, records: Sequence[Job]) -> Job:
    """An array id names several records: the one whose own or ``4_1``-style id is the one
    asked for, else the first."""
    return next((r for r in records if job_id in (r.job_id, r.display_id)), records[0])


def nodelist_of_job(jobid: str, rows: Sequence[Job], argv: list[str]) -> str:
    """The nodes of a job's queue rows (an array's tasks': each list once, first seen first).

    No row is NotFound and no nodes yet (pending) an error, so that no caller acts on an
    empty list by accident.
    """
    if not rows:
        raise NotFound(f"unknown job {jobid} (no longer in the queue?)", argv)
    lists = list(dict.fromkeys(r.nodelist for r in rows if r.nodelist))
    if not lists:
        states = ", ".join(sorted({r.state for r in rows}))
        raise SlurmkitError(f"job {jobid} has no nodes allocated yet (state {states})")
    return ",".join(lists)


def partition_named(name: str, partitions: Sequence[Partition], argv: list[str]) -> Partition:
    match = next((p for p in partitions if p.name == name), None)
    if match is None:
        raise NotFound(f"unknown partition {name}", argv)
    return match


ENV = "SLURMKIT_BACKEND"
CHOICES = ("auto", "pyslurm", "commands")
INSTALL_HINT = (
    "pip install 'slurmkit[pyslurm]' on a Slurm 25.11 host, with SLURM_INCLUDE_DIR and "
    "SLURM_LIB_DIR naming Slurm's include/ and lib/ directories"
)
_DEFAULT_CONF = Path("/etc/slurm/slurm.conf")


@dataclass(frozen=True)
class Selected:
    """The backend in use and why: ``name`` is ``pyslurm`` or ``commands``."""

    name: str
    detail: str  # e.g. "pyslurm 25.11.2 for Slurm 25.11.7", or why pyslurm is not used
    implementation: QueryBackend


_choice: str | None = None
_selected: Selected | None = None


def choose(name: str | None) -> None:
    """Set the backend for this process (``--backend``); None goes back to the environment."""
    global _choice, _selected
    if name is not None and name not in CHOICES:
        raise UsageError(f"unknown backend {name!r}: one of {', '.join(CHOICES)}")
    _choice = name
    _selected = None


def requested() -> str:
    value = (_choice or os.environ.get(ENV) or "auto").strip().lower()
    if value not in CHOICES:
        raise UsageError(f"{ENV}={value!r} is not a backend: one of {', '.join(CHOICES)}")
    return value


def reset() -> None:
    """Forget the selection (tests; a process that changed SLURM_CONF or PATH)."""
    global _selected
    _selected = None


def pyslurm_version() -> str | None:
    """The installed pyslurm's version, from its metadata (importing it could end the process)."""
    spec = util.find_spec("pyslurm")
    if spec is None:
        return None
    found = _dist_info_version(spec.origin)
    if found is not None:
        return found
    from importlib import metadata  # 15 ms of imports: only where the quick look failed

    try:
        return metadata.version("pyslurm")
    except metadata.PackageNotFoundError:
        return None


def _dist_info_version(origin: str | None) -> str | None:
    """``25.11.2`` from the one ``pyslurm-25.11.2.dist-info`` beside the package (what pip
    installs), or None. Every command that queries Slurm asks this once: a directory
    listing instead of importing ``importlib.metadata`` (15 ms)."""
    if not origin:
        return None
    found = list(Path(origin).parent.parent.glob("pyslurm-*.dist-info"))
    if len(found) != 1 or not (found[0] / "METADATA").is_file():
        return None
    return found[0].name.removeprefix("pyslurm-").removesuffix(".dist-info") or None


def _series(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _config_present() -> bool:
    conf = os.environ.get("SLURM_CONF")
    return Path(conf).is_file() if conf else _DEFAULT_CONF.is_file()


def _say(line: str) -> None:
    from slurmkit import _proc

    if _proc.is_verbose():
        stderr.say(line)


def selected() -> Selected:
    """The backend for this process, decided on first use and then kept."""
    global _selected
    if _selected is None:
        _selected = _select(requested())
    return _selected


def _select(want: str) -> Selected:
    if want == "commands":
        return Selected("commands", "chosen", _commands())
    version = pyslurm_version()
    if version is None:
        if want == "pyslurm":
            raise EnvironmentProblem(
                f"--backend pyslurm: pyslurm is not installed ({INSTALL_HINT})"
            )
        return _fallback("pyslurm is not installed")
    if not _config_present():
        why = f"pyslurm {version}: no slurm.conf (SLURM_CONF) for libslurm to read"
        return _fallback(why, want)
    from slurmkit.slurm import query

    try:
        cluster = query.version()
    except SlurmkitError as exc:
        return _fallback(f"pyslurm {version}: the cluster's version is unknown ({exc})", want)
    if _series(version) != f"{cluster.major}.{cluster.minor:02d}":
        return _fallback(
            f"pyslurm {version} is for Slurm {_series(version)}, the cluster runs {cluster}: "
            "version mismatch",
            want,
        )
    try:
        chosen = _pyslurm()
    except Exception as exc:  # a broken build: ImportError, or libslurm missing symbols
        return _fallback(f"pyslurm {version} does not import: {type(exc).__name__}: {exc}", want)
    return Selected("pyslurm", f"pyslurm {version} for Slurm {cluster}", chosen)


def _commands() -> QueryBackend:
    from slurmkit.slurm.query import CommandsBackend

    return CommandsBackend()


def _pyslurm() -> QueryBackend:
    """Imports pyslurm: only once the configuration and the versions were checked."""
    from slurmkit.slurm.backend_pyslurm import PyslurmBackend

    return PyslurmBackend()


def _fallback(why: str, want: str = "auto") -> Selected:
    """Commands instead of pyslurm: under -v on auto, always when pyslurm was asked for."""
    line = f"query backend: commands ({why})"
    if want == "pyslurm":
        stderr.say(line)
    else:
        _say(line)
    return Selected("commands", why, _commands())


def current() -> QueryBackend:
    """The backend answering this process's read-only queries (decided once, then kept)."""
    return selected().implementation


def describe() -> str:
    """One line for ``slurmkit --version``: the backend and why; never raises."""
    try:
        chosen = selected()
    except SlurmkitError as exc:
        return f"query backend: none ({exc})"
    if chosen.name == "pyslurm":
        return f"query backend: pyslurm ({chosen.detail})"
    return f"query backend: commands ({chosen.detail})"
