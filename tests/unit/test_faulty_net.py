"""The network checks without a cluster: the driver's pair schedule, its lines, the rules.

The driver (``templates/_net_check.py``) is the code the job runs, loaded here as a
module: the schedule tested is the one shipped. Its ``pair_result`` lines are read back
by :mod:`slurmkit.faulty.net`, so the parser is tested on what the driver prints. The
localisation and slow rules are table-driven; a property test breaks one random node
of a random cluster and checks that exactly that node is named.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmkit.faulty import net
from slurmkit.resources import data_dir
from slurmkit.templating import render_template

DRIVER_PATH = data_dir("templates") / "_net_check.py"


def _load_driver() -> ModuleType:
    spec = importlib.util.spec_from_file_location("slurmkit_net_driver", DRIVER_PATH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


driver = _load_driver()


def nodes(n: int) -> list[str]:
    return [f"node-{i}" for i in range(1, n + 1)]


# ---------------------------------------------------------------- the schedule


@pytest.mark.parametrize("n", range(2, 14))
def test_all_rounds_meet_every_pair_once_with_disjoint_pairs_per_round(n: int) -> None:
    plan = driver.schedule(nodes(n), 0)
    assert len(plan) == (n - 1 if n % 2 == 0 else n)
    met = []
    for pairs in plan:
        seen = [x for pair in pairs for x in pair]
        assert len(seen) == len(set(seen)), f"a node twice in one round: {pairs}"
        assert len(pairs) == n // 2  # everyone plays, except one bye when n is odd
        met += [frozenset(p) for p in pairs]
    assert len(met) == len(set(met)), "a pair met twice"
    assert set(met) == {frozenset(p) for p in itertools.combinations(nodes(n), 2)}


@pytest.mark.parametrize("n", range(2, 14))
def test_the_default_rounds_give_each_node_distinct_partners(n: int) -> None:
    plan = driver.schedule(nodes(n), net.DEFAULT_ROUNDS)
    assert len(plan) == min(net.DEFAULT_ROUNDS, n - 1 if n % 2 == 0 else n)
    assert len(plan) == net.default_rounds(n, None)
    for node in nodes(n):
        partners = [b if a == node else a for pairs in plan for a, b in pairs if node in (a, b)]
        assert len(partners) == len(set(partners))
        assert len(partners) >= min(len(plan), n - 1) - (n % 2)  # at most one bye


def test_rounds_count_and_pair_timeout() -> None:
    assert [net.default_rounds(n, None) for n in (2, 3, 4, 5, 9)] == [1, 3, 3, 3, 3]
    assert [net.default_rounds(n, 0) for n in (2, 3, 4, 5, 9)] == [1, 3, 3, 5, 9]
    assert net.default_rounds(8, 2) == 2 and net.default_rounds(4, 10) == 3
    assert net.pair_timeout(900, 4, None) == 60  # capped
    assert net.pair_timeout(300, 4, None) == 50  # (300 - 60) / 3 - 30
    assert net.pair_timeout(60, 64, 0) == 5  # never below the floor


def test_the_template_carries_the_driver_verbatim() -> None:
    text = render_template("net-check", overrides={"nodes": 4}).text
    start = text.index("SLURMKIT_NET_CODE=$(cat <<'SLURMKIT_NET'\n") + len(
        "SLURMKIT_NET_CODE=$(cat <<'SLURMKIT_NET'\n"
    )
    end = text.index("\nSLURMKIT_NET\n)", start)
    assert text[start:end] == DRIVER_PATH.read_text().rstrip("\n")
    assert '"${py[@]}" -c "$SLURMKIT_NET_CODE" driver --checks net' in text
    assert "--rounds 3" in text and "--port 29600" in text
    assert 'bash -c "$task"' not in text  # no per-node check asked: no per-node step
    mixed = render_template("net-check", overrides={"nodes": 4, "checks": ["python", "net"]}).text
    assert "slurmkit-checks python || rc=$?" in mixed and "--checks net " in mixed


# ---------------------------------------------------------------- the driver's lines


class _Step:
    def __init__(self, out: str, err: str = "", timed_out: bool = False) -> None:
        self._out, self._err, self.timed_out = out, err, timed_out

    def text(self) -> tuple[str, str]:
        return self._out, self._err


def _printed(step: _Step, a: str = "node-1", b: str = "node-3") -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        driver.pair_result("net", 2, a, b, 29601, step)
    return buffer.getvalue()


OK0 = "SLURMKIT_RANK rank=0 node=node-1 status=ok mbps=812.5 seconds=0.059 error=\n"
OK1 = "SLURMKIT_RANK rank=1 node=node-3 status=ok mbps=790.1 seconds=0.061 error=\n"
FAIL1 = (
    "SLURMKIT_RANK rank=1 node=node-3 status=fail error=TimeoutError: connect to node-1 "
    "(127.0.1.1 port 29601) from 127.0.1.3: timed out\n"
)


def test_an_ok_pair_is_read_back_with_the_lower_bandwidth() -> None:
    line = _printed(_Step(OK0 + OK1))
    (pair,) = net.parse(line).pairs
    assert pair == net.Pair("net", 2, "node-1", "node-3", "ok", 790.1, "", ("node-1", "node-3"))


def test_a_failed_rank_names_its_node_and_error() -> None:
    (pair,) = net.parse(_printed(_Step(OK0.replace("status=ok", "status=ok") + FAIL1))).pairs
    assert pair.status == "fail" and pair.mbps is None
    assert pair.error == (
        "node-3: TimeoutError: connect to node-1 (127.0.1.1 port 29601) from 127.0.1.3: timed out"
    )


def test_a_rank_that_never_ran_and_a_killed_step() -> None:
    err = "srun: error: node-3: task 1: Exited with exit code 1\n"
    (pair,) = net.parse(_printed(_Step(OK0, err))).pairs
    assert pair.status == "fail"
    assert "node-3: no result (its task did not run)" in pair.error
    assert "srun: error: node-3: task 1" in pair.error
    assert pair.ran == ("node-1",) and pair.did_not_run == {"node-3"}
    (pair,) = net.parse(_printed(_Step("", "", timed_out=True))).pairs
    assert pair.status == "timeout" and "step killed" in pair.error


def test_parse_reads_every_kind_and_ignores_malformed_lines() -> None:
    text = "\n".join(
        [
            "slurmkit: job 7 started",
            "SLURMKIT_NET kind=plan check=net nodes=node-1,node-2 rounds=1",
            "SLURMKIT_NET kind=planned check=net round=1 a=node-1 b=node-2",
            "0: SLURMKIT_NET kind=pair check=net round=1 a=node-1 b=node-2 port=29600 "
            "status=ok mbps=10.5 ran=node-1,node-2 error=",
            "SLURMKIT_NET kind=skip check=nccl-multi node=node-1 why=torch is not importable",
            "SLURMKIT_NET kind=unknown check=nccl-multi node=node-2 why=probe step timed out",
            "SLURMKIT_NET kind=done check=net pairs=1",
            "SLURMKIT_NET kind=pair check=net round=x a=node-1 b=node-2 status=ok mbps=1 error=",
            "SLURMKIT_NET kind=pair check=net round=1 a=node-1 b=node-2 status=great mbps=1",
            "SLURMKIT_NET kind=pair check=net round=1 a=node-1 b=node-2 status=ok mbps=-",
            "SLURMKIT_NET kind=pair check=other round=1 a=node-1 b=node-2 status=ok mbps=1",
            "SLURMKIT_NET kind=pair check=net round=1 a=node-1 b",
            "SLURMKIT_NET",
        ]
    )
    log = net.parse(text)
    assert log.planned == [("net", 1, "node-1", "node-2")]
    assert log.pairs == [
        net.Pair("net", 1, "node-1", "node-2", "ok", 10.5, "", ("node-1", "node-2"))
    ]
    assert log.skipped == {("nccl-multi", "node-1"): "torch is not importable"}
    assert log.unknown == {("nccl-multi", "node-2"): "probe step timed out"}
    assert log.done == {"net"}


# ---------------------------------------------------------------- the rules


def pair_line(r: int, a: str, b: str, status: str = "ok", mbps: float | None = 800.0) -> str:
    rate = f"{mbps:.1f}" if status == "ok" and mbps is not None else "-"
    error = "" if status == "ok" else f"{b}: TimeoutError: connect to {a}: timed out"
    return (
        f"SLURMKIT_NET kind=pair check=net round={r} a={a} b={b} port=29600 status={status} "
        f"mbps={rate} ran={a},{b} error={error}"
    )


def simulate(
    n: int,
    rounds: int = net.DEFAULT_ROUNDS,
    broken: set[str] = frozenset(),  # type: ignore[assignment]
    slow: dict[str, float] | None = None,
    status: str = "fail",
    stop_after: int | None = None,
) -> str:
    """The lines the driver prints for a cluster where ``broken`` nodes fail every pair."""
    slow = slow or {}
    plan = driver.schedule(nodes(n), rounds)
    lines = [
        f"SLURMKIT_NET kind=planned check=net round={r} a={a} b={b}"
        for r, pairs in enumerate(plan, 1)
        for a, b in pairs
    ]
    for r, pairs in enumerate(plan, 1):
        if stop_after is not None and r > stop_after:
            break
        for a, b in pairs:
            bad = a in broken or b in broken
            rate = min(slow.get(a, 800.0 + r), slow.get(b, 800.0 + r))
            lines.append(pair_line(r, a, b, status if bad else "ok", rate))
    return "\n".join(lines)


def verdict(text: str, n: int, ratio: float = 0.5) -> dict[str, tuple[str, str]]:
    found = net.results(("net",), nodes(n), text, ratio)
    return {r.node: (r.status, r.detail) for r in found}


def statuses(text: str, n: int) -> dict[str, str]:
    return {node: status for node, (status, _) in verdict(text, n).items()}


def test_healthy_nodes_pass_with_their_bandwidth() -> None:
    found = verdict(simulate(4), 4)
    assert {s for s, _ in found.values()} == {"pass"}
    assert found["node-1"][1] == "median 802.0 MB/s over 3 pair(s)"


@pytest.mark.parametrize(
    ("n", "status"), [(4, "fail"), (4, "timeout"), (5, "fail"), (7, "timeout"), (3, "fail")]
)
def test_the_node_every_failing_pair_shares_fails_and_its_partners_pass(n: int, status) -> None:
    found = verdict(simulate(n, broken={"node-3"}, status=status), n)
    assert {k: s for k, (s, _) in found.items()} == {
        **dict.fromkeys(nodes(n), "pass"),
        "node-3": "fail",
    }
    partners = found["node-3"][1]
    assert partners.startswith("all ") and "pairs failed, with node-" in partners
    assert "timed out" in partners
    warned = [k for k, (s, d) in found.items() if d.startswith("warning: 1 of")]
    assert warned and all(found[k][1].endswith("pair(s)") for k in warned)
    assert "(with node-3)" in found[warned[0]][1]


def test_two_nodes_and_a_failed_pair_cannot_tell_which() -> None:
    found = verdict(simulate(2, broken={"node-2"}), 2)
    for node in nodes(2):
        status, detail = found[node]
        assert status == "fail"
        assert "cannot tell which of the 2 (node-1, node-2)" in detail.replace(
            "(node-2, node-1)", "(node-1, node-2)"
        )


def test_every_pair_failing_names_no_node_but_none_passes() -> None:
    found = verdict(simulate(4, broken=set(nodes(4))), 4)
    assert {s for s, _ in found.values()} == {"unknown"}
    assert "so did every other pair" in found["node-1"][1]


def test_two_broken_nodes_out_of_six_are_both_named() -> None:
    assert statuses(simulate(6, broken={"node-2", "node-5"}), 6) == {
        **dict.fromkeys(nodes(6), "pass"),
        "node-2": "fail",
        "node-5": "fail",
    }


def test_a_scan_that_ended_after_round_one_leaves_unrun_nodes_unknown() -> None:
    """5 nodes: node-1 has the bye in round 1; the job was cancelled after it."""
    found = verdict(simulate(5, stop_after=1), 5)
    assert found["node-1"][0] == "unknown"
    assert "no result for its pairs with node-" in found["node-1"][1]
    assert {found[n][0] for n in nodes(5)[1:]} == {"pass"}


def test_a_node_whose_tasks_never_ran_is_unknown_and_blames_no_partner() -> None:
    """node-3 died before the scan's steps: srun started nothing there, in any pair."""
    text = simulate(4, broken={"node-3"})
    text = re.sub(r"ran=node-3,(\S+)", r"ran=\1", re.sub(r"ran=(\S+),node-3", r"ran=\1", text))
    found = verdict(text, 4)
    assert {k: s for k, (s, _) in found.items()} == {
        **dict.fromkeys(nodes(4), "pass"),
        "node-3": "unknown",
    }
    assert found["node-3"][1].startswith("its task did not run in its pair(s) with node-[1-2,4]")
    assert not any("warning" in d for _, d in found.values())  # no blame on its partners


