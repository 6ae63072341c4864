"""slurmkit's multi-node network check: pairs of nodes all-reduce across the network.

Included verbatim by ``net-check.slurm.j2`` (a shared piece, not a template) and run
as ``python3 -c "$SLURMKIT_NET_CODE" MODE ...``: standard library only, and plain
enough for the old python3 a compute node may have (no annotations, no walrus).

Modes:

``driver`` (the batch step, on the job's first node): lists the job's nodes, builds
rounds of disjoint pairs with the circle (round-robin tournament) method, and runs
each round's pairs in parallel as 2-task ``srun`` steps, each bounded by
``--pair-timeout`` (the step is killed then: a hung pair is "timeout", the other
pairs are still reported). It prints one ``SLURMKIT_NET`` line per planned pair,
per result and per skipped node; slurmkit (``slurmkit.faulty.net``) reads them and
names the node every failing pair shares.

``pair`` (one task on each node of a pair): a 2-rank all-reduce. ``net``: rank 0
listens on its node's address, rank 1 binds to ITS node's address before it connects
(so the traffic leaves from the node's own address, as a training's would), both
exchange ``--size`` MB buffers, sum them, verify the sum and time it. ``nccl-multi``:
the same with torch.distributed's NCCL all_reduce on one GPU per node.

``probe`` (every node, for nccl-multi): whether torch with CUDA is usable there.

Why pairs: a collective over all nodes fails when any one node is bad and says
nothing about which; pairs in shifted rounds meet each node with several partners,
so the bad node is the one whose pairs all fail while the others succeed.
"""

# Node-side code for the oldest python3 a node may have (3.6): socket.timeout is not yet
# TimeoutError, subprocess has no text=, zip() no strict=.
# ruff: noqa: UP021, UP041, B905

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

MB = 1000000
LAUNCH_GRACE = 30.0  # seconds past the pair's own deadline before its step is killed
KILL_GRACE = 10.0


def say(*fields, **last):
    """One machine-readable line; ``error``/``why`` (free text) go last, on one line."""
    words = ["SLURMKIT_NET"] + ["{}={}".format(*kv) for kv in fields]
    for key, value in last.items():
        text = " ".join(str(value).split())[:400]
        words.append(f"{key}={text}")
    sys.stdout.write(" ".join(words) + "\n")
    sys.stdout.flush()


def options(args):
    """``--key value`` pairs -> dict (argparse would print usage text we cannot parse).

    A ``--`` ends them: the words after it are kept under ``"--"`` (the python command).
    """
    found = {}
    i = 0
    while i < len(args):
        if args[i] == "--":
            found["--"] = args[i + 1 :]
            break
        if not args[i].startswith("--") or i + 1 >= len(args):
            raise SystemExit(f"slurmkit net check: bad argument {args[i]!r}")
        found[args[i][2:]] = args[i + 1]
        i += 2
    return found


# ---------------------------------------------------------------- the schedule


