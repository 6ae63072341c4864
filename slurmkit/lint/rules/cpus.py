"""Does ``#SBATCH --cpus-per-task`` reach the tasks srun starts? Version-aware.

22.05 to 23.02: srun does not inherit it and reads only ``SRUN_CPUS_PER_TASK``.
23.11 on: srun inherits it again (via ``SLURM_CPUS_PER_TASK``, and from 24.11
``SLURM_TRES_PER_TASK``) and ignores ``SRUN_CPUS_PER_TASK``. ``srun
--cpus-per-task`` works on every version, so it is always the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmkit.lint.context import NO_INHERIT_RANGE, LintContext
from slurmkit.lint.findings import ERROR, WARNING, Finding, Rule
from slurmkit.lint.parsed import Word
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
        "find",
        "grep",
        "cp",
        "mv",
        "ln",
        "chmod",
        "du",
        "tee",
        "id",
        "whoami",
        "pwd",
        "test",
        "wc",
        "head",
        "tail",
        "apt",
        "apt-get",
        "cd",
        "export",
        "module",
        "ml",
        "ulimit",
        "lscpu",
        "nproc",
        "uptime",
        "groups",
        "rocm-smi",
        "ibstat",
        "ibv_devinfo",
        "rsync",
        "scp",
        "sync",
        "chown",
        "kill",
        "pkill",
        "which",
        "sysctl",
        # single-threaded text tools, transfers and shell builtins of a `bash -c` string
        "awk",
        "gawk",
        "sed",
        "curl",
        "wget",
        "basename",
        "dirname",
        "ps",
        "pgrep",
        "set",
        "declare",
        "read",
        "local",
        "break",
        "continue",
        "return",
        "false",
        # conda-pack's prefix rewriter and likwid's topology report: one thread each
        "conda-unpack",
        "likwid-topology",
    }
)
# The docker client only asks dockerd to run or exec: the container's processes are
# children of containerd-shim, outside the step's cgroup and CPU mask (a site whose
# `docker` is podman-docker runs them under the step; not the common case where docker is).
_OUTSIDE_STEP = frozenset({"docker"})
# nccl-tests (all_reduce_perf, alltoall_perf_mpi, ...) drive the GPUs from one host
# thread per rank unless -t asks for more: the CPU count only spaces the ranks out.
_NCCL_TEST = re.compile(
    r"(?:all_reduce|all_gather|alltoall|broadcast|reduce_scatter|reduce|sendrecv|gather"
    r"|scatter|hypercube)_perf(?:_mpi)?"
)


def _one_cpu_name(name: str) -> bool:
    return name in ONE_CPU or name in _OUTSIDE_STEP or _NCCL_TEST.fullmatch(name) is not None


# tar runs gzip or bzip2 (one thread each) for -z/-j; a compressor it is told to use (-I,
# --use-compress-program: pigz, zstd -T0) or xz (-J, threaded from xz 5.4) may use more.
_TAR_THREADED = ("-I", "--use-compress", "--xz", "--zstd")
_COMPRESSORS = frozenset({"xz", "zstd", "pigz", "pbzip2", "pixz", "lbzip2", "pzstd"})


def _one_cpu_tar(arguments: list[str]) -> bool:
    """tar that asks for no threaded compressor: one CPU is all it uses."""
    for index, text in enumerate(arguments):
        if text.startswith(_TAR_THREADED) or _base(text) in _COMPRESSORS:
            return False
        # -xJf, or the old dashless first word (tar xJf)
        short = text[1:] if text[:1] == "-" and text[:2] != "--" else ""
        if "J" in short or (index == 0 and text[:1] != "-" and "J" in text):
            return False
    return True


# Subcommands that are one-thread clients of a multi-threaded tool: ``ray stop`` signals
# the node's Ray processes, ``pip install`` unpacks wheels (a source build is setuptools',
# one compiler at a time unless MAX_JOBS says otherwise).
_ONE_CPU_SUBCOMMANDS = {
    "ray": frozenset({"stop", "status"}),
    "pip": frozenset({"install", "uninstall", "list", "freeze", "show"}),
    "pip3": frozenset({"install", "uninstall", "list", "freeze", "show"}),
}


def _one_cpu_command(words: list[str]) -> bool:
    """A command (program and arguments) that needs one CPU."""
    name = _base(words[0])
    if name == "tar":
        return _one_cpu_tar(words[1:])
    if name in _ONE_CPU_SUBCOMMANDS:
        return len(words) > 1 and words[1] in _ONE_CPU_SUBCOMMANDS[name]
    if _NCCL_TEST.fullmatch(name):
        return not nccl_threads(words[1:])
    return _one_cpu_name(name)


_SHELLS = frozenset({"bash", "sh", "dash", "zsh"})
# Shell words that are no program: the first word of a command after them is.
# (sudo runs the word after it: `sudo /sbin/sysctl vm.drop_caches=3` is sysctl.)
_KEYWORDS = frozenset(
    {"then", "do", "else", "elif", "if", "while", "until", "!", "{", "}", "sudo", "fi", "done"}
)
_COMMAND_SPLIT = re.compile(r"\n|;|&&|\|\||\||\$\(|`|\(|\)")
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
# Compiled programs read OMP_NUM_THREADS; interpreters and launchers start workers
# (data loaders, ranks) whatever it says, and shells and containers may run them.
_WRAPPERS = frozenset({"singularity", "apptainer", "shifter", "podman", "docker", "enroot"})
_INTERPRETERS = re.compile(r"python|torchrun|accelerate|deepspeed|ray|julia|Rscript|java")
_RUNS_ANOTHER = _SHELLS | _WRAPPERS


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def step_program(srun: Srun) -> tuple[Word, ...]:
    """The words of the program the step runs, past ``env VAR=value`` (env runs it)."""
    words = srun.program
    if words and words[0].literal and _base(words[0].text) == "env":
        index = 1
        while index < len(words) and (
            words[index].text.startswith("-") or _ASSIGNMENT.match(words[index].text)
        ):
            index += 1
        return words[index:] if index < len(words) else words[:1]
    return words


def _shell_string(words: tuple[Word, ...]) -> str | None:
    """The command string of ``bash -c STRING`` (-lc, -ec too), or None."""
    if len(words) < 3 or not words[0].literal or _base(words[0].text) not in _SHELLS:
        return None
    for index, word in enumerate(words[1:-1], start=1):
        if not word.text.startswith("-"):
            return None
        if "c" in word.text[1:] and not word.text.startswith("--"):
            return words[index + 1].text
    return None


def _helpers_only(command_string: str) -> bool:
    """Every command of a ``bash -c`` string is a one-CPU helper (echo, rm, hostname)."""
    commands = []
    unquoted = _QUOTED.sub('""', command_string.replace("\\(", "").replace("\\)", ""))
    for part in _COMMAND_SPLIT.split(unquoted):
        words = _helper_words(part)
        # `) -ge $deadline ]]`, `) + 10 ))`: the rest of a test or sum after a `$(...)`
        if words and not words[0].startswith(("#", ">", "<", "2>", "[", "-", "+", "]")):
            commands.append(words)
    return bool(commands) and all(
        _one_cpu_command(words) or words[0] in ("exit", ":") for words in commands
    )


def _helper_words(part: str) -> list[str]:
    """The words of one command of a ``bash -c`` string, from its program on."""
    words = [w for w in part.split() if not _ASSIGNMENT.match(w)]
    while words and words[0] in _KEYWORDS:
        words = words[1:]
    return words


# Asked only for its version or usage, any program prints a line and exits.
_QUERY = frozenset({"--version", "-version", "--help", "-help", "-V"})


def one_cpu_helper(srun: Srun) -> bool:
    """The step runs a program that needs one CPU (named plainly, path or not)."""
    words = step_program(srun)
    if len(words) == 2 and words[1].literal and words[1].text in _QUERY:
        return True  # srun -n 1 ${BIN} --version: whatever $BIN is
    if not words or not words[0].literal:
        return False
    string = _shell_string(words)
    if string is not None:
        return _helpers_only(string)
    if _base(words[0].text) == "julia":
        return _one_julia_thread(srun, words)
    return _one_cpu_command([w.text for w in words])


def nccl_threads(arguments: list[str]) -> bool:
    """nccl-tests asked for more than one host thread per rank.

    Its getopt_long table reads ``-t N`` (``-tN``) and ``--nthreads N`` (``=N``); a value
    from a variable may be more than one.
    """
    for index, text in enumerate(arguments):
        if text in ("-t", "--nthreads"):
            value = arguments[index + 1] if index + 1 < len(arguments) else ""
        elif text.startswith(("-t", "--nthreads=")):
            value = text.split("=", 1)[1] if text.startswith("--") else text[2:]
        else:
            continue
        if value.strip("\"'") != "1":
            return True
    return False


# A count of workers or threads handed to the step (DIONYSOS_NWORKERS=21, NPROCS=8): the
# program reads it to start them (Distributed's addprocs(n) from inside the script).
_WORKER_COUNT = re.compile(r"WORKERS|N_?PROCS|NUM_?PROCS|THREADS", re.IGNORECASE)


def _one_julia_thread(srun: Srun, words: tuple[Word, ...]) -> bool:
    """Julia runs one thread and no worker unless an option or the environment says so.

    -t/--threads and JULIA_NUM_THREADS give threads; -p/--procs and --machine-file start
    workers, and so does a script reading a worker count the batch script exports.
    """
    options = ("-t", "--threads", "-p", "--procs", "--machine-file")
    threads = any(w.text.startswith(options) for w in words[1:])
    return not threads and not any(_asks_for_more(binding) for binding in srun.env.values())


def _asks_for_more(binding: Binding) -> bool:
    """An exported worker or thread count other than one thread.

    A thread count of one (OMP_NUM_THREADS=1, the usual guard against oversubscribing)
    asks for one thread; one worker still runs beside the main process.
    """
    if not _WORKER_COUNT.search(binding.name):
        return False
    threads = "THREADS" in binding.name.upper()
    return not (threads and _literal_int(binding) in (0, 1))


def one_thread_per_task(srun: Srun) -> bool:
    """OMP_NUM_THREADS=1 for a compiled program: the author asked for one thread per task.

    --cpus-per-task then only spaces the tasks out (one rank per GPU, say); an
    interpreter or launcher still starts workers that want the CPUs. A shell or container
    anywhere in the words runs the real program, also after options srun takes from a
    variable (srun $SRUN_ARGS bash -c "$RUN").
    """
    threads = srun.env.get("OMP_NUM_THREADS")
    if threads is None or threads.value is None or _value(srun, threads.value) != "1":
        return False
    words = step_program(srun)
    if not words or any(w.literal and _base(w.text) in _RUNS_ANOTHER for w in words):
        return False  # runs something else, which the string or image names
    return not any(_INTERPRETERS.search(word.text) for word in words)


_SIMPLE_REF = re.compile(r"\$(?:([A-Za-z_]\w*)|\{([A-Za-z_]\w*)\})")


def _value(srun: Srun, word: Word) -> str | None:
    """A word's value: its text, or the literal value of the one variable it names.

    ``threads=1; export OMP_NUM_THREADS=${threads}`` and ``EXE=./main3d.gnu.MPI.CUDA.ex;
    srun $EXE`` say what the literal would; a value set outside the script is unknown.
    """
    text = word.text.strip()
    if word.literal:
        return text
    ref = _SIMPLE_REF.fullmatch(text)
    binding = srun.shell.get(ref.group(1) or ref.group(2)) if ref else None
    if binding is None or binding.value is None or not binding.value.literal:
        return None
    return binding.value.text.strip()


# An AMReX GNU make build names its executable after its options (Tools/GNUMake/Make.defs:
# main3d.gnu.TPROF.MPI.CUDA.ex); `.OMP` is there exactly when it was built with OpenMP.
_AMREX_EXE = re.compile(r"\w*[123]d\.[a-z][\w-]*(?:\.[\w-]+)*\.ex")


def single_threaded_build(srun: Srun) -> bool:
    """The step runs an AMReX executable built without OpenMP: one thread per rank.

    Its ranks drive a GPU or compute alone, whatever OMP_NUM_THREADS says; the CPUs per
    task only space them out.
    """
    words = step_program(srun)
    program = _value(srun, words[0]) if words else None
    if program is None or not _AMREX_EXE.fullmatch(_base(program)):
        return False
    return "OMP" not in _base(program).split(".")


def other_job(srun: Srun) -> bool:
    """``srun --jobid X`` into a job that is not this script's own."""
    option = srun.option("jobid")
    if option is None or option.value is None:
        return False
    raw = next((w.raw for w in srun.command.words if option.value in w.text), option.value)
    return not any(ref in raw or ref in option.value for ref in _OWN_JOB)


