"""What a sandbox is: sizes, ports and paths, derived from a handful of choices.

Kept free of side effects so config rendering can be unit-tested without root.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.files import read_bounded, read_text_bounded
from slurmkit.trust import UntrustedPath, check_trusted

DEFAULT_DIR = Path("/tmp/slurmkit-sandbox")
MAX_NODES = 200  # 127.0.NET.1 .. 127.0.NET.200 and one slurmd port each
MARKER = ".slurmkit-sandbox"
MAX_VIRTUAL_NODES = 20000
# The timing profiles: "production" keeps Slurm's own intervals (the demo, users); "test"
# shortens what tests wait on (see slurmkit.sandbox.configs.PROFILES).
PROFILES = ("production", "test")


@dataclass(frozen=True)
class SandboxSpec:
    """The choices a user makes; everything else is derived from them."""

    dir: Path = DEFAULT_DIR
    nodes: int = 4
    cpus: int = 8
    gpus: int = 4
    port_base: int = 17800
    cluster_name: str = "sandbox"
    # the Slurm release series (``22.05``) and, unless it is the host's own, the root
    # file system its packages run from ("" = the host's packages)
    slurm: str = ""
    root: str = ""
    # a version built from source (slurmkit.sandbox.build): the prefix its daemons and
    # clients run from, on the host ("" = not such a version)
    prefix: str = ""
    # nodes defined in slurm.conf but never started (they show down): node queries over
    # thousands of nodes for the backend benchmark, without thousands of slurmd
    virtual_nodes: int = 0
    # node-N listens on 127.0.<net>.N: two sandboxes side by side need two blocks, or a
    # network fault put on one's node-3 (nftables, by address) would hit the other's too
    net: int = 1
    profile: str = "production"

    def __post_init__(self) -> None:
        if not 1 <= self.nodes <= MAX_NODES:
            raise UsageError(f"--nodes must be between 1 and {MAX_NODES}, got {self.nodes}")
        if not 0 <= self.virtual_nodes <= MAX_VIRTUAL_NODES:
            raise UsageError(f"--virtual-nodes must be between 0 and {MAX_VIRTUAL_NODES}")
        if self.cpus < 1 or self.gpus < 0:
            raise UsageError("--cpus must be at least 1 and --gpus at least 0")
        if not 1024 <= self.port_base <= 65535 - 100 - MAX_NODES:
            raise UsageError(f"--port-base {self.port_base} is out of range")
        if not 1 <= self.net <= 254:
            raise UsageError(f"--net must be between 1 and 254 (127.0.NET.N), got {self.net}")
        if self.profile not in PROFILES:
            choices = ", ".join(PROFILES)
            raise UsageError(f"--profile must be one of {choices}, got {self.profile!r}")
        object.__setattr__(self, "dir", Path(self.dir).resolve())

    # --- names and addresses ----------------------------------------------------------
    @property
    def node_names(self) -> list[str]:
        return [f"node-{i}" for i in range(1, self.nodes + 1)]

    @property
    def nodelist(self) -> str:
        return "node-1" if self.nodes == 1 else f"node-[1-{self.nodes}]"

    def node_addr(self, index: int) -> str:
        return f"127.0.{self.net}.{index}"

    @property
    def port_range(self) -> range:
        """Every port this sandbox may listen on: two sandboxes must not overlap here."""
        return range(self.port_base, self.slurmd_port(self.nodes) + 1)

    # --- ports ------------------------------------------------------------------------
    @property
    def ctld_port(self) -> int:
        return self.port_base + 17

    @property
    def dbd_port(self) -> int:
        return self.port_base + 19

    @property
    def mysql_port(self) -> int:
        return self.port_base + 6

    @property
    def ssh_port(self) -> int:
        return self.port_base + 22

    def slurmd_port(self, index: int) -> int:
        return self.port_base + 100 + index

    # --- paths ------------------------------------------------------------------------
    def path(self, *parts: str) -> Path:
        return self.dir.joinpath(*parts)

    @property
    def slurm_conf(self) -> Path:
        return self.path("etc", "slurm.conf")

    @property
    def munge_socket(self) -> Path:
        return self.path("munge", "munge.sock")

    @property
    def mysql_socket(self) -> Path:
        return self.path("db", "mysql.sock")

    @property
    def ssh_config(self) -> Path:
        return self.path("ssh", "ssh_config")

    @property
    def state_file(self) -> Path:
        return self.path("state.json")

    @property
    def bin_dir(self) -> Path:
        """Wrappers that run the root's Slurm clients (only for a version from a root)."""
        return self.path("bin")

    # --- persistence: `status`, `env` and `down` re-read what `up` chose ----------------
    def save(self) -> None:
        data = asdict(self)
        data["dir"] = str(self.dir)
        self.path("spec.json").write_text(json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> SandboxSpec | None:
        """The spec ``up`` saved in ``directory``; None when there is none.

        The directory and the file must be trusted (root acts on what they say:
        it signals the pids and runs the configs found there), and a damaged file
        is one clear error, never a traceback.
        """
        directory = Path(directory)
        if not directory.exists():
            return None
        check_trusted(directory, what="sandbox directory")
        spec_file = directory / "spec.json"
        if not os.path.lexists(spec_file):
            return None
        data = read_json_object(spec_file)
        known = {f.name: f.type for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown or "dir" not in data:
            detail = f"unknown keys {unknown}" if unknown else "no 'dir'"
            raise DamagedStateFile(f"{spec_file} is damaged ({detail}); {_REMEDY}")
        for name, value in data.items():
            want = int if known[name] in ("int", int) else str
            if type(value) is not want:
                raise DamagedStateFile(
                    f"{spec_file} is damaged ({name!r} is {value!r}, not {want.__name__}); "
                    f"{_REMEDY}"
                )
        data["dir"] = Path(data["dir"])
        try:
            return cls(**data)
        except UsageError as exc:
            raise DamagedStateFile(f"{spec_file} is damaged ({exc}); {_REMEDY}") from None


_REMEDY = "stop what it started by hand and remove the directory"


class DamagedStateFile(EnvironmentProblem):
    """A sandbox's spec.json or state.json that cannot be what ``up`` wrote (exit 2)."""


def read_json_object(path: Path) -> dict[str, Any]:
    """A trusted JSON file holding one object: never follows a symlink, never a traceback."""
    check_trusted(path, what="sandbox file")
    try:
        raw = read_bounded(path, what="sandbox file", max_bytes=1 << 20, error=UntrustedPath)
    except FileNotFoundError:
        raise UntrustedPath(f"cannot read sandbox file {path}: no such file") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise DamagedStateFile(f"{path} is damaged (not JSON: {exc}); {_REMEDY}") from None
    if not isinstance(data, dict):
        raise DamagedStateFile(
            f"{path} is damaged (a {type(data).__name__}, not an object); {_REMEDY}"
        )
    return data


def optional_text(path: Path, what: str) -> str:
    """The text of a file the host may not have ("" then); a FIFO or a device is an error."""
    try:
        return read_text_bounded(path, what=what, follow_links=True, error=EnvironmentProblem)
    except FileNotFoundError:
        return ""
