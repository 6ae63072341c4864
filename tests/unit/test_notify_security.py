"""Issue 14: alerts must not hand the SMTP password or a webhook secret to anyone else,
and one hostile job name or path must not stop every target from being alerted.

Real SMTP servers run in-process (aiosmtpd): a plaintext one that would accept a login,
and TLS ones (SMTPS and STARTTLS) with a self-signed certificate made here with
``cryptography``, which a verifying client must refuse, and accept once that
certificate is the trusted CA (``SSL_CERT_FILE``).
"""

from __future__ import annotations

import datetime as dt
import http.server
import ipaddress
import json
import os
import pwd
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit import config
from slurmkit.errors import UsageError
from slurmkit.notify import Notification, deliver, parse_target
from slurmkit.notify.email import SmtpConfig, load_smtp_config, send_email
from slurmkit.notify.message import DeliveryFailed
from slurmkit.trust import UntrustedPath
from tests.fakes.smtp import Server, serving

WHEN = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.timezone.utc)
IS_ROOT = os.geteuid() == 0


def note(subject: str = "job tr8 (stas)") -> Notification:
    return Notification("alert", "job", subject, "no job named tr8 is running", "login1", WHEN)


# ----------------------------------------------------------------- servers


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1 (cert, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def _server_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*map(str, certificate))
    return context


@pytest.fixture
def plain_server() -> Iterator[Server]:
    with serving() as server:
        yield server


@pytest.fixture
def smtps_server(certificate: tuple[Path, Path]) -> Iterator[Server]:
    with serving(ssl_context=_server_context(certificate)) as server:
        yield server


@pytest.fixture
def starttls_server(certificate: tuple[Path, Path]) -> Iterator[Server]:
    with serving(tls_context=_server_context(certificate)) as server:
        yield server


# ----------------------------------------------------------------- finding 6: TLS


def test_login_without_tls_is_refused_before_connecting(plain_server: Server) -> None:
    config = SmtpConfig(host="127.0.0.1", port=plain_server.port, user="u", password="hunter2")
    with pytest.raises(DeliveryFailed, match="without TLS") as caught:
        send_email(note(), "ops@example.org", config)
    assert "hunter2" not in str(caught.value)
    assert plain_server.box.logins == [] and plain_server.box.messages == []


def test_a_plaintext_login_config_is_one_line_exit_2(
    run_cli, plain_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[smtp]\nhost = "127.0.0.1"\nport = {plain_server.port}\nuser = "u"\n'
        'password = "hunter2"\n'
    )
    config.chmod(0o600)
    monkeypatch.setenv("SLURMKIT_CONFIG", str(config))
    state = tmp_path / "s.json"
    out = run_cli("watch", "log", str(tmp_path / "missing.log"), "--stale", "1m", "--notify",
                  "email:ops@example.org", "--state", str(state), exit_code=2)  # fmt: skip
    assert out.stderr.startswith("slurmkit: SMTP settings: ") and "insecure_plaintext" in out.stderr
    assert out.stderr.count("\n") == 1 and "hunter2" not in out.stderr
    assert out.stdout == "" and not state.exists()  # refused before anything was checked
    assert plain_server.box.logins == [] and plain_server.box.messages == []


def test_insecure_plaintext_is_an_explicit_opt_in(plain_server: Server, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[smtp]\nhost = "127.0.0.1"\nport = {plain_server.port}\nuser = "u"\n'
        'password = "hunter2"\ninsecure_plaintext = true\n'
    )
    config.chmod(0o600)
    loaded = load_smtp_config(environ={"SLURMKIT_CONFIG": str(config)})
    send_email(note(), "ops@example.org", loaded)
    assert plain_server.box.logins and len(plain_server.box.messages) == 1


def test_without_a_login_plain_smtp_to_a_relay_still_works(plain_server: Server) -> None:
    send_email(note(), "ops@example.org", SmtpConfig(host="127.0.0.1", port=plain_server.port))
    assert len(plain_server.box.messages) == 1


@pytest.mark.parametrize("mode", ["ssl", "starttls"])
def test_a_certificate_that_does_not_verify_is_refused(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    server: Server = request.getfixturevalue(f"{'smtps' if mode == 'ssl' else 'starttls'}_server")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    config = SmtpConfig(host="localhost", port=server.port, user="u", password="hunter2",
                        ssl=mode == "ssl", starttls=mode == "starttls", timeout=10)  # fmt: skip
    with pytest.raises(DeliveryFailed, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify"):
        send_email(note(), "ops@example.org", config)
    assert server.box.logins == [] and server.box.messages == []


@pytest.mark.parametrize("mode", ["ssl", "starttls"])
def test_a_certificate_the_system_trusts_is_accepted(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    certificate: tuple[Path, Path],
    mode: str,
) -> None:
    server: Server = request.getfixturevalue(f"{'smtps' if mode == 'ssl' else 'starttls'}_server")
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    config = SmtpConfig(host="localhost", port=server.port, user="u", password="hunter2",
                        ssl=mode == "ssl", starttls=mode == "starttls", timeout=10)  # fmt: skip
    send_email(note(), "ops@example.org", config)
    assert server.box.logins and len(server.box.messages) == 1


# ----------------------------------------------------------------- SMTP config permissions


def _config(tmp_path: Path, text: str, mode: int) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(text)
    path.chmod(mode)
    return {"SLURMKIT_CONFIG": str(path)}


SECRET = '[smtp]\nhost = "mail.example.org"\nstarttls = true\nuser = "a"\npassword = "s3cret"\n'


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o602])
def test_a_config_with_the_password_others_can_read_or_write_is_refused(
    tmp_path: Path, mode: int
) -> None:
    with pytest.raises(UntrustedPath, match="refusing") as caught:
        load_smtp_config(environ=_config(tmp_path, SECRET, mode))
    assert "s3cret" not in str(caught.value) and "chmod" in str(caught.value)


