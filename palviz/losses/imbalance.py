r"""Losses for class imbalance, and PAL's normalised margin loss.

Cross entropy with deferred re-weighting (:class:`CrossEntropyLoss`,
:func:`class_balanced_weights`), focal loss (:class:`FocalLoss`), LDAM (:class:`LDAMLoss`,
:func:`ldam_margins`), ELM (:class:`ELMLoss`), Kobayashi's large-margin softmax CE
(:class:`LMSCELoss`) and PAL's :math:`L_\alpha` (:class:`NormalizedMarginLoss`). See
:mod:`palviz.losses` for the notation and the conventions every loss follows.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from palviz.checks import (
    check_class_counts,
    check_non_negative,
    check_num_classes,
    check_positive,
    check_range,
    check_real,
)
from palviz.losses._inputs import (
    ClassCounts,
    ClassWeightedLoss,
    Weight,
    normalised_class_weights,
    prepare_inputs,
)
from palviz.losses.registry import register_loss

__all__ = [
    "CrossEntropyLoss",
    "ELMLoss",
    "FocalLoss",
    "LDAMLoss",
    "LMSCELoss",
    "NormalizedMarginLoss",
    "class_balanced_weights",
    "elm_without_target_margin",
    "ldam_margins",
]


# ---------------------------------------------------------------------------------------------
# Class weights (at construction and on reassignment) and shared steps
# ---------------------------------------------------------------------------------------------


def _target_mask(z: Tensor, y: Tensor) -> Tensor:
    """``[N, C]`` bool, True at ``(i, y_i)``: the one-hot encoding of the targets."""
    return torch.zeros_like(z, dtype=torch.bool).scatter_(1, y.unsqueeze(1), True)


# ---------------------------------------------------------------------------------------------
# Margins and class weights
# ---------------------------------------------------------------------------------------------


def ldam_margins(
    cls_num_list: ClassCounts, max_m: float = 0.5, *, dtype: torch.dtype = torch.float32
) -> Tensor:
    r"""LDAM's per-class margins :math:`m_j \propto n_j^{-1/4}`, rescaled so that
    :math:`\max_j m_j = ` ``max_m``.

    Source: Cao et al., *Learning Imbalanced Datasets with Label-Distribution-Aware Margin
    Loss*, NeurIPS 2019; https://github.com/kaidic/LDAM-DRW (``losses.py``). Used unchanged by
    ELM.

    Args:
        cls_num_list: training-set count of each class, ``[C]``, all > 0.
        max_m: the margin of the rarest class, > 0.
        dtype: of the result; the margins are computed in float64 and then cast
            (:func:`palviz.theory.ldam_margins` takes them in float64).

    Returns:
        tensor ``[C]`` (float32 by default); the rarest class has the largest margin,
        ``max_m``.
    """
    counts = check_class_counts("cls_num_list", cls_num_list)
    max_m = check_positive("max_m", max_m)
    m = counts**-0.25  # m_j = n_j^{-1/4}
    m = m * (max_m / m.max())  # rescale: max_j m_j = max_m
    return torch.tensor(m, dtype=dtype)


def class_balanced_weights(cls_num_list: ClassCounts, beta: float = 0.9999) -> Tensor:
    r"""Class-balanced weights from the effective number of samples.

    .. math::
        w_j = \frac{1 - \beta}{1 - \beta^{n_j}}, \qquad
        w \leftarrow C \, \frac{w}{\sum_k w_k}

    so the weights sum to :math:`C` and the rarest class gets the largest weight.
    ``beta = 0`` gives all ones.

    Source: Cui et al., *Class-Balanced Loss Based on Effective Number of Samples*, CVPR 2019;
    as used for deferred re-weighting in https://github.com/kaidic/LDAM-DRW (``cifar_train.py``).

    Args:
        cls_num_list: training-set count of each class, ``[C]``, all > 0.
        beta: in ``[0, 1)``; 0.9999 in LDAM-DRW.

    Returns:
        float32 tensor ``[C]``.
    """
    counts = check_class_counts("cls_num_list", cls_num_list)
    beta = check_range("beta", beta, 0.0, 1.0, high_open=True)
    effective_num = 1.0 - np.power(beta, counts)  # 1 - beta^{n_j}
    w = (1.0 - beta) / effective_num  # w_j = (1 - beta) / (1 - beta^{n_j})
    return normalised_class_weights(w)  # sum_j w_j = C


# ---------------------------------------------------------------------------------------------
# Losses for class imbalance
# ---------------------------------------------------------------------------------------------


@register_loss("ce", source="softmax cross entropy; DRW: Cao et al., NeurIPS 2019, Sec. 3.3")
class CrossEntropyLoss(ClassWeightedLoss):
    r"""Softmax cross entropy, with optional class weights (for DRW).

    .. math::
        \mathcal{L} = \frac{\sum_i w_{y_i} \, (-\log p_{i, y_i})}{\sum_i w_{y_i}},
        \qquad p_i = \mathrm{softmax}(z_i)

    (:math:`w \equiv 1` gives the plain mean.)

    Args:
        weight: class weights ``[C]`` or ``None``; may be reassigned after construction.

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, weight: Weight = None) -> None:
        super().__init__(weight, num_classes=None)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets = prepare_inputs(logits, targets)
        # sum_i w_{y_i} (-log p_{i,y_i}) / sum_i w_{y_i}
        return F.cross_entropy(z, targets, weight=self._weight_like(z))


