"""The exclude list: nodes a scan found failing, remembered until they expire.

A ``--exclude=`` string printed once is forgotten, and the next run of a train lands
on the same bad node ("restarting the job often hits the same set of nodes"). So
``faulty scan`` records each failing node here (node, check, error, time, expiry:
7 days by default) and ``train start``, ``template render/submit`` add the nodes
still listed to ``--exclude``.

The file is ``$XDG_STATE_HOME/slurmkit/excluded.json`` (``~/.local/state/...``
without it), or any path given with ``--state``. Writers take a lock beside it
(:func:`slurmkit.locks.hold`) and replace it atomically
(:func:`slurmkit.files.write_atomic`), so two scans finishing together both land.
A file that does not read as an exclude list is an error naming it: it is never
reset, since that would silently let the bad nodes back in.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from slurmkit import files, locks, trust
from slurmkit.errors import HostlistParseError, SlurmkitError, UsageError
from slurmkit.faulty.report import ScanReport
from slurmkit.hostlist import HostSet, count, expand, fold

DEFAULT_TTL = timedelta(days=7)
FILE_NAME = "excluded.json"
LOCK_WAIT = 30.0
VERSION = 1
MAX_BYTES = 10_000_000
# More nodes than any cluster keeps out: n[1-99999999] is a typo, not an exclude list.
MAX_NODES = 65_536
_HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


class CorruptExcludeList(SlurmkitError):
    """The file exists but is not an exclude list (exit 2; the file is left as it is)."""


@dataclass(frozen=True)
class ExcludedNode:
    """One node kept out of jobs: the check it failed, why, when, and until when."""

    node: str
    check: str
    error: str
    time: datetime
    expires: datetime

    def expired(self, now: datetime) -> bool:
        return self.expires <= now

    def to_json(self) -> dict[str, str]:
        return {
            "node": self.node,
            "check": self.check,
            "error": self.error,
            "time": self.time.isoformat(timespec="seconds"),
            "expires": self.expires.isoformat(timespec="seconds"),
        }


def default_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/slurmkit/excluded.json``; a relative XDG_STATE_HOME is ignored (spec)."""
    return files.state_path(FILE_NAME, env)


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


def load(path: Path) -> list[ExcludedNode]:
    """Every entry, expired ones included; a missing file is an empty list."""
    try:
        raw = files.read_bounded(
            path, what="exclude list", max_bytes=MAX_BYTES, error=CorruptExcludeList
        )
    except FileNotFoundError:
        return []
    return _parse(path, raw)


