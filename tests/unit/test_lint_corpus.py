"""lint on 66 published sbatch scripts against hand judgments (issue 21 items 1 and 5).

These are the scripts the rules were tuned on: a regression check, linted through the
CLI command itself from their directory (issue 32: one code path). The larger labelled
corpus and its hold-out are scored, not required, by benchmarks/score_lint_corpus.py.

``tests/fixtures/real-scripts/EXPECTED.tsv`` says, for every finding lint makes there,
whether the job really would do the wrong thing (judged against Slurm and bash, not
against lint), and names lines that must stay quiet. At each Slurm version:
- every error or warning lint shows is a finding judged right (no false alarm shown);
- every finding judged right is shown as an error or warning (none missing, none hidden
  as info);
- info findings (``--info`` only) are findings judged in the file (none unexamined);
- the quiet lines have no finding of the named rule (``*``: of any rule);
- real defects judged ``missed`` (lint does not find them yet) are still not found, so
  a fix that finds one must judge it.
A new rule or a changed one that fires elsewhere fails here until it is judged.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from benchmarks.score_lint_corpus import CORPUS, NOT_SCRIPTS, lint_corpus
from benchmarks.severity_policy import never_right_unseen
from slurmkit.lint import INFO, LintContext, SlurmVersion, lint_text
from slurmkit.lint.precision import PRECISION
from slurmkit.lint.precision_unseen import UNSEEN_SHOWN
from slurmkit.lint.rules import RULES

VERSIONS = ("22.05", "24.11", "26.05")
# The licences of the repositories the scripts were copied from (SOURCES.tsv):
# permissive first; GPL and LGPL files are kept unchanged, with attribution.
LICENCES = {
    "Apache-2.0",
    "BSD-3-Clause",
    "MIT",
    "MIT-0",
    "CC-BY-4.0",
    "CC-BY-SA-4.0",
    "GPL-3.0",
    "LGPL-3.0",
}


def _rows(name: str, directory: Path = CORPUS) -> list[dict[str, str]]:
    with open(directory / name, newline="") as stream:
        return list(csv.DictReader(stream, delimiter="\t"))


def _scripts(directory: Path = CORPUS) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_file() and p.name not in NOT_SCRIPTS)


def _judged() -> list[str]:
    """The 66 scripts the rules were tuned on, judged in EXPECTED.tsv: the regression set."""
    return sorted(r["file"] for r in _rows("SOURCES.tsv") if r["labels"] == "EXPECTED.tsv")


def test_corpus_is_sourced() -> None:
    """Every script of both parts has its source row (repository, path, commit, licence)."""
    sources = []
    for directory in (CORPUS, CORPUS / "spent-holdout"):
        rows = _rows("SOURCES.tsv", directory)
        assert {r["file"] for r in rows} == {p.name for p in _scripts(directory)}
        sources += rows
    assert len(sources) >= 250
    assert len({r["repository"] for r in sources}) >= 120
    assert {r["licence"] for r in sources} <= LICENCES
    assert all(len(r["commit"]) == 40 for r in sources)
    assert len(_judged()) == 66


@pytest.mark.parametrize("version", VERSIONS)
def test_findings_match_the_judgments(version: str) -> None:
    """The 66 judged scripts, linted by the CLI's own command where their repositories keep them."""
    rows = [r for r in _rows("EXPECTED.tsv") if version in r["versions"].split(",")]
    verdicts = {(r["file"], int(r["line"]), r["rule"]): r["verdict"] for r in rows}
    found = {
        (str(f["file"]), int(str(f["line"])), str(f["rule"])): str(f["severity"])
        for f in lint_corpus(CORPUS, _judged(), version)
    }
    shown_wrong = sorted(
        k for k, sev in found.items() if sev != INFO and verdicts.get(k) != "right"
    )
    assert shown_wrong == [], "errors/warnings not judged right"
    # a rule made info by its measured precision still finds what was judged right, as info
    quieted = {rule.id for rule in RULES if rule.severity == INFO}
    missing = sorted(
        k
        for k, v in verdicts.items()
        if v == "right" and (k not in found or (found[k] == INFO and k[2] not in quieted))
    )
    assert missing == [], "findings judged right, not shown"
    unjudged = sorted(k for k in found if verdicts.get(k) not in ("right", "wrong"))
    assert unjudged == [], "findings nobody judged"
    # Real defects lint does not find yet (counted against recall by the benchmark):
    # found now, they are to be judged "right".
    now_found = sorted(k for k, v in verdicts.items() if v == "missed" and k in found)
    assert now_found == [], "defects judged missed that lint now finds"
    loud = sorted(
        (r["file"], int(r["line"]), rule)
        for r in rows
        if r["verdict"] == "quiet"
        for (file, line, rule) in found
        if file == r["file"] and line == int(r["line"]) and r["rule"] in ("*", rule)
    )
    assert loud == [], "lines that must stay quiet"


