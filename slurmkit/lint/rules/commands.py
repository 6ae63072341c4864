"""Rules on what the script runs: pipes into tee, terminal commands, monitoring sruns."""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import INFO, WARNING, Finding, Rule
from slurmkit.lint.parsed import Command
from slurmkit.lint.rules.cpus import other_job
from slurmkit.lint.rules.steps import exits_on_error
from slurmkit.lint.script import Script, Srun

_TERMINAL = ("clear", "reset")
_NO_GPUS = ("gpu:0", "none")
# Commands whose failure in front of tee loses nothing: they print what they are given.
_CANNOT_FAIL = frozenset(
    {"echo", "printf", "cat", "true", ":", "date", "hostname", "env", "printenv", "pwd", "seq"}
)
# Commands after the last step that leave the job's status to it: shell settings.
_NO_STATUS = _CANNOT_FAIL | {"set", "export", "unset", "shopt"}
# Options that pin a step to some nodes (or away from them).
_ONLY = ("nodelist",)
_EXCEPT = ("exclude",)


# Right after a command (over continued lines), ``|| echo …``/``|| true``: the script
# turns this failure into a message, or passes over it, on purpose.
_TOLERATED_AFTER = re.compile(r"[ \t]*(?:\\\n[ \t]*)*\|\|[ \t]*(?:echo|printf|true|:)(?=[\s;)]|$)")


# Right after a pipeline: ``&& next``, ``|| exit 1``, ``; then``/``; do``, or ``$?`` on the
# same or the next line: the script reads the status that tee replaced.
_STATUS_READ = re.compile(
    r"[ \t]*(?:\\\n[ \t]*)*(?:&&|\|\||[;\n][ \t]*(?:then|do)\b)|[^\n]*(?:\n[^\n]*)?\$\{?\?"
)


def _judged_from(script: Script, last_start: int) -> int:
    """Where a hidden status starts to matter. Under ``set -e`` anywhere: everywhere (a
    failed step would have stopped the script). Without it bash goes on past a failed
    command whatever tee does, so only the job's own status (its last command: from
    the outermost if/case holding it, or all of a function it calls) can be lost."""
    if exits_on_error(script):
        return 0
    last = next((c for c in script.commands if c.start == last_start), None)
    if last is not None and last.name in script.parsed.functions:
        return 0
    holding = [r[0][0] for r in script.parsed.branches if r[0][0] <= last_start < r[-1][1]]
    return min(holding, default=last_start)


def _last_command_start(script: Script) -> int:
    """Where the script's last top-level command that can fail starts (its status is the
    job's when nothing else sets it)."""
    starts = [c.start for c in script.commands if c.depth == 0 and c.name not in _NO_STATUS]
    return max(starts, default=0)


_FOR_VARIABLE = re.compile(r"(?m)(?:^|[;&|({]|\bdo|\bthen|\belse)[ \t]*for[ \t]+(\w+)[ \t]+in\b")


def _per_iteration_log(command: Command, last_start: int, loop_names: set[str]) -> bool:
    """``for i in $(seq $NEXP); do run | tee log_$i; check log_$i || true; done``: each
    iteration is one run with its own log (trials, seeds). Under set -e, pipefail would
    end the remaining runs at the first failure, and the pipeline's status is not the
    job's (a later command's is): carrying on is the loop's design, not a lost status.
    ``loop_names``: the script's ``for`` variables, read once (not once per tee)."""
    if command.end >= last_start:
        return False
    return any(word.expands & loop_names for word in command.argv[1:])


