"""Watchdogs against the sandbox and real local services.

``watch job`` on real jobs (running, pending, held, dependency never satisfied, and
the watchdog running as a job of the very name it watches); ``watch fs`` on a 4 MiB
tmpfs mounted for the test; ``watch log`` on a file aged with ``os.utime``; alerts to
an SMTP server (aiosmtpd) and an HTTP server on loopback, and to ports that refuse.
"""

from __future__ import annotations

import email
import email.policy
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

import pytest

from slurmkit import sandbox
from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm
from tests.fakes.smtp import Mailbox, free_port, serving
from tests.integration.conftest import poll, submit

SLURMKIT = str(Path(sys.executable).with_name("slurmkit"))
SMALL = ("-c1", "-N1", "-o", "/dev/null")  # 1 CPU, 1 node, no log file in the repo


def unique(what: str) -> str:
    return f"skw-{what}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def names(cluster: sandbox.SandboxSpec) -> Iterator[list[str]]:
    """Job names this test uses; all their jobs are cancelled at the end."""
    used: list[str] = []
    try:
        yield used
    finally:
        for name in used:
            run_slurm(["scancel", f"--name={name}"], check=False)


def state_of(job_id: str) -> tuple[str, str]:
    (job,) = query.jobs(job_ids=job_id)
    return job.state, job.reason or ""


# ---------------------------------------------------------------- watch job


@pytest.mark.smoke
def test_job_running_pending_absent(run_cli, names: list[str], tmp_path: Path) -> None:
    name = unique("job")
    names.append(name)
    state = ["--state", str(tmp_path / "s.json")]
    out = run_cli("watch", "job", "--name", name, *state, exit_code=1)
    assert out.stdout.startswith(f"ALERT job {name} (root): no job named {name} of user root")
    later = submit("-J", name, "--begin=now+1hour", *SMALL, "--wrap", "true")
    out = run_cli("watch", "job", "--name", name, *state)
    assert out.stdout.startswith(f"OK job {name} (root): job {later} PENDING (BeginTime)")
    running = submit("-J", name, *SMALL, "--wrap", "sleep 300")
    poll(lambda: state_of(running)[0] == "RUNNING", 60, "the job to run")
    out = run_cli("watch", "job", "--name", name, *state, "--json")
    finding = json.loads(out.stdout)["findings"][0]
    assert finding["healthy"] and finding["message"].startswith(f"job {running} RUNNING on node-")


def test_held_and_never_satisfiable_jobs_are_not_alive(run_cli, names: list[str]) -> None:
    name = unique("held")
    names.extend([name, f"{name}-parent"])
    held = submit("-J", name, "--hold", *SMALL, "--wrap", "true")
    out = run_cli("watch", "job", "--name", name, exit_code=1)
    assert f"no job can run: job {held} PENDING, held (JobHeldUser)" in out.stdout
    run_slurm(["scancel", held])
    parent = submit("-J", f"{name}-parent", *SMALL, "--wrap", "exit 1")
    child = submit("-J", name, f"--dependency=afterok:{parent}", *SMALL, "--wrap", "true")
    poll(lambda: state_of(child)[1] == "DependencyNeverSatisfied", 60, "the dependency to fail")
    out = run_cli("watch", "job", "--name", name, exit_code=1)
    assert f"job {child} PENDING, DependencyNeverSatisfied" in out.stdout


def test_a_watchdog_job_never_counts_itself(names: list[str], tmp_path: Path) -> None:
    name = unique("self")
    names.append(name)
    log = tmp_path / "watchdog.out"
    job = submit(
        "-J", name, "-c1", "-N1", "-o", str(log),
        "--wrap", f"{SLURMKIT} watch job --name {name}; echo exit=$?",
    )  # fmt: skip
    poll(lambda: log.exists() and "exit=" in log.read_text(), 60, "the watchdog job")
    text = log.read_text()
    assert f"(only this watchdog, job {job}, has that name)" in text
    assert "exit=1" in text