_CPUS_WORD = re.compile(r"(?:^|[\s(\"'])(?:-c\s*[\d$]|--cpus-per-(?:task|gpu)\b)")
_NAMES = re.compile(r"\$\{?([A-Za-z_]\w*)")
_OPTIONS_NAME = re.compile(r"OPT|ARG|FLAG|PARAM", re.I)


def cpus_in_variable(srun: Srun) -> bool:
    """srun's options come from a variable that sets -c, or from one this script never sets.

    ``srun $SRUN_ARGS python ...``: the words are options srun reads after expansion.
    A value set here is read; an options variable set outside the script may hold -c.
    """
    for word in srun.program:
        if word.literal or not word.raw.lstrip("\"'").startswith("$"):
            return False
        for name in word.expands or _NAMES.findall(word.raw):
            binding = srun.shell.get(name)
            if binding is None and _OPTIONS_NAME.search(name):
                return True
            if binding is not None and binding.value and _CPUS_WORD.search(binding.value.text):
                return True
    return False


def _srun_cpus(script: Script, context: LintContext) -> Iterator[Finding]:
    job_cpus = script.job.cpus_per_task
    setting = script.job.get("cpus-per-task")
    for srun in script.sruns:
        if srun.has("cpus-per-task", "cpus-per-gpu") or srun.has("overlap") or other_job(srun):
            continue
        if one_cpu_helper(srun) or one_thread_per_task(srun) or cpus_in_variable(srun):
            continue
        if single_threaded_build(srun):
            continue
        env = srun.env.get(SRUN_ENV)
        if env is None and context.may_not_inherit and job_cpus and job_cpus > 1:
            binding = task_binding(script, srun)
            if binding == UNBOUND:
                continue
            yield script.finding(
                srun.line,
                ERROR if binding == BOUND else WARNING,
                RULE_SRUN.id,
                _not_inherited(
                    script, srun, job_cpus, setting.line if setting else 0, context, binding
                ),
                f"{FIX}, or export {SRUN_ENV}=$SLURM_CPUS_PER_TASK before srun "
                f"(read only by {NO_INHERIT_RANGE})",
            )
        elif env is not None and context.may_inherit_again and not _the_jobs(env, job_cpus):
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


