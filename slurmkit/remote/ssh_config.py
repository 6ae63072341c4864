"""Read ``~/.ssh/config`` the way OpenSSH does, for the paramiko transport.

paramiko's ``SSHConfig`` ignores ``Include``, and clusters commonly keep
their node entries in an included file (the sandbox does), so without this
``ssh node-2`` would work while paramiko connected to the wrong place.
Includes are inlined where they appear: paths may be globs, ``~`` is
expanded, relative paths are relative to ``~/.ssh`` (OpenSSH's rule for user
configs, also under ``-F``), missing files are skipped, nesting is limited to
16 levels as in OpenSSH. After an inlined file that opened blocks of its own,
the block that held the ``Include`` is reopened, so the lines that follow it
keep applying where they did. One difference remains: ``Host`` blocks inside
a file included from within a ``Host``/``Match`` block apply unconditionally
here, while OpenSSH also requires the outer block to match.
"""

from __future__ import annotations

import getpass
import glob
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurmkit.errors import UsageError
from slurmkit.files import read_text_bounded

if TYPE_CHECKING:
    import paramiko

MAX_DEPTH = 16
MAX_BYTES = 1024 * 1024  # one config file, Includes read one by one
_INCLUDE = re.compile(r"^\s*include(?:\s*=\s*|\s+)(?P<args>.+?)\s*$", re.I)
_BLOCK = re.compile(r"^\s*(host|match)(\s*=\s*|\s+)", re.I)
DEFAULT_USER_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
DEFAULT_GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")


def user_config_path() -> Path:
    return Path.home() / ".ssh" / "config"


def expand_includes(path: Path, *, base: Path | None = None, depth: int = 0) -> str:
    """The text of ``path`` with every ``Include`` replaced by the files it names."""
    if depth > MAX_DEPTH:
        raise UsageError(f"ssh config: Include nested deeper than {MAX_DEPTH} levels at {path}")
    base = base if base is not None else Path.home() / ".ssh"
    out: list[str] = []
    header = ""
    text = read_text_bounded(
        path, what="ssh config", max_bytes=MAX_BYTES, follow_links=True, errors="replace"
    )
    for line in text.splitlines():
        match = _INCLUDE.match(line)
        if match is None:
            if _BLOCK.match(line):
                header = line.strip()
            out.append(line)
            continue
        included = [
            expand_includes(p, base=base, depth=depth + 1)
            for p in include_paths(match["args"], base)
        ]
        text = "\n".join(included)
        out.append(text)
        if any(_BLOCK.match(ln) for ln in text.splitlines()):
            out.append(header or "Host *")
    return "\n".join(out) + "\n"


def include_paths(args: str, base: Path) -> list[Path]:
    """The files one ``Include`` line names, glob-expanded and sorted like OpenSSH."""
    try:
        words = shlex.split(args, comments=True)
    except ValueError as exc:
        raise UsageError(f"ssh config: cannot read 'Include {args}': {exc}") from exc
    found: list[Path] = []
    for word in words:
        pattern = Path(word).expanduser()
        if not pattern.is_absolute():
            pattern = base / pattern
        found += [Path(p) for p in sorted(glob.glob(str(pattern))) if Path(p).is_file()]
    return found


def load(path: Path | None = None) -> paramiko.SSHConfig:
    """The parsed config (``~/.ssh/config`` by default) with Includes resolved."""
    import paramiko

    path = path if path is not None else user_config_path()
    named = path != user_config_path()  # only the default file may be missing
    try:
        text = expand_includes(path)
    except FileNotFoundError:
        if named:
            raise UsageError(f"ssh config {path} does not exist") from None
        return paramiko.SSHConfig()
    try:
        return paramiko.SSHConfig.from_text(text)
    except (paramiko.ssh_exception.ConfigParseError, ValueError) as exc:
        raise UsageError(f"ssh config {path}: {exc}") from None


@dataclass(frozen=True)
class HostSettings:
    """What the paramiko transport needs to reach one host, as OpenSSH would."""

    alias: str
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...]
    identities_only: bool
    known_hosts_files: tuple[str, ...]
    host_key_alias: str | None
    connect_timeout: float | None
    proxy: str | None

    @property
    def host_key_names(self) -> list[str]:
        """Names a known_hosts entry may use for this host (OpenSSH checks the alias)."""
        names = [self.host_key_alias] if self.host_key_alias else [self.alias, self.hostname]
        if self.port == 22:
            return list(dict.fromkeys(names))
        return list(dict.fromkeys(f"[{n}]:{self.port}" for n in names))


def settings_for(config: paramiko.SSHConfig, alias: str) -> HostSettings:
    """Resolve one host alias against the config."""
    found: Mapping[str, Any] = config.lookup(alias)
    proxy = found.get("proxycommand") or found.get("proxyjump")
    if proxy and str(proxy).lower() == "none":
        proxy = None
    return HostSettings(
        alias=alias,
        hostname=str(found.get("hostname", alias)),
        port=_port(found.get("port"), 22, "Port"),
        user=str(found.get("user") or getpass.getuser()),
        identity_files=tuple(_expand(p) for p in found.get("identityfile", [])),
        identities_only=str(found.get("identitiesonly", "no")).lower() == "yes",
        known_hosts_files=_known_hosts(found),
        host_key_alias=found.get("hostkeyalias"),
        connect_timeout=_float(found.get("connecttimeout")),
        proxy=str(proxy) if proxy else None,
    )


def _known_hosts(found: Mapping[str, Any]) -> tuple[str, ...]:
    user = str(found.get("userknownhostsfile", "")).split() or list(DEFAULT_USER_KNOWN_HOSTS)
    system = str(found.get("globalknownhostsfile", "")).split() or list(DEFAULT_GLOBAL_KNOWN_HOSTS)
    return tuple(_expand(p) for p in [*user, *system] if p.lower() != "none")


def _expand(path: str) -> str:
    path = path.replace("%d", str(Path.home())).replace("%u", getpass.getuser())
    return str(Path(path).expanduser())


def _port(value: Any, default: int, what: str) -> int:
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"ssh config: {what} {value!r} is not a number") from exc
    if not 0 < number < 65536:
        raise UsageError(f"ssh config: {what} {value!r} is not a port (1-65535)")
    return number


def _float(value: Any) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None
