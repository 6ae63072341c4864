"""The one reader of slurmkit's config files, for every command and for template parameters.

A site that always runs ``--fanout 64 --ssh-config /etc/slurmkit/ssh_config`` should say
so once, not in every cron line. The layers, lowest first::

    /etc/slurmkit/config.toml                    the site's defaults (root-owned)
    $XDG_CONFIG_HOME/slurmkit/config.toml        the user's (~/.config when unset),
      or $SLURMKIT_CONFIG instead                  a file named there must exist
    SLURMKIT_<COMMAND>_<OPTION> variables        (applied by the CLI: click's names)
    flags on the command line

A section is named by its command path (``[run]``, ``[undrain]``, ``[faulty.scan]``); its
keys are the command's option names (``fanout``, ``ssh_config`` or ``ssh-config``). Keys
outside any section are the root command's options (``backend``). A few sections are not
commands: ``[defaults]`` and ``[template.NAME]`` (template parameters),
``[notify] targets = [...]`` (the ``--notify`` default of every command that has one) and
``[smtp]`` (the email notifier's settings).

This module reads and layers the files and knows where every value came from (file and
line), so that an error or ``slurmkit config show`` can point at it. It does not know the
commands: checking keys against the real options is the CLI's job (``slurmkit.cli._defaults``).
TOML is parsed by ``tomllib`` (Python 3.11+) or the ``tomli`` backport, never by hand; the
only text this module reads itself is the line a key sits on, for messages.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slurmkit.errors import EnvironmentProblem, UsageError

ENV_VAR = "SLURMKIT_CONFIG"
ENV_PREFIX = "SLURMKIT"
SYSTEM_PATH = Path("/etc/slurmkit/config.toml")
MAX_BYTES = 1024 * 1024  # a config file, not a data set

NOTIFY_SECTION = "notify"
NOTIFY_KEY = "targets"
# Sections that do not name a command: their contents are checked by their own readers.
NOT_COMMANDS = frozenset({"defaults", "smtp", NOTIFY_SECTION})


class ConfigError(UsageError):
    """A bad config file: one line naming the file, the line and the key (exit 2)."""


@dataclass(frozen=True)
class Origin:
    """Where one value was set: a file and line, or an environment variable."""

    path: Path | None = None
    line: int | None = None
    env: str | None = None

    def __str__(self) -> str:
        if self.env is not None:
            return f"env:{self.env}"
        if self.path is None:
            return "default"
        return f"file:{self.path}" + (f":{self.line}" if self.line else "")


@dataclass(frozen=True)
class ConfigFile:
    """One parsed file, with its text kept to find the line of a key."""

    path: Path
    data: dict[str, Any]
    text: str = ""

    def line_of(self, keys: tuple[str, ...]) -> int | None:
        """The line that sets ``keys`` (section path, then key), or its section's line."""
        return locate(self.text, keys)


@dataclass
class Layered:
    """Every file merged, highest layer last; ``origins`` maps a key path to where it was set."""

    files: list[ConfigFile] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    origins: dict[tuple[str, ...], Origin] = field(default_factory=dict)

    def origin(self, keys: tuple[str, ...]) -> Origin:
        return self.origins.get(keys, Origin())

    def error(self, keys: tuple[str, ...], message: str) -> ConfigError:
        """The one-line error for a bad value at ``keys``: file, line, key, what is wrong."""
        where = self.origin(keys)
        key = ".".join(keys)
        if where.env is not None:
            return ConfigError(f"environment variable {where.env}: {message}")
        if where.path is None:
            return ConfigError(f"config key {key}: {message}")
        line = f", line {where.line}" if where.line else ""
        return ConfigError(f"config file {where.path}{line}, key {key}: {message}")

    def section(self, keys: tuple[str, ...]) -> dict[str, Any]:
        table: Any = self.values
        for key in keys:
            table = table.get(key) if isinstance(table, dict) else None
        return table if isinstance(table, dict) else {}


def user_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/slurmkit/config.toml``, else ``~/.config/slurmkit/config.toml``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "slurmkit" / "config.toml"


def default_path() -> Path:
    """The user's file for this process's environment (kept for older callers)."""
    return user_path()


def candidate_paths(environ: Mapping[str, str] | None = None) -> list[tuple[Path, bool]]:
    """(path, must exist) lowest layer first: the system file, then the user's or the named one."""
    env = os.environ if environ is None else environ
    named = env.get(ENV_VAR)
    return [(SYSTEM_PATH, False), (Path(named), True) if named else (user_path(env), False)]


def _tomllib() -> Any:
    try:
        import tomllib  # type: ignore[import-not-found,unused-ignore]
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
        except ModuleNotFoundError:
            raise EnvironmentProblem(
                "reading a config file needs Python 3.11+ or the 'tomli' package"
            ) from None
    return tomllib


