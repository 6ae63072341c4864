"""One munged per sandbox node, for a Slurm version that decodes one credential on many nodes.

Slurm 25.11's srun sends one signed launch request to every node of a step; each
node's slurmd asks munged to decode the same credential. On a real cluster every node
has its own munged, so each decodes it once. The sandbox's nodes share one host, and
one shared munged refuses the second decode as a replay (``munged: Info: Replayed
credential``; slurmd: ``_verify_signature: failed decode``; ``srun -N2`` fails with
"Header lengths are longer than data received"). So each node gets its own munged
(same key, its own socket), bind-mounted over the sandbox's munge directory inside
that node's private mount namespace only: processes on the node (slurmd, slurmstepd,
the job's srun) reach their node's munged at the path slurm.conf names, while
slurmctld, slurmdbd and the host's clients keep the shared one.
"""

from __future__ import annotations

import os
import shutil

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem
from slurmkit.sandbox.daemons import Daemon, spawn, wait_for
from slurmkit.sandbox.requirements import find_program
from slurmkit.sandbox.spec import SandboxSpec


def start(spec: SandboxSpec, node: str, init_pid: int) -> Daemon:
    """Start ``node``'s munged and put its socket where the node looks for munge's."""
    own = spec.path(f"munge-{node}")
    shutil.rmtree(own, ignore_errors=True)
    own.mkdir(mode=0o755)
    os.chmod(own, 0o755)  # jobs of non-root users on the node must reach the socket
    socket = own / "munge.sock"
    daemon = spawn(
        spec,
        f"munged-{node}",
        [
            find_program("munged") or "munged",
            "--foreground",
            "--force",
            f"--socket={socket}",
            f"--key-file={spec.munge_socket.parent / 'munge.key'}",
            f"--pid-file={own / 'munged.pid'}",
            f"--seed-file={own / 'munged.seed'}",
            f"--log-file={spec.path('log', f'munged-{node}.log')}",
        ],
        str(socket),
    )
    wait_for(
        socket.exists, 15, f"munged of {node}", f"see {spec.path('log', f'munged-{node}.log')}"
    )
    enter = find_program("nsenter") or "nsenter"
    bind = [
        enter,
        "-t",
        str(init_pid),
        "-m",
        "mount",
        "--bind",
        str(own),
        str(spec.munge_socket.parent),
    ]
    result = _proc.run(bind, timeout=30)
    if result.returncode != 0:
        raise EnvironmentProblem(
            f"could not give {node} its own munged: {result.stderr.strip() or 'mount failed'}"
        )
    return daemon
