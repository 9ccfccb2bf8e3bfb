"""The GPU benchmark (benchmarks/bench_gpu.py) in its tiny CPU mode writes a file of its
schema, which benchmarks/estimate_gpu_hours.py reads (its arithmetic: test_estimate_script.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
RESULT_KEYS = {"arch", "runs_per_gpu", "status", "ms_per_step", "images_per_s", "max_memory_bytes"}


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)


def test_tiny_benchmark_writes_a_file_of_the_schema_and_the_estimate_reads_it(tmp_path, runs):
    out = tmp_path / "bench.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PALVIZ_BUILD": str(tmp_path / "build")}
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--tiny"]
    command += ["--archs", "resnet32", "--out", str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    bench = json.loads(out.read_text())
    assert (bench["schema"], bench["version"]) == ("palviz-bench-gpu", 1)
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
    script = [sys.executable, str(ROOT / "benchmarks" / "estimate_gpu_hours.py"), str(out)]
    done = subprocess.run(
        [*script, "--only", "06"], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "GPU-hours: " in done.stdout and "tiny mode" in done.stdout
