r"""mixup (Zhang, Cisse, Dauphin, Lopez-Paz, ICLR 2018): training on convex combinations of
pairs of samples, and the loss of such a batch.

For a batch :math:`(x_i, y_i)`, a mixing weight :math:`\lambda \sim \mathrm{Beta}(\alpha,
\alpha)` and a permutation :math:`\pi` of the batch, the network sees
:math:`\tilde x_i = \lambda x_i + (1 - \lambda) x_{\pi(i)}` and is trained on

.. math::
    \lambda\, \mathcal{L}(z, y) + (1 - \lambda)\, \mathcal{L}(z, y_\pi),

the loss of the mixed logits :math:`z` against both label vectors, which for cross entropy
equals the cross entropy against the mixed one-hot labels (facebookresearch/mixup-cifar10
``train.py``, ``mixup_data`` and ``mixup_criterion``; Yang et al.'s ETF + DR code mixes its
dot-regression loss the same way). ``palviz.train.TrainConfig(mixup_alpha=...)`` switches it
on; ``mixup_alpha = 0`` (the default) leaves training untouched and draws nothing.

This module registers no loss.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from palviz.checks import check_positive

__all__ = ["mixup_batch", "mixup_draw", "mixup_inputs", "mixup_loss"]


def mixup_draw(rng: np.random.Generator, alpha: float, n: int) -> tuple[float, Tensor]:
    r"""One batch's mixing: ``(lam, perm)``, :math:`\lambda \sim \mathrm{Beta}(\alpha,
    \alpha)` and a uniformly random permutation of ``range(n)`` (a long tensor), both drawn
    from ``rng``. ``alpha`` must be > 0 (mixup off draws nothing, so it never calls this)."""
    alpha = check_positive("alpha", alpha)
    lam = float(rng.beta(alpha, alpha))
    return lam, torch.from_numpy(rng.permutation(n))


def mixup_inputs(x: Tensor, lam: float, perm: Tensor) -> Tensor:
    r"""The mixed batch :math:`\lambda x + (1 - \lambda) x_\pi` (``x`` is ``[N, ...]``)."""
    return lam * x + (1.0 - lam) * x[perm.to(x.device)]


def mixup_batch(
    x: Tensor, rng: np.random.Generator | None, alpha: float
) -> tuple[Tensor, tuple[float, Tensor] | None]:
    """``(mixup_inputs(x, lam, perm), (lam, perm))`` with ``(lam, perm)`` of
    :func:`mixup_draw`; ``(x, None)``, drawing nothing, when ``rng`` is ``None`` (mixup off)."""
    if rng is None:
        return x, None
    mix = mixup_draw(rng, alpha, len(x))
    return mixup_inputs(x, *mix), mix


def mixup_loss(
    loss_fn: Callable[..., Tensor],
    logits: Tensor,
    targets: Tensor,
    mix: tuple[float, Tensor] | None,
    **kw: Any,
) -> Tensor:
    r""":math:`\lambda\, \mathcal{L}(z, y) + (1 - \lambda)\, \mathcal{L}(z, y_\pi)` for
    ``mix = (lam, perm)``: ``loss_fn`` of the mixed batch's ``logits`` against the labels and
    against the permuted labels (``kw``, e.g. IB's ``features``, reach both calls); without
    mixup (``mix`` is ``None``) just ``loss_fn(logits, targets, **kw)``."""
    if mix is None:
        return loss_fn(logits, targets, **kw)
    lam, perm = mix
    permuted = targets[perm.to(targets.device)]
    return lam * loss_fn(logits, targets, **kw) + (1.0 - lam) * loss_fn(logits, permuted, **kw)
