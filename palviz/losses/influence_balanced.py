r"""The influence-balanced focal loss (Park et al., ICCV 2021): plain cross entropy in a first
stage, then focal loss with each sample weighted down by its influence on the decision
boundary. See :mod:`palviz.losses` for the notation and the conventions every loss follows.

It is the one loss of palviz with a training schedule of its own and with an input beyond the
logits: it has :meth:`IBFocalLoss.set_epoch`, which :func:`palviz.train.fit` calls at the start
of every epoch, and ``needs_features = True``, on which ``fit`` passes the backbone's
penultimate features as ``features=``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from palviz.checks import (
    check_bool,
    check_class_counts,
    check_int,
    check_non_negative,
    check_positive,
    check_probability,
    invalid,
)
from palviz.losses._inputs import (
    ClassCounts,
    ClassWeightedLoss,
    normalised_class_weights,
    prepare_inputs,
)
from palviz.losses.registry import register_loss

__all__ = ["IBFocalLoss", "inverse_frequency_weights"]


def inverse_frequency_weights(cls_num_list: ClassCounts) -> Tensor:
    r"""The IB code's class weights ("IBReweight"): :math:`w_j \propto 1 / n_j`, normalised so
    that :math:`\sum_j w_j = C`.

    Source: https://github.com/pseulki/IB-Loss (``cifar_train.py``, ``train_rule ==
    'IBReweight'``).

    Returns:
        float32 tensor ``[C]``; the rarest class gets the largest weight.
    """
    counts = check_class_counts("cls_num_list", cls_num_list)
    return normalised_class_weights(1.0 / counts)  # w_j = 1 / n_j, then sum_j w_j = C


@register_loss(
    "ib_focal",
    source="Park et al., ICCV 2021 (IB loss, focal variant; pseulki/IB-Loss)",
)
class IBFocalLoss(ClassWeightedLoss):
    r"""Influence-balanced focal loss, in two stages.

    **First stage** (epochs before :math:`E_{IB}`): plain, unweighted cross entropy,
    :math:`\frac{1}{N} \sum_i \mathrm{CE}(z_i, y_i)`.

    **IB stage** (from epoch :math:`E_{IB}` on): with the penultimate features :math:`h_i` of
    sample :math:`i` (the backbone's output, the head's input), the per-sample weighted cross
    entropy :math:`\mathrm{ce}_i = w_{y_i} \mathrm{CE}(z_i, y_i)` and
    :math:`p_i = \mathrm{softmax}(z_i)`,

    .. math::
        \mathcal{L} = \frac{1}{N} \sum_i \left(1 - e^{-\mathrm{ce}_i}\right)^{\gamma}
        \mathrm{ce}_i \, \frac{\alpha}
        {\lVert p_i - \mathrm{onehot}(y_i) \rVert_1 \, \lVert h_i \rVert_1 + \epsilon},
        \qquad \epsilon = 10^{-3}

    The last factor is the inverse of the sample's influence on the last layer,
    :math:`\lVert \partial \mathrm{CE} / \partial z_i \rVert_1 \lVert h_i \rVert_1`
    (:math:`\lVert p_i - \mathrm{onehot}(y_i) \rVert_1 = 2 (1 - p_{i, y_i})`): samples that
    pull the boundary hard are weighted down. Gradients flow through every factor, the
    influence term included, as in the reference code. ``gamma = 0`` is the plain IB loss.
    The class weights ``w`` default to the reference's "IBReweight", :math:`w_j \propto 1/n_j`
    with :math:`\sum_j w_j = C` (:func:`inverse_frequency_weights`), and apply in the IB stage
    only.

    **When the IB stage starts.** :math:`E_{IB} = \mathrm{round}(f \cdot E)` of a run of
    :math:`E` epochs, :math:`f` = ``start_fraction`` (0.5: the reference's
    ``--start_ib_epoch 100`` of ``--epochs 200``). :func:`palviz.train.fit` calls
    :meth:`set_epoch` at the start of every epoch, so the stage is a function of the epoch
    (and a resumed run switches exactly where an uninterrupted one does). A loss whose
    :meth:`set_epoch` was never called is in the first stage.

    **The table method "IB-Focal" uses** :math:`f = 0.8`, not 0.5: the reference cuts the
    learning rate to 0.01x when its IB stage starts (its own schedule), palviz's profiles cut
    it at 80 % of the run (LDAM-DRW's shape) and a loss cannot change the schedule, so the IB
    stage starts there and runs at the reduced rate, as the reference's does. At the full rate
    the IB stage diverges: on MNIST-1D-LT (rho = 100, the ``full`` profile's run, seed 0) with
    :math:`f = 0.5` the training accuracy fell from 0.98 to below 0.35 when the stage began
    and the test accuracy ended at 0.39 (CE: 0.77); with :math:`f = 0.8` it ended at 0.82.

    Sources: Park, Lim, Jeon, Choi, *Influence-Balanced Loss for Imbalanced Visual
    Classification*, ICCV 2021 (arXiv 2110.02444); https://github.com/pseulki/IB-Loss
    (``losses.py``, ``IB_FocalLoss``; ``cifar_train.py``: ``alpha=1000``, ``gamma=1``,
    ``--start_ib_epoch 100``, ``IBReweight``). Differences from that code: the start of the IB
    stage is a fraction of the run's epochs rather than an epoch number; the reference also
    lowers the learning rate to 0.01x when the IB stage starts (0.0001x from epoch 160, 1e-6x
    from 180), which a loss cannot do: palviz trains every method with its profile's schedule,
    hence the table method's :math:`f = 0.8` (docs/reference.md 2).

    Args:
        cls_num_list: training-set count of each class, ``[C]``, all > 0.
        alpha: :math:`\alpha`, > 0 (default 1000, the reference's CIFAR value).
        gamma: focusing parameter :math:`\gamma`, >= 0 (default 1).
        start_fraction: :math:`f` in [0, 1] (default 0.5, the reference's; the table method
            uses 0.8, see above); 0 starts the IB stage at the first epoch, 1 never.
        reweight: start with the class weights :func:`inverse_frequency_weights` (default);
            ``False``: no class weights.

    Attributes:
        weight: class weights ``[C]`` or ``None`` (IB stage only); may be reassigned (DRW).
        ib_active: whether the loss is in the IB stage (set by :meth:`set_epoch`).
        needs_features: ``True``: ``fit`` passes ``features=`` to ``forward``.

    Shapes: ``logits [N, C]``, ``targets [N]`` (long), ``features [N, D]`` -> scalar.
    """

    #: ``palviz.train.fit`` passes the penultimate features as ``features=``.
    needs_features = True
    #: The reference's :math:`\epsilon` in the influence term.
    EPSILON = 1e-3

    def __init__(
        self,
        cls_num_list: ClassCounts,
        alpha: float = 1000.0,
        gamma: float = 1.0,
        start_fraction: float = 0.5,
        reweight: bool = True,
    ) -> None:
        counts = check_class_counts("cls_num_list", cls_num_list)
        reweight = check_bool("reweight", reweight)
        super().__init__(
            inverse_frequency_weights(counts) if reweight else None, num_classes=len(counts)
        )
        self.num_classes = len(counts)
        self.alpha = check_positive("alpha", alpha)
        self.gamma = check_non_negative("gamma", gamma)
        self.start_fraction = check_probability("start_fraction", start_fraction)
        self.ib_active = False

    def start_epoch(self, epochs: int) -> int:
        """:math:`E_{IB}`, the first (0-based) epoch of the IB stage in a run of ``epochs``."""
        epochs = check_int("epochs", epochs, 1)
        return int(round(self.start_fraction * epochs))

    def set_epoch(self, epoch: int, epochs: int) -> None:
        """Enter the stage of (0-based) ``epoch`` of a run of ``epochs``: the IB stage from
        :meth:`start_epoch` on, the first stage before it."""
        epoch = check_int("epoch", epoch, 0)
        self.ib_active = epoch >= self.start_epoch(epochs)

    def forward(self, logits: Tensor, targets: Tensor, features: Tensor | None = None) -> Tensor:
        z, targets = prepare_inputs(logits, targets, self.num_classes)
        h = None if features is None else _check_features(features, z)
        if not self.ib_active:
            # first stage: mean_i CE(z_i, y_i), unweighted
            return F.cross_entropy(z, targets)
        if h is None:
            raise ValueError(
                "features must be given in the IB stage: the penultimate features [N, D] of the "
                "batch (palviz.train.fit passes them, since needs_features is True); got None"
            )
        # ce_i = w_{y_i} CE(z_i, y_i), per sample
        ce = F.cross_entropy(z, targets, weight=self._weight_like(z), reduction="none")
        # ||p_i - onehot(y_i)||_1 ||h_i||_1: the sample's influence
        onehot = F.one_hot(targets, self.num_classes).to(z.dtype)
        grad_norm = (F.softmax(z, dim=1) - onehot).abs().sum(dim=1)
        influence = grad_norm * h.abs().sum(dim=1)
        ib = self.alpha / (influence + self.EPSILON)
        # mean_i (1 - e^{-ce_i})^gamma ce_i ib_i
        return ((1.0 - torch.exp(-ce)) ** self.gamma * ce * ib).mean()


def _check_features(features: object, z: Tensor) -> Tensor:
    """``features [N, D]`` for logits ``z [N, C]``, in ``z``'s dtype."""
    if not isinstance(features, Tensor) or features.ndim != 2:
        shape = tuple(features.shape) if isinstance(features, Tensor) else type(features).__name__
        raise invalid("features", shape, "a 2-D tensor [N, D] of penultimate features")
    if features.shape[0] != z.shape[0]:
        raise invalid(
            "features", tuple(features.shape), f"[N, D] with N = {z.shape[0]} rows (the logits')"
        )
    if not features.dtype.is_floating_point:
        raise invalid("features", features.dtype, "a floating-point tensor")
    return features.to(dtype=z.dtype)
