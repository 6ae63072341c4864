"""Round eight of issue 32, srun-cpus-per-task: what the eighth test part showed once read.

Each class below is a step that loses nothing when srun asks 1 CPU for its task on 22.05
(or never runs); each test also keeps the right finding the class resembles.
"""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V22 = LintContext(SlurmVersion.parse("22.05"))
RULE = "srun-cpus-per-task"
HEADER = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=16\n"


def _cpus(body: str, header: str = HEADER) -> list[tuple[int, str]]:
    """(line, severity) of every srun-cpus-per-task finding at 22.05."""
    found = lint_text(header + body, "t.sh", V22)
    return [(f.line, f.severity) for f in found if f.rule == RULE]


def test_docker_client_steps_are_not_judged() -> None:
    """The docker client asks dockerd to run or exec; the container's processes are
    children of containerd-shim, outside the step's CPU mask, so 1 CPU costs nothing.
    A container run by a wrapper that stays under the step (podman, apptainer) still
    counts."""
    assert _cpus("srun -N1 -n1 bash -lc \"docker exec -d box bash '/w/prefill.sh'\"\n") == []
    assert _cpus("srun -N1 -n1 docker run --rm img python train.py\n") == []
    assert _cpus("srun -N1 -n1 podman run --rm img python train.py\n") == [(5, "warning")]
    assert _cpus('srun -N1 -n1 bash -lc "python train.py"\n') == [(5, "warning")]


def test_shell_strings_of_single_threaded_tools() -> None:
    """awk, curl, and the rest of a `$(...)` sum or test are no CPU-hungry program: an
    address lookup or a readiness loop needs one CPU."""
    lookup = "IP=$(srun -N1 -n1 bash -c \"ip route get 1.1.1.1 | awk '/src/ {print \\$7}'\")\n"
    assert _cpus(lookup) == []
    wait = (
        'srun -N1 -n1 bash -lc "\n'
        "  deadline=\\$(( \\$(date +%s) + 600 ))\n"
        "  while ! curl -sf http://h:8000/health; do\n"
        "    if [[ \\$(date +%s) -ge \\$deadline ]]; then exit 1; fi\n"
        "    sleep 10\n"
        "  done\n"
        '"\n'
    )
    assert _cpus(wait) == []
    assert _cpus('srun -N1 -n1 bash -c "curl -sf http://h/x && python serve.py"\n') == [
        (5, "warning")
    ]


def test_tar_is_one_cpu_unless_told_to_use_a_threaded_compressor() -> None:
    """tar -z runs gzip, one thread; -I pigz, --zstd or -J (xz, threaded from 5.4) may
    use more, so those steps are still judged."""
    assert _cpus("srun -n1 tar -xzf env.tar.gz -C /tmp/env\n") == []
    assert _cpus("srun -n1 tar xzf env.tar.gz\n") == []
    assert _cpus("srun -n1 conda-unpack\n") == []
    assert _cpus("srun -n1 tar -I pigz -xf env.tar.gz\n") == [(5, "warning")]
    assert _cpus("srun -n1 tar -xJf env.tar.xz\n") == [(5, "warning")]


def test_amrex_build_without_openmp_runs_one_thread_per_rank() -> None:
    """AMReX's make names the executable after its options and writes `.OMP` only when
    built with OpenMP (Tools/GNUMake/Make.defs); without it OMP_NUM_THREADS changes
    nothing, even for a step bound to one core. With `.OMP` the error stays."""
    body = "export OMP_NUM_THREADS=5\nsrun --cpu_bind=cores {exe} inputs\n"
    assert _cpus(body.format(exe="./main3d.gnu.DEBUG.TPROF.MPI.CUDA.ex")) == []
    through = "EXE=./main3d.gnu.TPROF.MPI.CUDA.ex\nsrun ${EXE} inputs\n"
    assert _cpus(through) == []
    assert _cpus(body.format(exe="./main3d.gnu.MPI.OMP.ex")) == [(6, "error")]


def test_one_thread_from_a_variable_set_to_one() -> None:
    """`threads=1; export OMP_NUM_THREADS=${threads}` asks for one thread as plainly as
    the literal; a variable holding more, or set outside the script, does not."""
    body = "threads={n}\nexport OMP_NUM_THREADS=${{threads}}\nsrun ./vasp_std\n"
    assert _cpus(body.format(n=1)) == []
    assert _cpus(body.format(n=4)) == [(7, "warning")]
    assert _cpus("export OMP_NUM_THREADS=${THREADS}\nsrun ./vasp_std\n") == [(6, "warning")]


def test_steps_in_functions_the_script_never_calls() -> None:
    """A batch script is run, not sourced: a function it never names never runs. A call,
    a mention, or a command built at run time ("$@", eval) may run it."""
    ray = 'ray-launcher() {\n  srun -N1 -n1 ray start --head --block &\n  bash -c "$1"\n}\n'
    other = "torch-launcher() {\n  srun -c 16 torchrun train.py\n}\n"
    assert _cpus(ray + other + "torch-launcher\n") == []
    assert _cpus(ray + other + "ray-launcher 'python tune.py'\n") == [(6, "warning")]
    assert _cpus(ray + other + '"$@"\n') == [(6, "warning")]
    assert _cpus(ray + 'eval "$LAUNCHER"\n') == [(6, "warning")]


def test_one_thread_subcommands_of_threaded_tools() -> None:
    """`ray stop` signals the node's Ray processes and `pip install` unpacks wheels: one
    thread each. `ray start` (the raylet and its workers) and pip's unknown verbs are
    still judged."""
    assert _cpus("srun --nodes=1 --ntasks=1 ray stop\n") == []
    assert _cpus("srun pip install -e .\n") == []
    assert _cpus("srun -n1 pip3 install --user torch\n") == []
    assert _cpus("srun -n1 ray start --head --block\n") == [(5, "warning")]
    assert _cpus("srun -n1 pip wheel-builder .\n") == [(5, "warning")]
    assert _cpus("srun -n1 pip\n") == [(5, "warning")]
