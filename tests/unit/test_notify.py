"""Notification text, target parsing, SMTP settings, and what a dead target looks like."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from slurmkit.errors import UsageError
from slurmkit.notify import Notification, deliver, parse_target
from slurmkit.notify.email import SmtpConfig, build_message, load_smtp_config
from tests.fakes.smtp import free_port

WHEN = datetime(2026, 3, 10, 12, 0, tzinfo=timezone.utc)


def note(kind: str = "alert", since: datetime | None = None) -> Notification:
    return Notification(kind, "job", "job tr8 (stas)", "no job named tr8 is running", "login1",
                        WHEN, since)  # fmt: skip


def test_notification_text() -> None:
    alert = note()
    assert alert.title == "[slurmkit] ALERT: job tr8 (stas)"
    assert alert.body == (
        "no job named tr8 is running\n\ncheck: slurmkit watch job\nhost: login1\n"
        "time: 2026-03-10T12:00:00+00:00\n"
    )
    assert alert.slack_payload() == {"text": alert.title + "\n" + alert.body}
    recovered = note("recovery", since=WHEN)
    assert recovered.title.startswith("[slurmkit] RECOVERED: ")
    assert "was failing since: 2026-03-10T12:00:00+00:00" in recovered.body
    assert note("reminder", WHEN).title.startswith("[slurmkit] STILL FAILING: ")


def test_email_message_headers() -> None:
    msg = build_message(note(), "ops@example.org", "slurmkit@login1")
    assert msg["Subject"] == "[slurmkit] ALERT: job tr8 (stas)"
    assert (msg["To"], msg["From"]) == ("ops@example.org", "slurmkit@login1")
    assert "no job named tr8" in msg.get_content()


@pytest.mark.parametrize(
    ("text", "kind", "display"),
    [
        ("email:ops@example.org", "email", "email:ops@example.org"),
        ("webhook:https://hooks.slack.com/services/T0/B0/SECRET", "webhook",
         "webhook:https://hooks.slack.com/…"),
        ("webhook:http://user:pw@127.0.0.1:8080/", "webhook", "webhook:http://127.0.0.1:8080"),
        ("cmd:mail -s 'slurm alert' ops", "cmd", "cmd:mail -s 'slurm alert' ops"),
    ],
)  # fmt: skip
def test_targets(text: str, kind: str, display: str) -> None:
    target = parse_target(text)
    assert (target.kind, target.display) == (kind, display)


def test_cmd_target_splits_without_a_shell() -> None:
    assert parse_target("cmd:mail -s 'slurm alert' ops;rm").argv == [
        "mail", "-s", "slurm alert", "ops;rm"
    ]  # fmt: skip


@pytest.mark.parametrize(
    "text",
    ["ops@example.org", "sms:123", "email:nobody", "email:a@b\r\nBcc: x@y", "webhook:ftp://x/",
     "webhook:not a url", "cmd:", "cmd:'unclosed", "email:"],
)  # fmt: skip
def test_bad_targets_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="--notify"):
        parse_target(text)


def test_smtp_settings_from_file_then_environment(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[defaults]\npartition = "cpu"\n[smtp]\nhost = "mail.example.org"\nport = 587\n'
        'starttls = true\nuser = "alerts"\npassword = "file-secret"\nfrom = "a@example.org"\n'
    )
    config.chmod(0o600)  # it holds the password: readable by others, it is refused
    got = load_smtp_config(environ={"SLURMKIT_CONFIG": str(config)})
    assert (got.host, got.effective_port, got.starttls, got.user, got.sender) == (
        "mail.example.org", 587, True, "alerts", "a@example.org"
    )  # fmt: skip
    assert got.password == "file-secret" and "file-secret" not in repr(got)
    env = {"SLURMKIT_CONFIG": str(config), "SLURMKIT_SMTP_HOST": "127.0.0.1",
           "SLURMKIT_SMTP_PASSWORD": "env-secret", "SLURMKIT_SMTP_SSL": "yes",
           "SLURMKIT_SMTP_PORT": ""}  # fmt: skip
    got = load_smtp_config(environ=env)
    assert (got.host, got.password, got.ssl, got.effective_port) == (
        "127.0.0.1",
        "env-secret",
        True,
        587,
    )


def test_smtp_defaults_and_bad_settings(tmp_path: Path) -> None:
    got = load_smtp_config(environ={"XDG_CONFIG_HOME": str(tmp_path)})
    assert (got.host, got.effective_port, got.user) == ("localhost", 25, None)
    with pytest.raises(UsageError, match="port must be a number"):
        load_smtp_config(environ={"XDG_CONFIG_HOME": str(tmp_path), "SLURMKIT_SMTP_PORT": "x"})
    bad = tmp_path / "bad.toml"
    bad.write_text('smtp = "not a table"\n')
    with pytest.raises(UsageError, match=r"\[smtp\] must be a table"):
        load_smtp_config(environ={"SLURMKIT_CONFIG": str(bad)})


def test_dead_targets_are_failed_deliveries_never_exceptions() -> None:
    port = free_port()
    smtp = SmtpConfig(
        host="127.0.0.1", port=port, user="u", password="hunter2", starttls=True, timeout=5
    )
    targets = [
        parse_target("email:ops@example.org"),
        parse_target(f"webhook:http://127.0.0.1:{port}/hooks/SECRET"),
        parse_target("cmd:/nonexistent/pager"),
        parse_target("cmd:false"),
    ]
    results = deliver(note(), targets, smtp)
    assert [r.ok for r in results] == [False, False, False, False]
    assert results[0].error.startswith(f"SMTP 127.0.0.1:{port}: ")
    assert "refused" in results[0].error.lower()
    assert results[1].error.startswith(f"webhook:http://127.0.0.1:{port}/…: ")
    assert "SECRET" not in results[1].error
    assert results[2].error == "cmd:/nonexistent/pager: /nonexistent/pager not found"
    assert results[3].error == "cmd:false: exited 1"
    assert all("hunter2" not in (r.error or "") for r in results)


def test_cli_never_prints_the_smtp_password(
    run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    port = free_port()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    monkeypatch.setenv("SLURMKIT_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("SLURMKIT_SMTP_PORT", str(port))
    monkeypatch.setenv("SLURMKIT_SMTP_USER", "alerts")
    monkeypatch.setenv("SLURMKIT_SMTP_PASSWORD", "hunter2")
    monkeypatch.setenv("SLURMKIT_SMTP_STARTTLS", "yes")
    out = run_cli("watch", "log", str(tmp_path / "missing.log"), "--stale", "1m", "--notify",
                  "email:ops@example.org", "--state", str(tmp_path / "s.json"), "--json",
                  exit_code=1)  # fmt: skip
    assert "slurmkit: notify email:ops@example.org failed: SMTP 127.0.0.1:" in out.stderr
    assert "hunter2" not in out.stdout + out.stderr
