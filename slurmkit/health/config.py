"""``health.toml``: which quick checks ``slurmkit health`` runs on a node, read strictly.

Root runs ``slurmkit health`` from slurmd (``HealthCheckProgram``), and a ``cmd``
check in this file is a command root runs, so the file must pass
:func:`slurmkit.trust.check_trusted` (root-owned, writable by nobody else). Every key
is known: a typo (``min_fre``) is an error naming the check and the key, never a
check that silently tests nothing. Example::

    timeout = 10            # default limit per check, seconds
    scontrol_timeout = 10   # limit per scontrol call (read the node, drain, resume)

    [[check]]
    type = "disk"
    path = "/tmp"
    min_free = "2G"         # bytes, or a size with K/M/G/T (powers of 1024)
    min_free_percent = 5
    min_free_inodes = 10000

    [[check]]
    type = "gpu-count"
    expected = 8

    [[check]]
    type = "gpu-health"     # nvidia-smi -q: ECC, retired pages, remapped rows

    [[check]]
    type = "xid"            # NVRM Xid events in dmesg since the last run

    [[check]]
    type = "cmd"
    argv = ["test", "-e", "/sys/class/net/ib0"]     # run as is, no shell
    # shell = 'ip -br link show ib0 | grep -q UP'   # only this key runs /bin/sh -c
    name = "ib0"            # optional: the check's name in the drain reason
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from slurmkit import files, trust
from slurmkit.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_PATH = Path("/etc/slurmkit/health.toml")
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 300.0
KINDS = ("disk", "gpu-count", "gpu-health", "xid", "cmd")
_TOP_KEYS = {"timeout", "scontrol_timeout", "state_dir", "check"}
_KEYS: dict[str, set[str]] = {
    "disk": {"path", "min_free", "min_free_percent", "min_free_inodes"},
    "gpu-count": {"expected"},
    "gpu-health": set(),
    "xid": set(),
    "cmd": {"argv", "shell"},
}
_COMMON = {"type", "name", "timeout"}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(i?B)?\s*$", re.I)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
MAX_CONFIG_BYTES = 1 << 20


class HealthConfigError(UsageError):
    """A health.toml that cannot be used (missing, untrusted, not TOML, unknown key)."""


@dataclass(frozen=True)
class Check:
    """One configured check; ``label`` is how the drain reason names it."""

    kind: str
    label: str
    timeout: float
    path: str = ""
    min_free: int | None = None
    min_free_percent: float | None = None
    min_free_inodes: int | None = None
    expected: int | None = None
    argv: tuple[str, ...] = ()
    shell: str | None = None


@dataclass(frozen=True)
class HealthConfig:
    path: Path
    checks: tuple[Check, ...]
    scontrol_timeout: float = DEFAULT_TIMEOUT
    state_dir: Path | None = None


def load(path: str | Path) -> HealthConfig:
    """Read, trust-check and validate ``path``; any problem is one :class:`HealthConfigError`."""
    target = Path(path)
    try:
        checked = trust.check_trusted(target, what="health config")
    except trust.UntrustedPath as exc:
        raise HealthConfigError(str(exc)) from None
    try:
        data = files.read_bounded(
            checked, what="health config", max_bytes=MAX_CONFIG_BYTES, error=HealthConfigError
        )
    except FileNotFoundError:
        raise HealthConfigError(f"health config {checked}: it does not exist") from None
    return parse(data, checked)


def parse(data: bytes | str, path: Path = DEFAULT_PATH) -> HealthConfig:
    """The config in ``data`` (TOML); ``path`` only names it in messages."""
    try:
        text = data.decode("utf-8", errors="strict") if isinstance(data, bytes) else data
        raw = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HealthConfigError(f"health config {path}: not valid TOML: {exc}") from None
    where = f"health config {path}"
    _no_unknown(raw, _TOP_KEYS, where)
    timeout = _seconds(raw.get("timeout", DEFAULT_TIMEOUT), f"{where}: timeout")
    scontrol = _seconds(raw.get("scontrol_timeout", DEFAULT_TIMEOUT), f"{where}: scontrol_timeout")
    state_dir = raw.get("state_dir")
    if state_dir is not None and (not isinstance(state_dir, str) or not state_dir.startswith("/")):
        raise HealthConfigError(f"{where}: state_dir must be an absolute path")
    tables = raw.get("check", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise HealthConfigError(f"{where}: 'check' must be a list of [[check]] tables")
    if not tables:
        raise HealthConfigError(f"{where}: no [[check]] table: nothing to check")
    checks = tuple(
        _check(table, timeout, f"{where}: check {i}") for i, table in enumerate(tables, start=1)
    )
    return HealthConfig(path, checks, scontrol, Path(state_dir) if state_dir else None)


def _check(table: dict[str, Any], default_timeout: float, where: str) -> Check:
    kind = table.get("type")
    if kind not in KINDS:
        raise HealthConfigError(f"{where}: type must be one of {', '.join(KINDS)} (got {kind!r})")
    where = f"{where} ({kind})"
    _no_unknown(table, _COMMON | _KEYS[kind], where)
    label = table.get("name", kind)
    if not isinstance(label, str) or not _NAME.match(label):
        raise HealthConfigError(f"{where}: name must be 1-32 letters, digits, '.', '_' or '-'")
    timeout = _seconds(table.get("timeout", default_timeout), f"{where}: timeout")
    if kind == "disk":
        return _disk(table, label, timeout, where)
    if kind == "gpu-count":
        expected = table.get("expected")
        if not _is_int(expected) or expected < 1:
            raise HealthConfigError(f"{where}: expected must be a whole number of GPUs, at least 1")
        return Check(kind, label, timeout, expected=expected)
    if kind == "cmd":
        return _cmd(table, label, timeout, where)
    return Check(kind, label, timeout)


def _disk(table: dict[str, Any], label: str, timeout: float, where: str) -> Check:
    path = table.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise HealthConfigError(f"{where}: path must be an absolute path")
    min_free = table.get("min_free")
    size = None if min_free is None else parse_size(min_free, f"{where}: min_free")
    percent = table.get("min_free_percent")
    if percent is not None and (
        isinstance(percent, bool)
        or not isinstance(percent, int | float)
        or not 0 < percent < 100
        or math.isnan(percent)
    ):
        raise HealthConfigError(f"{where}: min_free_percent must be a number between 0 and 100")
    inodes = table.get("min_free_inodes")
    if inodes is not None and (not _is_int(inodes) or inodes < 1):
        raise HealthConfigError(f"{where}: min_free_inodes must be a whole number, at least 1")
    if size is None and percent is None and inodes is None:
        raise HealthConfigError(
            f"{where}: give at least one of min_free, min_free_percent, min_free_inodes"
        )
    return Check(
        "disk",
        label,
        timeout,
        path=path,
        min_free=size,
        min_free_percent=None if percent is None else float(percent),
        min_free_inodes=inodes,
    )


def _cmd(table: dict[str, Any], label: str, timeout: float, where: str) -> Check:
    argv, shell = table.get("argv"), table.get("shell")
    if (argv is None) == (shell is None):
        raise HealthConfigError(f"{where}: give exactly one of argv (a list, no shell) or shell")
    if shell is not None:
        if not isinstance(shell, str) or not shell.strip() or "\0" in shell:
            raise HealthConfigError(f"{where}: shell must be a non-empty command line")
        return Check("cmd", label, timeout, shell=shell)
    if (
        not isinstance(argv, list)
        or not argv
        or not all(isinstance(a, str) and "\0" not in a for a in argv)
        or not argv[0]
    ):
        raise HealthConfigError(f"{where}: argv must be a non-empty list of strings")
    return Check("cmd", label, timeout, argv=tuple(argv))


def parse_size(value: object, where: str) -> int:
    """Bytes from an integer or ``"10G"``-style text (K/M/G/T/P: powers of 1024)."""
    if _is_int(value) and value >= 0:
        return value
    match = _SIZE.match(value) if isinstance(value, str) else None
    if match is None:
        raise HealthConfigError(f"{where}: {value!r} is not a size (bytes, or like '500M', '10G')")
    power = " KMGTP".index(match[2].upper() or " ")
    return int(float(match[1]) * 1024**power)


def _seconds(value: object, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isnan(value)
        or not 0 < value <= MAX_TIMEOUT
    ):
        raise HealthConfigError(
            f"{where} must be a number of seconds, above 0 and at most {MAX_TIMEOUT:g}"
        )
    return float(value)


def _is_int(value: object) -> TypeGuard[int]:
    """An int that is not a bool (TOML's ``true`` is not a count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _no_unknown(table: dict[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise HealthConfigError(
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})"
        )
