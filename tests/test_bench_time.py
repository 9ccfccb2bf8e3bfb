"""benchmarks/bench_time.py splits a run's time into its parts: at smoke size here, each part is
measured (not negative), the parts add up to the run, and the readings part grows when the
readings are taken at every epoch."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "bench_time", ROOT / "benchmarks" / "bench_time.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_time"] = module
    spec.loader.exec_module(module)
    return module


def test_a_runs_parts_are_measured_and_add_up_to_the_run(bench, monkeypatch, capsys):
    monkeypatch.setenv("PALVIZ_RUNS", "unused")  # bench_runs sets its own temporary cache
    parts = bench.bench_runs("smoke")
    assert set(parts) == {"long-tailed", "noisy"}
    for kind, p in parts.items():
        named = [v for k, v in p.items() if k not in ("total", "bookkeeping")]
        assert all(v >= 0 for v in named), (kind, p)
        assert p["training step"] > 0 and p["evaluation"] > 0 and p["data"] > 0, (kind, p)
        assert sum(v for k, v in p.items() if k != "total") == pytest.approx(p["total"])
        assert p["bookkeeping"] > -1e-3
    shown = capsys.readouterr().out
    assert "training step" in shown and "collapse/ECE readings" in shown
    none = bench.bench_runs("smoke", readings=0)
    assert all(p["collapse/ECE readings"] == 0 for p in none.values())
