"""``slurmkit sandbox fault``: the nft program it hands the kernel, and what it refuses.

No rule reaches a kernel here: nft is faked at slurmkit's one process seam
(``_proc.runner``), which also proves the program goes to ``nft -f -`` on stdin
as an argv list, never through a shell. The integration suite
(``tests/integration/test_sandbox_fault.py``) shows the rules break real traffic.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.sandbox import lifecycle, netfault
from slurmkit.sandbox.spec import SandboxSpec


@pytest.fixture
def spec(tmp_path: Path) -> SandboxSpec:
    return SandboxSpec(dir=tmp_path / "sb", nodes=4, port_base=17800)


# ------------------------------------------------------------------ pure text
def test_table_name_is_stable_per_dir_and_distinct_between_dirs(tmp_path: Path) -> None:
    a = netfault.table_name(tmp_path / "a")
    assert a == netfault.table_name(tmp_path / "a" / ".." / "a")
    assert a != netfault.table_name(tmp_path / "b")
    assert re.fullmatch(r"slurmkit_[0-9a-f]{12}", a)


@pytest.mark.parametrize("node", ["node-1", "node-4"])
def test_node_index_accepts_the_sandbox_nodes(spec: SandboxSpec, node: str) -> None:
    assert netfault.node_index(spec, node) == int(node[-1])


@pytest.mark.parametrize(
    "node",
    ["node-0", "node-5", "node-03", "node-3 ", "node-3;", 'node-3" drop', "3", "", "NODE-3"],
)
def test_node_index_refuses_what_is_not_a_node_of_this_sandbox(
    spec: SandboxSpec, node: str
) -> None:
    with pytest.raises(UsageError, match=r"is not a node of the sandbox .*node-\[1-4\]"):
        netfault.node_index(spec, node)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("4mbytes", "4mbytes"),
        ("256kbytes", "256kbytes"),
        ("512 kbytes/second", "512kbytes"),
        ("100bytes", "100bytes"),
        ("8MBytes/s", "8mbytes"),
    ],
)
def test_parse_rate(text: str, canonical: str) -> None:
    assert netfault.parse_rate(text) == canonical


@pytest.mark.parametrize(
    "text", ["", "0mbytes", "-1kbytes", "4gbytes", "4", "4mbit", "4mbytes drop", "1.5mbytes"]
)
def test_parse_rate_refuses_anything_else(text: str) -> None:
    with pytest.raises(UsageError, match="is not a rate"):
        netfault.parse_rate(text)


def test_net_down_rules_cover_four_directions_and_spare_slurmd_and_ssh(spec: SandboxSpec) -> None:
    bodies = netfault.rules(spec, 3, "net-down")
    assert len(bodies) == 4
    # to / from a service on node-3, from node-3 to a service elsewhere and its replies
    directions = {re.search(r"ip (\w+) .* th (\w+) 1024-32767", b).groups() for b in bodies}  # type: ignore[union-attr]
    assert directions == {
        ("daddr", "dport"),
        ("saddr", "sport"),
        ("saddr", "dport"),
        ("daddr", "sport"),
    }
    for body in bodies:
        assert body.startswith("meta l4proto { tcp, udp } ip ")
        assert " 127.0.1.3 " in body
        assert "{ 17822, 17903 }" in body  # the ssh port and node-3's own slurmd port
        assert body.endswith(' drop comment "slurmkit-fault node=node-3 fault=net-down"')
        assert "limit" not in body


def test_net_slow_rules_police_at_the_rate(spec: SandboxSpec) -> None:
    bodies = netfault.rules(spec, 2, "net-slow", "256kbytes")
    assert len(bodies) == 4
    for body in bodies:
        assert " 127.0.1.2 " in body and "{ 17802, 17822 }" not in body
        assert "{ 17822, 17902 }" in body
        assert " limit rate over 256 kbytes/second drop comment " in body
        assert body.endswith('"slurmkit-fault node=node-2 fault=net-slow rate=256kbytes"')


def test_net_slow_default_rate(spec: SandboxSpec) -> None:
    (body, *_) = netfault.rules(spec, 1, "net-slow")
    assert f"over {netfault.DEFAULT_RATE[:-6]} mbytes/second" in body


@pytest.mark.parametrize(("index", "fault"), [(0, "net-down"), (5, "net-down"), (1, "net-lossy")])
def test_rules_refuse_bad_input(spec: SandboxSpec, index: int, fault: str) -> None:
    with pytest.raises(UsageError):
        netfault.rules(spec, index, fault)


def test_comment_roundtrips_through_its_parser() -> None:
    for args in (("node-3", "net-down", ""), ("node-12", "net-slow", "4mbytes")):
        match = netfault._COMMENT.match(netfault.comment(*args))
        assert match is not None and (match[1], match[2], match[3] or "") == args
    assert netfault._COMMENT.match("something someone else wrote") is None


def test_program_is_one_transaction_creating_table_and_chain() -> None:
    text = netfault.program("slurmkit_0123456789ab", ["ip daddr 127.0.1.1 drop"], [7, 9])
    assert text.splitlines() == [
        "add table inet slurmkit_0123456789ab",
        "add chain inet slurmkit_0123456789ab output "
        "{ type filter hook output priority 0; policy accept; }",
        "delete rule inet slurmkit_0123456789ab output handle 7",
        "delete rule inet slurmkit_0123456789ab output handle 9",
        "add rule inet slurmkit_0123456789ab output ip daddr 127.0.1.1 drop",
    ]


@pytest.mark.parametrize("table", ["filter", "slurmkit_x; flush ruleset", "slurmkit_0123"])
def test_program_refuses_a_table_that_is_not_ours(table: str) -> None:
    with pytest.raises(UsageError):
        netfault.program(table, [], [])


# ------------------------------------------------------------------ against a fake nft
class FakeNft:
    """nft as far as netfault uses it: JSON listings of one table, and ``-f -`` programs."""

    def __init__(self, table: str, rules: list[tuple[int, str]] | None = None) -> None:
        self.table = table
        self.exists = rules is not None
        self.rules = list(rules or [])
        self.calls: list[tuple[tuple[str, ...], str | None]] = []

    def __call__(
        self, argv: Sequence[str], *, input: str | None = None, **_: Any
    ) -> _proc.Completed:
        argv = tuple(argv)
        assert isinstance(argv[0], str) and argv[0].endswith("nft")
        self.calls.append((argv, input))
        args = argv[1:]
        items: list[dict[str, Any]] = [{"metainfo": {"version": "1.0.6"}}]
        if args == ("-j", "list", "tables", "inet"):
            if self.exists:
                items.append({"table": {"family": "inet", "name": self.table, "handle": 1}})
            return _proc.Completed(argv, 0, json.dumps({"nftables": items}), "", 0.0)
        if args == ("-j", "list", "chain", "inet", self.table, "output"):
            items += [
                {
                    "rule": {
                        "family": "inet",
                        "table": self.table,
                        "chain": "output",
                        "handle": h,
                        "comment": c,
                    }
                }
                for h, c in self.rules
            ]
            return _proc.Completed(argv, 0, json.dumps({"nftables": items}), "", 0.0)
        if args == ("-f", "-"):
            assert input is not None
            gone = {int(m) for m in re.findall(r"^delete rule .* handle (\d+)$", input, re.M)}
            self.rules = [(h, c) for h, c in self.rules if h not in gone]
            self.exists = True
            return _proc.Completed(argv, 0, "", "", 0.0)
        if args == ("delete", "table", "inet", self.table):
            self.exists = False
            return _proc.Completed(argv, 0, "", "", 0.0)
        raise AssertionError(f"unexpected nft call {argv}")

    @property
    def programs(self) -> list[str]:
        return [stdin or "" for argv, stdin in self.calls if argv[1:] == ("-f", "-")]


@pytest.fixture
def fake_nft(monkeypatch: pytest.MonkeyPatch, spec: SandboxSpec) -> FakeNft:
    monkeypatch.setattr(netfault, "find_program", lambda name: f"/usr/sbin/{name}")
    table = netfault.table_name(spec.dir)
    fake = FakeNft(
        table,
        [
            (11, netfault.comment("node-2", "net-down")),
            (12, netfault.comment("node-2", "net-down")),
            (13, "a rule someone else wrote"),
            (14, netfault.comment("node-4", "net-slow", "1mbytes")),
        ],
    )
    monkeypatch.setattr(_proc, "runner", fake)
    return fake


def test_set_fault_replaces_the_nodes_old_rules_in_the_same_transaction(
    spec: SandboxSpec, fake_nft: FakeNft
) -> None:
    done = netfault.set_fault(spec, "node-2", "net-slow", "256kbytes")
    assert done == netfault.ActiveFault("node-2", "net-slow", "256kbytes")
    (text,) = fake_nft.programs
    assert "handle 11" in text and "handle 12" in text
    assert "handle 13" not in text and "handle 14" not in text
    assert text.count("add rule ") == 4 and "fault=net-slow rate=256kbytes" in text


def test_clear_removes_exactly_that_nodes_rules(spec: SandboxSpec, fake_nft: FakeNft) -> None:
    assert netfault.clear(spec, "node-4") == [netfault.ActiveFault("node-4", "net-slow", "1mbytes")]
    assert [h for h, _ in fake_nft.rules] == [11, 12, 13]
    assert netfault.active(spec) == [netfault.ActiveFault("node-2", "net-down")]
    assert netfault.clear(spec, "node-1") == []
    assert len(fake_nft.programs) == 1  # nothing to remove: nft not asked to change anything


def test_remove_table(spec: SandboxSpec, fake_nft: FakeNft) -> None:
    assert netfault.remove_table(spec.dir) is True
    assert netfault.remove_table(spec.dir) is False
    assert netfault.active(spec) == []


def test_missing_nft_is_one_clear_line(monkeypatch: pytest.MonkeyPatch, spec: SandboxSpec) -> None:
    monkeypatch.setattr(netfault, "find_program", lambda name: None)
    with pytest.raises(EnvironmentProblem, match=r"needs nft \(Debian package nftables\)"):
        netfault.set_fault(spec, "node-1", "net-down")
    assert netfault.remove_table(spec.dir) is False  # down/up: no nft, no table to remove


def test_failing_nft_is_one_clear_line(monkeypatch: pytest.MonkeyPatch, spec: SandboxSpec) -> None:
    monkeypatch.setattr(netfault, "find_program", lambda name: f"/usr/sbin/{name}")
    monkeypatch.setattr(
        _proc,
        "runner",
        lambda argv, **_: _proc.Completed(
            tuple(argv), 1, "", "Error: Could not process rule: Operation not permitted\n", 0.0
        ),
    )
    with pytest.raises(
        EnvironmentProblem, match="failed \\(exit 1\\): Error: Could not process rule"
    ):
        netfault.active(spec)


# ------------------------------------------------------------------ the command
def test_cli_refuses_a_node_not_in_the_sandbox(run_cli: Any, spec: SandboxSpec) -> None:
    spec.dir.mkdir(mode=0o755)
    spec.save()
    result = run_cli("sandbox", "fault", "node-9", "net-down", "--dir", str(spec.dir), exit_code=2)
    assert result.stderr.strip().splitlines() == [
        f"slurmkit: 'node-9' is not a node of the sandbox in {spec.dir} (its nodes: node-[1-4])"
    ]


def test_cli_refuses_when_there_is_no_sandbox(run_cli: Any, tmp_path: Path) -> None:
    result = run_cli(
        "sandbox", "fault", "node-1", "clear", "--dir", str(tmp_path / "none"), exit_code=2
    )
    assert result.stderr.strip().splitlines() == [
        f"slurmkit: no sandbox in {tmp_path / 'none'}: run 'slurmkit sandbox up' first"
    ]


def test_cli_refuses_a_sandbox_that_is_not_up(
    run_cli: Any, monkeypatch: pytest.MonkeyPatch, spec: SandboxSpec
) -> None:
    spec.dir.mkdir(mode=0o755)
    spec.save()
    monkeypatch.setattr(lifecycle, "require_root", lambda: None)
    result = run_cli("sandbox", "fault", "node-1", "net-down", "--dir", str(spec.dir), exit_code=2)
    assert result.stderr.strip().splitlines() == [
        f"slurmkit: the sandbox in {spec.dir} is not up (not running)"
    ]


def test_cli_rate_only_with_net_slow(run_cli: Any, spec: SandboxSpec) -> None:
    args = ("sandbox", "fault", "node-1", "net-down", "--rate", "1mbytes", "--dir", str(spec.dir))
    result = run_cli(*args, exit_code=2)
    assert result.stderr.strip() == "slurmkit: --rate goes with net-slow only"


def test_cli_unknown_fault_is_a_usage_error(run_cli: Any, spec: SandboxSpec) -> None:
    result = run_cli("sandbox", "fault", "node-1", "net-lossy", "--dir", str(spec.dir), exit_code=2)
    assert "net-lossy" in result.stderr and "Traceback" not in result.stderr


def test_down_removes_the_sandboxs_table(
    monkeypatch: pytest.MonkeyPatch, spec: SandboxSpec, fake_nft: FakeNft
) -> None:
    """``down`` deletes this sandbox's nft table, so no fault outlives the cluster."""
    spec.dir.mkdir(mode=0o755)
    spec.save()
    said: list[str] = []
    assert netfault.active(spec) != []
    lifecycle.down(spec.dir, progress=said.append)
    assert not fake_nft.exists
    assert ("delete", "table", "inet", netfault.table_name(spec.dir)) in [
        argv[1:] for argv, _ in fake_nft.calls
    ]
    assert said == [f"removed the network faults (nft table {netfault.table_name(spec.dir)})"]


def test_down_without_nft_still_finishes(
    monkeypatch: pytest.MonkeyPatch, spec: SandboxSpec
) -> None:
    spec.dir.mkdir(mode=0o755)
    spec.save()
    monkeypatch.setattr(netfault, "find_program", lambda name: None)
    assert lifecycle.down(spec.dir) == []