@register_loss("focal", source="Lin et al., ICCV 2017, Eq. 5")
class FocalLoss(ClassWeightedLoss):
    r"""Focal loss, in the form of LDAM-DRW (default) or of the APL code.

    LDAM-DRW form (``detach_modulating=False``), with the per-sample weighted cross entropy
    :math:`\mathrm{ce}_i = w_{y_i} \, \mathrm{CE}(z_i, y_i)`:

    .. math::
        \mathcal{L} = \frac{1}{N} \sum_i \left(1 - e^{-\mathrm{ce}_i}\right)^{\gamma}
        \mathrm{ce}_i

    Without weights :math:`e^{-\mathrm{ce}_i} = p_{i, y_i}`; with weights it is not (this is
    the reference behaviour). Gradients flow through the modulating factor.

    APL form (``detach_modulating=True``):

    .. math::
        \mathcal{L} = \frac{1}{N} \sum_i \mathrm{sg}\!\left[(1 - p_{i, y_i})^{\gamma}\right]
        \mathrm{ce}_i

    where :math:`\mathrm{sg}` stops the gradient and :math:`p_{i, y_i}` is the unweighted
    softmax probability (as the APL code applies its class weights ``alpha`` to
    :math:`\log p_t` only). Without weights both forms have the same value; their gradients
    differ.

    Sources: Lin et al., *Focal Loss for Dense Object Detection*, ICCV 2017;
    https://github.com/kaidic/LDAM-DRW (``losses.py``, gamma = 1 in its CIFAR runs);
    https://github.com/HanxunH/Active-Passive-Losses (``loss.py``, gamma = 0.5).

    Args:
        gamma: focusing parameter, >= 0 (``gamma = 0`` gives weighted CE with a plain mean).
        weight: class weights ``[C]`` or ``None``; may be reassigned after construction.
        detach_modulating: use the APL form.

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(
        self, gamma: float, weight: Weight = None, detach_modulating: bool = False
    ) -> None:
        super().__init__(weight, num_classes=None)
        self.gamma = check_non_negative("gamma", gamma)
        self.detach_modulating = bool(detach_modulating)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets = prepare_inputs(logits, targets)
        # ce_i = w_{y_i} CE(z_i, y_i), per sample
        ce = F.cross_entropy(z, targets, weight=self._weight_like(z), reduction="none")
        if self.detach_modulating:
            # p_{i,y_i} = softmax(z_i)_{y_i}, outside the gradient (APL)
            p = F.log_softmax(z, dim=1).gather(1, targets.unsqueeze(1)).squeeze(1)
            p = p.detach().exp()
        else:
            # p_i = exp(-ce_i) (LDAM-DRW)
            p = torch.exp(-ce)
        # mean_i (1 - p_i)^gamma ce_i
        return ((1.0 - p) ** self.gamma * ce).mean()


class _LDAMMarginLoss(ClassWeightedLoss):
    """Base of LDAM and ELM: LDAM's per-class margins (buffer ``margins``) and a scale ``s``;
    :meth:`_margin_inputs` and :meth:`_scaled_ce` are the steps their ``forward`` shares."""

    margins: Tensor

    def __init__(
        self,
        cls_num_list: ClassCounts,
        max_m: float = 0.5,
        s: float = 30.0,
        weight: Weight = None,
    ) -> None:
        margins = ldam_margins(cls_num_list, max_m)
        super().__init__(weight, num_classes=len(margins))
        self.num_classes = len(margins)
        self.max_m = float(max_m)
        self.s = check_positive("s", s)
        self.register_buffer("margins", margins)

    def _margin_inputs(
        self, logits: Tensor, targets: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(z, targets, m, target)``: the checked inputs, the margins on the logits' device
        and dtype, and the boolean target mask ``[N, C]``."""
        z, targets = prepare_inputs(logits, targets, self.num_classes)
        m = self.margins.to(device=z.device, dtype=z.dtype)
        return z, targets, m, _target_mask(z, targets)

    def _scaled_ce(self, z: Tensor, targets: Tensor) -> Tensor:
        """``CE(s z', y; w)``, PyTorch's weighted mean, of the shifted logits ``z'``."""
        return F.cross_entropy(self.s * z, targets, weight=self._weight_like(z))


