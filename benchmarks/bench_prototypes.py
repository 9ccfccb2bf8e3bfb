"""Time `simplex_prototypes` for k = 100 classes in d = 128 dimensions, both methods.

Run from the project root:

    python benchmarks/bench_prototypes.py [--repeats 3] [--num-classes 100] [--dim 128]

Prints, per method, the wall-clock seconds (best and median of the repeats) and the max
cosine error max_{i != j} |w_i . w_j + 1/(k-1)|. The "optimize" method is meant to stay
under 10 s on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from palviz.heads import simplex_prototypes
from palviz.threads import matmul_rate


def max_cosine_error(W: torch.Tensor) -> float:
    a = W.double().numpy()
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    cos = a @ a.T
    k = a.shape[0]
    return float(np.abs(cos[~np.eye(k, dtype=bool)] + 1.0 / (k - 1)).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-classes", type=int, default=100)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    k, d = args.num_classes, args.dim
    threads = torch.get_num_threads()
    print(
        f"simplex_prototypes({k}, {d}); torch {torch.__version__}, {threads} threads; "
        f"one-thread matmul {matmul_rate():.1f} GFLOP/s"
    )
    for method in ("optimize", "etf"):
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            W = simplex_prototypes(k, d, method=method)
            times.append(time.perf_counter() - start)
        print(
            f"{method:>8}: best {min(times):.3f} s, median {statistics.median(times):.3f} s, "
            f"max cosine error {max_cosine_error(W):.2e}"
        )


if __name__ == "__main__":
    main()
