"""Node groups (``@partition:gpu``...) and ``-w/-x`` selections, against recorded Slurm outputs.

The recordings are in ``tests/unit/nodesel_samples`` (README there: the commands, the
22.05.8 sandbox). Every group must cost exactly one Slurm call, whatever the number of
nodes: ``FakeSlurm`` records each call, and the tests count them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmkit import nodesel
from slurmkit.errors import HostlistParseError, NotFound, SlurmNotInstalled, UsageError
from slurmkit.hostlist import _parse as hostlist_parse
from slurmkit.slurm.parse_text import DELIMITER
from tests.fakes import FakeSlurm

SAMPLES = Path(__file__).parent / "nodesel_samples"
TOKEN = re.compile(r"__slurmkit_end_[0-9a-f]{16}__")

PARTITION = ["scontrol", "--all", "show", "partition", "*"]
STATE = ["sinfo", "--all", "--noheader", "--Node", "*", "--format=%N"]
ALL = ["sinfo", "--all", "--noheader", "--Node", "--format=%N"]
FEATURES = ["sinfo", "--all", "--noheader", "--Node", "--format=%N %f"]
RESERVATION = ["scontrol", "show", "reservation", "*"]
JOB = ["squeue", "**"]


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def _partition(call) -> tuple[int, str, str]:
    if call.argv[-1] == "gpu":
        return (0, sample("scontrol_show_partition_gpu.txt"), "")
    return (1, f"Partition {call.argv[-1]} not found\n", "")  # scontrol's words, on stdout


def _state(call) -> tuple[int, str, str]:
    if call.argv[4] == "--states=idle":
        return (0, sample("sinfo_N_t_idle.txt"), "")
    return (1, "", sample("sinfo_N_t_bogus.stderr.txt"))


def _reservation(call) -> tuple[int, str, str]:
    if call.argv[-1] == "sk-rec":
        return (0, sample("scontrol_show_reservation_sk-rec.txt"), "")
    return (1, sample("scontrol_show_reservation_nope.txt"), "")


def _job(call) -> tuple[int, str, str]:
    jobs = next(a for a in call.argv if a.startswith("--jobs="))
    if jobs == "--jobs=42":
        return (0, DELIMITER.join(("42", "RUNNING", "node-[1,4]")) + "\n", "")
    return (1, "", "slurm_load_jobs error: Invalid job id specified\n")


@pytest.fixture
def slurm(fake_slurm: FakeSlurm) -> FakeSlurm:
    """The sandbox's answers: node-[1-4] in gpu; skfeat on node-[3-4]; sk-rec on node-[2-3]."""
    fake_slurm.on(PARTITION, answer=_partition)
    fake_slurm.on(STATE, answer=_state)
    fake_slurm.on(ALL, sample("sinfo_N_all.txt"))
    fake_slurm.on(FEATURES, sample("sinfo_N_features.txt"))
    fake_slurm.on(RESERVATION, answer=_reservation)
    fake_slurm.on(JOB, answer=_job)
    return fake_slurm


# ---------------------------------------------------------------- the parser (no Slurm)


def test_items_split_at_commas_and_spaces_but_not_inside_brackets() -> None:
    assert nodesel.split_items("@partition:gpu,login-1,node-[1,3-4] n9\n@all") == [
        "@partition:gpu",
        "login-1",
        "node-[1,3-4]",
        "n9",
        "@all",
    ]


