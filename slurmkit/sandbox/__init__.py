"""A real multi-node Slurm cluster on one machine, for tests, benchmarks and the demo.

Each node is a ``slurmd`` inside its own PID, UTS and mount namespaces (with
``tini`` as PID 1 to reap finished steps) and its own ``sshd`` listening on
``127.0.1.N``; ``slurmctld``, ``slurmdbd``, MariaDB and ``munged`` run on the
host. Nothing is faked: this is Debian's Slurm, so what passes here passes on
a cluster running the same version.

Versions other than the host's (``--slurm 24.11`` = Debian trixie's,
``26.05`` = sid's) run from a cached debootstrap root (:mod:`.rootfs`): one
long-lived "world" process holds a private mount namespace in which the root
sees the host's /proc, /sys, /dev, accounts and every non-OS top-level
directory, and is chrooted there. Every daemon of that version is started
inside it with ``nsenter``; the host's shell reaches its clients through
wrapper scripts in ``<dir>/bin``. MariaDB stays the host's for every version
(slurmdbd needs only the client library, which the root has). Mounts exist
only in that namespace, so nothing is mounted on the host and ``down``
(ending the world last) leaves nothing behind.
"""

from slurmkit.sandbox.lifecycle import down, env_lines, fault, status, up
from slurmkit.sandbox.spec import DEFAULT_DIR, SandboxSpec

__all__ = ["DEFAULT_DIR", "SandboxSpec", "down", "env_lines", "fault", "status", "up"]