# Errors and warnings right < 90% on the development part, each for a known reason; any
# other rule that falls below fails test_severity_follows_measured_precision.
BELOW_90 = {
    # helper sruns on 1 CPU (cache clearing, lepa's at 24.11) that the labels leave alone
    "srun-cpus-per-task",
    # hpctrainingexamples' profiler pipelines, unlabelled
    "tee-without-pipefail",
    # `#sbatch --dependency ...`, `#sbatch --cpus-per-task`: lowercase, commented out on purpose
    "sbatch-directive-ignored",
    # SPANK plugin options (Shifter --image, pyxis --container-*, CSCS --environment) are
    # info, unlabelled: real on their sites; its errors are all right
    "sbatch-unknown-option",
    # `# SBATCH --reservation=...`: a past reservation switched off on purpose, info,
    # unlabelled; its warnings are all right
    "sbatch-misspelt",
    # the seventh part's wrong ones (round seven, 2026-11-30), one script each:
    # a Python str.format template (`{weights}&` is a tag, not a server started)
    "background-never-waited",
    # a course script whose --cpus-per-task comes on sbatch's command line
    "slurm-variable-unset",
}


def test_severity_follows_measured_precision() -> None:
    """A rule whose findings were right < 90% on the development part is info (item 5)."""
    for rule in RULES:
        right, judged = PRECISION.get(rule.id, (0, 0))
        if judged and right / judged < 0.9 and rule.id not in BELOW_90:
            assert rule.severity == INFO, rule.id


# Rules kept loud although wrong more often than right on the test parts, each for a reason.
LOUD_THOUGH_WRONG_UNSEEN: dict[str, str] = {
    "test-bracket-unclosed": "right on 6 of 8 shown on the parts before the tenth; its 24 wrong"
    " there were one bug in two scripts of one repository (a [ inside a quoted sed program"
    " read as a test), fixed on the spent part the day it was scored",
    "slurm-variable-unset": "its generic warning (a variable only an option the job lacks sets)"
    " is info since 2026-12-02; shown are only the cases checked on Slurm itself: an empty"
    " SRUN_CPUS_PER_TASK that stops every srun on 22.05.8 (error), and a variable the target"
    " version does not set yet ($SLURM_JOB_END_TIME before 23.02, warning)",
}


def test_quiet_where_never_right_unseen() -> None:
    """A rule never right on scripts it had not seen is info, whatever its tuned precision.

    Measured on what nobody tuned on (the test parts as scored, UNSEEN_SHOWN): an error
    that was right 4 times in 88 on new scripts would shout at users mostly wrongly. A
    quieted rule still counts, as info, on each newly scored part (UNSEEN).
    """
    loud = {r.id for r in RULES if r.severity != INFO}
    never_right = {rule for rule, parts in UNSEEN_SHOWN.items() if never_right_unseen(parts)}
    assert loud & never_right - LOUD_THOUGH_WRONG_UNSEEN.keys() == set()
    # the five quieted on 2026-12-01 (the predicate is not vacuous)
    assert {
        "continued-into-command",
        "srun-rank-expanded-early",
        "gpus-per-node-mismatch",
        "gpu-program-without-gpus",
        "launcher-outside-srun",
    } <= never_right


