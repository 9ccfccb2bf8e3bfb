"""What the theory modules share: their array arguments as finite float64 tensors."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["as_float64"]


def as_float64(name: str, x: Any) -> torch.Tensor:
    """``x`` (tensor, array or nested sequence) as a float64 CPU tensor, detached; raises
    ``ValueError`` naming ``name`` when an entry is NaN or inf."""
    t = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
    t = t.detach().to(torch.float64).cpu()
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite, got NaN or inf entries")
    return t
