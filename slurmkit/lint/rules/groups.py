"""Whether the nodes of a multi-node job can form one group at all.

- ``torchrun`` (and ``python -m torch.distributed.run|launch``) started by srun on
  several nodes without ``--nnodes``: its default is one node, so each node trains
  alone, as a group of its own, and nothing says so.
- ``--nnodes`` > 1 with the static rendezvous (torchrun's default when no
  ``--rdzv_backend`` is given) but no ``--node_rank``: every node takes rank 0, the
  default, and the group never forms. A ``c10d`` (or ``etcd``) rendezvous numbers the
  nodes as they join and needs no rank.
- ``nodes_array=("$nodes")``: double quotes make the whole newline-separated list of
  ``scontrol show hostnames`` one element, so ``${nodes_array[0]}`` (the "head node")
  is every name at once.

Only what the script shows: a launcher command that takes words lint cannot read
(``"$@"``, a variable never assigned here, an array) may carry the option, so it is
unknown, never wrong. torchrun also reads each option from ``PET_<NAME>``
(``PET_NNODES``, ``PET_NODE_RANK``): set anywhere in the script, it counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, Finding, Rule
from slurmkit.lint.rules.launchers import machines_without_rank, srun_launcher
from slurmkit.lint.rules.variables import SHELL_SPECIALS
from slurmkit.lint.script import Script, Srun
from slurmkit.sbatch.directives import node_range, to_int

_TORCH = ("torchrun", "torch.distributed.run", "torch.distributed.launch")
# quotes in a row: '"$N"' inside a single-quoted bash -c string splices the batch
# shell's value in ('…--nnodes='"$SLURM_NNODES"' …')
_NNODES = re.compile(r"--nnodes(?:=|\s+)[\"']*(?P<n>[^\s\"']+)")
_NODE_RANK = re.compile(r"--node[_-]rank(?:=|\s+)\S")
_BACKEND = re.compile(r"--rdzv[_-]backend(?:=|\s+)[\"']*(?P<backend>[\w$.{}-]+)")
_STANDALONE = re.compile(r"--standalone\b")
# A word that may hold options lint cannot see: "$@", $*, ${ARGS[@]}, or $NAME alone.
_OPAQUE = re.compile(
    r"(?:^|\s)[\"']?\$(?:@|\*|\{?(?P<name>[A-Za-z_]\w*)(?:\[[@*]\])?\}?)[\"']?(?=\s|$)"
)
_PROVIDED = frozenset({"SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_NODEID", "SLURM_PROCID"})


def _step_nodes(script: Script, srun: Srun) -> int | None:
    """Fewest nodes the step runs on: its own -N, else the job's; None when unknown."""
    option = srun.option("nodes")
    if option is not None:
        bounds = node_range(option.value)
        return bounds[0] if bounds else None
    if srun.has("nodelist", "relative") or (srun.option("ntasks") is not None):
        return None  # placed by hand or by task count: lint does not follow it
    nodes = script.job.nodes
    return nodes[0] if nodes else None


def _torch_steps(script: Script) -> Iterator[tuple[Srun, str, int]]:
    """(srun, launcher text with the variables it reads, nodes) of torchrun on 2+ nodes."""
    if "torch" not in script.text:
        return  # no launcher anywhere: skips a scan of every srun (40,000-line scripts)
    for srun in script.sruns:
        name = srun_launcher(script, srun)
        if name not in _TORCH:
            continue
        nodes = _step_nodes(script, srun)
        if nodes is None or nodes < 2:
            continue
        text = script.expanded_source(script.source(srun.command))
        if _opaque(script, text):
            continue
        yield srun, name, nodes


def _opaque(script: Script, text: str) -> bool:
    """A word that may carry options lint cannot read (unassigned, arguments, arrays)."""
    for match in _OPAQUE.finditer(text):
        name = match.group("name")
        if name is None:
            return True
        if name in _PROVIDED or name.startswith("SLURM_") or name in SHELL_SPECIALS:
            continue  # one value, never options: $RANDOM as the port blinds nothing
        if not script.assigned_sources(name):
            return True
    return False


def _pet(script: Script, name: str) -> bool:
    return any(b.name == name for b in script.bindings)


