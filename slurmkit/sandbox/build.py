"""Slurm built from a source tarball into a cached prefix, for a version no Debian ships.

No Debian release packages Slurm 25.11, and pyslurm on the package registry exists only
for 25.11 (pyslurm's build refuses headers of another MAJOR.MINOR). So the sandbox
builds that release once from SchedMD's source tarball into
``/opt/slurmkit/slurm-<series>`` (``SLURMKIT_PREFIX_DIR`` moves it) and runs every
daemon and client from there, on the host: no Debian root is needed, because the
build links against the host's own libraries.

A build is done only when its stamp exists: ``<prefix>/.slurmkit-built`` is written
last, after ``make install`` succeeded, and names the tarball's sha256. A build that
was killed half-way has no stamp and is redone (``make`` picks up where it stopped);
a stamp naming another tarball means "rebuild from this one". Building is niced
(``nice -n 19``, ``make -j2``): it takes about a quarter of an hour on two cores and
must not starve the machine.

Where the source comes from: ``--slurm-source TARBALL``, else ``$SLURMKIT_SLURM_SOURCE``,
else ``../shared/vendor/slurm-<series>.*.tar.gz`` beside the repository when present.
On a machine with internet a user downloads the same release from SchedMD's site
(https://download.schedmd.com/slurm/) and passes it with ``--slurm-source``; slurmkit
never downloads it itself (this cannot be tested here, and a build must be reproducible
from a file whose checksum the user chose).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem, SlurmkitError, UsageError
from slurmkit.files import read_bounded, read_text_bounded, write_atomic
from slurmkit.locks import default_lock_path, hold
from slurmkit.trust import check_trusted, private_dir

Progress = Callable[[str], None]
PREFIX_DIR = Path(os.environ.get("SLURMKIT_PREFIX_DIR", "/opt/slurmkit"))
STAMP = ".slurmkit-built"
SOURCE_ENV = "SLURMKIT_SLURM_SOURCE"
# Debian packages the build needs (also in scripts/bootstrap): munge and MySQL plugins,
# JSON/YAML for the serializers, http-parser/jwt for slurmrestd, readline for scontrol.
BUILD_PACKAGES = (
    "build-essential",
    "pkg-config",
    "libmunge-dev",
    "libmariadb-dev",
    "libjson-c-dev",
    "libyaml-dev",
    "libhttp-parser-dev",
    "libjwt-dev",
    "libreadline-dev",
)
_BUILD_TIMEOUT = 7200.0
TARBALL_MAX_BYTES = 256 * 1024 * 1024  # a Slurm source tarball is under 10 MB
LOG_MAX_BYTES = 64 * 1024 * 1024  # configure or make's log
_JOBS = "2"


def prefix_dir(series: str) -> Path:
    """Where Slurm ``series`` (``25.11``) is installed once built."""
    return PREFIX_DIR / f"slurm-{series}"


def _repo_vendor_dir() -> Path:
    """``../shared/vendor`` relative to the repository holding this checkout."""
    return Path(__file__).resolve().parents[2].parent / "shared" / "vendor"


def find_source(series: str, explicit: str | Path | None = None) -> Path | None:
    """The tarball to build ``series`` from, or None when none is found.

    An explicit path (``--slurm-source``) or ``$SLURMKIT_SLURM_SOURCE`` that does not
    exist is a usage error, not a silent fallback: the user named that file.
    """
    named = explicit or os.environ.get(SOURCE_ENV)
    if named:
        path = Path(named)
        if not path.is_file():
            raise UsageError(f"Slurm source {path} does not exist (--slurm-source/{SOURCE_ENV})")
        return path.resolve()
    vendor = _repo_vendor_dir()
    found = sorted(vendor.glob(f"slurm-{series}.*.tar.*")) if vendor.is_dir() else []
    return found[-1].resolve() if found else None


def sha256_of(path: Path) -> str:
    data = read_bounded(
        path, what="Slurm source tarball", max_bytes=TARBALL_MAX_BYTES, follow_links=True,
        error=EnvironmentProblem,
    )  # fmt: skip
    return hashlib.sha256(data).hexdigest()


def _marker_sha(marker: Path) -> str:
    """The checksum an unpacked tree was made from; "" when it has no readable marker."""
    try:
        return read_text_bounded(marker, what="source marker", errors="replace").strip()
    except (OSError, SlurmkitError):
        return ""


def _log_text(log: Path) -> str:
    """A build step's log, for its last error line; one too big to read gives none."""
    try:
        return read_text_bounded(log, what="build log", max_bytes=LOG_MAX_BYTES, errors="replace")
    except (OSError, SlurmkitError):
        return ""


def stamp_of(series: str) -> str:
    """The sha256 the finished build of ``series`` names, or "" when it is not built."""
    try:
        text = read_text_bounded(prefix_dir(series) / STAMP, what="build stamp", errors="replace")
    except (OSError, SlurmkitError):
        return ""
    match = re.search(r"^sha256=([0-9a-f]{64})$", text, re.M)
    return match.group(1) if match else ""


def is_built(series: str) -> bool:
    return bool(stamp_of(series)) and (prefix_dir(series) / "sbin" / "slurmctld").exists()