def _read_text(path: Path, what: str) -> str:
    """The file's text, bounded: a FIFO, a device link or a huge file is one usage line."""
    from slurmkit.files import read_text_bounded

    try:
        return read_text_bounded(path, what=what, max_bytes=MAX_BYTES, follow_links=True)
    except FileNotFoundError:
        raise UsageError(f"{what} {path} does not exist") from None


def _present(path: Path) -> bool:
    """Whether an optional config file is there; a HOME we may not search is one usage line.

    ``Path.exists`` raises on anything but "no such file" (a PermissionError on an
    unreadable HOME was a traceback in every command).
    """
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise UsageError(
            f"cannot read config file {path}: {exc.strerror or exc} "
            f"(set {ENV_VAR} to use another file)"
        ) from None
    return True


def parse(text: str, path: Path, what: str = "config file") -> dict[str, Any]:
    """``text`` as TOML; a syntax error names the file, its line and the key on that line."""
    tomllib = _tomllib()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r"at line (\d+)", message)
        lineno = int(found.group(1)) if found else getattr(exc, "lineno", None)
        where = f" at line {lineno}" if lineno else ""
        key = _key_on_line(text, lineno) if lineno else None
        named = f", key {key}" if key else ""
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", message).strip() or "syntax error"
        raise ConfigError(f"{what} {path} is not valid TOML{where}{named}: {reason}") from None
    except ValueError:  # int() of a 5000-digit number: Python's digit limit, no line given
        raise ConfigError(f"{what} {path}: a number too long to read (over 4300 digits)") from None


def load_toml(path: Path, what: str) -> dict[str, Any]:
    """Parse a TOML file into a dict; any fault is one usage-error line naming the file."""
    return parse(_read_text(path, what), path, what)


def read(path: Path, *, trusted_for_root: bool = True) -> ConfigFile:
    """One config file. As root, a file another user could change is refused.

    Root's defaults decide what root runs, where it logs and whom it alerts, so the file and
    every folder above it must be root's alone (``slurmkit.trust.check_trusted``).
    """
    if trusted_for_root and os.geteuid() == 0:
        from slurmkit.trust import check_trusted

        try:
            os.lstat(path)
        except FileNotFoundError:
            raise UsageError(f"config file {path} does not exist") from None
        except OSError:
            pass  # read below says what is wrong
        else:
            check_trusted(path, what="config file")
    text = _read_text(path, "config file")
    return ConfigFile(path=path, data=parse(text, path), text=text)


def load(environ: Mapping[str, str] | None = None) -> Layered:
    """Every config file that applies here, merged (the environment layer is the CLI's)."""
    layered = Layered()
    for path, must_exist in candidate_paths(environ):
        if not must_exist and not _present(path):
            continue
        layered.files.append(read(path))
    for config_file in layered.files:
        _merge(layered, config_file, config_file.data, ())
    return layered


def _merge(layered: Layered, source: ConfigFile, data: Mapping[str, Any], at: tuple[str, ...]):
    target = layered.values
    for key in at:
        target = target.setdefault(key, {})
    for key, value in data.items():
        keys = (*at, key)
        if isinstance(value, dict):
            if not isinstance(target.get(key), dict):
                target[key] = {}
            layered.origins.setdefault(keys, Origin(source.path, source.line_of(keys)))
            _merge(layered, source, value, keys)
        else:
            target[key] = value  # a list replaces the lower layer's list, as a flag would
            layered.origins[keys] = Origin(source.path, source.line_of(keys))


# ------------------------------------------------------------------ lines, for messages only

_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*(\.|=)""")


def _split_header(name: str) -> tuple[str, ...]:
    parts = re.findall(r"""\s*("[^"]*"|'[^']*'|[^.]+?)\s*(?:\.|$)""", name)
    return tuple(part.strip("\"'") for part in parts if part)


def locate(text: str, keys: tuple[str, ...]) -> int | None:
    """The line number of ``keys`` in ``text``: the key's own line, else its section's header.

    A locator for messages, not a parser: the values were read by tomllib already.
    """
    if not keys:
        return None
    current: tuple[str, ...] = ()
    section_line = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            current = _split_header(header.group(1))
            if current == keys:
                return number
            if current == keys[:-1] and section_line is None:
                section_line = number
            continue
        key = _KEY.match(line)
        if key and current == keys[:-1] and key.group(1).strip("\"'") == keys[-1]:
            return number
    return section_line


def _key_on_line(text: str, lineno: int) -> str | None:
    lines = text.splitlines()
    if not 0 < lineno <= len(lines):
        return None
    line = lines[lineno - 1]
    header = _HEADER.match(line)
    if header:
        return header.group(1)
    found = _KEY.match(line)
    return found.group(1).strip("\"'") if found else None
