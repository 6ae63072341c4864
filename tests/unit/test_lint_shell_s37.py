"""Shell and Slurm semantics behind the rules fixed from the spent second hold-out (issue 32).

Each case is a small synthetic script: the defect class, not one published file.
"""

from __future__ import annotations

from slurmkit.lint import LintContext, lint_text
from slurmkit.lint.explain import EXPLAIN
from slurmkit.lint.rules import RULE_IDS
from slurmkit.slurm.records import SlurmVersion

SIZED = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:2\n#SBATCH --time=10\n"


def found(text: str, rule: str, version: str = "24.11") -> list[tuple[int, str]]:
    context = LintContext(SlurmVersion.parse(version))
    return [(f.line, f.severity) for f in lint_text(text, "t.slurm", context) if f.rule == rule]


# slurm-variable-unset


def test_slurm_gpus_is_unset_without_gpus_even_where_the_script_tests_it() -> None:
    # sbatch sets SLURM_GPUS only for --gpus (env.c set_env_from_opts); --gres=gpu:2 sizes the
    # job in the header, so the test always takes its exit branch.
    text = SIZED + 'if [ -z "$SLURM_GPUS" ]; then\n  exit 0\nfi\nsrun python t.py\n'
    assert found(text, "slurm-variable-unset") == [(5, "info")]
    gpus = text.replace("--gres=gpu:2", "--gpus=2")
    assert found(gpus, "slurm-variable-unset") == []


def test_a_header_that_sizes_nothing_leaves_the_size_to_the_command_line() -> None:
    # A wrapper runs `sbatch -N4 --ntasks-per-node=8 -c 6 job.sh`: the header names no size.
    head = "#!/bin/bash\n#SBATCH -p gpu\n#SBATCH --exclusive\n#SBATCH --output=t.%J.out\n"
    use = 'python t.py "${SLURM_NTASKS_PER_NODE}" "${SLURM_CPUS_PER_TASK}"\nsrun ./a.out\n'
    assert found(head + use, "slurm-variable-unset") == []
    sized = head + "#SBATCH --nodes=2\n" + use
    assert [line for line, _ in found(sized, "slurm-variable-unset")] == [6, 6]


# srun-rank-expanded-early


def test_hostname_given_as_the_controllers_location_is_the_first_node_on_purpose() -> None:
    # ipengine --location names the controller the batch step started: every engine needs
    # the first node's name there.
    head = "#!/bin/bash\n#SBATCH --nodes=4\n"
    text = head + 'ipcontroller --ip="*" &\nsrun ipengine --location=$(hostname -f) &\nwait\n'
    assert found(text, "srun-rank-expanded-early") == []
    url = head + "srun python t.py --dist-url tcp://$(hostname):23456\n"
    assert found(url, "srun-rank-expanded-early") == []
    own = head + "srun python t.py --name=$(hostname)\n"
    assert found(own, "srun-rank-expanded-early") == [(3, "info")]


def test_a_server_variable_set_from_hostname_names_the_first_node() -> None:
    head = "#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=2\n"
    text = head + 'SERVER=$(hostname)\nsrun bash -c "client --connect $SERVER:9999"\n'
    assert found(text, "srun-rank-expanded-early") == []
    node = head + 'HERE=$(hostname)\nsrun bash -c "client --name $HERE"\n'
    assert found(node, "srun-rank-expanded-early") == [(5, "info")]


# signal-without-trap

HEAD = "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH --nodes=1\n"


def test_a_trap_for_a_signal_sent_to_the_steps_only_never_runs() -> None:
    # Without B: slurmctld signals with KILL_STEPS_ONLY: the batch shell never gets USR1.
    text = HEAD + "#SBATCH --signal=USR1@120\ntrap 'scontrol requeue $SLURM_JOB_ID' USR1\n"
    text += "python train.py\n"
    assert found(text, "signal-without-trap") == [(4, "error")]
    batch = text.replace("--signal=USR1", "--signal=B:USR1").replace(
        "python train.py", "python train.py &\nwait"
    )
    assert found(batch, "signal-without-trap") == []
    no_trap = HEAD + "#SBATCH --signal=USR1@120\nsrun python train.py\n"
    assert found(no_trap, "signal-without-trap") == []  # the step's own handler


