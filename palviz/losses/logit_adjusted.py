r"""Logit-adjusted cross entropy (Menon et al., ICLR 2021).

See :mod:`palviz.losses` for the notation and the conventions every loss follows.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from palviz.checks import check_class_counts, check_non_negative
from palviz.losses._inputs import ClassCounts, ClassWeightedLoss, Weight, prepare_inputs
from palviz.losses.registry import register_loss

__all__ = ["LogitAdjustedLoss", "log_class_prior"]


def log_class_prior(cls_num_list: ClassCounts, *, dtype: torch.dtype = torch.float32) -> Tensor:
    r"""The log class prior :math:`\log \pi_j`, :math:`\pi_j = n_j / \sum_k n_k`, of the
    training counts (computed in float64, then cast to ``dtype``).

    Args:
        cls_num_list: training-set count of each class, ``[C]``, all > 0.

    Returns:
        tensor ``[C]``, every entry < 0 (0 only for a single class, which is refused).
    """
    counts = check_class_counts("cls_num_list", cls_num_list)
    return torch.tensor(np.log(counts / counts.sum()), dtype=dtype)


@register_loss(
    "la_ce",
    source="Menon et al., ICLR 2021, Eq. 10 (logit-adjusted loss)",
)
class LogitAdjustedLoss(ClassWeightedLoss):
    r"""Logit-adjusted cross entropy: cross entropy of the logits shifted by
    :math:`\tau \log \pi_j`.

    With the training class prior :math:`\pi_j = n_j / \sum_k n_k`:

    .. math::
        \mathcal{L}_i = -\log \frac{e^{z_{y} + \tau \log \pi_{y}}}
        {\sum_{j} e^{z_j + \tau \log \pi_j}}
        = \log \sum_j e^{z_j + \tau \log \pi_j} - z_y - \tau \log \pi_y

    i.e. :math:`\mathrm{CE}(z + \tau \log \pi, y)`, reduced by the weighted mean
    :math:`\sum_i w_{y_i} \mathcal{L}_i / \sum_i w_{y_i}` (the plain mean without weights, as
    the reference). Pairwise it is a margin loss: the target must beat class :math:`j` by
    :math:`\tau \log(\pi_j / \pi_y)`, so a rare target gets a large margin against a frequent
    class. The adjustment acts in training only: predictions are :math:`\arg\max_j z_j` of the
    raw logits. ``tau = 0`` gives plain CE.

    Source: Menon, Jayasumana, Rawat, Jain, Veit, Kumar, *Long-tail learning via logit
    adjustment*, ICLR 2021 (arXiv 2007.07314), Eq. 10 with :math:`\tau = 1`;
    https://github.com/google-research/google-research/tree/master/logit_adjustment
    (``utils.py``, ``build_loss_fn``). Differences from that code: it adds
    :math:`\log(\pi_j^\tau + 10^{-12})`, here :math:`\tau \log \pi_j` exactly (every count is
    checked > 0, so the two differ by less than :math:`10^{-12} / \pi_j^\tau`); it has no class
    weights, here ``weight`` is optional (``None`` by default) so that DRW can be applied.

    Args:
        cls_num_list: training-set count of each class, ``[C]``, all > 0.
        tau: the adjustment's strength :math:`\tau`, >= 0 (default 1).
        weight: class weights ``[C]`` or ``None``; may be reassigned after construction.

    Attributes:
        log_prior: buffer ``[C]``, :math:`\log \pi_j` (float32).

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    log_prior: Tensor

    def __init__(self, cls_num_list: ClassCounts, tau: float = 1.0, weight: Weight = None) -> None:
        log_prior = log_class_prior(cls_num_list)
        super().__init__(weight, num_classes=len(log_prior))
        self.num_classes = len(log_prior)
        self.tau = check_non_negative("tau", tau)
        self.register_buffer("log_prior", log_prior)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets = prepare_inputs(logits, targets, self.num_classes)
        # z_j + tau log pi_j for every class j
        adjusted = z + self.tau * self.log_prior.to(device=z.device, dtype=z.dtype)
        # sum_i w_{y_i} CE(z_i + tau log pi, y_i) / sum_i w_{y_i}
        return F.cross_entropy(adjusted, targets, weight=self._weight_like(z))
