"""The one layer that talks to Slurm.

``_exec`` runs the commands (argv lists only, never a shell) and turns their
failures into :mod:`slurmkit.errors`; ``parse_text`` (delimited columns) and
``parse_records`` (scontrol's ``key=value``) turn their text output into the
typed records of ``records``; ``query`` offers the calls
commands use. Nothing is imported here so that ``import slurmkit.slurm`` stays
free.
"""
