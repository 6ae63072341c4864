"""Round eight of issue 32, steps and launchers: what the eighth test part showed, once it
was scored and read. Each test pins the class a wrong finding belonged to, and the right
finding it resembles, which must still be made."""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V22 = LintContext(SlurmVersion.parse("22.05"))


def _rules(text: str, context: LintContext = V22) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.sh", context)]


def _of(text: str, rule: str) -> list[tuple[int, str]]:
    return [(line, severity) for line, severity, found in _rules(text) if found == rule]


HEAD = "#!/bin/bash\n#SBATCH -t 30\n#SBATCH -o %x-%j.out\n"


# --- step-exceeds-job ----------------------------------------------------------------

STEPS = HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n"


def test_a_step_after_an_exit_that_always_runs_is_never_started() -> None:
    """bash ends the script at a top-level ``exit``: a block kept after it (commbench's
    sweep behind ``exit``) starts no step, so srun never refuses it. The step before the
    exit is still judged."""
    text = STEPS + "srun -N 4 ./bench 1\nexit\n\nsrun -N 4 ./bench 2\n"
    assert _of(text, "step-exceeds-job") == [(6, "error")]


def test_an_exit_in_a_branch_or_a_loop_ends_nothing_for_sure() -> None:
    """An ``exit`` in an if, a loop or after ``||`` runs only sometimes: the steps after
    it may run, and a step larger than the job is still an error."""
    for guard in (
        'if [ -z "$X" ]; then\n  exit 1\nfi\n',
        "for i in 1 2; do\nexit\ndone\n",
        "test -f x || exit 1\n",
    ):
        text = STEPS + guard + "srun -N 4 ./bench\n"
        lines = [line for line, _ in _of(text, "step-exceeds-job")]
        assert lines == [len(text.splitlines())], guard


# --- gpu-program-without-gpus --------------------------------------------------------

VLLM = "python -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 8\n"


def test_a_step_asking_for_its_own_gpus_is_written_for_whole_node_sites() -> None:
    """``srun --gpus-per-task=8`` in a job that asks for no GPU: on a partition with
    OverSubscribe=EXCLUSIVE (Frontier's) slurmctld gives the job every GRES of its nodes
    (node_scheduler.c: _handle_exclusive_gres), as for --exclusive; the step takes its
    GPUs from them. The same server without a GPU option anywhere is still warned about."""
    job = HEAD + "#SBATCH -N 1\n"
    asked = job + "srun -N1 -n1 -c56 --gpus-per-task=8 --gpu-bind=closest " + VLLM
    assert _of(asked, "gpu-program-without-gpus") == []
    assert _of(job + "srun -N1 -n1 -c56 " + VLLM, "gpu-program-without-gpus") == [(5, "info")]


def test_a_usage_comment_that_gives_sbatch_the_gpus() -> None:
    """A header that documents its submission with GPUs on sbatch's command line
    (``# sbatch --gpus-per-node=N … job.sbatch``) is given them there. A usage line
    without GPUs, and a lower-case ``#sbatch`` directive, do not count."""
    body = "#SBATCH -N 1\nsrun " + VLLM
    usage = "#!/bin/bash\n# Calling spec:\n#   sbatch --job-name=x --gpus-per-node=N job.sbatch\n"
    assert _of(usage + body, "gpu-program-without-gpus") == []
    plain = "#!/bin/bash\n# Calling spec:\n#   sbatch --job-name=x job.sbatch\n"
    assert _of(plain + body, "gpu-program-without-gpus") == [(5, "info")]


# --- gpus-per-node-mismatch ----------------------------------------------------------

ONE_GPU = HEAD + "#SBATCH -N 1\n#SBATCH --gpus-per-node=1\n"


def test_a_converters_target_tensor_parallel_size_needs_no_gpus() -> None:
    """Megatron's checkpoint converter writes a checkpoint split for TARGET_TP ranks, on a
    CPU if need be: no rank runs per GPU. vLLM's --tensor-parallel-size over the job's
    GPUs is still an error."""
    convert = "python convert.py --saver mcore --target-tensor-parallel-size ${TP}\n"
    assert _of(ONE_GPU + "TP=2\n" + convert, "gpus-per-node-mismatch") == []
    serve = "vllm serve m --tensor-parallel-size ${TP}\n"
    assert _of(ONE_GPU + "TP=2\n" + serve, "gpus-per-node-mismatch") == [(6, "info")]


def test_an_mpi_programs_own_num_gpus_is_no_worker_count() -> None:
    """``mpirun -n $SLURM_NTASKS ./heat3d --num_gpus 3``: mpirun's ranks are the
    workers; the program's --num_gpus (Kokkos: the devices to spread ranks over) starts
    none. deepspeed's --num_gpus starts one worker per GPU and is still judged."""
    mpi = "mpirun -n ${SLURM_NTASKS} ./heat3d --device 0 --num_gpus 3\n"
    assert _of(ONE_GPU + mpi, "gpus-per-node-mismatch") == []
    deepspeed = "deepspeed --num_gpus 3 train.py\n"
    assert _of(ONE_GPU + deepspeed, "gpus-per-node-mismatch") == [(6, "info")]