def test_precision_table_is_the_development_parts() -> None:
    """lint --list-rules reads a committed table; it is what the dev part measures today.

    Regenerate with ``benchmarks/score_lint_corpus.py --part dev --write-precision``.
    """
    from benchmarks.score_lint_corpus import PARTS, VERSIONS, score

    pooled: dict[str, tuple[int, int]] = {}
    for version in VERSIONS:
        for directory in PARTS["dev"]:  # the top level and the spent hold-out
            for rule, (right, judged) in score(directory, version).per_rule.items():
                r, j = pooled.get(rule, (0, 0))
                pooled[rule] = (r + right, j + judged)
    assert pooled == PRECISION


def test_precision_is_never_written_from_the_test_part() -> None:
    from benchmarks.score_lint_corpus import main

    with pytest.raises(SystemExit) as stop:
        main(["--part", "test", "--write-precision"])
    assert stop.value.code == 2


# Rule fixes the corpus led to, each from what Slurm, bash or the launcher really does.

TWO_NODES = "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"


def _rules(text: str, version: str = "22.05") -> set[str]:
    context = LintContext(SlurmVersion.parse(version), "option")
    return {f.rule for f in lint_text(text, "t.sh", context)}


@pytest.mark.parametrize(
    ("body", "fires"),
    [
        # static rendezvous (torchrun's default): the node rank decides; every node gets 0
        ('srun -c 1 bash -c "torchrun --nnodes 2 --node_rank $SLURM_PROCID t.py"', True),
        # c10d: torchrun passes --node_rank only to the static rendezvous; c10d ranks nodes
        (
            'srun -c 1 bash -c "torchrun --nnodes 2 --node_rank $SLURM_PROCID '
            '--rdzv_backend c10d --rdzv_endpoint h:29500 t.py"',
            False,
        ),
        (
            'L="accelerate launch --machine_rank $SLURM_PROCID --rdzv_backend=c10d"\n'
            'srun -c 1 bash -c "$L t.py"',
            False,
        ),
        (
            'srun -c 1 bash -c "torchrun --node-rank=$SLURM_NODEID --rdzv-backend=c10d t.py"',
            False,
        ),
        # c10d, but the rank also feeds something that is no node rank
        (
            'srun -c 1 bash -c "RANK=$SLURM_PROCID torchrun --node_rank $SLURM_PROCID '
            '--rdzv_backend c10d t.py"',
            True,
        ),
    ],
)
def test_node_rank_of_a_c10d_rendezvous_is_not_needed(body: str, fires: bool) -> None:
    assert ("srun-rank-expanded-early" in _rules(TWO_NODES + body + "\n")) is fires


def test_a_job_of_one_task_gets_rank_0_right() -> None:
    one = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=1\n"
    body = 'srun bash -c "python t.py --rank $SLURM_PROCID"\n'
    assert "srun-rank-expanded-early" not in _rules(one + body)
    two = one.replace("--ntasks-per-node=1", "--ntasks-per-node=2")
    assert "srun-rank-expanded-early" in _rules(two + body)
    assert "srun-rank-expanded-early" in _rules(one + body.replace("srun", "srun -n 2"))


def test_steps_in_exclusive_branches_never_run_together() -> None:
    body = 'if [ -n "$A" ]; then\n  srun python train.py &\nelse\n  srun python train.py\nfi\n'
    assert "srun-without-overlap" not in _rules(TWO_NODES + body)
    after = 'if [ -n "$A" ]; then\n  srun python train.py &\nfi\nsrun python other.py\n'
    assert "srun-without-overlap" in _rules(TWO_NODES + after)