def schedule(nodes, rounds=0):
    """Rounds of disjoint pairs, circle method: every node meets a new partner each round.

    An odd count gets a bye (one node sits each round out). All rounds: n-1 for even
    n, n for odd n; ``rounds`` > 0 keeps the first ``rounds`` of them.
    """
    players = list(nodes) + ([None] if len(nodes) % 2 else [])
    count = len(players)
    out = []
    for _ in range(max(count - 1, 0)):
        pairs = []
        for i in range(count // 2):
            a, b = players[i], players[count - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        out.append(pairs)
        players = [players[0], players[-1], *players[1:-1]]
    return out[:rounds] if rounds > 0 else out


# ---------------------------------------------------------------- the driver


def job_nodes():
    text = subprocess.run(
        ["scontrol", "show", "hostnames", os.environ["SLURM_JOB_NODELIST"]],
        stdout=subprocess.PIPE,
        universal_newlines=True,
        check=True,
    ).stdout
    return [line.strip() for line in text.splitlines() if line.strip()]


class Step:
    """One Slurm step: output to temporary files (no pipe to fill), killed at its deadline."""

    def __init__(self, argv, seconds):
        self.out = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (read after the step)
        self.err = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.err
        )
        self.deadline = time.monotonic() + seconds
        self.timed_out = False

    def poll(self):
        """True once the step has ended (or was killed at its deadline)."""
        if self.proc.poll() is not None:
            return True
        if time.monotonic() < self.deadline:
            return False
        self.timed_out = True
        self.proc.terminate()  # passed on to the tasks: the step ends
        try:
            self.proc.wait(KILL_GRACE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return True

    def text(self):
        self.out.seek(0)
        self.err.seek(0)
        return self.out.read(), self.err.read()


def srun(nodes, cpus, gpus, code, python, mode_args):
    argv = [
        "srun",
        f"--nodes={len(nodes)}",
        f"--ntasks={len(nodes)}",
        "--ntasks-per-node=1",
        f"--cpus-per-task={cpus}",
        "--nodelist=" + ",".join(nodes),
        "--overlap",
        "--kill-on-bad-exit=0",
        "--export=ALL",
    ]
    if gpus:
        argv.append("--gres=gpu:1")
    return argv + python + ["-c", code] + mode_args


def run_all(steps):
    while not all([step.poll() for step in steps]):
        time.sleep(0.1)


def report_as_they_end(check, number, steps):
    """Each pair's line as soon as its own step ends, not when the round's slowest does.

    A pair with a hung node waits its limit plus LAUNCH_GRACE; if the job is killed before
    that (NODE_FAIL for that very node), the pairs that had finished keep their results.
    """
    pending = list(steps)
    while pending:
        ended = [entry for entry in pending if entry[3].poll()]
        for entry in ended:
            pending.remove(entry)
            pair_result(check, number, *entry)
        if pending:
            time.sleep(0.1)


def rank_lines(text):
    """{rank: {key: value}} from the tasks' SLURMKIT_RANK lines."""
    ranks = {}
    for line in text.splitlines():
        start = line.find("SLURMKIT_RANK ")
        if start < 0:
            continue
        head, _, error = line[start:].partition(" error=")
        fields = dict(w.split("=", 1) for w in head.split()[1:] if "=" in w)
        fields["error"] = error.strip()
        if fields.get("rank") in ("0", "1"):
            ranks[int(fields["rank"])] = fields
    return ranks


FAILED = [False]  # any pair not ok: the job exits 1, as faulty-node-check does for a failure


def pair_result(check, number, a, b, port, step):
    out, err = step.text()
    ranks = rank_lines(out)
    names = {0: a, 1: b}
    if step.timed_out:
        status, error = "timeout", "no result within the pair's time limit: step killed"
    elif len(ranks) == 2 and all(r.get("status") == "ok" for r in ranks.values()):
        status, error = "ok", ""
    else:
        status = "fail"
        parts = [
            "{}: {}".format(names[k], ranks[k].get("error") or ranks[k].get("status"))
            for k in sorted(ranks)
            if ranks[k].get("status") != "ok"
        ]
        parts += [f"{names[k]}: no result (its task did not run)" for k in (0, 1) if k not in ranks]
        srun_errors = [ln.strip() for ln in err.splitlines() if "error" in ln.lower()]
        if srun_errors and len(ranks) < 2:
            parts.append(srun_errors[-1])
        error = "; ".join(parts)
    FAILED[0] = FAILED[0] or status != "ok"
    rates = [float(r["mbps"]) for r in ranks.values() if r.get("status") == "ok" and "mbps" in r]
    ran = ",".join(names[k] for k in sorted(ranks))
    say(
        ("kind", "pair"),
        ("check", check),
        ("round", number),
        ("a", a),
        ("b", b),
        ("port", port),
        ("status", status),
        ("mbps", f"{min(rates):.1f}" if status == "ok" and rates else "-"),
        ("ran", ran or "-"),
        error=error,
    )


def probe(nodes, cpus, code, python, seconds):
    """The nodes where torch sees CUDA; the others are reported skipped (or unknown)."""
    step = Step(srun(nodes, cpus, 0, code, python, ["probe"]), seconds)
    run_all([step])
    out, err = step.text()
    usable = []
    seen = set()
    for line in out.splitlines():
        start = line.find("SLURMKIT_PROBE ")
        if start < 0:
            continue
        head, _, why = line[start:].partition(" why=")
        fields = dict(w.split("=", 1) for w in head.split()[1:] if "=" in w)
        node = fields.get("node")
        if node not in nodes or node in seen:
            continue
        seen.add(node)
        if fields.get("status") == "ok":
            usable.append(node)
        else:
            say(("kind", "skip"), ("check", "nccl-multi"), ("node", node), why=why)
    for node in nodes:
        if node not in seen:
            why = "probe step timed out" if step.timed_out else (err.strip()[-200:] or "no answer")
            say(("kind", "unknown"), ("check", "nccl-multi"), ("node", node), why=why)
    return [n for n in nodes if n in usable]


def driver(args):
    opts = options(args)
    checks = opts["checks"].split(",")
    python = opts.get("--") or ["python3"]
    port, size, iters = int(opts["port"]), int(opts["size"]), int(opts["iters"])
    rounds, seconds = int(opts["rounds"]), float(opts["pair-timeout"])
    cpus, gpus = int(opts["cpus"]), int(opts["gpus"])
    code = os.environ["SLURMKIT_NET_CODE"]
    nodes = job_nodes()
    for check in checks:
        usable = nodes
        if check == "nccl-multi":
            usable = probe(nodes, cpus, code, python, seconds + LAUNCH_GRACE)
            if len(usable) == 1:
                say(
                    ("kind", "skip"),
                    ("check", check),
                    ("node", usable[0]),
                    why="no other node has torch with CUDA to pair with",
                )
                usable = []
        plan = schedule(usable, rounds)
        say(
            ("kind", "plan"),
            ("check", check),
            ("nodes", ",".join(usable) or "-"),
            ("rounds", len(plan)),
        )
        for number, pairs in enumerate(plan, 1):
            for a, b in pairs:
                say(("kind", "planned"), ("check", check), ("round", number), ("a", a), ("b", b))
        for number, pairs in enumerate(plan, 1):
            steps = []
            for i, (a, b) in enumerate(pairs):
                mode = [
                    "pair", "--check", check, "--a", a, "--b", b, "--port", str(port + i),
                    "--size", str(size), "--iters", str(iters), "--timeout", str(seconds),
                ]  # fmt: skip
                argv = srun([a, b], cpus, gpus if check == "nccl-multi" else 0, code, python, mode)
                steps.append((a, b, port + i, Step(argv, seconds + LAUNCH_GRACE)))
            report_as_they_end(check, number, steps)
        say(("kind", "done"), ("check", check), ("pairs", sum(len(p) for p in plan)))


# ---------------------------------------------------------------- one pair, on its nodes


def resolve(name):
    """(family, address) of a node name, IPv4 first; both ranks resolve the same names."""
    infos = socket.getaddrinfo(name, None, 0, socket.SOCK_STREAM)
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    return infos[0][0], infos[0][4][0]


def pattern(rank, size):
    """Rank ``rank``'s buffer: 7-bit values, so two of them add bytewise without a carry."""
    base = bytes((i * 31 + rank * 57 + 11) % 128 for i in range(4096))
    return (base * (size // 4096 + 1))[:size]


def expected_sum(size):
    base = bytes(x + y for x, y in zip(pattern(0, 4096), pattern(1, 4096)))
    return (base * (size // 4096 + 1))[:size]


def left(deadline, what):
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError(f"{what}: timed out")
    return remaining


def exchange(conn, data, deadline):
    """Send ``data`` while receiving as much from the peer (full duplex): what came."""
    failed = []

    def send():
        try:
            conn.sendall(data)
        except OSError as exc:
            failed.append(exc)

    sender = threading.Thread(target=send)
    sender.daemon = True
    sender.start()
    buf = bytearray(len(data))
    view = memoryview(buf)
    got = 0
    while got < len(data):
        conn.settimeout(left(deadline, "receiving"))
        n = conn.recv_into(view[got:])
        if n == 0:
            raise ConnectionError(
                f"the peer closed the connection after {got} of {len(data)} bytes"
            )
        got += n
    sender.join(left(deadline, "sending"))
    if failed:
        raise failed[0]
    if sender.is_alive():
        raise TimeoutError("sending: timed out")
    return bytes(buf)


def connect(a, me, deadline):
    """Rank 1: connect from this node's own address to rank 0, retrying until it listens."""
    family, host = resolve(a["name"])
    _, mine = resolve(me)
    last = "no attempt"
    while True:
        try:
            remaining = left(deadline, "")
        except TimeoutError:
            raise TimeoutError(
                f"connect to {a['name']} ({host} port {a['port']}) from {mine}: {last}"
            ) from None
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.bind((mine, 0))
            sock.settimeout(min(remaining, 5.0))
            sock.connect((host, a["port"]))
            return sock
        except socket.timeout:
            last = "timed out"
        except ConnectionRefusedError:
            last = "refused (rank 0 not listening yet?)"
            time.sleep(0.2)
        except OSError as exc:
            last = str(exc)
            time.sleep(0.2)
        sock.close()


def accept(a, peer, deadline):
    """Rank 0: listen on this node's address; the one connection from the peer's address."""
    family, host = resolve(a["name"])
    _, peer_host = resolve(peer)
    server = socket.socket(family, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, a["port"]))
    server.listen(4)
    try:
        while True:
            try:
                server.settimeout(left(deadline, ""))
                conn, addr = server.accept()
            except (TimeoutError, socket.timeout):
                raise TimeoutError(
                    f"no connection from {peer} ({peer_host}) to {host} port {a['port']}: timed out"
                ) from None
            if addr[0] == peer_host:
                return conn
            conn.close()  # not our peer (a stray client): keep waiting
    finally:
        server.close()


def tcp_pair(rank, a, b, size, iters, deadline):
    me, peer = (a, b) if rank == 0 else (b, a)
    listener = {"name": a, "port": PAIR_PORT[0]}
    conn = accept(listener, peer, deadline) if rank == 0 else connect(listener, me, deadline)
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        hello = f"slurmkit-net {a} {b} {size}\n".encode()
        if exchange(conn, hello, deadline) != hello:
            raise ValueError("the peer is not this pair's other rank (another pair's port?)")
        mine = pattern(rank, size)
        theirs = pattern(1 - rank, size)
        exchange(conn, mine[: min(size, MB)], deadline)  # warm-up
        start = time.monotonic()
        for _ in range(iters):
            got = exchange(conn, mine, deadline)
        seconds = time.monotonic() - start
        if got != theirs:
            first = next(i for i in range(size) if got[i] != theirs[i])
            raise ValueError(f"corrupted data from the peer at byte {first}")
        total = (int.from_bytes(mine, "little") + int.from_bytes(got, "little")).to_bytes(
            size, "little"
        )
        if total != expected_sum(size):
            raise ValueError("the all-reduce sum is wrong")
    return size * iters / MB / max(seconds, 1e-9), seconds


def nccl_pair(rank, a, b, size, iters, deadline):
    import datetime

    import torch
    import torch.distributed as dist

    family, host = resolve(a)
    where = f"[{host}]" if family == socket.AF_INET6 else host
    torch.cuda.set_device(0)
    dist.init_process_group(
        "nccl",
        init_method=f"tcp://{where}:{PAIR_PORT[0]}",
        rank=rank,
        world_size=2,
        timeout=datetime.timedelta(seconds=max(1.0, deadline - time.monotonic())),
    )
    try:
        count = size // 4
        tensor = torch.full((count,), float(rank + 1), device="cuda")
        dist.all_reduce(tensor)  # warm-up
        torch.cuda.synchronize()
        start = time.monotonic()
        for _ in range(iters):
            tensor.fill_(float(rank + 1))
            dist.all_reduce(tensor)
        torch.cuda.synchronize()
        seconds = time.monotonic() - start
        if not bool((tensor == 3.0).all()):
            raise ValueError("the NCCL all_reduce sum is wrong")
    finally:
        dist.destroy_process_group()
    return size * iters / MB / max(seconds, 1e-9), seconds


PAIR_PORT = [0]


def pair(args):
    opts = options(args)
    a, b = opts["a"], opts["b"]
    me = os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    rank = 0 if me == a else 1 if me == b else -1
    PAIR_PORT[0] = int(opts["port"])
    fields = f"rank={rank} node={me}"
    if rank < 0:
        print(f"SLURMKIT_RANK {fields} status=fail error=this node is neither {a} nor {b}")
        return 1
    deadline = time.monotonic() + float(opts["timeout"])
    size, iters = int(opts["size"]) * MB, int(opts["iters"])
    run = nccl_pair if opts["check"] == "nccl-multi" else tcp_pair
    try:
        mbps, seconds = run(rank, a, b, size, iters, deadline)
    except Exception as exc:  # every failure is a result line: the driver names the node
        text = " ".join((f"{type(exc).__name__}: {exc}").split())[:300]
        print(f"SLURMKIT_RANK {fields} status=fail error={text}", flush=True)
        return 1
    print(
        f"SLURMKIT_RANK {fields} status=ok mbps={mbps:.1f} seconds={seconds:.3f} error=",
        flush=True,
    )
    return 0


def probe_node():
    me = os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    try:
        import torch
    except Exception as exc:
        why = f"torch is not importable by {sys.executable} ({type(exc).__name__})"
        print(f"SLURMKIT_PROBE node={me} status=skipped why={why}", flush=True)
        return 0
    if not torch.cuda.is_available():
        why = f"torch {torch.__version__}: torch.cuda.is_available() is False"
        print(f"SLURMKIT_PROBE node={me} status=skipped why={why}", flush=True)
        return 0
    print(f"SLURMKIT_PROBE node={me} status=ok why=", flush=True)
    return 0


def main(argv):
    if not argv:
        raise SystemExit("usage: driver|pair|probe [--key value]...")
    mode, args = argv[0], argv[1:]
    if mode == "driver":
        driver(args)
        return 1 if FAILED[0] else 0
    if mode == "pair":
        return pair(args)
    if mode == "probe":
        return probe_node()
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