BOUND, UNBOUND, DEPENDS = "bound", "unbound", "depends"
# srun options (and the variables srun reads them from) that give the step only what it asks
# for (--exact) or bind each task to a core or thread (srun's opt.c, proc_args.c). Socket
# units (--ntasks-per-socket, --cpu-bind=sockets or ldoms) widen a task to the step's CPUs
# on its socket, which may be all of them: not certain.
_EXACT_SRUN, _EXACT_ENV = ("exact", "exclusive"), ("SLURM_EXACT", "SLURM_EXCLUSIVE")
_UNIT_SRUN = ("hint", "ntasks-per-core", "threads-per-core")
_UNIT_ENV = ("SLURM_HINT", "SLURM_NTASKS_PER_CORE", "SLURM_THREADS_PER_CORE")
# sbatch exports the job's --ntasks-per-core as SLURM_NTASKS_PER_CORE, and its --hint as
# SLURM_HINT (verify_hint, proc_args.c), which srun reads: live on the 22.05 sandbox a plain
# srun in a -c 4 job with any #SBATCH --hint ran on one CPU, on two without it.
_UNIT_JOB = ("ntasks-per-core", "hint")
# --cpu-bind words that turn binding off, and those that hold a task to one core or thread
# (rank and map_cpu:LIST name one CPU per task). mask_cpu gives what its masks say.
_BIND_OFF = frozenset({"none", "no"})
_BIND_ONE = frozenset({"cores", "threads", "rank", "map_cpu"})


