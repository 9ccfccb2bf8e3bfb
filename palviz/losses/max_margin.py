r"""The maximum margin loss on LDAM's margins, MM-LDAM (Kang, Vu, Yoo, ICIP 2021), one of the
comparisons of ELM's table.

See :mod:`palviz.losses` for the notation and the conventions every loss follows.

Kang, Vu, Yoo, *Learning Imbalanced Datasets with Maximum Margin Loss*, ICIP 2021 (arXiv
2206.05380); official code ihaeyong/Maximum-Margin-LDAM, ``losses.py`` ``HMMLoss``, run as
``--loss_type HMM-LDAM --train_rule DRW`` (``ldam=True``). Each sample's target logit is
shifted by a margin that depends on how far the sample is from its decision boundary: with
:math:`d = z_y - \max_{j \ne y} z_j` the gap to the strongest wrong class,

.. math::
    \mu = \begin{cases} e^{-d - \gamma M_y} & d > 0 \text{ (classified right)} \\
                        e^{\,d - M_y}       & d < 0 \text{ (classified wrong)} \\
                        0                   & d = 0 \end{cases}
    \qquad M_y = M - \Delta_y,

where :math:`\Delta_y` are LDAM's margins with :math:`\max_j \Delta_j = 0.5` (whatever
:math:`M`) and ``ldam=False`` takes :math:`M_y = M`; then
:math:`\mathcal{L}_i = \mathrm{CE}\big(s\,(z - \mu\,\mathrm{onehot}(y)),\ y\big)`, the margin
held constant (the reference computes it under ``torch.no_grad``). The smaller a sample's gap,
the larger its margin.

The reference code departs from this in two places, which ``reference=True`` reproduces:

- it reads "the target logit" of every sample from the column of the **first** sample's label
  (``rm_obj_dists[:, labels[0]]``), so a sample's margin depends on which sample comes first
  in its batch;
- it takes the strongest wrong class as the largest entry of :math:`z` with the target's entry
  set to 0, i.e. :math:`\max(0, \max_{j \ne y} z_j)`, so that a sample whose wrong logits are
  all negative is measured against 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from palviz.checks import check_bool, check_non_negative, check_positive
from palviz.losses._inputs import ClassWeightedLoss, prepare_inputs
from palviz.losses.imbalance import ClassCounts, Weight, ldam_margins
from palviz.losses.registry import register_loss

__all__ = ["MaxMarginLoss"]


@register_loss(
    "mm_ldam",
    head="cosine",
    source="Kang, Vu, Yoo, ICIP 2021 (arXiv 2206.05380), ihaeyong/Maximum-Margin-LDAM "
    "losses.py HMMLoss(ldam=True)",
)
class MaxMarginLoss(ClassWeightedLoss):
    r"""MM-LDAM: cross entropy at scale ``s`` with a per-sample margin on the target logit
    (see the module for the formula and the reference's departures).

    Args:
        cls_num_list: training-set count of each class, ``[C]``.
        max_m: :math:`M`, > 0 (the README's CIFAR setting: 1.29).
        s: logit scale, > 0 (26 with ``ldam=True``, the README's CIFAR setting).
        gamma: :math:`\gamma \ge 0`, the extra decay of a right sample's margin (1.528).
        ldam: ``True`` (MM-LDAM): :math:`M_y = M - \Delta_y`; ``False`` (MM): :math:`M_y = M`.
        weight: class weights ``[C]`` or ``None``; may be reassigned (DRW).
        reference: reproduce the reference code's reading (first sample's label column,
            wrong classes against 0) instead of the per-sample formula.

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    delta: Tensor

    def __init__(
        self,
        cls_num_list: ClassCounts,
        max_m: float = 1.29,
        s: float = 26.0,
        gamma: float = 1.528,
        ldam: bool = True,
        weight: Weight = None,
        reference: bool = False,
    ) -> None:
        delta = ldam_margins(cls_num_list, 0.5, dtype=torch.float64)  # Delta_j, max 0.5 whatever M
        super().__init__(weight, num_classes=len(delta))
        self.num_classes = len(delta)
        self.max_m = check_positive("max_m", max_m)
        self.s = check_positive("s", s)
        self.gamma = check_non_negative("gamma", gamma)
        self.ldam = check_bool("ldam", ldam)
        self.reference = check_bool("reference", reference)
        self.register_buffer("delta", delta)

    def margins(self, z: Tensor, targets: Tensor) -> Tensor:
        """Each sample's margin :math:`\\mu` ``[N]`` (no gradient)."""
        with torch.no_grad():
            target = F.one_hot(targets, z.shape[1]).bool()
            if self.reference:
                z_y = z[:, targets[0]]  # the first sample's label column, for every sample
                rival = torch.where(target, torch.zeros_like(z), z).amax(1)  # max(0, max z_j)
            else:
                z_y = z.gather(1, targets.unsqueeze(1)).squeeze(1)
                rival = z.masked_fill(target, float("-inf")).amax(1)  # max_{j != y} z_j
            d = z_y - rival
            m = (
                self.max_m - self.delta.to(z)[targets]
                if self.ldam
                else torch.full_like(d, self.max_m)
            )
            right = torch.exp(-d - self.gamma * m) * (d > 0)  # e^{-d - gamma M_y}
            wrong = torch.exp(d - m) * (d < 0)  # e^{d - M_y}
            return right + wrong

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets = prepare_inputs(logits, targets, self.num_classes)
        mu = self.margins(z, targets)
        shifted = z.scatter_add(1, targets.unsqueeze(1), -mu.unsqueeze(1))  # z_y - mu
        return F.cross_entropy(self.s * shifted, targets, weight=self._weight_like(z))
