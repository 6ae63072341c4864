"""The cpus-per-task test job's report: its log lines read into modes, a verdict and the fixes.

Each mode (batch, plain srun, ``srun --exact``, ...) prints the CPUs its tasks were
given; the verdict reads what the step was given, not the affinity: on 22.05.8 a
plain srun step that takes the whole allocation shows all of the job's CPUs in its
affinity although it did not inherit --cpus-per-task.
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmkit.cpus.expected import expected_affected
from slurmkit.errors import SlurmkitError
from slurmkit.templating.results import parse_cpus_lines, parse_cpus_verdict

MODES = ("batch", "srun", "srun-exact", "srun-cpus-per-task", "srun-env")
FIX = "srun --cpus-per-task=$SLURM_CPUS_PER_TASK (works on every Slurm version)"
ENV_FIX = "export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK before srun (read only by 22.05-23.02)"


@dataclass(frozen=True)
class Mode:
    """One way of starting tasks; ``given``: fewest CPUs per task its step was given."""

    mode: str
    tasks: int
    given: int | None
    step_cpus: int | None
    affinity_min: int | None
    affinity_max: int | None

    def to_json(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "tasks": self.tasks,
            "cpus_per_task_given": self.given,
            "step_cpus": self.step_cpus,
            "affinity_min": self.affinity_min,
            "affinity_max": self.affinity_max,
        }


@dataclass(frozen=True)
class CpusReport:
    job_id: str
    job_state: str
    slurm: str
    requested: int | None
    affected: bool | None
    modes: tuple[Mode, ...]
    log: str

    @property
    def expected_affected(self) -> bool | None:
        """What the version rules predict (lint's), to flag a cluster that behaves otherwise."""
        return expected_affected(self.slurm)

    def mode(self, name: str) -> Mode | None:
        return next((m for m in self.modes if m.mode == name), None)

    @property
    def fixes(self) -> list[str]:
        if not self.affected:
            return []
        env = self.mode("srun-env")
        works = env is not None and env.given is not None and env.given >= (self.requested or 0)
        return [FIX, *([ENV_FIX] if works else [])]

    @property
    def exit_code(self) -> int:
        return 0 if self.affected is False else 1

    def to_json(self) -> dict[str, object]:
        return {
            "job_id": self.job_id,
            "job_state": self.job_state,
            "slurm": self.slurm,
            "requested": self.requested,
            "affected": self.affected,
            "expected_affected": self.expected_affected,
            "modes": [m.to_json() for m in self.modes],
            "fixes": self.fixes,
            "log": self.log,
        }


def summarize(log: str, job_id: str, state: str, log_path: str) -> CpusReport:
    """The report from the job's log; a job that printed no verdict is an error with its tail."""
    verdict = parse_cpus_verdict(log)
    if verdict is None:
        tail = " | ".join(line for line in log.strip().splitlines()[-3:]) or "empty log"
        raise SlurmkitError(
            f"cpus-per-task test job {job_id} ended {state} without a verdict "
            f"(log {log_path}: {tail})"
        )
    affected = {"yes": True, "no": False}.get(verdict.get("affected", ""))
    return CpusReport(
        job_id=job_id,
        job_state=state,
        slurm=verdict.get("slurm", "?"),
        requested=_int(verdict.get("requested")),
        affected=affected,
        modes=tuple(modes(parse_cpus_lines(log))),
        log=log_path,
    )


def modes(lines: list[dict[str, str]]) -> list[Mode]:
    found = []
    for name in MODES:
        mine = [line for line in lines if line.get("mode") == name]
        if not mine:
            continue
        given = [v for v in (_int(line.get("per_task")) for line in mine) if v is not None]
        steps = [v for v in (_int(line.get("step_cpus")) for line in mine) if v is not None]
        affinity = [v for v in (_int(line.get("affinity")) for line in mine) if v is not None]
        found.append(
            Mode(
                mode=name,
                tasks=len(mine),
                given=min(given) if given else None,
                step_cpus=max(steps) if steps else None,
                affinity_min=min(affinity) if affinity else None,
                affinity_max=max(affinity) if affinity else None,
            )
        )
    return found


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
