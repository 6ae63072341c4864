"""Variable and lifecycle rules fixed from the spent sixth hold-out (issue 32): a script
that checks or defaults its own inputs takes them from the submitting shell on purpose, and
one that exits right after submitting itself never overlaps its next run."""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V = LintContext(SlurmVersion.parse("24.11.5"))
HEAD = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 1\n"
UNSET = "unset-variable-option"


def rules(text: str) -> set[tuple[int, str]]:
    return {(f.line, f.rule) for f in lint_text(text, "t.slurm", V)}


def test_an_input_checked_for_emptiness_is_no_defect_anywhere() -> None:
    text = HEAD + (
        'if [ ! -n "$project" ]; then\n    echo "an input is missing"\n'
        "    exit 1\nfi\nrun.py -P $project\n"
    )
    assert not {line for line, rule in rules(text) if rule == UNSET}


def test_an_optional_input_tested_then_given_is_no_defect() -> None:
    text = HEAD + (
        'if [ -z "${quant_dir}" ]; then\n    run.py --config c\n'
        "else\n    run.py --config c --quant-dir ${quant_dir}\nfi\n"
    )
    assert not {line for line, rule in rules(text) if rule == UNSET}


def test_an_emptiness_test_of_a_slip_of_a_set_name_is_still_found() -> None:
    text = HEAD + (
        "head_node_ip=$(hostname -i)\n"
        'if [[ ! -n "$head_node_io" ]]; then\n    echo "no IP"\n    exit 1\nfi\n'
        "srun serve --host $head_node_ip\n"
    )
    assert (5, UNSET) in rules(text)


def test_a_comparison_with_an_unset_name_is_still_found() -> None:
    text = HEAD + 'if [ "$mode" = train ]; then\n    srun python train.py\nfi\n'
    assert (4, UNSET) in rules(text)


def test_a_word_after_an_option_with_its_value_is_no_value() -> None:
    text = HEAD + "srun python t.py --seed=1 $extra\n"
    assert not {line for line, rule in rules(text) if rule == UNSET}
    assert (4, UNSET) in rules(HEAD + "srun python t.py --seed $extra\n")


def test_a_name_the_script_handles_when_unset_is_no_defect() -> None:
    text = HEAD + (
        'if [ ! -z ${force+x} ] && [ "$force" = true ]; then\n    rm -f out\nfi\nsrun python t.py\n'
    )
    assert not {line for line, rule in rules(text) if rule == UNSET}


def test_a_script_defaulting_its_own_lowercase_inputs_takes_them_from_sbatch() -> None:
    text = HEAD + "seed=${seed:-0}\nsrun python t.py --seed $seed --headless $args\n"
    assert not {line for line, rule in rules(text) if rule == UNSET}


def test_an_emptiness_test_that_goes_on_with_the_empty_value_is_still_found() -> None:
    text = HEAD + 'if [ -z "$steps" ]; then\n    echo none\nfi\nsrun ./a.out --steps "$steps"\n'
    assert (4, UNSET) in rules(text)


def test_a_use_outside_the_test_guarding_another_is_still_found() -> None:
    text = HEAD + (
        'if [ -n "$ckpt" ]; then\n    srun python t.py --resume $ckpt\nfi\n'
        "srun python eval.py --ckpt $ckpt\n"
    )
    assert (4, UNSET) in rules(text)


RESUBMIT = "resubmit-without-dependency"
SELF = HEAD + 'if [ -f again ]; then\n    sbatch "$0"{after}\nfi\nsrun python train.py\n'


def test_a_submission_followed_by_exit_is_the_runs_last_act() -> None:
    assert RESUBMIT not in {rule for _, rule in rules(SELF.format(after="\n    exit"))}


def test_a_submission_that_exits_only_when_it_failed_is_still_found() -> None:
    assert (5, RESUBMIT) in rules(SELF.format(after=" || exit 1"))
    assert (5, RESUBMIT) in rules(SELF.format(after="\n    [ -f stop ] && exit"))


def test_an_unset_name_given_to_an_option_in_a_stored_command_line() -> None:
    text = (
        HEAD
        + 'CMD="./launch.sh --epochs 1 \\\n    --head_node_ip $head_ip \\\n"\nsrun bash -c "$CMD"\n'
    )
    assert (5, UNSET) in rules(text)
    assert UNSET not in {r for _, r in rules(text.replace("$head_ip", "${head_ip:-x}"))}


TEE = "tee-without-pipefail"
TRIAL_LOOP = HEAD + (
    'for trial in $(seq 1 "$NEXP"); do\n'
    '    (\n        echo "trial $trial of $NEXP"\n        srun python train.py{arg}\n'
    '    ) |& tee "log_${{trial}}.txt"\ndone\n'
)


def test_the_same_run_repeated_into_a_log_each_as_the_last_command() -> None:
    assert TEE not in {r for _, r in rules(TRIAL_LOOP.format(arg=""))}


def test_a_loop_whose_variable_reaches_the_run_is_still_judged() -> None:
    assert (8, TEE) in rules(TRIAL_LOOP.format(arg=" --seed $trial"))


WAITED = "background-never-waited"


def test_runs_beside_a_foreground_run_of_the_same_program_may_be_killed() -> None:
    runs = "".join(f"python3 main.py --p {p} --cuda_devices {i} &\n" for i, p in enumerate((1, 2)))
    found = lint_text(HEAD + runs + "python3 main.py --p 10 --cuda_devices 3\n", "t.slurm", V)
    assert {(f.line, f.rule, f.severity) for f in found if f.rule == WAITED} == {
        (4, WAITED, "warning"),
        (5, WAITED, "warning"),
    }


def test_a_foreground_step_of_other_work_keeps_the_background_run() -> None:
    text = HEAD + "python3 monitor.py &\npython3 train.py --epochs 3\n"
    assert WAITED not in {r for _, r in rules(text)}


def test_a_training_left_in_the_background_at_the_end_is_killed() -> None:
    assert (4, WAITED) in rules(HEAD + "uv run python train.py --lr 1e-4 &\n")
    assert WAITED not in {r for _, r in rules(HEAD + "nvidia-smi dmon -s u &\n")}
