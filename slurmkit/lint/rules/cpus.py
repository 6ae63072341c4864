"""Does ``#SBATCH --cpus-per-task`` reach the tasks srun starts? Version-aware.

22.05 to 23.02: srun does not inherit it and reads only ``SRUN_CPUS_PER_TASK``.
23.11 on: srun inherits it again (via ``SLURM_CPUS_PER_TASK``, and from 24.11
``SLURM_TRES_PER_TASK``) and ignores ``SRUN_CPUS_PER_TASK``. ``srun
--cpus-per-task`` works on every version, so it is always the fix.
"""

from __future__ import annotations

from collections.abc import Iterator

from slurmkit.lint.context import NO_INHERIT_RANGE, LintContext
from slurmkit.lint.findings import ERROR, WARNING, Finding, Rule
from slurmkit.lint.script import Binding, Script, Srun

SRUN_ENV = "SRUN_CPUS_PER_TASK"
SLURM_ENV = "SLURM_CPUS_PER_TASK"
_OWN_JOB = ("$SLURM_JOBID", "$SLURM_JOB_ID", "${SLURM_JOBID}", "${SLURM_JOB_ID}")
FIX = "srun --cpus-per-task=$SLURM_CPUS_PER_TASK ... (explicit: right on every Slurm version)"
# Programs that use one CPU whatever they are given: a step running one of them
# (`$(srun -N1 -n1 hostname --ip-address)`) loses nothing by getting 1 CPU.
ONE_CPU = frozenset(
    {
        "hostname",
        "echo",
        "printf",
        "true",
        "date",
        "ip",
        "uname",
        "env",
        "printenv",
        "mkdir",
        "rm",
        "touch",
        "ls",
        "cat",
        "sleep",
        "nvidia-smi",
        "scontrol",
        "df",
        "free",
    }
)


def one_cpu_helper(srun: Srun) -> bool:
    """The step runs a program that needs one CPU (named plainly, path or not)."""
    if not srun.program or not srun.program[0].literal:
        return False
    return srun.program[0].text.rsplit("/", 1)[-1] in ONE_CPU


def other_job(srun: Srun) -> bool:
    """``srun --jobid X`` into a job that is not this script's own."""
    option = srun.option("jobid")
    if option is None or option.value is None:
        return False
    raw = next((w.raw for w in srun.command.words if option.value in w.text), option.value)
    return not any(ref in raw or ref in option.value for ref in _OWN_JOB)


def _srun_cpus(script: Script, context: LintContext) -> Iterator[Finding]:
    job_cpus = script.job.cpus_per_task
    setting = script.job.get("cpus-per-task")
    for srun in script.sruns:
        if srun.has("cpus-per-task", "cpus-per-gpu") or srun.has("overlap") or other_job(srun):
            continue
        if one_cpu_helper(srun):
            continue
        env = srun.env.get(SRUN_ENV)
        if env is None and context.may_not_inherit and job_cpus and job_cpus > 1:
            yield script.finding(
                srun.line,
                ERROR,
                RULE_SRUN.id,
                _not_inherited(script, srun, job_cpus, setting.line if setting else 0, context),
                f"{FIX}, or export {SRUN_ENV}=$SLURM_CPUS_PER_TASK before srun "
                f"(read only by {NO_INHERIT_RANGE})",
            )
        elif env is not None and context.may_inherit_again:
            where = "on this srun" if env.prefix else f"on line {script.shown(env.line)}"
            yield script.finding(
                srun.line,
                WARNING,
                RULE_SRUN.id,
                f"this srun relies on {SRUN_ENV} alone (set {where}), which srun ignores "
                f"{context.on_versions('from Slurm 23.11 on')}: it takes the job's "
                "--cpus-per-task instead, so a different value here is silently lost",
                f"pass the CPUs to srun itself: {FIX}",
            )


def _not_inherited(
    script: Script, srun: Srun, job_cpus: int, line: int, context: LintContext
) -> str:
    where = f" (line {script.shown(line)})" if line else ""
    message = (
        f"srun does not inherit #SBATCH --cpus-per-task={job_cpus}{where} "
        f"{context.on_versions(f'on Slurm {NO_INHERIT_RANGE}')}: each task of this step gets "
        "1 CPU and its data loaders crawl"
    )
    unexported = srun.shell.get(SRUN_ENV)
    if unexported is not None:
        message += (
            f"; {SRUN_ENV} is set on line {script.shown(unexported.line)} but not exported, "
            "so srun never sees it"
        )
    return message


def _slurm_env(script: Script, context: LintContext) -> Iterator[Finding]:
    job_cpus = script.job.cpus_per_task
    if job_cpus is None:
        return
    for binding in script.bindings:
        value = _literal_int(binding)
        if binding.name != SLURM_ENV or value is None or value == job_cpus:
            continue
        if context.may_inherit_again:
            yield script.finding(
                binding.line,
                ERROR,
                RULE_SLURM_ENV.id,
                f"{SLURM_ENV}={value} differs from the job's --cpus-per-task={job_cpus}: "
                f"{context.on_versions('from Slurm 23.11 on')} srun reads it, and from 24.11 "
                'srun fails with "cpus-per-task set by two different environment variables"',
                f"do not set {SLURM_ENV}; ask for the CPUs once: #SBATCH --cpus-per-task={value} "
                f"and {FIX}",
            )
        elif context.may_not_inherit:
            yield script.finding(
                binding.line,
                WARNING,
                RULE_SLURM_ENV.id,
                f"{SLURM_ENV}={value} differs from the job's --cpus-per-task={job_cpus}: srun "
                f"ignores it {context.on_versions(f'on {NO_INHERIT_RANGE}')} (it changes "
                "nothing here), and from 24.11 it makes srun fail",
                f"do not set {SLURM_ENV}; use {FIX}",
            )


def _literal_int(binding: Binding) -> int | None:
    if binding.value is None or not binding.value.literal:
        return None
    text = binding.value.text.strip()
    return int(text) if text.isdigit() else None


RULE_SRUN = Rule(
    "srun-cpus-per-task",
    ERROR,
    "--cpus-per-task does not reach srun (22.05-23.02: error without srun -c or "
    "SRUN_CPUS_PER_TASK; 23.11+: warning when relying on SRUN_CPUS_PER_TASK alone)",
    _srun_cpus,
)
RULE_SLURM_ENV = Rule(
    "slurm-cpus-per-task-env",
    ERROR,
    "SLURM_CPUS_PER_TASK set to a value different from the job's (23.11+: error; 24.11 srun "
    "dies; 22.05-23.02: ignored, warning)",
    _slurm_env,
)
RULES = (RULE_SRUN, RULE_SLURM_ENV)
