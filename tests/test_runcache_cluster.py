"""The run cache shared by concurrent workers: locks, broken entries, killed runs, executors,
GPU placement and the error of a script without a main guard (CPU, no network)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from cluster_support import require_engine

from palviz import cli
from palviz import experiments as ex
from palviz.experiments import cluster, locks, workers
from palviz.experiments.cachedir import check_runs
from palviz.experiments.runspec import RunSpec

ROOT = Path(__file__).resolve().parents[1]


def small_spec(method="CE", pal=False, **train):
    """A smoke long-tailed run of a few seconds."""
    return ex.lt_spec(method, pal=pal, profile="smoke", **train)


def comparable(metrics):
    """Metrics without the wall-clock fields and the attempts (how the run got there)."""
    out = {k: v for k, v in metrics.items() if k not in ("seconds", "attempts")}
    out["history"] = [{k: v for k, v in row.items() if k != "seconds"} for row in out["history"]]
    return out


def same_result(a: Path, b: Path) -> None:
    ma, mb = (json.loads((p / "metrics.json").read_text()) for p in (a, b))
    assert comparable(ma) == comparable(mb)
    with np.load(a / "features.npz") as fa, np.load(b / "features.npz") as fb:
        for name in fa.files:
            np.testing.assert_array_equal(fa[name], fb[name])


def subprocess_env(runs: Path) -> dict:
    env = dict(os.environ)
    env["PALVIZ_RUNS"] = str(runs)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture
def runs(tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    monkeypatch.setenv("PALVIZ_RUNS", str(folder))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    return folder


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Two smoke runs trained in this process, in a cache of their own."""
    folder = tmp_path_factory.mktemp("reference")
    old = os.environ.get("PALVIZ_RUNS")
    os.environ["PALVIZ_RUNS"] = str(folder)
    try:
        specs = [small_spec("CE"), small_spec("CE", pal=True)]
        results = [ex.run(s) for s in specs]
    finally:
        if old is None:
            del os.environ["PALVIZ_RUNS"]
        else:
            os.environ["PALVIZ_RUNS"] = old
    return specs, [r.path for r in results]


# ----------------------------------------------------------------- specs as JSON


def test_run_spec_round_trips_through_json():
    for spec in (
        small_spec("LDAM-DRW", pal=True),
        ex.noisy_spec("NCE+RCE+FNPAL", 0.4, "asymmetric", profile="paper", dataset="cifar100"),
    ):
        back = RunSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
        assert back == spec and back.key() == spec.key() and back.label == spec.label
    with pytest.raises(ValueError, match="unknown RunSpec fields"):
        RunSpec.from_dict({**small_spec().to_dict(), "colour": "red"})


# ----------------------------------------------------------------- placement, locks


def test_gpu_slots_are_round_robin():
    assert cluster.gpu_slots(2, 2) == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]
    assert cluster.gpu_slots(1, 3) == ["cuda:0"] * 3
    assert cluster.gpu_slots(0, 4) == [] and cluster.gpu_slots(4, 0) == []
    with pytest.raises(ValueError):
        cluster.gpu_slots(-1, 1)


def test_a_worker_sees_only_its_own_gpu(monkeypatch):
    import queue

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    slots = queue.Queue()
    for slot in cluster.gpu_slots(2, 1):
        slots.put(slot)
    workers.pin_gpu(slots)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0"
    workers.pin_gpu(slots)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")


HOLDER = """
import sys, time
from palviz.experiments.locks import RunLock
lock = RunLock(sys.argv[1], sys.argv[2])  # kept: filelock releases a collected lock
lock.acquire()
print("held", flush=True)
time.sleep(600)
"""


def test_one_process_holds_a_runs_lock_until_it_dies(runs):
    key = "k" * 16
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(runs), key],
        env=subprocess_env(runs),
        stdout=subprocess.PIPE,
        text=True,
    )
    waiter = locks.RunLock(runs, key, poll=0.05)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert waiter.acquire(done=lambda: True) is False  # gave up: the other process holds it
    finally:
        holder.kill()  # SIGKILL: the holder never releases it itself
        holder.wait()
    assert waiter.acquire(done=lambda: True) is True
    waiter.release()


