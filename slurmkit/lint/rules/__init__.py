"""Every lint rule, in the order findings of one line are listed."""

from __future__ import annotations

from slurmkit.lint.findings import Rule
from slurmkit.lint.rules import (
    commands,
    conflicts,
    cpus,
    directives,
    groups,
    header,
    launchers,
    lifecycle,
    paths,
    ranks,
    slips,
    srunopts,
    steps,
    syntax,
    variables,
)

RULES: tuple[Rule, ...] = (
    *syntax.RULES,
    *directives.RULES,
    *header.RULES,
    *conflicts.RULES,
    *paths.RULES,
    *cpus.RULES,
    *launchers.RULES,
    *groups.RULES,
    *ranks.RULES,
    *srunopts.RULES,
    *commands.RULES,
    *lifecycle.RULES,
    *steps.RULES,
    *slips.RULES,
    *variables.RULES,
)
RULE_IDS = frozenset(rule.id for rule in RULES)
