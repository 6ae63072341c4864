"""Slurm itself as the oracle: random hostlists through our engine and through scontrol.

* ``expand``            == ``scontrol show hostnames``
* ``fold``              == ``scontrol show hostlistsorted`` (duplicate-free input)
* ``fold(sort=False)``  == ``scontrol show hostlist`` (any input, duplicates too)

Inputs stay inside what Slurm 22.05 accepts: no text after the last bracket,
no steps, numbers below 2**31 (Slurm compares range starts as C ints),
ranges far below its 65536-name limit, names under its 64-character buffer.
scontrol runs directly here (not through slurmkit's subprocess seam) with a
two-line slurm.conf: without one it tries a DNS SRV look-up and fails.
A missing scontrol is a failure, not a skip: CI installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurmkit.errors import HostlistParseError
from slurmkit.hostlist import HostSet, expand, fold

# For a deeper one-off run: SLURMKIT_ORACLE_EXAMPLES=5000 pytest tests/unit/test_hostlist_oracle.py
SETTINGS = settings(
    max_examples=int(os.environ.get("SLURMKIT_ORACLE_EXAMPLES", "1000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def scontrol(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], list[str]]:
    """``scontrol show MODE TEXT`` -> output lines; fails on any error text."""
    binary = shutil.which("scontrol")
    if binary is None:
        pytest.fail("scontrol not found: install slurm-client; this oracle test must not skip")
    conf = tmp_path_factory.mktemp("slurm") / "slurm.conf"
    conf.write_text("ClusterName=oracle\nSlurmctldHost=localhost\n")
    env = {"PATH": os.environ.get("PATH", ""), "SLURM_CONF": str(conf), "LC_ALL": "C"}

    def show(mode: str, text: str) -> list[str]:
        done = subprocess.run(
            [binary, "show", mode, "--", text], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode == 0 and not done.stderr, (mode, text, done.stderr)
        return done.stdout.splitlines()

    return show


# -- strategies --------------------------------------------------------------------

_LITERAL = st.text(alphabet="abnrx-._", max_size=3)


@st.composite
def _range_text(draw: st.DrawFn) -> tuple[str, int]:
    """One bracket item with Slurm's padding quirks: the width comes from the lower bound."""
    magnitude = draw(st.sampled_from([9, 120, 1100, 10**5, 10**7, 2**31 - 100]))
    lo = draw(st.integers(0, magnitude))
    extra = draw(st.sampled_from([0, 0, 0, 1, 2]))
    lo_text = str(lo).zfill(len(str(lo)) + extra)
    size = draw(st.integers(0, 12))
    if size == 0:
        return lo_text, 1
    hi = lo + size
    hi_text = str(hi).zfill(len(str(hi)) + draw(st.sampled_from([0, 0, 1])))
    return f"{lo_text}-{hi_text}", size + 1