# ----------------------------------------------------------------- broken entries


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


BREAKAGES = {
    "truncated metrics.json": ("metrics.json", _truncate, "metrics.json is not readable JSON"),
    "truncated checkpoint.pt": ("checkpoint.pt", _truncate, "checkpoint.pt is not readable"),
    "garbage features.npz": (
        "features.npz",
        lambda p: p.write_bytes(b"\x80\x04garbage" * 50),
        "features.npz is not readable",
    ),
}


@pytest.mark.parametrize("what", list(BREAKAGES))
def test_a_broken_entry_is_moved_aside_named_and_trained_again(what, runs, reference):
    specs, paths = reference
    name, breaker, message = BREAKAGES[what]
    folder = runs / specs[0].key()
    shutil.copytree(paths[0], folder)
    breaker(folder / name)
    assert not ex.is_cached(specs[0])
    named = f"entry {specs[0].key()} \\(CE\\) is broken: {message}"
    with pytest.warns(RuntimeWarning, match=named):
        result = ex.run(specs[0])
    same_result(result.path, paths[0])
    (moved,) = (runs / ".broken").iterdir()
    assert moved.name.startswith(specs[0].key() + "-") and moved.name.endswith("Z")
    assert ex.is_cached(specs[0])


def test_a_folder_whose_key_differs_is_moved_aside(runs, reference):
    specs, paths = reference
    shutil.copytree(paths[0], runs / specs[1].key())  # CE's files under CE+PAL's key
    with pytest.warns(RuntimeWarning, match=f"entry {specs[1].key()} .*names key"):
        result = ex.run(specs[1])
    same_result(result.path, paths[1])


def test_runs_check_reports_and_fixes_broken_entries(runs, reference, capsys):
    specs, paths = reference
    for spec, path in zip(specs, paths, strict=True):
        shutil.copytree(path, runs / spec.key())
    _truncate(runs / specs[1].key() / "checkpoint.pt")
    assert cli.main(["runs", "--check"]) == 1
    out = capsys.readouterr().out
    assert specs[1].key() in out and "1 ok, 0 unfinished, 1 broken" in out
    assert cli.main(["runs", "--check", "--fix"]) == 0
    assert "moved to" in capsys.readouterr().out
    assert [r["status"] for r in check_runs()] == ["ok"]
    assert cli.main(["runs"]) == 0  # the listing skips .locks and .broken
    assert "1 run(s)" in capsys.readouterr().out


# ----------------------------------------------------------------- concurrency, killing

WORKER = """
import json, sys, time
from palviz import experiments as ex
spec = ex.lt_spec("CE", profile="smoke", epochs={epochs})
start = time.process_time()
result = ex.run(spec)
print(json.dumps({{"cpu": time.process_time() - start, "path": str(result.path)}}))
"""


def test_two_processes_on_one_key_train_once(runs):
    code = WORKER.format(epochs=4)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            env=subprocess_env(runs),
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [json.loads(p.communicate(timeout=600)[0].strip().splitlines()[-1]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    cpu = sorted(o["cpu"] for o in outs)
    assert cpu[0] < 0.25 * cpu[1], f"both trained? CPU seconds {cpu}"
    assert outs[0]["path"] == outs[1]["path"]
    assert len([p for p in runs.iterdir() if not p.name.startswith(".")]) == 1


def test_a_killed_run_resumes_bit_identical(runs, tmp_path, monkeypatch):
    code = WORKER.format(epochs=6)
    spec = ex.lt_spec("CE", profile="smoke", epochs=6)
    checkpoint = runs / spec.key() / "checkpoint.pt"
    proc = subprocess.Popen([sys.executable, "-c", code], env=subprocess_env(runs))
    deadline = time.time() + 300
    while not checkpoint.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert checkpoint.exists() and not (runs / spec.key() / "metrics.json").exists()
    import torch

    done = torch.load(checkpoint, weights_only=True)["epoch"] + 1
    assert 1 <= done < 6
    resumed = ex.run(spec)
    assert len(resumed.metrics["history"]) == 6
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "uninterrupted"))
    same_result(resumed.path, ex.run(spec).path)