def test_a_controller_that_does_not_answer_is_an_alert(
    run_cli, cluster: sandbox.SandboxSpec, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The sandbox's slurm.conf with a port nobody listens on: squeue fails (after ~10 s)."""
    conf = tmp_path / "slurm.conf"
    lines = cluster.slurm_conf.read_text().splitlines()
    conf.write_text(
        "\n".join("SlurmctldPort=1" if ln.startswith("SlurmctldPort=") else ln for ln in lines)
    )
    monkeypatch.setenv("SLURM_CONF", str(conf))
    out = run_cli("watch", "job", "--name", "anything", exit_code=1)
    assert out.stdout.startswith("ALERT job anything (root): cannot read the queue: squeue: ")
    assert "cannot reach slurmctld" in out.stdout


# ---------------------------------------------------------------- watch fs on a tmpfs


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs with 64 inodes, unmounted whatever happens."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,nr_inodes=64", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs for the test (root needed): {result.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_fs_space_and_inodes(run_cli, small_fs: Path) -> None:
    args = ["watch", "fs", str(small_fs), "--min-free", "1M", "--min-free-inodes", "10%"]
    out = run_cli(*args)
    assert out.stdout.startswith(f"OK fs {small_fs}: 4.0M free of 4.0M")
    big = small_fs / "big"
    big.write_bytes(b"\0" * (3 * 1024 * 1024 + 512 * 1024))
    out = run_cli(*args, exit_code=1)
    assert out.stdout.rstrip().endswith(": free space below 1.0M")
    big.unlink()
    run_cli(*args)
    # 80 % usable: 3.2M of capacity; 2.5M written leaves 0.7M below the line
    big.write_bytes(b"\0" * (2560 * 1024))
    run_cli("watch", "fs", str(small_fs), "--min-free", "1M")
    out = run_cli("watch", "fs", str(small_fs), "--min-free", "1M", "--usable", "80%", exit_code=1)
    assert "usable (80% of 4.0M)" in out.stdout
    big.unlink()
    for i in range(60):
        (small_fs / f"f{i}").touch()
    out = run_cli(*args, exit_code=1)
    assert "of 64 inodes free" in out.stdout and "free inodes below 10%" in out.stdout


# ---------------------------------------------------------------- watch log


def test_stale_log(run_cli, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("iteration 1\n")
    run_cli("watch", "log", str(log), "--stale", "30m")
    old = time.time() - 31 * 60
    os.utime(log, (old, old))
    out = run_cli("watch", "log", str(log), "--stale", "30m", exit_code=1)
    assert out.stdout.startswith(f"ALERT log {log}: last written 31m")


# ---------------------------------------------------------------- notifications


@pytest.fixture
def mailbox(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Mailbox]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    with serving(Mailbox(accept=("alerts", "s3cret"))) as server:
        for key, value in {
            "HOST": "127.0.0.1",
            "PORT": str(server.port),
            "USER": "alerts",
            "PASSWORD": "s3cret",
            "FROM": "slurmkit@sandbox",
            "INSECURE_PLAINTEXT": "1",  # a login on plain loopback SMTP: refused without the opt-in
        }.items():
            monkeypatch.setenv(f"SLURMKIT_SMTP_{key}", value)
        yield server.box


def test_email_alert_then_recovery_once(run_cli, mailbox: Mailbox, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("")
    os.utime(log, (0, 0))
    args = ["watch", "log", str(log), "--stale", "30m", "--notify", "email:ops@example.org",
            "--state", str(tmp_path / "state.json")]  # fmt: skip
    out = run_cli(*args, exit_code=1)
    assert "s3cret" not in out.stdout + out.stderr
    assert "sent alert for log:" in out.stderr
    (raw,) = mailbox.messages
    assert mailbox.envelopes == [("slurmkit@sandbox", ["ops@example.org"])]
    mail = email.message_from_bytes(raw, policy=email.policy.default)
    assert mail["Subject"] == f"[slurmkit] ALERT: log {log}"
    assert mail["To"] == "ops@example.org"
    body = mail.get_content()
    assert "stale (limit 30m)" in body and "check: slurmkit watch log" in body
    assert mailbox.logins == ["alerts"]
    run_cli(*args, exit_code=1)  # rate-limited: no second mail
    assert len(mailbox.messages) == 1
    log.write_text("iteration 2\n")
    run_cli(*args)
    run_cli(*args)
    assert len(mailbox.messages) == 2
    recovery = email.message_from_bytes(mailbox.messages[1], policy=email.policy.default)
    assert recovery["Subject"] == f"[slurmkit] RECOVERED: log {log}"


class Hook(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, str, bytes]]] = []
    status: ClassVar[int] = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Hook.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(Hook.status)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[str]:
    Hook.received = []
    Hook.status = 200
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/services/T0/SECRET"
    finally:
        server.shutdown()
        server.server_close()


def test_webhook_gets_slack_json_for_a_missing_job(
    run_cli, webhook: str, names: list[str], tmp_path: Path
) -> None:
    name = unique("hook")
    out = run_cli("watch", "job", "--name", name, "--notify", f"webhook:{webhook}",
                  "--state", str(tmp_path / "s.json"), exit_code=1)  # fmt: skip
    ((path, content_type, body),) = Hook.received
    assert (path, content_type) == ("/services/T0/SECRET", "application/json")
    text = json.loads(body)["text"]
    assert text.splitlines()[0] == f"[slurmkit] ALERT: job {name} (root)"
    assert f"no job named {name} of user root is running or queued" in text
    assert "SECRET" not in out.stderr  # the URL's secret path is never printed


def test_targets_that_are_down_are_logged_and_the_exit_code_still_alerts(
    run_cli, webhook: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    dead = free_port()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("SLURMKIT_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("SLURMKIT_SMTP_PORT", str(dead))
    Hook.status = 500
    log = tmp_path / "missing.log"
    out = run_cli(
        "watch", "log", str(log), "--stale", "1m",
        "--notify", "email:ops@example.org",
        "--notify", f"webhook:http://127.0.0.1:{dead}/hook",
        "--notify", f"webhook:{webhook}",
        "--notify", "cmd:/bin/sh -c 'cat > /dev/null'",
        "--state", str(tmp_path / "s.json"),
        exit_code=1,
    )  # fmt: skip
    err = out.stderr.splitlines()
    assert f"slurmkit: notify email:ops@example.org failed: SMTP 127.0.0.1:{dead}: " in err[0]
    assert "refused" in err[0].lower()
    assert err[1].startswith(f"slurmkit: notify webhook:http://127.0.0.1:{dead}/… failed: ")
    assert "refused" in err[1].lower()
    live = urlsplit(webhook).port
    assert err[2].endswith(
        f"failed: webhook:http://127.0.0.1:{live}/…: HTTP 500 Internal Server Error"
    )
    assert err[3].startswith("slurmkit: sent alert for log:")  # the command target worked
    assert out.stdout.startswith(f"ALERT log {log}: cannot stat: No such file or directory")


def test_a_rate_limit_state_on_a_full_disk_still_rate_limits_and_says_so(
    run_cli, mailbox: Mailbox, tmp_path: Path
) -> None:
    """Issue 22: watch said "alerts not rate-limited" when they were (the state was read and
    used, only its save failed). Here the state sits on a real 1 MiB tmpfs, filled after the
    first alert: the second run sends no second mail and says the state was not saved."""
    from tests.integration.test_train_faults import _fill_bytes, small_tmpfs

    log = tmp_path / "train.log"
    log.write_text("")
    os.utime(log, (0, 0))
    with small_tmpfs(tmp_path / "mnt") as mnt:
        args = ["watch", "log", str(log), "--stale", "30m", "--notify", "email:ops@example.org",
                "--state", str(mnt / "state.json")]  # fmt: skip
        run_cli(*args, exit_code=1)
        assert len(mailbox.messages) == 1
        _fill_bytes(mnt)
        out = run_cli(*args, exit_code=1)
    assert len(mailbox.messages) == 1  # rate-limited: the reminder was held back
    assert "not rate-limited" not in out.stderr and "Traceback" not in out.stderr
    assert "alerts were rate-limited" in out.stderr and "could not be saved" in out.stderr