#: The head of the LDAM family (LDAM, ELM, ELM w/o Delta_y): cosine logits, which the loss
#: scales by s (its class counts, for the margins, it takes as ``cls_num_list``).
_LDAM_FAMILY = {"head": "cosine"}


@register_loss("ldam", **_LDAM_FAMILY, source="Cao et al., NeurIPS 2019, Eq. 13")
class LDAMLoss(_LDAMMarginLoss):
    r"""Label-distribution-aware margin loss.

    .. math::
        m_j = \frac{M}{n_j^{1/4}} \text{ with } \max_j m_j = M, \qquad
        \mathcal{L}_i = -\log \frac{e^{s (z_{y} - m_{y})}}
        {e^{s (z_{y} - m_{y})} + \sum_{j \ne y} e^{s z_j}}

    i.e. :math:`\mathrm{CE}(s \, (z - m_y \, \mathrm{onehot}(y)), y)`, reduced by the weighted
    mean :math:`\sum_i w_{y_i} \mathcal{L}_i / \sum_i w_{y_i}`. The rarest class gets the
    largest margin. In the reference CIFAR runs ``z`` are cosine logits of a normalised head.

    Source: Cao et al., NeurIPS 2019; https://github.com/kaidic/LDAM-DRW (``losses.py``).

    Args:
        cls_num_list: training-set count of each class, ``[C]``.
        max_m: the largest margin :math:`M`, > 0 (default 0.5).
        s: logit scale, > 0 (default 30).
        weight: class weights ``[C]`` or ``None``; may be reassigned (DRW).

    Attributes:
        margins: buffer ``[C]``, :math:`m_j`.

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    # __init__(cls_num_list, max_m=0.5, s=30.0, weight=None) is the base class's.

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets, m, target = self._margin_inputs(logits, targets)
        # z' = z - m_y onehot(y)
        return self._scaled_ce(torch.where(target, z - m[targets].unsqueeze(1), z), targets)


@register_loss("elm", **_LDAM_FAMILY, source="Kato & Hotta, arXiv 2306.09132, Eq. 6")
class ELMLoss(_LDAMMarginLoss):
    r"""Enlarged large margin loss (ELM), as published.

    With LDAM's margins :math:`m_j` and :math:`c^* = \arg\max_{j \ne y} z_j` (the strongest
    wrong class), the target logit becomes :math:`z'_y = z_y - m_y + \lambda m_{c^*}`
    (other logits unchanged) and

    .. math::
        \mathcal{L}_i = -\log \frac{e^{s (z_y - m_y + \lambda m_{c^*})}}
        {e^{s (z_y - m_y + \lambda m_{c^*})} + \sum_{j \ne y} e^{s z_j}}
        = \mathrm{softplus}\big(s (z_{c^*} - z_y) + s m_y - s \lambda m_{c^*} + \hat\rho\big),
        \quad \hat\rho = \log \sum_{c \ne y} e^{s (z_c - z_{c^*})}

    reduced by the weighted mean :math:`\sum_i w_{y_i} \mathcal{L}_i / \sum_i w_{y_i}`.
    The scale ``s`` multiplies *every* logit (the paper's Eq. 7 leaves the denominator's
    :math:`e^{z_j}` unscaled; the official code scales all logits).

    **Effective margin.** The target must beat :math:`z_{c^*}` by
    :math:`m_y - \lambda m_{c^*}`, which is *smaller* than LDAM's :math:`m_y` whenever
    :math:`\lambda > 0` (CIFAR-10-LT, :math:`\rho = 100`, rarest true class against the most
    frequent wrong class: 0.342 instead of 0.5; the reverse pair: -0.342). ``lam`` may be
    negative, which makes the margin larger than LDAM's.

    ``use_target_margin=False`` is the paper's "ELM w/o :math:`\Delta_y`" (drop :math:`-m_y`;
    the effective margin is then :math:`-\lambda m_{c^*} \le 0`).

    Sources: Kato & Hotta, arXiv 2306.09132, Eq. 6-7; https://github.com/usagisukisuki/ELMloss
    (``loss.py``). Differences from that code: it reads ``self.lambda`` (a syntax error) and
    builds CUDA-only tensors; here ``lam`` is used as intended and every tensor follows the
    logits' device. :math:`c^*` is taken over the raw logits with the target masked out, so a
    target that is itself the largest logit is handled correctly.

    Args:
        cls_num_list, max_m, s, weight: as for :class:`LDAMLoss` (defaults 0.5, 30, ``None``).
        lam: weight :math:`\lambda` of the wrong-class margin (default 1.0).
        use_target_margin: keep the :math:`-m_y` term (``False``: "ELM w/o Delta_y").

    The buffer ``margins`` and the shapes are those of :class:`LDAMLoss`.
    """

    def __init__(
        self,
        cls_num_list: ClassCounts,
        max_m: float = 0.5,
        s: float = 30.0,
        lam: float = 1.0,
        weight: Weight = None,
        use_target_margin: bool = True,
    ) -> None:
        super().__init__(cls_num_list, max_m, s, weight)
        self.lam = check_real("lam", lam)
        self.use_target_margin = bool(use_target_margin)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets, m, target = self._margin_inputs(logits, targets)
        # c* = argmax_{j != y} z_j (target masked out)
        c_star = z.detach().masked_fill(target, float("-inf")).argmax(dim=1)
        # shift of the target logit: -m_y + lam m_{c*}
        shift = self.lam * m[c_star]
        if self.use_target_margin:
            shift = shift - m[targets]
        # z'_y = z_y - m_y + lam m_{c*}; z'_j = z_j for j != y
        return self._scaled_ce(torch.where(target, z + shift.unsqueeze(1), z), targets)


@register_loss("lmsce", source="Kobayashi, BMVC 2019 (large-margin softmax CE)")
class LMSCELoss(ClassWeightedLoss):
    r"""Large-margin softmax cross entropy of Kobayashi (the ELM paper's "LMSCE [18]").

    With :math:`q_i = \mathrm{softmax}(z_{i, j \ne y_i})`, the softmax over the non-target
    logits only (the target excluded):

    .. math::
        \mathcal{L} = \mathrm{CE}_w(z, y) + \lambda \, \frac{1}{N} \sum_i \frac{1}{2}
        \sum_{j \ne y_i} \left(q_{ij} - \frac{1}{C - 1}\right) \log q_{ij}

    :math:`\mathrm{CE}_w` is the (weighted-mean) cross entropy; the regulariser, which pushes
    the non-target probabilities towards uniform, takes the plain mean. It is 0 for
    :math:`C = 2`.

    Not to be confused with the ELM paper's Eq. 3 / Fig. 2 "LMSCE", which is plain CE read as
    a margin (the bias margin :math:`\hat\rho`).

    Source: Kobayashi, *Large Margin In Softmax Cross-Entropy Loss*, BMVC 2019;
    https://github.com/tk1980/LargeMarginInSoftmax (``models/modules/myloss.py``).

    Args:
        lam: regulariser weight :math:`\lambda`, >= 0 (default 0.3).
        weight: class weights ``[C]`` or ``None`` for the CE term; may be reassigned (DRW).

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, lam: float = 0.3, weight: Weight = None) -> None:
        super().__init__(weight, num_classes=None)
        self.lam = check_non_negative("lam", lam)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets = prepare_inputs(logits, targets)
        c = z.shape[1]
        target = _target_mask(z, targets)
        # CE_w(z, y), weighted mean
        ce = F.cross_entropy(z, targets, weight=self._weight_like(z))
        # log q_ij = log softmax over j != y (target masked out, then set to 0 so that it
        # drops out of the sum without an inf * 0 in the gradient)
        log_q = F.log_softmax(z.masked_fill(target, float("-inf")), dim=1)
        log_q = log_q.masked_fill(target, 0.0)
        q = log_q.exp().masked_fill(target, 0.0)
        # 1/2 sum_{j != y} (q_ij - 1/(C-1)) log q_ij
        reg = 0.5 * ((q - 1.0 / (c - 1)) * log_q).masked_fill(target, 0.0).sum(dim=1)
        # CE + lam mean_i reg_i
        return ce + self.lam * reg.mean()


