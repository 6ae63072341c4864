"""Every shipped template: renders with its defaults, parses as bash, follows the script rules.

Golden files: ``tests/unit/golden/<name>.slurm`` hold the default rendering of a few
templates. To re-record one after an intended change, delete it and run the tests: the
missing file is written and its test is skipped with a notice; review the diff.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from slurmkit.templating import discover, render_template
from slurmkit.templating.header import Param
from slurmkit.templating.param_types import (
    BoolType,
    ChoiceType,
    Duration,
    DurationType,
    IntType,
    ListType,
    StrType,
    TimeType,
    WordsType,
)
from slurmkit.templating.results import parse_check_lines

TEMPLATES = discover()
NAMES = [t.name for t in TEMPLATES]
GOLDEN = Path(__file__).parent / "golden"
GOLDEN_NAMES = ["torchrun", "faulty-node-check", "cron-scheduler", "train-wrapper"]
LAUNCHERS = ["torchrun", "accelerate", "deepspeed"]
LINT_DISABLE = "# slurmkit-lint: disable=srun-cpus-per-task"
HOSTILE = "x y'\"$(touch PWNED1);`touch PWNED2`; echo \\ ${HOME} %s & exit 3"


def render(name: str, **overrides: object) -> str:
    return render_template(name, overrides=overrides).text


def bash_syntax_ok(text: str) -> None:
    result = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def logical_lines(text: str) -> list[str]:
    """Lines with backslash-newline continuations joined."""
    return text.replace("\\\n", " ").splitlines()


def task_body(text: str, var: str = "task") -> str:
    match = re.search(rf"{var}=\$\(cat <<'SLURMKIT_TASK'\n(.*?)\nSLURMKIT_TASK\n\)", text, re.S)
    assert match, f"no {var} heredoc"
    return match.group(1)


def test_all_required_templates_ship() -> None:
    assert set(NAMES) >= {
        "torchrun",
        "accelerate",
        "deepspeed",
        "train-wrapper",
        "cron-scheduler",
        "self-perpetuating",
        "faulty-node-check",
        "nccl-barrier-test",
        "gpu-memory-test",
        "cpus-per-task-test",
        "dcgmi-diag",
    }
    assert {t.name for t in TEMPLATES if t.kind == "cron"} == {"cron-scheduler"}


# ---------------------------------------------------------------- every template


@pytest.mark.parametrize("name", NAMES)
def test_renders_with_defaults_and_parses_as_bash(name: str) -> None:
    text = render(name)
    assert text.startswith("#!/bin/bash\n")
    bash_syntax_ok(text)


@pytest.mark.parametrize("name", NAMES)
def test_script_rules(name: str) -> None:
    text = render(name)
    lines = logical_lines(text)
    first_command = next(i for i, ln in enumerate(lines[1:], 1) if ln and not ln.startswith("#"))
    header = [ln for ln in lines[:first_command] if ln.startswith("#SBATCH")]
    assert not [ln for ln in lines[first_command:] if ln.startswith("#SBATCH")], (
        "#SBATCH after the first command is ignored by sbatch"
    )
    options = [shlex.split(ln[len("#SBATCH ") :])[0] for ln in header]
    assert any(o.startswith("--time=") for o in options)
    (output,) = [o for o in options if o.startswith("--output=")]
    assert "%j" in output or "%A" in output
    assert not any(o.startswith(("--partition", "--account")) for o in options)
    assert "set -eo pipefail" in lines[first_command:]
    assert not re.search(r"(^|[;&|]\s*)(clear|tput|reset)\b", text, re.M)
    assert "| tee" not in text or "pipefail" in text


@pytest.mark.parametrize("name", NAMES)
def test_every_srun_passes_cpus_per_task(name: str) -> None:
    lines = logical_lines(render(name))
    for i, line in enumerate(lines):
        if not re.search(r"(^|[\s$(])srun\s", line) or line.lstrip().startswith("#"):
            continue
        if i > 0 and lines[i - 1].strip() == LINT_DISABLE:
            continue
        assert "--cpus-per-task=" in line, line


@pytest.mark.parametrize("name", LAUNCHERS)
def test_launchers_run_one_task_per_node_from_slurm_values(name: str) -> None:
    text = render(name)
    assert "#SBATCH --ntasks-per-node=1\n" in text
    assert 'srun --export=ALL --nodes="$SLURM_NNODES" --ntasks-per-node=1' in text
    assert "NNODES=" not in text.replace("SLURM_NNODES", "")
    body = task_body(text)
    assert '"$SLURM_PROCID"' in body and "$SLURM_NNODES" in body
    assert "#SBATCH --signal=USR2@300\n" in text and "B:" not in text
    assert "trap '' USR2" in body
    assert "trap ''" not in render(name, signal="none")
    assert "--signal" not in render(name, signal="none")


@pytest.mark.parametrize("name", LAUNCHERS)
def test_launcher_log_prefixer_passes_each_line_through_as_it_comes(name: str) -> None:
    """The launcher's output goes through the task's prefixer, which keeps every byte.

    A last line without a newline, backslashes, % and leading blanks arrive as printed.
    That it passes lines on at once, not in blocks as mawk did, is proven live in
    tests/integration/test_templates.py (the 24.11 and 26.05 roots have mawk).
    """
    body = task_body(render(name))
    assert "| awk" not in body and body.rstrip().endswith("2>&1 | prefix_lines")
    prefix_line = re.search(r"^prefix=.*$", body, re.M)
    function = re.search(r"^prefix_lines\(\) \{\n.*?^\}$", body, re.M | re.S)
    assert prefix_line and function
    script = (
        f"{prefix_line[0]}\n{function[0]}\n" + 'printf "%s\\n%s" "  a\\b %s" last | prefix_lines'
    )
    env = {"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": "node-7", "SLURM_PROCID": "3"}
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[node-7:3]   a\\b %s\n[node-7:3] last\n"


@pytest.mark.parametrize("name", NAMES)
def test_partition_and_account_lines_only_when_given(name: str) -> None:
    text = render(name, partition="gpu q", account="proj")
    assert "#SBATCH --partition='gpu q'\n" in text
    assert "#SBATCH --account=proj\n" in text


def _other_value(param: Param) -> object:
    """A valid value different from the default, to prove the template uses the parameter."""
    ptype, default = param.type, param.default
    if isinstance(ptype, BoolType):
        return not default
    if isinstance(ptype, IntType):
        return int(default) + 1  # type: ignore[call-overload]
    if isinstance(ptype, ChoiceType):
        return next(c for c in ptype.choices if c != default)
    if isinstance(ptype, ListType):
        plain = [a for a in ptype.allowed if not a.endswith("*")] or ["sentinel-item"]
        return [next(a for a in plain if [a] != default)]
    if isinstance(ptype, WordsType):
        return ["--sentinel-word"]
    if isinstance(ptype, TimeType):
        return "0:07:00"
    if isinstance(ptype, DurationType):
        return Duration(default.seconds * 2)  # type: ignore[union-attr]
    assert isinstance(ptype, StrType)
    return "sentinel-value"


@pytest.mark.parametrize("name", NAMES)
def test_every_declared_parameter_changes_the_output(name: str) -> None:
    template = next(t for t in TEMPLATES if t.name == name)
    base = render(name)
    for param in template.header.params.values():
        changed = render(name, **{param.name: _other_value(param)})
        assert changed != base, f"{name}: parameter {param.name} is declared but unused"
        bash_syntax_ok(changed)


def _sources(name: str) -> str:
    """The template's own source plus every piece it includes."""
    template = next(t for t in TEMPLATES if t.name == name)
    text = template.source
    for include in re.findall(r"{%\s*include\s+\"([^\"]+)\"", text):
        text += (Path(template.path.parent.parent / "templates" / include)).read_text()
    return text