_NAME = st.from_regex(r"[a-z][a-z0-9-]{0,5}", fullmatch=True)
_RANGE = st.from_regex(r"[0-9]{1,2}(-[0-9]{1,2})?", fullmatch=True)
_PATTERN = st.builds(
    lambda head, ranges, tail: f"{head}[{', '.join(ranges)}]{tail}",
    _NAME,
    st.lists(_RANGE, min_size=1, max_size=3),
    st.sampled_from(["", "-ib"]),
)
_GROUP = st.sampled_from(["@all", "@partition:gpu", "@state:idle,mix", "@job:12_[1-5]"])
_SEPARATOR = st.sampled_from([",", " ", "\n", ", ", ",,"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_NAME, _PATTERN, _GROUP), min_size=1, max_size=6), _SEPARATOR)
def test_items_are_the_hostlist_engines_tokens_on_well_formed_lists(
    items: list[str], separator: str
) -> None:
    """split_items is no second grammar: where the hostlist engine's tokenizer accepts a list,
    @groups included (they hold no bracket it would refuse), both split it alike."""
    text = separator.join(items)
    engine = [token for _, token in hostlist_parse._tokens(text)]
    assert nodesel.split_items(text) == engine


@pytest.mark.parametrize(
    ("text", "items", "error"),
    [
        ("n[1-3,@all", ["n[1-3,@all"], "'[' is never closed at position 2"),
        ("a],@all", ["a]", "@all"], "']' without a matching '[' at position 2"),
        ("n[[1]],n2", ["n[[1]]", "n2"], "'[' inside brackets at position 3"),
    ],
)
def test_bad_brackets_the_engine_refuses_split_without_an_error(
    fake_slurm: FakeSlurm, text: str, items: list[str], error: str
) -> None:
    """The difference, on purpose: split_items never raises (has_groups reads any text) and
    keeps the bad item whole; the hostlist engine then refuses it, naming the bracket in the
    item as typed. No group is looked up before the refusal, whether the bad item swallows
    it (``n[1-3,@all``) or stands beside it."""
    with pytest.raises(HostlistParseError, match=re.escape(error)):
        hostlist_parse._tokens(text)
    assert nodesel.split_items(text) == items
    fake_slurm.on(ALL, sample("sinfo_N_all.txt"))
    with pytest.raises(HostlistParseError, match=re.escape(error)):
        nodesel.resolve(text)
    assert fake_slurm.count("sinfo") == 0


def test_a_bad_item_after_a_group_is_quoted_as_typed_and_costs_no_slurm_call(
    fake_slurm: FakeSlurm,
) -> None:
    """``@all,a]`` used to be refused as "position 13 in 'node-[1-4],a]'" after @all was
    looked up: the message quoted text the user never typed."""
    fake_slurm.on(ALL, sample("sinfo_N_all.txt"))
    with pytest.raises(HostlistParseError, match=re.escape("at position 2 in 'a]'")):
        nodesel.resolve("@all,a]")
    with pytest.raises(HostlistParseError, match=re.escape("--exclude: ']' without")):
        nodesel.resolve("@all", "@state:drain,x]")
    assert fake_slurm.count("sinfo") == 0


