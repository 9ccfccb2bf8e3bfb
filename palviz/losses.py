r"""Losses of the two papers and of the baselines they compare against.

The papers
----------
* **PAL**: *Prototype-Anchored Learning for Learning with Imperfect Annotations*, Zhou, Liu,
  Zhai, Jiang, Gao, Ji, ICML 2022 (arXiv 2206.11602). Its normalised-softmax loss with
  per-class margins, :math:`L_\alpha` (Eq. 2), is :class:`NormalizedMarginLoss`; with
  :math:`\alpha = 0` it generates the anchored prototypes.
* **ELM**: *Enlarged Large Margin Loss for Imbalanced Classification*, Kato & Hotta
  (arXiv 2306.09132): :class:`ELMLoss`, built on LDAM.

The baselines they compare against
----------------------------------
* class imbalance: cross entropy with deferred re-weighting (:class:`CrossEntropyLoss`,
  :func:`class_balanced_weights`), focal loss (:class:`FocalLoss`), LDAM
  (:class:`LDAMLoss`), Kobayashi's large-margin softmax CE (:class:`LMSCELoss`);
* label noise, the Active Passive Losses family (Ma et al., ICML 2020): :class:`MAELoss`,
  :class:`RCELoss`, :class:`GCELoss`, :class:`SCELoss`, :class:`NCELoss`, :class:`NFLLoss`
  and the pairs :class:`NCEandRCE`, :class:`NFLandRCE`, :class:`NCEandMAE`.

Notation
--------
Logits :math:`z \in \mathbb{R}^{N \times C}` (``[batch_size, num_classes]``), targets
:math:`y \in \{0, \dots, C-1\}^N` (``[batch_size]``, ``torch.long``),
:math:`p = \mathrm{softmax}(z)`, class counts :math:`n_j`, class weights :math:`w_j`,
:math:`\mathrm{CE}(z, y) = -\log p_y = \log \sum_j e^{z_j} - z_y`.

Every loss takes ``(logits, targets)`` and returns a scalar, the batch mean *as its reference
implementation reduces it*:

* losses built on ``F.cross_entropy(..., weight=w)`` (CE, LDAM, ELM, the CE part of LMSCE)
  return PyTorch's weighted mean :math:`\sum_i w_{y_i} \ell_i / \sum_i w_{y_i}`;
* focal loss returns the plain mean of its (weighted) per-sample terms;
* the noise-robust losses and the LMSCE regulariser return the plain mean.

Practicalities
--------------
* ``weight`` is a plain attribute that may be reassigned at any time, which is how deferred
  re-weighting (DRW) switches on: ``loss.weight = class_balanced_weights(counts)``.
* Tensors derived at construction (LDAM/ELM margins, PAL margins) are registered buffers; they
  and ``weight`` are moved to the logits' device in ``forward``, so CPU and CUDA both work.
* Losses are computed in at least float32: float16/bfloat16 logits (autocast) are upcast,
  float64 logits stay float64 (for exact numerical checks in the notebooks).
* Arguments are checked at construction, inputs at ``forward``; errors name the argument, the
  value received and what is allowed (``max_m must be > 0, got -0.5``).
* :func:`make_loss` builds any loss by name; :data:`LOSS_NAMES` lists the names.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "LOSS_NAMES",
    "CrossEntropyLoss",
    "ELMLoss",
    "FocalLoss",
    "GCELoss",
    "LDAMLoss",
    "LMSCELoss",
    "MAELoss",
    "NCELoss",
    "NCEandMAE",
    "NCEandRCE",
    "NFLLoss",
    "NFLandRCE",
    "NormalizedMarginLoss",
    "RCELoss",
    "SCELoss",
    "class_balanced_weights",
    "ldam_margins",
    "make_loss",
]

ClassCounts = Sequence[int] | np.ndarray | Tensor
Weight = Sequence[float] | np.ndarray | Tensor | None

# Clamps of the Active Passive Losses reference code (Ma et al. 2020).
_P_MIN = 1e-7
_ONE_HOT_MIN = 1e-4


# ---------------------------------------------------------------------------------------------
# Argument checks (at construction)
# ---------------------------------------------------------------------------------------------


def _real(name: str, value: Any) -> float:
    """``value`` as a finite float, or a TypeError/ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def _positive(name: str, value: Any) -> float:
    value = _real(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return value


def _non_negative(name: str, value: Any) -> float:
    value = _real(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def _num_classes(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"num_classes must be an integer >= 2, got {value!r}")
    if value < 2:
        raise ValueError(f"num_classes must be an integer >= 2, got {value!r}")
    return int(value)


def _class_counts(cls_num_list: Any) -> np.ndarray:
    """Class counts as a float64 array of at least 2 positive entries."""
    if isinstance(cls_num_list, Tensor):
        shown = cls_num_list.tolist()
        cls_num_list = cls_num_list.detach().cpu().numpy()
    else:
        shown = list(cls_num_list) if isinstance(cls_num_list, Sequence) else cls_num_list
    try:
        counts = np.asarray(cls_num_list, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"cls_num_list must be a sequence of class counts (numbers > 0), got {shown!r}"
        ) from None
    if counts.ndim != 1 or counts.size < 2:
        raise ValueError(
            f"cls_num_list must list the training-set count of each of at least 2 classes, "
            f"got {shown!r}"
        )
    if not np.all(np.isfinite(counts)) or np.any(counts <= 0):
        raise ValueError(f"cls_num_list must hold counts > 0 for every class, got {shown!r}")
    return counts


def _as_weight(weight: Weight, num_classes: int | None) -> Tensor | None:
    """Class weights as a 1-D float32 tensor (on the device they came on), or ``None``."""
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


# ---------------------------------------------------------------------------------------------
# Input checks and shared steps (at forward)
# ---------------------------------------------------------------------------------------------


def _prepare(
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


def _target_mask(z: Tensor, y: Tensor) -> Tensor:
    """``[N, C]`` bool, True at ``(i, y_i)``: the one-hot encoding of the targets."""
    return torch.zeros_like(z, dtype=torch.bool).scatter_(1, y.unsqueeze(1), True)


class _WeightedLoss(nn.Module):
    """Base of the losses with optional class weights ``w`` (``[C]``), reassignable (DRW)."""

    def __init__(self, weight: Weight, num_classes: int | None) -> None:
        super().__init__()
        self._weight_classes = num_classes
        self.weight = weight

    @property
    def weight(self) -> Tensor | None:
        """Class weights ``[C]`` (float32) or ``None``; assign a new value to re-weight (DRW)."""
        return self._weight

    @weight.setter
    def weight(self, value: Weight) -> None:
        self._weight = _as_weight(value, self._weight_classes)

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


# ---------------------------------------------------------------------------------------------
# Margins and class weights
# ---------------------------------------------------------------------------------------------


def ldam_margins(cls_num_list: ClassCounts, max_m: float = 0.5) -> Tensor:
    r"""LDAM's per-class margins :math:`m_j \propto n_j^{-1/4}`, rescaled so that
    :math:`\max_j m_j = ` ``max_m``.

    Source: Cao et al., *Learning Imbalanced Datasets with Label-Distribution-Aware Margin
    Loss*, NeurIPS 2019; https://github.com/kaidic/LDAM-DRW (``losses.py``). Used unchanged by
    ELM.

    Args:
        cls_num_list: training-set count of each class, ``[C]``, all > 0.
        max_m: the margin of the rarest class, > 0.

    Returns:
        float32 tensor ``[C]``; the rarest class has the largest margin, ``max_m``.
    """
    counts = _class_counts(cls_num_list)
    max_m = _positive("max_m", max_m)
    m = counts**-0.25  # m_j = n_j^{-1/4}
    m = m * (max_m / m.max())  # rescale: max_j m_j = max_m
    return torch.tensor(m, dtype=torch.float32)


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
    counts = _class_counts(cls_num_list)
    beta = _real("beta", beta)
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"beta must be in [0, 1), got {beta!r}")
    effective_num = 1.0 - np.power(beta, counts)  # 1 - beta^{n_j}
    w = (1.0 - beta) / effective_num  # w_j = (1 - beta) / (1 - beta^{n_j})
    w = w / w.sum() * len(counts)  # normalise: sum_j w_j = C
    return torch.tensor(w, dtype=torch.float32)


# ---------------------------------------------------------------------------------------------
# Losses for class imbalance
# ---------------------------------------------------------------------------------------------


class CrossEntropyLoss(_WeightedLoss):
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
        z, targets = _prepare(logits, targets)
        # sum_i w_{y_i} (-log p_{i,y_i}) / sum_i w_{y_i}
        return F.cross_entropy(z, targets, weight=self._weight_like(z))


class FocalLoss(_WeightedLoss):
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
        self.gamma = _non_negative("gamma", gamma)
        self.detach_modulating = bool(detach_modulating)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets = _prepare(logits, targets)
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


class LDAMLoss(_WeightedLoss):
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
        self.s = _positive("s", s)
        self.register_buffer("margins", margins)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets = _prepare(logits, targets, self.num_classes)
        m = self.margins.to(device=z.device, dtype=z.dtype)
        target = _target_mask(z, targets)
        # z' = z - m_y onehot(y)
        z = torch.where(target, z - m[targets].unsqueeze(1), z)
        # CE(s z', y; w), weighted mean
        return F.cross_entropy(self.s * z, targets, weight=self._weight_like(z))


class ELMLoss(_WeightedLoss):
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
        cls_num_list: training-set count of each class, ``[C]``.
        max_m: the largest margin, > 0 (default 0.5).
        s: logit scale, > 0 (default 30).
        lam: weight :math:`\lambda` of the wrong-class margin (default 1.0).
        weight: class weights ``[C]`` or ``None``; may be reassigned (DRW).
        use_target_margin: keep the :math:`-m_y` term (``False``: "ELM w/o Delta_y").

    Attributes:
        margins: buffer ``[C]``, :math:`m_j` (the same as :class:`LDAMLoss`).

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    margins: Tensor

    def __init__(
        self,
        cls_num_list: ClassCounts,
        max_m: float = 0.5,
        s: float = 30.0,
        lam: float = 1.0,
        weight: Weight = None,
        use_target_margin: bool = True,
    ) -> None:
        margins = ldam_margins(cls_num_list, max_m)
        super().__init__(weight, num_classes=len(margins))
        self.num_classes = len(margins)
        self.max_m = float(max_m)
        self.s = _positive("s", s)
        self.lam = _real("lam", lam)
        self.use_target_margin = bool(use_target_margin)
        self.register_buffer("margins", margins)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets = _prepare(logits, targets, self.num_classes)
        m = self.margins.to(device=z.device, dtype=z.dtype)
        target = _target_mask(z, targets)
        # c* = argmax_{j != y} z_j (target masked out)
        c_star = z.detach().masked_fill(target, float("-inf")).argmax(dim=1)
        # shift of the target logit: -m_y + lam m_{c*}
        shift = self.lam * m[c_star]
        if self.use_target_margin:
            shift = shift - m[targets]
        # z'_y = z_y - m_y + lam m_{c*}; z'_j = z_j for j != y
        z = torch.where(target, z + shift.unsqueeze(1), z)
        # CE(s z', y; w), weighted mean
        return F.cross_entropy(self.s * z, targets, weight=self._weight_like(z))


class LMSCELoss(_WeightedLoss):
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
        self.lam = _non_negative("lam", lam)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        z, targets = _prepare(logits, targets)
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
        self.num_classes = _num_classes(num_classes)
        self.s = _positive("s", s)
        if alpha is None:
            margins = torch.zeros(self.num_classes)
        elif isinstance(alpha, numbers.Real) and not isinstance(alpha, bool):
            margins = torch.full((self.num_classes,), _real("alpha", alpha))
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
        cos, targets = _prepare(logits, targets, self.num_classes)
        alpha = self.alpha.to(device=cos.device, dtype=cos.dtype)
        target = _target_mask(cos, targets)
        # cos_y - alpha_y at the target, cos_j elsewhere
        cos = torch.where(target, cos - alpha[targets].unsqueeze(1), cos)
        # -log e^{s(cos_y - alpha_y)} / (e^{s(cos_y - alpha_y)} + sum_{j != y} e^{s cos_j})
        return F.cross_entropy(self.s * cos, targets)


# ---------------------------------------------------------------------------------------------
# Losses for label noise (Active Passive Losses)
# ---------------------------------------------------------------------------------------------


class _NoiseLoss(nn.Module):
    """Base of the APL losses: a fixed ``num_classes`` and a plain batch mean.

    ``forward`` checks the inputs once and calls ``_loss``, which the pairs reuse.
    """

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.num_classes = _num_classes(num_classes)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return self._loss(*_prepare(logits, targets, self.num_classes))

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError


class MAELoss(_NoiseLoss):
    r"""Mean absolute error, reduced form (an APL *passive* loss).

    .. math::
        \mathcal{L} = \mathrm{scale} \cdot \frac{1}{N} \sum_i (1 - p_{i, y_i})

    (:math:`\sum_k |p_k - \mathrm{onehot}_k| = 2 (1 - p_y)`; the reference drops the 2; no
    clamp.)

    Source: Ghosh et al., AAAI 2017; Ma et al., *Normalized Loss Functions for Deep Learning
    with Noisy Labels*, ICML 2020; https://github.com/HanxunH/Active-Passive-Losses
    (``loss.py``, ``MeanAbsoluteError``).

    Args:
        num_classes: C, >= 2.
        scale: >= 0 (default 1; the ``beta`` of NCE+MAE).

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, num_classes: int, scale: float = 1.0) -> None:
        super().__init__(num_classes)
        self.scale = _non_negative("scale", scale)

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # p_y = softmax(z)_y
        p_y = F.softmax(z, dim=1).gather(1, y.unsqueeze(1)).squeeze(1)
        # scale * mean_i (1 - p_y)
        return self.scale * (1.0 - p_y).mean()


class RCELoss(_NoiseLoss):
    r"""Reverse cross entropy (an APL *passive* loss).

    .. math::
        \mathcal{L} = \mathrm{scale} \cdot \frac{1}{N} \sum_i \left(-\sum_k \bar p_{ik}
        \log \mathrm{clamp}(\mathrm{onehot}(y_i)_k, 10^{-4}, 1)\right)
        = \mathrm{scale} \cdot \frac{-\log 10^{-4}}{N} \sum_i \sum_{k \ne y_i} \bar p_{ik}

    with :math:`\bar p = \mathrm{clamp}(p, 10^{-7}, 1)` as in the reference.

    Source: Wang et al., *Symmetric Cross Entropy for Robust Learning with Noisy Labels*, ICCV
    2019; https://github.com/HanxunH/Active-Passive-Losses (``ReverseCrossEntropy``).

    Args:
        num_classes: C, >= 2.
        scale: >= 0 (default 1; the ``beta`` of NCE+RCE and NFL+RCE).

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, num_classes: int, scale: float = 1.0) -> None:
        super().__init__(num_classes)
        self.scale = _non_negative("scale", scale)

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # p = clamp(softmax(z), 1e-7, 1)
        p = F.softmax(z, dim=1).clamp(min=_P_MIN, max=1.0)
        # log clamp(onehot(y), 1e-4, 1): 0 at the target, log 1e-4 elsewhere
        log_label = torch.log(F.one_hot(y, self.num_classes).to(z.dtype).clamp(_ONE_HOT_MIN))
        # scale * mean_i (-sum_k p_ik log onehot_ik)
        return self.scale * (-(p * log_label).sum(dim=1)).mean()


class GCELoss(_NoiseLoss):
    r"""Generalized cross entropy.

    .. math::
        \mathcal{L} = \frac{1}{N} \sum_i \frac{1 - \bar p_{i, y_i}^{\,q}}{q},
        \qquad \bar p = \mathrm{clamp}(p, 10^{-7}, 1)

    :math:`q \to 0` recovers CE, :math:`q = 1` is MAE (reduced form).

    Source: Zhang & Sabuncu, *Generalized Cross Entropy Loss for Training Deep Neural Networks
    with Noisy Labels*, NeurIPS 2018; https://github.com/HanxunH/Active-Passive-Losses
    (``GeneralizedCrossEntropy``).

    Args:
        num_classes: C, >= 2.
        q: in ``(0, 1]`` (default 0.7).

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, num_classes: int, q: float = 0.7) -> None:
        super().__init__(num_classes)
        q = _real("q", q)
        if not 0.0 < q <= 1.0:
            raise ValueError(f"q must be in (0, 1], got {q!r}")
        self.q = q

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # p_y = clamp(softmax(z), 1e-7, 1)_y
        p = F.softmax(z, dim=1).clamp(min=_P_MIN, max=1.0)
        p_y = p.gather(1, y.unsqueeze(1)).squeeze(1)
        # mean_i (1 - p_y^q) / q
        return ((1.0 - p_y**self.q) / self.q).mean()


class SCELoss(_NoiseLoss):
    r"""Symmetric cross entropy.

    .. math::
        \mathcal{L} = \alpha \, \frac{1}{N} \sum_i (-\log p_{i, y_i})
        + \beta \, \mathrm{RCE}

    with RCE as in :class:`RCELoss` (scale 1).

    Source: Wang et al., ICCV 2019; https://github.com/HanxunH/Active-Passive-Losses
    (``SCELoss``). Reference settings (alpha, beta): MNIST (0.01, 1), CIFAR-10 (0.1, 1),
    CIFAR-100 (6, 0.1).

    Args:
        num_classes: C, >= 2.
        alpha: weight of CE, >= 0.
        beta: weight of RCE, >= 0.

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, num_classes: int, alpha: float, beta: float) -> None:
        super().__init__(num_classes)
        self.alpha = _non_negative("alpha", alpha)
        self.beta = _non_negative("beta", beta)
        self.rce = RCELoss(num_classes, scale=self.beta)

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # alpha * mean_i CE + beta * RCE
        return self.alpha * F.cross_entropy(z, y) + self.rce._loss(z, y)


