"""Checks of a loss's inputs at ``forward``, shared by :mod:`palviz.losses.imbalance` and
:mod:`palviz.losses.noise`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

__all__ = ["ClassCounts", "Weight", "prepare_inputs"]

ClassCounts = Sequence[int] | np.ndarray | Tensor
Weight = Sequence[float] | np.ndarray | Tensor | None


def prepare_inputs(
    logits: Tensor, targets: Tensor, num_classes: int | None = None
) -> tuple[Tensor, Tensor]:
    """Check ``logits [N, C]`` and ``targets [N]``; return them as (compute dtype, long).

    float16/bfloat16 logits (autocast) are upcast to float32; float64 logits stay float64.
    """
    if not isinstance(logits, Tensor) or logits.ndim != 2:
        shape = tuple(logits.shape) if isinstance(logits, Tensor) else type(logits).__name__
        raise ValueError(f"logits must be a 2-D tensor [N, C], got {shape}")
    n, c = logits.shape
    if num_classes is not None and c != num_classes:
        raise ValueError(
            f"logits have C={c} columns but this loss was built for num_classes={num_classes}"
        )
    if c < 2:
        raise ValueError(f"logits must have at least 2 classes (columns), got C={c}")
    if not isinstance(targets, Tensor) or targets.ndim != 1 or targets.shape[0] != n:
        shape = tuple(targets.shape) if isinstance(targets, Tensor) else type(targets).__name__
        raise ValueError(f"targets must be a 1-D tensor of N={n} class indices, got {shape}")
    if targets.dtype.is_floating_point or targets.dtype.is_complex or targets.dtype == torch.bool:
        raise TypeError(f"targets must be an integer tensor (torch.long), got {targets.dtype}")
    # On CUDA the check would cost a host sync every batch; there the indexing kernels assert
    # on out-of-range targets themselves.
    if n > 0 and targets.device.type != "cuda":
        low, high = torch.aminmax(targets)
        low, high = int(low), int(high)
        if low < 0 or high >= c:
            raise ValueError(f"targets must lie in [0, {c}), got values in [{low}, {high}]")
    z = logits if logits.dtype == torch.float64 else logits.float()
    return z, targets.long()