@pytest.mark.parametrize(
    ("text", "group"),
    [
        ("@partition:gpu", nodesel.Group("partition", "gpu")),
        ("@state:drain", nodesel.Group("state", "drain")),
        ("@job:1234_5", nodesel.Group("job", "1234_5")),
        ("@reservation:maint", nodesel.Group("reservation", "maint")),
        ("@feature:ib", nodesel.Group("feature", "ib")),
        ("@all", nodesel.Group("all")),
    ],
)
def test_each_kind_parses(text: str, group: nodesel.Group) -> None:
    assert nodesel.parse(f"{text},n1") == [group, "n1"]
    assert str(group) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "@rack:3",
            "unknown node group '@rack:3': the kinds are @partition:NAME, @state:STATE, "
            "@job:ID, @reservation:NAME, @feature:NAME, @all",
        ),
        ("@partition:", "needs a NAME"),
        ("@all:gpu", "takes no value"),
        ("@", "unknown node group '@'"),
    ],
)
def test_bad_groups_are_usage_errors_before_slurm(
    fake_slurm: FakeSlurm, text: str, message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        nodesel.resolve(f"n1,{text}")
    assert fake_slurm.calls == []


def test_a_list_without_groups_never_asks_slurm(fake_slurm: FakeSlurm) -> None:
    assert str(nodesel.resolve("n[3,1-2],n2", "n1")) == "n[2-3]"
    assert not nodesel.has_groups("n[1-2],x@y")  # "@" inside a name is no group
    assert fake_slurm.calls == []


# ---------------------------------------------------------------- resolving (recorded outputs)


@pytest.mark.parametrize(
    ("text", "nodes", "argv"),
    [
        ("@partition:gpu", "node-[1-4]", ("scontrol", "--all", "show", "partition", "gpu")),
        ("@state:idle", "node-[1-4]", (*STATE[:4], "--states=idle", "--format=%N")),
        ("@job:42", "node-[1,4]", None),
        ("@reservation:sk-rec", "node-[2-3]", ("scontrol", "show", "reservation", "sk-rec")),
        ("@feature:skfeat", "node-[3-4]", tuple(FEATURES)),
        ("@feature:ib", "node-[3-4]", tuple(FEATURES)),
        ("@all", "node-[1-4]", tuple(ALL)),
    ],
)
def test_each_kind_is_one_slurm_call(slurm: FakeSlurm, text: str, nodes: str, argv) -> None:
    assert str(nodesel.resolve(text)) == nodes
    assert len(slurm.calls) == 1
    if argv is not None:
        assert slurm.calls[0] == argv
    else:
        assert slurm.calls[0][0] == "squeue" and "--jobs=42" in slurm.calls[0]


def test_groups_mix_with_literals_sorted_and_deduplicated(slurm: FakeSlurm) -> None:
    hosts = nodesel.resolve("login-1,@reservation:sk-rec,node-2,@feature:skfeat")
    assert str(hosts) == "login-1,node-[2-4]"
    assert len(slurm.calls) == 2


def test_the_same_group_twice_is_asked_once(slurm: FakeSlurm) -> None:
    resolver = nodesel.Resolver()
    hosts = nodesel.resolve("@all,@feature:ib", "@feature:ib,node-1", resolver=resolver)
    assert str(hosts) == "node-2"
    assert slurm.calls == [tuple(ALL), tuple(FEATURES)]


def test_ten_thousand_nodes_are_still_one_call(fake_slurm: FakeSlurm) -> None:
    names = "".join(f"n{i}\nn{i}\n" for i in range(1, 10001))  # once per partition, as sinfo -N
    fake_slurm.on(ALL, names)
    fake_slurm.on(
        FEATURES, "".join(f"n{i} {'ib' if i % 2 else '(null)'}\n" for i in range(1, 10001))
    )
    hosts = nodesel.resolve("@all", "@feature:ib")
    assert str(hosts) == "n[" + ",".join(str(i) for i in range(2, 10001, 2)) + "]"
    assert len(fake_slurm.calls) == 2


def test_exclude_removes_groups_and_names(slurm: FakeSlurm) -> None:
    assert str(nodesel.resolve("@partition:gpu", "@reservation:sk-rec,node-1")) == "node-4"


def test_exclude_of_a_group_with_no_node_removes_nothing(slurm: FakeSlurm) -> None:
    assert str(nodesel.resolve("@partition:gpu", "@feature:nvlink")) == "node-[1-4]"


def test_an_include_group_with_no_node_is_the_empty_list_error(slurm: FakeSlurm) -> None:
    with pytest.raises(HostlistParseError, match=r"@feature:nvlink names no node"):
        nodesel.resolve("node-1,@feature:nvlink")


def test_exclude_removing_every_node_is_the_empty_list_error(slurm: FakeSlurm) -> None:
    with pytest.raises(HostlistParseError, match=r"names no node \(an empty list is refused\)"):
        nodesel.resolve("@reservation:sk-rec", "@all")


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("@partition:nope", NotFound, "node group @partition:nope: no such partition 'nope'"),
        ("@reservation:nope", NotFound, "no such reservation 'nope'"),
        ("@state:bogus", UsageError, "no such node state 'bogus' (valid states: unknown,down,"),
        ("@job:7", NotFound, "node group @job:7: unknown job 7"),
    ],
)
def test_unknown_names_are_exit_2_errors(slurm: FakeSlurm, text, error, message) -> None:
    with pytest.raises(error, match=re.escape(message)) as caught:
        nodesel.resolve(f"n1,{text}")
    assert caught.value.exit_code == 2
    assert len(slurm.calls) == 1


