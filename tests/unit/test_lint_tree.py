"""lint on the bash grammar (issue 21 items 2-3, issue 17 item 4).

Job scripts in heredocs, what bash refuses, template text, and the false positives
the issue found on published scripts, each with the context that makes it right;
then the rank-quoting rule and %N in #SBATCH --output, on the seed's own examples.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from slurmkit.lint.shell import parse
from slurmkit.slurm.records import SlurmVersion

HEAD = "#!/bin/bash\n#SBATCH --time=01:00:00\n#SBATCH --output=%x-%j.out\n"


def lint(text: str, version: str | None = "22.05.8") -> list:
    context = LintContext(SlurmVersion.parse(version) if version else None)
    return lint_text(text, "t.slurm", context)


def found(text: str, version: str | None = "22.05.8") -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint(text, version)]


# ---------------------------------------------------------------- heredocs fed to sbatch

JOB = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --output=sub.log\n#SBATCH -t 5\nhostname\n"


@pytest.mark.parametrize(
    ("feed", "submit", "submit_line"),
    [
        ("sbatch <<EOF\n{job}EOF\n", "", 5),
        ("cat <<'EOF' | sbatch --parsable\n{job}EOF\n", "", 5),
        ("cat > job.sh <<EOF\n{job}EOF\n", "sbatch job.sh\n", 12),
    ],
)
def test_a_heredoc_fed_to_sbatch_is_a_job_script_of_its_own(
    feed: str, submit: str, submit_line: int
) -> None:
    text = HEAD + "echo submitting\n" + feed.format(job=JOB) + submit
    findings = lint(text)
    # Its #SBATCH lines are its header, not directives after the outer script's first command.
    assert [(f.line, f.rule) for f in findings] == [(8, "output-without-jobid")]
    (finding,) = findings
    assert (
        f"in the job script that line {submit_line} feeds to sbatch, its line 3" in finding.message
    )


def test_a_heredoc_job_script_has_its_own_mistakes() -> None:
    body = "#!/bin/bash\n#SBATCH -t 5 -c 8\nhostname\n#SBATCH -N 2\nsrun python t.py\n"
    text = HEAD + "for i in 1 2; do\nsbatch <<EOF\n" + body + "EOF\ndone\n"
    assert found(text) == [
        (9, "warning", "sbatch-directive-ignored"),
        (10, "warning", "srun-cpus-per-task"),
    ]
    error = next(f for f in lint(text) if f.rule == "srun-cpus-per-task")
    assert "--cpus-per-task=8 (line 7)" in error.message  # a line of this file
    assert "line 5 feeds to sbatch, its line 5" in error.message


def test_other_heredocs_are_not_job_scripts_nor_misplaced_directives() -> None:
    text = HEAD + "hostname\ncat > notes.txt <<EOF\n#SBATCH -N 4\nEOF\npython -c '\n#SBATCH x\n'\n"
    assert found(text) == []
    assert found(HEAD + "hostname\n#SBATCH -N 4\n") == [(5, "warning", "sbatch-directive-ignored")]


# ---------------------------------------------------------------- what bash refuses


@pytest.mark.parametrize(
    ("tail", "line", "column", "what"),
    [
        ('echo "unterminated\necho more\n', 4, 6, "double-quoted"),
        ("echo 'open\n", 4, 6, "single-quoted"),
        ("x=$(date\necho b\n", 4, 3, "$("),
        ("if true; then\n  srun -c 1 a\n", 4, 1, "if (no fi)"),
        ("for i in 1 2; do\n  echo $i\n", 4, 1, "loop (no done)"),
    ],
)
def test_an_unterminated_construct_is_one_error_with_line_and_column(
    tail: str, line: int, column: int, what: str
) -> None:
    findings = [f for f in lint(HEAD + tail) if f.rule == "bash-syntax"]
    assert [(f.line, f.severity) for f in findings] == [(line, "error")]
    assert f"line {line}, column {column}" in findings[0].message and what in findings[0].message


@pytest.mark.parametrize(
    ("middle", "line", "column", "token"),
    [
        ("srun -c 1 a )\n", 4, 13, ")"),  # a stray closing parenthesis
        ("srun -c 1 a && && echo b\n", 4, 16, "&&"),
        ("| tee log\n", 4, 1, "|"),
        ("if true; then echo a; fi\nfi\n", 5, 1, "fi"),  # an if closed twice
        ("echo a\ndone\n", 5, 1, "done"),
        ("echo a\n}\n", 5, 1, "}"),
        ("if [ -f ckpt ]\n  echo resume\nfi\n", 4, 1, "if has no then"),
        ("for i in 1 2; echo $i; done\n", 4, 1, "for has no do"),
        ("while true; sleep 1; done\n", 4, 1, "while has no do"),
    ],
)
def test_a_parse_error_in_the_middle_is_one_error_with_line_and_column(
    middle: str, line: int, column: int, token: str
) -> None:
    """bash refuses these before the first line runs ("syntax error near unexpected
    token"), though the rest of the script parses: the error is where bash stops."""
    text = HEAD + middle + "srun -c 1 python train.py\necho done\n"
    findings = [f for f in lint(text) if f.rule == "bash-syntax"]
    assert [(f.line, f.severity) for f in findings] == [(line, "error")]
    assert f"line {line}, column {column}" in findings[0].message
    assert (
        f"unexpected token `{token}'" in findings[0].message
        if " " not in token
        else token in findings[0].message
    )


@pytest.mark.parametrize(
    "middle",
    [
        "for f do echo $f; done\n",  # for NAME do: the positional parameters (grammar gap)
        "shopt -s extglob\ncase $x in\n  *:+([[:digit:]])) echo n;;\nesac\n",
        "CODE_DIR=<PATH_TO_CODE>\n",  # a placeholder to fill in: unknown, like a template
        'case $x in\n  done|fi) echo "$x";;\nesac\necho "fi" }\n',
    ],
)
def test_grammar_gaps_and_placeholders_in_the_middle_stay_unknown(middle: str) -> None:
    text = HEAD + middle + "srun -c 1 python train.py\n"
    assert [f for f in lint(text) if f.rule == "bash-syntax"] == []


def test_a_heredoc_without_its_terminator_is_bash_s_warning_on_its_first_line() -> None:
    assert found(HEAD + "cat > x.py <<EOF\nprint(1)\n") == [(4, "warning", "bash-syntax")]


@pytest.mark.parametrize(
    "line",
    [
        "if (( 8#$mode & 8#022 )); then echo w; fi",  # valid bash the grammar does not know
        'echo "${x:-a b}" $((1 + 2)) ${a[@]} <(true)',
        "case $x in a) echo a;; *) echo b;; esac",
    ],
)
def test_valid_bash_is_never_a_syntax_finding(line: str) -> None:
    assert found(HEAD + line + "\necho after\n") == []


def test_assignments_alone_on_a_line_stay_a_command_of_their_own() -> None:
    """tree-sitter-bash 0.25 joins `A=1 B=2` with the next line; bash does not."""
    parsed = parse("A=1 B=2\nexport SRUN_CPUS_PER_TASK=8\nsrun x\n")
    assert [(parsed.line_of(c.start), c.name) for c in parsed.commands] == [
        (1, None),
        (2, "export"),
        (3, "srun"),
    ]
    text = HEAD + "#SBATCH -c 8\nA=1 B=2\nexport SRUN_CPUS_PER_TASK=8\nsrun python t.py\n"
    assert found(text) == []


def test_offsets_and_lines_survive_non_ascii_text() -> None:
    text = HEAD + "#SBATCH -c 8\necho 'héllo wörld' # ünïcode\nsrun python t.py\n"
    assert found(text) == [(6, "warning", "srun-cpus-per-task")]


# ---------------------------------------------------------------- unknown, never wrong


@pytest.mark.parametrize(
    "text",
    [
        "#SBATCH --output={{ log_dir }}/run {{ name }}.out\nhostname\n",
        "#SBATCH --output=${LOG_DIR:-logs}/run.out\nhostname\n",
        "#SBATCH -N 2\nNNODES={{ nodes }}\n{% if gpus %}\nsrun -c 1 hostname\n{% endif %}\n",
        "#SBATCH -N 2\nNNODES=${NNODES:-4}\nsrun -c 1 torchrun --nnodes={{ n }} t.py\n",
    ],
)
def test_template_and_default_values_are_unknown_not_wrong(text: str) -> None:
    rules = {rule for _, _, rule in found("#!/bin/bash\n#SBATCH -t 5\n" + text)}
    assert not rules & {"output-without-jobid", "nodes-mismatch", "bash-syntax"}


def test_a_literal_output_without_job_id_is_still_found() -> None:
    assert found("#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=logs/run.out\nhostname\n") == [
        (3, "info", "output-without-jobid")
    ]


def test_a_fixed_log_name_is_a_warning_where_runs_collide() -> None:
    """Issue 32 item 2: arrays and a script that submits itself again truncate the log."""
    chain = '#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=run.out\npython t.py\nsbatch "$0"\n'
    (finding,) = [f for f in lint(chain) if f.rule.startswith("output")]
    assert (finding.severity, finding.rule) == ("warning", "output-collides")
    assert "submits itself again (line 5)" in finding.message
    assert found(chain.replace('sbatch "$0"', "sbatch other.sh")) == [
        (3, "info", "output-without-jobid")
    ]


# ---------------------------------------------------------------- background steps

RAY = """#SBATCH -N 3
nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
nodes_array=($nodes)
head_node=${nodes_array[0]}
head_node_ip=$(srun --nodes=1 --ntasks=1 -w "$head_node" hostname --ip-address)
srun --nodes=1 --ntasks=1 -w "$head_node" ray start --head --block &
sleep 10
for ((i = 1; i < SLURM_JOB_NUM_NODES; i++)); do
    node_i=${nodes_array[$i]}
    srun --nodes=1 --ntasks=1 -w "$node_i" ray start --address "$head_node_ip:6379" --block &
done
python driver.py
"""

VLLM = """#SBATCH -N 2
head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
srun -N1 -n1 -w "$head" ray start --head --block &
srun -N1 -n1 --exclude "$head" ray start --address "$head:6379" --block &
wait
"""


@pytest.mark.parametrize("body", [RAY, VLLM], ids=["ray", "vllm"])
def test_head_and_worker_steps_on_different_nodes_do_not_block(body: str) -> None:
    # ray start on 1 CPU is its own finding (launcher-cpus-per-task), not this test's
    assert [f for f in found(HEAD + body) if f[2] != "launcher-cpus-per-task"] == []


@pytest.mark.parametrize(
    "second",
    [
        "srun --overlap nvidia-smi",
        "srun --exact -n1 -c1 nvidia-smi",
    ],
)
def test_steps_that_ask_only_for_what_they_need_do_not_block(second: str) -> None:
    assert found(HEAD + "srun python train.py &\n" + second + "\n") == []
    assert found(HEAD + "srun --exact -n1 -c 2 python serve.py &\nsrun -c 1 other\n") == []


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("srun python train.py &", "srun -c 1 nvidia-smi"),
        ('srun -w "$HEAD_NODE" ray start --head &', "srun -c 1 python client.py"),
        ('srun -w "$HEAD_NODE" ray start --head &', 'srun -w "$HEAD_NODE" -c 1 python client.py'),
        ('srun --exclude "$HEAD_NODE" worker &', 'srun --exclude "$HEAD_NODE" -c 1 other'),
    ],
)
def test_steps_that_may_share_nodes_still_block(first: str, second: str) -> None:
    shown = found(HEAD + first + "\n" + second + "\n")
    # ray start on 1 CPU is its own finding (launcher-cpus-per-task), not this test's
    assert [f for f in shown if f[2] != "launcher-cpus-per-task"] == [
        (5, "info", "srun-without-overlap")
    ]


