"""The hostlist engine on its own: syntax, Slurm's edge cases, errors, folding, set algebra.

Expected values marked "Slurm 22.05" were read from ``scontrol show ...`` on
that version; test_hostlist_oracle.py re-checks them (and random inputs)
against the real scontrol.
"""

from __future__ import annotations

import subprocess
import sys
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmkit.errors import HostlistParseError, UsageError
from slurmkit.hostlist import (
    HostSet,
    count,
    difference,
    expand,
    fold,
    intersection,
    iter_expand,
    symmetric_difference,
    union,
)
from slurmkit.hostlist._natsort import natkey

# -- expand ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("node-[42,49-51]", ["node-42", "node-49", "node-50", "node-51"]),
        ("n[1-3],n2", ["n1", "n2", "n3", "n2"]),  # Slurm 22.05 keeps duplicates
        ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
        ("n[1-2][3-4]", ["n13", "n14", "n23", "n24"]),
        ("n[08-11]", ["n08", "n09", "n10", "n11"]),
        ("n[9-011]", ["n9", "n10", "n11"]),  # the width comes from the lower bound only
        ("n[098-100]", ["n098", "n099", "n100"]),
        ("n[00-01]", ["n00", "n01"]),
        ("[1-2]", ["1", "2"]),
        ("1-3,n1a2,login", ["1-3", "n1a2", "login"]),  # no brackets: names as written
        (",n1,,n2,", ["n1", "n2"]),  # empty items are skipped, as in Slurm
        ("n1 n2\tn3\nn4", ["n1", "n2", "n3", "n4"]),  # whitespace separates too
        ("a.b-c[1-2]", ["a.b-c1", "a.b-c2"]),
        ("", []),
    ],
)
def test_expand_matches_slurm(text: str, names: list[str]) -> None:
    assert expand(text) == names
    assert list(iter_expand(text)) == names
    assert count(text) == len(names)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("n[1-2]-ib", ["n1-ib", "n2-ib"]),  # ClusterShell: text after the bracket
        ("n[1-9/4]", ["n1", "n5", "n9"]),  # ClusterShell: step
        ("n[01-10/3]x", ["n01x", "n04x", "n07x", "n10x"]),
    ],
)
def test_expand_extensions_slurm_rejects(text: str, names: list[str]) -> None:
    assert expand(text) == names
    assert count(text) == len(names)


def test_numbers_past_two_to_the_64_stay_exact() -> None:
    """Slurm clamps these to 18446744073709551615; being silently wrong is worse than slow."""
    big = 2**64
    assert expand(f"n[{big - 1}-{big + 1}]") == [f"n{big - 1}", f"n{big}", f"n{big + 1}"]
    assert str(HostSet(f"n{big},n{big + 1}")) == f"n[{big}-{big + 1}]"


def test_percent_in_names_is_literal() -> None:
    assert expand("a%d[1-2]%s") == ["a%d1%s", "a%d2%s"]


def test_iter_expand_is_lazy() -> None:
    assert list(islice(iter_expand("n[1-1000000000000]"), 3)) == ["n1", "n2", "n3"]


def test_count_does_not_expand() -> None:
    assert count("n[1-1000000000]") == 1_000_000_000
    assert count("r[1-1000]-n[1-1000000]") == 10**9
    assert count("n[1-10/2],m[1-3],x") == 5 + 3 + 1


# -- errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment", "position"),
    [
        ("n[1-", "'[' is never closed", 2),
        ("n[1-3", "'[' is never closed", 2),
        ("a,n[", "'[' is never closed", 4),
        ("n]", "']' without a matching '['", 2),
        ("n[1-2]]", "']' without a matching '['", 7),
        ("n[[1-2]]", "'[' inside brackets", 3),
        ("n[]", "empty brackets", 2),
        ("n[1-3,]", "empty range", 7),
        ("n[,1]", "empty range", 3),
        ("n[5-1]", "range '5-1' goes down", 3),
        ("n[a-b]", "invalid range 'a-b'", 3),
        ("n[1--3]", "invalid range '1--3'", 3),
        ("n[+1-3]", "invalid range '+1-3'", 3),
        ("n[1, 3]", "invalid range ' 3'", 5),
        ("x,n[1-2,3-x]", "invalid range '3-x'", 9),
        ("n[1-10/0]", "step 0", 3),
    ],
)
def test_bad_input_names_the_part_and_position(text: str, fragment: str, position: int) -> None:
    with pytest.raises(HostlistParseError) as caught:
        expand(text)
    error = caught.value
    assert fragment in str(error)
    assert error.pos == position
    assert f"at position {position} in {text!r}" in str(error)
    assert isinstance(error, UsageError)  # exit code 2 from the CLI


