"""The multi-node network checks (``net``, ``nccl-multi``): read the pairs, name the bad node.

A check on each node alone passes a node with a dead NIC or a firewall rule; that
node is what hangs a multi-node training at rendezvous. So ``net-check.slurm.j2``
runs a 2-rank all-reduce over pairs of nodes, in rounds where every node meets a
new partner, and prints one ``SLURMKIT_NET`` line per planned pair, per result and
per node it skipped. This module turns those lines into one result per node and
check, pure functions only:

* a node whose pairs all failed while pairs without it succeeded is **fail**, its
  failed partners named: the broken link is the one every failing pair shares;
* a node with failed pairs and good ones passes, with a warning naming the partners
  (it met the broken node);
* with only 2 nodes a failed pair cannot say which end is broken: both fail, "cannot
  tell which of the 2";
* when every pair failed there is no good pair to compare with: every node is
  **unknown** (a port blocked everywhere, not n broken nodes);
* a node whose median pair bandwidth is below ``slow_ratio`` x the median over all
  pairs is **slow**, with both figures;
* a node none of whose pairs reported (the scan ended first), or whose own task did
  not run in one of its pairs (the node died, even mid-scan after a good pair, or srun
  could not start on it), is **unknown**, never a pass; a pair whose partner's task
  never ran says nothing about a node.

The log is text a node's output can shape (issue 14): lines naming a node outside
the job's allocation are dropped, and malformed lines are ignored.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from slurmkit.faulty.checks import NET_CHECKS
from slurmkit.hostlist import fold
from slurmkit.templating.results import CheckLine

TEMPLATE = "net-check"
DEFAULT_PORT = 29600
DEFAULT_SIZE_MB = 16
DEFAULT_ROUNDS = 3
DEFAULT_SLOW_RATIO = 0.5
MAX_PAIR_TIMEOUT = 60.0
MIN_PAIR_TIMEOUT = 5.0
LAUNCH_GRACE = 30.0  # the driver's allowance (templates/_net_check.py) for starting a step
OK, FAIL, TIMEOUT = "ok", "fail", "timeout"
SLOW = "slow"

_WORD = re.compile(r"^[a-z]+=\S*$")
_TEXT = re.compile(r" (error|why)=")


@dataclass(frozen=True)
class Pair:
    """One pair's result: ``a`` listened (rank 0), ``b`` connected (rank 1)."""

    check: str
    round: int
    a: str
    b: str
    status: str  # ok | fail | timeout
    mbps: float | None = None
    error: str = ""
    ran: tuple[str, ...] | None = None  # whose task printed a result (None: not said)

    def partner(self, node: str) -> str:
        return self.b if node == self.a else self.a

    @property
    def did_not_run(self) -> set[str]:
        """The ends of a failed or timed-out pair whose task never reported: no evidence on
        the network (a node frozen mid-scan leaves its end of a pair silent until it is killed)."""
        if self.status == OK or self.ran is None:
            return set()
        return {self.a, self.b} - set(self.ran)


@dataclass
class NetLog:
    """What the driver printed: planned pairs, results, skipped and unknown nodes."""

    planned: list[tuple[str, int, str, str]] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    skipped: dict[tuple[str, str], str] = field(default_factory=dict)  # (check, node) -> why
    unknown: dict[tuple[str, str], str] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)


def parse(text: str) -> NetLog:
    """Every well-formed ``SLURMKIT_NET`` line of a job log (others are ignored)."""
    log = NetLog()
    for line in text.split("\n"):
        start = line.find("SLURMKIT_NET ")
        if start < 0:
            continue
        fields = _fields(line[start:].rstrip())
        if fields is None:
            continue
        kind, check = fields.get("kind"), fields.get("check", "")
        if check not in NET_CHECKS:
            continue
        try:
            _add(log, kind, check, fields)
        except (KeyError, ValueError):
            continue
    return log


