"""The pdsh transport: ``pdsh -R ssh``, OpenSSH doing the connecting.

pdsh prefixes every line with ``node: ``, interleaves nodes, and returns one
exit code for all of them, so the command is wrapped to print an end marker
with its own exit code (:mod:`.command`). pdsh's own messages
(``pdsh@host: node-3: command timeout``, ``... ssh exited with exit code
255``) on stderr tell a timeout from a node that was never reached. pdsh
also expands ``%h``, ``%u`` and ``%n`` inside the command, so every ``%`` is
doubled before it is handed over.
"""

from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from slurmkit import _proc
from slurmkit.errors import RemoteError, UsageError
from slurmkit.hostlist import fold
from slurmkit.remote import command as cmd
from slurmkit.remote.base import RemoteOptions, TransportMissing
from slurmkit.remote.result import FAILED, TIMEOUT, UNREACHABLE, NodeResult, from_exit_code

_PDSH_MESSAGE = re.compile(r"^pdsh@[^:\s]*: (?P<node>[^:\s]+): (?P<text>.*)$")
_SSH_EXIT = re.compile(r"ssh exited with exit code (\d+)")
_SSH_CONNECT_FAILED = 255
# Beyond pdsh's own -u limit: pdsh itself hanging must not hang slurmkit.
_BACKSTOP = 30.0


@dataclass
class _NodeOutput:
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    marker: cmd.Marker | None = None


class PdshTransport:
    name: ClassVar[str] = "pdsh"

    def __init__(self, options: RemoteOptions) -> None:
        self.options = options

    def argv(self, nodes: Sequence[str], remote_command: str) -> list[str]:
        o = self.options
        return [
            "pdsh",
            "-R",
            "ssh",
            "-S",
            "-f",
            str(o.fanout),
            "-t",
            str(max(1, round(o.connect_timeout))),
            "-u",
            str(max(1, round(o.timeout))),
            "-w",
            fold(nodes),
            remote_command,
        ]

    def ssh_args(self) -> str:
        """PDSH_SSH_ARGS_APPEND: never prompt, bound the connect, honour --ssh-config/--insecure.

        pdsh splits this on spaces, so a config path with spaces is refused; it also
        expands %h, %u, %n in it as in the command, so the path's ``%`` are doubled.
        """
        o = self.options
        args = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, round(o.connect_timeout))}"]
        if o.ssh_config is not None:
            if re.search(r"\s", str(o.ssh_config)):
                raise UsageError(f"pdsh cannot pass an ssh config path with spaces: {o.ssh_config}")
            args += ["-F", escape_percent(str(o.ssh_config))]
        if o.insecure:
            args += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
        return " ".join(args)

    def run(self, nodes: Sequence[str], command: str) -> list[NodeResult]:
        if self.options.insecure:
            self.options.notify("--insecure: ssh host keys are not checked (pdsh)")
        token = cmd.new_token()
        argv = self.argv(nodes, escape_percent(cmd.wrap(command, token)))
        env = {**os.environ, "PDSH_SSH_ARGS_APPEND": self.ssh_args()}
        limit = self.options.timeout + self.options.connect_timeout + _BACKSTOP
        started = time.monotonic()
        try:
            done = _proc.run(argv, timeout=limit, env=env)
        except FileNotFoundError as exc:
            raise TransportMissing("pdsh is not installed (apt-get install pdsh)") from exc
        return parse(done, nodes, token, time.monotonic() - started, self.options.timeout)


def escape_percent(remote_command: str) -> str:
    """pdsh replaces %h, %u, %n in the command (``stat -c %u`` would become ``stat -c root``).

    ``%%`` is its escape for a literal ``%``.
    """
    return remote_command.replace("%", "%%")


def parse(
    done: _proc.Completed, nodes: Sequence[str], token: str, wall: float, timeout: float
) -> list[NodeResult]:
    """Per-node results from pdsh's merged output."""
    outputs: dict[str, _NodeOutput] = defaultdict(_NodeOutput)
    wanted = set(nodes)
    stray = _split_stdout(done.stdout, token, wanted, outputs)
    stray += _split_stderr(done.stderr, wanted, outputs)
    if done.returncode != 0 and not any(outputs.values()) and stray and not done.timed_out:
        raise RemoteError(f"pdsh failed (exit {done.returncode}): {stray[0]}")
    return [_result(node, outputs[node], wall, timeout, done.timed_out) for node in nodes]


def _split_stdout(
    text: str, token: str, wanted: set[str], outputs: dict[str, _NodeOutput]
) -> list[str]:
    stray = []
    for line in text.splitlines():
        node, sep, rest = line.partition(": ")
        if not sep or node not in wanted:
            stray.append(line)
            continue
        out = outputs[node]
        found = cmd.parse_marker(rest, token)
        if found is None:
            out.stdout.append(rest + "\n")
        else:
            head, out.marker = found
            out.stdout.append(head)
    return stray


def _split_stderr(text: str, wanted: set[str], outputs: dict[str, _NodeOutput]) -> list[str]:
    stray = []
    for line in text.splitlines():
        message = _PDSH_MESSAGE.match(line)
        if message and message["node"] in wanted:
            outputs[message["node"]].messages.append(message["text"])
            continue
        node, sep, rest = line.partition(": ")
        if sep and node in wanted:
            outputs[node].stderr.append(rest + "\n")
        elif message is None and not line.startswith("sending "):
            stray.append(line)  # "sending SIGTERM to ssh node-3" follows a timeout: noise
    return stray


def _result(node: str, out: _NodeOutput, wall: float, timeout: float, killed: bool) -> NodeResult:
    stdout, stderr = "".join(out.stdout), "".join(out.stderr)
    if out.marker is not None:
        seconds = out.marker.seconds if out.marker.seconds is not None else wall
        return from_exit_code(node, out.marker.exit_code, stdout, stderr, seconds)
    ssh_rc = _ssh_exit(out.messages)
    if killed or any("command timeout" in m for m in out.messages):
        error = f"no answer within {timeout:g} s"
        return NodeResult(node, TIMEOUT, stdout, stderr, None, wall, error)
    if not stdout and ssh_rc == _SSH_CONNECT_FAILED:
        error = _last_line(stderr) or "ssh failed (exit 255)"
        return NodeResult(node, UNREACHABLE, stdout, stderr, None, wall, error)
    if not stdout and not stderr and not out.messages:
        return NodeResult(
            node, UNREACHABLE, "", "", None, wall, "pdsh reported nothing for this node"
        )
    error = "the command ended without its end marker (connection lost or shell killed)"
    return NodeResult(node, FAILED, stdout, stderr, ssh_rc, wall, error)


def _ssh_exit(messages: list[str]) -> int | None:
    for message in messages:
        match = _SSH_EXIT.search(message)
        if match:
            return int(match.group(1))
    return None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
