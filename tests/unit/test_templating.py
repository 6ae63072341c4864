"""The template engine: parameter types, header declarations, value sources, rendering errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slurmkit.errors import EnvironmentProblem, TemplateError, UsageError
from slurmkit.files import write_atomic
from slurmkit.slurm.submit import script_path
from slurmkit.templating import config, discover, find, render_template
from slurmkit.templating.header import parse_header
from slurmkit.templating.param_types import BadValue, Duration, parse_type
from slurmkit.templating.results import parse_check_lines, parse_cpus_lines, parse_cpus_verdict
from slurmkit.templating.values import load_vars_file, parse_assignments, resolve

# ---------------------------------------------------------------- types


@pytest.mark.parametrize(
    ("spec", "raw", "value"),
    [
        ("int", "42", 42),
        ("int", 7, 7),
        ("int>=1", " 3 ", 3),
        ("bool", "yes", True),
        ("bool", "0", False),
        ("bool", False, False),
        ("time", "1-02:03:04", "1-02:03:04"),
        ("time", "30", "30"),
        ("time", "UNLIMITED", "UNLIMITED"),
        ("duration", "90s", Duration(90)),
        ("duration", "30m", Duration(1800)),
        ("duration", "1h30m", Duration(5400)),
        ("choice(USR2|USR1|none)", "USR1", "USR1"),
        ("list", "a, b,,c", ["a", "b", "c"]),
        ("list(python|cmd:*)", ["python", "cmd:true"], ["python", "cmd:true"]),
        ("words", "--lr 1e-4 --name 'my run'", ["--lr", "1e-4", "--name", "my run"]),
        ("words", "", []),
        ("str", "a b $(c)", "a b $(c)"),
    ],
)
def test_types_accept(spec: str, raw: object, value: object) -> None:
    assert parse_type(spec).parse(raw) == value


@pytest.mark.parametrize(
    ("spec", "raw", "message"),
    [
        ("int", "two", "is not an integer"),
        ("int", True, "is not an integer"),
        ("int>=1", "0", "integer >= 1"),
        ("bool", "maybe", "not a boolean"),
        ("time", "1:2:3:4", "Slurm time limit"),
        ("time", "2h", "Slurm time limit"),
        ("duration", "1 fortnight", "duration"),
        ("duration", "0s", "too short"),
        ("duration", "90", "say 90s, 90m, 90h or 90d"),  # issue 15: a bare number is refused
        ("duration", 60, "say 60s, 60m, 60h or 60d"),
        ("duration", "2 hours", "not a duration"),
        ("time", "1:99:00", "0-59"),
        ("choice(a|b)", "c", "one of a, b"),
        ("list(python|cmd:*)", "python,gpu", "'gpu' is not allowed"),
        ("list(python|cmd:*)", "cmd:", "'cmd:' is not allowed"),
        ("words", "it's", "shell words"),
        ("str", "two\nlines", "line break"),
        ("str", ["a"], "not text"),
    ],
)
def test_types_refuse(spec: str, raw: object, message: str) -> None:
    with pytest.raises(BadValue, match=message):
        parse_type(spec).parse(raw)


def test_duration_is_written_in_its_largest_exact_unit() -> None:
    assert [str(Duration(s)) for s in (3600, 86400, 90, 1800, 1209600)] == [
        "1h",
        "1d",
        "90s",
        "30m",
        "2w",
    ]


def test_unknown_type_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown parameter type 'float'"):
        parse_type("float")


# ---------------------------------------------------------------- header

GOOD = """{#- slurmkit-template
summary: A test
gpu: no
note: first note
param nodes: int>=1 = 2 | Number of nodes
param name: str = | Empty default
param tag: str required | No default
param args: words = a 'b c' | Words
-#}
#!/bin/bash
"""
PLAIN = GOOD.replace("param tag: str required | No default\n", "")


def test_header_declares_params_with_checked_defaults() -> None:
    header = parse_header(GOOD, "t.slurm.j2")
    assert header.summary == "A test" and header.gpu is False
    assert header.notes == ("first note",)
    assert list(header.params) == ["nodes", "name", "tag", "args"]
    assert header.params["nodes"].default == 2
    assert header.params["name"].default == ""
    assert header.params["tag"].required and header.params["tag"].default_text() == ""
    assert header.params["args"].default == ["a", "b c"]
    assert header.params["args"].default_text() == "a 'b c'"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("#!/bin/bash\n", "no '{#- slurmkit-template"),
        (GOOD.replace("gpu: no\n", ""), "needs 'summary:' and 'gpu:'"),
        (GOOD.replace("gpu: no", "gpu: maybe"), "'gpu:' must be yes or no"),
        (GOOD.replace("note: first note", "colour: blue"), "cannot read header line"),
        (GOOD.replace("= 2 |", "= two |"), "parameter nodes: bad default"),
        (GOOD.replace("int>=1", "float"), "unknown parameter type"),
        (GOOD.replace("param name:", "param nodes:"), "declared twice"),
        (GOOD.replace("param name:", "param slurmkit:"), "reserved"),
        (GOOD.replace(" | Number of nodes", ""), "cannot read"),
    ],
)
def test_bad_headers_are_template_errors(source: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        parse_header(source, "t.slurm.j2")


# ---------------------------------------------------------------- a private template folder


@pytest.fixture
def tdir(tmp_path: Path) -> list[tuple[str, Path]]:
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "demo.slurm.j2").write_text(
        PLAIN
        + "#SBATCH --nodes={{ nodes }}\n"
        + "#SBATCH --job-name={{ name | shquote }}\n"
        + "{% include '_piece.j2' %}\n"
        + "echo {{ args | shjoin }}\n"
    )
    (folder / "_piece.j2").write_text("# piece for {{ slurmkit.template }}\n")
    (folder / "needs.slurm.j2").write_text(GOOD + "echo {{ tag | shquote }}\n")
    (folder / "undefined.slurm.j2").write_text(PLAIN + "\n\necho {{ nodes }} {{ not_declared }}\n")
    (folder / "syntax.slurm.j2").write_text(PLAIN + "{% if nodes %}\necho\n")
    (folder / "badfilter.slurm.j2").write_text(PLAIN + "echo {{ args | shquote }}\n")
    (folder / "noinclude.slurm.j2").write_text(PLAIN + "{% include '_missing.j2' %}\n")
    (folder / "noshebang.slurm.j2").write_text(PLAIN.replace("#!/bin/bash\n", "echo hi\n"))
    (folder / "README.md").write_text("not a template")
    return [("templates", folder)]


def test_discovery_lists_only_slurm_j2_files(tdir: list[tuple[str, Path]]) -> None:
    names = [t.name for t in discover(tdir)]
    assert names == sorted(names)
    assert "demo" in names and "_piece" not in names and "README" not in names


def test_same_name_in_two_folders_is_refused(tmp_path: Path, tdir) -> None:
    other = tmp_path / "cron"
    other.mkdir()
    (other / "demo.slurm.j2").write_text(GOOD)
    with pytest.raises(TemplateError, match="template demo exists twice"):
        discover([*tdir, ("cron", other)])


def test_unknown_template_names_the_known_ones(tdir) -> None:
    with pytest.raises(UsageError, match=r"unknown template 'demox' \(known: .*demo"):
        find("demox", tdir)


def test_render_uses_defaults_filters_and_includes(tdir) -> None:
    text = render_template("demo", dirs=tdir).text
    assert "#SBATCH --nodes=2\n" in text
    assert "#SBATCH --job-name=''\n" in text
    assert "# piece for demo\n" in text
    assert "echo a 'b c'\n" in text
    assert "slurmkit-template" not in text  # the header renders to nothing
    assert text.startswith("#!/bin/bash\n")


def test_undefined_name_is_an_error_naming_it_and_its_line(tdir) -> None:
    with pytest.raises(TemplateError) as info:
        render_template("undefined", dirs=tdir)
    message = str(info.value)
    assert "'not_declared' is undefined" in message
    assert "undefined.slurm.j2 line 12" in message
    assert "\n" not in message


def test_syntax_error_is_one_line_with_the_line_number(tdir) -> None:
    with pytest.raises(TemplateError, match=r"template syntax: syntax\.slurm\.j2 line \d+: "):
        render_template("syntax", dirs=tdir)


def test_filter_misuse_and_missing_include_are_template_errors(tdir) -> None:
    with pytest.raises(TemplateError, match="shquote got a list: use shjoin"):
        render_template("badfilter", dirs=tdir)
    with pytest.raises(TemplateError, match=r"included file '_missing\.j2' not found"):
        render_template("noinclude", dirs=tdir)
    with pytest.raises(TemplateError, match="does not start with a #! line"):
        render_template("noshebang", dirs=tdir)


def test_template_error_is_a_usage_error() -> None:
    assert issubclass(TemplateError, UsageError)
    assert TemplateError("x").exit_code == 2


# ---------------------------------------------------------------- values


def test_missing_required_parameter(tdir) -> None:
    with pytest.raises(UsageError, match=r"missing required parameter tag \(--set tag=\.\.\.\)"):
        render_template("needs", dirs=tdir)
    assert "echo hello\n" in render_template("needs", dirs=tdir, overrides={"tag": "hello"}).text


def test_unknown_parameter_suggests_the_close_one(tdir) -> None:
    with pytest.raises(UsageError, match=r"no parameter 'node' \(--set\); did you mean nodes\?"):
        render_template("demo", dirs=tdir, overrides={"node": "3"})
    with pytest.raises(UsageError, match=r"no parameter 'zzz' \(v.toml\) \(parameters: nodes"):
        render_template("demo", dirs=tdir, from_file={"zzz": 1}, from_file_name="v.toml")


def test_type_error_names_parameter_type_and_source(tdir) -> None:
    with pytest.raises(UsageError) as info:
        render_template("demo", dirs=tdir, overrides={"nodes": "two"})
    assert str(info.value) == (
        "template demo: parameter nodes (--set): 'two' is not an integer >= 1"
    )


def test_precedence_default_site_template_table_file_set(tdir) -> None:
    template = find("demo", tdir)
    site = config.SiteConfig(
        path=Path("site.toml"),
        defaults={"nodes": 3, "name": "site", "args": "x", "partition": "gpu"},
        per_template={"demo": {"name": "site-demo"}},
    )
    resolved = resolve(template, site=site)
    assert resolved.values == {"nodes": 3, "name": "site-demo", "args": ["x"]}
    assert resolved.unused_site_defaults == ["partition"]
    assert resolved.sources["name"].endswith("[template.demo]")
    resolved = resolve(template, site=site, from_file={"nodes": 5, "name": "file"})
    assert (resolved.values["nodes"], resolved.values["name"]) == (5, "file")
    resolved = resolve(
        template, site=site, from_file={"nodes": 5}, overrides={"nodes": "6", "args": ""}
    )
    assert (resolved.values["nodes"], resolved.values["args"]) == (6, [])
    assert resolved.sources["nodes"] == "--set"


def test_bad_site_value_names_the_config_file(tdir) -> None:
    site = config.SiteConfig(path=Path("/etc/site.toml"), defaults={"nodes": "many"})
    with pytest.raises(UsageError, match=r"parameter nodes \(config file /etc/site.toml\)"):
        resolve(find("demo", tdir), site=site)


def test_parse_assignments() -> None:
    assert parse_assignments(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        parse_assignments(["nodes"])
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        parse_assignments(["=3"])


def test_vars_file(tmp_path: Path) -> None:
    path = tmp_path / "vars.toml"
    path.write_text('nodes = 4\nscript = "a b.py"\n')
    assert load_vars_file(path) == {"nodes": 4, "script": "a b.py"}
    path.write_text("[defaults]\nnodes = 4\n")
    with pytest.raises(UsageError, match="found table"):
        load_vars_file(path)
    path.write_text("nodes = \n")
    with pytest.raises(UsageError, match="is not valid TOML"):
        load_vars_file(path)
    with pytest.raises(UsageError, match="does not exist"):
        load_vars_file(tmp_path / "nope.toml")


# ---------------------------------------------------------------- site config


def test_config_from_env_var(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[defaults]\npartition = "cpu"\n[template.torchrun]\nnodes = 8\n')
    site = config.load(environ={"SLURMKIT_CONFIG": str(path)})
    assert site.path == path
    assert site.values_for("torchrun") == {"partition": "cpu", "nodes": 8}
    assert site.values_for("other") == {"partition": "cpu"}


def test_named_config_must_exist_default_may_not(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"config file .*nope\.toml does not exist"):
        config.load(environ={"SLURMKIT_CONFIG": str(tmp_path / "nope.toml")})
    site = config.load(environ={"XDG_CONFIG_HOME": str(tmp_path)})
    assert site == config.SiteConfig()


def test_default_config_path_follows_xdg(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    (tmp_path / "slurmkit").mkdir()
    (tmp_path / "slurmkit" / "config.toml").write_text('[defaults]\naccount = "a1"\n')
    assert config.load().defaults == {"account": "a1"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("defaults = 3\n", r"\[defaults\] must be a table"),
        ("[template]\ntorchrun = 1\n", r"\[template.NAME\] entries must be tables"),
        ("[defaults\n", "is not valid TOML"),
    ],
)
def test_bad_config_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        config.load(path)


# ---------------------------------------------------------------- output files


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "job.slurm"
    target.write_text("old\n")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["job.slurm"]
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()


def test_write_atomic_failure_keeps_the_old_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "job.slurm"
    target.write_text("old\n")

    def broken_replace(src: str, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(EnvironmentProblem, match="disk full"):
        write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["job.slurm"]


def test_write_atomic_refuses_missing_folder_and_directories(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        write_atomic(tmp_path / "no" / "job.slurm", "x")
    with pytest.raises(UsageError, match="is a directory"):
        write_atomic(tmp_path, "x")


def test_script_names_sort_by_time_and_do_not_collide(tmp_path: Path) -> None:
    from datetime import datetime

    when = datetime(2024, 1, 2, 3, 4, 5)
    names = {script_path(tmp_path, "torchrun", when).name for _ in range(50)}
    assert len(names) > 40
    assert all(n.startswith("torchrun-20240102-030405-") and n.endswith(".slurm") for n in names)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------- result lines


def test_parse_check_lines() -> None:
    text = (
        "noise\n"
        "[node-1:0] SLURMKIT_CHECK node=node-1 check=cmd:test%20-f%20/x%25 status=fail "
        "detail=exit 1: no such file\n"
        "SLURMKIT_CHECK node=node-2 check=cuda status=skipped detail=no NVIDIA driver\n"
        "SLURMKIT_CHECK node=node-2 check=cuda status=maybe detail=x\n"
    )
    results = parse_check_lines(text)
    assert [(r.node, r.check, r.status) for r in results] == [
        ("node-1", "cmd:test -f /x%", "fail"),
        ("node-2", "cuda", "skipped"),
    ]
    assert results[0].detail == "exit 1: no such file"


def test_parse_cpus_lines_and_verdict() -> None:
    text = (
        "SLURMKIT_CPUS mode=srun-exact node=n1 task=0 affinity=2 step_cpus=2 step_tasks=2 "
        "per_task=1 requested=2\n"
        "SLURMKIT_CPUS_VERDICT slurm=22.05.8 requested=2 srun=1 inherits=no affected=yes\n"
    )
    (line,) = parse_cpus_lines(text)
    assert line["mode"] == "srun-exact" and line["per_task"] == "1"
    verdict = parse_cpus_verdict(text)
    assert verdict is not None and verdict["affected"] == "yes"
    assert parse_cpus_verdict("nothing") is None