@pytest.mark.parametrize("name", NAMES)
def test_free_text_parameters_are_always_quoted(name: str) -> None:
    template = next(t for t in TEMPLATES if t.name == name)
    text_params = {
        p.name
        for p in template.header.params.values()
        if isinstance(p.type, (StrType, WordsType, ListType))
    }
    for match in re.finditer(r"{{\s*(\w+)\s*((?:\|[^}]*)?)}}", _sources(name)):
        var, filters = match.group(1), match.group(2)
        if var in text_params:
            assert "shquote" in filters or "shjoin" in filters, (
                f"{name}: {match.group(0)} reaches the shell unquoted"
            )


# ---------------------------------------------------------------- golden files


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden(name: str) -> None:
    """Delete tests/unit/golden/<name>.slurm to re-record it from the current template."""
    path = GOLDEN / f"{name}.slurm"
    text = render(name)
    if not path.exists():
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        pytest.skip(f"recorded {path}: review it, then it is the reference")
    assert text == path.read_text(), f"{name} renders differently from {path}"


# ---------------------------------------------------------------- hostile values


def _run_line(line: str, var: str, cwd: Path) -> str:
    """Run one rendered assignment in bash and print the variable's value."""
    script = f'{line}\nprintf "%s" "${var}"'
    out = subprocess.run(
        ["bash", "-c", script], cwd=cwd, capture_output=True, text=True, check=True
    )
    return out.stdout


