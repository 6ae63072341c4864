"""Signals, requeue and resubmission: what a job does near its end (issue 32 item 4).

``--signal=B:USR1@120`` sends the signal to the batch shell alone. Without a trap
bash dies of it (USR1's, USR2's and TERM's default action ends the process), so the
job ends two minutes early having saved nothing. With a trap, bash runs it only
once the foreground command returns: behind a foreground ``srun``, that is when the
time limit has killed it. The handler needs the step in the background and ``wait``.
``--signal=USR1@120`` (no ``B:``) goes to the srun steps alone: a trap for it in the
batch script never runs.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from operator import attrgetter

from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, INFO, WARNING, Finding, Rule
from slurmkit.lint.parsed import Command
from slurmkit.lint.rules.directives import resubmits_itself
from slurmkit.lint.script import Script
from slurmkit.lint.shell import parse
from slurmkit.sbatch import signal as sbatch_signal

# Signals bash ignores by default: no trap is needed to survive them.
_HARMLESS = frozenset({"CHLD", "CONT", "URG", "WINCH"})


def _signal_name(text: str) -> str:
    name = text.upper().removeprefix("SIG")
    return sbatch_signal.NUMBERS.get(name, name)


def _job_signal(script: Script) -> tuple[str, bool, int] | None:
    """(signal, whether the batch shell gets it, line) of ``--signal=[B:]SIG[@TIME]``.

    Without ``B:`` slurmctld sends it with KILL_STEPS_ONLY: to the srun steps, never
    to the batch shell.
    """
    setting = script.job.get("signal")
    if setting is None or setting.value is None:
        return None
    spec = sbatch_signal.read(setting.value)
    if spec is None or not spec.readable:
        return None  # a blank to fill in, or refused by sbatch (the header rule says so)
    return spec.signal, spec.batch, setting.line


# Sourced files that set up an environment (a venv, conda, modules, a profile): no trap.
_ENVIRONMENT = re.compile(
    r"(?:^|/)(?:activate|\.?bashrc|\.?bash_profile|\.?profile|conda\.sh|setup-env\.sh"
    r"|env\.sh|lmod\.sh|modules\.sh|\w+vars\.sh)$|^/etc/"
)


def _handled_elsewhere(script: Script) -> bool:
    """A sourced helper may set the trap, and an ``exec``'d program takes the shell's place
    (its own handler gets the signal): no trap is missing from the script itself."""
    for command in script.commands:
        words = command.words
        first = words[0].text if words else ""
        if first == "exec" and len(command.argv) > 0:
            return True
        if _sources_helper(command):
            return True
    return False


def _sources_helper(command: Command) -> bool:
    """``source funcs.sh``: a file of the script's own, not an environment's set-up."""
    words = command.words
    if len(words) < 2 or words[0].text not in ("source", "."):
        return False
    sourced = words[1].text.strip("\"'")
    return bool(sourced) and not _ENVIRONMENT.search(sourced)


def _traps(script: Script) -> list[tuple[str, set[str], int]]:
    """(handler text, signals, line) of every ``trap HANDLER SIG…``."""
    found = []
    for command in script.commands:
        if command.name != "trap":
            continue
        args = [w.text for w in command.argv[1:] if not w.text.startswith("-")]
        if len(args) >= 2:
            signals = {_signal_name(a) for a in args[1:]}
            found.append((args[0], signals, script.line_of(command.start)))
    return found


def _waits_in_background(script: Script) -> bool:
    """Whether the script waits (``wait``) for work it started with ``&``: bash runs a
    trap as soon as the signal comes to a ``wait``. The ``&`` may be in a function of a
    sourced helper (``source funcs.sh; run_orca; wait``): unseen, not missing."""
    commands = script.commands
    if not any(c.name == "wait" for c in commands):
        return False
    return any(c.background for c in commands) or any(_sources_helper(c) for c in commands)


def _signal(script: Script, context: LintContext) -> Iterator[Finding]:
    found = _job_signal(script)
    if found is None:
        return
    signal, batch, line = found
    if signal in _HARMLESS or not signal:
        return
    trapped = [t for t in _traps(script) if signal in t[1]]
    if trapped and all(_only_logs(script, t[0]) for t in trapped):
        return  # run late or never, a handler that only prints loses nothing
    if not batch:
        yield from _steps_only(script, signal, line, trapped)
        return
    if not trapped:
        if _handled_elsewhere(script) or _survives(script, signal):
            return
        yield script.finding(
            line,
            ERROR,
            RULE_SIGNAL.id,
            f"--signal sends SIG{signal} to the batch shell, and the script sets no trap for "
            f"it: bash dies of SIG{signal}, so the job ends early and saves nothing",
            f"trap 'handler' {signal}, with the step in the background: srun … & wait",
        )
    elif not _waits_in_background(script):
        yield script.finding(
            trapped[0][2],
            WARNING,
            RULE_SIGNAL.id,
            f"the trap for SIG{signal} runs only when the foreground command returns: behind "
            "a foreground srun that is when the time limit has killed it",
            "start the step in the background and wait for it: srun … & wait",
        )


# Commands that only report: a handler made of them saves, requeues and stops nothing.
_START = attrgetter("start")
_REPORTS = frozenset({"echo", "printf", ":", "true", "date", "hostname", "logger"})


def _only_logs(script: Script, handler: str) -> bool:
    """Whether a trap's handler only prints (``echo "caught USR1"``, or a function of
    echos): when it runs, or whether it runs at all, changes nothing but the log."""
    names = [c.name for c in parse(handler).commands if c.depth == 0 and c.name]
    if not names:
        return False  # ``trap '' SIG`` ignores the signal: bash survives it on purpose
    functions = script.parsed.functions
    for name in names:
        if name in functions:
            start, end = functions[name]
            inner = _commands_within(script, start, end)
            if not inner or any(c.name not in _REPORTS for c in inner):
                return False
        elif name not in _REPORTS:
            return False
    return True


def _commands_within(script: Script, start: int, end: int) -> list[Command]:
    commands = script.commands
    first = bisect.bisect_left(commands, start, key=_START)
    last = bisect.bisect_left(commands, end, key=_START)
    return [c for c in commands[first:last] if c.name]


def _survives(script: Script, signal: str) -> bool:
    """SIGINT reaches a non-interactive bash that waits for a foreground command: bash
    waits on, and dies of it only if the child did (under ``B:`` the child never gets it).
    Only the ``wait`` builtin lets it kill the shell."""
    return signal == "INT" and not any(c.name == "wait" for c in script.commands)


_SELF_SIGNAL = re.compile(
    r"\bkill\s+-(?:s\s+)?(?:SIG)?\w+\s+\$\$|\bscancel\b[^\n]*--(?:batch|signal)"
)


def _signals_itself(script: Script) -> bool:
    """``kill -USR1 $$`` or ``scancel --batch --signal=…``: the batch shell is signalled
    by the script, whatever --signal does."""
    text = script.text
    return ("kill" in text or "scancel" in text) and _SELF_SIGNAL.search(text) is not None


def _steps_only(
    script: Script, signal: str, line: int, trapped: list[tuple[str, set[str], int]]
) -> Iterator[Finding]:
    """A trap for a signal that ``--signal`` without ``B:`` sends to the steps alone."""
    if not trapped:
        return  # the steps' programs handle it (Lightning's requeue on USR1, …)
    if _signals_itself(script):
        return  # a timer of its own (sleep …; kill -USR1 $$) or scancel --batch sends it
    yield script.finding(
        line,
        ERROR,
        RULE_SIGNAL.id,
        f"--signal without B: sends SIG{signal} to the job's srun steps only, never to the "
        f"batch shell: the trap for it on line {script.shown(trapped[0][2])} never runs",
        f"#SBATCH --signal=B:{signal}@… (and the step in the background: srun … & wait)",
    )


_REQUEUE = re.compile(r"scontrol\s+requeue|\bsbatch\b")


def _term_requeue(script: Script, context: LintContext) -> Iterator[Finding]:
    if "trap" not in script.text:
        return
    requeues_somewhere = any(
        c.name == "scontrol" and "requeue" in [w.text for w in c.argv[1:2]] for c in script.commands
    )
    for handler, signals, line in _traps(script):
        if "TERM" not in signals:
            continue
        named = re.fullmatch(r"[A-Za-z_]\w*", handler.strip()) is not None
        if _REQUEUE.search(handler) or (named and requeues_somewhere):
            yield script.finding(
                line,
                WARNING,
                RULE_TERM_REQUEUE.id,
                "a TERM trap that requeues: scancel sends SIGTERM too, so cancelling the job "
                "requeues (or resubmits) it instead of ending it",
                "ask for another signal before the limit (#SBATCH --signal=B:USR1@120) and "
                "trap that one",
            )


_WAITS = ("--dependency", "-d", "--begin", "-b")


def _resubmit(script: Script, context: LintContext) -> Iterator[Finding]:
    if "sbatch" not in script.text.replace("#SBATCH", ""):
        return
    line = resubmits_itself(script)
    if line is None:
        return
    header = script.job.value("dependency") or ""
    submit = [c for c in script.commands if script.line_of(c.start) == line and c.name == "sbatch"]
    words = [w.text for c in submit for w in c.argv[1:]]
    if "singleton" in header or any(w.startswith(_WAITS) for w in words):
        return  # it waits for this run (or starts at a later time: a watchdog's next round)
    if submit and _last_act(script, submit[0]):
        return
    yield script.finding(
        line,
        RULE_RESUBMIT.severity,
        RULE_RESUBMIT.id,
        "the script submits itself again with no dependency: the next run can start while "
        "this one still runs, and both write the same checkpoints and logs",
        'sbatch --dependency=singleton "$0" (with a fixed --job-name), or '
        "--dependency=afterany:$SLURM_JOB_ID",
    )


# Commands after which the script ends at once: no work of this run is left.
_ENDING = frozenset({"echo", "printf", ":", "true", "exit", "date", "hostname", "pwd"})
# ``done`` where a command starts: the end of a loop around what comes before it.
_LOOP_END = re.compile(r"(?:^|[;&])\s*done(?![\w-])")


def _last_act(script: Script, submit: Command) -> bool:
    """The self-submission is the run's last act (after the training, an ``echo`` at most):
    this run ends as the next one is queued, so the two never work at once.

    Not so for one in a function (a trap handler runs it while the step still works, a
    helper may be called first) or in a loop (the loop submits it again), nor for one
    that other work follows: those overlap the next run.
    """
    start = submit.start
    if any(begin <= start < end for begin, end in script.parsed.functions.values()):
        return False
    commands = script.commands
    first = bisect.bisect_right(commands, start, key=_START)
    for command in commands[first:]:
        if exits_after(script, submit, command):
            return True  # ``sbatch "$0"; exit``: this run ends as the next is queued
        if command.depth or command.name is None or command.name in _ENDING:
            continue
        if not script.parsed.exclusive(start, command.start):
            return False  # work after it (another branch of its if does not count)
    line_end = script.text.find("\n", submit.end)
    if _LOOP_END.search(script.text[submit.end : line_end if line_end >= 0 else None]):
        return False  # ``…; do sbatch "$0"; done`` on one line
    after = script.line_of(submit.end)
    return not any(_LOOP_END.search(text) for number, text in script.code_lines() if number > after)


# Between a submission and an ``exit`` that always follows it: no branch, loop or
# ``||`` (``sbatch "$0" || exit 1`` exits only when the submission failed).
_CONDITIONAL = re.compile(
    r"\|\||&&|(?:^|[;&|\s(])(?:if|then|else|elif|fi|for|while|until|do|done|case|esac)(?![\w-])"
)


def exits_after(script: Script, submit: Command, command: Command) -> bool:
    """``sbatch "$0" …; exit``: the shell ends right after submitting, whatever follows."""
    if command.name != "exit" or command.depth != submit.depth:
        return False
    return _CONDITIONAL.search(script.text, submit.end, command.start) is None


RULE_SIGNAL = Rule(
    "signal-without-trap",
    ERROR,
    "--signal=B:SIG with no trap for it (error), or a trap behind a foreground step (warning)",
    _signal,
)
RULE_TERM_REQUEUE = Rule(
    "term-trap-requeues",
    WARNING,
    "a TERM trap that requeues or resubmits: scancel requeues the job instead of ending it",
    _term_requeue,
)
# Info since round eight: right on 2 of 4 findings of the development part, 2 of 12 when
# first seen (a wrapper run by hand that submits itself once is no chain).
RULE_RESUBMIT = Rule(
    "resubmit-without-dependency",
    INFO,
    'sbatch "$0" without --dependency=singleton: two runs of one training at once',
    _resubmit,
)
RULES = (RULE_SIGNAL, RULE_TERM_REQUEUE, RULE_RESUBMIT)