# ----------------------------------------------------------------- executors


def test_palviz_train_of_a_planned_spec_equals_run(runs, reference, tmp_path):
    specs, paths = reference
    plan = tmp_path / "plan.jsonl"
    assert cli.main(["plan", "--profile", "smoke", "--only", "02", "--jsonl", str(plan)]) == 0
    lines = [json.loads(line) for line in plan.read_text().splitlines()]
    assert [line["key"] for line in lines] == [s.key() for s in specs]
    assert cli.main(["train", str(plan), "--index", "1"]) == 0
    same_result(runs / specs[1].key(), paths[1])
    assert not (runs / specs[0].key()).exists()


@pytest.mark.parametrize("kind", ["local", "submitit-local"])
def test_sweeps_fill_the_cache_like_in_process_runs(kind, runs, reference, tmp_path):
    specs, paths = reference
    if kind == "local":
        executor = None
    else:
        require_engine("submitit")
        executor = cluster.make_executor(kind, log_dir=str(tmp_path / "submitit"), timeout_min=10)
    results = ex.run_many(specs, executor=executor, workers=2)
    for result, path in zip(results, paths, strict=True):
        assert result.path.parent == runs
        same_result(result.path, path)


def test_sweep_command_trains_the_missing_runs(runs, reference, capsys):
    specs, paths = reference
    shutil.copytree(paths[0], runs / specs[0].key())
    assert cli.main(["sweep", "--profile", "smoke", "--only", "02", "--workers", "1"]) == 0
    assert "2 run(s) planned (smoke), 1 missing" in capsys.readouterr().out
    same_result(runs / specs[1].key(), paths[1])


def test_sweep_passes_slurm_options_through():
    assert cli._slurm_extras(["--slurm-qos", "high", "--slurm-mem-per-cpu", "4G"]) == {
        "slurm_qos": "high",
        "slurm_mem_per_cpu": "4G",
    }
    with pytest.raises(SystemExit, match="--slurm-KEY VALUE"):
        cli._slurm_extras(["--colour", "red"])


def test_train_job_requeues_itself_when_preempted():
    submitit = require_engine("submitit")
    job = cluster.TrainJob(small_spec())
    again = job.checkpoint()
    assert isinstance(again, submitit.helpers.DelayedSubmission)
    assert isinstance(again.function, cluster.TrainJob) and again.function.spec == job.spec


def test_a_script_without_main_guard_gets_a_clear_error(runs, tmp_path):
    script = tmp_path / "sweep.py"
    script.write_text(
        textwrap.dedent(
            """
            from palviz import experiments as ex
            specs = [ex.lt_spec("CE", profile="smoke"), ex.lt_spec("Focal", profile="smoke")]
            ex.run_many(specs, workers=2)
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        env=subprocess_env(runs),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0
    assert 'without `if __name__ == "__main__":`' in done.stderr
    assert "WorkerStartError" in done.stderr


def test_a_pool_takes_the_runs_with_most_steps_first():
    from palviz.experiments.budget import steps_per_run
    from palviz.experiments.cluster import longest_first
    from palviz.experiments.runspec import RunSpec

    def spec(epochs, ratio):
        train = {"epochs": epochs, "progress": False}
        return RunSpec(
            dataset="mnist1d", arch="cnn1d", loss="ce", imbalance_ratio=ratio, train=train
        )

    todo = {"short": spec(2, 100), "long": spec(9, 1), "mid": spec(9, 100), "tie": spec(2, 100)}
    order = list(longest_first(todo))
    assert order == ["long", "mid", "short", "tie"]  # most steps first, ties as given
    steps = [steps_per_run(todo[k]) for k in order]
    assert steps == sorted(steps, reverse=True) and steps[0] > steps[1] > steps[2]
