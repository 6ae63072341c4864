"""The sbatch script model: options as getopt reads them, ``#SBATCH`` lines, the header.

Shared by every feature that reads a job script (``lint``, ``train``, ``faulty``), so
none of them reaches into another for it:

- :mod:`.options`: sbatch and srun option words (``-N2``, ``--nodes 2``, ``--nodes=2``)
  to canonical long names;
- :mod:`.directives`: ``#SBATCH`` lines read the way sbatch reads them (and which ones
  it ignores), and the job they request (:class:`~.directives.JobRequest`);
- :mod:`.header`: a script's header as normalised ``--long=value`` options, to compare
  two scripts and to hand sbatch one word per option.
"""