class NCELoss(_NoiseLoss):
    r"""Normalised cross entropy (an APL *active* loss).

    .. math::
        \mathcal{L} = \mathrm{scale} \cdot \frac{1}{N} \sum_i
        \frac{-\log p_{i, y_i}}{-\sum_k \log p_{ik}}

    (no clamp, as in the reference).

    Source: Ma et al., ICML 2020; https://github.com/HanxunH/Active-Passive-Losses
    (``NormalizedCrossEntropy``).

    Args:
        num_classes: C, >= 2.
        scale: >= 0 (default 1; the ``alpha`` of NCE+RCE and NCE+MAE).

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, num_classes: int, scale: float = 1.0) -> None:
        super().__init__(num_classes)
        self.scale = _non_negative("scale", scale)

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # log p = log softmax(z)
        log_p = F.log_softmax(z, dim=1)
        log_p_y = log_p.gather(1, y.unsqueeze(1)).squeeze(1)
        # (-log p_y) / (-sum_k log p_k)
        nce = -log_p_y / (-log_p.sum(dim=1))
        return self.scale * nce.mean()


class NFLLoss(_NoiseLoss):
    r"""Normalised focal loss (an APL *active* loss).

    .. math::
        \mathcal{L} = \mathrm{scale} \cdot \frac{1}{N} \sum_i
        \frac{-(1 - p_{i, y_i})^{\gamma} \log p_{i, y_i}}
        {\sum_k -(1 - p_{ik})^{\gamma} \log p_{ik}}

    As in the reference, every factor :math:`(1 - p)^{\gamma}` is detached from the gradient
    (the :math:`\log p` terms, in numerator and denominator, are not). ``gamma = 0`` is NCE.

    Source: Ma et al., ICML 2020; https://github.com/HanxunH/Active-Passive-Losses
    (``NormalizedFocalLoss``).

    Args:
        num_classes: C, >= 2.
        gamma: focusing parameter, >= 0 (default 0.5).
        scale: >= 0 (default 1; the ``alpha`` of NFL+RCE).

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, num_classes: int, gamma: float = 0.5, scale: float = 1.0) -> None:
        super().__init__(num_classes)
        self.gamma = _non_negative("gamma", gamma)
        self.scale = _non_negative("scale", scale)

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # log p = log softmax(z)
        log_p = F.log_softmax(z, dim=1)
        # (1 - p_k)^gamma, detached
        focus = (1.0 - log_p.detach().exp()) ** self.gamma
        # sum_k -(1 - p_k)^gamma log p_k
        normalizer = (-focus * log_p).sum(dim=1)
        index = y.unsqueeze(1)
        # -(1 - p_y)^gamma log p_y
        numerator = -(focus.gather(1, index) * log_p.gather(1, index)).squeeze(1)
        return self.scale * (numerator / normalizer).mean()