# --- nodes-mismatch ------------------------------------------------------------------


def test_a_node_count_nothing_reads() -> None:
    """``export NNODES=4`` in a two-node test script that runs only ``srun echo``: no
    launcher starts and nothing expands it, so no one waits for nodes. Once the script
    reads it (or runs a launcher) the mismatch is an error again."""
    job = HEAD + "#SBATCH -N 2\n#SBATCH --ntasks=4\nexport NNODES=4\n"
    assert _of(job + "srun echo up\n", "nodes-mismatch") == []
    used = job + 'srun python serve.py --nodes "$NNODES"\n'
    assert _of(used, "nodes-mismatch") == [(6, "error")]


# --- signal-without-trap -------------------------------------------------------------


SIGNAL = HEAD + "#SBATCH -N 1\n#SBATCH --signal=B:2@300\n"
TRAP = "trap 'kill -9 $pid; clean_up; exit 1' SIGTERM SIGINT\n"


def test_a_wait_for_work_a_sourced_helper_starts() -> None:
    """``source funcs.sh`` defines run_orca, which starts the program with ``&`` (the
    trap kills its ``$pid``); the script then waits. bash runs a trap at once when the
    signal comes to ``wait`` (checked with bash 5: the handler ran within a second of
    SIGINT, while the background sleep had 3 s to go). Without the helper there is no
    background work to wait for, and the trap behind a foreground command is warned of."""
    helper = SIGNAL + "source ${HTVSDIR}/orca_bash_funcs.sh\n" + TRAP + "run_orca\nwait\n"
    assert _of(helper, "signal-without-trap") == []
    alone = SIGNAL + TRAP + "./orca input.inp\nwait\n"
    assert _of(alone, "signal-without-trap") == [(6, "warning")]


# --- launcher-outside-srun -----------------------------------------------------------

FOUR = HEAD + "#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
FINALIZE = "torchrun --nproc_per_node 4 -m examples.less.less\n"


def test_a_one_node_phase_after_steps_over_every_node() -> None:
    """bergson's pipeline: an srun over the four nodes builds the indices, then one
    torchrun with no --nnodes (torchrun's default is 1: no rendezvous waits for others)
    scores on the head node. Meant, not a launcher left out of srun. The same torchrun
    with no step over the nodes, or one told of 4 nodes, still gets the warning."""
    phases = FOUR + "srun bash worker.sh\n" + FINALIZE
    assert _of(phases, "launcher-outside-srun") == []
    assert _of(FOUR + FINALIZE, "launcher-outside-srun") == [(7, "info")]
    four = FINALIZE.replace("torchrun", "torchrun --nnodes=4")
    assert _of(FOUR + "srun bash worker.sh\n" + four, "launcher-outside-srun") == [(8, "info")]


def test_a_programs_own_gpus_beyond_the_one_node_job() -> None:
    """openfold's ``python3 train_openfold.py … --gpus 2`` (Lightning's devices per node)
    in a one-node job with ``--gpus=1``: Slurm shows the program one GPU and the trainer
    stops. Found now (a missed label). As many as the job has, srun's own --gpus (Slurm's
    step total) and a job on several nodes are not judged."""
    job = HEAD + "#SBATCH -N 1\n#SBATCH --gpus=1\n"
    assert _of(job + "python3 train.py data --gpus 2\n", "gpus-per-node-mismatch") == [(6, "info")]
    assert _of(job + "python3 train.py data --gpus 1\n", "gpus-per-node-mismatch") == []
    assert _of(job + "srun --gpus 2 python3 train.py\n", "gpus-per-node-mismatch") == []
    nodes = HEAD + "#SBATCH -N 2\n#SBATCH --gpus-per-node=1\n"
    assert _of(nodes + "python3 train.py --gpus 4 --num_nodes 2\n", "gpus-per-node-mismatch") == []


def test_a_trainer_told_of_the_nodes_but_run_once() -> None:
    """openfold's ``python train_openfold.py … --gpus 4 --num_nodes 4`` in the batch step
    of a 4-node job with no srun: the trainer (Lightning's num_nodes, passed through)
    runs on the first node alone and waits for ranks nothing starts. Found now (a missed
    label). Run by srun, told of one node, or with mpirun in the script: not judged."""
    job = HEAD + "#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=4\n"
    run = "python train.py data --gpus 4 --num_nodes 4\n"
    assert _of(job + run, "launcher-outside-srun") == [(6, "info")]
    assert _of(job + "srun " + run, "launcher-outside-srun") == []
    assert _of(job + run.replace("--num_nodes 4", "--num_nodes=1"), "launcher-outside-srun") == []
    assert _of(job + "mpirun -n 16 ./prep\n" + run, "launcher-outside-srun") == []
