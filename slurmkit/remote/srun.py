"""The srun transport: one task per node inside a running job's allocation.

``srun --jobid J --overlap`` starts a step that shares the job's resources
instead of waiting for them. When the job holds GPUs the step asks for none
(``--gres=gpu:0``) so it never blocks on the job's devices; when it holds
none, the option is left out, because on a cluster without GPU gres Slurm
refuses it ("Invalid generic resource specification"). Knowing which costs one
``scontrol show job`` per run. ``--label`` prefixes each line with the
task id; the end marker (:mod:`.command`) adds the Slurm node name
(``$SLURMD_NODENAME``, not the host name) and the task's exit code, which srun
folds into one. The command runs under coreutils ``timeout`` on the node: a
task that exits 124 after at least the time limit is reported as a timeout.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import ClassVar

from slurmkit.errors import ControllerUnreachable, SlurmNotInstalled, UsageError
from slurmkit.grammar import gres
from slurmkit.hostlist import fold
from slurmkit.remote import command as cmd
from slurmkit.remote.base import RemoteOptions, TransportMissing
from slurmkit.remote.result import FAILED, TIMEOUT, NodeResult, from_exit_code
from slurmkit.slurm import query
from slurmkit.slurm.commands import first_message, run_slurm
from slurmkit.slurm.records import Job

_LABEL = re.compile(r"^\s*(\d+): ?(.*)$")
_TIMEOUT_RC = 124
_BACKSTOP = 30.0


class SrunTransport:
    name: ClassVar[str] = "srun"

    def __init__(self, options: RemoteOptions) -> None:
        if not options.jobid:
            raise UsageError("--via srun needs --jobid: srun runs inside a job's allocation")
        self.options = options

    def argv(self, nodes: Sequence[str], remote_command: str, *, no_gpus: bool = True) -> list[str]:
        """The step; ``no_gpus`` adds ``--gres=gpu:0`` (only valid where GPU gres exist)."""
        return [
            "srun",
            f"--jobid={self.options.jobid}",
            "--overlap",
            *(["--gres=gpu:0"] if no_gpus else []),
            f"--nodes={len(nodes)}",
            "--ntasks-per-node=1",
            f"--nodelist={fold(nodes)}",
            "--label",
            "--kill-on-bad-exit=0",
            "sh",
            "-c",
            remote_command,
        ]

    def run(self, nodes: Sequence[str], command: str) -> list[NodeResult]:
        token = cmd.new_token()
        script = cmd.wrap_script(command, token, with_node=True, time_limit=self.options.timeout)
        argv = self.argv(nodes, script, no_gpus=self._job_holds_gpus())
        started = time.monotonic()
        try:
            done = run_slurm(argv, check=False, timeout=self.options.timeout + _BACKSTOP)
        except SlurmNotInstalled as exc:
            raise TransportMissing(str(exc)) from exc
        except ControllerUnreachable:
            wall = time.monotonic() - started
            error = f"srun did not finish within {self.options.timeout + _BACKSTOP:g} s"
            return [NodeResult(n, TIMEOUT, "", "", None, wall, error) for n in nodes]
        return parse(
            done.stdout,
            done.stderr,
            done.returncode,
            nodes,
            token,
            time.monotonic() - started,
            self.options.timeout,
        )

    def _job_holds_gpus(self) -> bool:
        """One ``scontrol show job``; an unknown job or a down controller ends the run here."""
        try:
            return holds_gpus(query.job(str(self.options.jobid)))
        except SlurmNotInstalled as exc:
            raise TransportMissing(str(exc)) from exc


def holds_gpus(job: Job) -> bool:
    """Whether the job was given GPUs, from its allocated TRES or its per-node GRES detail."""
    texts = [job.alloc_tres, job.gres_per_node, *(alloc.gres for alloc in job.gres_detail)]
    return any(gres.gpu_count(text) for text in texts)


def parse(
    stdout: str,
    stderr: str,
    returncode: int,
    nodes: Sequence[str],
    token: str,
    wall: float,
    timeout: float,
) -> list[NodeResult]:
    """Per-node results from ``srun --label`` output with end markers."""
    out: dict[int, list[str]] = defaultdict(list)
    err: dict[int, list[str]] = defaultdict(list)
    markers: dict[int, cmd.Marker] = {}
    stray: list[str] = []
    for line in stdout.splitlines():
        label = _LABEL.match(line)
        if not label:
            stray.append(line)
            continue
        task, text = int(label[1]), label[2]
        found = cmd.parse_marker(text, token)
        if found is None:
            out[task].append(text + "\n")
        else:
            out[task].append(found[0])
            markers[task] = found[1]
    for line in stderr.splitlines():
        label = _LABEL.match(line)
        (err[int(label[1])].append(label[2] + "\n") if label else stray.append(line))
    by_node = {m.node: task for task, m in markers.items() if m.node}
    problem = first_message("\n".join(stray)) if stray else f"srun exited {returncode}"
    results = []
    for node in nodes:
        index = by_node.get(node)  # its task's index
        if index is None:
            results.append(
                NodeResult(
                    node, FAILED, "", "", None, wall, f"no end marker from this node: {problem}"
                )
            )
            continue
        marker = markers[index]
        seconds = marker.seconds if marker.seconds is not None else wall
        text, errors = "".join(out[index]), "".join(err[index])
        if marker.exit_code == _TIMEOUT_RC and seconds >= timeout - 0.5:
            results.append(
                NodeResult(
                    node, TIMEOUT, text, errors, None, seconds, f"no answer within {timeout:g} s"
                )
            )
        else:
            results.append(from_exit_code(node, marker.exit_code, text, errors, seconds))
    return results
