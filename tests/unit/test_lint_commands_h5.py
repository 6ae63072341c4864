"""Command and syntax rules fixed from the spent fourth hold-out (issue 32): a heredoc ends
only at its whole delimiter line, as bash reads it."""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text
from slurmkit.lint.shell import parse

V = LintContext(SlurmVersion.parse("24.11.5"))
HEAD = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 1\n"


def rules(text: str) -> set[tuple[int, str]]:
    return {(f.line, f.rule) for f in lint_text(text, "t.slurm", V)}


def test_a_line_that_only_starts_with_the_delimiter_does_not_end_the_heredoc() -> None:
    # a launcher that writes a node's command, itself holding a heredoc (bash -n accepts it)
    text = HEAD + (
        "head_cmd=$(cat <<EOF\n"
        "if cat <<EOFINNER | bash; then\n"
        "ray start --head\n"
        "EOFINNER\n"
        "  echo started\n"
        "fi\n"
        "EOF\n"
        ")\n"
        'srun bash -c "$head_cmd"\n'
    )
    assert "bash-syntax" not in {rule for _, rule in rules(text)}
    (heredoc,) = parse(text).heredocs
    assert heredoc.body.endswith("fi\n") and heredoc.terminated


def test_a_tab_stripped_heredoc_goes_on_past_a_longer_word() -> None:
    text = HEAD + "cat <<-EOF >run.sh\n\tEOF_NOTE\n\tfi\n\tEOF\nsrun bash run.sh\n"
    parsed = parse(text)
    assert [c.name for c in parsed.commands] == ["cat", "srun"]
    assert "bash-syntax" not in {rule for _, rule in rules(text)}


def test_the_whole_delimiter_line_still_ends_it() -> None:
    # the inner heredoc is a real one here: its own delimiter ends it, then the outer goes on
    text = HEAD + "cat <<EOFINNER\nhi\nEOFINNER\ncat <<EOF\nEOF\nif true; then\n"
    found = rules(text)
    assert (9, "bash-syntax") in found
