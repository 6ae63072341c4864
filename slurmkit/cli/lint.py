"""``slurmkit lint``: static, version-aware checks of sbatch scripts over :mod:`slurmkit.lint`.

The Slurm version comes from ``--slurm-version`` or ``sinfo --version``. When neither
answers (no Slurm here), the script is linted for every version from 22.05 on and a
warning says so: the fixes that satisfy all versions (an explicit ``srun
--cpus-per-task``) are right on each of them.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from slurmkit import stderr
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import json_option
from slurmkit.errors import EXIT_FINDINGS, EXIT_OK, SlurmError, UsageError

if TYPE_CHECKING:
    from slurmkit.lint import Finding, LintContext


@click.command("lint")
@click.argument("scripts", nargs=-1, metavar="SCRIPT...")
@json_option()
@click.option(
    "--slurm-version",
    metavar="X",
    help="Lint for this Slurm version (e.g. 22.05, 24.11.5) instead of the installed one.",
)
@click.option(
    "--list-rules",
    is_flag=True,
    help="List the rules (id, severity, precision on the corpus's development part) and exit.",
)
@click.option("--explain", "explain", metavar="RULE", help="Why RULE exists, an example, the fix.")
@click.option(
    "--info", "show_info", is_flag=True, help="Also show info findings (style, site policy)."
)
@click.option(
    "--no-shellcheck",
    is_flag=True,
    help="Do not run ShellCheck (it runs when installed; its codes are shellcheck/SCnnnn).",
)
@click.option(
    "--submit-dir",
    metavar="DIR",
    help="The directory sbatch will be run from: log directories are looked up there.",
)
def lint_command(
    scripts: tuple[str, ...],
    as_json: bool,
    slurm_version: str | None,
    list_rules: bool,
    explain: str | None,
    show_info: bool,
    no_shellcheck: bool,
    submit_dir: str | None,
) -> None:
    """Check sbatch scripts for the mistakes that silently cost a training (SCRIPT - is stdin).

    Each finding names the file, line, severity, rule and the fix. Silence a rule where
    a script breaks it on purpose with `# slurmkit-lint: disable=RULE` on the line or
    the line above.

    Errors fail or misbehave on every cluster; warnings depend on the cluster or on
    intent; info is style (and rules right less than 90% of the time on published
    scripts), shown with --info. Log directories are judged from the script's own
    directory (a directory its git checkout ships) or from --submit-dir, never from
    where lint runs.

    Exit 0 no errors (warnings alone are fine), 1 errors found, 2 a script is missing or
    not text.
    """
    if list_rules:
        _print_rules(as_json)
        return
    if explain is not None:
        _explain(explain)
        return
    if not scripts:
        raise UsageError("lint: give at least one SCRIPT (or - for stdin), or --list-rules")
    directory = _submit_dir(submit_dir)
    texts = _read_all(scripts)
    context = dataclasses.replace(
        _context(slurm_version), submit_dir=directory, shellcheck=not no_shellcheck
    )
    findings = _lint(texts, context)
    hidden = sum(f.severity == "info" for f in findings)
    if not show_info:
        findings = [f for f in findings if f.severity != "info"]
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    if as_json:
        from slurmkit.cli._output import print_json

        print_json(
            {
                "slurm_version": str(context.version) if context.version else None,
                "version_source": context.version_source,
                "scripts": [name for name, _ in texts],
                "errors": errors,
                "warnings": warnings,
                "info": hidden,
                "findings": [f.to_json() for f in findings],
            }
        )
    else:
        # One write for all findings: one echo per line was a third of the time of a
        # 40,000-line script with a finding on every line.
        lines = [
            f"{f.file}:{f.line}: {f.severity}: {f.message} [{f.rule}]\n    fix: {f.fix}\n"
            for f in findings
        ]
        if lines:
            click.echo("".join(lines), nl=False)
        infos = f", {hidden} info{' (--info shows them)' if hidden and not show_info else ''}"
        stderr.say(
            f"{_count(errors, 'error')}, {_count(warnings, 'warning')}"
            f"{infos if hidden else ''} in "
            f"{_count(len(texts), 'script')} (Slurm {_version_label(context)})"
        )
    exit_with(EXIT_FINDINGS if errors else EXIT_OK)


def _submit_dir(submit_dir: str | None) -> str | None:
    """--submit-dir as an absolute path, or a usage error when it is no directory."""
    if submit_dir is None:
        return None
    if not os.path.isdir(submit_dir):
        raise UsageError(f"--submit-dir {submit_dir!r}: no such directory")
    return os.path.abspath(submit_dir)


def _read_all(scripts: tuple[str, ...]) -> list[tuple[str, str]]:
    """Every script's text, or one usage error naming every file that cannot be linted."""
    from slurmkit.lint import read_script, read_stdin

    texts: list[tuple[str, str]] = []
    problems: list[str] = []
    for name in scripts:
        try:
            if name == "-":
                texts.append(("-", read_stdin(sys.stdin.buffer)))
            else:
                texts.append((name, read_script(Path(name))))
        except UsageError as exc:
            problems.append(str(exc))
    if problems:
        raise UsageError("; ".join(problems))
    return texts


