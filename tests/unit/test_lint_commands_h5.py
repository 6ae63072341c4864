"""Command and syntax rules fixed from the spent fourth hold-out (issue 32): a heredoc ends
only at its whole delimiter line, as bash reads it."""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text
from slurmkit.lint.shell import parse

V = LintContext(SlurmVersion.parse("24.11.5"))
HEAD = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 1\n"


def rules(text: str) -> set[tuple[int, str]]:
    return {(f.line, f.rule) for f in lint_text(text, "t.slurm", V)}


def test_a_line_that_only_starts_with_the_delimiter_does_not_end_the_heredoc() -> None:
    # a launcher that writes a node's command, itself holding a heredoc (bash -n accepts it)
    text = HEAD + (
        "head_cmd=$(cat <<EOF\n"
        "if cat <<EOFINNER | bash; then\n"
        "ray start --head\n"
        "EOFINNER\n"
        "  echo started\n"
        "fi\n"
        "EOF\n"
        ")\n"
        'srun bash -c "$head_cmd"\n'
    )
    assert "bash-syntax" not in {rule for _, rule in rules(text)}
    (heredoc,) = parse(text).heredocs
    assert heredoc.body.endswith("fi\n") and heredoc.terminated


def test_a_tab_stripped_heredoc_goes_on_past_a_longer_word() -> None:
    text = HEAD + "cat <<-EOF >run.sh\n\tEOF_NOTE\n\tfi\n\tEOF\nsrun bash run.sh\n"
    parsed = parse(text)
    assert [c.name for c in parsed.commands] == ["cat", "srun"]
    assert "bash-syntax" not in {rule for _, rule in rules(text)}


def test_the_whole_delimiter_line_still_ends_it() -> None:
    # the inner heredoc is a real one here: its own delimiter ends it, then the outer goes on
    text = HEAD + "cat <<EOFINNER\nhi\nEOFINNER\ncat <<EOF\nEOF\nif true; then\n"
    found = rules(text)
    assert (9, "bash-syntax") in found


def tee_lines(text: str) -> list[int]:
    return sorted(line for line, rule in rules(text) if rule == "tee-without-pipefail")


# Without set -e bash goes on past a failed command, tee or not: only the job's own status
# (the last command's) or one the script reads can be lost.
STEPS = (
    "srun -n 1 pre.sh | tee log.pre\n"
    "srun -n 1 mesh.sh | tee log.mesh\n"
    "srun -n 4 solve.sh | tee log.solve\n"
    'echo "done"\n'
)


def test_without_set_e_only_the_last_pipeline_hides_the_jobs_status() -> None:
    assert tee_lines(HEAD + STEPS) == [6]


def test_under_set_e_every_pipeline_hides_a_failure_that_would_stop_the_script() -> None:
    assert tee_lines(HEAD + "set -e\n" + STEPS) == [5, 6, 7]
    assert tee_lines(HEAD.replace("#!/bin/bash", "#!/bin/bash -e") + STEPS) == [4, 5, 6]


def test_a_status_the_script_reads_is_lost_anywhere() -> None:
    read = HEAD + "srun a.sh | tee a.log && srun b.sh\nsrun c.sh | tee c.log\nrc=$?\nrm -f x\n"
    assert tee_lines(read) == [4, 5]
    branch = HEAD + "if srun a.sh | tee a.log; then echo ok; fi\nrm -f x\n"
    assert tee_lines(branch) == [4]


def test_the_last_if_or_a_function_the_script_ends_with_is_the_jobs_status() -> None:
    ends_in_if = HEAD + "if [ -f big ]; then\n  srun a | tee a.log\nelse\n  srun b | tee b\nfi\n"
    assert tee_lines(ends_in_if) == [5, 7]
    function = HEAD + "run() {\n  srun a | tee a.log\n}\nmkdir -p out\nrun\n"
    assert tee_lines(function) == [5]


def test_an_expansion_then_text_then_a_name_is_one_word() -> None:
    # tree-sitter-bash 0.25 read ``${A}_$b.log`` as ``${A}_$`` and a second word ``b.log``
    (assign,) = parse("X=${RUN}_$trial.log\n").commands
    assert assign.name is None and [w.raw for w in assign.words] == ["X=${RUN}_$trial.log"]
    _, tee = parse("python t.py | tee ${RUN}_$trial.log\n").commands
    (log,) = tee.argv[1:]
    assert log.expands == {"RUN", "trial"} and not log.literal


def test_a_rank_in_srun_export_is_the_batch_shells() -> None:
    head = "#!/bin/bash\n#SBATCH -N 3\n#SBATCH --ntasks-per-node=1\n"
    export = "srun --export=ALL,NODE_RANK=$SLURM_NODEID bash run.sh\n"
    assert (4, "srun-rank-expanded-early") in rules(head + export)
    spaced = "srun --export ALL,RANK=$SLURM_PROCID bash run.sh\n"
    assert (4, "srun-rank-expanded-early") in rules(head + spaced)
    escaped = "srun --export=ALL,NODE_RANK=\\$SLURM_NODEID bash run.sh\n"
    assert "srun-rank-expanded-early" not in {rule for _, rule in rules(head + escaped)}
