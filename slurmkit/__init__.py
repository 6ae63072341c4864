"""slurmkit: a SLURM operations toolbox.

The library (everything except :mod:`slurmkit.cli`) is importable and usable
without the command line; the CLI is a thin layer over it.
"""

__version__ = "0.1.0"