# ---------------------------------------------------------------------------------------------
# PAL: normalised softmax with per-class margins
# ---------------------------------------------------------------------------------------------


@register_loss(
    "normalized_margin",
    head="cosine",
    source="Zhou et al., ICML 2022 (PAL), Eq. 2",
)
class NormalizedMarginLoss(nn.Module):
    r"""PAL's :math:`L_\alpha` (Eq. 2) on cosine logits :math:`\cos_{ij} = w_j^\top z_i`.

    Features :math:`z_i` and prototypes :math:`w_j` lie on the unit sphere (normalised by the
    head, not here); with per-class margins :math:`\alpha_y` and scale :math:`s`:

    .. math::
        \mathcal{L}_i = -\log \frac{e^{s (\cos_{i y} - \alpha_y)}}
        {e^{s (\cos_{i y} - \alpha_y)} + \sum_{j \ne y} e^{s \cos_{ij}}}

    averaged over the batch. With :math:`\alpha = 0` on a balanced set its minimiser puts the
    prototypes on a regular simplex, :math:`w_i^\top w_j = -1/(k-1)` (PAL Lemma 3.1 /
    Theorem 3.2), which is how PAL generates its anchored prototypes (with a small ``s``).

    Source: Zhou et al., *Prototype-Anchored Learning for Learning with Imperfect
    Annotations*, ICML 2022 (arXiv 2206.11602), Eq. 2.

    Args:
        num_classes: :math:`k`, >= 2.
        s: scale, > 0 (default 10, PAL's value for FNPAL with the APL losses; prototype
            generation works best with s = 1-2).
        alpha: ``None`` (no margins), one number for every class, or per-class margins
            ``[num_classes]``.

    Attributes:
        alpha: buffer ``[num_classes]``.

    Shapes: ``cosines [N, num_classes]``, ``targets [N]`` (long) -> scalar.
    """

    alpha: Tensor

    def __init__(
        self,
        num_classes: int,
        s: float = 10.0,
        alpha: float | Sequence[float] | np.ndarray | Tensor | None = None,
    ) -> None:
        super().__init__()
        self.num_classes = check_num_classes(num_classes)
        self.s = check_positive("s", s)
        if alpha is None:
            margins = torch.zeros(self.num_classes)
        elif isinstance(alpha, numbers.Real) and not isinstance(alpha, bool):
            margins = torch.full((self.num_classes,), check_real("alpha", alpha))
        else:
            try:
                margins = torch.as_tensor(alpha).detach().to("cpu", torch.float32).clone()
            except (TypeError, ValueError, RuntimeError):
                raise TypeError(
                    f"alpha must be None, a number or one margin per class, got {alpha!r}"
                ) from None
            if margins.shape != (self.num_classes,):
                raise ValueError(
                    f"alpha must have one margin per class ({self.num_classes}), "
                    f"got shape {tuple(margins.shape)}"
                )
            if not bool(torch.isfinite(margins).all()):
                raise ValueError(f"alpha must be finite, got {margins.tolist()}")
        self.register_buffer("alpha", margins.float())

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        cos, targets = prepare_inputs(logits, targets, self.num_classes)
        alpha = self.alpha.to(device=cos.device, dtype=cos.dtype)
        target = _target_mask(cos, targets)
        # cos_y - alpha_y at the target, cos_j elsewhere
        cos = torch.where(target, cos - alpha[targets].unsqueeze(1), cos)
        # -log e^{s(cos_y - alpha_y)} / (e^{s(cos_y - alpha_y)} + sum_{j != y} e^{s cos_j})
        return F.cross_entropy(self.s * cos, targets)


@register_loss(
    "elm_wo_delta_y",
    **_LDAM_FAMILY,
    source="Kato & Hotta, arXiv 2306.09132, Table 1 (ELM w/o Delta_y)",
)
def elm_without_target_margin(
    cls_num_list: ClassCounts,
    max_m: float = 0.5,
    s: float = 30.0,
    lam: float = 1.0,
    weight: Weight = None,
) -> ELMLoss:
    """ELM w/o Delta_y: :class:`ELMLoss` without the ``-m_y`` term (``use_target_margin=False``)."""
    return ELMLoss(cls_num_list, max_m=max_m, s=s, lam=lam, weight=weight, use_target_margin=False)
