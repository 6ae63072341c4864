"""What a sandbox is: sizes, ports and paths, derived from a handful of choices.

Kept free of side effects so config rendering can be unit-tested without root.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from slurmkit.errors import UsageError

DEFAULT_DIR = Path("/tmp/slurmkit-sandbox")
MAX_NODES = 200  # 127.0.1.1 .. 127.0.1.200 and one slurmd port each
MARKER = ".slurmkit-sandbox"


@dataclass(frozen=True)
class SandboxSpec:
    """The choices a user makes; everything else is derived from them."""

    dir: Path = DEFAULT_DIR
    nodes: int = 4
    cpus: int = 8
    gpus: int = 4
    port_base: int = 17800
    cluster_name: str = "sandbox"

    def __post_init__(self) -> None:
        if not 1 <= self.nodes <= MAX_NODES:
            raise UsageError(f"--nodes must be between 1 and {MAX_NODES}, got {self.nodes}")
        if self.cpus < 1 or self.gpus < 0:
            raise UsageError("--cpus must be at least 1 and --gpus at least 0")
        if not 1024 <= self.port_base <= 65535 - 100 - MAX_NODES:
            raise UsageError(f"--port-base {self.port_base} is out of range")
        object.__setattr__(self, "dir", Path(self.dir).resolve())

    # --- names and addresses ----------------------------------------------------------
    @property
    def node_names(self) -> list[str]:
        return [f"node-{i}" for i in range(1, self.nodes + 1)]

    @property
    def nodelist(self) -> str:
        return "node-1" if self.nodes == 1 else f"node-[1-{self.nodes}]"

    @staticmethod
    def node_addr(index: int) -> str:
        return f"127.0.1.{index}"

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

    # --- persistence: `status`, `env` and `down` re-read what `up` chose ----------------
    def save(self) -> None:
        data = asdict(self)
        data["dir"] = str(self.dir)
        self.path("spec.json").write_text(json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> SandboxSpec | None:
        spec_file = Path(directory) / "spec.json"
        if not spec_file.exists():
            return None
        data = json.loads(spec_file.read_text())
        data["dir"] = Path(data["dir"])
        return cls(**data)