def _without_nnodes(script: Script, context: LintContext) -> Iterator[Finding]:
    if _pet(script, "PET_NNODES"):
        return
    for srun, name, nodes in _torch_steps(script):
        text = script.expanded_source(script.source(srun.command))
        if _NNODES.search(text) or _STANDALONE.search(text):
            continue
        yield script.finding(
            srun.line,
            ERROR,
            RULE_NNODES.id,
            f"{name} runs on {nodes} nodes without --nnodes: its default is 1 node, so each "
            "node forms a group of its own and trains alone (the world size is one node's "
            "workers)",
            "--nnodes=$SLURM_NNODES with a c10d rendezvous: --rdzv_backend=c10d "
            "--rdzv_endpoint=$MASTER_ADDR:29500 --rdzv_id=$SLURM_JOB_ID",
        )


def _without_node_rank(script: Script, context: LintContext) -> Iterator[Finding]:
    yield from machines_without_rank(script, RULE_NODE_RANK.id, lambda t: _opaque(script, t))
    if _pet(script, "PET_NODE_RANK") or _pet(script, "PET_RDZV_BACKEND"):
        return
    for srun, name, nodes in _torch_steps(script):
        text = script.expanded_source(script.source(srun.command))
        asked = _NNODES.search(text)
        if asked is None or _NODE_RANK.search(text) or _STANDALONE.search(text):
            continue
        low = asked["n"].split(":")[0]
        if to_int(low) is not None and (to_int(low) or 0) < 2:
            continue  # nodes-mismatch's case, or an elastic minimum of 1
        backend = _BACKEND.search(text)
        if backend is not None and backend["backend"].strip("\"'") != "static":
            continue  # c10d/etcd number the nodes as they join; a variable is unknown
        yield script.finding(
            srun.line,
            ERROR,
            RULE_NODE_RANK.id,
            f"{name} --nnodes {asked['n']} with the static rendezvous (its default) but no "
            f"--node_rank: every one of the {nodes} nodes takes rank 0 and the group never "
            "forms (the rendezvous waits, then times out)",
            "--node_rank=$SLURM_NODEID inside single quotes (each node's own), or "
            "--rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:29500, which needs no rank",
        )


_ONE_ELEMENT = re.compile(
    r"^\(\s*\"(?:\$\{?(?P<name>[A-Za-z_]\w*)\}?|\$\((?P<cmd>[^\"]*)\))\"\s*\)$", re.S
)
_HOSTNAMES = re.compile(r"scontrol\s+show\s+hostnames?\b")


def _hostlist_array(script: Script, context: LintContext) -> Iterator[Finding]:
    if script.job.nodes == (1, 1):
        return  # one node: the one element is the one name
    for binding in script.bindings:
        value = binding.value
        if value is None or not value.raw.startswith("("):
            continue
        match = _ONE_ELEMENT.match(value.raw)
        if match is None:
            continue
        if match["cmd"] is not None:
            if not _HOSTNAMES.search(match["cmd"]):
                continue
            shown = f'"$({match["cmd"].strip()})"'
        else:
            sources = script.assigned_sources(match["name"])
            if not sources or not all(_HOSTNAMES.search(s) for s in sources):
                continue
            shown = f'"${match["name"]}"'
        yield script.finding(
            binding.line,
            ERROR,
            RULE_HOSTLIST_ARRAY.id,
            f"{binding.name}=({shown}): the double quotes make the whole node list one "
            f"element, so ${{{binding.name}[0]}} (the head node) is every node's name at once "
            f"and ${{#{binding.name}[@]}} is 1",
            f"{binding.name}=({shown.strip(chr(34))}) (unquoted: one element per name), or "
            f'mapfile -t {binding.name} < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        )


RULE_NNODES = Rule(
    "launcher-without-nnodes",
    ERROR,
    "torchrun on 2+ nodes without --nnodes (default 1: each node trains alone)",
    _without_nnodes,
)
RULE_NODE_RANK = Rule(
    "launcher-without-node-rank",
    ERROR,
    "torchrun --nnodes N>1, static rendezvous, no --node_rank (every node is rank 0)",
    _without_node_rank,
)
RULE_HOSTLIST_ARRAY = Rule(
    "hostlist-one-element",
    ERROR,
    'nodes_array=("$nodes"): the quoted node list is one array element',
    _hostlist_array,
)
RULES = (RULE_NNODES, RULE_NODE_RANK, RULE_HOSTLIST_ARRAY)
