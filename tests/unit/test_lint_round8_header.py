"""Round eight of issue 32, the header rules: what the eighth test part showed once spent.

Each test pins a class of finding that was wrong (or missed) on ``spent-holdout8`` or
``spent-holdout7``, and next to it the right finding it resembles, which must stay.
The Slurm facts were checked with the 22.05.8 sbatch client (``--test-only`` with no
controller) and in 25.11's sources; each test names where.
"""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V22 = LintContext(SlurmVersion.parse("22.05"))
V24 = LintContext(SlurmVersion.parse("24.11"))
UNKNOWN = "sbatch-unknown-option"


def _found(
    text: str, path: str = "job.sh", context: LintContext = V22
) -> list[tuple[int, str, str]]:
    return [(f.line, f.rule, f.severity) for f in lint_text(text, path, context)]


def _rule(text: str, rule: str, path: str = "job.sh", context: LintContext = V22) -> list[str]:
    """The severities of ``rule``'s findings, in line order."""
    return [severity for _, name, severity in _found(text, path, context) if name == rule]


def test_ear_plugin_options_are_a_site_s_not_misspellings() -> None:
    """--ear-verbose ends in --verbose, so it read as a misspelling (an error); it is the
    EAR SPANK plugin's (its slurm_plugin_options.c): a cluster without EAR refuses it,
    one with it does not, so it depends on the cluster (info). A real misspelling of
    --verbose stays an error."""
    ear = "#!/bin/bash\n#SBATCH --ear=on\n#SBATCH --ear-verbose=1\n#SBATCH -t 5\nsrun a.out\n"
    assert _rule(ear, UNKNOWN) == ["info", "info"]
    typo = "#!/bin/bash\n#SBATCH --verbosee\n#SBATCH -t 5\nsrun a.out\n"
    assert _rule(typo, UNKNOWN) == ["error"]


def test_a_blank_for_the_reader_is_unknown_not_refused() -> None:
    """``#SBATCH ...`` (documentation's "other options") and ``--account=insert
    your_projectID_here`` are refused as written (22.05.8: "Invalid directive found in
    batch script"), but like ``<account>`` they are blanks the reader fills in before
    submitting: unknown. A stray word that is no blank still is an error."""
    dots = "#!/bin/bash\n#SBATCH --time=10\n#SBATCH ...\nsrun a.out\n"
    assert _rule(dots, UNKNOWN) == []
    yours = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --account=insert your_projectID_here\nsrun x\n"
    assert _rule(yours, UNKNOWN) == []
    stray = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH -J AutoFHR Training\nsrun a.out\n"
    assert _rule(stray, UNKNOWN) == ["error"]


def test_a_string_template_s_counts_are_filled_in_first() -> None:
    """DALiuGE's setonix.slurm is read by Python's string.Template (slurm_client.py), which
    fills ``$NUM_NODES`` before sbatch sees it; its lone ``$MODULES`` line, a variable the
    script never sets, shows it is such a template. A script that runs nothing of the
    kind passes the literal text to sbatch, which refuses it (error, as before)."""
    template = (
        "#!/bin/bash --login\n#SBATCH --nodes=$NUM_NODES\n#SBATCH -t 5\n\n"
        "export DLG_ROOT=$DLG_ROOT\n$MODULES\n$VENV\nsrun dlg\n"
    )
    assert _rule(template, UNKNOWN) == []
    plain = "#!/bin/bash\n#SBATCH --nodes=$NUM_NODES\n#SBATCH -t 5\nsrun a.out\n"
    assert _rule(plain, UNKNOWN) == ["error"]
    command = '#!/bin/bash\n#SBATCH --nodes=$NUM_NODES\n#SBATCH -t 5\nCMD="srun a.out"\n$CMD\n'
    assert _rule(command, UNKNOWN) == ["error"]  # $CMD is set: a command, not a blank


def test_options_sbatch_lost_or_never_had() -> None:
    """--share is the old name of --oversubscribe and --pty an srun option: the 22.05.8
    sbatch says "unrecognized option" to both, so they are errors, not a site plugin's
    option (info). --x11, which old sites gave sbatch through a SPANK plugin, stays info."""
    for line in ("#SBATCH --share", "#SBATCH --pty /bin/zsh", "#SBATCH --multi-prog"):
        text = f"#!/bin/bash\n#SBATCH -t 5\n{line}\nsrun a.out\n"
        assert _rule(text, UNKNOWN) == ["error"], line
    x11 = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --x11\nsrun a.out\n"
    assert _rule(x11, UNKNOWN) == ["info"]