def test_sigint_does_not_kill_bash_behind_a_foreground_command() -> None:
    # bash defers SIGINT while it waits for a foreground child and dies only if the child
    # died of it; under B: the child never gets it. Only the wait builtin lets it through.
    text = HEAD + "#SBATCH --signal=B:SIGINT@300\n./run.sh &\n./execute.sh --cfg a\n"
    assert found(text, "signal-without-trap") == []
    waits = HEAD + "#SBATCH --signal=B:SIGINT@300\nsrun ./execute.sh &\nwait\n"
    assert found(waits, "signal-without-trap") == [(4, "error")]


def test_an_execd_program_or_a_sourced_file_may_handle_the_batch_signal() -> None:
    base = HEAD + "#SBATCH --signal=B:USR1@120\n"
    assert found(base + "exec python train.py\n", "signal-without-trap") == []
    assert found(base + "source ./requeue.sh\nsrun x &\nwait\n", "signal-without-trap") == []
    assert found(base + "exec > log 2>&1\nsrun x &\nwait\n", "signal-without-trap") == [
        (4, "error")
    ]


# tee-without-pipefail


def test_a_tee_pipeline_whose_failure_is_tolerated_on_purpose() -> None:
    text = HEAD + 'mpirun -n 4 ./a.out \\\n  |& tee run.log \\\n  || echo "WARN: run failed"\n'
    assert found(text, "tee-without-pipefail") == []
    plain = HEAD + "mpirun -n 4 ./a.out |& tee run.log\necho done\n"
    assert found(plain, "tee-without-pipefail") == [(4, "warning")]
    exits = HEAD + "mpirun -n 4 ./a.out | tee run.log || exit 1\n"
    assert found(exits, "tee-without-pipefail") == [(4, "warning")]


def test_a_best_effort_script_goes_on_past_failures_by_design() -> None:
    body = (
        "python profile.py | tee p.log\n"
        'ls trace*.json || echo "WARN: no traces"\n'
        'python merge.py || echo "WARN: merge failed"\n'
    )
    assert found(HEAD + body, "tee-without-pipefail") == []
    assert found(HEAD + "set -e\n" + body, "tee-without-pipefail") == [(5, "warning")]


# assignment-with-spaces


def test_blanks_around_equals_run_a_command_instead_of_assigning() -> None:
    text = HEAD + "OUT = /scratch/run\n$root = /data\nexport LR = 0.1\nmkdir -p $OUT\n"
    assert found(text, "assignment-with-spaces") == [(4, "error"), (5, "error"), (6, "error")]
    fine = HEAD + "OUT=/scratch/run\nfor ((i = 1; i <= 4; i++)); do echo $i; done\n"
    fine += '[ "$a" = "$b" ] && test "$a" = x\nlog() { echo "$@"; }\nlog = done\n'
    assert found(fine, "assignment-with-spaces") == []


# unset-variable-option


def test_a_lowercase_name_set_nowhere_loses_its_option_or_decides_a_test() -> None:
    text = HEAD + "head_node_ip=$(hostname -i)\n"
    text += 'if [[ ! -n "$head_node_io" ]]; then exit 1; fi\n'
    text += "python run.py --root $data_root --ip $head_node_ip\n"
    assert found(text, "unset-variable-option") == [(5, "info"), (6, "info")]
    set_by_read = HEAD + "read -r data_root < cfg\npython run.py --root $data_root\n"
    assert found(set_by_read, "unset-variable-option") == []
    loops = HEAD + "for lr in 1 2; do python run.py --lr $lr; done\n"
    assert found(loops, "unset-variable-option") == []
    upper = HEAD + "python run.py --root $DATA_ROOT --p ${data:-x}\n"
    assert found(upper, "unset-variable-option") == []
    activate = HEAD + "source venv/bin/activate\npython run.py --root $data_root\n"
    assert found(activate, "unset-variable-option") == [(5, "info")]
    config = HEAD + "source config.sh\npython run.py --root $data_root\n"
    assert found(config, "unset-variable-option") == []