def _assert_no_injection(cwd: Path) -> None:
    assert not list(cwd.glob("PWNED*")), "a value was executed as shell code"


def test_hostile_job_name_partition_and_extras_stay_one_sbatch_word() -> None:
    text = render(
        "torchrun", job_name=HOSTILE, partition=HOSTILE, sbatch_extra=[f"--comment={HOSTILE}"]
    )
    words = [
        shlex.split(ln[len("#SBATCH ") :]) for ln in text.splitlines() if ln.startswith("#SBATCH ")
    ]
    assert all(len(w) == 1 for w in words), "every #SBATCH line must stay one option"
    options = dict(w[0].split("=", 1) for w in words if "=" in w[0])
    assert options["--job-name"] == HOSTILE
    assert options["--partition"] == HOSTILE
    assert options["--comment"] == HOSTILE
    bash_syntax_ok(text)


@pytest.mark.parametrize(
    ("name", "param", "var"),
    [
        ("cron-scheduler", "folder", "folder"),
        ("cron-scheduler", "chain_name", "chain_name"),
        ("train-wrapper", "target", "target"),
        ("train-wrapper", "kill_switch", "kill_switch"),
        ("faulty-node-check", "disk_path", "disk_path"),
    ],
)
def test_hostile_paths_reach_bash_as_one_value(
    name: str, param: str, var: str, tmp_path: Path
) -> None:
    text = render(name, **{param: HOSTILE})
    bash_syntax_ok(text)
    (line,) = [ln for ln in text.splitlines() if ln.startswith(f"{var}=")]
    assert _run_line(line, var, tmp_path) == HOSTILE
    _assert_no_injection(tmp_path)


