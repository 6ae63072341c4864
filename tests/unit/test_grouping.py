"""The grouped node table (issue 20 item 5): one line per group of alike nodes."""

from __future__ import annotations

import random

from slurmkit.grouping import group_nodes, grouped_table, per_node_table

HEADERS = ["node", "state", "action"]


def test_rows_alike_but_for_the_node_become_one_with_a_folded_list_and_a_count() -> None:
    rows = [
        ["n3", "DOWN", "skipped"],
        ["n1", "DOWN", "skipped"],
        ["n2", "IDLE", "would return"],
        ["n10", "DOWN", "skipped"],
    ]
    table, headers = grouped_table(rows, HEADERS)
    assert headers == ["nodes", "count", "state", "action"]
    assert table == [["n[1,3,10]", 3, "DOWN", "skipped"], ["n2", 1, "IDLE", "would return"]]


def test_every_other_cell_is_part_of_the_key() -> None:
    rows = [["n1", "DOWN", "skipped"], ["n2", "DOWN", "skipped: other"], ["n3", "IDLE", "skipped"]]
    table, _ = grouped_table(rows, HEADERS)
    assert [r[0] for r in table] == ["n1", "n2", "n3"]  # nothing alike: nothing merged


def test_groups_keep_the_order_of_their_first_node_whatever_the_input_size() -> None:
    keys = ["a", "b", "c", "d"]
    rows = [[f"n{i}", keys[i % 4 if i < 8 else random.randrange(4)], "x"] for i in range(5000)]
    table, _ = grouped_table(rows, HEADERS)
    assert [r[2] for r in table] == keys  # first seen: n0 a, n1 b, n2 c, n3 d
    assert sum(r[1] for r in table) == 5000
    again, _ = grouped_table(rows, HEADERS)
    assert again == table  # stable from run to run


def test_the_node_column_may_be_anywhere_and_hold_hostlists() -> None:
    rows = [["Kill task failed", "n[1-2]"], ["Kill task failed", "n[3-4],n9"], ["disk", "n5"]]
    table, headers = grouped_table(rows, ["reason", "nodes"], node_column=1)
    assert headers == ["nodes", "count", "reason"]
    assert table == [["n[1-4,9]", 5, "Kill task failed"], ["n5", 1, "disk"]]


def test_a_node_listed_twice_is_counted_once() -> None:
    table, _ = grouped_table([["n1", "x"], ["n1", "x"], ["n[1-2]", "x"]], ["node", "s"])
    assert table == [["n[1-2]", 2, "x"]]


def test_upper_case_headers_stay_upper_case() -> None:
    _, headers = grouped_table([["n1", "pass"]], ["NODE", "RESULT"])
    assert headers == ["NODES", "COUNT", "RESULT"]


def test_per_node_rows_are_one_per_node_and_plain_names_pass_through() -> None:
    rows = [["n[1-3]", "bench"], ["n7", "disk"]]
    assert per_node_table(rows) == [
        ["n1", "bench"],
        ["n2", "bench"],
        ["n3", "bench"],
        ["n7", "disk"],
    ]
    assert per_node_table([["x", "n[1-2]"]], node_column=1) == [["x", "n1"], ["x", "n2"]]


def test_group_nodes_buckets_any_items_by_any_key() -> None:
    items = [("n1", 0), ("n2", 1), ("n3", 0)]
    groups = group_nodes(items, node=lambda i: i[0], key=lambda i: i[1])
    assert [(g.key, g.nodes, g.hostlist, g.count) for g in groups] == [
        (0, ("n1", "n3"), "n[1,3]", 2),
        (1, ("n2",), "n2", 1),
    ]