def test_a_private_config_with_the_password_is_fine(tmp_path: Path) -> None:
    assert load_smtp_config(environ=_config(tmp_path, SECRET, 0o600)).password == "s3cret"


def test_a_config_others_can_write_is_refused_when_a_password_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whoever can write the host can have the password (from the environment) sent to them."""
    env = _config(tmp_path, '[smtp]\nhost = "mail.example.org"\nstarttls = true\n', 0o666)
    if IS_ROOT:  # root refuses such a config file whatever it holds (the config reader's rule)
        with pytest.raises(UntrustedPath, match="writable by group or others"):
            load_smtp_config(environ=env)
        monkeypatch.setattr(os, "geteuid", lambda: 1000)  # the rest as a user
    assert load_smtp_config(environ=env).host == "mail.example.org"  # no login: no secret at risk
    env.update(SLURMKIT_SMTP_USER="a", SLURMKIT_SMTP_PASSWORD="from-env")
    with pytest.raises(UntrustedPath, match="writable by group or others"):
        load_smtp_config(environ=env)


def test_a_config_another_user_owns_is_refused(tmp_path: Path) -> None:
    if not IS_ROOT:
        pytest.skip("chown needs root")
    env = _config(tmp_path, SECRET, 0o600)
    nobody = pwd.getpwnam("nobody").pw_uid
    os.chown(env["SLURMKIT_CONFIG"], nobody, nobody)
    with pytest.raises(UntrustedPath, match="owned by uid"):
        load_smtp_config(environ=env)


# ----------------------------------------------------------------- the site's [smtp]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The site file at a test path, no user file yet, no SLURMKIT_* variables."""
    path = tmp_path / "etc" / "config.toml"
    path.parent.mkdir()
    monkeypatch.setattr(config, "SYSTEM_PATH", path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in list(os.environ):
        if name.startswith("SLURMKIT_"):
            monkeypatch.delenv(name)
    return path


def test_the_site_smtp_settings_carry_the_alerts(
    site: Path, plain_server: Server, tmp_path: Path, run_cli
) -> None:
    """Issue 28 item 10: ``[smtp]`` in /etc/slurmkit/config.toml was shown by ``config
    show`` and never used: alerts went to localhost:25."""
    site.write_text(
        f'[smtp]\nhost = "127.0.0.1"\nport = {plain_server.port}\nfrom = "alerts@site.example"\n'
    )
    got = load_smtp_config()
    assert (got.host, got.effective_port, got.sender) == (
        "127.0.0.1", plain_server.port, "alerts@site.example"
    )  # fmt: skip
    watch = ["watch", "log", str(tmp_path / "missing.log"), "--stale", "1m"]
    out = run_cli(*watch, "--notify", "email:ops@example.org", "--state", str(tmp_path / "s.json"),
                  exit_code=1)  # fmt: skip
    assert "failed" not in out.stderr
    (message,) = plain_server.box.messages
    assert b"From: alerts@site.example" in message and b"To: ops@example.org" in message


def test_a_users_smtp_keys_layer_over_the_sites(site: Path, tmp_path: Path) -> None:
    site.write_text('[smtp]\nhost = "relay.site.example"\nport = 2525\n')
    user = tmp_path / "xdg" / "slurmkit" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[smtp]\nfrom = "me@example.org"\n')
    got = load_smtp_config()
    assert (got.host, got.port, got.sender) == ("relay.site.example", 2525, "me@example.org")


def test_a_login_through_a_site_host_needs_every_smtp_file_trusted(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The password in a private user file, the host in a file others can write: refused."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # a user: root refuses such files anyway
    site.write_text('[smtp]\nhost = "mail.example.org"\nstarttls = true\n')
    site.chmod(0o666)
    user = tmp_path / "xdg" / "slurmkit" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[smtp]\nuser = "a"\npassword = "s3cret"\n')
    user.chmod(0o600)
    with pytest.raises(UntrustedPath, match=f"refusing config file {site}: writable by group"):
        load_smtp_config()
    site.chmod(0o644)
    assert load_smtp_config().password == "s3cret"


# ----------------------------------------------------------------- hostile subjects


def test_a_line_break_in_the_subject_reaches_every_target(
    plain_server: Server, tmp_path: Path
) -> None:
    """A job name or watched path with a newline once raised in the Subject header, and no
    target (not even the later ones) was alerted."""
    out = tmp_path / "cmd-got"
    targets = [
        parse_target("email:ops@example.org"),
        parse_target(f"cmd:sh -c 'cat > {out}'"),
    ]
    smtp = SmtpConfig(host="127.0.0.1", port=plain_server.port)
    results = deliver(note("log /data/x\nBcc: evil@example.org\r\n.txt"), targets, smtp)
    assert [r.ok for r in results] == [True, True], results
    (raw,) = plain_server.box.messages
    headers = raw.split(b"\r\n\r\n", 1)[0].decode()
    assert "Bcc" not in [h.split(":")[0] for h in headers.splitlines()]
    assert (
        "Subject: [slurmkit] ALERT: log /data/x\\x0aBcc: evil@example.org\\x0d\\x0a.txt" in headers
    )
    assert out.read_text().startswith("[slurmkit] ALERT: log /data/x")


def test_any_failure_of_one_target_still_alerts_the_others(
    plain_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slurmkit.notify import email

    def broken(*_: object) -> None:
        raise ValueError("a bug in one channel")

    monkeypatch.setattr(email, "send_email", broken)
    out = tmp_path / "cmd-got"
    targets = [parse_target("email:ops@example.org"), parse_target(f"cmd:sh -c 'cat > {out}'")]
    results = deliver(note(), targets, SmtpConfig(host="127.0.0.1", port=plain_server.port))
    assert [r.ok for r in results] == [False, True]
    assert results[0].error == "ValueError: a bug in one channel"
    assert out.exists()


# ----------------------------------------------------------------- webhook secrets off argv


@pytest.fixture
def hook() -> Iterator[tuple[str, list[dict]]]:
    received: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            received.append({"path": self.path, "body": json.loads(self.rfile.read(length))})
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/services/T0/B0/SECRET", received
    finally:
        server.shutdown()
        server.server_close()


def test_webhook_url_from_the_environment(
    hook: tuple[str, list[dict]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = hook
    monkeypatch.setenv("OPS_HOOK", url)
    target = parse_target("webhook:env:OPS_HOOK")
    assert target.value == url and "SECRET" not in target.display
    assert target.display == "webhook:env:OPS_HOOK"
    (result,) = deliver(note(), [target])
    assert result.ok and received[0]["path"] == "/services/T0/B0/SECRET"


def test_webhook_url_from_a_private_file(hook: tuple[str, list[dict]], tmp_path: Path) -> None:
    url, received = hook
    secret = tmp_path / "hook.url"
    secret.write_text(url + "\n")
    secret.chmod(0o600)
    target = parse_target(f"webhook:file:{secret}")
    assert target.value == url and target.display == f"webhook:file:{secret}"
    (result,) = deliver(note(), [target])
    assert result.ok and len(received) == 1


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing-env", "OPS_HOOK is not set"),
        ("readable-file", "readable by group or others"),
        ("writable-file", "writable by group or others"),
        ("missing-file", "does not exist"),
        ("not-a-url", "is not an http(s) URL"),
    ],
)
def test_bad_webhook_sources_are_usage_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setup: str, message: str
) -> None:
    monkeypatch.delenv("OPS_HOOK", raising=False)
    secret = tmp_path / "hook.url"
    secret.write_text("https://hooks.example.org/SECRET\n")
    secret.chmod({"readable-file": 0o644, "writable-file": 0o622}.get(setup, 0o600))
    text = {
        "missing-env": "webhook:env:OPS_HOOK",
        "missing-file": f"webhook:file:{tmp_path / 'nope'}",
    }.get(setup, f"webhook:file:{secret}")
    if setup == "not-a-url":
        monkeypatch.setenv("OPS_HOOK", "ftp://x/SECRET")
        text = "webhook:env:OPS_HOOK"
    with pytest.raises(UsageError, match="--notify") as caught:
        parse_target(text)
    assert message in str(caught.value) and "SECRET" not in str(caught.value)


def test_a_hostile_path_is_one_escaped_line_on_the_terminal(run_cli, tmp_path: Path) -> None:
    """The watchdog's OK/ALERT line names the path: a newline or an escape sequence in it is
    shown, not obeyed (the line is appended to logs and read by people)."""
    path = tmp_path / "run\n\x1b]0;owned\x07.log"
    out = run_cli("watch", "log", str(path), "--stale", "1m", "--state", str(tmp_path / "s"),
                  exit_code=1)  # fmt: skip
    (line,) = out.stdout.splitlines()
    assert line.startswith("ALERT ") and "\x1b" not in line and "\\x0a\\x1b]0;owned\\x07" in line
