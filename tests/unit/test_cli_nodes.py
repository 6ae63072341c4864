"""``slurmkit nodes``: stdout, stderr and exit codes of every subcommand, through the root CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest

from slurmkit.errors import NotFound

# -- expand ---------------------------------------------------------------------


def test_expand_prints_one_name_per_line(run_cli) -> None:
    result = run_cli("nodes", "expand", "rack[1-2]-n[01-02]", "login")
    assert result.stdout == "rack1-n01\nrack1-n02\nrack2-n01\nrack2-n02\nlogin\n"
    assert result.stderr == ""


def test_expand_separator_stdin_and_json(run_cli) -> None:
    assert run_cli("nodes", "expand", "--sep", ",", "n[1-3],n2").stdout == "n1,n2,n3,n2\n"
    assert run_cli("nodes", "expand", "--sep", r"\t", "n[1-2]").stdout == "n1\tn2\n"
    assert run_cli("nodes", "expand", "-", input="n[1-2] m1\n").stdout == "n1\nn2\nm1\n"
    assert json.loads(run_cli("nodes", "expand", "--json", "n[1-2]").stdout) == ["n1", "n2"]
    assert "no host names" in run_cli("nodes", "expand", ",", exit_code=2).stderr  # issue 14


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("n[1-", "slurmkit: '[' is never closed at position 2 in 'n[1-'\n"),
        ("n[5-1]", "slurmkit: range '5-1' goes down at position 3 in 'n[5-1]'\n"),
        ("n]", "slurmkit: ']' without a matching '[' at position 2 in 'n]'\n"),
    ],
)
def test_bad_hostlist_is_one_line_and_exit_2(run_cli, text: str, message: str) -> None:
    for command in ("expand", "fold", "count", "union"):
        result = run_cli("nodes", command, "n1", text, exit_code=2)
        assert result.stderr == message
        assert result.stdout == ""


def test_error_in_a_long_stdin_list_stays_one_short_line(run_cli) -> None:
    names = ",".join(f"node-{i}" for i in range(50_000))
    result = run_cli("nodes", "fold", "-", input=f"{names},node-[3-1],{names}\n", exit_code=2)
    assert result.stderr.count("\n") == 1 and len(result.stderr) < 200
    assert f"range '3-1' goes down (character {len(names) + 8} of" in result.stderr
    assert result.stderr.endswith("at position 7 in 'node-[3-1]'\n")


def test_max_refuses_big_expansions_only(run_cli) -> None:
    result = run_cli("nodes", "expand", "--max", "10", "n[1-11]", exit_code=2)
    assert "too many names (11, limit 10) from 'n[1-11]' at position 1" in result.stderr
    assert result.stdout == ""
    assert run_cli("nodes", "expand", "--max", "0", "n[1-11]").stdout.count("\n") == 11
    assert run_cli("nodes", "count", "--max", "10", "n[1-1000000000]").stdout == "1000000000\n"
    assert run_cli("nodes", "diff", "--max", "10", "n[1-100]", "n5").stdout == "n[1-4,6-100]\n"


def test_stdin_only_once(run_cli) -> None:
    result = run_cli("nodes", "expand", "-", "-", input="n1", exit_code=2)
    assert "only once" in result.stderr


# -- fold -------------------------------------------------------------------------


def test_fold_sorts_and_accepts_hostlists(run_cli) -> None:
    result = run_cli("nodes", "fold", "n3", "n1", "n[2,10]", "n01", "login")
    assert result.stdout == "login,n[1-3,01,10]\n"  # Slurm's order: 01 sorts with 2-digit numbers
    assert result.stderr == ""


def test_fold_reads_100k_names_from_stdin(run_cli) -> None:
    names = [f"node-{i}" for i in range(100_000, 0, -1)]
    text = "\n".join(names[:50_000]) + "\n" + ",".join(names[50_000:]) + "\n"
    assert run_cli("nodes", "fold", "-", input=text).stdout == "node-[1-100000]\n"


def test_fold_keep_order_and_multi_dim(run_cli) -> None:
    assert run_cli("nodes", "fold", "--keep-order", "n3,n1,n2,n2").stdout == "n[3,1-2,2]\n"
    multi = run_cli("nodes", "fold", "--multi-dim", "r1-n1,r1-n2,r2-n1,r2-n2")
    assert multi.stdout == "r[1-2]-n[1-2]\n"
    both = run_cli("nodes", "fold", "--keep-order", "--multi-dim", "n1", exit_code=2)
    assert both.stderr == "slurmkit: --keep-order and --multi-dim cannot be combined\n"


def test_fold_json(run_cli) -> None:
    data = json.loads(run_cli("nodes", "fold", "--json", "n[1-3],n2").stdout)
    assert data == {"nodes": "n[1-3]", "count": 3}
    kept = json.loads(run_cli("nodes", "fold", "--json", "--keep-order", "n[1-3],n2").stdout)
    assert kept == {"nodes": "n[1-3,2]", "count": 4}


# -- count and set operations --------------------------------------------------------------


def test_count(run_cli) -> None:
    assert run_cli("nodes", "count", "n[1-3],n2").stdout == "4\n"  # like scontrol: duplicates
    assert run_cli("nodes", "count", "--unique", "n[1-3],n2").stdout == "3\n"
    assert json.loads(run_cli("nodes", "count", "--json", "n[1-3]", "m1").stdout) == {"count": 4}


@pytest.mark.parametrize(
    ("args", "stdout"),
    [
        (("diff", "n[1-10000000]", "n[5-6]"), "n[1-4,7-10000000]\n"),
        (("diff", "n[1-10]", "n[1-3]", "n[8-10]"), "n[4-7]\n"),
        (("union", "n[1-3]", "n[5-6]", "m1"), "m1,n[1-3,5-6]\n"),
        (("intersect", "n[1-10]", "n[5-20]", "n[1-6]"), "n[5-6]\n"),
        (("xor", "n[1-5]", "n[4-9]"), "n[1-3,6-9]\n"),
        (("intersect", "n[1-3]", "m[1-3]"), ""),  # empty: nothing printed, still success
    ],
)
def test_set_operations(run_cli, args: tuple[str, ...], stdout: str) -> None:
    result = run_cli("nodes", *args)
    assert result.stdout == stdout
    assert result.stderr == ""


def test_set_operation_json_and_arity(run_cli) -> None:
    data = json.loads(run_cli("nodes", "union", "--json", "n[1-2]", "n[2-3]").stdout)
    assert data == {"nodes": "n[1-3]", "count": 3}
    assert (
        "unexpected extra argument (c)"
        in run_cli("nodes", "xor", "a", "b", "c", exit_code=2).stderr
    )
    assert "Missing argument 'A B...'" in run_cli("nodes", "diff", exit_code=2).stderr


# -- the nodes group itself (Slurm queries, faked at the query module) --------------


@pytest.fixture
def fake_query(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """The three query functions the group calls, answering from dictionaries."""
    try:
        from slurmkit.slurm import query
    except ImportError:  # the Slurm layer not written yet: a stand-in module
        import slurmkit.slurm

        query = types.ModuleType("slurmkit.slurm.query")
        monkeypatch.setitem(sys.modules, "slurmkit.slurm.query", query)
        monkeypatch.setattr(slurmkit.slurm, "query", query, raising=False)
    calls: list[tuple[str, str]] = []

    def answer(kind: str, table: dict[str, object]):
        def call(key: str) -> object:
            calls.append((kind, key))
            if key not in table:
                raise NotFound(f"unknown {kind} {key}")
            return table[key]

        return call

    jobs = {"5": "gpu[01-04]", "6": ""}
    partitions = {"gpu": "gpu[01-08]"}
    states = {"idle": ["gpu02", "gpu03", "gpu07", "cpu1"]}
    monkeypatch.setattr(query, "job_nodelist", answer("job", jobs), raising=False)
    monkeypatch.setattr(query, "partition_nodelist", answer("partition", partitions), raising=False)
    monkeypatch.setattr(query, "nodes_in_state", answer("state", states), raising=False)
    return types.SimpleNamespace(calls=calls)


def test_nodes_without_options_prints_help(run_cli, fake_query) -> None:
    result = run_cli("nodes")
    assert result.stdout.startswith("Usage: ") and " nodes [OPTIONS] [COMMAND]" in result.stdout
    assert fake_query.calls == []


def test_nodes_of_a_job(run_cli, fake_query) -> None:
    assert run_cli("nodes", "--jobid", "5").stdout == "gpu[01-04]\n"
    assert run_cli("nodes", "--jobid", "5", "--expand").stdout == "gpu01\ngpu02\ngpu03\ngpu04\n"
    data = json.loads(run_cli("nodes", "--jobid", "5", "--json").stdout)
    assert data == {"nodes": "gpu[01-04]", "count": 4}
    assert fake_query.calls == [("job", "5")] * 3


def test_several_options_intersect(run_cli, fake_query) -> None:
    result = run_cli("nodes", "--partition", "gpu", "--state", "idle")
    assert result.stdout == "gpu[02-03,07]\n"
    assert sorted(fake_query.calls) == [("partition", "gpu"), ("state", "idle")]


def test_no_matching_nodes_exits_1(run_cli, fake_query) -> None:
    result = run_cli("nodes", "--jobid", "5", "--state", "down", exit_code=2)
    assert result.stderr == "slurmkit: unknown state down\n"
    empty = run_cli("nodes", "--jobid", "6", exit_code=1)
    assert empty.stdout == ""
    assert empty.stderr == "slurmkit: no nodes match\n"


def test_group_options_do_not_mix_with_subcommands(run_cli, fake_query) -> None:
    result = run_cli("nodes", "--jobid", "5", "expand", "n1", exit_code=2)
    assert result.stderr == "slurmkit: --jobid cannot be used with a subcommand\n"
    alone = run_cli("nodes", "--expand", exit_code=2)
    assert alone.stderr == "slurmkit: --expand needs --jobid, --partition or --state\n"
    assert fake_query.calls == []


# -- process-level behaviour ------------------------------------------------------------------


def _slurmkit(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "slurmkit", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def test_hostlist_commands_need_no_slurm(tmp_path) -> None:
    env = {**os.environ, "PATH": str(tmp_path), "SLURM_CONF": str(tmp_path / "missing.conf")}
    out, err = _slurmkit("nodes", "fold", "n2,n1", env=env).communicate(timeout=60)
    assert (out, err) == (b"n[1-2]\n", b"")


def test_broken_pipe_is_quiet() -> None:
    """``slurmkit nodes expand ... | head -1`` must not print a traceback."""
    process = _slurmkit("nodes", "expand", "n[1-900000]")
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline() == b"n1\n"
    process.stdout.close()
    assert process.wait(timeout=60) == 0
    assert process.stderr.read() == b""


def test_module_imports_stay_light() -> None:
    code = (
        "import sys, slurmkit.cli.nodes\n"
        "heavy = ('tabulate', 'jinja2', 'paramiko', 'json', 'slurmkit.slurm')\n"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