def died_after_round_one(text: str, node: str) -> str:
    """``node`` passed its round-1 pair, then died: its later pairs ran on the partner alone."""
    out = []
    for line in text.splitlines():
        if "kind=pair" in line and node in line:
            if " round=1 " in line:
                line = re.sub(r"status=\S+ mbps=\S+", "status=ok mbps=800.0", line)
                line = re.sub(r"error=.*", "error=", line)
            else:
                line = re.sub(rf"ran={node},(\S+)|ran=(\S+),{node}", r"ran=\1\2", line)
        out.append(line)
    return "\n".join(out)


def test_a_node_that_died_after_a_good_pair_is_unknown_never_pass() -> None:
    """Its one good pair says nothing about the node now: its later tasks did not run."""
    found = verdict(died_after_round_one(simulate(4, broken={"node-3"}), "node-3"), 4)
    assert {k: s for k, (s, _) in found.items()} == {
        **dict.fromkeys(nodes(4), "pass"),
        "node-3": "unknown",
    }
    detail = found["node-3"][1]
    assert detail.startswith("its task did not run in its pair(s) with node-[1,4] ")
    assert "after 1 good pair(s)" in detail
    assert not any("warning" in d for _, d in found.values())  # no blame on its partners


def test_no_line_at_all_is_unknown_never_pass() -> None:
    found = verdict("slurmkit: job 7 started\n", 3)
    assert {s for s, _ in found.values()} == {"unknown"}
    assert found["node-2"][1].startswith("no pair ran")