# option-as-command and continued-into-command: a continuation lost or one too many


def test_a_redirection_line_after_a_lost_backslash_redirects_nothing() -> None:
    text = HEAD + "python -m server \\\n    --port 8000 \\\n    --tp 8\n    > server.log 2>&1 &\n"
    assert found(text, "option-as-command") == [(7, "error")]
    fine = HEAD + "python -m server \\\n    --tp 8 \\\n    > server.log 2>&1 &\n> empty.log\n"
    assert found(fine, "option-as-command") == []


def test_the_same_program_on_a_continued_line_was_meant_as_the_next_command() -> None:
    text = HEAD + 'samtools view -hbu "$in" \\\n    samtools sort -o "$out" -\nsamtools index x\n'
    assert found(text, "continued-into-command") == [(5, "info")]
    piped = text.replace('"$in" \\\n', '"$in" | \\\n')
    assert found(piped, "continued-into-command") == []
    wrapped = HEAD + "srun -n 2 \\\n    srun hostname\ntime \\\n  time ls\n"
    assert found(wrapped, "continued-into-command") == []


def test_a_step_of_one_node_and_one_task_per_node_is_one_task() -> None:
    head = "#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\n"
    one = head + 'srun -N1 --ntasks-per-node=1 bash -c "run --rank $SLURM_PROCID"\n'
    assert found(one, "srun-rank-expanded-early") == []
    many = head + 'srun -N1 --ntasks-per-node=2 bash -c "run --rank $SLURM_PROCID"\n'
    assert found(many, "srun-rank-expanded-early") == [(4, "info")]


def test_a_comment_line_ends_a_continued_command() -> None:
    # bash joins the backslash's line with the comment, which ends the command there.
    text = HEAD + "samtools view -hbu in.bam \\\n# sort next\nsamtools sort -o out.bam -\n"
    assert found(text, "continued-into-command") == []


def test_sourcing_an_environment_sets_no_trap() -> None:
    base = HEAD + "#SBATCH --signal=B:USR1@120\n"
    for setup in ("source venv/bin/activate", ". ~/.bashrc", "source /etc/profile"):
        text = base + setup + "\nsrun x &\nwait\n"
        assert found(text, "signal-without-trap") == [(4, "error")], setup


def test_silencing_with_or_true_is_no_best_effort_design() -> None:
    body = "module load cuda || true\nrm -f old.log || true\nsrun python t.py | tee t.log\n"
    assert found(HEAD + body, "tee-without-pipefail") == [(6, "warning")]


def test_a_script_that_signals_itself_needs_no_b_flag() -> None:
    text = HEAD + "#SBATCH --signal=USR1@120\ntrap 'scontrol requeue $SLURM_JOB_ID' USR1\n"
    timer = text + "(sleep 3000; kill -USR1 $$) &\npython train.py &\nwait\n"
    assert found(timer, "signal-without-trap") == []
    other = text + "rm -f /tmp/x_$$\npython train.py &\nwait\n"
    assert found(other, "signal-without-trap") == [(4, "error")]


def test_in_a_best_effort_script_the_last_pipeline_is_the_jobs_status() -> None:
    body = (
        'ls trace*.json || echo "WARN: no traces"\n'
        'python merge.py || echo "WARN: merge failed"\n'
        "python profile.py | tee p.log\n"
        'echo "done"\n'
    )
    assert found(HEAD + body, "tee-without-pipefail") == [(6, "warning")]


def test_the_new_kinds_are_rules_with_explanations() -> None:
    for rule in ("assignment-with-spaces", "unset-variable-option"):
        assert rule in RULE_IDS and all(EXPLAIN[rule]), rule
