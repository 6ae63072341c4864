"""``slurmkit run`` on the sandbox, one suite for every transport (pdsh, ssh/paramiko, srun).

Faults are made without touching the shared nodes: an unreachable node is a
temporary ssh config that sends ``node-4`` to a closed port ahead of the
sandbox's own config; a timeout is a command that outlives ``--timeout``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import frozen_sshd, poll, submit

TRANSPORTS = ["pdsh", "ssh", "srun"]
SSH_TRANSPORTS = ["pdsh", "ssh"]


@pytest.fixture(scope="module")
def allocation(cluster: sandbox.SandboxSpec) -> Iterator[str]:
    """A 3-node job for srun to step into (1 CPU per node: others' jobs still fit)."""
    job_id = submit(
        "-N3",
        "--ntasks-per-node=1",
        "-J",
        "sk-remote-alloc",
        "-o",
        "/dev/null",
        "--wrap",
        "sleep 600",
    )
    try:
        poll(lambda: query.jobs(job_ids=[job_id])[0].state == "RUNNING", 120, "allocation")
        yield job_id
    finally:
        run_slurm(["scancel", job_id])


def _via(request: pytest.FixtureRequest, name: str) -> list[str]:
    if name == "srun":
        return ["--via", "srun", "--jobid", request.getfixturevalue("allocation")]
    return ["--via", name]


def _targets(cluster: sandbox.SandboxSpec, via: list[str]) -> list[str]:
    """All sandbox nodes, or the allocation's for srun."""
    if "srun" in via:
        from slurmkit.hostlist import expand

        return expand(query.job_nodelist(via[-1]))
    return cluster.node_names


def _run(
    run_cli,
    via: list[str],
    nodes: list[str],
    *cmd: str,
    exit_code: int | None = 0,
    extra: tuple[str, ...] = (),
) -> tuple[dict, str]:
    from slurmkit.hostlist import fold

    result = run_cli(
        "run", "-w", fold(nodes), *via, *extra, "--json", "--", *cmd, exit_code=exit_code
    )
    data = json.loads(result.stdout)
    return data, result.stderr


def _by_node(data: dict) -> dict[str, dict]:
    return {r["node"]: r for r in data["nodes"]}


@pytest.mark.parametrize("name", TRANSPORTS)
@pytest.mark.smoke
def test_runs_on_every_node(cluster, run_cli, request, name: str) -> None:
    via = _via(request, name)
    nodes = _targets(cluster, via)
    data, _ = _run(run_cli, via, nodes, "hostname")
    assert data["transport"] == name
    assert {n: (r["status"], r["exit_code"], r["stdout"]) for n, r in _by_node(data).items()} == {
        n: ("ok", 0, f"{n}\n") for n in nodes
    }


@pytest.mark.parametrize("name", TRANSPORTS)
def test_exit_codes_are_per_node_and_output_is_grouped(cluster, run_cli, request, name) -> None:
    via = _via(request, name)
    nodes = _targets(cluster, via)
    odd = nodes[1]
    script = f'echo same; if [ "$(hostname)" = {odd} ]; then echo oops >&2; exit 3; fi'
    # Grouping, not connecting, is under test: a CI machine running three clusters on two
    # cores once took over the default 10 s to connect to one node, which then stood apart.
    patient = ("--connect-timeout", "60")
    data, _ = _run(run_cli, via, nodes, script, exit_code=1, extra=patient)
    results = _by_node(data)
    assert results[odd]["status"] == "failed" and results[odd]["exit_code"] == 3
    assert results[odd]["stderr"] == "oops\n"
    assert all(results[n]["status"] == "ok" for n in nodes if n != odd)
    from slurmkit.hostlist import fold

    text = run_cli("run", "-w", fold(nodes), *via, *patient, "--", script, exit_code=1).stdout
    lines = text.splitlines()
    assert fold([n for n in nodes if n != odd]) in lines, text  # identical output shown once
    assert f"{odd} (exit 3)" in lines and f"{odd}: failed: exit code 3" in lines


@pytest.mark.parametrize("name", TRANSPORTS)
def test_timeout_is_per_node(cluster, run_cli, request, name) -> None:
    via = _via(request, name)
    nodes = _targets(cluster, via)
    slow = nodes[-1]
    script = f'if [ "$(hostname)" = {slow} ]; then sleep 8; fi; echo done'
    data, _ = _run(run_cli, via, nodes, script, exit_code=1, extra=("--timeout", "2"))
    results = _by_node(data)
    assert results[slow]["status"] == "timeout" and results[slow]["exit_code"] is None
    assert all(
        results[n]["status"] == "ok" and results[n]["stdout"] == "done\n"
        for n in nodes
        if n != slow
    )


@pytest.fixture
def node4_refused(cluster: sandbox.SandboxSpec, tmp_path: Path) -> Path:
    """An ssh config where node-4's sshd is 'down' (a closed port); the rest is the sandbox's."""
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host node-4\n  Port 1\nMatch all\nInclude {cluster.ssh_config}\n")
    return cfg


@pytest.mark.parametrize("name", SSH_TRANSPORTS)
def test_unreachable_node_does_not_stop_the_others(cluster, run_cli, node4_refused, name) -> None:
    data, _ = _run(
        run_cli,
        ["--via", name],
        cluster.node_names,
        "hostname",
        exit_code=1,
        extra=("--ssh-config", str(node4_refused)),
    )
    results = _by_node(data)
    assert results["node-4"]["status"] == "unreachable"
    assert "refused" in results["node-4"]["error"].lower()
    assert [results[n]["stdout"] for n in cluster.node_names[:3]] == [
        f"{n}\n" for n in cluster.node_names[:3]
    ]


def test_srun_outside_the_allocation_fails_every_node(cluster, run_cli, allocation) -> None:
    from slurmkit.hostlist import expand

    outside = [n for n in cluster.node_names if n not in expand(query.job_nodelist(allocation))]
    data, _ = _run(run_cli, ["--via", "srun", "--jobid", allocation], outside, "true", exit_code=1)
    (result,) = data["nodes"]
    assert result["status"] == "failed"
    assert "Requested node configuration is not available" in result["error"]


def test_srun_without_nodes_uses_the_jobs(cluster, run_cli, allocation) -> None:
    result = run_cli("run", "--jobid", allocation, "--json", "--", "echo $SLURM_JOB_ID")
    data = json.loads(result.stdout)
    assert data["transport"] == "srun"  # auto with a job id
    assert {r["stdout"] for r in data["nodes"]} == {f"{allocation}\n"}
    assert len(data["nodes"]) == 3


@pytest.mark.parametrize("name", SSH_TRANSPORTS)
def test_unknown_host_keys_are_refused_unless_insecure(cluster, run_cli, tmp_path, name) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        f"Host node-1\n  UserKnownHostsFile {empty}\n  GlobalKnownHostsFile {empty}\n"
        f"  StrictHostKeyChecking yes\nMatch all\nInclude {cluster.ssh_config}\n"
    )
    data, _ = _run(
        run_cli, ["--via", name], ["node-1"], "true", exit_code=1, extra=("--ssh-config", str(cfg))
    )
    assert data["nodes"][0]["status"] == "unreachable"
    data, stderr = _run(
        run_cli,
        ["--via", name],
        ["node-1"],
        "hostname",
        extra=("--ssh-config", str(cfg), "--insecure"),
    )
    assert data["nodes"][0]["stdout"] == "node-1\n"
    assert "--insecure" in stderr and "not checked" in stderr
    assert empty.read_text() == ""  # nothing was written to known_hosts