def ensure_built(
    series: str, source: str | Path | None = None, progress: Progress = lambda _: None
) -> tuple[Path, float]:
    """The prefix holding a finished build of ``series`` (built now if needed); seconds spent.

    A finished build is reused when no source was named or the named one has the
    checksum the stamp records; without any source and without a build, one line says
    where the tarball is looked for (exit 2).
    """
    prefix = prefix_dir(series)
    tarball = find_source(series, source)
    wanted = sha256_of(tarball) if tarball else ""
    if is_built(series) and (not wanted or stamp_of(series) == wanted):
        return check_trusted(prefix, what="Slurm build prefix"), 0.0
    if tarball is None:
        raise EnvironmentProblem(
            f"Slurm {series} is not built and no source tarball was found: pass "
            f"--slurm-source slurm-{series}.N.tar.bz2 (download it from "
            f"https://download.schedmd.com/slurm/), set {SOURCE_ENV}, or put it in "
            f"{_repo_vendor_dir()}"
        )
    private_dir(PREFIX_DIR, mode=0o755, what="Slurm build directory")
    with hold(
        default_lock_path(f"slurm-build-{series}"),
        wait=_BUILD_TIMEOUT,
        what=f"building Slurm {series}",
    ):
        if is_built(series) and stamp_of(series) == wanted:  # built while we waited
            return prefix, 0.0
        started = time.monotonic()
        _build(series, tarball, wanted, progress)
        return prefix, time.monotonic() - started


def _build(series: str, tarball: Path, sha: str, progress: Progress) -> None:
    prefix = prefix_dir(series)
    (prefix / STAMP).unlink(missing_ok=True)  # from here on, the prefix is not a finished build
    top = _source_name(tarball)
    if not top.startswith(f"slurm-{series}."):
        raise UsageError(f"{tarball.name} is not a Slurm {series} source tarball")
    builds = private_dir(PREFIX_DIR / "build", mode=0o755, what="Slurm build directory")
    src = builds / top
    marker = src / ".slurmkit-source-sha256"
    if src.exists() and _marker_sha(marker) != sha:
        shutil.rmtree(src)  # another tarball's tree (or an extraction that was cut short)
    if not src.exists():
        progress(f"unpacking {tarball.name}")
        partial = builds / f"{top}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        _step(["tar", "-xf", str(tarball), "-C", str(partial), "--strip-components=1"], partial)
        write_atomic(partial / marker.name, sha + "\n")
        partial.rename(src)
    if not (src / "config.status").exists():
        progress(f"configuring Slurm {series} for {prefix}")
        _step(
            [
                "nice",
                "-n",
                "19",
                "./configure",
                f"--prefix={prefix}",
                f"--sysconfdir={prefix}/etc",
            ],
            src,
            log=builds / "configure.log",
        )
    progress(f"compiling Slurm {series} (niced, make -j{_JOBS}; about 15 min on 2 cores)")
    _step(["nice", "-n", "19", "make", f"-j{_JOBS}"], src, log=builds / "make.log")
    progress(f"installing Slurm {series} into {prefix}")
    _step(["nice", "-n", "19", "make", "install"], src, log=builds / "install.log")
    write_atomic(prefix / STAMP, f"series={series}\nsource={tarball.name}\nsha256={sha}\n")


def _source_name(tarball: Path) -> str:
    """``slurm-25.11.7`` from ``slurm-25.11.7.tar.gz`` (the tree the tarball unpacks into)."""
    return re.sub(r"\.tar(\.\w+)?$|\.tgz$", "", tarball.name)


# The build's output goes to a log file, not into memory: argv stays a list, the
# redirection is the shell's, with the paths passed as positional parameters.
_TO_LOG = 'log="$1"; shift; exec "$@" >"$log" 2>&1'


def _step(argv: list[str], cwd: Path, log: Path | None = None) -> None:
    run = ["sh", "-c", _TO_LOG, "sh", str(log), *argv] if log else argv
    try:
        result = _proc.run(run, timeout=_BUILD_TIMEOUT, cwd=str(cwd))
    except FileNotFoundError as exc:
        raise EnvironmentProblem(
            f"{argv[0]} not found: building Slurm needs {' '.join(BUILD_PACKAGES)} "
            "(scripts/bootstrap installs them)"
        ) from exc
    if result.returncode != 0 or result.timed_out:
        where = f"; see {log}" if log else ""
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        if log and log.exists():
            lines = _log_text(log).strip().splitlines()
            tail = [ln for ln in lines if "error" in ln.lower()][-1:] or lines[-1:] or tail
        raise EnvironmentProblem(
            f"building Slurm failed at '{' '.join(argv[:4])}' (exit {result.returncode}): "
            f"{tail[0][:200]}{where}"
        )


# ------------------------------------------------------------ running from the prefix


def program(prefix: Path, name: str) -> str | None:
    """``prefix/sbin/NAME`` or ``prefix/bin/NAME``; None for what the build does not ship
    (munged, sshd, tini: the host's)."""
    for sub in ("sbin", "bin"):
        path = prefix / sub / name
        if path.is_file():
            return str(path)
    return None


# A client wrapper in <dir>/bin: the prefix's command with the sandbox's slurm.conf unless
# the caller names another. Anyone may run it (the prefix is world-readable, libslurm is
# found through the build's rpath), inside a job on a node as well as on the host.
_WRAPPER = """#!/bin/sh
# Slurm {series}'s {name} from {prefix} (written by 'slurmkit sandbox up'; removed by 'down')
[ -n "${{SLURM_CONF:-}}" ] || SLURM_CONF={conf}
export SLURM_CONF
exec {program} "$@"
"""


def write_wrappers(
    prefix: Path, series: str, bin_dir: Path, conf: Path, clients: tuple[str, ...]
) -> None:
    """One wrapper per client the prefix has, so ``<dir>/bin`` first on PATH means this version."""
    for name in clients:
        real = prefix / "bin" / name
        if not real.is_file():
            continue
        text = _WRAPPER.format(
            series=series,
            name=name,
            prefix=prefix,
            conf=shlex.quote(str(conf)),
            program=shlex.quote(str(real)),
        )
        write_atomic(bin_dir / name, text, mode=0o755)
