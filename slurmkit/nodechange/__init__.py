"""The node-change core: the only code that changes a node's state in Slurm.

``node drain|resume|reboot`` and ``undrain`` are planners on top of it. The path:

- :mod:`.change`: intent (fsynced) -> one batched ``scontrol update`` -> read back ->
  outcome, and :func:`.change.reconcile`, which settles on the next run of any of them
  what a killed run left open;
- :mod:`.auditlog`: the one audit log, JSON lines through :mod:`slurmkit.journal`
  (:mod:`.legacy` still reads the ``key=value`` lines of old ``undrain --log`` files);
- :mod:`.settle`: the judges that weigh the evidence for each verb;
- :mod:`.row`: the one row type; :mod:`.leftovers`: the check both undrain and resume
  run on a node before it returns.

Nothing is imported here, so ``nodes drained`` (which needs only a regex) stays fast.
"""