class NCEandRCE(_NoiseLoss):
    r"""APL pair NCE + RCE: :math:`\mathrm{NCE}(\mathrm{scale}=\alpha) +
    \mathrm{RCE}(\mathrm{scale}=\beta)`.

    Source: Ma et al., ICML 2020; https://github.com/HanxunH/Active-Passive-Losses
    (``NCEandRCE``). Reference (alpha, beta): MNIST (1, 10), CIFAR-10 (1, 1), CIFAR-100 (10, 0.1).

    Args:
        num_classes: C, >= 2.
        alpha: weight of NCE, >= 0.
        beta: weight of RCE, >= 0.

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, num_classes: int, alpha: float, beta: float) -> None:
        super().__init__(num_classes)
        self.alpha = _non_negative("alpha", alpha)
        self.beta = _non_negative("beta", beta)
        self.nce = NCELoss(num_classes, scale=self.alpha)
        self.rce = RCELoss(num_classes, scale=self.beta)

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # alpha NCE + beta RCE
        return self.nce._loss(z, y) + self.rce._loss(z, y)


class NFLandRCE(_NoiseLoss):
    r"""APL pair NFL + RCE: :math:`\mathrm{NFL}(\mathrm{scale}=\alpha, \gamma) +
    \mathrm{RCE}(\mathrm{scale}=\beta)`.

    Source: Ma et al., ICML 2020; https://github.com/HanxunH/Active-Passive-Losses
    (``NFLandRCE``). Reference (alpha, beta, gamma): MNIST (1, 10, 0.5), CIFAR-10 (1, 1, 0.5),
    CIFAR-100 (10, 0.1, 0.5).

    Args:
        num_classes: C, >= 2.
        alpha: weight of NFL, >= 0.
        beta: weight of RCE, >= 0.
        gamma: NFL's focusing parameter, >= 0 (default 0.5).

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, num_classes: int, alpha: float, beta: float, gamma: float = 0.5) -> None:
        super().__init__(num_classes)
        self.alpha = _non_negative("alpha", alpha)
        self.beta = _non_negative("beta", beta)
        self.gamma = _non_negative("gamma", gamma)
        self.nfl = NFLLoss(num_classes, gamma=self.gamma, scale=self.alpha)
        self.rce = RCELoss(num_classes, scale=self.beta)

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # alpha NFL + beta RCE
        return self.nfl._loss(z, y) + self.rce._loss(z, y)