def _fields(line: str) -> dict[str, str] | None:
    """``key=value`` words, then an optional free-text ``error=``/``why=`` to the line's end."""
    head, text = line, None
    found = _TEXT.search(line)
    if found:
        head, text = line[: found.start()], (found.group(1), line[found.end() :].strip())
    words = head.split()[1:]
    if not words or not all(_WORD.match(w) for w in words):
        return None
    fields = dict(w.split("=", 1) for w in words)
    if text:
        fields[text[0]] = text[1]
    return fields


def _add(log: NetLog, kind: str | None, check: str, f: dict[str, str]) -> None:
    if kind == "planned":
        log.planned.append((check, int(f["round"]), f["a"], f["b"]))
    elif kind == "pair":
        if f["status"] not in (OK, FAIL, TIMEOUT):
            raise ValueError(f["status"])
        mbps = float(f["mbps"]) if f.get("mbps", "-") != "-" else None
        if f["status"] == OK and mbps is None:
            raise ValueError("an ok pair without a bandwidth")
        ran = tuple(n for n in f["ran"].split(",") if n and n != "-") if "ran" in f else None
        log.pairs.append(
            Pair(check, int(f["round"]), f["a"], f["b"], f["status"], mbps, f.get("error", ""), ran)
        )
    elif kind == "skip":
        log.skipped[(check, f["node"])] = f.get("why", "") or "skipped"
    elif kind == "unknown":
        log.unknown[(check, f["node"])] = f.get("why", "") or "no answer"
    elif kind == "done":
        log.done.add(check)


def results(
    checks: Sequence[str], allocation: Sequence[str], text: str, slow_ratio: float
) -> list[CheckLine]:
    """One CheckLine per node of the allocation and network check in ``checks``."""
    log = parse(text)
    out: list[CheckLine] = []
    for check in checks:
        if check in NET_CHECKS:
            out += verdicts(check, allocation, log, slow_ratio)
    return out


def outside(text: str, allocation: Sequence[str]) -> list[str]:
    """Nodes the network lines name but the allocation does not hold (shown, never judged)."""
    log = parse(text)
    named = [n for p in log.pairs for n in (p.a, p.b)] + [n for _, n in log.skipped]
    inside = set(allocation)
    return list(dict.fromkeys(n for n in named if n not in inside))


def verdicts(
    check: str, allocation: Sequence[str], log: NetLog, slow_ratio: float = DEFAULT_SLOW_RATIO
) -> list[CheckLine]:
    """The localisation and slow rules (module docstring) for one check."""
    inside = set(allocation)
    pairs = _unique(
        p for p in log.pairs if p.check == check and p.a in inside and p.b in inside and p.a != p.b
    )
    planned = [(a, b) for c, _, a, b in log.planned if c == check and a in inside and b in inside]
    paired = {n for p in pairs for n in (p.a, p.b)} | {n for ab in planned for n in ab}
    overall = statistics.median(
        [p.mbps for p in pairs if p.status == OK and p.mbps is not None] or [0]
    )
    any_ok = any(p.status == OK for p in pairs)
    out = []
    for node in allocation:
        if (check, node) in log.skipped:
            out.append(CheckLine(node, check, "skipped", log.skipped[(check, node)]))
            continue
        mine = [p for p in pairs if node in (p.a, p.b)]
        if not mine:
            why = log.unknown.get((check, node))
            out.append(CheckLine(node, check, "unknown", _no_result(node, planned, why, paired)))
            continue
        counted = [p for p in mine if not p.did_not_run]
        died = [p for p in mine if node in p.did_not_run]
        if not counted or died:  # an earlier good pair says nothing about the node now
            out.append(CheckLine(node, check, "unknown", _not_run(node, mine)))
            continue
        out.append(_judge(node, check, counted, pairs, len(paired), any_ok, overall, slow_ratio))
    return out


def _unique(pairs: Iterable[Pair]) -> list[Pair]:
    """The first result per (round, a, b): a forged repeat cannot overwrite a real one."""
    seen: dict[tuple[int, str, str], Pair] = {}
    for p in pairs:
        seen.setdefault((p.round, p.a, p.b), p)
    return list(seen.values())


