"""Debian root file systems that hold one Slurm version each, built once and cached.

A root is built into a temporary directory beside its final place and renamed
only when every step succeeded (debootstrap, apt-get install, the version
check), so a half-built root is never mistaken for a good one. Mounts needed
while building (``/proc``, ``/dev``) are made inside a private mount namespace
and vanish with it: nothing is left mounted on the host.
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem, SlurmkitError
from slurmkit.files import read_text_bounded
from slurmkit.locks import default_lock_path, hold
from slurmkit.sandbox.requirements import find_program
from slurmkit.sandbox.versions import DEBIAN_MIRROR, ROOTS_DIR, SlurmRelease, root_dir, series
from slurmkit.trust import check_trusted, private_dir

# Present only in a sandbox root: the client wrappers exec the real command directly
# when they find it (inside a job, already in the root) instead of entering the root.
ROOT_MARKER = "etc/slurmkit-sandbox-root"

_PACKAGES = [
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "slurm-client",
    "munge",
    "openssh-server",
    "openssh-client",
    "sudo",  # run --sudo/--sudo-user against a non-root ssh user (test_remote_sudo.py)
    "tini",
    "procps",
    "python3",
    "util-linux",
    "mount",
    "iproute2",
    "hostname",
    "e2fsprogs",
    "ca-certificates",
    # shared libraries a host interpreter (pyenv, a venv's base python) loads in jobs
    "libffi8",
    "libsqlite3-0",
    "libbz2-1.0",
    "liblzma5",
    "zlib1g",
    "libuuid1",
    "libncursesw6",
]
# the 64-bit time_t transition renamed these after bookworm
_T64 = {"bookworm": ["libssl3", "libreadline8"]}
_T64_DEFAULT = ["libssl3t64", "libreadline8t64"]

_BUILD_TIMEOUT = 1800.0
Progress = Callable[[str], None]

# Mount /proc and /dev for apt's maintainer scripts inside a private mount namespace,
# then chroot. Paths arrive as positional parameters, never inside the script text.
_IN_ROOT = (
    'set -e; root="$1"; shift; mount -t proc proc "$root/proc"; '
    'mount --rbind /dev "$root/dev"; exec chroot "$root" "$@"'
)


def packages(suite: str) -> list[str]:
    return [*_PACKAGES, *_T64.get(suite, _T64_DEFAULT)]


def ensure_root(v: SlurmRelease, progress: Progress) -> tuple[Path, float]:
    """The cached root for ``v`` (built now if missing); and the seconds building took."""
    final = root_dir(v.version)
    if (final / ROOT_MARKER).exists():
        _self_link(final, final)
        check_trusted(final, what="sandbox root")
        _add_new_packages(v, final, progress)
        return final, 0.0
    private_dir(ROOTS_DIR, mode=0o755, what="sandbox roots directory")
    with hold(
        default_lock_path(f"sandbox-root-{v.version}"),
        wait=_BUILD_TIMEOUT,
        what=f"building the Slurm {v.version} root",
    ):
        if (final / ROOT_MARKER).exists():  # built by another run while we waited
            return check_trusted(final, what="sandbox root"), 0.0
        started = time.monotonic()
        _build(v, final, progress)
        return final, time.monotonic() - started


def _build(v: SlurmRelease, final: Path, progress: Progress) -> None:
    tmp = final.parent / f".build-{v.version}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    for stale in final.parent.glob(f".build-{v.version}-*"):
        shutil.rmtree(stale, ignore_errors=True)  # a build that was killed half-way
    if final.exists():
        shutil.rmtree(final)  # no marker: a root from an unfinished older build
    try:
        _debootstrap(v, tmp, progress)
        _configure_apt(tmp)
        progress(f"installing Slurm {v.version} and its daemons into the root")
        _in_root(
            tmp,
            _install_script(v),
            f"installing Slurm {v.version}'s packages from Debian {v.suite} ({DEBIAN_MIRROR})",
        )
        _finish(v, tmp)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# What a root was last given (one package per line): a cached root built before a package
# joined the list gets just the missing ones, never a rebuild (sid may have moved on).
PACKAGES_RECORD = "etc/slurmkit-sandbox-packages"


def _add_new_packages(v: SlurmRelease, root: Path, progress: Progress) -> None:
    """Install into a cached root the packages added to the list since it was built.

    ``--no-upgrade`` keeps what is there (Slurm above all) at its version. A failure is one
    line of progress and leaves the root as it was: what needs the package says so then.
    """
    wanted = packages(v.suite)
    record = root / PACKAGES_RECORD
    try:
        if read_text_bounded(record, what="package record", errors="replace").split() == wanted:
            return
    except (OSError, SlurmkitError):
        pass  # a root from before the record: add what is missing, once
    pkgs = _quoted(wanted)
    progress(f"adding new packages to the Slurm {v.version} root (once)")
    script = (
        f"export DEBIAN_FRONTEND=noninteractive && apt-get update -qq && "
        f"apt-get install -y -qq --no-upgrade {pkgs} && apt-get clean"
    )
    with hold(
        default_lock_path(f"sandbox-root-{v.version}"),
        wait=_BUILD_TIMEOUT,
        what=f"adding packages to the Slurm {v.version} root",
    ):
        try:
            _in_root(root, script, f"adding packages to the Slurm {v.version} root")
        except EnvironmentProblem as exc:
            progress(f"{exc}; the root is used as it is")
            return
        _record_packages(root, wanted)


def _quoted(names: list[str]) -> str:
    return " ".join(shlex.quote(p) for p in names)


def _record_packages(root: Path, names: list[str]) -> None:
    (root / PACKAGES_RECORD).write_text("".join(f"{p}\n" for p in names))


def _debootstrap(v: SlurmRelease, tmp: Path, progress: Progress) -> None:
    program = find_program("debootstrap")
    if program is None:
        raise EnvironmentProblem(
            "debootstrap is needed to build a Slurm root (apt-get install debootstrap)"
        )
    progress(f"building a Debian {v.suite} root for Slurm {v.version} in {tmp.parent}")
    result = _proc.run(
        [program, "--variant=minbase", v.suite, str(tmp), DEBIAN_MIRROR],
        timeout=_BUILD_TIMEOUT,
    )
    if result.returncode != 0:
        raise EnvironmentProblem(
            f"could not fetch Debian {v.suite} from {DEBIAN_MIRROR} for Slurm {v.version} "
            f"(debootstrap exit {result.returncode}: {_last_line(result)}); nothing was kept"
        )


def _configure_apt(tmp: Path) -> None:
    conf = tmp / "etc" / "apt" / "apt.conf.d" / "99slurmkit"
    conf.write_text(
        "// written by slurmkit: sid's Release file may be past its Valid-Until date\n"
        'Acquire::Check-Valid-Until "false";\n'
        'APT::Install-Recommends "false";\n'
    )
    # maintainer scripts must not start the packaged services: the sandbox runs its own
    policy = tmp / "usr" / "sbin" / "policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)


def _install_script(v: SlurmRelease) -> str:
    pkgs = _quoted(packages(v.suite))
    steps = [
        "export DEBIAN_FRONTEND=noninteractive",
        "apt-get update -qq",
        f"apt-get install -y -qq {pkgs}",
    ]
    if v.borrowed:
        suite, package, dest = v.borrowed
        state = "/var/lib/apt/slurmkit-borrowed"
        opts = (
            f"-o Dir::Etc::SourceList={state}/sources.list -o Dir::Etc::SourceParts={state}/parts"
            f" -o Dir::State::Lists={state}/lists"
        )
        steps += [
            f"mkdir -p {state}/lists/partial {state}/parts {state}/debs",
            f"echo {shlex.quote(f'deb {DEBIAN_MIRROR} {suite} main')} > {state}/sources.list",
            f"apt-get -qq {opts} update",
            f"cd {state}/debs && apt-get -qq {opts} download {shlex.quote(package + '/' + suite)}",
            f"dpkg -x {state}/debs/{shlex.quote(package)}_*.deb {shlex.quote(dest)}",
        ]
    steps.append("apt-get clean")
    return " && ".join(steps)


def _in_root(root: Path, script: str, what: str) -> _proc.Completed:
    unshare = find_program("unshare") or "unshare"
    argv = [unshare, "--mount", "--propagation", "private", "sh", "-c", _IN_ROOT, "sh"]
    result = _proc.run(
        [*argv, str(root), "/bin/sh", "-c", script], timeout=_BUILD_TIMEOUT, env=_apt_env()
    )
    if result.returncode != 0:
        raise EnvironmentProblem(f"{what} failed (exit {result.returncode}): {_last_line(result)}")
    return result


def _apt_env() -> dict[str, str]:
    return {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "DEBIAN_FRONTEND": "noninteractive",
        "LANG": "C.UTF-8",
        "HOME": "/root",
    }


def _finish(v: SlurmRelease, tmp: Path) -> None:
    """Check the root really holds ``v`` (sid moves on), then mark it complete."""
    result = _in_root(
        tmp,
        "dpkg-query -W -f '${Version}' slurm-client",
        f"reading the Slurm version of the {v.version} root",
    )
    found = series(result.stdout.strip())
    if found != v.version:
        raise EnvironmentProblem(
            f"Debian {v.suite} now ships Slurm {result.stdout.strip()}, not {v.version}: "
            "this slurmkit cannot offer that version any more"
        )
    (tmp / "run" / "sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
    _self_link(tmp, root_dir(v.version))
    _record_packages(tmp, packages(v.suite))
    (tmp / ROOT_MARKER).write_text(f"{result.stdout.strip()}\n")


def _self_link(root: Path, final: Path) -> None:
    """Inside the root, its own host path leads back to its ``/``.

    slurm.conf's ``PluginDir`` then names the version's plugins by one path that holds
    both on the host (clients a plain user runs without entering the root) and inside
    it (the daemons, chrooted).
    """
    link = root / str(final).lstrip("/")
    if link.is_symlink():
        return
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to("/")


def plugin_dir(root: Path) -> Path:
    """The version's plugin directory, by its host path (``<root>/usr/lib/<arch>/slurm-wlm``)."""
    found = sorted(root.glob("usr/lib/*/slurm-wlm"))
    if not found:
        raise EnvironmentProblem(f"the sandbox root {root} has no Slurm plugins: remove it")
    return found[0]


def direct_runtime(root: Path) -> tuple[Path, str]:
    """The root's dynamic loader and library path: how a user who may not enter the root
    (nsenter needs root) still runs its clients, with the version's own libraries."""
    plugins = plugin_dir(root)
    loaders = sorted(plugins.parent.glob("ld-linux*.so.*"))
    if not loaders:
        raise EnvironmentProblem(f"the sandbox root {root} has no dynamic loader: remove it")
    return loaders[0], f"{plugins}:{plugins.parent}"


def _last_line(result: _proc.Completed) -> str:
    lines = [ln for ln in (result.stderr or result.stdout).strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "no output"
