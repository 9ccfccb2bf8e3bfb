"""``benchmarks/estimate_gpu_hours.py`` turns a benchmark file of ``benchmarks/bench_gpu.py`` and
a plan into GPU-hours: checked against a sum computed here from the long-tail formula and
made-up step times, with the plan from a profile or from a ``palviz plan --jsonl`` file, and
bad files refused naming what is wrong."""

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from palviz import cli
from palviz.experiments import budget
from palviz.experiments.plan import plan

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "estimate_gpu_hours.py"

_spec = importlib.util.spec_from_file_location("estimate_gpu_hours", SCRIPT)
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)

# The training-set sizes of CIFAR-10/100-LT (LDAM-DRW: 5,000 / 500 images per class in the
# head, exponential profile), known from the papers' tables, by (dataset, imbalance ratio).
LT_SIZES = {("cifar10", 100): 12406, ("cifar10", 50): 13996, ("cifar10", 10): 20431}
LT_SIZES |= {("cifar100", 100): 10847, ("cifar100", 50): 12608, ("cifar100", 10): 19573}


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)


def lt_size(dataset: str, rho: float) -> int:
    """CIFAR-LT's training size from its exponential profile: n_i = floor(n_max rho^(-i/(k-1)))."""
    n_max, k = {"cifar10": (5000, 10), "cifar100": (500, 100)}[dataset]
    return sum(math.floor(n_max * rho ** (-i / (k - 1))) for i in range(k))


def _result(arch, runs, ms, batch, status="ok", **config):
    r = {"arch": arch, "runs_per_gpu": runs, "status": status, **config}
    if status != "ok":
        return r | {"reason": "CUDA out of memory"}
    return r | {"ms_per_step": ms, "images_per_s": runs * batch * 1000 / ms, "max_memory_bytes": 1}


def known_bench(batch=128):
    """A benchmark with made-up numbers: ResNet-32's best configuration is 4 runs a GPU at 20 ms
    a step (5 GPU-ms a step), a result without a precision, as a float32-only benchmark writes."""
    results = [
        _result("resnet32", 1, 10.0, batch, precision="fp32", channels_last=True),  # 10 GPU-ms
        _result("resnet32", 4, 20.0, batch, channels_last=True),  # 5: the best
        _result("resnet32", 8, 48.0, batch, precision="bf16", channels_last=False),  # 6
        _result("resnet32", 8, 0.0, batch, status="out of memory", precision="fp16"),
        _result("cnn_mnist", 2, 3.0, batch),
    ]
    return {
        "schema": "palviz-bench-gpu",
        "version": 1,
        "torch": "2.0",
        "cuda": "12.1",
        "tiny": False,
        "device": {"type": "cuda", "name": "Made-up GPU"},
        "settings": {"batch_size": batch, "steps": 50, "warmup_steps": 10},
        "archs": {},
        "results": results,
        "skipped": [],
    }


@pytest.mark.parametrize("measured_batch", [128, 64])
def test_gpu_hours_are_the_sum_of_steps_times_gpu_time_a_step(
    measured_batch, tmp_path, runs, capsys
):
    specs = [row["spec"] for row in plan(["06"], "paper")]
    assert {s.arch for s in specs} == {"resnet32"}
    gpu_ms, packed_ms, gpus = 20.0 / 4, 20.0, 3
    total = longest = 0.0
    for s in specs:
        n = lt_size(s.dataset, s.imbalance_ratio)
        steps = s.train.epochs * math.ceil(n / s.train.batch_size)
        scale = s.train.batch_size / measured_batch
        total += steps * gpu_ms * scale / 3.6e6
        longest = max(longest, steps * packed_ms * scale / 3.6e6)
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(known_bench(measured_batch)))
    assert script.main([str(path), "--only", "06", "--gpus", str(gpus)]) == 0
    shown = capsys.readouterr().out
    assert f"GPU time of the {len(specs)} run(s) of the paper plan" in shown
    assert f"GPU-hours: {total:.2f}\n" in shown
    assert f"on {gpus} GPUs: at least {max(total / gpus, longest):.2f} h" in shown
    assert "4/GPU" in shown and "fp32" not in shown  # the best result, which has no precision
    assert ("scaled from the measured batch" in shown) == (measured_batch != 128)


def test_a_plan_file_gives_the_estimate_of_its_runs(tmp_path, runs, capsys):
    bench, todo = tmp_path / "bench.json", tmp_path / "todo.jsonl"
    bench.write_text(json.dumps(known_bench()))
    assert cli.main(["plan", "--profile", "paper", "--only", "06", "--jsonl", str(todo)]) == 0
    capsys.readouterr()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(bench), "--plan", str(todo)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert script.main([str(bench), "--only", "06"]) == 0
    from_profile = capsys.readouterr().out
    (hours,) = [line for line in from_profile.splitlines() if line.startswith("GPU-hours: ")]
    assert hours in done.stdout.splitlines()
    assert f"of {todo}:" in done.stdout


def test_the_estimate_names_the_networks_the_file_lacks(tmp_path, runs, capsys):
    bench = known_bench()
    bench["results"].append(_result("resnet34", 8, 0, 128, "out of memory"))
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(bench))
    assert script.main([str(path), "--only", "07"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "['cnn_cifar10', 'resnet34']" in err and "no estimate" in err


def _broken(change):
    bench = known_bench()
    change(bench)
    return bench


BAD_FILES = {
    "another schema": (lambda b: b.update(schema="other"), "schema 'other'"),
    "another version": (lambda b: b.update(version=2), "version 2"),
    "no results": (lambda b: b.pop("results"), "results must be a list"),
    "a result without its arch": (
        lambda b: b["results"][1].pop("arch"),
        "results[1] has no 'arch'",
    ),
    "a precision that is not a name": (
        lambda b: b["results"][0].update(precision=32),
        "results[0].precision must be a string",
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
        script.read_benchmark(path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_a_file_that_is_not_json_or_is_missing_is_refused(tmp_path, runs, capsys):
    path = tmp_path / "bench.json"
    path.write_text("{not json")
    assert script.main([str(path)]) == 2
    assert f"{path}: not JSON" in capsys.readouterr().err
    assert script.main([str(tmp_path / "none")]) == 2
    assert "cannot read the benchmark" in capsys.readouterr().err
    path.write_text(json.dumps(known_bench()))
    assert script.main([str(path), "--plan", str(tmp_path / "none.jsonl")]) == 2
    assert "cannot read the plan" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script.main([str(path), "--gpus", "0"])
    assert "--gpus must be >= 1, got 0" in capsys.readouterr().err


def test_training_sizes_known_without_the_data_match_the_papers_budgets():
    paper = budget.PAPER_BUDGETS
    for dataset in ("mnist", "cifar10", "cifar100"):
        assert sum(script.SPLIT_CLASS_COUNTS[dataset]) == paper[f"{dataset}_noisy"].train_size
    for spec in (row["spec"] for row in plan(["06", "07"], "paper")):
        n = script.planned_train_size(spec)
        if spec.imbalance_ratio > 1:
            assert n == LT_SIZES[spec.dataset, int(spec.imbalance_ratio)]
            assert n == lt_size(spec.dataset, spec.imbalance_ratio)
        else:
            assert n == {"mnist": 60_000, "cifar10": 50_000, "cifar100": 50_000}[spec.dataset]