# ---------------------------------------------------------------- SRUN_CPUS_PER_TASK spellings

CPT = HEAD + "#SBATCH --cpus-per-task=8\n"


@pytest.mark.parametrize(
    "setting",
    [
        'export SRUN_CPUS_PER_TASK="${SLURM_CPUS_PER_TASK}"',
        "export SRUN_CPUS_PER_TASK=${SLURM_CPUS_PER_TASK:-1}",
        "SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK; export SRUN_CPUS_PER_TASK",
        "declare -x SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK",
        "typeset -x SRUN_CPUS_PER_TASK=8",
        "export OMP_NUM_THREADS=1 SRUN_CPUS_PER_TASK=8",
        'if [ -n "$SLURM_CPUS_PER_TASK" ]; then\n'
        "  export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK\nfi",
        "set -a\nSRUN_CPUS_PER_TASK=8\nset +a",
    ],
)
def test_srun_cpus_per_task_set_in_any_spelling_reaches_srun(setting: str) -> None:
    assert found(CPT + setting + "\nsrun python t.py\n") == []
    after = found(CPT + "srun python t.py\n" + setting + "\n")
    # the setting after the step is also the script's last command (exit-status-hidden)
    assert [f for f in after if f[2] != "exit-status-hidden"] == [
        (5, "warning", "srun-cpus-per-task")
    ]


