"""Issue 28 items 1-3: no Python slurmkit starts imports from a folder someone else can write.

Every test plants ``json.py``, ``datetime.py`` and ``torch.py`` (each leaves a marker
file when imported) in every folder the code under test could import from: the job's
working directory (a team's folder), ``$TMPDIR`` (where the nccl check wrote its
script: ``/tmp`` on a real node) and the train folder. It then runs the rendered shell
for real, with bash and real interpreters, and fails if any marker appears.

The nodes here have no GPU and no torch. Where a check needs torch to go on, the
``python`` it runs is a stand-in (:func:`_torch_stand_in`) that answers the
"is torch usable" probes and does what ``torch.distributed.run`` does with its workers
(runs the script with the real interpreter); everything else it hands to the real
interpreter with the flags the template gave. No fake torch package is needed: the
planted files are the attack, and no marker is the pass.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from slurmkit.templating import render_template
from slurmkit.templating.results import parse_check_lines

MODULES = ("json", "datetime", "torch")
IS_ROOT = os.geteuid() == 0
OLD_PYTHONS = [  # no -P before 3.11: these get -I
    p
    for p in (
        "/root/.pyenv/versions/3.10.13/bin/python3.10",
        "/root/.pyenv/versions/3.6.15/bin/python3.6",
    )
    if os.access(p, os.X_OK)
]


# ----------------------------------------------------------------- the planted folders


class Planted:
    """The folders holding a user's modules, and the markers their import leaves."""

    def __init__(self, root: Path) -> None:
        self.marks = root / "marks"
        self.marks.mkdir()
        self.marks.chmod(0o777)
        self.folders: dict[str, Path] = {}

    def plant(self, label: str, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        for name in MODULES:
            mark = self.marks / f"{label}-{name}"
            (folder / f"{name}.py").write_text(f"open({str(mark)!r}, 'w').close()\n")
        self.folders[label] = folder
        return folder

    def ran(self) -> list[str]:
        """The planted modules that were imported: empty is the pass."""
        return sorted(p.name for p in self.marks.iterdir())


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    """A shared working folder (0777, a team's) and a /tmp stand-in (root's sticky 1777)."""
    found = Planted(tmp_path)
    found.plant("cwd", tmp_path / "work").chmod(0o777)
    found.plant("tmpdir", tmp_path / "tmp").chmod(0o1777)
    return found


def _tool(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)
    return path


def _env(planted: Planted, fakebin: Path, **more: str) -> dict[str, str]:
    return {
        "PATH": f"{fakebin}:/usr/bin:/bin",
        "HOME": str(planted.folders["cwd"]),
        "TMPDIR": str(planted.folders["tmpdir"]),
        "SLURMD_NODENAME": "node-9",
        "SLURM_JOB_ID": "77",
        **more,
    }


def _task(text: str, var: str = "task") -> str:
    match = re.search(rf"{var}=\$\(cat <<'SLURMKIT_TASK'\n(.*?)\nSLURMKIT_TASK\n\)", text, re.S)
    assert match, f"no {var} heredoc"
    return match.group(1)


def _nvidia_smi(fakebin: Path) -> None:
    """A driver that lists one GPU: the checks go on to ask Python about torch."""
    _tool(fakebin, "nvidia-smi", 'printf "GPU 0: Fake (UUID: GPU-0)\\n"\n')


def _torch_stand_in(folder: Path, record: Path) -> Path:
    """A ``python`` whose torch "works": the probes for torch say yes, and ``-m
    torch.distributed.run ... SCRIPT`` starts SCRIPT as the launcher starts a worker
    (``sys.executable -u SCRIPT``, the environment inherited), after noting the
    script's folder, its mode and PYTHONSAFEPATH in ``record``. Anything else goes to
    the real interpreter unchanged, flags included."""
    body = f"""real={sys.executable}
args=("$@")
for ((i = 0; i < ${{#args[@]}}; i++)); do
  if [[ ${{args[i]}} == -m && ${{args[i+1]:-}} == torch.distributed.run ]]; then
    script=${{args[-1]}}
    printf '%s %s %s\\n' "${{script%/*}}" "$(stat -c %a "${{script%/*}}")" \\
      "${{PYTHONSAFEPATH:-unset}}" >> {record}
    exec "$real" -u "$script"
  fi
  if [[ ${{args[i]}} == -c && ${{args[i+1]:-}} == *torch* ]]; then
    [[ ${{args[i+1]}} == *device_count* ]] && echo 1
    exit 0
  fi
done
exec "$real" "$@"
"""
    return _tool(folder, "python", body)


# ----------------------------------------------------------------- faulty-node-check


def _run_checks(
    planted: Planted, fakebin: Path, checks: list[str], python: list[str]
) -> tuple[subprocess.CompletedProcess[str], dict[str, tuple[str, str]]]:
    text = render_template(
        "faulty-node-check",
        overrides={"python": python, "gpus_per_node": 1, "disk_path": str(planted.marks)},
    ).text
    out = subprocess.run(
        ["bash", "-c", _task(text), "slurmkit-checks", *checks],
        env=_env(planted, fakebin),
        cwd=planted.folders["cwd"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    results = {r.check: (r.status, r.detail) for r in parse_check_lines(out.stdout)}
    assert set(results) == set(checks), out.stdout + out.stderr
    return out, results


@pytest.mark.parametrize("python", [sys.executable, *OLD_PYTHONS])
def test_the_checks_import_nothing_from_the_working_folder(
    tmp_path: Path, planted: Planted, python: str
) -> None:
    """``python -c 'import torch'`` in the job's folder ran the planted torch.py as root.

    The real interpreters: 3.11+ gets -P, older ones -I; each still runs and imports
    stdlib modules, and torch is simply missing."""
    fakebin = tmp_path / "bin"
    _nvidia_smi(fakebin)
    out, results = _run_checks(planted, fakebin, ["python", "cuda", "gpu-mem", "nccl"], [python])
    assert planted.ran() == [], out.stderr
    assert results["python"][0] == "pass" and results["python"][1].startswith("python 3.")
    for check in ("cuda", "gpu-mem", "nccl"):
        assert results[check] == ("skipped", f"torch is not importable by {python}"), results


def test_the_nccl_workers_and_the_torch_checks_import_nothing_from_tmp_or_the_job_folder(
    tmp_path: Path, planted: Planted
) -> None:
    """The nccl check's script sat straight in $TMPDIR (/tmp): its workers imported
    /tmp/datetime.py as root. Now it sits in a private mktemp -d folder (0700), removed
    after, and the workers get PYTHONSAFEPATH=1; the cuda and gpu-mem heredocs (python -)
    get -P, so the job folder's torch.py is not imported either."""
    fakebin = tmp_path / "bin"
    _nvidia_smi(fakebin)
    record = tmp_path / "launched"
    stand_in = _torch_stand_in(tmp_path / "py", record)
    out, results = _run_checks(planted, fakebin, ["cuda", "gpu-mem", "nccl"], [str(stand_in)])
    assert planted.ran() == [], out.stderr
    for check in ("cuda", "gpu-mem", "nccl"):  # they ran as far as the real `import torch`
        status, detail = results[check]
        assert status == "fail" and "No module named 'torch'" in detail, results
    (line,) = record.read_text().splitlines()
    folder, mode, safe_path = line.split()
    assert Path(folder).parent == planted.folders["tmpdir"] and mode == "700"
    assert safe_path == "1"
    assert not Path(folder).exists()  # removed after the check


def test_the_nccl_barrier_test_workers_import_nothing_from_tmp(
    tmp_path: Path, planted: Planted
) -> None:
    fakebin = tmp_path / "bin"
    _nvidia_smi(fakebin)
    record = tmp_path / "launched"
    stand_in = _torch_stand_in(tmp_path / "py", record)
    text = render_template("nccl-barrier-test", overrides={"python": [str(stand_in)]}).text
    env = _env(
        planted, fakebin, SLURM_NNODES="1", SLURM_PROCID="0", GPUS_PER_NODE="1",
        MASTER_ADDR="127.0.0.1", MASTER_PORT="29999",
    )  # fmt: skip
    out = subprocess.run(
        ["bash", "-c", _task(text)],
        env=env,
        cwd=planted.folders["cwd"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert planted.ran() == [], out.stdout + out.stderr
    (result,) = parse_check_lines(out.stdout)
    assert result.status == "fail" and "No module named 'torch'" in result.detail
    folder, mode, safe_path = record.read_text().split()
    assert (Path(folder).parent, mode, safe_path) == (planted.folders["tmpdir"], "700", "1")
    assert not Path(folder).exists()


def test_a_python_others_can_change_is_refused_and_never_run(
    tmp_path: Path, planted: Planted
) -> None:
    """The checks' python follows the exec rule too: found in a folder anyone can write,
    it is named in every check that needs it and never started."""
    fakebin = tmp_path / "bin"
    _nvidia_smi(fakebin)
    shared = tmp_path / "shared"
    evil = _tool(shared, "python3", f"touch {planted.marks}/evil-python\n")
    shared.chmod(0o777)
    _, results = _run_checks(planted, fakebin, ["python", "cuda", "nccl"], [str(evil)])
    assert planted.ran() == []
    why = f"slurmkit-refused: python {evil}: {shared} is writable by group or others"
    assert results["python"][0] == "fail" and results["python"][1].startswith(why)
    assert results["cuda"][0] == "skipped" and results["cuda"][1].startswith(why)
    assert results["nccl"][0] == "skipped" and results["nccl"][1].startswith(why)


# ----------------------------------------------------------------- net-check


def test_the_net_check_driver_and_probe_import_nothing_from_the_job_folder(
    tmp_path: Path, planted: Planted
) -> None:
    """nccl-multi's probe ran ``python -c CODE probe`` (``import torch``) in the job's folder.

    The batch step runs for real; srun runs its command here, once; scontrol lists
    two nodes. Without torch both are skipped, with the interpreter named."""
    fakebin = tmp_path / "bin"
    _tool(fakebin, "scontrol", 'printf "node-1\\nnode-2\\n"\n')
    _tool(fakebin, "srun", 'while [[ $1 == --* ]]; do shift; done\nexec "$@"\n')
    text = render_template(
        "net-check", overrides={"checks": ["nccl-multi"], "python": [sys.executable]}
    ).text
    env = _env(planted, fakebin, SLURM_JOB_NODELIST="node-[1-2]", SLURM_NNODES="2",
               SLURM_CPUS_PER_TASK="1", SLURMD_NODENAME="node-1")  # fmt: skip
    out = subprocess.run(
        ["bash", "-c", text],
        env=env,
        cwd=planted.folders["cwd"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert planted.ran() == [], out.stdout + out.stderr
    skip = "SLURMKIT_NET kind=skip check=nccl-multi node=node-1 why=torch is not importable"
    assert skip in out.stdout, out.stdout + out.stderr
    assert "SLURMKIT_NET kind=done check=nccl-multi pairs=0" in out.stdout


# ----------------------------------------------------------------- the train wrapper


def _wrapper(tmp_path: Path, exclude_list: Path) -> Path:
    text = render_template(
        "train-wrapper",
        overrides={"exclude_list": str(exclude_list), "target": str(tmp_path / "no-script")},
    ).text
    path = tmp_path / "wrapper.slurm"
    path.write_text(text)
    return path


def _exclude_list(folder: Path) -> Path:
    path = folder / "excluded.json"
    entry = {"node": "node-7", "check": "xid", "expires": "2999-01-01T00:00:00+00:00"}
    path.write_text(json.dumps({"entries": [entry]}))
    return path


def _run_wrapper(
    wrapper: Path, planted: Planted, fakebin: Path, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = _env(planted, fakebin, SLURM_ARRAY_JOB_ID="5")
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        ["bash", str(wrapper)],
        env=env,
        cwd=planted.folders["train"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_wrappers_exclude_step_imports_nothing_from_the_train_folder(
    tmp_path: Path, planted: Planted
) -> None:
    """Issue 28 item 2: ``python3 - <<PY ... import json`` ran in the train's working
    folder, which a team shares: a teammate's json.py ran as the train's owner."""
    train = planted.plant("train", tmp_path / "trains" / "tr")
    train.chmod(0o777)
    fakebin = tmp_path / "bin"
    _tool(fakebin, "scontrol", f'echo "$*" >> {tmp_path}/scontrol\n')
    out = _run_wrapper(_wrapper(tmp_path, _exclude_list(train)), planted, fakebin)
    assert planted.ran() == [], out.stderr
    assert "slurmkit: the pending runs keep out node-7" in out.stdout, out.stderr
    assert (tmp_path / "scontrol").read_text() == "update JobId=5 ExcNodeList=node-7\n"


def test_the_wrapper_refuses_a_python3_others_can_change_and_goes_on(
    tmp_path: Path, planted: Planted
) -> None:
    train = planted.plant("train", tmp_path / "trains" / "tr")
    fakebin = tmp_path / "bin"
    _tool(fakebin, "scontrol", f'echo "$*" >> {tmp_path}/scontrol\n')
    shared = tmp_path / "shared"
    _tool(shared, "python3", f"touch {planted.marks}/evil-python3\n")
    shared.chmod(0o777)
    wrapper = _wrapper(tmp_path, _exclude_list(train))
    out = _run_wrapper(wrapper, planted, fakebin, f"{shared}:{fakebin}:/usr/bin:/bin")
    assert planted.ran() == []
    assert f"slurmkit-refused: python {shared}/python3: {shared} is writable" in out.stderr
    assert "cannot read the exclude list" in out.stderr
    assert not (tmp_path / "scontrol").exists()
    assert "training script" in out.stderr  # it went on to its next step


# ----------------------------------------------------------------- one rule, one place


def test_the_rule_lives_in_one_shell_file_every_user_runs() -> None:
    """The templates, the wrapper, the undrain gate and pyspy carry the same functions."""
    from slurmkit import safeexec
    from slurmkit.pyspy.nodecmd import DumpOptions, node_command
    from slurmkit.slurm.records import Job
    from slurmkit.undrain import healthgate

    library = safeexec.shell_library()
    assert "sk_resolve()" in library and "sk_check_path()" in library
    for name in ("faulty-node-check", "net-check", "nccl-barrier-test", "gpu-memory-test"):
        assert library in render_template(name).text, name
    wrapper = render_template("train-wrapper", overrides={"exclude_list": "/x.json"}).text
    assert library in wrapper
    assert library in healthgate.health_argv("/dev/null")[2]
    job = Job(job_id="1", user="root", nodelist="node-1")
    assert library in node_command(job, "environ", 30, DumpOptions(), 0)


# ----------------------------------------------------------------- slurmkit's own helpers


def test_the_watch_probe_imports_nothing_from_where_the_watchdog_started(
    planted: Planted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``watch``'s statvfs child was ``python -c 'import json, ...'`` in the caller's folder."""
    from slurmkit.watch.probe import probe

    monkeypatch.chdir(planted.folders["cwd"])
    answer = probe("statvfs", str(planted.marks))
    assert planted.ran() == []
    assert answer.error is None and answer.values["blocks"] > 0