class _Trials:
    """``for trial in $(seq 1 $NEXP); do echo "trial $trial"; run | tee log_$trial; done``
    as the job's last command: the same run repeated, each into its own log. Its status
    could report the last trial only (pipefail under set -e would drop the others): the
    logs are the result. Not so when the loop's variable reaches the run
    (``train --stage $stage``): a chain of different runs, whose failure matters.

    Each loop's body is read once, up to the furthest tee seen, so lint stays linear."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.loops = [(m.start(), m[1]) for m in _FOR_VARIABLE.finditer(text)]
        self.read: dict[int, tuple[int, bool]] = {}  # loop start: (read up to, repeats)

    def repeats(self, command: Command) -> bool:
        names = {n for w in command.argv[1:] for n in w.expands}
        loop = next(
            (lp for lp in reversed(self.loops) if lp[0] < command.start and lp[1] in names), None
        )
        if loop is None:
            return False
        start, name = loop
        upto, repeats = self.read.get(start, (start, True))
        if repeats and upto < command.start:
            use = re.compile(rf"\$\{{?{name}(?!\w)")
            for match in use.finditer(self.text, upto, command.start):
                line_start = self.text.rfind("\n", 0, match.start()) + 1
                first = self.text[line_start : match.start()].split(None, 1)
                if first and first[0].startswith("#"):
                    continue  # a comment runs nothing
                if not first or first[0] not in ("echo", "printf"):
                    repeats = False
                    break
            self.read[start] = (command.start, repeats)
        return repeats


def _tested_by_fallback(script: Script, command: Command) -> bool:
    """``cmd | tee log || echo WARN``: the status is read and the failure tolerated."""
    return _TOLERATED_AFTER.match(script.text, command.end) is not None


def _tee(script: Script, context: LintContext) -> Iterator[Finding]:
    start = script.pipefail_from()
    if "tee" not in script.text:
        return
    # in a best-effort script only the last command's status is the job's
    last_start = _last_command_start(script)
    judged_from = _judged_from(script, last_start)
    hiding: list[Command] = []
    trials = _Trials(script.text)
    loop_names = {name for _, name in trials.loops}
    for command in script.commands:
        if command.name != "tee" or not command.after_pipe or command.pipeline is None:
            continue
        if start is not None and start < command.start:
            continue
        if command.end < judged_from and not _STATUS_READ.match(script.text, command.end):
            continue
        if _per_iteration_log(command, last_start, loop_names) or (
            command.end >= last_start and trials.repeats(command)
        ):
            # a loop of runs that goes on past a failed one: the job's status reports no
            # run, so neither does a pipeline before the loop (a prelude's NCCL test)
            hiding = []
            judged_from = command.end
            continue
        if not _cannot_fail_upstream(script, command) and not _tested_by_fallback(script, command):
            hiding.append(command)
    for command in hiding:
        yield script.finding(
            script.line_of(command.start),
            WARNING,
            RULE_TEE.id,
            "without set -o pipefail a pipeline's status is its last command's: "
            "`train | tee log` ends 0 when the training fails, so the job ends COMPLETED and "
            "retries, arrays and dependencies never learn of the failure",
            "set -eo pipefail near the top of the script",
        )


def _cannot_fail_upstream(script: Script, command: Command) -> bool:
    """`echo … | tee`: nothing whose failure the status would hide."""
    if command.pipeline is None:
        return False
    position = command.pipeline[1]
    upstream = [
        c
        for c in script.parsed.pipeline_members(command)
        if c.pipeline is not None and c.pipeline[1] < position
    ]
    return bool(upstream) and all(c.name in _CANNOT_FAIL for c in upstream)


def _terminal(script: Script, context: LintContext) -> Iterator[Finding]:
    if not script.directives:
        return
    for command in script.commands:
        argv = [w.text for w in command.argv]
        if argv[:1] and (argv[0] in _TERMINAL or argv[:2] == ["tput", "clear"]):
            yield script.finding(
                script.line_of(command.start),
                WARNING,
                RULE_TERMINAL.id,
                f"{' '.join(argv[:2])} needs a terminal, and a batch job has none (TERM is "
                "unset): it prints 'TERM environment variable not set.' and fails, which ends "
                "the job under set -e",
                f"remove {argv[0]} from the batch script",
            )


def _blocking_srun(script: Script, context: LintContext) -> Iterator[Finding]:
    running: list[Srun] = []
    waits = [c.start for c in script.commands if c.name == "wait" and c.depth == 0]
    for srun in script.sruns:
        here = srun.command.start
        running = [r for r in running if not any(r.command.start < w < here for w in waits)]
        if srun.has("overlap"):
            continue
        no_gpus = _asks_no_gpus(srun)
        sharing = [
            r
            for r in running
            if r is not srun
            and not _can_run_beside(script, r, srun)
            and not script.parsed.exclusive(r.command.start, here)
        ]
        if other_job(srun):
            why = (
                "an srun into another job's allocation (--jobid) waits until that job's "
                "running steps release their resources: a monitor blocks behind the training"
            )
        elif sharing and srun.command.depth == 0:
            why = (
                "the srun started in the background on line "
                f"{script.shown(sharing[-1].line)} still holds "
                "its resources on the nodes this step may use: this step waits until it ends"
            )
        else:
            # A background step that asks only for what it needs (--exact, or -c since
            # 21.08) never holds a later step back: not kept, so a script of thousands
            # of them is not compared pair by pair.
            if (
                srun.command.background
                and srun.command.depth == 0
                and not srun.has("exact", "cpus-per-task")
            ):
                running.append(srun)
            continue
        if no_gpus:
            why += (
                "; --gres=gpu:0 alone no longer helps: since Slurm 20.11 steps do not share "
                "CPUs or memory either (checked on 22.05.8)"
            )
        yield script.finding(
            srun.line,
            WARNING,
            RULE_OVERLAP.id,
            why,
            "srun --overlap (shares the allocation with the running step); add --gres=gpu:0 "
            "when the monitor needs no GPU",
        )


def _can_run_beside(script: Script, running: Srun, new: Srun) -> bool:
    """Whether ``new`` can start while ``running`` holds its resources.

    Yes when they are pinned to different nodes (``-w "$head"`` and ``-w "$node_i"``,
    or ``-w "$head"`` and ``--exclude "$head"``: the head-and-workers pattern of Ray
    and vLLM), when either asks only for what it needs (``--exact``), or when the
    running step names its CPUs (``-c`` implies ``--exact`` since Slurm 21.08).
    """
    if running.has("exact", "cpus-per-task") or new.has("exact"):
        return True
    a, b = _placement(script, running), _placement(script, new)
    if a is None or b is None:
        return False
    if a[0] == b[0] == "only":
        return a[1] != b[1]
    return a[0] != b[0] and a[1] == b[1]


def _placement(script: Script, srun: Srun) -> tuple[str, str] | None:
    """("only", nodes) for -w/--nodelist, ("except", nodes) for --exclude, None: anywhere.

    Options kept in a variable (``SRUN_ARGS="… --nodelist=$NODELIST"; srun $SRUN_ARGS …``)
    count as written where the variable is assigned: bash splits them into srun's words.
    Only the long spellings are read there, so a program's own ``-w`` is not taken.
    """
    only = srun.option(*_ONLY)
    if only is not None and only.value:
        return "only", only.value
    excluded = srun.option(*_EXCEPT)
    if excluded is not None and excluded.value:
        return "except", excluded.value
    if _options_from_variables(srun):
        text = script.expanded_source(script.source(srun.command))
        found = _LONG_PLACEMENT.findall(text)
        if found:
            option, value = found[-1]
            return ("only" if option == "nodelist" else "except"), value.strip("\"'")
    return None


def _options_from_variables(srun: Srun) -> bool:
    """Whether a word before the program is a bare expansion (options from a variable)."""
    first_program = srun.program[0].end if srun.program else srun.command.end
    # ``srun $SRUN_ARGS prog``: lint cannot tell the expansion from the program, so the
    # first program word counts too.
    return any(
        w.expands and not w.raw.startswith(("'", '"')) and w.start < first_program
        for w in srun.command.words[1:]
    )


_LONG_PLACEMENT = re.compile(r"--(nodelist|exclude)[= ]+(\S+)")


def _asks_no_gpus(srun: Srun) -> bool:
    gres = srun.option("gres")
    gpus = srun.option("gpus", "gpus-per-node")
    return bool(
        (gres and gres.value in _NO_GPUS) or (gpus and gpus.value is not None and gpus.value == "0")
    )


RULE_TEE = Rule(
    "tee-without-pipefail",
    WARNING,
    "`cmd | tee` without set -o pipefail: the job ends COMPLETED when cmd fails",
    _tee,
)
RULE_TERMINAL = Rule(
    "terminal-command", INFO, "clear/reset/tput clear in a batch script (no terminal)", _terminal
)
RULE_OVERLAP = Rule(
    "srun-without-overlap",
    INFO,
    "monitoring srun --jobid (or a step beside a background step) without --overlap blocks",
    _blocking_srun,
)
RULES = (RULE_TEE, RULE_TERMINAL, RULE_OVERLAP)