def test_env_and_prefix_spellings_on_the_srun_itself() -> None:
    assert found(CPT + "env SRUN_CPUS_PER_TASK=8 srun python t.py\n") == []
    assert found(CPT + "SRUN_CPUS_PER_TASK=8 srun python t.py\n") == []


# ---------------------------------------------------------------- pipelines


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('echo "starting $SLURM_JOB_ID" | tee -a log', []),
        ("printf '%s\\n' a b | tee x", []),
        ("python t.py 2>&1 | tee log", [(4, "warning", "tee-without-pipefail")]),
        ("{ echo a; python t.py; } | tee log", [(4, "warning", "tee-without-pipefail")]),
        ("echo a | python filter.py | tee log", [(4, "warning", "tee-without-pipefail")]),
    ],
)
def test_tee_needs_pipefail_only_behind_a_command_that_can_fail(line: str, expected: list) -> None:
    assert found(HEAD + line + "\n") == expected


# ---------------------------------------------------------------- ranks (issue 17 item 4)

# ml-engineering-slurm.md, "test-nodes" (the seed's own, right, single quotes)
SEED_TORCH = """#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=10
#SBATCH --gres=gpu:8
export GPUS_PER_NODE=8
export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
export MASTER_PORT=6000
srun --jobid $SLURM_JOBID bash -c 'python -m torch.distributed.run \\
--nproc_per_node $GPUS_PER_NODE --nnodes $SLURM_NNODES --node_rank $SLURM_PROCID \\
--master_addr $MASTER_ADDR --master_port $MASTER_PORT \\
torch-distributed-gpu-test.py'
"""
# ml-engineering-slurm.md, the NCCL test's last lines
SEED_NCCL = """echo $LAUNCHER --node_rank $SLURM_PROCID $SCRIPT

srun --jobid $SLURM_JOBID bash -c '$LAUNCHER --node_rank $SLURM_PROCID $SCRIPT'
"""


