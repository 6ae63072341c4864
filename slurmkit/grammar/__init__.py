"""Slurm's small value grammars, each parsed and formatted in exactly one place.

- :mod:`.timelimit`: time limits as ``sbatch --time`` takes them and ``scontrol`` prints them;
- :mod:`.duration`: human durations (``30s 30m 7d 1h30m``) for slurmkit's own options;
- :mod:`.gres`: GRES and TRES strings (``gpu:a100:8(S:0-1)``, ``gres/gpu:h100=4``), GPU counts;
- :mod:`.idrange`: id and array ranges (``1-10:2%4``, ``123_[1-5]``).

Every feature that reads one of these values calls these modules, so two
commands can never disagree about what the same text means. Node names are
not here: they are :mod:`slurmkit.hostlist`'s.
"""
