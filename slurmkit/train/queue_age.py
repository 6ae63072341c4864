"""Whether a hold costs a train its queue age, from the controller's configuration.

Slurm 22.05 to 26.05 (acct_policy.c): when ``AccountingStorageEnforce`` holds ``limits``,
a hold clears a pending job's AccrueTime (``_hold_job_rec`` ->
``acct_policy_remove_accrue_time``) and the first scheduler pass after the release sets
it again to the eligible time, i.e. the release: the age factor starts again from 0.
``PriorityFlags=ACCRUE_ALWAYS`` skips that removal and keeps AccrueTime at the submit
time. Without ``limits`` a hold leaves AccrueTime alone. Only multifactor priority
counts age at all.
"""

from __future__ import annotations

from collections.abc import Mapping

from slurmkit.errors import SlurmkitError
from slurmkit.slurm import nodeops

KEEPING_FLAG = "PriorityFlags=ACCRUE_ALWAYS"

# What sets ACCOUNTING_ENFORCE_LIMITS (read_config.c _validate_accounting_storage_enforce):
# "limits" or "2", "safe" (limits plus safe) and "all". `scontrol show config` prints the
# parsed bits ("associations,limits,safe"), the raw words are accepted too.
_LIMITS_WORDS = frozenset({"limits", "2", "safe", "all"})


def _words(value: str) -> set[str]:
    return {word.strip().lower() for word in value.split(",") if word.strip()}


def enforces_limits(config: Mapping[str, str]) -> bool:
    return bool(_words(config.get("AccountingStorageEnforce", "")) & _LIMITS_WORDS)


def restarts_age_at_release(config: Mapping[str, str]) -> bool:
    """A hold makes the released runs' age start again (and it matters for priority)."""
    multifactor = "multifactor" in config.get("PriorityType", "").lower()
    accrue_always = "accrue_always" in _words(config.get("PriorityFlags", ""))
    return multifactor and enforces_limits(config) and not accrue_always


def hold_warning(config: Mapping[str, str]) -> str | None:
    """The one line ``train hold`` says when the hold will cost the train its queue age."""
    if not restarts_age_at_release(config):
        return None
    return (
        "this cluster restarts queue age at release (AccountingStorageEnforce has limits, "
        f"PriorityFlags lacks ACCRUE_ALWAYS): released runs queue as if submitted then; "
        f"{KEEPING_FLAG} in slurm.conf keeps the age"
    )


def hold_warning_now() -> str | None:
    """:func:`hold_warning` for the running controller (one ``scontrol show config``); a
    controller that does not answer gives no warning: the hold itself reports that."""
    try:
        return hold_warning(nodeops.show_config())
    except SlurmkitError:
        return None