def task_binding(script: Script, srun: Srun) -> str:
    """Is each task of this step held to the 1 CPU srun asks for on 22.05 to 23.02?

    Without --exact the step is whole (SSF_WHOLE) and holds every CPU of the job on the
    node. task/affinity then binds a task to its 1 CPU only under a bind unit: one set
    here is certain (BOUND); --cpu-bind=none keeps the step's whole mask (UNBOUND);
    otherwise the site's TaskPluginParam autobind or CpuBind decides (DEPENDS), and even
    one task per node is bound on such a site.
    """
    if srun.has(*_EXACT_SRUN) or any(name in srun.env for name in _EXACT_ENV):
        return BOUND
    bind = _cpu_bind(script, srun)
    if bind != DEPENDS:
        return bind
    if srun.has(*_UNIT_SRUN) or any(name in srun.env for name in _UNIT_ENV):
        return BOUND
    return BOUND if any(script.job.get(name) is not None for name in _UNIT_JOB) else DEPENDS


def _cpu_bind(script: Script, srun: Srun) -> str:
    """What --cpu-bind (or SLURM_CPU_BIND, which srun reads when the option is absent) says.

    A value from a variable this script does not spell out, a socket unit or verbosity
    alone leaves it to the site.
    """
    option = srun.option("cpu-bind", "cpu_bind")  # the old spelling still works
    env = srun.env.get("SLURM_CPU_BIND")
    if option is not None:
        value = option.value
    elif env is not None and env.value is not None:
        value = env.value.text
        if not env.value.literal:
            value = _spelled_out(script, srun, value)
            if value is None or not _masks_of_many(value):
                return BOUND  # set from a variable: some binding, which the site's CPUs fill
            return UNBOUND if script.job.whole_nodes else DEPENDS
    else:
        return DEPENDS
    if value is not None and "$" in value:
        value = _spelled_out(script, srun, value)
    if value is None:
        return DEPENDS
    if _masks_of_many(value):
        # On whole nodes every mask lies inside the job's CPUs (dist_tasks.c _validate_mask
        # clears only CPUs outside the allocation); on a shared node one may name CPUs the
        # job lacks: left to the allocation.
        return UNBOUND if script.job.whole_nodes else DEPENDS
    words = {w.split(":")[0] for w in value.strip().strip("\"'").lower().split(",")}
    if words & _BIND_OFF:
        return UNBOUND
    return BOUND if words & _BIND_ONE else DEPENDS


