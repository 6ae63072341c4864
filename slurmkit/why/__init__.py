"""``slurmkit why JOB``: why a job is pending, why it ended, how it used what it asked for.

Every part answers with the one :class:`~slurmkit.why.model.Verdict` shape, so the CLI
prints and serialises it once, and ``watch job`` can quote the same headline.
"""