def test_a_node_far_below_the_median_is_slow_with_its_figure() -> None:
    found = verdict(simulate(4, slow={"node-2": 4.4}), 4)
    assert {k: s for k, (s, _) in found.items()} == {
        **dict.fromkeys(nodes(4), "pass"),
        "node-2": "slow",
    }
    assert found["node-2"][1].startswith("slow: median 4.4 MB/s over 3 pair(s), below 0.5 x")
    assert found["node-2"][1].endswith("the median of all pairs (402.7 MB/s)")


def test_slow_needs_the_ratio_and_cannot_be_told_with_two_nodes() -> None:
    assert statuses(simulate(4, slow={"node-2": 500.0}), 4)["node-2"] == "pass"  # 0.6 x
    assert set(statuses(simulate(2, slow={"node-2": 1.0}), 2).values()) == {"pass"}
    strict = verdict(simulate(4, slow={"node-2": 500.0}), 4, ratio=0.9)
    assert strict["node-2"][0] == "slow"


def test_lines_for_nodes_outside_the_job_and_forged_repeats_are_ignored() -> None:
    text = simulate(4, broken={"node-3"})
    forged = [
        pair_line(1, "node-1", "node-9", "fail"),
        pair_line(1, "node-1", "node-4", "fail"),  # a repeat of round 1's real pair
        pair_line(1, "node-1", "node-1", "fail"),
    ]
    assert statuses(text + "\n" + "\n".join(forged), 4) == statuses(text, 4)
    assert "node-9" not in statuses(text + "\n" + forged[0], 4)


