"""Choosing the query backend (issue 18), without a cluster: pyslurm is never imported here
(without a slurm.conf, libslurm would end the test process), its presence and version are
faked at the seams backend.pyslurm_version() and query.version()."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem, SlurmNotInstalled, UsageError
from slurmkit.slurm import backend, query
from slurmkit.slurm.records import SlurmVersion
from tests.fakes import FakeSlurm


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No choice made, a slurm.conf present, commands answering; reset afterwards."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    monkeypatch.delenv(backend.ENV, raising=False)
    backend.choose(None)
    query.version.cache_clear()
    yield conf
    backend.choose(None)
    getattr(query.version, "cache_clear", lambda: None)()


def _cluster(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    monkeypatch.setattr(query, "version", lambda: SlurmVersion.parse(version))


def _no_import(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def guard(name, *args, **kwargs):
        if name.startswith("pyslurm") or name.endswith("backend_pyslurm"):
            pytest.fail(f"{name} was imported")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", guard)


def test_without_pyslurm_auto_is_the_commands_quietly(monkeypatch, capsys) -> None:
    monkeypatch.setattr(backend, "pyslurm_version", lambda: None)
    assert backend.selected().name == "commands"
    assert isinstance(backend.current(), query.CommandsBackend)
    assert capsys.readouterr().err == ""  # one line only under -v


def test_the_fallback_line_appears_under_verbose(monkeypatch, capsys) -> None:
    monkeypatch.setattr(backend, "pyslurm_version", lambda: None)
    monkeypatch.setattr(_proc, "_verbose", True)
    backend.selected()
    assert capsys.readouterr().err.splitlines() == [
        "slurmkit: query backend: commands (pyslurm is not installed)"
    ]


def test_pyslurm_for_another_series_falls_back_without_importing_it(monkeypatch, capsys) -> None:
    monkeypatch.setattr(backend, "pyslurm_version", lambda: "25.11.2")
    _cluster(monkeypatch, "slurm-wlm 22.05.8")
    _no_import(monkeypatch)
    monkeypatch.setattr(_proc, "_verbose", True)
    chosen = backend.selected()
    assert chosen.name == "commands" and "version mismatch" in chosen.detail
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "the cluster runs 22.05.8: version mismatch" in err[0]


def test_forced_pyslurm_on_another_version_says_so_even_without_verbose(monkeypatch, capsys):
    monkeypatch.setattr(backend, "pyslurm_version", lambda: "25.11.2")
    _cluster(monkeypatch, "26.05.5")
    _no_import(monkeypatch)
    backend.choose("pyslurm")
    assert backend.selected().name == "commands"
    assert "version mismatch" in capsys.readouterr().err


def test_no_slurm_conf_means_pyslurm_is_never_imported(monkeypatch, _fresh: Path) -> None:
    """libslurm without a configuration ends the whole process: never try."""
    monkeypatch.setenv("SLURM_CONF", str(_fresh.parent / "missing.conf"))
    monkeypatch.setattr(backend, "pyslurm_version", lambda: "25.11.2")
    monkeypatch.setattr(query, "version", lambda: pytest.fail("no version probe either"))
    _no_import(monkeypatch)
    assert "no slurm.conf" in backend.selected().detail


def test_cluster_version_unknown_falls_back(monkeypatch) -> None:
    monkeypatch.setattr(backend, "pyslurm_version", lambda: "25.11.2")

    def missing() -> SlurmVersion:
        raise SlurmNotInstalled("'sinfo' not found on PATH")

    monkeypatch.setattr(query, "version", missing)
    assert backend.selected().name == "commands"


def test_backend_pyslurm_without_pyslurm_is_one_line_with_the_install_command(
    monkeypatch, run_cli
) -> None:
    monkeypatch.setattr(backend, "pyslurm_version", lambda: None)
    result = run_cli("--backend", "pyslurm", "nodes", "drained", exit_code=2)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("slurmkit: --backend pyslurm: pyslurm is not installed")
    assert "pip install 'slurmkit[pyslurm]'" in lines[0]
    assert "Traceback" not in result.stderr


def test_environment_variable_is_read_and_checked(monkeypatch) -> None:
    monkeypatch.setenv(backend.ENV, "commands")
    assert backend.selected().detail == "chosen"
    backend.reset()
    monkeypatch.setenv(backend.ENV, "corba")
    with pytest.raises(UsageError, match="SLURMKIT_BACKEND"):
        backend.selected()
    with pytest.raises(UsageError):
        backend.choose("corba")


def test_forced_pyslurm_missing_raises_environment_problem(monkeypatch) -> None:
    monkeypatch.setattr(backend, "pyslurm_version", lambda: None)
    monkeypatch.setenv(backend.ENV, "pyslurm")
    with pytest.raises(EnvironmentProblem, match="pip install"):
        backend.current()


def test_version_names_the_backend(monkeypatch, run_cli) -> None:
    monkeypatch.setattr(backend, "pyslurm_version", lambda: None)
    out = run_cli("--version").stdout.splitlines()
    assert out[0].startswith("slurmkit, version ")
    assert out[1] == "query backend: commands (pyslurm is not installed)"
    assert run_cli("--backend", "commands", "--version").stdout.splitlines()[1] == (
        "query backend: commands (chosen)"
    )


def test_commands_backend_keeps_every_query_on_the_commands(fake_slurm: FakeSlurm) -> None:
    """With the commands chosen, query.nodes() runs scontrol exactly as before."""
    backend.choose("commands")
    fake_slurm.on(["scontrol", "**"])
    assert query.nodes() == []
    assert fake_slurm.calls == [("scontrol", "--all", "--oneliner", "show", "node")]
