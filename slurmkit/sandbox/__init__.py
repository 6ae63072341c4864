"""A real multi-node Slurm cluster on one machine, for tests, benchmarks and the demo.

Each node is a ``slurmd`` inside its own PID, UTS and mount namespaces (with
``tini`` as PID 1 to reap finished steps) and its own ``sshd`` listening on
``127.0.1.N``; ``slurmctld``, ``slurmdbd``, MariaDB and ``munged`` run on the
host. Nothing is faked: this is Debian's Slurm, so what passes here passes on
a cluster running the same version.
"""

from slurmkit.sandbox.cluster import down, env_lines, status, up
from slurmkit.sandbox.spec import DEFAULT_DIR, SandboxSpec

__all__ = ["DEFAULT_DIR", "SandboxSpec", "down", "env_lines", "status", "up"]
