"""One thread for torch and NumPy's BLAS while a block runs: :func:`single_thread`; the
machine's one-thread matrix-multiply rate (:func:`matmul_rate`), stated beside every absolute
time the project reports.

The small matrix loops of :mod:`palviz.heads` and :mod:`palviz.theory` (``k x d`` prototypes,
layer-peeled solutions) and the NumPy products of :mod:`palviz.collapse` on a few thousand
features gain nothing from more threads: they only add synchronisation, and on a busy machine
oversubscription makes such a loop many times slower (``benchmarks/bench_diagnose.py
--recording`` measures what the readings of :mod:`palviz.collapse` cost a training run).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import torch
from threadpoolctl import threadpool_limits

__all__ = ["matmul_rate", "single_thread"]


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run the ``with`` block with ``torch.set_num_threads(1)`` and NumPy's BLAS on one thread
    (``threadpoolctl``); restore both after."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(n)


def matmul_rate(n: int = 1024, repeats: int = 10) -> float:
    """The one-thread float32 ``n x n`` matrix-multiply rate in GFLOP/s, best of ``repeats``
    (``2 n^3`` operations per product): a measure of this machine's speed at this moment, so
    that times measured on machines (or loads) that differ can be read as ratios."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    best = float("inf")
    with single_thread():
        a @ b  # warm-up
        for _ in range(repeats):
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9