def _parse(path: Path, raw: bytes) -> list[ExcludedNode]:
    def bad(why: str) -> CorruptExcludeList:
        return CorruptExcludeList(
            f"exclude list {path} is corrupt ({why}); fix or remove it by hand "
            "(slurmkit never resets it)"
        )

    if len(raw) > MAX_BYTES:
        raise bad(f"larger than {MAX_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(f"not JSON: {str(exc)[:80]}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise bad(f'not a version {VERSION} exclude list (no "version": {VERSION})')
    items = data.get("entries")
    if not isinstance(items, list):
        raise bad('"entries" is not a list')
    entries = []
    total = 0
    for i, item in enumerate(items):
        try:
            entries.append(
                ExcludedNode(
                    node=_node(item["node"]),
                    check=_check(item["check"]),
                    error=str(item.get("error", "")),
                    time=_when(item["time"]),
                    expires=_when(item["expires"]),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise bad(f"entry {i}: {exc.__class__.__name__}: {str(exc)[:80]}") from None
        total += count(entries[-1].node)
        if total > MAX_NODES:
            raise bad(f"more than {MAX_NODES} nodes")
    return entries


def _node(value: object) -> str:
    """A node name, or a hostlist of at most MAX_NODES plain host names.

    Entries end up in ``#SBATCH --exclude=`` and on sbatch's command line, where a
    value starting with ``-`` (``-oProxyCommand=x``) is read as an option; and one
    ``n[1-99999999]`` made every render that adds the list fail.
    """
    shown = repr(str(value)[:40])
    if not isinstance(value, str) or not value or any(c.isspace() or c == "," for c in value):
        raise ValueError(f"{shown} is not a node name")
    try:
        names = expand(value, limit=MAX_NODES)
    except HostlistParseError as exc:
        raise ValueError(f"{shown} is not a node name ({exc})") from None
    odd = next((n for n in names if not _HOST_NAME.fullmatch(n)), None)
    if odd is not None or not names:
        raise ValueError(f"{shown} is not a node name (letters, digits, . _ -, not - first)")
    return value


def check_nodes(nodes: Iterable[str]) -> None:
    """Refuse, before anything is written, a node the list could not hand to sbatch."""
    for node in nodes:
        try:
            _node(node)
        except ValueError as exc:
            raise UsageError(f"not added to the exclude list: {exc}") from None


def _check(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{str(value)[:40]!r} is not a check name")
    return value


def _when(value: object) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a time")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return moment


def active(entries: Iterable[ExcludedNode], now: datetime | None = None) -> list[ExcludedNode]:
    now = now or now_utc()
    return [e for e in entries if not e.expired(now)]


def hostlist(path: Path, now: datetime | None = None) -> str:
    """The nodes still listed, folded (``node-[3,7]``); empty when none."""
    nodes = sorted({e.node for e in active(load(path), now)})
    return fold(nodes) if nodes else ""


def _save(path: Path, entries: list[ExcludedNode]) -> None:
    entries = sorted(entries, key=lambda e: (e.node, e.check))
    text = json.dumps({"version": VERSION, "entries": [e.to_json() for e in entries]}, indent=1)
    files.write_atomic(path, text + "\n", mode=0o600)


def _locked(path: Path) -> AbstractContextManager[Path]:
    trust.private_dir(path.parent, what="slurmkit state directory")
    return locks.hold(
        path.with_name(path.name + ".lock"), wait=LOCK_WAIT, what=f"the exclude list {path}"
    )


def failures(report: ScanReport) -> list[tuple[str, str, str]]:
    """(node, check, error) for every failed check of a scan (unknown nodes are not kept:
    a scan that timed out says nothing bad about a node)."""
    out = []
    for node in report.nodes:
        for check in node.failed_checks:
            result = node.checks[check]
            out.append((node.node, check, result.detail if result else ""))
    return out


def record(
    path: Path,
    failures: Iterable[tuple[str, str, str]],
    now: datetime | None = None,
    ttl: timedelta = DEFAULT_TTL,
) -> list[ExcludedNode]:
    """Add or renew (node, check, error) entries; returns the entries written for them."""
    now = now or now_utc()
    fresh = [ExcludedNode(n, c, e[:500], now, now + ttl) for n, c, e in failures]
    if not fresh:
        return []
    check_nodes(e.node for e in fresh)
    with _locked(path):
        kept = {(e.node, e.check): e for e in load(path)}
        for entry in fresh:
            kept[(entry.node, entry.check)] = entry
        _save(path, list(kept.values()))
    return fresh


def remove(
    path: Path,
    nodes: HostSet | None = None,
    expired: bool = False,
    now: datetime | None = None,
    dry_run: bool = False,
) -> list[ExcludedNode]:
    """Drop the entries of ``nodes`` and/or the expired ones; returns them.

    ``dry_run`` reads and reports without writing (no lock taken, nothing created).
    """
    now = now or now_utc()
    names = set(nodes) if nodes else set()

    def goes(e: ExcludedNode) -> bool:
        return e.node in names or (expired and e.expired(now))

    if dry_run:
        return [e for e in load(path) if goes(e)]
    if not path.exists():
        load(path)  # a dangling symlink or unreadable path still says so
        return []
    with _locked(path):
        entries = load(path)
        gone = [e for e in entries if goes(e)]
        if gone:
            _save(path, [e for e in entries if not goes(e)])
    return gone


# --- applying the list to a job ---------------------------------------------------------

_EXCLUDE_LONG = "--exclude"
_EXCLUDE_SHORT = "-x"


def exclude_values(words: Sequence[str]) -> list[str]:
    """The values of every ``--exclude=X``, ``--exclude X``, ``-x X``, ``-xX`` in sbatch words."""
    values, take = [], False
    for word in words:
        if take:
            values.append(word)
            take = False
        elif word in (_EXCLUDE_LONG, _EXCLUDE_SHORT):
            take = True
        elif word.startswith(_EXCLUDE_LONG + "="):
            values.append(word.split("=", 1)[1])
        elif word.startswith(_EXCLUDE_SHORT) and not word.startswith("--") and len(word) > 2:
            values.append(word[2:])
    return values


def merged(given: Sequence[str], listed: str) -> str:
    """The nodes ``given`` (the script's or the command line's --exclude) plus ``listed``.

    sbatch keeps only the last --exclude, so the list must be merged into the one the
    user gave, never put beside it. ``--exclude=FILE`` (a path) cannot be merged.
    """
    names: set[str] = set(expand(listed)) if listed else set()
    for value in given:
        if "/" in value:
            raise UsageError(
                f"--exclude={value} names a file: slurmkit cannot add its exclude list to it; "
                "list the nodes instead, or pass --no-exclude"
            )
        names.update(expand(value))
    return fold(sorted(names)) if names else ""


def add_to_args(args: Sequence[str], listed: str) -> list[str]:
    """sbatch arguments with the list merged into their --exclude (or one added)."""
    if not listed:
        return list(args)
    given = exclude_values(args)
    out, skip = [], False
    for word in args:
        if skip:
            skip = False
            continue
        if word in (_EXCLUDE_LONG, _EXCLUDE_SHORT):
            skip = True
            continue
        if word.startswith(_EXCLUDE_LONG + "=") or (
            word.startswith(_EXCLUDE_SHORT) and not word.startswith("--") and len(word) > 2
        ):
            continue
        out.append(word)
    return [*out, f"--exclude={merged(given, listed)}"]


def add_to_script(text: str, listed: str) -> str:
    """The job script with ``#SBATCH --exclude=<its own + listed>`` after its last #SBATCH line.

    sbatch reads ``#SBATCH`` lines up to the first command; a later --exclude replaces
    an earlier one, so the added line carries the script's own nodes too.
    """
    if not listed:
        return text
    lines = text.split("\n")
    last = None
    words: list[str] = []
    for i, line in enumerate(lines[1:], start=1):
        stripped = line.strip()
        if stripped.startswith("#SBATCH"):
            last = i
            try:
                words += shlex.split(stripped[len("#SBATCH") :], comments=False)
            except ValueError:
                continue
        elif stripped and not stripped.startswith("#"):
            break
    value = merged(exclude_values(words), listed)
    added = ["# slurmkit: nodes of the exclude list (faulty excluded) added to --exclude"]
    added.append(f"#SBATCH --exclude={shlex.quote(value)}")
    at = (last + 1) if last is not None else 1
    return "\n".join([*lines[:at], *added, *lines[at:]])


def current(path: Path | None = None, no_exclude: bool = False) -> str:
    """What to add to --exclude now: the list's unexpired nodes, or nothing with --no-exclude."""
    if no_exclude:
        return ""
    return hostlist(path or default_path())