def test_steps_pinned_to_node_lists_lint_cannot_compare_are_unknown() -> None:
    body = "srun -N1 -n1 --nodelist=$VLLM_NODE serve &\nsrun --nodelist=$TRAIN_NODES train\n"
    assert "srun-without-overlap" not in _rules(TWO_NODES + body)
    same = 'srun -N1 -n1 -w "$head" serve &\nsrun -w "$head" client\n'
    assert "srun-without-overlap" in _rules(TWO_NODES + same)


@pytest.mark.parametrize(
    ("line", "fires"),
    [
        ("torchrun --nnodes 2 --nproc_per_node 8 t.py", True),
        ("accelerate launch --num_machines 2 --mpirun_hostfile hostfile t.py", False),
        ("deepspeed --hostfile hostfile t.py", False),
        ("deepspeed t.py", True),
    ],
)
def test_launchers_that_reach_the_other_nodes_themselves(line: str, fires: bool) -> None:
    assert ("launcher-outside-srun" in _rules(TWO_NODES + "#SBATCH -c 8\n" + line + "\n")) is fires


def test_node_lists_kept_in_a_variable_count_where_it_is_assigned() -> None:
    body = (
        "srun -N1 -n1 --nodelist=$VLLM_NODE serve &\n"
        'SRUN_ARGS=" --wait=60 --nodelist=$NODELIST"\n'
        'srun $SRUN_ARGS bash -c "train"\n'
    )
    assert "srun-without-overlap" not in _rules(TWO_NODES + body)
    same = body.replace("--nodelist=$NODELIST", "--nodelist=$VLLM_NODE")
    assert "srun-without-overlap" in _rules(TWO_NODES + same)


def test_array_tasks_that_read_their_index_are_distinct_runs() -> None:
    head = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --job-name=train\n#SBATCH --array=0-17\n"
    sweep = 'lr=(1e-4 2e-4)\npython train.py --lr "${lr[$SLURM_ARRAY_TASK_ID]}"\n'
    assert "array-without-limit" not in _rules(head + sweep)
    # the same run repeated: every task resumes the same checkpoint at once
    assert "array-without-limit" in _rules(head + "python train.py --resume ckpt/\n")
    # a comment naming the variable is no use of it
    assert "array-without-limit" in _rules(head + "# $SLURM_ARRAY_TASK_ID\npython train.py\n")


def test_an_expansion_never_closed_inside_a_string_is_what_bash_refuses() -> None:
    """``"… ${VAR/path …"``: the ``${`` swallows the closing quote; bash -n says
    "unexpected EOF while looking for matching `"'". The grammar recovers with an
    error over the whole script and no missing node, so lint has to find the opener."""
    text = (
        '#!/bin/bash\n#SBATCH -t 5\nexport CMD=" \\\n  ${HOME}/run.py \\\n'
        "  --deepspeed ${WORK/configs/ds.json \\\n  --name ${NAME} \\\n"
        "  \"\nsrun bash -c '$CMD'\n"
    )
    context = LintContext(SlurmVersion.parse("22.05"), "option")
    found = [(f.line, f.rule) for f in lint_text(text, "t.sh", context)]
    assert (5, "bash-syntax") in found
    balanced = text.replace("${WORK/configs/ds.json", "${WORK}/configs/ds.json")
    assert "bash-syntax" not in {rule for _, rule in lint_text(balanced, "t.sh", context)}


def test_no_launcher_finding_where_bash_refuses_the_script() -> None:
    """The commands after a syntax error are not read, so an srun there is unseen."""
    text = TWO_NODES + (
        'export L="torchrun --nnodes 2 t.py"\nexport CMD=" \\\n  --deepspeed ${WORK/ds.json \\\n'
        "  --name ${NAME} \\\n  \"\nsrun bash -c '$L $CMD'\n"
    )
    rules = _rules(text)
    assert "bash-syntax" in rules and "launcher-outside-srun" not in rules
