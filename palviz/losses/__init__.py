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

Modules: :mod:`palviz.losses.imbalance` (CE, focal, LDAM, ELM, LMSCE, PAL's normalised margin
loss, the margins and class weights) and :mod:`palviz.losses.noise` (the APL family); every
public name is importable from :mod:`palviz.losses` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from palviz.losses import imbalance, noise
from palviz.losses._inputs import ClassCounts, Weight
from palviz.losses.imbalance import (
    CrossEntropyLoss,
    ELMLoss,
    FocalLoss,
    LDAMLoss,
    LMSCELoss,
    NormalizedMarginLoss,
    class_balanced_weights,  # noqa: F401 (re-exported: in imbalance.__all__)
    ldam_margins,  # noqa: F401 (re-exported: in imbalance.__all__)
)
from palviz.losses.noise import (
    GCELoss,
    MAELoss,
    NCEandMAE,
    NCEandRCE,
    NCELoss,
    NFLandRCE,
    NFLLoss,
    RCELoss,
    SCELoss,
)

# Every public name of the submodules, and the registry's own.
__all__ = ["LOSS_NAMES", "make_loss"]
__all__ += imbalance.__all__
__all__ += noise.__all__


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
