"""``slurmkit sandbox fault`` on the real sandbox: one node's data network broken for real.

Issue 16 item 2: a multi-node check needs a node whose traffic really fails while
the node stays up in Slurm. These tests make that fault with the command, then
measure it with real sockets on the nodes' addresses (node-N is 127.0.1.N), and
show the node's management network (slurmd, ssh, pdsh) still works at the same
time. Issue 22 item 6: the sshd pid ``sandbox status --json`` records is the one
whose SIGSTOP really wedges the node's ssh.

Every test clears its faults (fixture) and resumes what it stopped (finally).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from slurmkit import _proc, sandbox
from slurmkit.sandbox import netfault
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import _process_state, _ssh_hostname, poll, spare_spec

LISTEN_PORT = 29600  # a fixed port in the data range, as a rendezvous or benchmark uses
CONNECT_TIMEOUT = 3.0  # a SYN that is dropped is retried, never refused: bound the wait
MB = 1 << 20


# ------------------------------------------------------------------ helpers
@contextlib.contextmanager
def listener(addr: str, port: int = LISTEN_PORT) -> Iterator[list[int]]:
    """A TCP server on ``addr:port`` that counts what it receives (bytes per connection)."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
    srv.listen(8)
    srv.settimeout(0.2)
    received: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except (TimeoutError, OSError):
                continue
            total = 0
            with conn:
                conn.settimeout(60)
                with contextlib.suppress(OSError):
                    while chunk := conn.recv(MB):
                        total += len(chunk)
                    conn.sendall(b"k")  # the sender knows every byte arrived
            received.append(total)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        stop.set()
        thread.join(10)
        srv.close()


def connect(src: str, dst: str, port: int = LISTEN_PORT) -> str:
    """A TCP connection from ``src`` to ``dst:port``: "ok", "timeout" (a dropped SYN is
    retried, never refused: CONNECT_TIMEOUT bounds the wait) or the error's name."""
    with socket.socket() as s:
        s.bind((src, 0))
        s.settimeout(CONNECT_TIMEOUT)
        try:
            s.connect((dst, port))
        except TimeoutError:
            return "timeout"
        except OSError as exc:
            return type(exc).__name__
        return "ok"