def test_every_entry_point_rejects_bad_input() -> None:
    for call in (expand, count, fold, HostSet, lambda t: fold(t, sort=False)):
        with pytest.raises(HostlistParseError):
            call("n[1-")


def test_limit_stops_expansion_before_any_name() -> None:
    with pytest.raises(HostlistParseError, match=r"too many names \(2000001, limit 1000000\)"):
        expand("x,n[1-2000000]")
    with pytest.raises(HostlistParseError) as caught:
        iter_expand("n[1-11]", limit=10)
    assert caught.value.pos == 1
    assert len(expand("n[1-2000000]", limit=None)) == 2_000_000


def test_limit_bounds_listing_but_not_ranges() -> None:
    assert len(HostSet("n[1-1000000000]", limit=10)) == 10**9
    with pytest.raises(HostlistParseError, match="one by one"):
        HostSet("r[1-100]-n[1-5]", limit=50)  # 100 outer prefixes must be listed
    with pytest.raises(HostlistParseError, match="one by one"):
        str(HostSet("n[1-100]-ib", limit=50))  # Slurm cannot write a range followed by text


# -- natural order ------------------------------------------------------------------


def _strnatcmp(a: str, b: str) -> int:
    """A direct port of strnatcmp.c (used by Slurm's hostlist_sort), for checking natkey."""

    def digit(s: str, i: int) -> bool:
        return i < len(s) and s[i].isascii() and s[i].isdigit()

    def char(s: str, i: int) -> int:
        return ord(s[i]) if i < len(s) else 0

    def compare_right(i: int) -> int:
        bias = 0
        while True:
            da, db = digit(a, i), digit(b, i)
            if not da and not db:
                return bias
            if not da:
                return -1
            if not db:
                return 1
            if char(a, i) < char(b, i) and not bias:
                bias = -1
            elif char(a, i) > char(b, i) and not bias:
                bias = 1
            i += 1

    def compare_left(i: int) -> int:
        while True:
            da, db = digit(a, i), digit(b, i)
            if not da and not db:
                return 0
            if not da:
                return -1
            if not db:
                return 1
            if char(a, i) != char(b, i):
                return -1 if char(a, i) < char(b, i) else 1
            i += 1

    i = 0
    while True:
        if digit(a, i) and digit(b, i):
            fractional = a[i] == "0" or b[i] == "0"
            result = compare_left(i) if fractional else compare_right(i)
            if result:
                return result
        ca, cb = char(a, i), char(b, i)
        if not ca and not cb:
            return 0
        if ca != cb:
            return -1 if ca < cb else 1
        i += 1


@given(st.text("ab-019", max_size=8), st.text("ab-019", max_size=8))
@settings(max_examples=2000)
def test_natkey_orders_like_strnatcmp(a: str, b: str) -> None:
    expected = _strnatcmp(a, b)
    got = (natkey(a) > natkey(b)) - (natkey(a) < natkey(b))
    assert got == expected


# -- folding ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "folded"),
    [
        # All Slurm 22.05 `scontrol show hostlistsorted` output.
        ("n3,n1,n2", "n[1-3]"),
        ("n1,n2,n09,n10,n11", "n[1-2,09-11]"),
        ("n01,n1,n001", "n[1,01,001]"),
        ("n9,n10,n010", "n[9-10,010]"),
        ("n10,n9,n100,n099,n98", "n[9-10,98,099-100]"),
        ("n0,n1,n00,n01", "n[0-1,00-01]"),
        ("a0,a00,a,a000", "a,a[0,00,000]"),
        ("n1,a,b1,b", "a,b,b1,n1"),
        ("x10y,x9y,x1y", "x1y,x9y,x10y"),
        ("n1-ib,n2-ib,n10-ib,n,n1,n2", "n,n[1-2],n1-ib,n2-ib,n10-ib"),
        ("a05,a5x,a99,a100", "a[05,99-100],a5x"),
        ("b1,a01,a1,a001b,a1b", "a[1,01],a001b,a1b,b1"),
        ("rack1-n01,rack1-n02,rack2-n01", "rack1-n[01-02],rack2-n01"),
        ("rack10-n1,rack9-n1,rack09-n1", "rack09-n1,rack9-n1,rack10-n1"),
        ("1,2,3", "[1-3]"),
        ("n5", "n5"),
        ("n8,n9,n10,n05", "n[8-10,05]"),
        ("", ""),
    ],
)
def test_fold_matches_hostlistsorted(names: str, folded: str) -> None:
    assert fold(names) == folded
    assert fold(names.split(",") if names else []) == folded