class NCEandMAE(_NoiseLoss):
    r"""APL pair NCE + MAE: :math:`\mathrm{NCE}(\mathrm{scale}=\alpha) +
    \mathrm{MAE}(\mathrm{scale}=\beta)`.

    Source: Ma et al., ICML 2020; https://github.com/HanxunH/Active-Passive-Losses
    (``NCEandMAE``). Reference (alpha, beta): MNIST (1, 10), CIFAR-10 (1, 1), CIFAR-100 (10, 1).

    Args:
        num_classes: C, >= 2.
        alpha: weight of NCE, >= 0.
        beta: weight of MAE, >= 0.

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """

    def __init__(self, num_classes: int, alpha: float, beta: float) -> None:
        super().__init__(num_classes)
        self.alpha = _non_negative("alpha", alpha)
        self.beta = _non_negative("beta", beta)
        self.nce = NCELoss(num_classes, scale=self.alpha)
        self.mae = MAELoss(num_classes, scale=self.beta)

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # alpha NCE + beta MAE
        return self.nce._loss(z, y) + self.mae._loss(z, y)


# ---------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------


def _elm_without_target_margin(
    cls_num_list: ClassCounts,
    max_m: float = 0.5,
    s: float = 30.0,
    lam: float = 1.0,
    weight: Weight = None,
) -> ELMLoss:
    """ELM w/o Delta_y: :class:`ELMLoss` without the ``-m_y`` term (``use_target_margin=False``)."""
    return ELMLoss(cls_num_list, max_m=max_m, s=s, lam=lam, weight=weight, use_target_margin=False)


