"""Which paths slurmkit may read, run or write into when it acts for root.

Root runs slurmkit from cron. Any file root *runs* (a job script, an
interpreter), any directory root *writes into and later reads back* (a sandbox,
a work dir, a train folder) and any lock root *takes* must be out of reach of
other users: otherwise a local user swaps the file between the check and the
use, or plants a symlink and makes root overwrite something else. The rule is
the one OpenSSH applies to ``authorized_keys``: the path and every directory
above it belong to the caller or to root, and nobody else can write to them. A
sticky directory (``/tmp``) is allowed above the path, because the sticky bit
stops others from renaming or removing what the caller owns inside it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from slurmkit.errors import EnvironmentProblem


class UntrustedPath(EnvironmentProblem):
    """A path another user could change under us (exit 2)."""


def _owners_ok(uid: int) -> set[int]:
    return {0, uid}


def _describe(st: os.stat_result) -> str:
    return f"owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}"


def _check_component(path: Path, st: os.stat_result, uid: int, *, leaf: bool, what: str) -> None:
    if st.st_uid not in _owners_ok(uid):
        raise UntrustedPath(
            f"refusing {what} {path}: owned by uid {st.st_uid}, not by you (uid {uid}) or root"
        )
    writable_by_others = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if not writable_by_others:
        return
    if not leaf and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX and st.st_uid == 0:
        return  # /tmp-style: others can add entries but cannot touch ours
    raise UntrustedPath(
        f"refusing {what} {path}: writable by group or others ({_describe(st)}); "
        f"fix it with: chmod go-w {path}"
    )


def check_trusted(
    path: str | os.PathLike[str], *, what: str = "path", uid: int | None = None
) -> Path:
    """Raise :class:`UntrustedPath` unless nobody but the caller and root can change ``path``.

    ``path`` itself must not be a symlink (a link is exactly how a planted file
    redirects a write); the directories above it are checked as they resolve,
    so a system link such as ``/var/run -> /run`` is fine when its target is.
    Returns the absolute path. A missing path is an error: create it with
    :func:`private_dir` first.
    """
    uid = os.geteuid() if uid is None else uid
    target = Path(os.path.abspath(path))
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        raise UntrustedPath(f"refusing {what} {target}: it does not exist") from None
    except OSError as exc:
        raise UntrustedPath(f"refusing {what} {target}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UntrustedPath(f"refusing {what} {target}: it is a symbolic link")
    _check_component(target, st, uid, leaf=True, what=what)
    parent = Path(os.path.realpath(target.parent))
    for directory in (parent, *parent.parents):
        _check_component(directory, os.stat(directory), uid, leaf=False, what=f"{what} (in)")
    return target


def private_dir(
    path: str | os.PathLike[str], *, mode: int = 0o700, what: str = "directory"
) -> Path:
    """Create ``path`` (and missing parents) for the caller, or accept it if it is trusted.

    ``mkdir`` of an existing directory is not an error, but an existing one must
    pass :func:`check_trusted`: a directory another user made first (the classic
    ``/tmp`` squat) is refused, never adopted. ``mode`` is applied to a directory
    this call creates; an existing one keeps its mode, which must already be safe.
    """
    target = Path(os.path.abspath(path))
    for directory in reversed([target, *target.parents]):
        try:
            os.mkdir(directory, mode)
        except FileExistsError:
            continue
        except OSError as exc:
            raise EnvironmentProblem(f"cannot create {what} {directory}: {exc.strerror}") from None
        if directory == target:
            os.chmod(directory, mode)  # mkdir's mode is filtered by the umask
    return check_trusted(target, what=what)


def open_nofollow(path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
    """``os.open`` that never follows a symlink at ``path`` itself (``O_NOFOLLOW``)."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
