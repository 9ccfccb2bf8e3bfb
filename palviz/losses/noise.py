r"""Losses for label noise: the Active Passive Losses family (Ma et al., ICML 2020).

:class:`MAELoss`, :class:`RCELoss`, :class:`GCELoss`, :class:`SCELoss`, :class:`NCELoss`,
:class:`NFLLoss` and the pairs :class:`NCEandRCE`, :class:`NFLandRCE`, :class:`NCEandMAE`
(one active loss scaled by ``alpha`` plus one passive loss scaled by ``beta``). Every loss
here has a fixed ``num_classes`` and returns the plain batch mean. See :mod:`palviz.losses`
for the notation.
"""

from __future__ import annotations

from string import Template

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from palviz.checks import check_non_negative, check_num_classes, check_range
from palviz.losses._inputs import prepare_inputs
from palviz.losses.registry import register_loss

__all__ = [
    "GCELoss",
    "MAELoss",
    "NCELoss",
    "NCEandMAE",
    "NCEandRCE",
    "NFLLoss",
    "NFLandRCE",
    "RCELoss",
    "SCELoss",
]

# Clamps of the Active Passive Losses reference code (Ma et al. 2020).
_P_MIN = 1e-7
_ONE_HOT_MIN = 1e-4


# ---------------------------------------------------------------------------------------------
# Losses for label noise (Active Passive Losses)
# ---------------------------------------------------------------------------------------------


class _NoiseLoss(nn.Module):
    """Base of the APL losses: a fixed ``num_classes`` and a plain batch mean.

    ``forward`` checks the inputs once and calls ``_loss``, which the pairs reuse.
    """

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.num_classes = check_num_classes(num_classes)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        return self._loss(*prepare_inputs(logits, targets, self.num_classes))

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError


class _ScaledNoiseLoss(_NoiseLoss):
    """Base of the APL losses that a pair scales: ``__init__(num_classes, scale=1.0)``, with
    ``scale`` >= 0 multiplying the loss (the pair's ``alpha`` or ``beta``)."""

    def __init__(self, num_classes: int, scale: float = 1.0) -> None:
        super().__init__(num_classes)
        self.scale = check_non_negative("scale", scale)


@register_loss("mae", source="Ma et al., ICML 2020 (APL), Sec. 3")
class MAELoss(_ScaledNoiseLoss):
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

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # p_y = softmax(z)_y
        p_y = F.softmax(z, dim=1).gather(1, y.unsqueeze(1)).squeeze(1)
        # scale * mean_i (1 - p_y)
        return self.scale * (1.0 - p_y).mean()


@register_loss("rce", source="Wang et al., ICCV 2019 (SCE), Eq. 5")
class RCELoss(_ScaledNoiseLoss):
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

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # p = clamp(softmax(z), 1e-7, 1)
        p = F.softmax(z, dim=1).clamp(min=_P_MIN, max=1.0)
        # log clamp(onehot(y), 1e-4, 1): 0 at the target, log 1e-4 elsewhere
        log_label = torch.log(F.one_hot(y, self.num_classes).to(z.dtype).clamp(_ONE_HOT_MIN))
        # scale * mean_i (-sum_k p_ik log onehot_ik)
        return self.scale * (-(p * log_label).sum(dim=1)).mean()


@register_loss("gce", source="Zhang & Sabuncu, NeurIPS 2018, Eq. 6")
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
        self.q = check_range("q", q, 0.0, 1.0, low_open=True)

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # p_y = clamp(softmax(z), 1e-7, 1)_y
        p = F.softmax(z, dim=1).clamp(min=_P_MIN, max=1.0)
        p_y = p.gather(1, y.unsqueeze(1)).squeeze(1)
        # mean_i (1 - p_y^q) / q
        return ((1.0 - p_y**self.q) / self.q).mean()


@register_loss("sce", source="Wang et al., ICCV 2019, Eq. 6")
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
        self.alpha = check_non_negative("alpha", alpha)
        self.beta = check_non_negative("beta", beta)
        self.rce = RCELoss(num_classes, scale=self.beta)

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # alpha * mean_i CE + beta * RCE
        return self.alpha * F.cross_entropy(z, y) + self.rce._loss(z, y)


