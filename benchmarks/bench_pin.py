"""Which CPU switches make a run's numbers independent of the machine, and what they cost.

Usage::

    python benchmarks/bench_pin.py                 # quick runs 0 (CE, LT) and 47 (CE+FNPAL, noisy)
    python benchmarks/bench_pin.py --runs 0 --ops  # one run, plus the kernels one by one

Each configuration runs in a fresh process (the switches are read when torch loads), with
``PALVIZ_CPU_PIN=0`` so that palviz leaves the variables as the configuration sets them:

- ``native``: nothing set; the CPU's own level (AVX-512 where the CPU has it);
- ``aten``, ``onednn``, ``mkl``: one switch at AVX2 (``ATEN_CPU_CAPABILITY=avx2``,
  ``ONEDNN_MAX_CPU_ISA=AVX2``, ``MKL_CBWR=AVX2``);
- ``aten+onednn``: the two that the first trials found enough;
- ``pin``: the three, :data:`palviz.cpu.SWITCHES` (what ``palviz`` sets by default);
- ``pin-sse4``: the three at a lower level (``default``, ``SSE41``, ``SSE4_2``), a second pin to
  compare with: equal to ``pin`` only where no kernel depends on the level.

For each it trains the quick profile's runs (``palviz plan --profile quick`` order) into a
temporary run cache and prints their final test accuracy (``repr``, every digit), a hash of
their per-class accuracies and the training seconds, and the ratio of each configuration's
seconds to ``native``'s, all measured in this one run, beside the one-thread matmul rate
and the CPU model. ``--ops`` also hashes the outputs and gradients of single kernels (a
matrix product, 1-D and 2-D convolutions, batch norm, ``log_softmax``) under each
configuration: what differs there shows which library decides which number.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CONFIGS = {
    "native": {},
    "aten": {"ATEN_CPU_CAPABILITY": "avx2"},
    "onednn": {"ONEDNN_MAX_CPU_ISA": "AVX2"},
    "mkl": {"MKL_CBWR": "AVX2"},
    "aten+onednn": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "pin": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"},
    "pin-sse4": {
        "ATEN_CPU_CAPABILITY": "default",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "MKL_CBWR": "SSE4_2",
    },
}

#: Single kernels, run in a child process: a hash of each output and gradient.
OPS = r"""
import hashlib, json, torch
torch.manual_seed(0)
def h(*ts):
    return hashlib.sha256(b"".join(t.detach().numpy().tobytes() for t in ts)).hexdigest()[:10]
out = {"capability": torch.backends.cpu.get_cpu_capability()}
a = torch.randn(257, 513, requires_grad=True); b = torch.randn(513, 1031)
y = a @ b; y.square().sum().backward(); out["matmul"] = h(y, a.grad)
x = torch.randn(64, 32, 40, requires_grad=True); c1 = torch.nn.Conv1d(32, 32, 5, padding=2)
y = c1(x); y.square().sum().backward(); out["conv1d"] = h(y, x.grad, c1.weight.grad)
x = torch.randn(32, 16, 32, 32, requires_grad=True); c2 = torch.nn.Conv2d(16, 32, 3, padding=1)
y = c2(x); y.square().sum().backward(); out["conv2d"] = h(y, x.grad, c2.weight.grad)
bn = torch.nn.BatchNorm1d(32); y = bn(torch.randn(64, 32, 40)); out["batchnorm"] = h(y)
z = torch.randn(512, 100, requires_grad=True); y = torch.log_softmax(z, 1)
y[:, 0].sum().backward(); out["log_softmax"] = h(y, z.grad)
print(json.dumps(out))
"""


def child_env(config: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CONFIGS["pin"]}  # the three switches
    return {**env, **config, "PALVIZ_CPU_PIN": "0"}


def train(index: int, specfile: Path, config: dict[str, str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-pin-") as runs:
        env = {**child_env(config), "PALVIZ_RUNS": runs}
        cmd = [sys.executable, "-m", "palviz", "train", "--index", str(index), str(specfile)]
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        (metrics,) = Path(runs).glob("*/metrics.json")
        m = json.loads(metrics.read_text())
    per_class = hashlib.sha256(repr(m["per_class_acc"]).encode()).hexdigest()[:10]
    return {"acc": m["last_acc"], "per_class": per_class, "seconds": m["seconds"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[0, 47], help="plan indices")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--ops", action="store_true", help="also hash single kernels")
    args = parser.parse_args()

    from palviz.cpu import cpu_model  # palviz before torch: this process pinned too
    from palviz.threads import matmul_rate

    print(
        f"CPU: {cpu_model()} | matmul {matmul_rate():.1f} GFLOP/s (1 thread, pinned) | "
        "each configuration's ATen level in the kernel table (--ops)"
    )
    if args.ops:
        print("\nkernel hashes (output and gradients):")
        for name in args.configs:
            out = subprocess.run(
                [sys.executable, "-c", OPS],
                env=child_env(CONFIGS[name]),
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            print(f"  {name:12s} {json.loads(out)}")
    with tempfile.TemporaryDirectory() as folder:
        specfile = Path(folder) / "plan.jsonl"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "palviz",
                "plan",
                "--profile",
                "quick",
                "--jsonl",
                str(specfile),
            ],
            check=True,
            capture_output=True,
        )
        lines = specfile.read_text().splitlines()
        for index in args.runs:
            spec = json.loads(lines[index])["spec"]
            print(
                f"\nrun {index}: {spec['label']}, rho {spec['imbalance_ratio']}, "
                f"noise {spec['noise_rate']} {spec['noise_kind']}, seed {spec['seed']}"
            )
            base = None
            for name in args.configs:
                r = train(index, specfile, CONFIGS[name])
                base = base or (r["seconds"] if name == "native" else None)
                ratio = f"{r['seconds'] / base:5.2f}" if base else "  n/a"
                print(
                    f"  {name:12s} last_acc {r['acc']!r:22s} per-class {r['per_class']}  "
                    f"{r['seconds']:6.1f} s  x{ratio} of native"
                )
    print(f"\nmatmul after: {matmul_rate():.1f} GFLOP/s")


if __name__ == "__main__":
    main()