def _no_result(node: str, planned: list[tuple[str, str]], why: str | None, paired: set[str]) -> str:
    partners = sorted({b if a == node else a for a, b in planned if node in (a, b)})
    if why:
        return f"no pair ran: {why}"
    if partners:
        return (
            f"no result for its pairs with {', '.join(partners)} (the scan ended before they ran)"
        )
    if not paired:
        return "no pair ran (the network check did not start, or the scan ended first)"
    return "no pair was planned with this node"


def _not_run(node: str, mine: list[Pair]) -> str:
    """Every pair of the node failed to start a task somewhere: a dead node, not a network."""
    died = [p for p in mine if node in p.did_not_run]
    if died:
        good = sum(p.status == OK for p in mine)
        after = f" after {good} good pair(s)" if good else ""
        return (
            f"its task did not run in its pair(s) with {_partners(node, died)}{after} (the "
            f"node died, or srun could not start on it): {_error(died[0])}"
        )
    return f"its partners' tasks did not run ({_partners(node, mine)}): no pair tested it"


def _judge(
    node: str,
    check: str,
    mine: list[Pair],
    pairs: list[Pair],
    nodes_paired: int,
    any_ok: bool,
    overall: float,
    slow_ratio: float,
) -> CheckLine:
    bad = [p for p in mine if p.status != OK]
    good = [p for p in mine if p.status == OK]
    if bad and not good:
        partners = _partners(node, bad)
        first = _error(bad[0])
        if nodes_paired == 2:
            detail = (
                f"the only pair failed: cannot tell which of the 2 ({node}, {partners}): {first}"
            )
            return CheckLine(node, check, "fail", detail)
        if any(p.status == OK and node not in (p.a, p.b) for p in pairs):
            what = "pair" if len(bad) == 1 else f"all {len(bad)} pairs"
            return CheckLine(node, check, "fail", f"{what} failed, with {partners}: {first}")
        detail = (
            "its pairs failed, and so did every other pair: cannot tell which node is at fault "
            f"(is the check's port blocked everywhere?): {first}"
            if not any_ok
            else f"its pairs failed (with {partners}) and no pair without it ran: {first}"
        )
        return CheckLine(node, check, "unknown", detail)
    figure = statistics.median([p.mbps for p in good if p.mbps is not None])
    summary = f"median {figure:.1f} MB/s over {len(good)} pair(s)"
    warning = ""
    if bad:
        warning = f"{len(bad)} of {len(mine)} pairs failed (with {_partners(node, bad)}); "
    if overall > 0 and figure < slow_ratio * overall:
        detail = (
            f"slow: {summary}, below {slow_ratio:g} x the median of all pairs ({overall:.1f} MB/s)"
        )
        return CheckLine(node, check, SLOW, warning + detail)
    if warning:
        return CheckLine(node, check, "pass", f"warning: {warning}{summary}")
    return CheckLine(node, check, "pass", summary)


def _partners(node: str, pairs: list[Pair]) -> str:
    return fold(sorted({p.partner(node) for p in pairs}))


def _error(pair: Pair) -> str:
    return pair.error or ("timed out" if pair.status == TIMEOUT else "failed")


def default_rounds(count: int, rounds: int | None) -> int:
    """How many rounds the driver will run for ``count`` nodes (0 or None asked: the default)."""
    total = count if count % 2 else count - 1
    if rounds is None:
        return min(total, DEFAULT_ROUNDS)
    return total if rounds == 0 else min(rounds, total)


def pair_timeout(scan_timeout: float, count: int, rounds: int | None) -> int:
    """Seconds each pair gets: the scan's --timeout shared among the rounds, at most 60.

    Every round may end with a hung pair killed after its time plus the driver's
    launch allowance; a minute is kept for the job to start and the per-node checks.
    """
    share = (scan_timeout - 60.0) / max(default_rounds(count, rounds), 1) - LAUNCH_GRACE
    return int(max(MIN_PAIR_TIMEOUT, min(MAX_PAIR_TIMEOUT, share)))
