"""Completion (issue 20 item 3): values from the cluster in one bounded Slurm call each,
nothing (and no traceback) when Slurm cannot answer, and click's completion protocol."""

from __future__ import annotations

import getpass
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmkit import _proc
from slurmkit import completion as values
from slurmkit.cli import cli
from slurmkit.slurm import quick
from tests.fakes import Call, FakeSlurm

NODE_NAMES = ["sinfo", "--all", "--noheader", "--Node", "--format=%N"]  # @all's call
FEATURES = ["sinfo", "--all", "--noheader", "--Node", "--format=%N %f"]  # @feature:'s call
PARTITIONS = ["scontrol", "--all", "show", "partition"]
SQUEUE = ["squeue", "**"]


def recorded_cluster(fake: FakeSlurm) -> FakeSlurm:
    """The 22.05 jobs scenario: node names (one per line, as sinfo -N -o %N prints them) and
    partitions gpu and cpu as recorded; the queue is that scenario's job ids, one of them
    another user's."""
    fake.replay("22.05", "03_jobs", "scontrol_show_hostnames.txt", NODE_NAMES)
    fake.replay("22.05", "03_jobs", "scontrol_show_partition.txt", PARTITIONS)

    def queue(call: Call) -> str:
        fmt = next(a for a in call.argv if a.startswith("--format="))[len("--format=") :]
        rows = [("4_1", "root"), ("8", "alice"), ("9", "root"), ("3", "alice")]
        return "".join(fmt.replace("%i", i).replace("%u", u) + "\n" for i, u in rows)

    return fake.on(SQUEUE, answer=queue)


@pytest.fixture
def cluster(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch) -> FakeSlurm:
    monkeypatch.setattr(getpass, "getuser", lambda: "alice")
    return recorded_cluster(fake_slurm)


# ---------------------------------------------------------------- library: values


def test_node_names_after_a_comma_keep_the_list(cluster: FakeSlurm) -> None:
    assert values.hostlist("") == ["node-1", "node-2", "node-3", "node-4"]
    assert values.hostlist("node-3,node-") == [f"node-3,node-{i}" for i in range(1, 5)]
    assert values.hostlist("x") == []
    assert cluster.log[0].timeout == quick.TIMEOUT == 1.0


def test_groups_kinds_then_values(cluster: FakeSlurm) -> None:
    assert values.hostlist("@") == [
        "@partition:",
        "@state:",
        "@job:",
        "@reservation:",
        "@feature:",
        "@all",
    ]
    assert values.hostlist("@p") == ["@partition:"]
    assert values.hostlist("node-1,@partition:g") == ["node-1,@partition:gpu"]
    assert values.hostlist("@partition:") == ["@partition:gpu", "@partition:cpu"]
    assert values.hostlist("@state:drai") == ["@state:drain", "@state:drained", "@state:draining"]
    assert values.hostlist("@job:") == ["@job:8", "@job:3", "@job:4_1", "@job:9"]
    assert cluster.count("sinfo") == 0  # a group's values never list the nodes


def test_nodes_and_features_complete_from_the_node_groups_own_call(
    cluster: FakeSlurm,
) -> None:
    """TAB offers what @all and @feature: resolve: the same sinfo argv (one builder,
    nodegroups.every_node_argv), hidden partitions included, and one call per lookup."""
    from slurmkit import nodesel

    cluster.on(
        FEATURES, (Path(__file__).parent / "nodesel_samples" / "sinfo_N_features.txt").read_text()
    )
    assert values.hostlist("@feature:") == ["@feature:ib", "@feature:skfeat"]
    assert values.hostlist("node-") == [f"node-{i}" for i in range(1, 5)]
    completed = [c.argv for c in cluster.log]
    assert completed == [tuple(FEATURES), tuple(NODE_NAMES)]
    assert str(nodesel.resolve("@all")) == "node-[1-4]"
    assert str(nodesel.resolve("@feature:ib")) == "node-[3-4]"
    assert [c.argv for c in cluster.log[2:]] == completed[::-1]  # the very same two calls


def test_own_jobs_first(cluster: FakeSlurm) -> None:
    assert values.job_ids("") == ["8", "3", "4_1", "9"]
    assert values.job_ids("4") == ["4_1"]
    assert cluster.count("squeue") == 2  # one call per lookup