_REGISTRY: dict[str, Callable[..., nn.Module]] = {
    "ce": CrossEntropyLoss,
    "focal": FocalLoss,
    "ldam": LDAMLoss,
    "elm": ELMLoss,
    "elm_wo_delta_y": _elm_without_target_margin,
    "lmsce": LMSCELoss,
    "mae": MAELoss,
    "rce": RCELoss,
    "gce": GCELoss,
    "sce": SCELoss,
    "nce": NCELoss,
    "nfl": NFLLoss,
    "nce+rce": NCEandRCE,
    "nfl+rce": NFLandRCE,
    "nce+mae": NCEandMAE,
    "normalized_margin": NormalizedMarginLoss,
}

#: The names :func:`make_loss` accepts.
LOSS_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def make_loss(name: str, **kw: Any) -> nn.Module:
    """Build a loss by name, passing ``kw`` to its constructor.

    ========================  ======================================================
    name                      builds
    ========================  ======================================================
    ``"ce"``                  :class:`CrossEntropyLoss`
    ``"focal"``               :class:`FocalLoss` (``gamma=...``)
    ``"ldam"``                :class:`LDAMLoss` (``cls_num_list=...``)
    ``"elm"``                 :class:`ELMLoss` (``cls_num_list=...``)
    ``"elm_wo_delta_y"``      :class:`ELMLoss` with ``use_target_margin=False``
    ``"lmsce"``               :class:`LMSCELoss`
    ``"mae"``, ``"rce"``,     :class:`MAELoss`, :class:`RCELoss`, :class:`GCELoss`,
    ``"gce"``, ``"sce"``,     :class:`SCELoss`, :class:`NCELoss`, :class:`NFLLoss`
    ``"nce"``, ``"nfl"``      (``num_classes=...``)
    ``"nce+rce"``,            :class:`NCEandRCE`, :class:`NFLandRCE`,
    ``"nfl+rce"``,            :class:`NCEandMAE` (``num_classes, alpha, beta``)
    ``"nce+mae"``
    ``"normalized_margin"``   :class:`NormalizedMarginLoss` (``num_classes=...``)
    ========================  ======================================================

    Example: ``make_loss("ldam", cls_num_list=counts, max_m=0.5, s=30)``.

    Raises:
        ValueError: for a name not in :data:`LOSS_NAMES` (the message lists them).
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown loss name {name!r}; allowed names: {', '.join(LOSS_NAMES)}")
    return _REGISTRY[name](**kw)