@st.composite
def _token(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        # A plain name, digits anywhere (n1a2), or no digits at all.
        parts = draw(st.lists(st.one_of(_LITERAL, st.integers(0, 999).map(str)), max_size=4))
        return "".join(parts) or "n"
    literals = [draw(_LITERAL) for _ in range(draw(st.integers(1, 3)))]
    text, total = "", 1
    for literal in literals:
        items = draw(st.lists(_range_text(), min_size=1, max_size=3))
        total *= sum(n for _, n in items)
        text += literal + "[" + ",".join(t for t, _ in items) + "]"
        if total > 300:
            break
    return text


_hostlist = st.lists(_token(), min_size=1, max_size=8).map(",".join)


@st.composite
def _name_pool(draw: st.DrawFn) -> list[str]:
    """Names in a few families, with runs, gaps, zero padding classes and single hosts."""
    prefixes = draw(
        st.lists(
            st.sampled_from(["n", "node-", "gpu", "r1-n", "r2-n", "a0", "", "x.y-", "c1s"]),
            min_size=1,
            max_size=3,
            unique=True,
        )
    )
    names: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        prefix = draw(st.sampled_from(prefixes))
        start = draw(st.sampled_from([0, 1, 7, 95, 998, 10**4 - 3, 123456]))
        start += draw(st.integers(0, 5))
        length = draw(st.integers(1, 15))
        pad = draw(st.sampled_from([0, 0, 0, 2, 3, 5]))
        suffix = draw(st.sampled_from(["", "", "", "", "-ib"]))
        step = draw(st.sampled_from([1, 1, 1, 2, 3]))
        names += [
            f"{prefix}{str(v).zfill(pad)}{suffix}" for v in range(start, start + length, step)
        ]
    names += draw(st.lists(st.sampled_from(["login", "mgmt", "n", "a"]), max_size=2))
    return names


def _order_dependent_in_slurm(names: list[str]) -> bool:
    """True when ``hostlistsorted`` depends on the input order (see the note in _natsort).

    Slurm sorts an unpadded range by the digit count of its first number, so
    a run like 8-10 sorts before a padded ``05`` when it arrived as one range
    and after it when it arrived as 8, 9 and 10 separately.
    """
    padded: defaultdict[str, set[int]] = defaultdict(set)
    plain: defaultdict[str, set[int]] = defaultdict(set)
    for name in names:
        prefix = name.rstrip("0123456789")
        digits = name[len(prefix) :]
        if not digits:
            continue
        if len(digits) > 1 and digits[0] == "0":
            padded[prefix].add(len(digits))
        else:
            plain[prefix].add(int(digits))
    for prefix, widths in padded.items():
        values = plain[prefix]
        for value in values:
            if value - 1 in values and any(
                len(str(value - 1)) < w <= len(str(value)) for w in widths
            ):
                return True
    return False


# -- the oracle tests ------------------------------------------------------------


@given(_hostlist)
@SETTINGS
def test_expand_matches_scontrol_hostnames(scontrol, text: str) -> None:
    assert expand(text) == scontrol("hostnames", text)


@given(_name_pool(), st.randoms(use_true_random=False))
@SETTINGS
def test_fold_matches_scontrol_hostlistsorted(scontrol, names: list[str], rnd) -> None:
    unique = list(dict.fromkeys(names))
    rnd.shuffle(unique)
    ours = fold(unique)
    if _order_dependent_in_slurm(unique):
        # Slurm has no single answer; it must agree when given our order.
        unique = list(HostSet(unique))
    assert [ours] == scontrol("hostlistsorted", ",".join(unique))


@given(_name_pool(), st.randoms(use_true_random=False))
@SETTINGS
def test_fold_keep_order_matches_scontrol_hostlist(scontrol, names: list[str], rnd) -> None:
    names = names + rnd.sample(names, k=min(len(names), 3))  # duplicates stay, as in Slurm
    rnd.shuffle(names)
    assert [fold(names, sort=False)] == scontrol("hostlist", ",".join(names))


# Edge cases found by hand, re-checked against Slurm so the recorded expectations
# in test_hostlist.py cannot drift from the real thing.
@pytest.mark.parametrize(
    "text",
    [
        "rack[1-2]-n[01-04]",
        "n[01-100]",
        "n[9-011]",
        "n[009-11]",
        "n[1-3],n2",
        "n123,n1a2,1-3,[1-3]",
        "n[1-2][3-4],n[1-2]-[3-4]",
        ",n1,,n2,",
        "n[0-65535]",
        "n[4294967295-4294967296]",
    ],
)
def test_recorded_expand_cases(scontrol, text: str) -> None:
    assert expand(text) == scontrol("hostnames", text)


@pytest.mark.parametrize(
    "names",
    [
        "n1,n2,n09,n10,n11",
        "n01,n1,n001",
        "n9,n10,n010",
        "n10,n9,n100,n099,n98",
        "a0,a00,a,a000",
        "n1-ib,n2-ib,n10-ib,n,n1,n2",
        "a05,a5x,a99,a100",
        "b1,a01,a1,a001b,a1b",
        "rack10-n1,rack9-n1,rack09-n1",
        "1,2,3",
        "n8,n9,n10,n05",
    ],
)
def test_recorded_fold_cases(scontrol, names: str) -> None:
    assert [fold(names)] == scontrol("hostlistsorted", names)
    assert [fold(names, sort=False)] == scontrol("hostlist", names)


@pytest.mark.parametrize("text", ["n[1-", "n[1-3", "n]", "n[1-2]]", "n[5-1]", "n[a-b]", "n[]"])
def test_slurm_is_lenient_where_we_are_strict(tmp_path: Path, text: str) -> None:
    """Documents why slurmkit errors: scontrol prints a guess or an error but exits 0."""
    binary = shutil.which("scontrol")
    assert binary is not None, "scontrol not found: install slurm-client"
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=oracle\nSlurmctldHost=localhost\n")
    done = subprocess.run(
        [binary, "show", "hostnames", "--", text],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), "SLURM_CONF": str(conf)},
    )
    assert done.returncode == 0
    with pytest.raises(HostlistParseError):
        expand(text)