def _context(slurm_version: str | None) -> LintContext:
    from slurmkit.lint import LintContext
    from slurmkit.slurm.records import SlurmVersion

    if slurm_version is not None:
        try:
            return LintContext(SlurmVersion.parse(slurm_version), "option")
        except SlurmError:
            raise UsageError(
                f"--slurm-version {slurm_version!r}: expected a version such as 22.05 or 24.11.5"
            ) from None
    from slurmkit.slurm import query

    try:
        return LintContext(query.version(), "sinfo")
    except SlurmError as exc:
        stderr.say(
            f"warning: cannot read the Slurm version ({exc}); linting for every "
            "version from 22.05 on (pass --slurm-version to choose one)"
        )
        return LintContext(None, "unknown")


def _lint(texts: list[tuple[str, str]], context: LintContext) -> list[Finding]:
    """Each script in its own context (:func:`slurmkit.lint.context_for`), stdin in none."""
    from slurmkit.lint import context_for, lint_text

    return [
        f
        for name, text in texts
        for f in lint_text(text, name, context if name == "-" else context_for(Path(name), context))
    ]


def _print_rules(as_json: bool) -> None:
    """Each rule with two precisions: on the scripts it was tuned on, and on unseen ones.

    The tuned figure (the development part) ends near 100% for every rule fixed on it; the
    unseen one (each test part as first scored) is what a user's script can expect. Both
    are committed data (benchmarks/score_lint_corpus.py --write-precision,
    benchmarks/unseen_precision.py), never the corpus itself: an installed slurmkit has no
    corpus, and the test part must stay unread.
    """
    from slurmkit.cli._output import print_json, print_table
    from slurmkit.lint import RULES
    from slurmkit.lint.precision import PRECISION
    from slurmkit.lint.precision_unseen import UNSEEN

    rows: list[dict[str, Any]] = []  # id and severity are text, the counts ints
    for r in RULES:
        right, judged = PRECISION.get(r.id, (0, 0))
        unseen_right, unseen_judged = UNSEEN.get(r.id, (0, 0))
        rows.append(
            {
                "id": r.id,
                "severity": r.severity,
                "right": right,
                "judged": judged,
                "unseen_right": unseen_right,
                "unseen_judged": unseen_judged,
                "summary": r.summary,
            }
        )
    if as_json:
        print_json(rows)
    else:
        print_table(
            [
                (
                    r["id"],
                    r["severity"],
                    _share(r["right"], r["judged"]),
                    _share(r["unseen_right"], r["unseen_judged"]),
                    r["summary"],
                )
                for r in rows
            ],
            ["RULE", "SEVERITY", "TUNED ON", "UNSEEN", "WHAT"],
        )


def _share(right: int, judged: int) -> str:
    return f"{100 * right // judged}% ({right}/{judged})" if judged else "unmeasured"


def _explain(rule_id: str) -> None:
    from slurmkit.lint import RULES
    from slurmkit.lint.explain import EXPLAIN
    from slurmkit.lint.precision import PRECISION
    from slurmkit.lint.precision_unseen import UNSEEN

    if rule_id not in EXPLAIN:
        raise UsageError(f"--explain {rule_id!r}: no such rule (see `slurmkit lint --list-rules`)")
    why, example, fix = EXPLAIN[rule_id]
    severity = {r.id: r.severity for r in RULES}.get(rule_id, "warning")
    right, judged = PRECISION.get(rule_id, (0, 0))
    measured = f"{right} of {judged} findings right" if judged else "unmeasured"
    unseen_right, unseen_judged = UNSEEN.get(rule_id, (0, 0))
    unseen = f"{unseen_right} of {unseen_judged} right" if unseen_judged else "no finding yet"
    example_lines = "".join(f"    {line}\n" for line in example.splitlines())
    click.echo(
        f"{rule_id} ({severity}; on published scripts: {measured}; "
        f"on scripts it had never seen: {unseen})\n\n"
        f"why: {why}\n\nexample:\n{example_lines}\nfix: {fix}"
    )


def _version_label(context: LintContext) -> str:
    if context.version is None:
        return "version unknown: every version from 22.05 on"
    return f"{context.version}, from {context.version_source}"


def _count(number: int, word: str) -> str:
    return f"{number} {word}{'' if number == 1 else 's'}"
