"""The GPU benchmark (benchmarks/bench_gpu.py) in its tiny CPU mode writes a file of its
schema, and ``palviz plan --estimate`` turns a benchmark file into GPU-hours: checked against
a sum computed here from known numbers, and bad files refused naming what is wrong."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from palviz import cli
from palviz.experiments import budget, estimate
from palviz.experiments.plan import plan

ROOT = Path(__file__).resolve().parents[1]
RESULT_KEYS = {"arch", "runs_per_gpu", "status", "ms_per_step", "images_per_s", "max_memory_bytes"}

# The training-set sizes of CIFAR-10/100-LT (LDAM-DRW: 5,000 / 500 images per class in the
# head, exponential profile), known from the papers' tables, by (dataset, imbalance ratio).
LT_SIZES = {("cifar10", 100): 12406, ("cifar10", 50): 13996, ("cifar10", 10): 20431}
LT_SIZES |= {("cifar100", 100): 10847, ("cifar100", 50): 12608, ("cifar100", 10): 19573}


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)


def test_tiny_benchmark_writes_a_file_of_the_schema_and_the_estimate_reads_it(
    tmp_path, runs, capsys
):
    out = tmp_path / "bench.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PALVIZ_BUILD": str(tmp_path / "build")}
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--tiny"]
    command += ["--archs", "resnet32", "--out", str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    bench = json.loads(out.read_text())
    assert (bench["schema"], bench["version"]) == ("palviz-bench-gpu", 2)
    assert bench["torch"] == torch.__version__ and bench["tiny"] is True
    assert bench["device"]["type"] in ("cpu", "cuda") and bench["device"]["name"]
    assert bench["archs"] == {
        "resnet32": {"dataset": "cifar10", "input_shape": [3, 32, 32], "num_classes": 10}
    }
    settings = bench["settings"]
    assert settings["steps"] >= 1 and settings["warmup_steps"] >= 1
    # float32 with channels-last images, as fit trains: one result per number of packed runs
    assert [(r["arch"], r["runs_per_gpu"]) for r in bench["results"]] == [
        ("resnet32", 1),
        ("resnet32", 2),
    ]
    assert all(set(r) == RESULT_KEYS for r in bench["results"])
    for r in bench["results"]:
        assert r["status"] == "ok", r
        assert r["ms_per_step"] > 0
        assert r["images_per_s"] == pytest.approx(
            r["runs_per_gpu"] * settings["batch_size"] * 1000 / r["ms_per_step"]
        )
        cpu = bench["device"]["type"] == "cpu"
        assert r["max_memory_bytes"] is None if cpu else r["max_memory_bytes"] > 0
    assert "resnet32     n runs packed / 1: 2: " in done.stdout

    # notebook 06 trains ResNet-32 only: the tiny file estimates it, saying it is tiny
    assert cli.main(["plan", "--profile", "paper", "--only", "06", "--estimate", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "GPU-hours: " in shown and "tiny mode" in shown


def _result(arch, runs, ms, batch, status="ok"):
    r = {"arch": arch, "runs_per_gpu": runs, "status": status}
    if status != "ok":
        return r | {"reason": "CUDA out of memory"}
    memory = {"max_memory_bytes": 10**9}
    return r | {"ms_per_step": ms, "images_per_s": runs * batch * 1000 / ms} | memory


def known_bench(batch=128):
    """A benchmark file with made-up numbers: for ResNet-32 the best configuration is 4 runs
    per GPU at 20 ms a step (5 GPU-ms a step)."""
    results = [
        _result("resnet32", 1, 10.0, batch),  # 10 GPU-ms a step
        _result("resnet32", 4, 20.0, batch),  # 5: the best
        _result("resnet32", 2, 12.0, batch),  # 6
        _result("resnet32", 8, 0.0, batch, status="out of memory"),
        _result("cnn_mnist", 2, 3.0, batch),
    ]
    return {
        "schema": "palviz-bench-gpu",
        "version": 2,
        "torch": "2.0",
        "cuda": "12.1",
        "tiny": False,
        "device": {"type": "cuda", "name": "Made-up GPU"},
        "settings": {"batch_size": batch, "steps": 50, "warmup_steps": 10},
        "archs": {},
        "results": results,
    }


@pytest.mark.parametrize("measured_batch", [128, 64])
def test_estimate_is_the_sum_of_steps_times_gpu_time_a_step(measured_batch, tmp_path, runs, capsys):
    specs = [row["spec"] for row in plan(["06"], "paper")]
    assert {s.arch for s in specs} == {"resnet32"}
    gpu_ms, packed_ms, gpus = 20.0 / 4, 20.0, 3
    total = longest = 0.0
    for s in specs:
        n = LT_SIZES[s.dataset, int(s.imbalance_ratio)]
        steps = s.train.epochs * math.ceil(n / s.train.batch_size)
        scale = s.train.batch_size / measured_batch
        total += steps * gpu_ms * scale / 3.6e6
        longest = max(longest, steps * packed_ms * scale / 3.6e6)

    bench = known_bench(measured_batch)
    est = estimate.estimate(specs, bench, gpus=gpus)
    assert est["gpu_hours"] == pytest.approx(total, rel=1e-12)
    assert est["wall_hours"] == pytest.approx(max(total / gpus, longest), rel=1e-12)
    assert est["archs"]["resnet32"]["runs"] == len(specs)
    assert est["archs"]["resnet32"]["best"]["runs_per_gpu"] == 4

    path = tmp_path / "bench.json"
    path.write_text(json.dumps(bench))
    args = ["plan", "--profile", "paper", "--only", "06", "--estimate", str(path)]
    assert cli.main([*args, "--gpus", str(gpus)]) == 0
    shown = capsys.readouterr().out
    assert f"GPU-hours: {total:.2f}\n" in shown
    assert f"on {gpus} GPUs: at least {max(total / gpus, longest):.2f} h" in shown
    assert ("scaled from the measured batch" in shown) == (measured_batch != 128)


def test_the_estimate_names_the_networks_the_file_lacks(tmp_path, runs, capsys):
    bench = known_bench()
    bench["results"].append(_result("resnet34", 8, 0, 128, "out of memory"))
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(bench))
    assert cli.main(["plan", "--profile", "paper", "--only", "07", "--estimate", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "['cnn_cifar10', 'resnet34']" in err and "no estimate" in err


def _broken(change):
    bench = known_bench()
    change(bench)
    return bench


BAD_FILES = {
    "another schema": (lambda b: b.update(schema="other"), "schema 'other'"),
    "another version": (lambda b: b.update(version=1), "version 1"),
    "no results": (lambda b: b.pop("results"), "results must be a list"),
    "a result without its arch": (
        lambda b: b["results"][1].pop("arch"),
        "results[1] has no 'arch'",
    ),
    "an unknown status": (
        lambda b: b["results"][0].update(status="fast"),
        "results[0].status must be one of",
    ),
    "a negative time": (
        lambda b: b["results"][2].update(ms_per_step=-1.0),
        "results[2].ms_per_step must be > 0",
    ),
    "an ok result without its time": (
        lambda b: b["results"][0].pop("ms_per_step"),
        "results[0] (status 'ok') has no ['ms_per_step']",
    ),
    "images/s not the runs' aggregate": (
        lambda b: b["results"][1].update(images_per_s=1.0),
        "results[1].images_per_s must be runs_per_gpu * batch_size * 1000 / ms_per_step",
    ),
    "no batch size": (lambda b: b["settings"].pop("batch_size"), "settings.batch_size must be"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_benchmark_files_are_refused_naming_what_is_wrong(case, tmp_path):
    change, expected = BAD_FILES[case]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_broken(change)))
    with pytest.raises(ValueError) as err:
        estimate.read_benchmark(path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_a_file_that_is_not_json_or_is_missing_is_refused(tmp_path, runs, capsys):
    path = tmp_path / "bench.json"
    path.write_text("{not json")
    assert cli.main(["plan", "--profile", "paper", "--estimate", str(path)]) == 2
    assert f"{path}: not JSON" in capsys.readouterr().err
    assert cli.main(["plan", "--profile", "paper", "--estimate", str(tmp_path / "none")]) == 2
    assert "cannot read the benchmark" in capsys.readouterr().err
    assert cli.main(["plan", "--profile", "paper", "--gpus", "2"]) == 2
    assert "--gpus 2 needs --estimate FILE" in capsys.readouterr().err


def test_training_sizes_known_without_the_data_match_the_papers_budgets():
    paper = budget.PAPER_BUDGETS
    for dataset in ("mnist", "cifar10", "cifar100"):
        assert sum(estimate.SPLIT_CLASS_COUNTS[dataset]) == paper[f"{dataset}_noisy"].train_size
    for spec in (row["spec"] for row in plan(["06", "07"], "paper")):
        n = estimate.planned_train_size(spec)
        if spec.imbalance_ratio > 1:
            assert n == LT_SIZES[spec.dataset, int(spec.imbalance_ratio)]
        else:
            assert n == {"mnist": 60_000, "cifar10": 50_000, "cifar100": 50_000}[spec.dataset]
