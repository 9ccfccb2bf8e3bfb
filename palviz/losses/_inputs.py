"""What the loss modules share: checks of a loss's inputs at ``forward``,
:class:`ClassWeightedLoss`, the base of the losses with reassignable class weights (DRW), and
the normalisation of class weights."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn

__all__ = [
    "ClassCounts",
    "ClassWeightedLoss",
    "Weight",
    "normalised_class_weights",
    "prepare_inputs",
]

ClassCounts = Sequence[int] | np.ndarray | Tensor
Weight = Sequence[float] | np.ndarray | Tensor | None


def normalised_class_weights(w: np.ndarray) -> Tensor:
    """Class weights ``w`` scaled so that :math:`\\sum_j w_j = C`, as a float32 tensor ``[C]``
    (how LDAM-DRW's and IB's codes normalise theirs)."""
    return torch.tensor(w / w.sum() * len(w), dtype=torch.float32)


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


class ClassWeightedLoss(nn.Module):
    """Base of a loss with optional class weights ``w`` (``[C]``), a plain attribute that may
    be reassigned at any time (how DRW switches on: ``loss.weight = class_balanced_weights(n)``).

    ``weight`` is ``None`` or one finite number >= 0 per class, stored as a float32 tensor on
    the device it came on; :meth:`_weight_like` moves it to the logits' device and dtype.

    Args:
        weight: the initial class weights ``[C]`` or ``None``.
        num_classes: C, if known at construction (the weights are then checked against it).
    """

    def __init__(self, weight: Weight = None, num_classes: int | None = None) -> None:
        super().__init__()
        self._weight_classes = num_classes
        self.weight = weight

    @property
    def weight(self) -> Tensor | None:
        """Class weights ``[C]`` (float32) or ``None``; assign a new value to re-weight (DRW)."""
        return self._weight

    @weight.setter
    def weight(self, value: Weight) -> None:
        self._weight = _class_weights(value, self._weight_classes)

    def _weight_like(self, z: Tensor) -> Tensor | None:
        """The class weights on ``z``'s device and dtype, checked against ``z``'s C."""
        if self._weight is None:
            return None
        if self._weight.numel() != z.shape[1]:
            raise ValueError(
                f"weight must have one entry per class ({z.shape[1]} logits), "
                f"got {self._weight.numel()} entries"
            )
        return self._weight.to(device=z.device, dtype=z.dtype)


def _class_weights(weight: Weight, num_classes: int | None) -> Tensor | None:
    """``weight`` as a checked 1-D float32 tensor (a copy), or ``None``."""
    if weight is None:
        return None
    try:
        w = torch.as_tensor(weight).detach().to(torch.float32)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(
            f"weight must be None or one number per class (a 1-D tensor), got {weight!r}"
        ) from None
    if w.ndim != 1:
        raise ValueError(
            f"weight must be None or a 1-D tensor with one entry per class, "
            f"got shape {tuple(w.shape)}"
        )
    if num_classes is not None and w.numel() != num_classes:
        raise ValueError(
            f"weight must have one entry per class ({num_classes}), got {w.numel()} entries"
        )
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
        raise ValueError(f"weight must hold finite values >= 0, got {w.tolist()}")
    return w.clone()
