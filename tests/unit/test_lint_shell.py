"""The lint's bash reader and #SBATCH reader: commands, lines, heredocs, directives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmkit.lint.script import Script
from slurmkit.lint.shell import parse
from slurmkit.sbatch.directives import (
    AFTER_COMMAND,
    INDENTED,
    WRONG_CASE,
    gres_gpus,
    job_request,
    read_directives,
    sbatch_words,
)
from slurmkit.sbatch.options import parse_options


def commands(text: str) -> list[tuple[int, int, str | None, list[str]]]:
    parsed = parse(text)
    return [
        (parsed.line_of(c.start), c.depth, c.name, [w.text for w in c.argv])
        for c in parsed.commands
    ]


def test_continued_srun_is_one_command_on_its_first_line() -> None:
    text = "echo a\nsrun --nodes=2 \\\n  --cpus-per-task=4 \\\n  python train.py\necho b\n"
    assert commands(text) == [
        (1, 0, "echo", ["echo", "a"]),
        (2, 0, "srun", ["srun", "--nodes=2", "--cpus-per-task=4", "python", "train.py"]),
        (5, 0, "echo", ["echo", "b"]),
    ]


def test_quotes_escapes_and_expansions() -> None:
    parsed = parse("""srun bash -c 'a "b" $X' "x $Y" $'t\\tu' \\$Z "$(date)"\n""")
    (srun, date) = parsed.commands
    words = srun.argv
    assert [w.text for w in words] == [
        "srun",
        "bash",
        "-c",
        'a "b" $X',
        "x $Y",
        "t\tu",
        "$Z",
        "$(date)",
    ]
    assert [w.literal for w in words] == [True, True, True, True, False, True, True, False]
    assert date.name == "date" and date.depth == 1


def test_multi_line_double_quotes_are_one_word() -> None:
    text = 'srun python -c "\nimport os\nprint(1)\n"\nsrun hostname\n'
    assert [(line, name) for line, _, name, _ in commands(text)] == [(1, "srun"), (5, "srun")]


def test_command_substitution_and_backticks_are_commands_too() -> None:
    text = "all+=$(srun --exact bash -c x)\nn=`srun hostname | wc -l`\n"
    found = commands(text)
    assert (1, 1, "srun", ["srun", "--exact", "bash", "-c", "x"]) in found
    assert (2, 1, "srun", ["srun", "hostname"]) in found
    assert (2, 1, "wc", ["wc", "-l"]) in found


def test_heredoc_bodies_are_not_commands_but_belong_to_the_assignment() -> None:
    text = (
        "task=$(cat <<'EOF'\nsrun inside\nclear\nEOF\n)\n"
        "cat << PY > x.py\nimport deepspeed\nPY\n"
        'srun bash -c "$task"\n'
    )
    script = Script("x", text)
    names = [c.name for c in script.commands]
    assert names.count("srun") == 1 and "clear" not in names
    assert [(h.delimiter, h.quoted) for h in script.parsed.heredocs] == [
        ("EOF", True),
        ("PY", False),
    ]
    assert "srun inside" in script.assigned_sources("task")[0]
    assert script.line_of(script.sruns[0].command.start) == 9


def test_here_strings_and_redirections_are_not_heredocs_or_words() -> None:
    parsed = parse('awk 1 <<<"$x" >out 2>&1\nsrun a &>log\n')
    assert parsed.heredocs == []
    assert [[w.text for w in c.argv] for c in parsed.commands] == [["awk", "1"], ["srun", "a"]]


def test_pipes_background_and_lists() -> None:
    parsed = parse("a | tee log && b &\nc |\n  tee x\n")
    flags = [(c.name, c.after_pipe, c.background) for c in parsed.commands]
    assert flags == [  # bash runs the whole list `a | tee log && b` in the background
        ("a", False, True),
        ("tee", True, True),
        ("b", False, True),
        ("c", False, False),
        ("tee", True, False),
    ]


def test_comments_tests_arrays_and_keywords() -> None:
    text = (
        "# srun not this\n"
        "if [[ $x =~ CPUs=([0-9]+) && -n $y ]]; then srun a; fi  # nor srun this\n"
        "nodes=(node-1 node-2)\n"
        "for n in 1 2; do exec srun b; done\n"
        "(( i++ ))\n"
    )
    found = [(line, name) for line, _, name, _ in commands(text)]
    assert (2, "srun") in found and (4, "srun") in found
    assert sum(name == "srun" for _, name in found) == 2
    assert all(name not in ("node-1", "CPUs") for _, name in found)


def test_prefix_assignments_and_wrappers() -> None:
    (command,) = parse("A=1 B=$X env C=2 timeout 5 srun x\n").commands
    assert [(a.name, a.value.text) for a in command.prefix] == [("A", "1"), ("B", "$X")]
    assert command.name == "srun"


def test_unbalanced_quotes_never_raise() -> None:
    assert parse("echo 'open\nsrun x\n").commands[0].name == "echo"
    assert parse('echo "$(unclosed\n').commands


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["-c", "8", "prog"], [("cpus-per-task", "8")]),
        (["-c8", "--exact", "prog"], [("cpus-per-task", "8"), ("exact", None)]),
        (
            ["--cpus-per-task", "8", "-lN2", "p"],
            [("cpus-per-task", "8"), ("label", None), ("nodes", "2")],
        ),
        (["--tasks-per-node=1", "--", "-c"], [("ntasks-per-node", "1")]),
        (["--kill-on-bad-exit", "prog"], [("kill-on-bad-exit", None)]),
        (["-K1", "prog"], [("kill-on-bad-exit", "1")]),
    ],
)
def test_options_parse_like_getopt(words: list[str], expected: list[tuple]) -> None:
    options, _ = parse_options(words)
    assert [(o.name, o.value) for o in options] == expected


def test_sbatch_words_follow_sbatch() -> None:
    assert sbatch_words(" --output=%x-%j.out   # a comment") == ["--output=%x-%j.out"]
    assert sbatch_words(' -J "a b" --comment=x\\#y --x=a#b') == [
        "-J",
        "a b",
        "--comment=x#y",
        "--x=a",
    ]


def test_directives_sbatch_reads_and_ignores() -> None:
    lines = [
        "#!/bin/bash",
        "#SBATCH --nodes=2 --time 10",
        "  #SBATCH --gres=gpu:8",
        "#sbatch --exclusive",
        "",
        "# comment",
        "#SBATCH -c 4",
        "echo start",
        "#SBATCH --time=20",
    ]
    found = [(d.line, d.ignored) for d in read_directives(lines)]
    assert found == [(2, None), (3, INDENTED), (4, WRONG_CASE), (7, None), (9, AFTER_COMMAND)]
    job = job_request(read_directives(lines))
    assert (job.nodes, job.cpus_per_task, job.value("time")) == ((2, 2), 4, "10")
    assert job.gpus_per_node is None


@pytest.mark.parametrize(
    ("directives", "gpus"),
    [
        (["--gres=gpu:8"], 8),
        (["--gres=gpu:a100:4"], 4),
        (["--gres=gpu"], 1),
        (["--gres=nvme:1,gpu:2"], 2),
        (["--gpus-per-node=a100:8"], 8),
        (["--nodes=2", "--gpus=16"], 8),
        (["--gres=nvme:1"], None),
    ],
)
def test_gpus_per_node(directives: list[str], gpus: int | None) -> None:
    lines = ["#!/bin/bash", *(f"#SBATCH {d}" for d in directives)]
    found = job_request(read_directives(lines)).gpus_per_node
    assert (found[0] if found else None) == gpus


def test_gres_gpus() -> None:
    assert gres_gpus("gpu:8(S:0-1)") == 8
    assert gres_gpus("gres/gpu:3") == 3
    # The grammar's count, the same as everywhere else (issue 15: lint read this as 1).
    assert gres_gpus("gres/gpu:h100=4") == 4
    # A request the grammar cannot read is no count, never an exception out of lint.
    assert gres_gpus("gpu:4(IDX:0") is None


def test_a_malformed_gres_request_lints_without_a_gpu_count() -> None:
    lines = ["#!/bin/bash", "#SBATCH --gres=gpu::", "srun true"]
    assert job_request(read_directives(lines)).gpus_per_node is None


def test_tasks_per_node_from_ntasks() -> None:
    job = job_request(read_directives(["#SBATCH -N 2 -n 16"]))
    assert job.tasks_per_node == 8


PIECES = [
    *"ab $()`'\"\\\n#;&|<>{}[]=-%:x0\t",
    "srun ",
    "<<EOF\n",
    "EOF\n",
    "export ",
    "é",  # byte offsets (tree-sitter) differ from character offsets from here on
    "日本",
    "{{ x }}",
    "{% if a %}",
    "sbatch ",
    "cat <<'E' | sbatch\n",
    "E\n",
    "A=1 B=2\n",
]
RULE_BAIT = [
    "#SBATCH -c 4\n",
    "$(",
    "${",
    "[[ ",
    "torchrun ",
    "NNODES=3\n",
    "--nnodes 9 ",
    "&",
    "SLURM_CPUS_PER_TASK=1 ",
    "--jobid=5 ",
    "| tee x\n",
    "#SBATCH --array=1-3\n",
    "\r\n",
]
SHELLISH = st.lists(st.sampled_from([*PIECES, *RULE_BAIT]), max_size=80)


@settings(max_examples=300, deadline=None)
@given(SHELLISH)
def test_any_text_lints_without_raising(pieces: list[str]) -> None:
    from slurmkit.lint import lint_text

    text = "".join(pieces)
    parsed = parse(text)
    assert all(0 <= c.start <= c.end <= len(text) for c in parsed.commands)
    for command in parsed.commands:  # offsets are characters of the original text
        for word in command.words:
            assert text[word.start : word.end] == word.raw or "{" in text[word.start : word.end]
    lint_text("#!/bin/bash\n#SBATCH -t 5 -c 4 -N 2 --gres=gpu:4\n" + text, "fuzz")
