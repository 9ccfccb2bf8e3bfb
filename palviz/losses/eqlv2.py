r"""Equalization loss v2 in palviz's classification form (Tan et al., CVPR 2021).

See :mod:`palviz.losses` for the notation and the conventions every loss follows.

Tan, Lu, Zhang, Yin, Li, *Equalization Loss v2: A New Gradient Balance Approach for
Long-tailed Object Detection*, CVPR 2021 (arXiv 2012.08548). EQL v2 treats every class as an
independent sigmoid task and re-weights each task's positive and negative gradients by the
ratio of the positive to the negative gradient it has accumulated so far: a rare class, whose
accumulated negatives dwarf its positives, gets its negative gradients damped and its positive
ones boosted.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from palviz.checks import check_non_negative, check_num_classes, check_positive, check_real
from palviz.losses._inputs import prepare_inputs
from palviz.losses.registry import register_loss

__all__ = ["EQLv2Loss", "eqlv2_mapping"]

# The reference's initial ratio pos/neg: high, so that f(ratio) = 1 and every weight starts at 1.
_INITIAL_RATIO = 100.0
# The reference's guard of the ratio's denominator.
_RATIO_EPS = 1e-10


def eqlv2_mapping(x: Tensor, gamma: float = 12.0, mu: float = 0.8) -> Tensor:
    r"""EQL v2's mapping :math:`f(x) = 1 / (1 + e^{-\gamma (x - \mu)})` of a gradient ratio."""
    return torch.sigmoid(gamma * (x - mu))


@register_loss(
    "eqlv2",
    source="Tan et al., CVPR 2021 (EQL v2 gradient-guided re-weighting), palviz's "
    "classification form",
)
class EQLv2Loss(nn.Module):
    r"""Sigmoid cross entropy with EQL v2's gradient-guided weights of each class's positive
    and negative terms.

    With :math:`t_{ij} = [j = y_i]`, :math:`p_{ij} = \sigma(z_{ij})` and the accumulated
    gradient ratio :math:`g_j` of class :math:`j` (below), the weights are
    :math:`q_j = f(g_j)` for the negatives and :math:`r_j = 1 + \alpha (1 - q_j)` for the
    positives, with :math:`f(x) = 1/(1 + e^{-\gamma(x - \mu)})`, and

    .. math::
        \mathcal{L} = \frac{1}{N} \sum_i \sum_j w_{ij}\, \mathrm{BCE}(z_{ij}, t_{ij}),
        \qquad w_{ij} = r_j t_{ij} + q_j (1 - t_{ij}).

    When the loss is back-propagated, the weighted gradient magnitudes
    :math:`|\partial \mathrm{BCE} / \partial z_{ij}| = |p_{ij} - t_{ij}|` of the batch are
    added to the running sums :math:`P_j \mathrel{+}= \sum_i w_{ij} t_{ij} |p_{ij} - t_{ij}|`
    and :math:`Q_j \mathrel{+}= \sum_i w_{ij} (1 - t_{ij}) |p_{ij} - t_{ij}|`, and
    :math:`g_j = P_j / (Q_j + 10^{-10})`; before the first call :math:`g_j = 100`, so every
    weight starts at (almost exactly) 1. A batch is weighted by the sums of the batches
    *before* it. Predictions are :math:`\arg\max_j z_j`.

    palviz's form: the reference is a detection loss over ``num_classes + 1`` sigmoid columns,
    the last one background, whose weight is fixed at 1 and whose gradients are not
    accumulated; here there is no background: the C columns are the C classes, every one
    re-weighted and accumulated (docs/departures.md). The running sums live in buffers
    (``pos_grad``, ``neg_grad``, ``pos_neg``) and grow when ``backward`` runs through the
    loss: the reference adds them in ``forward``, which its training always follows with one
    backward pass, so a training step is the same; here a call without a backward pass (an
    evaluation) leaves them alone. The reference's ``all_reduce`` across processes is a sum
    over one process here.

    Source: Tan et al., CVPR 2021; https://github.com/tztztztztz/eqlv2
    (``mmdet/models/losses/eqlv2.py``, defaults ``gamma=12, mu=0.8, alpha=4``).

    Args:
        num_classes: C, the number of classes (logit columns).
        gamma: the mapping's steepness :math:`\gamma`, > 0 (default 12).
        mu: the mapping's centre :math:`\mu` (default 0.8).
        alpha: the positive weights' boost :math:`\alpha`, >= 0 (default 4).

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    pos_grad: Tensor
    neg_grad: Tensor
    pos_neg: Tensor

    def __init__(
        self, num_classes: int, gamma: float = 12.0, mu: float = 0.8, alpha: float = 4.0
    ) -> None:
        super().__init__()
        self.num_classes = check_num_classes(num_classes)
        self.gamma = check_positive("gamma", gamma)
        self.mu = check_real("mu", mu)
        self.alpha = check_non_negative("alpha", alpha)
        self.register_buffer("pos_grad", torch.zeros(self.num_classes))
        self.register_buffer("neg_grad", torch.zeros(self.num_classes))
        self.register_buffer("pos_neg", torch.full((self.num_classes,), _INITIAL_RATIO))

    def weights(self) -> tuple[Tensor, Tensor]:
        """``(r, q)``: the positive and negative weights ``[C]`` the next batch gets."""
        q = eqlv2_mapping(self.pos_neg, self.gamma, self.mu)  # q_j = f(g_j)
        return 1.0 + self.alpha * (1.0 - q), q  # r_j = 1 + alpha (1 - q_j)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets = prepare_inputs(logits, targets, self.num_classes)
        t = F.one_hot(targets, self.num_classes).to(z.dtype)
        r, q = (v.to(device=z.device, dtype=z.dtype) for v in self.weights())
        w = r * t + q * (1.0 - t)  # w_ij = r_j t_ij + q_j (1 - t_ij)
        bce = F.binary_cross_entropy_with_logits(z, t, reduction="none")
        loss = (w * bce).sum() / z.shape[0]  # (1/N) sum_ij w_ij BCE(z_ij, t_ij)
        if loss.requires_grad:
            loss = _AccumulateOnBackward.apply(loss, self, z.detach(), t, w.detach())
        return loss

    @torch.no_grad()
    def accumulate(self, z: Tensor, t: Tensor, w: Tensor) -> None:
        """Add a batch's weighted gradient magnitudes to the running sums: logits ``z`` and
        one-hot targets ``t`` ``[N, C]``, the weights ``w`` ``[N, C]`` it was weighted by."""
        grad = (torch.sigmoid(z) - t).abs()  # |dBCE/dz| = |p - t|
        self.pos_grad += (grad * t * w).sum(0).to(self.pos_grad)
        self.neg_grad += (grad * (1.0 - t) * w).sum(0).to(self.neg_grad)
        self.pos_neg.copy_(self.pos_grad / (self.neg_grad + _RATIO_EPS))  # g_j = P_j / Q_j

    def extra_repr(self) -> str:
        return (
            f"num_classes={self.num_classes}, gamma={self.gamma}, mu={self.mu}, alpha={self.alpha}"
        )


class _AccumulateOnBackward(torch.autograd.Function):
    """The identity on the loss value, whose backward adds the batch to the loss's sums."""

    @staticmethod
    def forward(ctx, loss: Tensor, owner: EQLv2Loss, z: Tensor, t: Tensor, w: Tensor) -> Tensor:
        ctx.owner, ctx.batch = owner, (z, t, w)
        return loss.clone()

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        ctx.owner.accumulate(*ctx.batch)
        return grad, None, None, None, None