def test_nccl_multi_without_torch_is_skipped_with_why() -> None:
    text = "\n".join(
        f"SLURMKIT_NET kind=skip check=nccl-multi node={n} why=torch is not importable by "
        "/usr/bin/python3 (ModuleNotFoundError)"
        for n in nodes(4)
    )
    found = net.results(("net", "nccl-multi"), nodes(4), text + "\n" + simulate(4), 0.5)
    by = {(r.node, r.check): r for r in found}
    assert {by[(n, "nccl-multi")].status for n in nodes(4)} == {"skipped"}
    assert by[("node-1", "nccl-multi")].detail.startswith("torch is not importable")
    assert {by[(n, "net")].status for n in nodes(4)} == {"pass"}


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(min_value=3, max_value=16),
    data=st.data(),
    rounds=st.sampled_from([net.DEFAULT_ROUNDS, 0]),
    status=st.sampled_from(["fail", "timeout"]),
)
def test_one_broken_node_of_any_cluster_is_named_alone(n: int, data, rounds, status) -> None:
    """With the default rounds (or all), every other node also meets a healthy partner."""
    bad = data.draw(st.sampled_from(nodes(n)))
    found = statuses(simulate(n, rounds, broken={bad}, status=status), n)
    assert found == {**dict.fromkeys(nodes(n), "pass"), bad: "fail"}