def test_the_seed_s_single_quoted_launches_are_right() -> None:
    assert [f for f in lint(HEAD + SEED_TORCH) if f.rule == "srun-rank-expanded-early"] == []
    assert found(HEAD + SEED_NCCL) == []


def test_the_seed_s_launch_in_double_quotes_gives_every_node_rank_0() -> None:
    text = HEAD + SEED_TORCH.replace("bash -c '", 'bash -c "').replace("test.py'", 'test.py"')
    (finding,) = [f for f in lint(text) if f.rule == "srun-rank-expanded-early"]
    assert (finding.line, finding.severity) == (11, "info")
    assert "$SLURM_PROCID inside double quotes" in finding.message
    assert "single quotes" in finding.fix and "\\$SLURM_PROCID" in finding.fix
    nccl = SEED_NCCL.replace("bash -c '", 'bash -c "').replace("SCRIPT'", 'SCRIPT"')
    assert found(HEAD + "#SBATCH -N 2\n" + nccl) == [(7, "info", "srun-rank-expanded-early")]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('srun bash -c "echo $(hostname) $SLURM_NODEID"', True),
        ('srun bash -c "echo ${SLURM_LOCALID}"', True),
        ("srun python t.py --node_rank $SLURM_PROCID", True),
        ('srun bash -c "echo \\$SLURM_PROCID \\$(hostname)"', False),
        ("srun bash -c 'echo $SLURM_PROCID $(hostname)'", False),
        ('srun -n1 bash -c "echo $SLURM_PROCID"', False),  # one task: rank 0 is right
        ('srun -n1 -w "$node" bash -c "echo $(hostname)"', True),  # not the first node
        ('srun -N1 -n4 bash -c "echo $(hostname) $SLURM_NODEID"', False),  # one node
        ('srun -N1 -n4 bash -c "echo $SLURM_LOCALID"', True),  # four tasks there
        ('echo "$SLURM_PROCID"', False),  # the batch step's own rank
    ],
)
def test_per_task_values_expanded_by_the_batch_shell(line: str, expected: bool) -> None:
    rules = {rule for _, _, rule in found(HEAD + "#SBATCH -N 2\n" + line + "\n")}
    assert ("srun-rank-expanded-early" in rules) is expected


