"""``slurmkit pyspy``: every rank's Python stack in a job, grouped, the odd ones marked.

    >>> from slurmkit import pyspy
    >>> job = pyspy.running_job("1234")
    >>> found = pyspy.collect("1234", job, pyspy.Settings(via="srun"))
    >>> [(g.count, g.folded_nodes, g.outlier) for g in found.groups]
    [(63, 'node-[1-63]', False), (1, 'node-64', True)]

Modules: :mod:`.target` (the job must exist, run and be ours),
:mod:`.nodecmd` and :mod:`.node_script` (what runs on each node),
:mod:`.collect` (through :mod:`slurmkit.remote`), :mod:`.decode` (node
results to stacks and problems), :mod:`.stack` (py-spy's text parsed),
:mod:`.grouping` (identical stacks, outliers), :mod:`.traces` and
:mod:`.render` (files and output).
"""

from __future__ import annotations

from slurmkit.pyspy.collect import VIA, Collection, Settings, collect
from slurmkit.pyspy.nodecmd import DumpOptions
from slurmkit.pyspy.target import running_job

__all__ = ["VIA", "Collection", "DumpOptions", "Settings", "collect", "running_job"]