def test_missing_pdsh_falls_back_to_paramiko(cluster, run_cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no pdsh (nor anything else) on PATH
    data, stderr = _run(run_cli, ["--via", "pdsh"], cluster.node_names[:2], "hostname")
    assert data["transport"] == "ssh"
    assert "pdsh is not installed" in stderr and "paramiko" in stderr
    assert [r["stdout"] for r in data["nodes"]] == ["node-1\n", "node-2\n"]


def test_percent_signs_reach_the_node_unchanged(cluster, run_cli) -> None:
    """pdsh would expand %h/%u itself; slurmkit escapes them."""
    data, _ = _run(run_cli, ["--via", "pdsh"], ["node-2"], "echo %h %u 100%")
    assert data["nodes"][0]["stdout"] == "%h %u 100%\n"


@pytest.mark.parametrize("name", SSH_TRANSPORTS)
def test_a_hung_sshd_is_one_nodes_problem_within_the_timeout(cluster, run_cli, name) -> None:
    """A node that takes the TCP connection but never answers (stopped sshd): reported on
    its own, in words, with no paramiko traceback, while the other nodes answer."""
    hung = "node-2"
    with frozen_sshd(cluster, hung):
        data, stderr = _run(
            run_cli,
            ["--via", name],
            cluster.node_names,
            "hostname",
            exit_code=1,
            extra=("--timeout", "3"),
        )
    results = _by_node(data)
    assert results[hung]["status"] in ("unreachable", "timeout")
    if name == "ssh":  # paramiko: --timeout bounds the handshake too, as pdsh's -u does
        assert results[hung]["status"] == "unreachable"
        assert "no ssh handshake came in time" in results[hung]["error"]
    assert "Traceback" not in stderr and "Exception" not in stderr
    others = [n for n in cluster.node_names if n != hung]
    assert [results[n]["stdout"] for n in others] == [f"{n}\n" for n in others]
