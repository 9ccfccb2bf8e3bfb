"""The Slurm path as a real cluster exercised it: what a job asks for, sbatch's refusal in its
own words, completions counted as they come, resumptions logged and recorded, ``palviz plan``
from any folder, options of another executor, the sbatch script of a plan. Slurm itself is
stood in for by small shell scripts on ``PATH`` (``sbatch``, ``srun``) that answer like the real
commands (CPU, no network)."""

import json
import logging
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import test_runcache_cluster
from cluster_support import require_engine

from palviz import cli
from palviz import experiments as ex
from palviz import train as ptrain
from palviz.cli import figures as cli_figures
from palviz.cli import sweep as cli_sweep
from palviz.experiments import cluster

ROOT = Path(__file__).resolve().parents[1]

runs = test_runcache_cluster.runs  # the fixture: an empty run cache of the test's own

#: What sbatch prints (exiting 1) when no node has the resources asked for.
SBATCH_REFUSAL = (
    "sbatch: error: Batch job submission failed: Requested node configuration is not available"
)


def fake_command(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """A folder of stand-in Slurm commands first on PATH. ``sbatch`` fails like the real one
    when nodes lack the resources, after keeping the job script it was given and its
    arguments in the folder this returns."""
    bin_dir = tmp_path / "bin"
    calls = tmp_path / "calls"
    bin_dir.mkdir()
    calls.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    fake_command(bin_dir, "srun", "exit 0")
    fake_command(
        bin_dir,
        "sbatch",
        f'printf "%s\\n" "$@" > {calls}/sbatch.args\n'
        f'for last in "$@"; do :; done; [ -f "$last" ] && cp "$last" {calls}/job.sh\n'
        f"echo {shlex.quote(SBATCH_REFUSAL)} >&2\nexit 1",
    )
    return calls


def sweep(*options: str) -> int:
    return cli.main(["sweep", "--profile", "smoke", "--only", "02", *options])


# ----------------------------------------------------------------- resources, refusals


def test_sbatchs_refusal_is_one_line_in_its_own_words(slurm, runs, tmp_path, capsys):
    require_engine("submitit")
    log_dir = tmp_path / "submitit"
    assert sweep("--executor", "slurm", "--log-dir", str(log_dir)) == 2
    captured = capsys.readouterr()
    assert "Slurm jobs on partition (Slurm's default): 1 CPU(s) and no GPU(s) each" in captured.out
    said = [line for line in captured.err.splitlines() if line.startswith("palviz sweep")]
    assert said == [f"palviz sweep: {SBATCH_REFUSAL}"] and "Traceback" not in captured.err
    assert captured.err.count(SBATCH_REFUSAL) == 1  # said once, not also by submitit
    # what was asked for: by default a CPU-only job of 1 CPU, appending to its log
    job = (slurm / "job.sh").read_text()
    assert "#SBATCH --cpus-per-task=1" in job and "gpus" not in job
    assert "#SBATCH --array=0-1" in job
    srun = next(line for line in job.splitlines() if line.startswith("srun "))
    assert "--open-mode=append" in srun


def test_a_gpu_job_asks_for_its_gpus_and_four_cpus(slurm, runs, tmp_path, capsys):
    require_engine("submitit")
    options = ["--gpus-per-job", "1", "--slurm-partition", "gpu"]
    assert sweep("--executor", "slurm", *options, "--log-dir", str(tmp_path / "s")) == 2
    assert "partition gpu: 4 CPU(s) and 1 GPU(s) each" in capsys.readouterr().out
    job = (slurm / "job.sh").read_text()
    assert "#SBATCH --gpus-per-node=1" in job and "#SBATCH --cpus-per-task=4" in job
    assert "#SBATCH --partition=gpu" in job


@pytest.mark.parametrize("options", [["--gpus-per-job", "-1"], ["--cpus-per-job", "0"]])
def test_resources_out_of_range_are_refused_before_anything(options, slurm, runs, capsys):
    assert sweep("--executor", "slurm", *options) == 2
    err = capsys.readouterr().err.strip()
    least = 0 if options[0] == "--gpus-per-job" else 1
    assert err == (
        f"palviz sweep: {options[0]} must be an integer >= {least}, got {options[1]}; "
        "nothing was trained"
    )
    assert not (slurm / "sbatch.args").exists() and not runs.exists()


@pytest.mark.parametrize(
    "executor, options, named",
    [
        ("local", ["--slurm-partition", "gpu"], "--slurm-partition"),
        ("local", ["--gpus-per-job", "0"], "--gpus-per-job"),
        ("local", ["--slurm-qos", "high"], "--slurm-qos"),
        ("local", ["--cpus-per-job", "2", "--log-dir", "x"], "--cpus-per-job, --log-dir"),
        ("slurm", ["--workers", "2"], "--workers"),
    ],
)
def test_options_of_another_executor_are_refused(executor, options, named, runs, capsys):
    assert sweep("--executor", executor, *options) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--executor {executor} does not use" in err
    for flag in named.split(", "):
        assert flag in err
    assert not runs.exists()  # refused before planning or training


def test_submitits_folder_defaults_to_the_run_cache(runs):
    require_engine("submitit")
    executor = cluster.make_executor("submitit-local", timeout_min=5)
    assert Path(executor.folder) == runs / ".submitit"


# ----------------------------------------------------------------- progress


class FakeJob:
    """A submitit job that is done from poll round ``ready`` on."""

    def __init__(self, name: str, ready: int, clock: list[int]) -> None:
        self.name, self.ready, self.clock = name, ready, clock

    def done(self) -> bool:
        return self.clock[0] >= self.ready

    def result(self) -> str:
        assert self.done(), f"result() of {self.name} before it finished"
        return f"result of {self.name}"


def test_results_come_as_jobs_finish_not_in_submission_order(tmp_path, monkeypatch):
    clock = [0]
    ready = {"a": 3, "b": 1, "c": 2, "d": 1}  # a was requeued and finishes last
    jobs = {name: FakeJob(name, at, clock) for name, at in ready.items()}
    monkeypatch.setattr(cluster.time, "sleep", lambda _: clock.__setitem__(0, clock[0] + 1))
    seen = []
    for key, result in cluster._as_finished(jobs, tmp_path / "submitit.log"):
        seen.append((clock[0], key))
        assert result == f"result of {key}"
    assert seen == sorted((at, name) for name, at in ready.items())  # by time, then submission


class JobWithoutAccounting(FakeJob):
    """A job whose every poll prints what submitit and sacct print without Slurm accounting:
    sacct's error from a command it starts, and submitit's warning through its log handlers."""

    def done(self) -> bool:
        subprocess.run(["sh", "-c", "echo 'Slurm accounting storage is disabled' >&2"])
        call = self.clock[0] + 1
        logging.getLogger("submitit").warning(
            f"Call #{call} - Bypassing sacct error 1, status may be inaccurate."
        )
        return super().done()

    def result(self) -> str:
        return f"result of {self.name}"  # no poll: a finished job's result is on disk


def test_sacct_errors_stay_out_of_the_progress_bar_but_for_one_line(tmp_path, capfd, monkeypatch):
    log_file = tmp_path / "submitit.log"
    logger = logging.getLogger("submitit")
    # like submitit's two handlers, on the terminal's stdout and stderr
    streams = [open(fd, "w", closefd=False) for fd in (1, 2)]
    monkeypatch.setattr(logger, "handlers", [logging.StreamHandler(f) for f in streams])
    clock = [0]
    monkeypatch.setattr(cluster.time, "sleep", lambda _: clock.__setitem__(0, clock[0] + 1))
    try:  # three polls, each with sacct failing as without accounting
        done = list(cluster._as_finished({"a": JobWithoutAccounting("a", 2, clock)}, log_file))
    finally:
        for stream in streams:
            stream.close()
    assert done == [("a", "result of a")]
    out, err = capfd.readouterr()
    assert "Bypassing" not in out + err and "accounting storage" not in out + err
    assert err.count("cannot read job states with sacct") == 1 and str(log_file) in err
    text = log_file.read_text()
    assert text.count("Bypassing sacct error") == 6  # once from each handler
    assert text.count("Slurm accounting storage is disabled") == 3


# ----------------------------------------------------------------- resuming


class Preempted(Exception):
    """Stands in for a job killed after a checkpoint."""


def test_a_resumed_run_says_so_and_records_its_attempts(runs, tmp_path, monkeypatch, capfd):
    spec = ex.lt_spec("CE", profile="smoke", epochs=3)
    save = ptrain.save_torch
    stops = iter([0, 1])  # killed after the first and the second epoch
    stop = {"at": next(stops)}

    def killed_after(path, state):
        save(path, state)
        if stop["at"] is not None and state["epoch"] == stop["at"]:
            raise Preempted(state["epoch"])

    monkeypatch.setattr(ptrain, "save_torch", killed_after)
    with pytest.raises(Preempted):
        ex.run(spec)
    stop["at"] = next(stops)
    with pytest.raises(Preempted):
        ex.run(spec)
    stop["at"] = None
    capfd.readouterr()
    result = ex.run(spec)
    assert f"resuming {spec.key()} (CE) from epoch 2 of 3 (attempt 3)" in capfd.readouterr().err
    assert result.metrics["attempts"] == {"count": 3, "resumed_from": [1, 2]}
    assert len(result.metrics["history"]) == 3
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "uninterrupted"))
    again = ex.run(spec)
    assert again.metrics["attempts"] == {"count": 1, "resumed_from": []}
    assert untimed(result.metrics) == untimed(again.metrics)  # resumed bit for bit