def test_no_slurm_here_says_the_group_needs_slurm(fake_slurm: FakeSlurm) -> None:
    fake_slurm.missing("sinfo")
    with pytest.raises(SlurmNotInstalled, match=r"node group @all needs Slurm: 'sinfo' not found"):
        nodesel.resolve("@all")


# ---------------------------------------------------------------- the CLI


def test_nodes_expand_takes_groups_and_exclude(slurm: FakeSlurm, run_cli) -> None:
    result = run_cli("nodes", "expand", "login-1,@reservation:sk-rec", "-x", "@feature:ib")
    assert result.stdout.splitlines() == ["login-1", "node-2"]
    result = run_cli("nodes", "count", "@partition:gpu", "-x", "node-1")
    assert result.stdout == "3\n"
    result = run_cli("nodes", "diff", "@all", "@reservation:sk-rec", "--json")
    assert json.loads(result.stdout) == {"nodes": "node-[1,4]", "count": 2}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nodes", "expand", "@rack:3"], "slurmkit: unknown node group '@rack:3': the kinds are"),
        (["nodes", "fold", "@partition:nope"], "no such partition 'nope'"),
        (["nodes", "expand", "@feature:nvlink"], "names no node"),
    ],
)
def test_bad_groups_are_one_line_exit_2(slurm: FakeSlurm, run_cli, args, message) -> None:
    result = run_cli(*args, exit_code=2)
    assert result.stderr.startswith(message) or message in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""


def test_offline_nodes_command_with_a_group_and_no_slurm(fake_slurm: FakeSlurm, run_cli) -> None:
    fake_slurm.missing("scontrol")
    result = run_cli("nodes", "expand", "@partition:gpu", exit_code=2)
    assert result.stderr.startswith("slurmkit: node group @partition:gpu needs Slurm:")
    assert len(result.stderr.splitlines()) == 1


def _pdsh(call) -> tuple[int, str, str]:
    """Every node of ``pdsh -w LIST`` answers "up" and exits 0."""
    from slurmkit.hostlist import expand

    nodes = expand(call.argv[call.argv.index("-w") + 1])
    token = TOKEN.findall(call.argv[-1])[-1]
    return (0, "".join(f"{n}: up\n{n}: {token} rc=0 t0=1 t1=2\n" for n in nodes), "")


def test_run_on_a_group_minus_exclude(slurm: FakeSlurm, run_cli) -> None:
    slurm.on(["pdsh", "**"], answer=_pdsh)
    result = run_cli("run", "-w", "@partition:gpu", "-x", "@reservation:sk-rec", "--json", "true")
    assert [r["node"] for r in json.loads(result.stdout)["nodes"]] == ["node-1", "node-4"]
    (pdsh,) = slurm.calls_to("pdsh")
    assert pdsh[pdsh.index("-w") + 1] == "node-[1,4]"
    assert len(slurm.calls) == 3  # one per group, one pdsh


def test_run_old_nodes_option_works_and_warns_once(slurm: FakeSlurm, run_cli) -> None:
    """An old cron line, ``slurmkit run --nodes LIST CMD``, still runs, with one warning."""
    slurm.on(["pdsh", "**"], answer=_pdsh)
    result = run_cli("run", "--nodes", "node-[1-2]", "--json", "true")
    assert [r["node"] for r in json.loads(result.stdout)["nodes"]] == ["node-1", "node-2"]
    warnings = [line for line in result.stderr.splitlines() if "deprecated" in line]
    assert warnings == [
        "slurmkit: warning: --nodes LIST is deprecated: use -w/--nodelist LIST "
        "(-N/--nodes is a count in Slurm)"
    ]


