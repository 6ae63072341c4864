"""Inside the job: the allocation, hostfiles, launcher variables, time left and time limits.

Small modules, each importable without the CLI:

- :mod:`.slurmvars` reads Slurm's compact formats (``2(x3),1``, GPU id lists,
  ``a100:4``, GRES strings);
- :mod:`.allocation` finds the nodes meant (the surrounding job, ``--jobid``,
  ``--nodelist``), in Slurm's order;
- :mod:`.slots` decides processes per node, in a documented order, and says
  which source answered;
- :mod:`.hostfile` renders DeepSpeed/Open MPI/MPICH/plain/JSON hostfiles and
  writes them atomically;
- :mod:`.launch` computes MASTER_ADDR, NNODES, NODE_RANK... for ``eval``;
- :mod:`.timelimit` reports time left and raises time limits.

Only :mod:`slurmkit.hostlist` parses node lists; only the Slurm layer runs
Slurm commands.
"""