_REF = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")


def _spelled_out(script: Script, srun: Srun, text: str) -> str | None:
    """``text`` with each variable replaced by what this script assigned it, or None.

    Lumi's ``CPU_BIND="mask_cpu:7e..."; CPU_BIND="${CPU_BIND},7e0000"`` builds the list
    over several lines: each assignment is replayed on the value before it.
    """

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        last = srun.shell.get(name)
        if last is None or last.value is None:
            raise LookupError(name)
        built = ""
        for binding in script.bindings:
            if binding.name != name or binding.prefix or binding.line > last.line:
                continue
            if binding.value is None:
                raise LookupError(name)
            step = binding.value.text.replace(f"${{{name}}}", built).replace(f"${name}", built)
            if "$" in step:
                raise LookupError(name)
            built = step
        return built

    try:
        return _REF.sub(value_of, text.strip().strip("\"'"))
    except LookupError:
        return None


def _masks_of_many(value: str) -> bool | None:
    """--cpu-bind=mask_cpu:LIST whose every mask holds more than one CPU (or mask_ldom,
    whole NUMA domains): None when the value is no such list.

    task/affinity sets each task's mask to its entry as written (affinity.c,
    CPU_BIND_MASK), within the step's CPUs, which on 22.05 without --exact are all of
    the job's on the node: each task keeps the CPUs its mask names, not 1.
    """
    text = value.strip().strip("\"'").lower()
    for word in text.split(","):
        if word.startswith(("mask_cpu:", "mask_ldom:")):
            break
    else:
        return None
    kind, _, masks = text.partition(":")
    if kind.rsplit(",", 1)[-1] == "mask_ldom":
        return True
    counts = []
    for mask in masks.split(","):
        digits = mask.split("*")[0].strip()
        digits = digits[2:] if digits.startswith("0x") else digits
        try:
            counts.append(bin(int(digits, 16)).count("1"))
        except ValueError:
            return None
    return bool(counts) and min(counts) > 1


def _the_jobs(env: Binding, job_cpus: int | None) -> bool:
    """SRUN_CPUS_PER_TASK holds the job's own value: srun inheriting it loses nothing.

    ``export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK`` is the 22.05 workaround that
    stays right after 23.11, where srun takes the job's --cpus-per-task itself.
    """
    if env.value is None:
        return False
    text = env.value.text.strip().strip("\"'")
    if text in (f"${SLURM_ENV}", f"${{{SLURM_ENV}}}"):
        return True
    return env.value.literal and text.isdigit() and int(text) == job_cpus


def _not_inherited(
    script: Script, srun: Srun, job_cpus: int, line: int, context: LintContext, binding: str
) -> str:
    where = f" (line {script.shown(line)})" if line else ""
    effect = (
        "each task of this step is bound to 1 CPU (a core or a thread) and its threads and "
        "data loaders crawl"
        if binding == BOUND
        else "it depends on the cluster's binding: on clusters that bind tasks "
        "(TaskPluginParam autobind, CpuBind, --exact steps) each task gets 1 CPU; "
        "`slurmkit cpus check` measures yours"
    )
    message = (
        f"srun does not inherit #SBATCH --cpus-per-task={job_cpus}{where} "
        f"{context.on_versions(f'on Slurm {NO_INHERIT_RANGE}')}: {effect}"
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
    "--cpus-per-task does not reach srun (22.05-23.02 without srun -c or "
    "SRUN_CPUS_PER_TASK: error when the step binds each task, such as --exact, "
    "--cpu-bind=cores or SLURM_CPU_BIND, else warning; 23.11+: warning when relying on "
    "SRUN_CPUS_PER_TASK alone)",
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