def untimed(metrics: dict) -> dict:
    """Metrics without the wall-clock fields and the attempts."""
    out = {k: v for k, v in metrics.items() if k not in ("seconds", "attempts")}
    out["history"] = [{k: v for k, v in row.items() if k != "seconds"} for row in out["history"]]
    return out


# ----------------------------------------------------------------- plan, sbatch


def test_plan_lists_the_same_keys_from_any_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PALVIZ_ROOT", raising=False)
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    monkeypatch.chdir(ROOT)
    at_root = [
        r["key"] for r in cli_sweep.planned_runs(cli_figures.notebooks(["07", "08"]), "smoke")
    ]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    plan = elsewhere / "plan.jsonl"
    assert cli.main(["plan", "--profile", "smoke", "--only", "7", "08", "--jsonl", str(plan)]) == 0
    assert [json.loads(line)["key"] for line in plan.read_text().splitlines()] == at_root
    assert cli.main(["plan", "--profile", "smoke", "--only", "01"]) == 0  # trains nothing
    assert "0 run(s)" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"no notebook numbered \['99'\]; have 00 01"):
        cli.main(["plan", "--only", "99"])


def test_the_sbatch_script_of_a_plan_sizes_its_array(slurm, runs, tmp_path):
    calls = slurm
    plan, script = tmp_path / "plan.jsonl", tmp_path / "submit.sh"
    args = ["plan", "--profile", "smoke", "--only", "02", "--missing", "--jsonl", str(plan)]
    assert cli.main([*args, "--sbatch", str(script)]) == 0
    lines = [line for line in plan.read_text().splitlines() if line.strip()]
    done = subprocess.run(["sh", str(script), "--cpus-per-task=1"], capture_output=True, text=True)
    assert "Requested node configuration" in done.stderr  # the stand-in sbatch's answer
    given = (calls / "sbatch.args").read_text().splitlines()
    assert f"--array=0-{len(lines) - 1}" in given and len(lines) == 2
    assert "--open-mode=append" in given and "--cpus-per-task=1" in given
    wrap = next(a for a in given if a.startswith("--wrap="))[len("--wrap=") :]
    # the task's shell: this interpreter trains line $SLURM_ARRAY_TASK_ID of the plan
    task = [sys.executable, "-m", "palviz", "train", str(plan), "--index", "$SLURM_ARRAY_TASK_ID"]
    assert shlex.split(wrap) == task


def test_the_sbatch_script_of_an_empty_plan_submits_nothing(slurm, runs, tmp_path, capsys):
    calls = slurm
    plan, script = tmp_path / "plan.jsonl", tmp_path / "submit.sh"
    args = ["plan", "--only", "01", "--jsonl", str(plan), "--sbatch", str(script)]
    assert cli.main(args) == 0
    assert "nothing to do" in capsys.readouterr().out
    done = subprocess.run(["sh", str(script), "--gres=gpu:1"], capture_output=True, text=True)
    assert done.returncode == 0 and "nothing to do" in done.stdout
    assert not (calls / "sbatch.args").exists()
    assert cli.main(["plan", "--only", "01", "--sbatch", str(script)]) == 2  # needs --jsonl
