"""slurmkit.grammar.gres: every GRES/TRES spelling Slurm prints gives the same GPU count."""

from __future__ import annotations

import pytest
from fixtures_path import read
from hypothesis import given
from hypothesis import strategies as st

from slurmkit.errors import SlurmParseError
from slurmkit.grammar import gres
from slurmkit.grammar.gres import GresItem
from slurmkit.slurm import parse_records as pr


@pytest.mark.parametrize(
    ("text", "gpus"),
    [
        ("gpu:8", 8),
        ("gpu:a100:8", 8),
        ("gres/gpu:h100=4", 4),  # issue 15: lint said 1, jobenv said 4; now 4 everywhere
        ("gpu:a100:8(S:0-1)", 8),  # a node's Gres= with socket binding
        ("gres:gpu:4", 4),  # 22.05 TresPerNode
        ("gres/gpu:4", 4),  # 23.02+ TresPerNode
        ("gpu:4(IDX:0-3)", 4),  # scontrol show job -d
        ("gpu:h100:4(IDX:0-3)", 4),
        ("gpu:1(IDX:1)", 1),  # sandbox, --gpus-per-task: ids need not start at 0
        ("gpu:2(IDX:1-2)", 2),
        ("gpu:h100:2(IDX:0,2),gpu:a100:1(IDX:3)", 3),  # comma inside the parentheses
        ("gpu:a100:4,gpu:v100:2", 6),  # several types add up
        ("nvme:1,gpu:2", 2),
        ("gpu:4,mps:100", 4),
        ("gpu", 1),  # Slurm's implied count
        ("gpu:a100", 1),  # a type, no count
        ("gpu:1g.5gb:2", 2),  # MIG type
        ("gpu:0", 0),
        ("gpu:0(IDX:N/A)", 0),
        ("gpu:2K", 2048),  # Slurm's count suffix
        ("cpu=8,mem=1000M,billing=8,gres/gpu=4", 4),  # recorded AllocTRES
        ("cpu=8,node=2,gres/gpu:a100=8", 8),
        ("cpu=8,gres/gpu=4,gres/gpu:h100=4", 4),  # total and per type: not added twice
        ("mem=1.5G,gres/gpu=2", 2),
        (" gpu:3 ", 3),
    ],
)
def test_gpu_count(text: str, gpus: int) -> None:
    assert gres.gpu_count(text) == gpus


@pytest.mark.parametrize(
    "text", [None, "", "(null)", "N/A", "mps:100", "shard:2,license:1", "cpu=8,node=2"]
)
def test_no_gpu_named(text: str | None) -> None:
    assert gres.gpu_count(text) is None


@pytest.mark.parametrize("text", ["gpu:4(IDX:0-3", "gpu:4)", "4:gpu", "gpu::", "gpu:4 x"])
def test_malformed(text: str) -> None:
    with pytest.raises(SlurmParseError, match=r"GRES|parenthes"):
        gres.gpu_count(text)


def test_items_and_indices() -> None:
    (item,) = gres.parse("gpu:a100:2(IDX:0,2)")
    assert item == GresItem("gpu", "a100", 2, "IDX:0,2")
    assert item.indices == "0,2"
    assert gres.parse("gpu:8(S:0-1)")[0].indices is None
    assert gres.count("gpu:2,mps:100", "mps") == 100
    assert gres.parse("bandwidth:lustre:no_consume:4G")[0].type == "lustre"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("gres:gpu:4", "gpu:4"), ("gres/gpu:4", "gpu:4"), ("N/A", ""), (None, ""), ("gpu:1", "gpu:1")],
)
def test_normalize(text: str | None, expected: str) -> None:
    assert gres.normalize(text) == expected


_word = st.from_regex(r"[a-z][a-z0-9_.]{0,6}", fullmatch=True).filter(lambda w: w != "gres")
_items = st.builds(
    GresItem,
    name=_word,
    type=st.none() | _word.filter(lambda w: not w.isdigit() and w != "no_consume"),
    count=st.integers(min_value=0, max_value=10**6),
    detail=st.none() | st.sampled_from(["IDX:0-3", "S:0-1", "IDX:0,2", "IDX:N/A"]),
)


@given(st.lists(_items, min_size=1, max_size=4))
def test_round_trip(items: list[GresItem]) -> None:
    text = gres.format_items(items)
    assert list(gres.parse(text)) == items
    assert gres.format_items(gres.parse("gres/" + text)) == text


def test_recorded_gpu_jobs_count_the_same_on_both_versions() -> None:
    """22.05 prints TresPerNode=gres:gpu:4, 24.11 gres/gpu:4: both are 4 GPUs per node."""
    counts = []
    for version in ("22.05", "24.11"):
        text = read(version, "03_jobs", "scontrol_show_job_d_running_gpu_2node.txt")
        (job,) = pr.parse_scontrol_jobs(text)
        per_node = gres.gpu_count(job.gres_per_node)
        allocated = gres.gpu_count(job.alloc_tres)
        details = [gres.gpu_count(d.gres) for d in job.gres_detail]
        counts.append((per_node, allocated, details, job.num_nodes))
    assert counts[0] == counts[1]
    per_node, allocated, details, nodes = counts[0]
    assert per_node and nodes and allocated == per_node * nodes
    assert details == [per_node] * len(details)


@pytest.mark.parametrize(
    ("text", "count"),
    [("4", 4), ("a100:4", 4), ("a100:2,v100:2", 4), ("h100:8", 8), ("1g.5gb:3", 3)],
)
def test_gpus_per_node_values(text: str, count: int) -> None:
    """``SLURM_GPUS_PER_NODE`` / ``--gpus``: a count always, a type maybe."""
    assert gres.typed_gpu_count(text) == count


@pytest.mark.parametrize("text", ["", "a100", "a100:", ":4", "4:a100"])
def test_malformed_gpus_per_node(text: str) -> None:
    with pytest.raises(SlurmParseError, match=r"\[type:\]count"):
        gres.typed_gpu_count(text)
