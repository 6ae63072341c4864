"""An empty hostlist is an error wherever a command acts on nodes, never "every node".

Issue 14, finding 8: ``undrain --nodes ""`` (or ``" "``, ``","``) dropped the
limit and considered every drained node of the cluster; ``nodes expand ',,,'``
exited 0 printing nothing.
"""

from __future__ import annotations

import pytest

from slurmkit.errors import HostlistParseError
from slurmkit.hostlist import expand, fold, targets
from tests.fakes import FakeSlurm


@pytest.mark.parametrize("text", ["", " ", ",", ",,,", " , ", "\t\n"])
def test_targets_refuses_an_empty_hostlist(text: str) -> None:
    with pytest.raises(HostlistParseError, match="names no node"):
        targets(text, what="--nodes")


def test_targets_keeps_ranges_unexpanded_and_names_the_option() -> None:
    hosts = targets("node-[1-1000000000]", what="--nodes")
    assert len(hosts) == 1_000_000_000 and str(hosts) == "node-[1-1000000000]"
    with pytest.raises(HostlistParseError, match=r"^--nodes: '\[' is never closed"):
        targets("node-[", what="--nodes")


@pytest.mark.parametrize("text", [",", ",,,", " , "])
def test_a_comma_list_without_names_is_a_parse_error(text: str) -> None:
    with pytest.raises(HostlistParseError, match="no host names"):
        expand(text)
    with pytest.raises(HostlistParseError):
        fold(text)


def test_nothing_at_all_still_folds_to_nothing() -> None:
    # Internal callers fold empty name lists (nothing returned, nothing skipped).
    assert fold([]) == "" and expand("") == []


@pytest.mark.parametrize("text", [",,,", ","])
def test_nodes_expand_of_commas_is_exit_2(run_cli, text: str) -> None:
    result = run_cli("nodes", "expand", text, exit_code=2)
    assert result.stdout == ""
    assert result.stderr.startswith("slurmkit: ") and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("text", ["", " ", ",", ",,,"])
def test_undrain_with_an_empty_node_list_is_a_usage_error(
    run_cli, fake_slurm: FakeSlurm, text: str
) -> None:
    for extra in ((), ("--dry-run",), ("--yes",)):
        result = run_cli("undrain", "-w", text, *extra, exit_code=2)
        assert result.stderr.startswith("slurmkit: --nodelist") and "names no node" in result.stderr
        assert len(result.stderr.splitlines()) == 1
    assert fake_slurm.calls == []  # nothing ran (an unrouted call would also fail the test)
