r"""The dot-regression loss of a fixed ETF classifier (Yang et al., NeurIPS 2022).

See :mod:`palviz.losses` for the notation and the conventions every loss follows.

Yang, Chen, Li, Xie, Lin, Tao, *Inducing Neural Collapse in Imbalanced Learning: Do We Really
Need a Learnable Classifier at the End of Deep Neural Network?*, NeurIPS 2022
(arXiv 2203.09081), its dot-regression loss: with the classifier fixed at a simplex ETF
:math:`W^*` and the feature :math:`h`,

.. math::
    \mathcal{L}_{DR}(h, W^*) = \frac{1}{2 E_W E_H}
    \left(w_{y}^{*\top} h - E_W E_H\right)^2 ,

a regression of the target class's dot product onto its value at neural collapse; unlike
cross entropy it has no term that pushes the features away from the other classes' vectors
(the ETF already holds them apart).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from palviz.checks import check_bool, check_num_classes
from palviz.losses._inputs import prepare_inputs
from palviz.losses.registry import register_loss

__all__ = ["DotRegressionLoss", "batch_class_lengths"]

# How far a cosine logit may exceed 1 in magnitude (float32 rounding of W h / ||h||).
_COSINE_SLACK = 1e-3


def batch_class_lengths(targets: Tensor, num_classes: int) -> Tensor:
    r"""The reference code's per-batch target lengths :math:`E_{W,c} = \sqrt{\gamma / m_c}`
    (``methods.py``, ``produce_Ew``), ``[num_classes]``.

    :math:`m_c` is the number of samples of class :math:`c` in the batch and
    :math:`\gamma = B / U` the batch size over the number :math:`U` of classes present; a class
    absent from the batch keeps length 1. Then :math:`\sum_i E_{W,y_i}^2 = U \gamma = B`: the
    squared lengths re-weight the batch so that every class present weighs the same.
    """
    counts = torch.bincount(targets, minlength=num_classes).to(torch.float64)
    present = counts > 0
    gamma = targets.numel() / present.sum().clamp(min=1).to(torch.float64)
    # E_c = sqrt(gamma / m_c) for a class in the batch, 1 otherwise
    return torch.where(present, torch.sqrt(gamma / counts.clamp(min=1)), torch.ones_like(counts))


@register_loss(
    "dot_regression",
    head="cosine",
    source="Yang et al., NeurIPS 2022 (dot-regression loss L_DR)",
)
class DotRegressionLoss(nn.Module):
    r"""The dot-regression loss on cosine logits of fixed ETF prototypes:
    :math:`\frac{1}{2} E_{W,y}^2 (\cos_y - 1)^2` per sample.

    The logits must be the cosines :math:`z_j = w_j^\top h / \|h\|` of unit prototypes
    (``AnchoredHead(normalize=True, scale=1)``), as in the reference, whose classifier divides
    the feature by its norm (``E_H = \|h\| = 1``). The reference's target is
    :math:`E_{W,y} w_y` with the per-batch length :math:`E_{W,y}`
    (:func:`batch_class_lengths`), so its per-sample term
    :math:`\frac{1}{2}(E_{W,y} w_y^\top h - E_{W,y} \|h\|)^2 / \|h\|` is, with
    :math:`\|h\| = 1`,

    .. math::
        \ell_i = \tfrac{1}{2}\, E_{W,y_i}^2 \left(z_{i, y_i} - 1\right)^2,
        \qquad \mathcal{L} = \frac{1}{N} \sum_i \ell_i

    (``batch_balanced=False``: :math:`E_{W,y} = 1`, the paper's :math:`\mathcal{L}_{DR}` with
    :math:`E_W = E_H = 1`). Only the target's cosine enters: the loss is 0 exactly when every
    feature points along its class's prototype. Predictions are :math:`\arg\max_j z_j`.

    Source: Yang et al., NeurIPS 2022;
    https://github.com/NeuralCollapseApplications/ImbalancedLearning (``methods.py``,
    ``dot_loss`` with ``criterion='reg_dot_loss'``, ``produce_Ew``; ``train.py`` with the
    default ``GivenEw=True``, ``reg_lam=0``). Differences from that code: palviz's head
    normalises the backbone's features without the reference's ``BatchNorm1d`` before the
    division, and divides by ``max(||h||, 1e-12)`` (``F.normalize``) where the reference
    clamps the norm at ``1e-8`` (docs/departures.md).

    Args:
        num_classes: C, the number of classes (logit columns).
        batch_balanced: use the reference's per-batch lengths :math:`E_{W,y}` (default
            ``True``, as its default ``GivenEw=True``); ``False``: :math:`E_{W,y} = 1`.

    Shapes: ``logits [N, C]`` (cosines, within [-1, 1]), ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, num_classes: int, batch_balanced: bool = True) -> None:
        super().__init__()
        self.num_classes = check_num_classes(num_classes)
        self.batch_balanced = check_bool("batch_balanced", batch_balanced)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets = prepare_inputs(logits, targets, self.num_classes)
        # on CUDA the check would cost a host sync every batch
        largest = float(z.detach().abs().max()) if z.device.type != "cuda" and z.numel() else 0.0
        if largest > 1 + _COSINE_SLACK:
            raise ValueError(
                f"logits must be cosines within [-1, 1] (AnchoredHead(normalize=True, "
                f"scale=1)), got a largest magnitude of {largest:.4g}"
            )
        cos_y = z.gather(1, targets[:, None]).squeeze(1)
        # 1/2 (cos_y - 1)^2: (w_y^T h - E_W E_H)^2 / (2 E_W E_H) with E_W = E_H = 1
        terms = 0.5 * (cos_y - 1.0) ** 2
        if self.batch_balanced:
            # E_{W,y}^2 = gamma / m_y scales the target w_y, so the square by its square
            lengths = batch_class_lengths(targets, self.num_classes).to(z.device, z.dtype)
            terms = lengths[targets] ** 2 * terms
        return terms.mean()

    def extra_repr(self) -> str:
        return f"num_classes={self.num_classes}, batch_balanced={self.batch_balanced}"
