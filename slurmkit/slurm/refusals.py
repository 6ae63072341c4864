"""Which failures of a state-changing Slurm call are answers, and which are not.

A refusal is an answer: Slurm (or its client, before sending) decided, and nothing was
done. Anything else that fails a call that changes state is *no answer*: the request may
sit in a hung slurmctld's backlog and be carried out when it wakes. That is not only
"Socket timed out": on 22.05 ``scontrol hold``, ``release`` and ``update JobId=`` against a
stopped slurmctld say "Unexpected message received" (and say it too when nothing listens),
and Slurm held the runs once the controller continued (issue 29).

So refusals are a known list, :data:`REFUSALS`: the texts recorded live from 22.05, 24.11
and 26.05 (``tests/fixtures/refusals/``) and the matching entries of Slurm's error table
(``slurm_errno.c``). A failure matching none of them is read back by the caller
(:mod:`.recheck`), never reported as refused. :data:`NOT_SENT` is the other answer: no
connection could be made, so no request exists to be carried out later.
"""

from __future__ import annotations

import re

# (what kind of refusal, the texts that say it). Matched case-insensitively anywhere in the
# message, so the prefixes ("slurm_suspend error:", "scancel: error: Kill job error on job
# id 7:", "Batch job submission failed:") need not be listed.
REFUSALS: tuple[tuple[str, str], ...] = (
    (
        "permission",
        r"access/permission denied|permission denied|access denied|invalid user id"
        r"|not authorized|only root|user not found",
    ),
    (
        "invalid id",
        r"invalid job id|invalid node name|invalid partition|invalid job array"
        r"|invalid user name|invalid account|invalid qos|invalid wckey"
        r"|job .*does not exist|no such (job|node|partition)|(node|partition|job) \S+ not found"
        r"|requested reservation is invalid|duplicate job id",
    ),
    (
        "state",
        r"job has already finished|job is no longer pending|already completing or completed"
        r"|job is pending execution|job has already started|job is not running"
        r"|job is not pending nor running|job is not suspended|job is current suspended"
        r"|job can not be altered now|invalid node state|requested operation is presently"
        r" disabled|requested operation not supported|job is in held state"
        r"|required node not available|required partition not"
        r" available|requested nodes are busy|job dependency problem|circular job dependency"
        r"|maxjobcount limit reached|licenses currently unavailable",
    ),
    (
        "value",
        r"invalid input|invalid \S+ value|invalid \S+ specification"
        r"|invalid time|time limit is invalid|specification invalid|invalid generic resource"
        r"|invalid feature|invalid license|invalid dependency|must specify a reason"
        r"|request (aborted|denied)|requested node configuration is not available"
        r"|requested partition configuration not available|more processors requested"
        r"|memory required by task is not available|violates accounting/qos policy"
        r"|requested nodes not in this partition|not permitted to use this partition"
        r"|unable to open file|no partition specified",
    ),
)

_REFUSED = re.compile("|".join(f"(?:{texts})" for _, texts in REFUSALS), re.I)

# No connection was made: the request never left this machine.
NOT_SENT = re.compile(
    r"connect failure|connection refused|cannot locate slurmctld|no slurm\.conf"
    r"|could not establish a configuration source",
    re.I,
)

# Slurm's communication errors (slurm_errno.c, "General Message error codes" and the
# slurmctld communication failures): the reason a change got no answer. Listed for the
# fixtures' test; anything not refused counts as no answer whether listed here or not.
SILENCES = re.compile(
    r"socket timed out|unexpected message received|zero bytes were transmitted"
    r"|communication connection failure|message (send|receive) failure"
    r"|unable to contact slurm controller \((send|receive|shutdown) failure\)"
    r"|connection timed out|insane message length|rate limit exceeded",
    re.I,
)


def refusal(text: str) -> str | None:
    """The kind of refusal ``text`` states (``permission``, ``invalid id``, ...), or None."""
    if not _REFUSED.search(text):
        return None
    return next(kind for kind, texts in REFUSALS if re.search(texts, text, re.I))


def not_sent(text: str) -> bool:
    return bool(NOT_SENT.search(text))


# sbatch prints this before the reason whenever the submission RPC itself failed; any other
# sbatch error (a bad option, an empty script, a file it cannot read) stopped it before sending.
_SUBMIT_FAILED = re.compile(r"batch job submission failed", re.I)

REFUSED, NOT_SENT_YET, NO_ANSWER = "refused", "not sent", "no answer"


def meaning(text: str, command: str = "") -> str:
    """``refused``, ``not sent`` or ``no answer``: what a failed state change's text means.

    A silence wins over a refusal in the same text: "Kill job error on job id 5: Socket
    timed out" names a job, it does not refuse it.
    """
    if SILENCES.search(text) and not NOT_SENT.search(text):
        return NO_ANSWER
    if refusal(text) is not None:
        return REFUSED
    if not_sent(text):
        return NOT_SENT_YET
    if command == "sbatch" and not _SUBMIT_FAILED.search(text):
        return NOT_SENT_YET  # sbatch's own checks refused it before the request existed
    return NO_ANSWER