def throughput(src: str, dst: str, size: int = 16 * MB, port: int = LISTEN_PORT) -> float:
    """Bytes/s of one TCP stream of ``size`` bytes from ``src`` to a listener on ``dst``."""
    with listener(dst, port) as received, socket.socket() as s:
        s.bind((src, 0))
        s.settimeout(60)
        started = time.monotonic()
        s.connect((dst, port))
        block = b"x" * MB
        for _ in range(size // MB):
            s.sendall(block)
        s.shutdown(socket.SHUT_WR)
        assert s.recv(1) == b"k"
        seconds = time.monotonic() - started
        poll(lambda: received, 10, "the listener to count the stream")
    assert received == [size]
    return size / seconds


def udp_arrives(src: str, dst: str, port: int = LISTEN_PORT) -> bool:
    """True when a datagram from ``src`` reaches a socket on ``dst:port`` (waited for briefly)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx:
        rx.bind((dst, port))
        rx.settimeout(CONNECT_TIMEOUT)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            tx.bind((src, 0))
            try:
                tx.sendto(b"ping", (dst, port))
            except PermissionError:  # a datagram dropped on output fails the send itself
                return False
        try:
            return rx.recv(16) == b"ping"
        except TimeoutError:
            return False


def status_json(run_cli: Any, cluster: sandbox.SandboxSpec) -> dict[str, Any]:
    return json.loads(run_cli("sandbox", "status", "--json", "--dir", str(cluster.dir)).stdout)


Fault = Callable[..., Any]


@pytest.fixture
def fault(run_cli: Any, cluster: sandbox.SandboxSpec) -> Iterator[Fault]:
    """``slurmkit sandbox fault NODE ACTION ...`` as a user types it; every node cleared after."""

    def run(node: str, action: str, *extra: str, rc: int = 0) -> Any:
        args = ("sandbox", "fault", node, action, "--dir", str(cluster.dir), *extra)
        return run_cli(*args, exit_code=rc)

    try:
        yield run
    finally:
        for node in cluster.node_names:
            run(node, "clear")
        assert netfault.active(cluster) == []


def srun_hostname(node: str) -> str:
    return run_slurm(["srun", "-w", node, "-N1", "-t", "2", "hostname"], timeout=60).stdout.strip()


# run by srun on a node: connect from the node's own address (its hostname in the node's
# /etc/hosts) to HOST:PORT and print ok or timeout
_STEP_CONNECT = """
import socket, sys
s = socket.socket()
s.bind((socket.gethostbyname(socket.gethostname()), 0))
s.settimeout(float(sys.argv[3]))
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    print("ok")
except TimeoutError:
    print("timeout")
"""


def step_connects(node: str, dst: str, port: int = LISTEN_PORT) -> str:
    argv = ["srun", "-w", node, "-N1", "-t", "2", "python3", "-c", _STEP_CONNECT]
    return run_slurm([*argv, dst, str(port), str(CONNECT_TIMEOUT)], timeout=60).stdout.strip()


def pdsh_hostname(cluster: sandbox.SandboxSpec, node: str) -> str:
    env = {**os.environ, "PDSH_SSH_ARGS_APPEND": f"-F {cluster.ssh_config} -o BatchMode=yes"}
    argv = ["pdsh", "-R", "ssh", "-S", "-t", "5", "-u", "20", "-w", node, "hostname"]
    out = _proc.run(argv, timeout=40, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def node_state(node: str) -> str:
    return run_slurm(["sinfo", "-h", "-n", node, "-o", "%T"], timeout=20).stdout.split()[0]


# ------------------------------------------------------------------ net-down
def test_net_down_breaks_the_nodes_data_network_both_ways(
    run_cli: Any, cluster: sandbox.SandboxSpec, fault: Fault
) -> None:
    n1, n2, n3 = (cluster.node_addr(i) for i in (1, 2, 3))
    with listener(n1):
        assert connect(n3, n1) == "ok", "node-3 cannot reach node-1 before any fault"
    with listener(n3):
        assert connect(n2, n3) == "ok", "node-2 cannot reach node-3 before any fault"

    out = fault("node-3", "net-down")
    assert "node-3: net-down" in out.stderr

    with listener(n1):
        # dropped, not refused: the SYN vanishes, as behind a dead NIC
        assert connect(n3, n1) == "timeout", "node-3 still reaches node-1:29600 under net-down"
        assert connect(n2, n1) == "ok", "node-2 lost node-1 too: the fault is not node-3's alone"
    with listener(n3):
        assert connect(n2, n3) == "timeout", "node-3's listener is reachable under net-down"
    assert not udp_arrives(n3, n1) and not udp_arrives(n1, n3), "UDP passes under net-down"
    assert udp_arrives(n2, n1)
    assert status_json(run_cli, cluster)["faults"] == [
        {"node": "node-3", "fault": "net-down", "rate": ""}
    ]

    fault("node-3", "clear")
    with listener(n1):
        assert connect(n3, n1) == "ok", "node-3 does not reach node-1 again after clear"
    with listener(n3):
        assert connect(n2, n3) == "ok", "node-3's listener is not reachable again after clear"
    assert status_json(run_cli, cluster)["faults"] == []


def test_net_down_leaves_slurm_srun_ssh_and_pdsh_working(
    run_cli: Any, cluster: sandbox.SandboxSpec, fault: Fault
) -> None:
    fault("node-3", "net-down")
    with listener(cluster.node_addr(1)):
        assert connect(cluster.node_addr(3), cluster.node_addr(1)) == "timeout"  # it is on
    assert srun_hostname("node-3") == "node-3"
    # a job step on node-3, bound to its node's address as a check binds, is cut off; the
    # same step on node-2 reaches the same listener
    with listener(cluster.node_addr(1)):
        assert step_connects("node-3", cluster.node_addr(1)) == "timeout"
        assert step_connects("node-2", cluster.node_addr(1)) == "ok"
    assert _ssh_hostname(cluster, "node-3") == "node-3"
    assert pdsh_hostname(cluster, "node-3") == "node-3: node-3"
    # up and responding ("idle*" would be not responding); a job may hold it meanwhile
    assert node_state("node-3") in {"idle", "mixed", "allocated", "completing"}


def test_a_second_fault_replaces_the_first_and_clear_touches_one_node(
    run_cli: Any, cluster: sandbox.SandboxSpec, fault: Fault
) -> None:
    fault("node-2", "net-down")
    fault("node-4", "net-down")
    fault("node-2", "net-slow", "--rate", "1mbytes")
    assert status_json(run_cli, cluster)["faults"] == [
        {"node": "node-2", "fault": "net-slow", "rate": "1mbytes"},
        {"node": "node-4", "fault": "net-down", "rate": ""},
    ]
    out = fault("node-4", "clear")
    assert "node-4: cleared net-down" in out.stderr
    assert status_json(run_cli, cluster)["faults"] == [
        {"node": "node-2", "fault": "net-slow", "rate": "1mbytes"}
    ]


@pytest.mark.smoke
def test_fault_refuses_a_node_the_sandbox_does_not_have(
    run_cli: Any, cluster: sandbox.SandboxSpec, fault: Fault
) -> None:
    bad = f"node-{cluster.nodes + 1}"
    out = fault(bad, "net-down", rc=2)
    assert out.stderr.strip().splitlines() == [
        f"slurmkit: {bad!r} is not a node of the sandbox in {cluster.dir} "
        f"(its nodes: {cluster.nodelist})"
    ]
    assert status_json(run_cli, cluster)["faults"] == []


# ------------------------------------------------------------------ net-slow
@pytest.mark.serial  # a rate, compared: on a quiet machine
def test_net_slow_makes_the_node_far_slower_than_unfaulted(
    run_cli: Any, cluster: sandbox.SandboxSpec, fault: Fault
) -> None:
    n1, n2 = cluster.node_addr(1), cluster.node_addr(2)
    before = throughput(n2, n1)
    fault("node-2", "net-slow")
    slow_out = throughput(n2, n1)  # node-2 sends to a listener elsewhere
    slow_in = throughput(n1, n2)  # a listener on node-2 receives
    fault("node-2", "clear")
    after = throughput(n2, n1)
    print(
        f"node-2 -> node-1: {before / 1e6:.0f} MB/s unfaulted, {slow_out / 1e6:.1f} MB/s "
        f"out and {slow_in / 1e6:.1f} MB/s in under net-slow, {after / 1e6:.0f} MB/s after clear"
    )
    assert slow_out < before / 5 and slow_in < before / 5
    assert after > 5 * max(slow_out, slow_in), "clear did not restore node-2's throughput"
    # srun to the slowed node still works: its slurmd port is not policed
    fault("node-2", "net-slow")
    assert srun_hostname("node-2") == "node-2"


# ------------------------------------------------------------------ the recorded sshd pid
def test_sigstop_of_the_recorded_sshd_pid_wedges_ssh_and_sigcont_restores_it(
    run_cli: Any, cluster: sandbox.SandboxSpec
) -> None:
    """Issue 22 item 6: the pid in ``status --json`` is sshd's own, so stopping it wedges ssh."""
    (node,) = [n for n in status_json(run_cli, cluster)["nodes"] if n["name"] == "node-2"]
    pid = node["sshd_pid"]
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    assert b"sshd_config-node-2" in cmdline and b"nsenter" not in cmdline
    ssh = ["ssh", "-F", str(cluster.ssh_config), "-o", "BatchMode=yes", "-o", "ConnectTimeout=4"]
    assert _proc.run([*ssh, "node-2", "true"], timeout=30).returncode == 0

    os.kill(pid, signal.SIGSTOP)
    try:
        poll(lambda: _process_state(pid) == "T", 10, f"sshd {pid} to stop")
        wedged = _proc.run([*ssh, "node-2", "true"], timeout=15)
        # the kernel still accepts the connection; nobody sends the banner
        assert wedged.returncode != 0 or wedged.timed_out
        assert wedged.timed_out or "timed out" in wedged.stderr, wedged.stderr
    finally:
        os.kill(pid, signal.SIGCONT)
    poll(lambda: _process_state(pid) != "T", 10, f"sshd {pid} to run again")
    poll(
        lambda: _proc.run([*ssh, "node-2", "true"], timeout=30).returncode == 0,
        30,
        "ssh node-2 to work again",
    )


# ------------------------------------------------------------------ up and down
def _tables() -> set[str]:
    out = _proc.run(["nft", "-j", "list", "tables", "inet"], timeout=30)
    assert out.returncode == 0, out.stderr
    return {i["table"]["name"] for i in json.loads(out.stdout)["nftables"] if "table" in i}


def test_up_removes_a_stale_table_and_down_removes_the_sandboxs_faults(
    run_cli: Any, cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    """A 1-node sandbox of its own (other ports and dir): a table a dead sandbox of that dir
    left is gone after ``up``, and a fault put on it is gone after ``down``."""
    spec = spare_spec(cluster, tmp_path, nodes=1)
    table = netfault.table_name(spec.dir)
    stale = netfault.program(table, ['ip daddr 127.0.9.9 drop comment "stale"'])
    assert _proc.run(["nft", "-f", "-"], input=stale, timeout=30).returncode == 0
    try:
        assert table in _tables()
        sandbox.up(spec, install=False)
        try:
            assert table not in _tables()
            # node-1 of this sandbox has an address of its own: the session's node-1 is not
            # policed (checked below)
            args = ("sandbox", "fault", "node-1", "net-slow", "--rate", "1000mbytes")
            run_cli(*args, "--dir", str(spec.dir))
            assert status_json(run_cli, spec)["faults"] == [
                {"node": "node-1", "fault": "net-slow", "rate": "1000mbytes"}
            ]
            assert status_json(run_cli, cluster)["faults"] == []
            assert spec.node_addr(1) != cluster.node_addr(1)
        finally:
            sandbox.down(spec.dir)
        assert table not in _tables()
    finally:
        if table in _tables():
            _proc.run(["nft", "delete", "table", "inet", table], timeout=30)
    assert sandbox.status(cluster.dir).up