def test_fold_takes_hostlists_and_canonicalizes_them() -> None:
    assert fold(["n[1-3]", "n4", "n1[0-1]"]) == "n[1-4,10-11]"
    assert fold("nid0000[2-7]") == "nid[00002-00007]"  # same host names as nid00002...


@pytest.mark.parametrize(
    ("names", "folded"),
    [
        # All Slurm 22.05 `scontrol show hostlist` output.
        ("n3,n1,n2", "n[3,1-2]"),
        ("n1,n1", "n[1,1]"),
        ("n[1-3],n2,n4", "n[1-3,2,4]"),
        ("n1,m1,n2", "n1,m1,n2"),
        ("n9,n10,n08,n09", "n[9-10,08-09]"),
        ("n1-ib,n2-ib", "n1-ib,n2-ib"),
        ("n[1-3,4-5]", "n[1-5]"),
        ("a,a", "a,a"),
        ("n1,n3,m1,n5", "n[1,3],m1,n5"),
    ],
)
def test_fold_keep_order_matches_hostlist(names: str, folded: str) -> None:
    assert fold(names, sort=False) == folded


@pytest.mark.parametrize(
    ("names", "folded"),
    [
        ("rack1-n01,rack1-n02,rack2-n01,rack2-n02", "rack[1-2]-n[01-02]"),
        ("node[001-100]", "node[001-100]"),  # node100 joins the padded range
        ("n1-ib,n2-ib,n3-ib", "n[1-3]-ib"),
        ("r[1-3]-n[1-2]-ib,r4-n1-ib", "r[1-3]-n[1-2]-ib,r4-n1-ib"),
        ("login,c[1-2]s[1-2]n[1-2]", "c[1-2]s[1-2]n[1-2],login"),
        ("r1-n1,r2-n2", "r1-n1,r2-n2"),
    ],
)
def test_fold_multi_dim(names: str, folded: str) -> None:
    assert fold(names, multi_dim=True) == folded


def test_fold_multi_dim_diagonal_stays_one_name_per_point() -> None:
    names = [f"r{i}-n{i}" for i in range(4000)]
    folded = fold(names, multi_dim=True)
    assert folded.count(",") == 3999
    assert sorted(expand(folded)) == sorted(names)


def test_multi_dim_cannot_keep_order() -> None:
    with pytest.raises(ValueError, match="always sorts"):
        fold("n1", sort=False, multi_dim=True)


_name = st.builds(
    lambda prefix, number, suffix: f"{prefix}{number}{suffix}",
    st.sampled_from(["n", "node-", "r1-n", "r2-n", "a0", "", "x"]),
    st.one_of(
        st.integers(0, 120).map(str),
        st.tuples(st.integers(0, 120), st.integers(2, 4)).map(lambda t: str(t[0]).zfill(t[1])),
        st.just(""),
    ),
    st.sampled_from(["", "", "", "-ib", "b"]),
).filter(bool)


@given(st.lists(_name, max_size=60))
@settings(max_examples=400)
def test_fold_round_trips(names: list[str]) -> None:
    """Folding never loses, invents or reorders names in its own defined way."""
    unique_sorted = expand(fold(names))
    assert sorted(unique_sorted) == sorted(set(names))
    assert unique_sorted == list(HostSet(names))
    assert expand(fold(names, sort=False)) == names
    multi = expand(fold(names, multi_dim=True))
    assert sorted(multi) == sorted(set(names))


# -- HostSet ----------------------------------------------------------------------


def test_set_operations_work_on_ranges() -> None:
    assert str(difference("n[1-10000000]", "n[5-6]")) == "n[1-4,7-10000000]"
    assert len(union("n[1-1000000000]", "n[1000000001-2000000000]")) == 2 * 10**9
    assert str(intersection("n[1-100]", "n[50-200]", "n[60-70]")) == "n[60-70]"
    assert str(symmetric_difference("n[1-5]", "n[3-9]")) == "n[1-2,6-9]"


