"""Where a cron dir keeps what, and its manifest (``scheduler/slurmkit-cron.json``).

Layout (the seed's, plus a manifest, state files and a log folder)::

    DIR/scheduler/slurmkit-cron.json   periods, job-name prefix, partition, account, --at
    DIR/scheduler/cron-hourly.slurm    rendered scheduler scripts, one per period
    DIR/scheduler/cron-hourly.last-run state file each scheduler run replaces
    DIR/scheduler/logs/                the schedulers' own logs, cron-hourly-<id>.out
    DIR/cron.hourly/ cron.daily/ cron.30m/   the users' *.slurm jobs

The manifest is what ``start``, ``status`` and ``watch cron`` read, so they never have
to guess the periods from file names.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from slurmkit.cron.period import Period, parse_at, parse_period
from slurmkit.errors import UsageError
from slurmkit.files import read_text_bounded

MANIFEST = "slurmkit-cron.json"
MAX_BYTES = 1024 * 1024  # a manifest is a few hundred bytes
ENV_VAR = "SLURMKIT_CRON_DIR"
DEFAULT_PREFIX = "cron"
DEFAULT_TIME = "00:10:00"
_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")


def resolve_dir(given: Path | str | None, environ: Mapping[str, str] | None = None) -> Path:
    """DIR as given, else ``$SLURMKIT_CRON_DIR``, else ``$WORK/cron`` (the seed's), absolute."""
    env = os.environ if environ is None else environ
    if given:
        chosen = Path(given)
    elif env.get(ENV_VAR):
        chosen = Path(env[ENV_VAR])
    elif env.get("WORK"):
        chosen = Path(env["WORK"]) / "cron"
    else:
        raise UsageError(
            f"no cron dir: give DIR (or --dir), or set {ENV_VAR} or WORK ($WORK/cron is used)"
        )
    return Path(os.path.abspath(os.path.expanduser(chosen)))  # unknown ~user: left as is


def check_prefix(prefix: str) -> str:
    if not _PREFIX.fullmatch(prefix):
        raise UsageError(
            f"--name-prefix {prefix!r}: use letters, digits, '.', '_' and '-' (at most 40)"
        )
    return prefix


@dataclass(frozen=True)
class CronConfig:
    """What ``cron init`` set up; periods always include hourly and daily."""

    periods: tuple[Period, ...]
    prefix: str = DEFAULT_PREFIX
    partition: str | None = None
    account: str | None = None
    time: str = DEFAULT_TIME
    at: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "version": 1,
            "prefix": self.prefix,
            "periods": [p.name for p in self.periods],
            "partition": self.partition,
            "account": self.account,
            "time": self.time,
            "at": self.at,
        }

    def chain_name(self, period: Period) -> str:
        return f"{self.prefix}-{period.name}"

    def find(self, text: str) -> Period:
        """The configured period ``text`` names (``30m``, ``1800s``, ``hourly``, ``1h``...)."""
        wanted = parse_period(text)
        for period in self.periods:
            if period.seconds == wanted.seconds:
                return period
        known = ", ".join(p.name for p in self.periods)
        raise UsageError(f"period {text!r} is not set up in this cron dir (periods: {known})")

    def select(self, texts: tuple[str, ...] | list[str]) -> list[Period]:
        """The periods named, or all of them when none is named; no period twice."""
        if not texts:
            return list(self.periods)
        return list(dict.fromkeys(self.find(t) for t in texts))


@dataclass(frozen=True)
class CronDir:
    root: Path

    @property
    def scheduler(self) -> Path:
        return self.root / "scheduler"

    @property
    def logs(self) -> Path:
        return self.scheduler / "logs"

    @property
    def manifest(self) -> Path:
        return self.scheduler / MANIFEST

    def folder(self, period: Period) -> Path:
        return self.root / period.folder

    def script(self, chain: str) -> Path:
        return self.scheduler / f"{chain}.slurm"

    def state_file(self, chain: str) -> Path:
        return self.scheduler / f"{chain}.last-run"

    def log(self, chain: str, job_id: str) -> Path:
        return self.logs / f"{chain}-{job_id}.out"

    def load(self) -> CronConfig:
        """The manifest; a dir without one is a usage error that says how to make one."""
        try:
            text = read_text_bounded(self.manifest, what="cron manifest", max_bytes=MAX_BYTES)
            data = json.loads(text)
        except FileNotFoundError:
            raise UsageError(
                f"{self.root} is not a slurmkit cron dir (no {self.manifest}): "
                f"run `slurmkit cron init {self.root}` first"
            ) from None
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read {self.manifest}: {exc}") from None
        return config_from_json(data, self.manifest)


def config_from_json(data: object, source: Path) -> CronConfig:
    """The config a manifest holds; a field of the wrong type is one usage error naming it.

    Every field is text (periods a list of text): ``"at": 1230`` or ``"time": 600``
    are refused, not turned into something sbatch would read differently.
    """
    if not isinstance(data, dict) or not isinstance(data.get("periods"), list):
        raise UsageError(f"{source}: not a slurmkit cron manifest")
    try:
        if not all(isinstance(p, str) for p in data["periods"]):
            raise UsageError('"periods" must be a list of texts such as "hourly" or "30m"')
        periods = tuple(sorted({parse_period(p) for p in data["periods"]}))
        at = _text(data, "at")
        return CronConfig(
            periods=periods,
            prefix=check_prefix(_text(data, "prefix") or DEFAULT_PREFIX),
            partition=_text(data, "partition"),
            account=_text(data, "account"),
            time=_text(data, "time") or DEFAULT_TIME,
            at=parse_at(at) if at else None,
        )
    except UsageError as exc:
        raise UsageError(f"{source}: {exc}") from None


def _text(data: dict[str, object], key: str) -> str | None:
    """A text field of the manifest; absent, null or "" is None; any other type is refused."""
    value = data.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise UsageError(
            f'"{key}" must be text (e.g. "12:30" for "at"), not {type(value).__name__} {value!r}'
        )
    return value