def test_too_few_rounds_to_see_a_good_pair_name_nobody() -> None:
    """3 nodes, 2 rounds: both pairs hold node-3 and no pair succeeded; no node passes."""
    assert statuses(simulate(3, 2, broken={"node-3"}), 3) == dict.fromkeys(nodes(3), "unknown")


# ---------------------------------------------------------------- the programs, on loopback


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pair_argv(a: str, b: str, port: int, timeout: float) -> list[str]:
    code = DRIVER_PATH.read_text()
    return [
        sys.executable, "-c", code, "pair", "--check", "net", "--a", a, "--b", b,
        "--port", str(port), "--size", "2", "--iters", "2", "--timeout", str(timeout),
    ]  # fmt: skip


def _run_ranks(names: list[str], port: int, timeout: float) -> list[str]:
    procs = [
        subprocess.Popen(
            _pair_argv("127.0.0.1", "127.0.0.2", port, timeout),
            env={**os.environ, "SLURMD_NODENAME": name},
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    return [p.communicate(timeout=timeout + 30)[0] for p in procs]


def test_the_tcp_pair_all_reduces_on_loopback_from_each_nodes_own_address() -> None:
    out = _run_ranks(["127.0.0.1", "127.0.0.2"], _free_port(), 20)
    ranks = [driver.rank_lines(text) for text in out]
    assert ranks[0][0]["status"] == "ok" and ranks[1][1]["status"] == "ok", out
    assert float(ranks[0][0]["mbps"]) > 0


def test_a_peer_that_never_listens_is_a_fail_line_within_the_pair_time() -> None:
    (out,) = _run_ranks(["127.0.0.2"], _free_port(), 2)
    rank = driver.rank_lines(out)[1]
    assert rank["status"] == "fail"
    assert rank["error"].startswith("TimeoutError: connect to 127.0.0.1 (127.0.0.1 port ")
    assert "from 127.0.0.2: refused" in rank["error"]


def test_the_probe_says_skipped_without_torch_cuda_never_ok() -> None:
    code = DRIVER_PATH.read_text()
    out = subprocess.run(
        [sys.executable, "-c", code, "probe"],
        env={**os.environ, "SLURMD_NODENAME": "node-1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert out.startswith("SLURMKIT_PROBE node=node-1 status=skipped why=torch")


def test_the_driver_module_is_the_shipped_file() -> None:
    assert Path(driver.__file__) == DRIVER_PATH


def test_a_step_past_its_time_is_killed_and_marked_timed_out() -> None:
    """The driver's bound on a hung pair: the step is ended, the round goes on."""
    hung = driver.Step([sys.executable, "-c", "import time; time.sleep(600)"], 0.5)
    quick = driver.Step([sys.executable, "-c", "print('SLURMKIT_RANK rank=0 status=ok')"], 60)
    driver.run_all([hung, quick])
    assert hung.timed_out and hung.proc.returncode is not None
    assert not quick.timed_out and quick.text()[0].startswith("SLURMKIT_RANK rank=0")


def test_a_finished_pair_is_reported_while_its_rounds_hung_pair_still_waits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A round's pair with a frozen node waits its limit plus the launch grace; the job may
    end NODE_FAIL before that (issue 27 CI: 39 s after the start, the round would end at 44 s).
    The pair that finished is on stdout at once, so the job's log keeps it."""
    ok = "SLURMKIT_RANK rank={} status=ok mbps=900.0"
    quick = driver.Step([sys.executable, "-c", f"print('{ok.format(0)}\\n{ok.format(1)}')"], 60)
    hung = driver.Step([sys.executable, "-c", "import time; time.sleep(600)"], 60)
    seen: list[str] = []
    reported = driver.pair_result

    def note(*args: object) -> None:
        reported(*args)
        seen.append(capsys.readouterr().out)
        hung.deadline = 0  # the hung pair's limit passes only after the quick one is out

    driver.pair_result = note
    try:
        driver.report_as_they_end("net", 1, [("n1", "n4", 1, hung), ("n2", "n3", 2, quick)])
    finally:
        driver.pair_result = reported
    assert " a=n2 b=n3 " in seen[0] and "status=ok" in seen[0]
    assert " a=n1 b=n4 " in seen[1] and "status=timeout" in seen[1] and hung.timed_out


# The driver's lines from two real runs of the mid-scan test (node-4's slurmd frozen while
# the job ran; the job ended NODE_FAIL), 2026-11-26 CI rehearsal: the end of a timed-out
# pair whose task never reported is a silent node, not a network verdict.
_PLAN_1_TO_4 = "".join(
    f"SLURMKIT_NET kind=planned check=net round={r} a={a} b={b}\n"
    for r, a, b in [(1, "node-1", "node-4"), (1, "node-2", "node-3"), (2, "node-1", "node-3"),
                    (2, "node-4", "node-2"), (3, "node-1", "node-2"), (3, "node-3", "node-4")]
)  # fmt: skip
_KILLED = "no result within the pair's time limit: step killed"


def _pair(r: int, a: str, b: str, status: str, mbps: str, ran: str, error: str = "") -> str:
    return (
        f"SLURMKIT_NET kind=pair check=net round={r} a={a} b={b} port={29599 + r} "
        f"status={status} mbps={mbps} ran={ran} error={error}\n"
    )


_FROZEN_AFTER_ROUND_1_2605 = _PLAN_1_TO_4 + "".join(
    [
        _pair(1, "node-1", "node-4", "ok", "837.4", "node-1,node-4"),
        _pair(1, "node-2", "node-3", "ok", "902.1", "node-2,node-3"),
        _pair(2, "node-1", "node-3", "ok", "1047.0", "node-1,node-3"),
        _pair(2, "node-4", "node-2", "timeout", "-", "node-2", _KILLED),
    ]
)
_FROZEN_IN_ROUND_1_2411 = _PLAN_1_TO_4 + "".join(
    [
        _pair(1, "node-1", "node-4", "timeout", "-", "node-1", _KILLED),
        _pair(1, "node-2", "node-3", "ok", "862.1", "node-2,node-3"),
    ]
)


def test_a_node_silent_in_a_timed_out_pair_after_a_good_one_is_unknown_never_pass() -> None:
    """26.05: node-4 passed round 1, then froze; its round-2 pair timed out with only
    node-2's task reporting. It read "pass" (exit 0): it is unknown, and node-2 is not blamed."""
    found = statuses(_FROZEN_AFTER_ROUND_1_2605, 4)
    assert found == {"node-1": "pass", "node-2": "pass", "node-3": "pass", "node-4": "unknown"}


def test_a_partner_silent_in_a_timed_out_pair_blames_nobody() -> None:
    """24.11: node-4 froze before its first pair; the job ended NODE_FAIL after round 1.
    node-1's only pair was with the silent node-4: no pair tested node-1 (unknown), never
    FAIL; node-2 and node-3 pass on their own pair."""
    found = verdict(_FROZEN_IN_ROUND_1_2411, 4)
    assert {k: s for k, (s, _) in found.items()} == {
        "node-1": "unknown", "node-2": "pass", "node-3": "pass", "node-4": "unknown",
    }  # fmt: skip
    assert found["node-1"][1].startswith("its partners' tasks did not run (node-4)")
