"""Round eight of issue 32, the slips: what the eighth test part showed, once it was read.

Each test pins a class of wrong finding that part held (and the right finding it
resembles, which must still fire), or a class of missed defect now found.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V22 = LintContext(SlurmVersion.parse("22.05"))
SPENT8 = Path(__file__).parent.parent / "fixtures" / "real-scripts" / "spent-holdout8"
NEEDS_BASH = pytest.mark.skipif(shutil.which("bash") is None, reason="bash -n judges these")


def _rules(text: str) -> list[tuple[int, str]]:
    return [(f.line, f.rule) for f in lint_text(text, "t.sh", V22)]


def _lines(text: str, rule: str) -> list[int]:
    return [line for line, found in _rules(text) if found == rule]


def test_nothing_past_the_top_level_exit_is_bash() -> None:
    """A Julia polyglot (``#=`` … ``exit`` … ``=#``) is bash only up to its exit: bash
    never reads ``host = gethostname()`` below it. Before the exit the slip is a slip, and
    an exit inside an if, a function or at the end of a loop's body ends nothing."""
    polyglot = (
        "#!/usr/bin/env sh\n#SBATCH -N 1\n#=\nsrun julia $0\nexit\n# =#\n"
        "host = gethostname()\n@show host\n"
    )
    assert _lines(polyglot, "assignment-with-spaces") == []
    before = "#!/bin/bash\n#SBATCH -N 1\nNAME = 3\nexit 0\nOTHER = 4\n"
    assert _lines(before, "assignment-with-spaces") == [3]
    blocks = (
        '#!/bin/bash\n#SBATCH -N 1\nf() {\nexit 1\n}\nif [ -z "$x" ]; then\nexit 2\nfi\n'
        "for i in 1 2; do\nexit\ndone\nNAME = 3\n"
    )
    assert _lines(blocks, "assignment-with-spaces") == [12]


def test_a_blank_line_after_a_backslash_ends_the_command() -> None:
    """``… --bim-file $B \\``, a blank line, ``$PYTHON mixer.py test2 \\``: the blank line
    ends the first command, so the second is no argument of it (a word-less line is no
    "same program again"). The same program on the very next line still is."""
    text = (
        "#!/bin/bash\n#SBATCH -N 1\n$PYTHON mixer.py fit2 \\\n      --ld-file $L \\\n\n"
        "$PYTHON mixer.py test2 \\\n      --ld-file $L \\\n\n"
    )
    assert _lines(text, "continued-into-command") == []
    lost_pipe = "#!/bin/bash\n#SBATCH -N 1\nsamtools view -b in.bam \\\nsamtools sort -o o.bam\n"
    assert _lines(lost_pipe, "continued-into-command") == [4]


def test_an_option_repeated_on_continued_lines_is_no_program() -> None:
    """``-B a \\`` then ``-B b \\``: singularity's bind option given twice, not a program
    run twice (lines the grammar hid, such as a misread heredoc, start a group with one)."""
    text = (
        "#!/bin/bash\n#SBATCH -N 1\n    -B /a \\\n    -B /b \\\n    -B /c \\\n    $IMAGE run.sh\n"
    )
    assert _lines(text, "continued-into-command") == []


def test_time_p_is_time_s_option() -> None:
    """``time -p mpirun …`` (bash's keyword and POSIX time(1) both take -p): no program
    ``-p``. An option alone on its line after a lost backslash still is one."""
    text = "#!/bin/sh\n#SBATCH -N 2\ntime -p mpirun -N 2 \\\n  --host a,b \\\n  ./osu_bw\n"
    assert _lines(text, "option-as-command") == []
    lost = "#!/bin/bash\n#SBATCH -N 1\npython train.py\n  --lr 0.1\n"
    assert _lines(lost, "option-as-command") == [4]


def test_a_launcher_cut_from_its_program_by_a_blank_line() -> None:
    """``mpirun -n 10 \\``, blank, ``python -u run.py``: mpirun gets no program (it
    refuses) and python runs alone. A launcher that has its program before the blank
    (``srun … ./a.out \\`` then a blank) only has a stray backslash."""
    cut = "#!/bin/bash\n#SBATCH -n 10\nmpirun -n 10 \\\n\npython -u run.py\n"
    assert _lines(cut, "option-as-command") == [5]
    whole = "#!/bin/bash\n#SBATCH -n 10\nsrun --mpi=pmix ./a.out \\\n\necho done\n"
    assert _lines(whole, "option-as-command") == []
    flag = "#!/bin/bash\n#SBATCH -n 10\nsrun -l \\\n\n./a.out\n"
    assert _lines(flag, "option-as-command") == [5]


def test_a_spaced_assignment_of_a_template_blank() -> None:
    """``N = <CORES * sockets>``: the blank's ``<`` makes the grammar drop the line from its
    commands; bash still runs a command N. A brew template's R code (``<% … %>``) is no
    bash and stays unread."""
    text = (
        "#!/bin/bash\n#SBATCH -N 1\nCORES = <num_cores>\nPROCS = <CORES * sockets>\n"
        "ALL=<NODES * CORES>\nsrun -n $PROCS ./a.out\n"
    )
    assert _lines(text, "assignment-with-spaces") == [3, 4]


def test_a_variable_is_found_on_its_own_line_of_a_long_string() -> None:
    """``bash -c "torchrun \\`` … ``--nproc_per_node=$SLURM_GPUS_PER_NODE``: the word
    starts lines above the variable; the finding names the variable's line."""
    text = (
        "#!/bin/bash\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:1\n"
        'srun bash -c "torchrun \\\n--nnodes=$SLURM_NNODES \\\n'
        '--nproc_per_node=$SLURM_GPUS_PER_NODE \\\ntrain.py"\n'
    )
    assert _lines(text, "slurm-variable-unset") == [6]


def test_an_ambiguous_prefix_of_the_option_is_asked_for() -> None:
    """``--cpus-per=task=2``: sbatch refuses the ambiguous prefix (--cpus-per-gpu,
    --cpus-per-task; sbatch 22.05.8), so nothing runs; the job meant asks for
    --cpus-per-task, so its variable is no second defect. ``--gpus`` is an option of its
    own: with it, $SLURM_GPUS_PER_NODE is still empty."""
    text = (
        "#!/bin/bash\n#SBATCH --ntasks=4\n#SBATCH --cpus-per=task=2\n"
        "export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK\nsrun vasp_std\n"
    )
    assert _lines(text, "slurm-variable-unset") == []
    assert _lines(text, "sbatch-unknown-option") == [3]
    gpus = (
        "#!/bin/bash\n#SBATCH --gpus=4\n#SBATCH -N 1\n"
        "torchrun --nproc_per_node=$SLURM_GPUS_PER_NODE t.py\n"
    )
    assert _lines(gpus, "slurm-variable-unset") == [4]


@NEEDS_BASH
def test_template_blanks_are_filled_before_bash_judges() -> None:
    """``RLHF_DIR=<<<PATH/TO/rlhf>>>`` and a ``str.format`` template's ``f(){{`` are what
    the user fills in: bash reads the filled script whole, so no bash-syntax error. An
    unclosed quote in the same kind of template is still one."""
    angle = (
        "#!/bin/bash\n#SBATCH -p <<<PARTITION>>>\nRLHF_DIR=<<<PATH/TO/rlhf>>>\n"
        'IMG=<<<IMAGE>>>\nf() {\n  echo $(cat <<<"$RLHF_DIR")\n}\nf\n'
    )
    assert _lines(angle, "bash-syntax") == []
    python = (
        "#!/usr/bin/env bash\n#SBATCH --time={cfg.walltime}\n#SBATCH --output={cfg.log}\n"
        "handle_error(){{\n    exit 1\n}}\nsrun ./{cfg.exe} || handle_error\n"
    )
    assert _lines(python, "bash-syntax") == []
    still = python.replace("srun ./{cfg.exe}", 'echo "open\nsrun ./{cfg.exe}')
    assert _lines(still, "bash-syntax") != []


@NEEDS_BASH
def test_the_finding_is_where_bash_stops() -> None:
    """attack_atac: an ``elif`` with no ``then``, so bash stops at the next ``elif`` (line
    62, "syntax error near unexpected token `elif'"), while the grammar reports a loop the
    error left open thirteen lines further down. An unclosed quote stays where the grammar
    says it opens (bash names the end of the file)."""
    text = (SPENT8 / "attack_atac--pipeline_07_deeptools_alltogether.sh").read_text()
    assert _lines(text, "bash-syntax") == [62]
    quote = '#!/bin/bash\n#SBATCH -t 5\necho "open\nsrun hostname\necho done\n'
    assert _lines(quote, "bash-syntax") == [3]


def test_time_p_is_the_time_keyword_s_option_not_the_program() -> None:
    """``time -p srun …``: bash's time keyword takes -p (the POSIX format); the step is srun,
    so the step rules see it (here its --cpus-per-task that does not reach it on 22.05)."""
    from slurmkit.lint.script import Script

    script = Script("job.sh", "#!/bin/bash\ntime -p srun -n 2 ./a.out\ntime srun hostname\n")
    assert [c.name for c in script.commands] == ["srun", "srun"]
    text = "#!/bin/bash\n#SBATCH -c 8\n#SBATCH --hint=nomultithread\ntime -p srun ./omp_app\n"
    rules = [(f.line, f.rule) for f in lint_text(text, "job.sh", V22)]
    assert (4, "srun-cpus-per-task") in rules