@register_loss("nce", source="Ma et al., ICML 2020 (APL), Eq. 2")
class NCELoss(_ScaledNoiseLoss):
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

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # log p = log softmax(z)
        log_p = F.log_softmax(z, dim=1)
        log_p_y = log_p.gather(1, y.unsqueeze(1)).squeeze(1)
        # (-log p_y) / (-sum_k log p_k)
        nce = -log_p_y / (-log_p.sum(dim=1))
        return self.scale * nce.mean()


@register_loss("nfl", source="Ma et al., ICML 2020 (APL), Eq. 4")
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
        self.gamma = check_non_negative("gamma", gamma)
        self.scale = check_non_negative("scale", scale)

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


class _APLPair(_NoiseLoss):
    """Base of the APL pairs: ``active(scale=alpha) + passive(scale=beta)``, each term reduced
    by its own plain batch mean."""

    def __init__(
        self,
        num_classes: int,
        alpha: float,
        beta: float,
        active: type[_NoiseLoss],
        passive: type[_NoiseLoss],
        **active_kw: float,
    ) -> None:
        super().__init__(num_classes)
        self.alpha = check_non_negative("alpha", alpha)
        self.beta = check_non_negative("beta", beta)
        self.active = active(num_classes, scale=self.alpha, **active_kw)
        self.passive = passive(num_classes, scale=self.beta)

    def _loss(self, z: Tensor, y: Tensor) -> Tensor:
        # alpha active + beta passive
        return self.active._loss(z, y) + self.passive._loss(z, y)


# Docstring of an APL pair, filled in by _pair_doc.
_PAIR_DOC = Template(
    r"""APL pair $active + $passive: :math:`\mathrm{$active}(\mathrm{scale}=\alpha$gamma) +
    \mathrm{$passive}(\mathrm{scale}=\beta)`.

    Source: Ma et al., ICML 2020; https://github.com/HanxunH/Active-Passive-Losses
    (``${active}and${passive}``). Reference (alpha, beta$gamma_name): $references.

    Args:
        num_classes: C, >= 2.
        alpha: weight of $active, >= 0.
        beta: weight of $passive, >= 0.$gamma_arg

    Shapes: ``logits [N, C]``, ``targets [N]`` (long) -> scalar.
    """
)


def _pair_doc(active: str, passive: str, references: str, gamma: bool = False) -> str:
    """The docstring of the APL pair ``active + passive``; ``references``: the reference code's
    (alpha, beta[, gamma]) per data set; ``gamma``: the pair takes NFL's focusing parameter."""
    return _PAIR_DOC.substitute(
        active=active,
        passive=passive,
        references=references,
        gamma=r", \gamma" if gamma else "",
        gamma_name=", gamma" if gamma else "",
        gamma_arg="\n        gamma: NFL's focusing parameter, >= 0 (default 0.5)." if gamma else "",
    )


@register_loss("nce+rce", source="Ma et al., ICML 2020 (APL), Eq. 6")
class NCEandRCE(_APLPair):
    __doc__ = _pair_doc("NCE", "RCE", "MNIST (1, 10), CIFAR-10 (1, 1), CIFAR-100 (10, 0.1)")

    def __init__(self, num_classes: int, alpha: float, beta: float) -> None:
        super().__init__(num_classes, alpha, beta, NCELoss, RCELoss)


@register_loss("nfl+rce", source="Ma et al., ICML 2020 (APL), Eq. 6")
class NFLandRCE(_APLPair):
    __doc__ = _pair_doc(
        "NFL",
        "RCE",
        "MNIST (1, 10, 0.5), CIFAR-10 (1, 1, 0.5),\n    CIFAR-100 (10, 0.1, 0.5)",
        gamma=True,
    )

    def __init__(self, num_classes: int, alpha: float, beta: float, gamma: float = 0.5) -> None:
        super().__init__(num_classes, alpha, beta, NFLLoss, RCELoss, gamma=gamma)
        self.gamma = self.active.gamma


@register_loss("nce+mae", source="Ma et al., ICML 2020 (APL), Eq. 6")
class NCEandMAE(_APLPair):
    __doc__ = _pair_doc("NCE", "MAE", "MNIST (1, 10), CIFAR-10 (1, 1), CIFAR-100 (10, 1)")

    def __init__(self, num_classes: int, alpha: float, beta: float) -> None:
        super().__init__(num_classes, alpha, beta, NCELoss, MAELoss)