def test_exclusive_topo_is_refused_before_24_05_only() -> None:
    """--exclusive=topo came with 24.05 (its CHANGELOG); 22.05.8 says "Invalid --exclusive
    specification". user, mcs and oversubscribe are accepted everywhere (arg_set_exclusive)."""
    topo = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --exclusive=topo\nsrun a.out\n"
    assert _rule(topo, UNKNOWN, context=V22) == ["error"]
    assert _rule(topo, UNKNOWN, context=V24) == []
    for value in ("user", "MCS", "oversubscribe"):
        text = f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH --exclusive={value}\nsrun a.out\n"
        assert _rule(text, UNKNOWN) == [], value
    bare = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --exclusive\nsrun a.out\n"
    assert _rule(bare, UNKNOWN) == []


def test_a_time_with_a_slip_is_refused_a_blank_is_not() -> None:
    """``--time=1-00:00:0q``: "Invalid --time specification" (22.05.8; _is_valid_timespec
    in parse_time.c). Every form sbatch reads passes, and a value that does not start
    with a digit (TIME, @@time@@, DD-HH:MM:SS) is a template's or a reader's blank."""
    for bad in ("1-00:00:0q", "24h", "2:00:00:00", "01:00:00:"):
        text = f"#!/bin/bash\n#SBATCH --time={bad}\nsrun a.out\n"
        assert _rule(text, UNKNOWN) == ["error"], bad
    short = "#!/bin/bash\n#SBATCH -t 5m\nsrun a.out\n"
    assert _rule(short, UNKNOWN) == ["error"]
    good = ("30", "30:00", "1:00:00", "2-0", "2-12", "2-12:30", "2-12:30:00", "UNLIMITED")
    for value in (*good, "TIME", "@@time@@", "DD-HH:MM:SS", "__FWD_TIME__"):
        text = f"#!/bin/bash\n#SBATCH --time={value}\nsrun a.out\n"
        assert _rule(text, UNKNOWN) == [], value


def test_slurm_is_sbatch_s_second_magic_word() -> None:
    """sbatch reads a header line starting #SLURM like #SBATCH (_opt_batch_script in
    src/sbatch/opt.c; 22.05.8: "Change from #SLURM to #SBATCH", then "Invalid directive
    found in batch script: _ARRAY_TASK_ID=42"). After the first command it reads none,
    and a valid option there is accepted."""
    debug = "#!/bin/bash\n#SBATCH -t 5\n#SLURM_ARRAY_TASK_ID=42\nsrun a.out\n"
    assert (3, UNKNOWN, "error") in _found(debug)
    later = "#!/bin/bash\n#SBATCH -t 5\nmodule load x\n#SLURM_ARRAY_TASK_ID=42\nsrun a.out\n"
    assert _rule(later, UNKNOWN) == []
    valid = "#!/bin/bash\n#SLURM --time=5\nsrun a.out\n"
    assert _rule(valid, UNKNOWN) == []
    spaced = "#!/bin/bash\n# SLURM_ARRAY_TASK_ID=42\n#SBATCH -t 5\nsrun a.out\n"
    assert _rule(spaced, UNKNOWN) == []


def test_a_template_s_placeholder_line_ends_no_header() -> None:
    """Ray's slurm-template.sh (dagster-slurm's copy) has ``${PARTITION_OPTION}`` on a
    header line: whatever renders it puts an #SBATCH line or nothing there, so the
    directives below it are read. In a plain script such a line is a command and ends
    the header: the directives after it are ignored (warning, as before)."""
    body = "${PARTITION_OPTION}\n#SBATCH --job-name=${JOB_NAME}\n#SBATCH --exclusive\n\nsrun x\n"
    template = f"#!/bin/bash\n#SBATCH -t 5\n{body}"
    ignored = "sbatch-directive-ignored"
    assert _rule(template, ignored, path="ray/slurm-template.sh") == []
    assert _rule(template, ignored, path="job.sh") == ["warning", "warning"]
    command = f"#!/bin/bash\n#SBATCH -t 5\nset -x\n{body}"
    assert _rule(command, ignored, path="ray/slurm-template.sh") == ["warning", "warning"]


def test_dos_line_breaks_in_a_template_code_fills_in_depend_on_the_renderer() -> None:
    """C2SM's sbatch_extract_template (``python {extract_script}``) is filled in by
    Python, whose text mode writes plain line breaks: whether sbatch ever sees the \\r\\n
    depends on the renderer (info). A template a person fills in by hand, and any other
    script, keeps them, and sbatch refuses it ("Batch script contains DOS line breaks",
    sbatch.c): error."""
    rendered = "#!/bin/bash\r\n#SBATCH -t 5\r\n\r\npython {extract_script}\r\n"
    assert _rule(rendered, "dos-line-breaks", path="sbatch_extract_template") == ["info"]
    by_hand = "#!/bin/bash\r\n#SBATCH --job-name=\r\n#SBATCH -t 5\r\npwd\r\n"
    assert _rule(by_hand, "dos-line-breaks", path="template.slurm") == ["error"]
    plain = "#!/bin/bash\r\n#SBATCH -t 5\r\n\r\npython {extract_script}\r\n"
    assert _rule(plain, "dos-line-breaks", path="job.sh") == ["error"]
