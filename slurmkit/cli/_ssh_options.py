"""The ssh-transport options, defined once for every command that reaches nodes over ssh.

``slurmkit run`` and ``slurmkit pyspy --via ssh`` take the same
``--connect-timeout``, ``--fanout``, ``--insecure`` and ``--ssh-config``; one
definition keeps their names, defaults and meaning (host keys are checked
unless ``--insecure`` is given) from drifting apart, and one place turns them
into the :class:`slurmkit.remote.RemoteOptions` the remote layer takes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from slurmkit.cli._options import file_option
from slurmkit.remote.base import DEFAULT_CONNECT_TIMEOUT, DEFAULT_FANOUT, RemoteOptions


def ssh_transport_options(applies_to: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the four options and hand the command one ``ssh: RemoteOptions`` holding them.

    ``applies_to`` names, in the help, what uses the limits (``pdsh, ssh``
    for ``run``, ``--via ssh`` for ``pyspy``). The command sets what is its
    own (``timeout``, ``jobid``, ``notify``) with :func:`dataclasses.replace`.
    Building the options here makes a bad ``--fanout`` or ``--connect-timeout``
    a usage error before the command does anything.
    """

    def limit(flag: str, kind: type, default: float, metavar: str, what: str) -> Any:
        help_text = f"{what} ({applies_to})."
        return click.option(
            flag, type=kind, default=default, show_default=True, metavar=metavar, help=help_text
        )

    options = [
        limit(
            "--connect-timeout",
            float,
            DEFAULT_CONNECT_TIMEOUT,
            "S",
            "Limit for connecting to each node",
        ),
        limit("--fanout", int, DEFAULT_FANOUT, "K", "Nodes worked on at once"),
        click.option(
            "--insecure",
            is_flag=True,
            help="Do not check ssh host keys (unknown or changed keys accepted). Warns.",
        ),
        file_option(
            "--ssh-config", help="ssh config to use instead of ~/.ssh/config (like ssh -F)."
        ),
        # Issue 17: clusters whose ssh user is not root. sudo -n never prompts: a node
        # without a rule fails at once with sudo's line; everything is shlex-quoted.
        click.option("--sudo", is_flag=True, help="Run the command on each node via sudo -n."),
        click.option(
            "--sudo-user",
            metavar="USER",
            help="Run it as USER via sudo -n -u USER (implies --sudo).",
        ),
        click.option(
            "--env-setup",
            metavar="FILE|CMD",
            help="Source FILE (a path on the nodes) or run CMD in sh first, e.g. "
            "/opt/conda/bin/activate; as the sudo user. Fails the node if it fails.",
        ),
    ]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)  # also carries the options declared below this decorator
        def with_ssh(
            *args: Any,
            connect_timeout: float,
            fanout: int,
            insecure: bool,
            ssh_config: Path | None,
            sudo: bool,
            sudo_user: str | None,
            env_setup: str | None,
            **kwargs: Any,
        ) -> Any:
            ssh = RemoteOptions(
                connect_timeout=connect_timeout,
                fanout=fanout,
                insecure=insecure,
                ssh_config=ssh_config,
                sudo=sudo,
                sudo_user=sudo_user,
                env_setup=env_setup,
            )
            return command(*args, ssh=ssh, **kwargs)

        for option in reversed(options):  # click lists options in decorator order, top first
            with_ssh = option(with_ssh)
        return with_ssh

    return decorate
