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
* Every loss is declared once, on its class, with :func:`~palviz.losses.registry.register_loss`
  (its name, its head family and its source; the facts of a run it needs are read from its
  constructor's parameters; the experiments'
  table methods are declared in :mod:`palviz.experiments.methods`);
  :func:`make_loss` builds any loss by name, :data:`LOSSES` holds the declarations and
  :data:`LOSS_NAMES` the names (``palviz methods`` prints them as a table).

Modules: :mod:`palviz.losses.imbalance` (CE, focal, LDAM, ELM, LMSCE, PAL's normalised margin
loss, the margins and class weights), :mod:`palviz.losses.noise` (the APL family),
:mod:`palviz.losses.influence_balanced`, :mod:`palviz.losses.logit_adjusted`,
:mod:`palviz.losses.eqlv2` and :mod:`palviz.losses.max_margin` (the other comparisons of ELM's
table), :mod:`palviz.losses.dot_regression` (the fixed-ETF classifier's loss, PAL's closest
rival), :mod:`palviz.losses.mixup` (the mixed batch and loss of mixup, a training option) and
:mod:`palviz.losses.registry`; each loss module is imported here, so that its losses register.
Every public name is importable from :mod:`palviz.losses`.
"""

from __future__ import annotations

import importlib

from palviz.losses import registry
from palviz.losses._inputs import ClassWeightedLoss
from palviz.losses.registry import LOSSES, build_loss, check_loss_kw, make_loss

# The loss modules, imported here so that their losses register, in this order: the two
# papers' own first, then the other comparisons. A new loss module is one more name here.
_MODULES = tuple(
    importlib.import_module(f"palviz.losses.{name}")
    for name in (
        "imbalance",
        "noise",
        "influence_balanced",
        "logit_adjusted",
        "dot_regression",
        "eqlv2",
        "max_margin",
        "mixup",
    )
)
for _module in _MODULES:
    globals().update({name: getattr(_module, name) for name in _module.__all__})

#: The names :func:`make_loss` accepts, in registration order.
LOSS_NAMES: tuple[str, ...] = tuple(LOSSES)

__all__ = [
    "ClassWeightedLoss",
    "LOSSES",
    "LOSS_NAMES",
    "build_loss",
    "check_loss_kw",
    "make_loss",
    "registry",
]
for _module in _MODULES:
    __all__ += _module.__all__
del _module