def test_a_job_of_slurm_s_default_one_task_gets_rank_0_right() -> None:
    """Issue 32 item 2: a header with no node or task count is one task on one node."""
    line = 'srun bash -c "echo $(hostname) $SLURM_PROCID"\n'
    assert found(HEAD + line) == []
    assert found(HEAD + "#SBATCH -n 4\n" + line) == [(5, "info", "srun-rank-expanded-early")]
    # without any #SBATCH line the counts come from sbatch's command line: unknown
    assert found("#!/bin/bash\n" + line) == [(2, "info", "srun-rank-expanded-early")]


def test_a_per_task_value_through_a_variable() -> None:
    text = (
        HEAD + '#SBATCH -N 2\nCMD="torchrun --node_rank=$SLURM_NODEID t.py"\n'
        'srun -c 1 bash -c "$CMD"\n'
    )
    (finding,) = [f for f in lint(text) if f.rule == "srun-rank-expanded-early"]
    assert finding.line == 6 and "assigned on line 5" in finding.message
    quiet = HEAD + "CMD='torchrun --node_rank=$SLURM_NODEID t.py'\nsrun -c 1 bash -c \"$CMD\"\n"
    assert [f for f in lint(quiet) if f.rule == "srun-rank-expanded-early"] == []


def test_percent_n_in_the_batch_output_names_the_first_node_only() -> None:
    # ml-engineering-slurm.md, "Logging": the seed's own advice
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=%x-%j-%N.out\nhostname\n"
    assert found(text) == [(3, "info", "output-per-node")]  # issue 32 item 2: harmless
    (finding,) = lint(text)
    assert "first node only" in finding.message and "srun --output=%x-%j-%N.out" in finding.fix
    # the seed's srun --output=trace-%N.out is per node, and right
    step = (
        HEAD
        + "srun --gres=gpu:0 --nodes=40 --tasks-per-node=1 --output=trace-%N.out sh -c 'date'\n"
    )
    assert found(step) == []


def test_a_launcher_in_a_submitted_heredoc_belongs_to_that_job_only() -> None:
    body = (
        "#!/bin/bash\n#SBATCH -t 5 -N 2 --ntasks-per-node=4 --gres=gpu:8 -c 32\n"
        "srun -c 32 torchrun --nnodes=2 --rdzv_backend=c10d --nproc_per_node=8 t.py\n"
    )
    text = "#!/bin/bash\n#SBATCH -t 5\nsbatch <<'EOF'\n" + body + "EOF\n"
    assert found(text) == [(6, "error", "launcher-tasks-per-node")]
    (finding,) = lint(text)
    assert "line 3 feeds to sbatch, its line 3" in finding.message


def test_a_comment_after_code_is_not_read_as_options() -> None:
    head = HEAD + "#SBATCH --nodes=2 --ntasks-per-node=1 -c 32 --gres=gpu:8\n"
    line = "srun -c 32 torchrun --nnodes=2 --rdzv_backend=c10d t.py  # was --nnodes 4\n"
    assert found(head + line) == []
    assert found(head + line.replace("--nnodes=2", "--nnodes=3")) == [
        (5, "error", "nodes-mismatch")
    ]