@pytest.mark.parametrize("name", LAUNCHERS)
def test_hostile_script_and_args_reach_the_launcher_verbatim(name: str, tmp_path: Path) -> None:
    extra = {"config_file": HOSTILE} if name == "accelerate" else {}
    text = render(
        name,
        script=HOSTILE,
        script_args=[HOSTILE, "--lr", "1e-4"],
        launcher=["printf", "%s\\n"],
        **extra,
    )
    bash_syntax_ok(text)
    env = {
        "PATH": "/usr/bin:/bin",
        "SLURMD_NODENAME": "node-7",
        "SLURM_PROCID": "1",
        "SLURM_NNODES": "2",
        "MASTER_ADDR": "node-1",
        "MASTER_PORT": "20001",
        "GPUS_PER_NODE": "4",
        "SLURMKIT_HOSTS": "node-1 node-7",
    }
    out = subprocess.run(
        ["bash", "-c", task_body(text)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    args = [ln.removeprefix("[node-7:1] ") for ln in out.stdout.splitlines()]
    assert all(ln.startswith("[node-7:1] ") for ln in out.stdout.splitlines())
    assert args[-4:] == [HOSTILE, HOSTILE, "--lr", "1e-4"]
    assert "--node_rank=1" in args or "--machine_rank=1" in args
    if name == "accelerate":
        assert args[args.index("--config_file") + 1] == HOSTILE
    _assert_no_injection(tmp_path)


def test_self_perpetuating_command_runs_as_written(tmp_path: Path) -> None:
    command = "echo \"it's\" 'a;b' $((1+1)) > out.txt"
    text = render("self-perpetuating", command=command)
    (line,) = [ln for ln in text.splitlines() if ln.startswith("bash -c ")]
    subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True)
    assert (tmp_path / "out.txt").read_text() == "it's a;b 2\n"


def test_setup_is_evaluated_once_as_written(tmp_path: Path) -> None:
    text = render("torchrun", setup="export A='x y'; B=$((2*3))")
    (line,) = [ln for ln in text.splitlines() if ln.startswith("eval ")]
    out = subprocess.run(
        ["bash", "-c", f'{line}\necho "$A|$B"'], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.stdout == "x y|6\n"


# ---------------------------------------------------------------- node checks, run locally


@pytest.fixture
def fakebin(tmp_path: Path) -> Path:
    """A PATH folder with the coreutils the checks need and nothing GPU-related."""
    folder = tmp_path / "bin"
    folder.mkdir()
    return folder


def _write_tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)


def run_checks(
    tmp_path: Path, fakebin: Path, checks: list[str], pythonpath: str = "", **overrides: object
) -> tuple[int, list]:
    values = {"python": [sys.executable], "gpus_per_node": 2, "disk_path": str(tmp_path)}
    values.update(overrides)
    text = render("faulty-node-check", **values)
    env = {
        "PATH": f"{fakebin}:/usr/bin:/bin",
        "SLURMD_NODENAME": "node-9",
        "SLURM_JOB_ID": "77",
        "TMPDIR": str(tmp_path),
        "PYTHONPATH": pythonpath,
    }
    out = subprocess.run(
        ["bash", "-c", task_body(text), "slurmkit-checks", *checks],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    results = parse_check_lines(out.stdout)
    assert len(results) == len(checks), out.stdout + out.stderr
    assert all(r.node == "node-9" for r in results)
    return out.returncode, results


GPU_CHECKS = ["cuda", "gpu-count", "gpu-mem", "nccl"]


def test_gpu_checks_skip_without_a_driver(tmp_path: Path, fakebin: Path) -> None:
    # 1 GiB, not the template's 10: the disk check runs on this machine's /tmp, whose free
    # space is not the test's to choose (a shared CI disk had 3 GiB free)
    checks = ["python", *GPU_CHECKS, "disk", "dcgmi"]
    rc, results = run_checks(tmp_path, fakebin, checks, disk_min_gb=1)
    status = {r.check: r.status for r in results}
    assert status == {
        "python": "pass",
        "cuda": "skipped",
        "gpu-count": "skipped",
        "gpu-mem": "skipped",
        "nccl": "skipped",
        "disk": "pass",
        "dcgmi": "skipped",
    }
    assert all("nvidia-smi not found" in r.detail for r in results if r.check in GPU_CHECKS)
    assert rc == 0


def test_driver_without_torch_skips_torch_checks_and_counts_gpus(
    tmp_path: Path, fakebin: Path
) -> None:
    _write_tool(
        fakebin, "nvidia-smi", 'printf "GPU 0: Fake (UUID: a)\\nGPU 1: Fake (UUID: b)\\n"\n'
    )
    rc, results = run_checks(tmp_path, fakebin, GPU_CHECKS)
    status = {r.check: (r.status, r.detail) for r in results}
    assert status["gpu-count"] == ("pass", "2 GPUs visible")
    for check in ("cuda", "gpu-mem", "nccl"):
        assert status[check][0] == "skipped" and "torch is not importable" in status[check][1]
    assert rc == 0
    rc, results = run_checks(tmp_path, fakebin, ["gpu-count"], gpus_per_node=4)
    assert (results[0].status, results[0].detail) == ("fail", "2 GPUs visible, 4 expected")
    assert rc == 1


def test_torch_without_cuda_fails_cuda_and_never_passes_gpu_checks(
    tmp_path: Path, fakebin: Path
) -> None:
    _write_tool(fakebin, "nvidia-smi", 'printf "GPU 0: Fake (UUID: a)\\n"\n')
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "class cuda:\n    @staticmethod\n    def is_available():\n        return False\n"
    )
    rc, results = run_checks(tmp_path, fakebin, GPU_CHECKS, pythonpath=str(fake.parent))
    status = {r.check: r for r in results}
    assert status["cuda"].status == "fail"
    assert "is_available() is False" in status["cuda"].detail
    assert status["gpu-mem"].status == "skipped" and status["nccl"].status == "skipped"
    assert not [r for r in results if r.status == "pass" and r.check != "gpu-count"]
    assert rc == 1


def test_cmd_disk_and_dcgmi_checks_report_failures(tmp_path: Path, fakebin: Path) -> None:
    _write_tool(fakebin, "dcgmi", 'echo "| Memory    | Fail |"; echo "| GPU 3 bad |"; exit 226\n')
    checks = ["cmd:test -e /nonexistent", "cmd:echo fine", "disk", "dcgmi", "python"]
    rc, results = run_checks(tmp_path, fakebin, checks, disk_min_gb=10**7)
    status = {r.check: r for r in results}
    assert status["cmd:test -e /nonexistent"].status == "fail"
    assert status["cmd:test -e /nonexistent"].detail == "exit 1"
    assert status["cmd:echo fine"].status == "pass"
    assert status["disk"].status == "fail" and "10000000 GiB needed" in status["disk"].detail
    assert status["dcgmi"].status == "fail" and "Memory Fail" in status["dcgmi"].detail
    assert status["python"].status == "pass"
    assert rc == 1


def test_missing_python_fails_the_python_check(tmp_path: Path, fakebin: Path) -> None:
    rc, results = run_checks(tmp_path, fakebin, ["python", "cuda"], python=["no-such-python3"])
    assert (results[0].status, results[0].detail) == ("fail", "no-such-python3 not found on PATH")
    assert results[1].status == "skipped"
    assert rc == 1


def test_check_timeout_counts_as_failure(tmp_path: Path, fakebin: Path) -> None:
    rc, results = run_checks(tmp_path, fakebin, ["cmd:sleep 30"], check_timeout=1)
    assert (results[0].status, results[0].detail) == ("fail", "timed out after 1s")
    assert rc == 1


def test_gpu_memory_and_nccl_tests_skip_without_gpu(tmp_path: Path, fakebin: Path) -> None:
    for name, check in (("gpu-memory-test", "gpu-mem"), ("nccl-barrier-test", "nccl")):
        text = render(name, python=[sys.executable])
        env = {"PATH": f"{fakebin}:/usr/bin:/bin", "SLURMD_NODENAME": "node-9", "SLURM_JOB_ID": "1"}
        out = subprocess.run(
            ["bash", "-c", task_body(text)], env=env, capture_output=True, text=True, timeout=60
        )
        (result,) = parse_check_lines(out.stdout)
        assert (result.check, result.status) == (check, "skipped"), out.stdout
        assert out.returncode == 0


def test_dcgmi_report_goes_to_a_fresh_temp_file_removed_after(
    tmp_path: Path, fakebin: Path
) -> None:
    """Issue 14 #4: the report's name was predictable (``$TMPDIR/slurmkit-dcgmi-r1-<job>.txt``).

    A user's symlink there made root overwrite the link's target; a directory (or any file
    root could not write) there failed the check, so ``--drain`` drained a healthy node.
    """
    _write_tool(fakebin, "dcgmi", 'echo "| Deployment | Pass |"\n')
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    planted = tmp_path / "slurmkit-dcgmi-r1-77.txt"
    planted.symlink_to(victim)
    rc, (result,) = run_checks(tmp_path, fakebin, ["dcgmi"])
    assert victim.read_text() == "precious\n"
    assert (result.status, rc) == ("pass", 0), result.detail
    planted.unlink()
    planted.mkdir()
    rc, (result,) = run_checks(tmp_path, fakebin, ["dcgmi"])
    assert (result.status, rc) == ("pass", 0), result.detail
    left = {p.name for p in tmp_path.iterdir()} - {"bin", "victim", planted.name}
    assert not left, left  # the temp report is removed
    _write_tool(fakebin, "dcgmi", 'echo "| Memory | Fail |"; echo "| GPU 0 bad |"; exit 226\n')
    rc, (result,) = run_checks(tmp_path, fakebin, ["dcgmi"])
    assert result.status == "fail" and "Memory Fail" in result.detail
    assert "see " not in result.detail  # nothing to see: the report is gone
    assert {p.name for p in tmp_path.iterdir()} - {"bin", "victim", planted.name} == set()
