"""Node lists that never run away: huge ranges, huge counts, long names, the --max limit.

Issue 14 (bad-input sweep): ``nodes count 'n[1-10**30]'`` and ``expand
'n[0-99999999999999999999999]'`` raised OverflowError at ``len(range)``; a 20,000-group
list hit Python's int-to-text digit limit. Issue 21 item 6: ``fold --keep-order``
ignored ``--max``; ``classify`` backtracked over long digit runs; the limit error
pointed at the first copy of a repeated name.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import pytest
from click.testing import CliRunner

from slurmkit.cli import cli
from slurmkit.errors import HostlistParseError
from slurmkit.hostlist import HostSet, count, expand, fold
from slurmkit.hostlist._canonical import classify

HUGE = "n[1-1000000000000000000000000000000]"  # 10**30 names
GROUPS = "n" + "[1-2]" * 20_000  # 2**20000 names: 6021 digits


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def within(seconds: float, work: Callable[[], object]) -> object:
    """Run ``work`` in a thread and fail if it is still running after ``seconds`` (a hang guard).

    Generous on purpose: it tells "linear" from "quadratic" (seconds to minutes on
    these inputs), never a fast machine from a slow one.
    """
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


# ---------------------------------------------------------------- counts past sys.maxsize


def test_count_needs_no_limit_past_sys_maxsize() -> None:
    assert count(HUGE) == 10**30
    assert count("n[0-99999999999999999999999]") == 10**23
    assert HostSet(HUGE).size() == 10**30


@pytest.mark.parametrize("unique", [[], ["--unique"]])
def test_cli_count_prints_a_count_past_sys_maxsize(unique: list[str]) -> None:
    assert run("nodes", "count", *unique, HUGE) == (0, f"{10**30}\n", "")


def test_cli_count_json_past_sys_maxsize() -> None:
    code, out, _ = run("nodes", "count", "--json", HUGE)
    assert code == 0 and str(10**30) in out


@pytest.mark.parametrize(
    "args",
    [
        ["nodes", "expand", "n[0-99999999999999999999999]"],
        ["nodes", "expand", "--json", HUGE],
        ["nodes", "fold", "--keep-order", "x[1-2]" + HUGE[1:] + "y"],
    ],
)
def test_listing_past_sys_maxsize_is_refused_in_one_line(args: list[str]) -> None:
    code, out, err = run(*args)
    assert code == 2 and out == ""
    assert err.startswith("slurmkit: too many names") and err.count("\n") == 1


def test_a_huge_set_operation_stays_on_ranges() -> None:
    code, out, _ = run("nodes", "diff", "--json", HUGE, "n[5-6]")
    assert code == 0 and f'"count": {10**30 - 2}' in out


# ---------------------------------------------------------------- Python's digit limit


def test_a_20000_group_list_is_counted_without_the_digit_limit() -> None:
    assert count(GROUPS) == 2**20_000
    code, out, err = run("nodes", "count", GROUPS)
    if code == 0:
        assert out.strip() == "2" or len(out.strip()) > 4300  # printed whole
    else:
        assert code == 2 and err.count("\n") == 1 and "digits" in err


@pytest.mark.parametrize(
    "args",
    [
        ["nodes", "expand", GROUPS],
        ["nodes", "fold", GROUPS],
        ["nodes", "fold", "--keep-order", GROUPS],
        ["nodes", "fold", "--multi-dim", GROUPS],
        ["nodes", "count", "--unique", GROUPS],
        ["nodes", "union", GROUPS, "n1"],
    ],
)
def test_a_20000_group_list_fails_in_one_line(args: list[str]) -> None:
    code, out, err = run(*args)
    assert (code, out) == (2, "")
    assert err.startswith("slurmkit: ") and err.count("\n") == 1


def test_the_digit_limit_is_not_raised_for_everyone() -> None:
    before = sys.get_int_max_str_digits()
    run("nodes", "count", GROUPS)
    assert sys.get_int_max_str_digits() == before


# ---------------------------------------------------------------- issue 21 item 6


def test_keep_order_honours_max_before_listing_anything() -> None:
    text = "a[1-200]b[1-200]c[1-2]"  # 40,000 prefixes, 80,000 names

    def refused() -> str:
        with pytest.raises(HostlistParseError, match=r"too many .*limit 1000"):
            fold(text, sort=False, limit=1000)
        return "refused"

    assert within(5, refused) == "refused"
    code, out, err = run("nodes", "fold", "--keep-order", "--max", "1000", text)
    assert (code, out) == (2, "") and "limit 1000" in err


def test_keep_order_still_folds_under_the_limit() -> None:
    assert fold("a[1-2]b[1-2]c[1-3]", sort=False) == "a1b1c[1-3],a2b1c[1-3],a1b2c[1-3],a2b2c[1-3]"
    assert expand(fold("a[1-2]b[1-2]c[1-3]", sort=False)) == expand("a[1-2]b[1-2]c[1-3]")


def test_classify_is_linear_in_a_long_digit_run() -> None:
    name = "n" + "7" * 40_000 + "a1b"
    assert within(5, lambda: classify(name)) == (("n" + "7" * 40_000 + "a", "b", 0), 1)
    assert within(5, lambda: fold([name])) == name
    assert within(5, lambda: fold([name], sort=False)) == name


def test_classify_is_linear_in_a_long_run_of_letters() -> None:
    name = "n1" + "a" * 40_000 + "1" + "b" * 40_000
    assert within(5, lambda: classify(name)) == (("n1" + "a" * 40_000, "b" * 40_000, 0), 1)


def test_classify_keeps_its_meaning() -> None:
    assert classify("node007-ib") == (("node", "-ib", 3), 7)
    assert classify("n0") == (("n", "", 0), 0)
    assert classify("login") is None
    with pytest.raises(HostlistParseError, match="longer than 4000 digits"):
        classify("n" + "1" * 4001)


def test_limit_error_points_at_the_name_that_crossed_it() -> None:
    with pytest.raises(HostlistParseError) as caught:
        expand("a,b,a", limit=2)
    assert caught.value.pos == 5  # the second 'a', not the first
    with pytest.raises(HostlistParseError) as caught:
        expand("x,n[1-2],x,n[1-2]", limit=4)
    assert caught.value.pos == 12