def test_each_lookup_is_one_call_with_the_timeout(cluster: FakeSlurm) -> None:
    values.partitions("")
    values.job_ids("")
    values.hostlist("n")
    assert [c.timeout for c in cluster.log] == [1.0, 1.0, 1.0]
    assert len(cluster.log) == 3


@pytest.mark.parametrize(
    "reply",
    [
        (1, "", "squeue: error: Unable to contact slurm controller (connect failure)\n"),
        (0, "", "slurm_load_partitions: Socket timed out on send/recv operation\nerror: x\n"),
        _proc.Completed(("sinfo",), -9, "", "", 1.0, timed_out=True),
        FileNotFoundError(2, "No such file or directory", "sinfo"),
    ],
)
def test_no_answer_from_slurm_is_no_suggestion(fake_slurm: FakeSlurm, reply: object) -> None:
    fake_slurm.on(["**"], answer=reply)  # type: ignore[arg-type]
    assert values.hostlist("") == []
    assert values.hostlist("@partition:") == []
    assert values.job_ids("") == []
    assert values.partitions("") == []


def test_local_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "torchrun" in values.templates("")
    assert values.templates("torch") == ["torchrun"]
    assert values.lint_rules("srun-cpus") == ["srun-cpus-per-task"]
    from slurmkit.train import state

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / state.STATE_FILE).write_text("{}")
    (tmp_path / "not-a-train").mkdir()
    assert values.trains("", tmp_path) == ["a", "b"]
    assert values.trains("", tmp_path / "missing") == []
    assert values.cron_periods("", tmp_path / "no-cron") == []


# ---------------------------------------------------------------- click protocol


def complete(words: str, env: dict[str, str] | None = None) -> list[str]:
    """What bash gets back for COMP_WORDS=words with the cursor on the last word."""
    split = words.split(" ")
    result = CliRunner().invoke(
        cli,
        [],
        env={
            "_SLURMKIT_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(split) - 1),
            **(env or {}),
        },
        prog_name="slurmkit",
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return [line for line in result.output.splitlines() if line]


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("slurmkit hostfile --nodelist node-", [f"plain,node-{i}" for i in range(1, 5)]),
        ("slurmkit hostfile --jobid ", ["plain,8", "plain,3", "plain,4_1", "plain,9"]),
        ("slurmkit nodes --partition c", ["plain,cpu"]),
        ("slurmkit lint --explain srun-cpus", ["plain,srun-cpus-per-task"]),
        ("slurmkit template render torch", ["plain,torchrun"]),
        # bash splits at ':' (COMP_WORDBREAKS): the pieces are joined, the answer is the
        # part bash replaces, after the last ':'
        ("slurmkit hostfile --nodelist @partition : g", ["plain,gpu"]),
        ("slurmkit hostfile --nodelist @partition :", ["plain,gpu", "plain,cpu"]),
        ("slurmkit cpus check -N ", []),  # a count, not a node list: no Slurm call
        ("slurmkit comp", ["plain,completion"]),
    ],
)
def test_bash_completion_through_click(cluster: FakeSlurm, words: str, expected: list[str]):
    assert complete(words) == expected


def test_completion_with_a_broken_config_still_completes(
    cluster: FakeSlurm, tmp_path: Path
) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[run]\nfanout = \n")
    assert complete("slurmkit nodes --partition c", {"SLURMKIT_CONFIG": str(bad)}) == ["plain,cpu"]


def test_completion_with_slurm_missing_is_empty(fake_slurm: FakeSlurm) -> None:
    fake_slurm.missing("sinfo").missing("scontrol").missing("squeue")
    assert complete("slurmkit hostfile --nodelist ") == []
    assert complete("slurmkit hostfile --jobid ") == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_command_prints_the_script(shell: str) -> None:
    result = CliRunner().invoke(cli, ["completion", shell])
    assert result.exit_code == 0
    assert f"_SLURMKIT_COMPLETE={shell}_complete" in result.output
    assert re.search(r"\bslurmkit\b", result.output)


def test_completion_rejects_other_shells() -> None:
    result = CliRunner().invoke(cli, ["completion", "tcsh"])
    assert result.exit_code == 2