def test_run_refuses_the_old_and_new_spelling_together(slurm: FakeSlurm, run_cli) -> None:
    result = run_cli("run", "--nodes", "node-1", "-w", "node-2", "true", exit_code=2)
    assert "give the nodes once" in result.stderr
    assert slurm.calls == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-w", "@partition:nope"], "no such partition 'nope'"),
        (["-w", "@rack:3"], "the kinds are"),
        (["-w", "@partition:gpu", "-x", "@all"], "names no node (an empty list is refused)"),
        (["-w", "@feature:nvlink"], "names no node"),
    ],
)
def test_run_with_bad_selection_runs_nothing(slurm: FakeSlurm, run_cli, args, message) -> None:
    result = run_cli("run", *args, "true", exit_code=2)
    assert message in result.stderr and len(result.stderr.splitlines()) == 1
    assert slurm.calls_to("pdsh") == []


def test_node_drain_with_exclude_removing_everything_changes_nothing(
    slurm: FakeSlurm, run_cli
) -> None:
    result = run_cli(
        "node",
        "drain",
        "@reservation:sk-rec",
        "-x",
        "node-[2-3]",
        "--reason",
        "r",
        "--yes",
        exit_code=2,
    )
    assert "names no node" in result.stderr
    assert slurm.calls_to("scontrol", "update") == []


def test_undrain_with_a_bad_group_changes_nothing(slurm: FakeSlurm, run_cli) -> None:
    result = run_cli("undrain", "-w", "@partition:nope", "--yes", exit_code=2)
    assert "no such partition 'nope'" in result.stderr
    assert slurm.calls_to("scontrol", "update") == []


def test_hostfile_exclude_keeps_slurm_order(slurm: FakeSlurm, run_cli) -> None:
    result = run_cli("hostfile", "-w", "node-3,node-1,node-2", "-x", "node-1", "--format", "plain")
    assert result.stdout.splitlines() == ["node-3", "node-2"]
    result = run_cli("hostfile", "-w", "@reservation:sk-rec", "--format", "plain")
    assert result.stdout.splitlines() == ["node-2", "node-3"]


def test_every_node_command_spells_selection_as_slurm() -> None:
    """-w/--nodelist a list, -x/--exclude a list, -N/--nodes only a count (hidden alias aside)."""
    import click

    from slurmkit.cli import cli

    def commands(group: click.Group, prefix: tuple[str, ...] = ()):
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if isinstance(command, click.Group):
                yield from commands(command, (*prefix, name))
            elif command is not None:
                yield (*prefix, name), command

    seen = set()
    for path, command in commands(cli):
        for param in command.params:
            if not isinstance(param, click.Option):
                continue
            opts = set(param.opts)
            if "-w" in opts:
                assert opts == {"-w", "--nodelist"}, path
                seen.add(" ".join(path))
            if "-N" in opts or ("--nodes" in opts and not param.hidden):
                assert param.type.name in ("integer", "integer range"), path  # a count
                assert opts <= {"-N", "--nodes"}, path
            if "--nodes" in opts and param.hidden:
                assert path in {("run",), ("undrain",)}, path
    assert {"run", "undrain", "faulty scan", "hostfile", "pyspy"} <= seen


def test_faulty_scan_count_and_lists_exclude_each_other(fake_slurm: FakeSlurm, run_cli) -> None:
    result = run_cli("faulty", "scan", "-N", "2", "-x", "node-1", exit_code=2)
    assert "-N/--nodes (a count) and -w/--nodelist, -x/--exclude exclude each other" in (
        result.stderr
    )
    assert fake_slurm.calls == []
