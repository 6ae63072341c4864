"""Multi-node launchers (torchrun, accelerate, deepspeed) against what the job requests.

A launcher starts one worker per GPU itself, so it must run once per node (one
task per node), see the job's real node count, and start as many workers as the
node has GPUs. Launchers are found in code lines and in heredoc bodies (the shipped
templates run them from a heredoc), never in comments or Python imports.

Three kinds (issue 32 item 5): trainers (torchrun and the tools that spawn it:
accelerate, deepspeed, ``llamafactory-cli train`` and other ``*-cli train``,
torchtune's ``tune run``), ``ray start`` (one Ray daemon per node, like a trainer), and
inference servers (``vllm serve``, ``python -m vllm.entrypoints…``, SGLang's
``sglang.launch_server``). A server needs CPUs like a trainer, but one per node is not
a rule for it (a script may start one per GPU on its own port), and one in the batch
step of a multi-node job is usually the head of a Ray cluster srun started: it is
judged by neither of those rules.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from itertools import takewhile

from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, INFO, WARNING, Finding, Rule
from slurmkit.lint.helpers import SHELLS, helper_word
from slurmkit.lint.parsed import Command
from slurmkit.lint.script import Script, Srun, is_srun
from slurmkit.sbatch.directives import node_range, to_int

LAUNCHER = re.compile(
    # followed by "/": a directory of that name (configs/deepspeed/z3.json), no program
    r"(?<![\w.-])(?P<name>torchrun|deepspeed)(?![\w./-])"
    r"|(?P<module>torch\.distributed\.(?:run|launch))\b"
    r"|(?<![\w.-])(?P<accelerate>accelerate\s+launch)\b"
    r"|(?<![\w.-])(?P<cli>[\w-]+-cli\s+train)(?![\w.-])"
    # tune is a common word: torchtune's only at a command's start (or srun's program)
    r"|(?:^\s*|[;&|(]\s*|\bsrun\s[^;&|]*?)(?:\w+=\S*\s+)*(?P<tune>tune\s+run)(?![\w.-])"
    r"|(?<![\w.-])(?P<ray>ray\s+start)(?![\w.-])"
    r"|(?<![\w.-])(?P<vllm>vllm\s+serve)(?![\w.-])"
    r"|(?P<entry>(?:vllm\.entrypoints|sglang\.launch_server)[\w.]*)"
)
_LAUNCHER_WORDS = (
    "torchrun",
    "deepspeed",
    "torch.distributed",
    "accelerate",
    "-cli",
    "tune",
    "ray start",
    "vllm",
    "sglang",
)
SERVER = "server"
RAY = "ray"
TRAINER = "trainer"


def launcher_kind(name: str) -> str:
    """trainer, ray or server: which of the launcher rules apply (see the module doc)."""
    if name.startswith(("vllm", "sglang")):
        return SERVER
    if name.startswith("ray"):
        return RAY
    return TRAINER


_IMPORT = re.compile(r"^\s*(import|from)\s")
NODE_VARIABLES = ("NNODES", "NUM_NODES", "N_NODES", "NNODE")
_NODE_ARGS = re.compile(
    r"--(?P<opt>nnodes|num_nodes|num-nodes|num_machines|num-machines)[= ]+(?P<n>\d+(?::\d+)?)\b"
)
_WORKER_OPTIONS = r"nproc_per_node|nproc-per-node|num_gpus|num-gpus"
_PROC_ARGS = re.compile(rf"--(?P<opt>{_WORKER_OPTIONS})[= ]+(?P<n>\d+)\b")
# accelerate's total over every machine, and its machine count (to_int reads a literal)
_TOTAL_PROCS = re.compile(r"--(?P<opt>num_processes|num-processes)[= ]+(?P<n>\d+)\b")
_MACHINES = re.compile(r"--(?:num_machines|num-machines)[= ]+[\"']*(?P<n>[^\s\\\"']+)")
_REMOTE = re.compile(r"(?<![\w-])(pdsh|ssh|mpirun|clush)(?![\w-])")
# Launcher options that make the launcher start the other nodes' processes itself:
# accelerate's multi-CPU mode runs mpirun over --mpirun_hostfile, deepspeed (and
# accelerate's deepspeed mode) reach every host of the hostfile with pdsh or ssh.
_REACHES_NODES = re.compile(r"--(?:mpirun_hostfile|deepspeed_hostfile|hostfile)(?![\w-])")


# The launcher words as one alternation of literals: a substring test in one C call.
_MAY_LAUNCH = re.compile("|".join(re.escape(word) for word in _LAUNCHER_WORDS))


def _may_launch(text: str) -> bool:
    """Whether ``text`` names a launcher at all: plain substring tests, far faster than
    :data:`LAUNCHER` (whose look-behinds cost 0.2 s on a 40,000-line script)."""
    return _MAY_LAUNCH.search(text) is not None


# Commands whose arguments name a launcher without running it: a package installed or
# loaded (pip install deepspeed, module load deepspeed), a program looked up, text printed.
_NAMES_ONLY = re.compile(
    r"^\s*(?:\w+=\S*\s+)*(?:module\s+(?:load|add|try-load|swap)|ml|pip3?\s+install"
    r"|(?:uv\s+)?pip\s+install|conda\s+install|mamba\s+install|which|type|command\s+-v"
    r"|echo|printf)\s"
)
# What a path-named program (./venv/bin/torchrun) needs after it to be run: an argument
# (a launcher runs nothing without one) or a continued line. Without, the path is data:
# TORCH_EXTENSIONS_DIR=$PWD/deepspeed, cd "$WORK/torchrun".
_ARGUMENT = re.compile(r"[\"']?\s+(?:\\$|[^\s#>|&;)`])")


def launcher_in(text: str) -> str | None:
    if not _may_launch(text):
        return None
    for line in text.splitlines():
        if line.lstrip().startswith("#") or _IMPORT.match(line) or not _may_launch(line):
            continue  # the look-behinds of LAUNCHER only where a launcher word stands
        for match in LAUNCHER.finditer(line):
            if _runs(line, match):
                return next(v for v in match.groupdict().values() if v)
    return None


def _runs(line: str, match: re.Match[str]) -> bool:
    """Whether a launcher word is run, not only named (an argument, a path, a package)."""
    segment = re.split(r"[;&|(`]", line[: match.start()])[-1]
    if _NAMES_ONLY.match(segment):
        return False
    if match["name"] and match.start() > 0 and line[match.start() - 1] == "/":
        word = re.split(r"[\s\"']", line[: match.start()])[-1]
        return "=" not in word and _ARGUMENT.match(line, match.end()) is not None
    return True


def launcher_lines(script: Script) -> list[tuple[int, str]]:
    """(line, launcher) for every line that starts a launcher, heredoc bodies included,
    and every batch-step command running a helper script that starts one by itself
    (one that runs srun, ssh or mpirun or gives a hostfile places its launcher itself).
    Found once per script (three rules ask); not to be changed by the caller."""
    memo = script.memo
    if "launcher_lines" not in memo:
        memo["launcher_lines"] = _launcher_lines(script)
    found: list[tuple[int, str]] = memo["launcher_lines"]
    return found


def _launcher_lines(script: Script) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    candidates = script.lines_matching(_MAY_LAUNCH) if _may_launch(script.text) else []
    if candidates:
        # code only: a comment after code (``python t.py  # or torchrun …``) runs nothing;
        # hidden lines (job scripts fed to sbatch) are linted as their own
        code = dict(script.code_lines(heredocs=True))
        by_line = _commands_by_line(script)
        printers = _printing_functions(script)
        for number in candidates:
            name = launcher_in(code.get(number, ""))
            if name and (by_line.stored_not_run(number) or by_line.calls(number, printers)):
                continue
            if name:
                found.append((number, re.sub(r"\s+", " ", name)))
    for command, word in helper_commands(script):
        if is_srun(command.name):
            continue
        helper = script.helpers.read(word) if script.helpers else None
        if helper is None or helper.text is None or _places_itself(helper.text):
            continue
        name = _helper_launcher(script, word)
        if name:
            found.append((script.line_of(command.start), name))
    return sorted(found)


def _places_itself(text: str) -> bool:
    return bool(re.search(r"(?<![\w-])srun(?![\w-])", text) or _REMOTE.search(text)) or bool(
        _REACHES_NODES.search(text)
    )


def helper_commands(script: Script) -> Iterator[tuple[Command, str]]:
    """(command, helper path word) of every command that runs a helper: the program of an
    srun step, or the command itself. Nothing when the script has no directory."""
    if script.helpers is None:
        return
    for srun in script.sruns:
        word = helper_word(srun.program) if srun.program else None
        if word:
            yield srun.command, word
    for command in script.commands:
        argv = command.argv
        if not argv or is_srun(argv[0].text):
            continue
        if argv[0].text.rsplit("/", 1)[-1] in SHELLS or "/" in argv[0].text:
            word = helper_word(argv)
            if word:
                yield command, word


def _helper_launcher(script: Script, word: str) -> str | None:
    if script.helpers is None:
        return None
    name = script.helpers.launcher(word, launcher_in)
    return f"{' '.join(name.split())} (in {word})" if name else None


def srun_launcher(script: Script, srun: Srun) -> str | None:
    """The launcher this srun starts, directly, through variables it references, or in
    the helper script it runs (then named ``torchrun (in train.sh)``: the torch rules
    that read the launcher's own options skip it)."""
    known = script.srun_launchers
    key = srun.command.start
    if key not in known:
        known[key] = _srun_launcher(script, srun)
    return known[key]


def _srun_launcher(script: Script, srun: Srun) -> str | None:
    own = launcher_in(script.expanded_source(script.source(srun.command)))
    if own or script.helpers is None:
        return own
    word = helper_word(srun.program)
    return _helper_launcher(script, word) if word else None


def _helper_unreadable(script: Script, context: LintContext) -> Iterator[Finding]:
    """A helper that exists but could not be read: its launchers are unknown, said once."""
    said: set[str] = set()
    for command, word in helper_commands(script):
        helper = script.helpers.read(word) if script.helpers else None
        if helper is None or helper.text is not None or word in said:
            continue
        said.add(word)
        yield script.finding(
            script.line_of(command.start),
            INFO,
            RULE_HELPER.id,
            f"the helper script {word} was not read ({helper.why}): what it starts is unknown "
            "to lint",
            "make it a readable regular file inside the repository",
        )


def _tasks_per_node(script: Script, srun: Srun) -> tuple[int | None, int, str]:
    """(tasks per node, line, how it was asked for) of a step: its own options, else the job's.

    None: unknown (a count lint cannot read). A step that sets a count of its own is
    never judged by the job's: its count replaces the job's, whatever it is.
    """
    own = _step_counts(script, srun)
    if "ntasks-per-node" in own:
        value, written = own["ntasks-per-node"]
        return to_int(value), srun.line, f"srun {written}"
    if "ntasks" in own:
        value, written = own["ntasks"]
        nodes = own.get("nodes")
        if _NODE_COUNT.fullmatch(value) or (nodes is not None and nodes[0] == value):
            return 1, srun.line, f"srun {written}"  # one task per node, however many
        low = (node_range(nodes[0]) or (0, 0))[0] if nodes else _job_nodes(script)
        if to_int(value) is None or low < 1:
            return None, srun.line, f"srun {written}"
        count = -(-(to_int(value) or 0) // low)
        return count, srun.line, f"srun {written} over {low} node(s)"
    job = script.job
    setting = job.get("ntasks-per-node") or job.get("ntasks")
    if setting is None:
        return 1, srun.line, ""
    how = f"#SBATCH {setting.written} (line {script.shown(setting.line)})"
    if job.get("ntasks-per-node") is None:
        how += f" over {_job_nodes(script)} node(s)"
    # said at the step: it is the step that starts the launchers (other steps may want
    # the job's tasks), and a per-step fix (srun --ntasks-per-node=1) is as good
    return job.tasks_per_node, srun.line, how


# A task count that is the node count, whatever it is: one task per node.
_NODE_COUNT = re.compile(r"\$\{?(?:SLURM_NNODES|SLURM_JOB_NUM_NODES)\}?")
_COUNT_OPTIONS = ("ntasks-per-node", "ntasks", "nodes")
# Long spellings only in a variable's text: a program's own -n is not srun's.
_COUNT_IN_TEXT = re.compile(r"(?<![\w-])--(ntasks-per-node|ntasks|nodes)[= ]+([^\s\\]+)")


def _step_counts(script: Script, srun: Srun) -> dict[str, tuple[str, str]]:
    """The step's own task and node counts (value, as written): its options, and the
    options bash splits into srun's words from a variable (``srun $SRUN_ARGS prog``)."""
    found: dict[str, tuple[str, str]] = {}
    for word in _option_variables(srun):
        text = script.expanded_source(word, depth=1)
        for match in _COUNT_IN_TEXT.finditer(text):
            found[match[1]] = (match[2].strip("\"'"), match[0])
    for name in _COUNT_OPTIONS:
        option = srun.option(name)
        if option is not None and option.value is not None:
            found[name] = (option.value, option.written)
    # the job's own count, passed on (--ntasks-per-node=$SLURM_NTASKS_PER_NODE): the job's
    return {
        name: (value, written)
        for name, (value, written) in found.items()
        if _variable(value) not in _JOBS_OWN[name]
    }


_JOBS_OWN = {
    "ntasks-per-node": ("SLURM_NTASKS_PER_NODE",),
    "ntasks": ("SLURM_NTASKS", "SLURM_NPROCS"),
    "nodes": ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"),
}


def _option_variables(srun: Srun) -> list[str]:
    """Bare expansions before the program (the first program word too: lint cannot tell
    ``srun $SRUN_ARGS prog`` from a program in a variable)."""
    first = srun.program[0].end if srun.program else srun.command.end
    return [
        w.raw
        for w in srun.command.words[1:]
        if w.expands and not w.raw.startswith(("'", '"')) and w.start < first
    ]


def _job_nodes(script: Script) -> int:
    nodes = script.job.nodes
    return nodes[0] if nodes else 1


def _launcher_tasks(script: Script, context: LintContext) -> Iterator[Finding]:
    """Only launchers srun starts: in the batch step (or via pdsh) a launcher runs once."""
    steps = [(s, srun_launcher(script, s)) for s in script.sruns]
    local_first = "SLURM_LOCALID" in script.text  # once: the script may be 40,000 lines
    for srun, name in [(s, name) for s, name in steps if name]:
        if launcher_kind(name) == SERVER or _no_extra_workers(script, srun, local_first):
            continue
        count, line, how = _tasks_per_node(script, srun)
        if count is None:
            yield from _tasks_as_workers(script, srun, name)
        elif count > 1:
            yield script.finding(
                line,
                ERROR,
                RULE_TASKS.id,
                f"{name} starts its own worker per GPU, but {how} runs {count} tasks on each "
                f"node: {count} launchers per node start {count}x the workers, which collide on "
                "GPUs and the rendezvous port",
                _ONE_PER_NODE,
            )


# a test that lets one task per node start it: [ "$SLURM_LOCALID" -eq 0 ], (( SLURM_LOCALID == 0 ))
_LOCAL_FIRST = re.compile(r"SLURM_LOCALID\}?[\"']?\s*(?:-eq|==?)\s*[\"']?0(?!\d)")


def _no_extra_workers(script: Script, srun: Srun, local_first: bool) -> bool:
    """Whether the step starts its launcher from the first task of each node only, or
    each task's launcher starts one worker (``--nproc_per_node 1``: the tasks are the
    launcher's nodes, one worker per GPU in all). ``local_first``: the script names
    SLURM_LOCALID at all."""
    text = script.expanded_source(script.source(srun.command))
    if {int(m["n"]) for m in _PROC_ARGS.finditer(text)} == {1}:
        return True
    return local_first and _LOCAL_FIRST.search(text) is not None


_ONE_PER_NODE = (
    "one launcher per node: --ntasks-per-node=1 (the launcher's --nproc_per_node sets the "
    "workers per node)"
)
_WORKERS_TEXT = re.compile(rf"--(?:{_WORKER_OPTIONS})[= ]+[\"']?(?P<v>\$\{{?\w+\}}?)")


def _tasks_as_workers(script: Script, srun: Srun, name: str) -> Iterator[Finding]:
    """Tasks per node that lint cannot count, given by the variable that also counts the
    launcher's workers (``--ntasks-per-node=$G`` and ``--nproc_per_node=$G``): one task
    per GPU, each starting a worker per GPU: G x G workers, unless G is 1."""
    own = _step_counts(script, srun)
    if "ntasks-per-node" in own:
        value, written = own["ntasks-per-node"]
    elif "ntasks" in own or (setting := script.job.get("ntasks-per-node")) is None:
        return  # the step's own task count replaces the job's per-node count
    else:
        value, written = setting.value or "", setting.written
    tasks = _variable(value)
    launched = _WORKERS_TEXT.search(script.expanded_source(script.source(srun.command)))
    if tasks is None or launched is None or _variable(launched["v"]) != tasks:
        return
    yield script.finding(
        srun.line,
        ERROR,
        RULE_TASKS.id,
        f"{name} starts ${tasks} workers in each task, and {written} runs "
        f"${tasks} tasks per node: ${tasks} x ${tasks} workers per node, which collide on GPUs "
        "and the rendezvous port (unless it is 1)",
        _ONE_PER_NODE,
    )


def _variable(text: str) -> str | None:
    """The name of a value that is one variable alone (``$G``, ``${G}``, quoted or not)."""
    match = re.fullmatch(r"[\"']?\$\{?(\w+)\}?[\"']?", text.strip())
    return match[1] if match else None


def _launcher_cpus(script: Script, context: LintContext) -> Iterator[Finding]:
    """Only the clear case (no CPUs asked for anywhere): how many a training needs varies.

    ``--exclusive`` and ``--mincpus`` count: a step without ``--exact`` (which
    ``--cpus-per-task`` implies) is a whole step, given every CPU the job has on its
    nodes (srun's launch.c sets SSF_WHOLE, 22.05 to 25.11), and its one task is not
    bound to one of them unless the site sets TaskPluginParam=autobind. A launcher that
    ``docker run``/``docker exec`` starts is not the step's: dockerd makes the container
    and puts it in its own cgroup, where the step's CPU set does not reach. A header
    with a template tag on a line of its own may get ``#SBATCH`` lines from the renderer.
    """
    job = script.job
    asked = ("cpus-per-task", "cpus-per-gpu", "exclusive", "mincpus")
    if any(job.get(name) for name in asked) or _header_placeholder(script):
        return
    commands = _commands_by_line(script)
    launchers = [
        (n, name)
        for n, name in launcher_lines(script)
        if not _in_docker(script, commands.text(n, script.lines[n - 1]))
    ]
    steps = [
        (s, name)
        for s in script.sruns
        if (name := srun_launcher(script, s)) and not _in_docker(script, script.source(s.command))
    ]
    if not launchers and not steps:
        return
    if any(s.has("cpus-per-task", "cpus-per-gpu") for s, _ in steps):
        return
    if (job.get("ntasks-per-node") or job.get("ntasks")) and job.tasks_per_node != 1:
        # the job holds a CPU per task on each node, and the batch step and a whole step
        # get them all: not 1 (or a count lint cannot read)
        return
    if steps and _tasks_per_node(script, steps[0][0])[0] != 1:
        return  # several tasks per node (launcher-tasks-per-node) or a count lint cannot read
    line, name = (steps[0][0].line, steps[0][1]) if steps else launchers[0]
    if _one_worker(script, line) or not _shaped(script):
        return
    sharing = (
        "server's API process, its engine and every GPU worker"
        if launcher_kind(name) == SERVER
        else "launcher, every worker and all their data loaders"
    )
    yield script.finding(
        line,
        RULE_CPUS.severity,
        RULE_CPUS.id,
        f"no --cpus-per-task: the task running {name} gets 1 CPU"
        + (" (unless the cluster gives CPUs with each GPU)" if script.job.gpus_per_node else "")
        + f", shared by the {sharing}",
        (
            "#SBATCH --cpus-per-task=N with N >= 2 + GPUs per node (the API process, the "
            "engine, one per worker)"
            if launcher_kind(name) == SERVER
            else "#SBATCH --cpus-per-task=N with N >= (1 + data loader workers) x GPUs per node"
        )
        + ", and srun --cpus-per-task=$SLURM_CPUS_PER_TASK",
    )


# What gives a job its shape: nodes, tasks, GPUs (a name and a time limit do not).
_SHAPE = ("nodes", "ntasks", "ntasks-per-node", "gres", "gpus", "gpus-per-node", "gpus-per-task")


def _shaped(script: Script) -> bool:
    """Whether the directives give the job a shape at all. A header with none (a name,
    a time limit) leaves it to sbatch's command line, as the submitters of frameworks
    such as oumi's do (``sbatch --nodes … --gpus … job.sh``): what CPUs it gets there,
    lint cannot see."""
    return any(script.job.get(name) for name in _SHAPE)


# A lone template tag among the directives: the renderer writes #SBATCH lines there.
_LONE_TAG = re.compile(r"\s*\{\{.*\}\}\s*")


def _header_placeholder(script: Script) -> bool:
    """Whether a template tag stands alone on a line of the header (before the first
    command): what the renderer puts there (``#SBATCH --exclusive``, ``--cpus-per-task``)
    is unknown, so "no CPUs asked for anywhere" cannot be said. Reads the header only."""
    if "{{" not in script.text:
        return False
    for line in script.lines:
        if _LONE_TAG.fullmatch(line):
            return True
        if line.strip() and not line.lstrip().startswith("#"):
            return False
    return False


# Docker's client asks the daemon to start the container: its processes are the daemon's
# children, in the daemon's cgroup, so the step's CPU limit never reaches them.
_DOCKER = re.compile(r"(?<![\w-])(?:nvidia-)?docker\s+(?:container\s+)?(?:run|exec)(?![\w-])")


def _in_docker(script: Script, command: str) -> bool:
    """Whether a command starts its launcher in a Docker container: ``docker run``/``exec``
    in it (or in the variables it expands), or a function of the script that does."""
    if "docker" not in script.text:
        return False
    if _DOCKER.search(script.expanded_source(command, depth=1)):
        return True
    return any(
        re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", command) for n in _docker_functions(script)
    )


def _docker_functions(script: Script) -> frozenset[str]:
    """Functions of the script whose body runs ``docker run``/``exec`` (a wrapper such as
    ``launch_container name cmd…``)."""
    return frozenset(
        name
        for name, body in _functions(script).items()
        if any(_DOCKER.search(line) for line in body)
    )


_PRINT = re.compile(r"\s*(?:echo|printf)(?![\w-])")


def _printing_functions(script: Script) -> frozenset[str]:
    """Functions that only print (``info() { echo "[info] $*"; }``): a launcher named in
    their arguments is a message (``info "Launching vllm serve"``), not a run."""
    return frozenset(
        name
        for name, body in _functions(script).items()
        if body and all(_PRINT.match(line) for line in body if line.strip())
    )


def _functions(script: Script) -> dict[str, list[str]]:
    """Each function the script defines (as the bash grammar reads it) and the non-blank
    lines of its body, braces left out. Read once per script (asked per launcher)."""
    memo = script.memo
    if "functions" not in memo:
        text = script.parsed.text
        memo["functions"] = {
            name: [line for line in text[start + 1 : end - 1].split("\n") if line.strip()]
            for name, (start, end) in script.parsed.functions.items()
        }
    found: dict[str, list[str]] = memo["functions"]
    return found


def _one_worker(script: Script, line: int) -> bool:
    """A launcher that starts one worker: on one CPU it is a plain `python train.py`.

    The rule is about the launcher's workers and their loaders sharing the task's one
    CPU; with one worker per node (``--nproc_per_node 1``, or no count and one GPU per
    node: torchrun's default is 1) there is nothing to share that a plain training
    without --cpus-per-task would not share too, and lint does not flag that. The count
    is read from the whole command (continued lines, the variables it expands).
    """
    command = _commands_by_line(script).text(line, script.lines[line - 1])
    text = script.expanded_source(command, depth=1)
    counts = {int(m["n"]) for m in _PROC_ARGS.finditer(text)}
    for match in _TOTAL_PROCS.finditer(text):
        per_machine = _per_machine(script, text, int(match["n"]))
        if per_machine is not None:
            counts.add(per_machine)
    gpus = script.job.gpus_per_node
    if gpus is not None:
        # workers beyond the GPUs are gpus-per-node-mismatch's finding, not this one's
        counts = {min(count, gpus[0]) for count in counts} or {gpus[0]}
    return counts == {1}


_MACHINE_RANK = re.compile(r"--machine[-_]rank\b")
# a c10d or etcd rendezvous numbers the machines itself; accelerate's config file may
# hold the rank (detectron2's --config-file is the model's)
_DYNAMIC = re.compile(r"--rdzv[-_]backend[= ]+[\"']?(?:c10d|etcd)")
_ACCELERATE_CONFIG = re.compile(r"accelerate\s+launch\s[^;&|]*--config[-_]file\b")


def machines_without_rank(
    script: Script, rule_id: str, opaque: Callable[[str], bool]
) -> Iterator[Finding]:
    """``--num_machines N>1`` with no ``--machine_rank`` in a step on several nodes.

    accelerate launch and detectron2-style programs (``train_net.py --num-machines``)
    take the machine's rank from that option, 0 when it is missing: every node is
    machine 0 and the group never forms. ``opaque``: words that may carry options.
    """
    nodes = script.job.nodes
    if "machines" not in script.text or not nodes or nodes[0] < 2:
        return
    for srun in script.sruns:
        step_nodes = srun.option("nodes")
        if step_nodes is not None and (node_range(step_nodes.value) or (2, 2))[0] < 2:
            continue
        text = script.expanded_source(script.source(srun.command))
        match = _MACHINES.search(text)
        count = to_int(match["n"]) if match else None
        if match is None or (count is not None and count < 2) or opaque(text):
            continue
        if _MACHINE_RANK.search(text) or _DYNAMIC.search(text) or _ACCELERATE_CONFIG.search(text):
            continue
        if _wrapper_may_rank(script, srun):
            continue
        rank = "--machine-rank" if "num-machines" in match[0] else "--machine_rank"
        yield script.finding(
            srun.line,
            ERROR,
            rule_id,
            f"{match[0].strip()} but no {rank}: every node takes machine rank 0 "
            "and the group never forms (the rendezvous waits, then times out)",
            f"{rank}=$SLURM_NODEID inside single quotes (each node's own), with one task per node",
        )


def _wrapper_may_rank(script: Script, srun: Srun) -> bool:
    """Whether the options go to a shell script of the step (``srun run.sh --num_machines
    4``) that may add the rank itself (``accelerate launch --machine_rank $SLURM_PROCID
    "$@"``): unknown unless lint reads the script and it names no rank."""
    words = [w.text for w in srun.program]
    if not words:
        return False
    if words[0].rsplit("/", 1)[-1] in SHELLS:
        flags = list(takewhile(lambda w: w.startswith("-"), words[1:]))
        # bash -c '…': the command string is in the step's own text, read already
        if len(flags) == len(words) - 1 or any(not f.startswith("--") and "c" in f for f in flags):
            return False
    elif not words[0].endswith((".sh", ".bash")):
        return False
    word = helper_word(srun.program)
    helper = script.helpers.read(word) if word and script.helpers else None
    if helper is None or helper.text is None:
        return True  # a script lint cannot read: what it adds is unknown
    return _MACHINE_RANK.search(helper.text) is not None


# Launchers that run on one node unless told of others: torchrun's --nnodes defaults to 1
# (torch.distributed.run), deepspeed without a hostfile runs on localhost.
_LOCAL_BY_DEFAULT = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "deepspeed")


def _one_node(name: str, command: str) -> bool:
    """A launcher that starts its workers on this node alone (no node count, or 1): a
    phase meant for the first node, with no rendezvous waiting for the others."""
    if name not in _LOCAL_BY_DEFAULT:
        return False
    counts = [m["n"] for m in _NODE_OPTION.finditer(command)]
    return all(count in ("1", "1:1") for count in counts)


_NODE_OPTION = re.compile(r"--(?:nnodes|num_nodes|num-nodes)[= ]+[\"']?(?P<n>[^\s\"']+)")


def _spans_nodes(srun: Srun) -> bool:
    """An srun step over the job's nodes: no node or task count (one task per node of a
    job with --ntasks-per-node), or more than one node."""
    nodes = srun.option("nodes")
    if nodes is None:
        return srun.option("ntasks") is None
    asked = node_range(nodes.value) if nodes.value else None
    return asked is not None and asked[0] > 1


def _launcher_outside_srun(script: Script, context: LintContext) -> Iterator[Finding]:
    nodes = script.job.nodes
    commands = _commands_by_line(script)
    launchers = [
        (n, name)
        for n, name in launcher_lines(script)
        if launcher_kind(name) != SERVER and not commands.cut_from_srun(n)
    ]
    if not nodes or nodes[0] < 2:
        return
    if not launchers:
        yield from _trainer_told_of_nodes(script, nodes[0])
        return
    if any(srun_launcher(script, s) for s in script.sruns):
        return
    if any(_spans_nodes(s) for s in script.sruns):
        launchers = [
            (n, name)
            for n, name in launchers
            if not _one_node(name, commands.text(n, script.lines[n - 1]))
        ]
        if not launchers:
            return
    if any(problem.severity == "error" for problem in script.parsed.problems):
        return  # bash refuses the script (bash-syntax): the sruns after that are unread
    text = script.text  # a code line is part of a line of the text: no match there, none
    if (_REMOTE.search(text) or _REACHES_NODES.search(text)) and any(
        _REMOTE.search(line) or _REACHES_NODES.search(line)
        for _, line in script.code_lines(heredocs=True)
    ):
        return  # started per node some other way (pdsh, ssh, mpirun, a launcher's hostfile)
    line, name = launchers[0]
    yield script.finding(
        line,
        WARNING,
        RULE_OUTSIDE.id,
        f"{name} runs in the batch step, which runs on the first node only: the other "
        f"{nodes[0] - 1} node(s) never start a launcher and the rendezvous waits until the "
        "time limit",
        "start one launcher per node: srun --ntasks-per-node=1 bash -c "
        "'<launcher> --nnodes=$SLURM_NNODES --node_rank=$SLURM_PROCID ...'",
    )


_PYTHON = re.compile(r"python[\d.]*")
_TRAINER_NODES = re.compile(r"--(?:trainer\.)?num[_-]nodes(?:=(?P<v>\d+))?")


def _trainer_told_of_nodes(script: Script, nodes: int) -> Iterator[Finding]:
    """``python train.py … --num_nodes 4`` run once in the batch step of a 4-node job
    with no srun anywhere: a trainer that starts its own processes per node (PyTorch
    Lightning's Trainer(num_nodes=…), the flag passed through) runs on the first node
    alone, and its distributed start waits for the others' ranks, which nothing starts.
    Only a literal count of 2 or more, only where no srun, mpirun, ssh or pdsh is run."""
    if script.sruns or "num" not in script.text:
        return
    if any(problem.severity == "error" for problem in script.parsed.problems):
        return
    for command in _top_commands(script):
        argv = command.argv
        if not _PYTHON.fullmatch(argv[0].text.rsplit("/", 1)[-1]):
            continue
        words = [w.text for w in argv[1:]]
        for index, word in enumerate(words):
            match = _TRAINER_NODES.fullmatch(word)
            if match is None:
                continue
            value = match["v"] or (words[index + 1] if index + 1 < len(words) else "")
            count = to_int(value)
            if count is None or count < 2:
                continue
            if any(_REMOTE.search(line) for _, line in script.code_lines(heredocs=True)):
                return  # started per node some other way
            written = word if match["v"] else f"{word} {value}"
            yield script.finding(
                script.line_of(command.start),
                WARNING,
                RULE_OUTSIDE.id,
                f"{argv[0].text} is told of {count} nodes ({written}) but runs once, in the "
                f"batch step on the first node: the other {nodes - 1} node(s) start no "
                "process, so its distributed start waits for ranks nothing starts",
                "start it once per task: srun python … (the trainer reads its rank from Slurm)",
            )
            return


def _top_commands(script: Script) -> list[Command]:
    return [c for c in script.commands if c.depth == 0 and c.argv]


def _node_count_read(script: Script, name: str) -> bool:
    """Whether a node count variable may be read: the script expands it, or runs a
    launcher (which reads ``NNODES`` and the like from its environment). A test script
    that exports ``NNODES=4`` and only runs ``srun echo`` starts nothing that waits for
    nodes."""
    if re.search(rf"\$\{{?{name}\b", script.text):
        return True
    return bool(launcher_lines(script)) or any(srun_launcher(script, s) for s in script.sruns)


def _nodes_mismatch(script: Script, context: LintContext) -> Iterator[Finding]:
    nodes = script.job.nodes
    setting = script.job.get("nodes")
    if nodes is None or setting is None:
        return
    wanted = f"#SBATCH {setting.written} (line {script.shown(setting.line)})"
    for binding in script.bindings:
        if binding.name not in NODE_VARIABLES or binding.value is None:
            continue
        if not _node_count_read(script, binding.name):
            continue
        value = to_int(binding.value.text) if binding.value.literal else None
        if value is not None and not nodes[0] <= value <= nodes[1]:
            yield script.finding(
                binding.line,
                ERROR,
                RULE_NODES.id,
                f"{binding.name}={value} but {wanted}: the launchers wait for nodes that never "
                "join (or the job holds nodes nobody uses)",
                f"{binding.name}=$SLURM_NNODES (always the allocation's node count)",
            )
    for number, line in script.code_lines(heredocs=True):
        for match in _NODE_ARGS.finditer(line):
            low, _, high = match["n"].partition(":")
            asked = (int(low), int(high or low))
            # fewer nodes than the job holds may be meant (a server on 4 of 9 nodes, clients
            # on the rest); more can never join
            if asked[0] > nodes[1]:
                yield script.finding(
                    number,
                    ERROR,
                    RULE_NODES.id,
                    f"--{match['opt']} {match['n']} but {wanted}: the launcher waits for nodes "
                    "the job never gets",
                    f"--{match['opt']}=$SLURM_NNODES",
                )


# A template's blank for the reader to fill in (--gres=gpu:..., --gpus-per-node=<N>).
_PLACEHOLDER = re.compile(r"\.\.\.|\u2026|<[^>]*>")


def _gpus_left_blank(script: Script) -> bool:
    for name in ("gres", "gpus", "gpus-per-node", "gpus-per-task"):
        setting = script.job.get(name)
        if setting is not None and _PLACEHOLDER.search(setting.value or ""):
            return True
    return False


def _gpus_mismatch(script: Script, context: LintContext) -> Iterator[Finding]:
    if _gpus_left_blank(script):
        return  # the count is the reader's to write: nothing to compare with
    request = script.job.gpus_per_node
    # on whole nodes the request is the least a node gives: more workers may each find a
    # GPU (-G a100:1 --exclusive on a four-GPU node runs --nproc_per_node=4)
    whole = script.job.whole_nodes
    for binding in script.bindings:
        if binding.name != "GPUS_PER_NODE" or binding.value is None or not binding.value.literal:
            continue
        value = to_int(binding.value.text)
        if value is None:
            continue
        if request is None:
            if value > 0 and script.directives:
                # Unknown, not wrong: a cluster that does not manage GPUs as GRES
                # gives every job all of a node's GPUs (as on the AWS clusters of the
                # corpus), and sbatch may be given --gres on its command line.
                yield script.finding(
                    binding.line,
                    INFO,
                    RULE_GPUS.id,
                    f"GPUS_PER_NODE={value} but no #SBATCH line requests GPUs: the workers "
                    "find no GPU unless sbatch is given --gres on its command line",
                    f"#SBATCH --gres=gpu:{value}",
                )
        elif value != request[0] and not (whole and value > request[0]):
            yield script.finding(
                binding.line,
                ERROR,
                RULE_GPUS.id,
                f"GPUS_PER_NODE={value} but #SBATCH {request[1].written} "
                f"(line {script.shown(request[1].line)}) "
                f"gives {request[0]} GPUs per node: "
                + (
                    "workers without a GPU fail"
                    if value > request[0]
                    else f"{request[0] - value} GPU(s) per node sit idle"
                ),
                f"GPUS_PER_NODE={request[0]}, or read it from Slurm: "
                "GPUS_PER_NODE=$SLURM_GPUS_ON_NODE",
            )
    if request is None or request[0] == 0:
        return  # no GPUs asked for (gpu:0): the launcher's workers are CPU processes
    yield from _counts_mismatch(script, request[0], request[1].written, whole)
    if whole:
        return  # the two below judge only more GPUs than the request: unknown on whole nodes
    yield from _count_variables(script, request[0], request[1].written)
    yield from _program_gpus(script, request[0], request[1].written)


# A variable given as a count of GPUs one process group spreads over: tensor parallel
# ranks (vLLM's tensor_parallel_size=, --tensor-parallel-size, SGLang's --tp) or a
# launcher's workers per node.
_GPU_COUNT_USE = re.compile(
    # not a converter's --target-tensor-parallel-size (Megatron's checkpoint/convert.py):
    # how the written checkpoint is split, on a CPU if need be, no rank per GPU
    r"(?:(?<!target[_-])tensor[_-]parallel[_-]size|--tp(?:[_-]size)?|--(?:"
    + _WORKER_OPTIONS
    + r"))"
    r"[= ]+[\"']?\$\{?(?P<name>[A-Za-z_]\w*)\}?"
)


def _count_variables(script: Script, gpus: int, written: str) -> Iterator[Finding]:
    """A literal count in a variable (``NUM_GPUS=4``) that a GPU-count option reads
    (``tensor_parallel_size=$NUM_GPUS``), more than a one-node job has: the ranks past
    the node's GPUs find none and the group fails to start. On several nodes a tensor
    parallel group may span them: not judged."""
    if script.job.nodes not in (None, (1, 1)) or "$" not in script.text:
        return
    names = {
        m["name"]
        for _, line in script.code_lines(heredocs=True)
        if "$" in line
        for m in _GPU_COUNT_USE.finditer(line)
    } - {"GPUS_PER_NODE"}
    for binding in script.bindings:
        if binding.name not in names or binding.value is None or not binding.value.literal:
            continue
        value = to_int(binding.value.text)
        if value is not None and value > gpus:
            yield script.finding(
                binding.line,
                ERROR,
                RULE_GPUS.id,
                f"{binding.name}={value} is given as a GPU count, but #SBATCH {written} gives "
                f"this one-node job {gpus} GPU(s): the ranks past them find no GPU",
                f"{binding.name}=$SLURM_GPUS_ON_NODE, or ask for {value} GPUs",
            )


# A program's own ``--gpus N`` (PyTorch Lightning's Trainer flag in the scripts that pass
# it on, and many trainers' own): the devices it asks for on its node.
_PROGRAM_GPUS = re.compile(r"(?<![\w-])--gpus[= ]+(?P<n>\d+)(?![\w.,:-])")
# Commands whose --gpus is Slurm's (a total for the step or job), not a program's.
_SLURM_COMMAND = re.compile(r"(?<![\w-])(?:srun|sbatch|salloc)(?![\w-])")


def _program_gpus(script: Script, gpus: int, written: str) -> Iterator[Finding]:
    """``python train.py --gpus 2`` in a one-node job with one GPU: the program asks for
    devices the node's job does not hold; Slurm shows it only its own (CUDA_VISIBLE_DEVICES,
    the device cgroup), and the trainer stops (Lightning: a MisconfigurationException).
    Only more than the job has, and only on one node (on several, a total of GPUs may not
    be spread evenly); srun's, sbatch's and salloc's own --gpus are Slurm's totals."""
    if script.job.nodes != (1, 1) or "--gpus" not in script.text:
        return
    commands = _commands_by_line(script)
    for number, line in script.code_lines():
        if "--gpus" not in line:
            continue
        for match in _PROGRAM_GPUS.finditer(line):
            asked = int(match["n"])
            if asked <= gpus or _SLURM_COMMAND.search(commands.text(number, line)):
                continue
            yield script.finding(
                number,
                ERROR,
                RULE_GPUS.id,
                f"--gpus {asked} asks the program for {asked} GPUs, but #SBATCH {written} "
                f"gives this one-node job {gpus}: the program finds only those and stops",
                f"--gpus {gpus} (or $SLURM_GPUS_ON_NODE), or ask Slurm for {asked}",
            )


def _counts_mismatch(
    script: Script, gpus: int, written: str, whole: bool = False
) -> Iterator[Finding]:
    """Worker counts given to a launcher against the GPUs per node.

    ``--num_gpus`` is not only deepspeed's: a program's own (a total, in an argument
    array) is read only where a launcher runs. accelerate's ``--num_processes`` counts
    every machine's workers: per node it is divided by ``--num_machines`` (1 unless given).
    On whole nodes (``whole``: ``--exclusive``) only fewer workers than the request count.
    """
    commands = _commands_by_line(script)
    for number, line in script.code_lines(heredocs=True):
        for match in _PROC_ARGS.finditer(line):
            if match["opt"].startswith("num") and (
                commands.assigned_without_launcher(number)
                or _mpi_program_option(commands.text(number, line), match["opt"])
            ):
                continue
            if whole and int(match["n"]) > gpus:
                continue
            yield from _count_finding(script, number, match["opt"], int(match["n"]), gpus, written)
        for match in _TOTAL_PROCS.finditer(line):
            per_node = _per_machine(script, commands.text(number, line), int(match["n"]))
            if per_node is not None and not (whole and per_node > gpus):
                yield from _count_finding(
                    script, number, match["opt"], per_node, gpus, written, match["n"]
                )


_MPI_RUN = re.compile(r"(?<![\w-])(?:mpirun|mpiexec)(?![\w-])")


def _mpi_program_option(command: str, option: str) -> bool:
    """``mpirun -n $SLURM_NTASKS ./app --num_gpus 3``: the option is the MPI program's own
    (Kokkos's devices to spread the ranks over), and mpirun's ranks are the workers, one
    process each, not one per GPU started by a launcher. deepspeed's is still judged."""
    run = _MPI_RUN.search(command)
    return (
        run is not None
        and re.search(rf"--{option}\b", command[run.end() :]) is not None
        and launcher_in(command) is None
    )


def _per_machine(script: Script, command: str, total: int) -> int | None:
    """accelerate's processes per machine, or None (not accelerate's, or unreadable).

    Without ``--num_machines`` the count comes from accelerate's config file (the
    default one too): known only for a one-node job.
    """
    if not (launcher_in(command) or "").startswith("accelerate"):
        return None
    machines = _MACHINES.search(command)
    one_node = script.job.nodes == (1, 1) or (script.job.nodes is None and not script.sruns)
    count = to_int(machines["n"]) if machines else (1 if one_node else None)
    if not count or total % count:
        return None
    return total // count


# Builtins that store their arguments' values (``export CMD="torchrun …"``).
_DECLARES = frozenset({"export", "declare", "typeset", "readonly", "local"})


def _commands_by_line(script: Script) -> _CommandsByLine:
    memo = script.memo
    if "commands_by_line" not in memo:
        memo["commands_by_line"] = _CommandsByLine(script)
    found: _CommandsByLine = memo["commands_by_line"]
    return found


class _CommandsByLine:
    """The top-level command each line belongs to (found by bisection, built once)."""

    def __init__(self, script: Script) -> None:
        self._script = script
        tops = [c for c in script.commands if c.depth == 0]
        self._commands = tops
        self._starts = [script.line_of(c.start) for c in tops]
        self._ends = [script.line_of(c.end) for c in tops]
        self._run: frozenset[str] | None = None

    def _at(self, number: int) -> Command | None:
        index = bisect_right(self._starts, number) - 1
        if index >= 0 and self._ends[index] >= number:
            return self._commands[index]
        return None

    def text(self, number: int, line: str) -> str:
        command = self._at(number)
        return self._script.source(command) if command else line

    def stored_not_run(self, number: int) -> bool:
        """Whether the line is in a value stored in a variable (``CMD="torchrun …"``,
        ``export CMD=…``) that no batch-step command runs as a program: the launcher
        starts where the variable is expanded (an srun step reads it there), not here."""
        command = self._at(number)
        if command is None:
            return False
        argv = command.argv
        if argv and argv[0].text not in _DECLARES:
            return False
        words = argv[1:] if argv else command.words
        names = {m[1] for w in words if (m := re.match(r"(\w+)\+?=", w.text))}
        return bool(names) and not names & self._run_names()

    def _run_names(self) -> frozenset[str]:
        """Variables a batch-step command runs: ``$CMD …``, ``eval "$CMD"``, ``bash -c
        "$CMD"`` (srun's are its step's, read by srun_launcher). Found once."""
        if self._run is None:
            found: set[str] = set()
            for command in self._script.commands:
                argv = command.argv
                if not argv or is_srun(argv[0].text):
                    continue
                found |= argv[0].expands
                program = argv[0].text.rsplit("/", 1)[-1]
                if program == "eval" or program in SHELLS:
                    for word in argv[1:]:
                        found |= word.expands
            self._run = frozenset(found)
        return self._run

    def calls(self, number: int, names: frozenset[str]) -> bool:
        """Whether the line's command runs one of ``names`` (a function of the script)."""
        command = self._at(number) if names else None
        argv = command.argv if command else ()
        return bool(argv) and argv[0].text in names

    def cut_from_srun(self, number: int) -> bool:
        """Whether the line's command is the rest of an srun command that a comment line
        after its trailing backslash ended (``srun prog \\`` / ``# note`` / ``args``): the
        author meant it for the step; the broken continuation is the defect
        (option-as-command's), not a launcher left in the batch step."""
        index = bisect_right(self._starts, number) - 1
        if index < 1 or self._ends[index] < number:
            return False
        before = self._commands[index - 1]
        argv = before.argv
        if not argv or not is_srun(argv[0].text):
            return False
        lines = self._script.lines
        last, first = self._ends[index - 1], self._starts[index]
        between = lines[last : first - 1]
        return (
            lines[last - 1].rstrip().endswith("\\")
            and bool(between)
            and all(line.lstrip().startswith("#") for line in between)
        )

    def assigned_without_launcher(self, number: int) -> bool:
        """Whether the line is in a plain assignment (``args=( --num_gpus 64 … )``) that
        names no launcher: the values go to whatever program expands it."""
        command = self._at(number)
        if command is None or command.argv:
            return False
        return launcher_in(self._script.source(command)) is None


def _count_finding(
    script: Script,
    number: int,
    option: str,
    value: int,
    gpus: int,
    written: str,
    total: str = "",
) -> Iterator[Finding]:
    if value == gpus:
        return
    asked = f"--{option} {total} ({value} per node)" if total else f"--{option} {value}"
    yield script.finding(
        number,
        # fewer workers than GPUs: info. torchrun does not narrow
        # CUDA_VISIBLE_DEVICES, so one worker sees every GPU of the job
        # and may drive several (device_map, tensor parallel): intent
        ERROR if value > gpus else INFO,
        RULE_GPUS.id,
        f"{asked} but the job has {gpus} GPUs per node (#SBATCH {written})"
        + ("" if value > gpus else ": the others idle unless a worker uses several"),
        f"--{option}={gpus} (or $SLURM_GPUS_ON_NODE)"
        if not total
        else f"--{option}=$((SLURM_GPUS_ON_NODE * SLURM_NNODES))",
    )


RULE_TASKS = Rule(
    "launcher-tasks-per-node",
    ERROR,
    "more than one task per node for a trainer launcher or ray start (each starts its own workers)",
    _launcher_tasks,
)
# Info since round eight: one CPU for the launcher is real only where the site gives no
# CPUs with each GPU (DefCpuPerGPU), which the script cannot show; right on 32 of 48
# findings of the development part, 14 of 62 when first seen.
RULE_CPUS = Rule(
    "launcher-cpus-per-task",
    INFO,
    "a launcher and all its workers share 1 CPU (no --cpus-per-task anywhere)",
    _launcher_cpus,
)
# Info since 2026-12-01: right on 2 of 14 findings on the scored test parts, under half on
# every part it fired in, the last included (holdout9: 0 of 2), though each round fixed the classes
# of the part before (test_quiet_where_never_right_unseen).
RULE_OUTSIDE = Rule(
    "launcher-outside-srun",
    INFO,
    "a multi-node job runs its launcher in the batch step only (first node)",
    _launcher_outside_srun,
)
RULE_NODES = Rule(
    "nodes-mismatch",
    ERROR,
    "NNODES= / --nnodes differ from #SBATCH --nodes",
    _nodes_mismatch,
)
# Info since 2026-12-01: right on 2 of 20 findings on the scored test parts, under half on
# every part it fired in, the last included (holdout9: 0 of 6), though each round fixed the classes
# of the part before (test_quiet_where_never_right_unseen).
RULE_GPUS = Rule(
    "gpus-per-node-mismatch",
    INFO,
    "GPUS_PER_NODE, --nproc_per_node, accelerate's processes per machine: not the GPUs per node",
    _gpus_mismatch,
)
RULE_HELPER = Rule(
    "helper-unreadable",
    INFO,
    "a helper script a step runs exists but could not be read (link loop, not a file, too big)",
    _helper_unreadable,
)
RULES = (RULE_NODES, RULE_TASKS, RULE_GPUS, RULE_CPUS, RULE_OUTSIDE, RULE_HELPER)
