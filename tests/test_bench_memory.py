"""benchmarks/bench_memory.py measures what a training step of ResNet-32 holds: the sizes that
docs/cluster.md ("How many runs per GPU") quotes."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_bench():
    spec = importlib.util.spec_from_file_location(
        "bench_memory", ROOT / "benchmarks" / "bench_memory.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_memory"] = module
    spec.loader.exec_module(module)
    return module


def test_resnet32_memory_estimate_is_reported():
    from palviz.models import make_model

    bench = load_bench()
    sizes = bench.activation_bytes(make_model("resnet32", 10), (3, 32, 32), 128)
    assert 1.5e6 < sizes["parameters"] < 2.5e6  # 0.46 M float32 parameters
    assert sizes["gradients"] == sizes["momentum"] == sizes["parameters"]
    assert 2e8 < sizes["activations"] < 6e8
    assert sizes["total"] == 3 * sizes["parameters"] + sizes["activations"]