def test_padding_is_part_of_identity() -> None:
    both = HostSet("n01,n1")
    assert len(both) == 2
    assert "n01" in both and "n1" in both and "n001" not in both
    assert str(HostSet("n[01-10]") - HostSet("n10")) == "n[01-09]"
    assert str(HostSet("n[01-10]") - HostSet("n1")) == "n[01-10]"


def test_hostset_protocol() -> None:
    hosts = HostSet("n[1-3],login")
    assert len(hosts) == 4
    assert list(hosts) == ["login", "n1", "n2", "n3"]
    assert "n2" in hosts and "n4" not in hosts and "login" in hosts and 5 not in hosts
    assert hosts == HostSet(["n3", "login", "n1", "n2"])
    assert hosts != HostSet("n[1-3]")
    assert repr(hosts) == "HostSet('login,n[1-3]')"
    assert bool(hosts) and not HostSet() and not HostSet("")
    assert (hosts | "n4") == HostSet("n[1-4],login")
    assert (hosts & "n[2-9]") == HostSet("n[2-3]")
    assert (hosts - "login") == HostSet("n[1-3]")
    assert (hosts ^ "n[3-4]") == HostSet("n[1-2,4],login")
    assert HostSet("n2").issubset(hosts) and hosts.issuperset("n[1-2]")
    assert not hosts.issubset("n[1-3]")
    assert HostSet(hosts) == hosts
    with pytest.raises(TypeError):
        hash(hosts)


def test_same_host_through_different_syntax() -> None:
    assert HostSet("n1[0-5]") == HostSet("n[10-15]")
    assert HostSet("nid0000[2-7]") == HostSet("nid0000[2-7]")
    assert "nid00005" in HostSet("nid0000[2-7]")
    assert HostSet("r[1-2]-n[1-2]") == HostSet("r1-n1,r1-n2,r2-n1,r2-n2")
    assert HostSet("n[1-4/2]-ib") == HostSet("n1-ib,n3-ib")
    assert HostSet("n[1-2]0") == HostSet("n10,n20")


_hostlist_item = st.one_of(
    _name,
    st.builds(
        lambda prefix, lo, n, width, tail: f"{prefix}[{str(lo).zfill(width)}-{lo + n}]{tail}",
        st.sampled_from(["n", "n1", "n0", "r1-n", "", "a0"]),
        st.integers(0, 120),
        st.integers(0, 40),
        st.integers(1, 4),
        st.sampled_from(["", "", "-ib"]),
    ),
)


@given(st.lists(_hostlist_item, max_size=6), st.lists(_hostlist_item, max_size=6))
@settings(max_examples=400)
def test_set_algebra_agrees_with_python_sets(a: list[str], b: list[str]) -> None:
    """Range arithmetic, padding classes and canonical keys against plain expanded sets."""
    left, right = HostSet(a), HostSet(b)
    names_a, names_b = set(expand(",".join(a))), set(expand(",".join(b)))
    for result, expected in (
        (left | right, names_a | names_b),
        (left & right, names_a & names_b),
        (left - right, names_a - names_b),
        (left ^ right, names_a ^ names_b),
    ):
        listed = list(result)
        assert sorted(listed) == sorted(expected)
        assert len(result) == len(expected)
        assert expand(str(result)) == listed
    assert all(name in left for name in names_a)
    assert all(name in left for name in names_b) == names_b.issubset(names_a)


def test_package_imports_no_third_party_module() -> None:
    code = (
        "import sys, slurmkit.hostlist as h; h.fold('n[1-2]', multi_dim=True); "
        "h.fold('n1', sort=False); h.expand('n1'); "
        "bad = [m for m in ('click', 'tabulate', 'jinja2', 'paramiko') if m in sys.modules]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "text", ["n" + "9" * 5000, "a" + "9" * 5000 + "b1", "n[1-" + "9" * 5000 + "]"]
)
def test_numbers_python_cannot_convert_are_a_clean_error(text: str) -> None:
    """Python's int/str limit is 4300 digits; such input must not end in a ValueError traceback."""
    for call in (HostSet, fold, lambda t: fold(t, sort=False), lambda t: fold(t, multi_dim=True)):
        try:
            call(text)
        except HostlistParseError as error:
            assert len(str(error)) < 200
