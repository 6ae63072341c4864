"""Completion values from the live cluster, through click's completion variables, and site
defaults layered on a live command (issue 20 items 3-4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import PLAIN_USER, submit
from tests.integration.test_faults import dead_controller_conf  # noqa: F401  (fixture)

SLURMKIT = [sys.executable, "-m", "slurmkit"]


def complete(words: str, env: dict[str, str] | None = None) -> tuple[list[str], str]:
    """(bash's answer lines, stderr) for COMP_WORDS=words, cursor on the last word.

    The timeout is a guard against a hang only (the test fails instead of waiting forever).
    """
    cword = len(words.split(" ")) - 1
    result = subprocess.run(
        [*SLURMKIT],
        env={
            **os.environ,
            "_SLURMKIT_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(cword),
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line], result.stderr


def slurmkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SLURMKIT, *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# ---------------------------------------------------------------- completion, live


@pytest.mark.smoke
def test_node_names_and_groups_from_the_cluster(cluster: sandbox.SandboxSpec) -> None:
    names = [n.name for n in query.nodes()]
    found, stderr = complete("slurmkit run -w node-")
    assert found == [f"plain,{n}" for n in names if n.startswith("node-")]
    assert stderr == ""
    found, _ = complete("slurmkit run -w node-1,")
    assert "plain,node-1,node-2" in found
    partitions = [p.name for p in query.partitions()]
    found, _ = complete("slurmkit run -w @partition :")
    assert found == [f"plain,{p}" for p in partitions]


def test_partitions_from_the_cluster(cluster: sandbox.SandboxSpec) -> None:
    partitions = [p.name for p in query.partitions()]
    assert len(partitions) >= 2
    found, _ = complete("slurmkit nodes --partition ")
    assert found == [f"plain,{p}" for p in partitions]


def test_job_ids_own_first(cluster: sandbox.SandboxSpec) -> None:
    """A held job of another user's submitted first still comes after ours."""
    theirs = submit("--uid", PLAIN_USER, "--hold", "-t", "1", "-D", "/tmp", "--wrap", "true")
    ours = submit("--hold", "-t", "1", "--wrap", "true")
    try:
        found, _ = complete("slurmkit hostfile --jobid ")
        ids = [line.split(",", 1)[1] for line in found]
        assert ours in ids and theirs in ids
        assert ids.index(ours) < ids.index(theirs)
        found, _ = complete(f"slurmkit hostfile --jobid {ours}")
        assert found == [f"plain,{ours}"]
    finally:
        run_slurm(["scancel", ours, theirs], check=False)


def test_dead_controller_gives_no_suggestion_and_no_error(
    dead_controller_conf: Path,  # noqa: F811
) -> None:
    env = {"SLURM_CONF": str(dead_controller_conf)}
    for words in (
        "slurmkit run -w node-",
        "slurmkit hostfile --jobid ",
        "slurmkit nodes --partition ",
        "slurmkit run -w @partition :",
    ):
        found, stderr = complete(words, env)
        assert found == []
        assert stderr == ""


def test_no_slurm_on_path_gives_no_suggestion(cluster: sandbox.SandboxSpec) -> None:
    found, stderr = complete("slurmkit run -w node-", {"PATH": "/nonexistent"})
    assert found == []
    assert stderr == ""


# ---------------------------------------------------------------- site defaults, live


def test_config_precedence_on_a_live_command(cluster: sandbox.SandboxSpec, tmp_path: Path):
    """file < SLURMKIT_NODES_PARTITION < --partition, on `slurmkit nodes` (the nodes of a
    partition, from the controller); config show names the file's line, then the variable."""
    partitions = {p.name: p.nodes for p in query.partitions()}
    first, second = sorted(partitions)[:2]
    config = tmp_path / "config.toml"
    config.write_text(f'# site defaults\n[nodes]\npartition = "{first}"\n')
    env = {"SLURMKIT_CONFIG": str(config)}
    assert slurmkit("nodes", env=env).stdout.strip() == partitions[first]
    env["SLURMKIT_NODES_PARTITION"] = second
    assert slurmkit("nodes", env=env).stdout.strip() == partitions[second]
    assert slurmkit("nodes", "--partition", first, env=env).stdout.strip() == partitions[first]

    del env["SLURMKIT_NODES_PARTITION"]
    shown = slurmkit("config", "show", env=env)
    assert f"file:{config}:3" in shown.stdout
    env["SLURMKIT_NODES_PARTITION"] = second
    shown = slurmkit("config", "show", "nodes", env=env)
    row = next(line.split() for line in shown.stdout.splitlines() if "nodes.partition" in line)
    assert row == ["env:SLURMKIT_NODES_PARTITION", "nodes.partition", second]


def test_bad_config_value_stops_the_live_command(cluster: sandbox.SandboxSpec, tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text('[nodes]\nexpand = "yes"\n')
    result = slurmkit("nodes", env={"SLURMKIT_CONFIG": str(config)})
    assert result.returncode == 2
    assert result.stderr == (
        f"slurmkit: config file {config}, line 2, key nodes.expand: "
        "expected true or false, not 'yes'\n"
    )
    assert result.stdout == ""


@pytest.mark.skipif(os.geteuid() != 0, reason="the trust rule applies to root only")
def test_root_refuses_a_group_writable_config(cluster: sandbox.SandboxSpec, tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text('[nodes]\npartition = "x"\n')
    config.chmod(0o620)
    result = slurmkit("nodes", env={"SLURMKIT_CONFIG": str(config)})
    assert result.returncode == 2
    assert "refusing config file" in result.stderr
    assert f"chmod go-w {config}" in result.stderr


def test_real_bash_with_the_printed_script(cluster: sandbox.SandboxSpec, tmp_path: Path) -> None:
    """bash itself splits `@partition:g` at ':' (COMP_WORDBREAKS) and replaces only the part
    after it: the printed script, sourced in bash, gets `gpu`-style answers for that part."""
    script = tmp_path / "slurmkit.bash"
    script.write_text(slurmkit("completion", "bash").stdout)
    wrapper = tmp_path / "bin"
    wrapper.mkdir()
    (wrapper / "slurmkit").write_text(f'#!/bin/sh\nexec {sys.executable} -m slurmkit "$@"\n')
    (wrapper / "slurmkit").chmod(0o755)
    partitions = [p.name for p in query.partitions()]
    first = partitions[0]

    def bash(words: str, cword: int) -> list[str]:
        program = (
            f"source {script}; COMP_WORDS=({words}); COMP_CWORD={cword}; "
            '_slurmkit_completion slurmkit; printf "%s\\n" "${COMPREPLY[@]}"'
        )
        env = {"PATH": f"{wrapper}:{os.environ['PATH']}"}
        out = subprocess.run(
            ["bash", "-c", program],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        return [line for line in out.splitlines() if line]

    assert bash(f"slurmkit run -w @partition : {first[:1]}", 5) == [
        p for p in partitions if p.startswith(first[:1])
    ]
    assert bash("slurmkit run -w node-1,node-", 3) == [f"node-1,node-{i}" for i in range(1, 5)]
