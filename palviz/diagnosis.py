r"""
# `diagnose`: one call that reads a trained classifier

``diagnose(model, train_data)`` runs any PyTorch classifier over its training split (and,
optionally, a test split) in eval mode and reports, in one tidy frame: accuracy (all classes
and per shot group), the four neural-collapse measures of Papyan, Han & Donoho (2020)
(:mod:`palviz.collapse`), the geometry of the classifier (cosines, minimum angle, vanished
rows; :mod:`palviz.metrics`), calibration (ECE, Guo et al. 2017) and sample margins
(:mod:`palviz.calibration`, :mod:`palviz.metrics`). :func:`post_hoc` re-balances the trained
classifier after training (logit adjustment, $\tau$-normalisation) with $\tau$ chosen on a
held-out split.

**Features** $h$ are the input of the classifier layer, caught by a forward hook on the
module that ``layer=`` names (``"fc"``, a name of ``model.named_modules()``), else on

* the head of a :class:`palviz.models.Classifier` (whatever its type),
* else the last palviz head (:class:`~palviz.heads.LinearHead`, :class:`~palviz.heads.CosineHead`,
  :class:`~palviz.heads.AnchoredHead`) or the last ``nn.Linear`` outside one, in module order
  (``torchvision``'s ``resnet18``: ``model.fc``),

or computed by the ``features=`` callable ``x -> h`` (for a model whose last layer is not a
linear map of a flat feature). The classifier rows $W$ (and bias $b$) are that layer's:
``.prototypes`` for a palviz head (a buffer for the anchored head), ``.weight`` / ``.bias`` for
``nn.Linear``. On the first batch the layer's output must be the model's logits (up to a
constant per row, as a log-softmax adds): a model whose logits come from another module (a
custom head after the last ``nn.Linear``) is refused rather than read wrong.
:mod:`palviz.diagnosis_inputs` checks what a call is given.

**Logits** are the model's output times ``logit_scale``. A cosine head (or FNPAL) trained with
LDAM or ELM outputs cosines that the loss multiplies by its $s$ (30 in the papers): pass
``logit_scale=30`` to read confidence, ECE and margins as the loss saw them. A palviz head's own
``scale`` is already in its output; ``logit_scale`` multiplies on top (default 1.0, the output
as it is); the returned :class:`Diagnosis` says in ``notes`` what was used. Predictions, and so
accuracy and NC4, do not depend on the scale.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from palviz import calibration, collapse, metrics
from palviz import diagnosis_inputs as inputs
from palviz.checks import (
    as_labels,
    check_choice,
    check_class_counts,
    check_int,
    check_positive,
    invalid,
)

# torch, pandas and the heads are imported on the first call, so that ``import palviz`` (which
# exports ``diagnose``) stays free of torch
if TYPE_CHECKING:
    import pandas as pd
    import torch
    from torch import nn

__all__ = ["Diagnosis", "diagnose", "find_classifier", "post_hoc"]


_GROUPS = ("all", *metrics.SHOT_GROUPS)


@dataclass
class Diagnosis:
    """What :func:`diagnose` measured.

    Attributes:
        frame: tidy ``DataFrame`` with columns ``split`` (``"train"``, ``"test"``), ``group``
            (``"all"``, ``"many"``, ``"medium"``, ``"few"``), ``metric``, ``value``; a
            measure undefined for a group (fewer than 2 classes, no sample) is left out.
        per_class: one row per (split, class): ``count`` (training samples), ``group``,
            ``accuracy``, ``classifier_norm`` $\\|w_c\\|$, ``feature_mean_norm``
            $\\|\\mu_c - \\mu_G\\|$, ``mean_margin``, ``mean_confidence``.
        cosines: the classifier's cosine matrix `[K, K]` (NaN for a vanished row), ``None``
            when no classifier layer was found.
        reliability: per split, the ``bins`` confidence bins: ``lower``, ``upper``,
            ``confidence``, ``accuracy``, ``count``.
        center: the global-mean convention (``"class_means"`` or ``"samples"``).
        logit_scale: the factor applied to the model's output.
        split_note: which split each measure was taken on.
        notes: what the run assumed: the scale of the logits, then the classifier layer read
            (its path in the model, its type and weight shape), a measure left out and why.
        layer: the path of the classifier layer read in ``model.named_modules()`` (``"fc"``,
            ``"head"``; ``""``: the model itself), ``None`` when none was read.
    """

    frame: pd.DataFrame
    per_class: pd.DataFrame
    cosines: np.ndarray | None
    reliability: pd.DataFrame
    center: str
    logit_scale: float
    split_note: str
    notes: tuple[str, ...] = field(default=())
    layer: str | None = None

    def value(self, metric: str, split: str = "train", group: str = "all") -> float:
        """One number of :attr:`frame` (``KeyError`` naming what exists if it is absent)."""
        f = self.frame
        hit = f[(f.metric == metric) & (f.split == split) & (f.group == group)]
        if hit.empty:
            raise KeyError(
                f"no {metric!r} for split={split!r}, group={group!r}; metrics: "
                f"{sorted(f.metric.unique())}"
            )
        return float(hit.value.iloc[0])

    def plot(self):
        """The four-panel figure of :func:`palviz.plots.diagnose.plot_diagnosis`."""
        from palviz.plots.diagnose import plot_diagnosis

        return plot_diagnosis(self)


# ----------------------------------------------------------------------------------------------
# the classifier layer, the batches, the pass
# ----------------------------------------------------------------------------------------------
def find_classifier(model: nn.Module) -> nn.Module | None:
    """The classifier layer whose input :func:`diagnose` takes as the features: the head of a
    :class:`~palviz.models.Classifier`, else the last palviz head or ``nn.Linear`` (one inside
    a palviz head counts as that head) in module order; ``None`` if there is none."""
    import torch

    from palviz.models import Classifier

    if not isinstance(model, torch.nn.Module):
        raise invalid("model", type(model).__name__, "a torch.nn.Module")
    if isinstance(model, Classifier):
        return model.head
    inside: set[int] = set()
    found = None
    for module in model.modules():  # a parent comes before its children
        if isinstance(module, inputs.head_types()):
            found = module
            inside.update(id(m) for m in module.modules())
        elif isinstance(module, torch.nn.Linear) and id(module) not in inside:
            found = module
    return found


def _rows_module(layer: nn.Module | None) -> nn.Module | None:
    """The module holding the class vectors: the layer itself, or for a Classifier's head of
    another type the last palviz head / Linear inside it."""
    import torch

    if layer is None or isinstance(layer, (*inputs.head_types(), torch.nn.Linear)):
        return layer
    return find_classifier(layer)


@dataclass
class _Pass:
    features: np.ndarray  # [N, d] float64
    logits: np.ndarray  # [N, K] float64, times logit_scale
    targets: np.ndarray  # [N] int64
    read: bool = True  # the class vectors read (False: features= and another layer's output)


def _run(model, data, split, name, *, layer, features, device, batch_size, scale, first) -> _Pass:
    """One split's pass; ``first``: the checks of the first batch, or ``None``."""
    import torch

    tap = inputs.Tap(layer.module, layer.rows)
    hs, zs, ys, read, start = [], [], [], True, 0
    try:
        for x, y in inputs.batches(data, batch_size, name):
            x = x.to(device)
            tap.clear()
            out = model(x)
            if not isinstance(out, torch.Tensor) or out.ndim != 2:
                raise invalid("model", "an output that is not a (batch, K) tensor", "logits")
            inputs.check_finite("logits", split, name, out, start)
            if first is not None:
                read, first = first(out, tap, name), None
            if features is not None:
                h = features(x)
            elif len(calls := tap.of(layer.module)) != 1:
                raise invalid(
                    "model",
                    f"a classifier layer {type(layer.module).__name__} called {len(calls)} times "
                    "in one forward pass",
                    "called once; pass features=lambda x: ... to give the features",
                )
            else:
                h = calls[0][0]
            if not isinstance(h, torch.Tensor) or h.ndim != 2 or h.shape[0] != out.shape[0]:
                raise invalid(
                    "features",
                    f"a {getattr(h, 'shape', type(h).__name__)} input of the classifier layer",
                    "(batch, d) features; pass features=lambda x: ... returning them",
                )
            inputs.check_finite("features", split, name, h, start)
            start += out.shape[0]  # the first sample of the next batch
            hs.append(h.detach().double().cpu())
            zs.append(out.detach().double().cpu())
            ys.append(y.detach().cpu().long())  # integer labels (checked): no rounding
    finally:
        tap.remove()
    if not ys:
        raise invalid(name, "no batch", "at least one sample")
    return _Pass(
        features=torch.cat(hs).numpy(),
        logits=torch.cat(zs).numpy() * scale,  # the model's output times logit_scale
        targets=as_labels(f"{name} labels", torch.cat(ys).numpy()),
        read=read,
    )


def _forward(model, splits, layer, features, dev, batch_size, scale, counts, hint):
    """One pass over each split ``{key: (argument name, data)}``, no grad, in ``model.eval()``
    on ``dev`` = (device, move the model there), its first batch checked; the mode restored."""
    import torch

    def first(out, tap, name):
        return inputs.check_first_batch(
            out, tap, layer, name, features_given=features is not None, counts=counts, hint=hint
        )

    device, move = dev
    if move:
        model.to(device)
    was_training = model.training
    model.eval()
    passes = {}
    try:
        with torch.no_grad():
            for key, (name, data) in splits.items():
                passes[key] = _run(
                    model,
                    data,
                    key,
                    name,
                    layer=layer,
                    features=features,
                    device=device,
                    batch_size=batch_size,
                    scale=scale,
                    first=None if passes else first,
                )
    finally:
        model.train(was_training)
    return passes


def _prepare(model, device, logit_scale, features, batch_size, layer):
    """The checked arguments: the classifier layer read, the scale, ``(device, move)``."""
    import torch

    chosen = inputs.choose_layer(model, layer, find_classifier(model))
    if chosen is None and features is None:
        raise invalid(
            "model",
            f"a {type(model).__name__} with no nn.Linear layer or palviz head",
            "a model ending in one, or pass features=lambda x: ... giving the features h",
        )
    if features is not None and not callable(features):
        raise invalid("features", features, "None or a function x -> features (batch, d)")
    scale = 1.0 if logit_scale is None else check_positive("logit_scale", logit_scale)
    check_int("batch_size", batch_size, 1)
    dev = inputs.check_device(device)
    if dev is None:
        first = next(model.parameters(), None)
        dev = first.device if first is not None else torch.device("cpu")
    read = inputs.Layer.of(model, chosen, _rows_module(chosen), layer is not None)
    return read, scale, (dev, device is not None)


# ----------------------------------------------------------------------------------------------
# the measures of one split
# ----------------------------------------------------------------------------------------------
def _split_rows(split, p, k, W, groups, center, bins, train_means):
    """Rows ``(split, group, metric, value)`` and the class means of one split."""
    rows: list[tuple[str, str, str, float]] = []
    y, z, h = p.targets, p.logits, p.features

    def add(group, metric, value):
        if value is not None and np.isfinite(value):
            rows.append((split, group, metric, float(value)))

    preds = z.argmax(axis=1)
    per_class = metrics.per_class_accuracy(preds, y, k)
    margins = metrics.sample_margins(z, y)
    members = {"all": np.arange(k), **groups}
    add("all", "accuracy", np.mean(preds == y))
    add("all", "mean per-class accuracy", np.nanmean(per_class))
    for group, cls in members.items():
        mask = np.isin(y, cls)
        if group != "all" and mask.any():
            add(group, "accuracy", np.nanmean(per_class[cls]))
        if mask.any():
            ece = calibration.expected_calibration_error(z[mask], y[mask], bins, kind="logits")
            add(group, "ECE", ece)
            add(group, "mean sample margin", margins[mask].mean())
    means = None
    if np.unique(y).size == k:  # every class has a sample: the class means exist
        means = collapse.class_means(h, y, k)
        M = collapse.centered_means(h, y, k, center)
        add("all", "vanished class means", metrics.vanished_rows(M).sum())
        for group, cls in members.items():
            mask = np.isin(y, cls)
            if not mask.any():
                continue
            add(group, "NC1", collapse.nc1(h, y, k, center, classes=cls))
            if cls.size >= 2:
                add(group, "NC2 equinorm (means)", collapse.equinorm(M[cls]))
                add(group, "NC2 equiangularity (means)", collapse.equiangularity(M, cls))
                add(group, "NC2 max-angle (means)", collapse.max_angle(M, cls))
        if W is not None:
            add("all", "NC3", collapse.nc3(W, M))
    rule = train_means if train_means is not None else means
    if rule is not None:
        for group, cls in members.items():
            mask = np.isin(y, cls)
            if mask.any():
                add(group, "NC4", collapse.nc4(h[mask], None, None, rule, preds=preds[mask]))
    if W is not None and split == "train":
        for group, cls in members.items():
            if cls.size >= 2:
                add(group, "NC2 equinorm (classifier)", collapse.equinorm(W[cls]))
                add(group, "NC2 equiangularity (classifier)", collapse.equiangularity(W, cls))
                add(group, "NC2 max-angle (classifier)", collapse.max_angle(W, cls))
        add("all", "min prototype angle (deg)", metrics.min_prototype_angle(W))
        add("all", "vanished classifier rows", metrics.vanished_rows(W).sum())
    return rows, means


def _class_mean(values: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    """Mean of ``values`` over the samples of each class; NaN for a class with no sample."""
    n = np.bincount(y, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            n > 0, np.bincount(y, weights=values, minlength=k) / np.maximum(n, 1), np.nan
        )


def _per_class(split, p, k, W, counts, group_of, center):
    import pandas as pd

    y, z = p.targets, p.logits
    present = np.unique(y).size == k
    M = collapse.centered_means(p.features, y, k, center) if present else None
    return pd.DataFrame(
        {
            "split": split,
            "class": np.arange(k),
            "count": counts.astype(np.int64),
            "group": group_of,
            "accuracy": metrics.per_class_accuracy(z, y, k),
            "classifier_norm": np.full(k, np.nan) if W is None else metrics.weight_norms(W),
            "feature_mean_norm": np.full(k, np.nan) if M is None else np.linalg.norm(M, axis=1),
            "mean_margin": _class_mean(metrics.sample_margins(z, y), y, k),
            "mean_confidence": metrics.mean_confidence_per_class(z, y, k),
        }
    )


def _reliability(split, p, bins):
    import pandas as pd

    r = calibration.reliability_bins(p.logits, p.targets, bins, kind="logits")
    return pd.DataFrame({"split": split, "bin": np.arange(bins), **r})


def _training_counts(passes: dict[str, _Pass], k: int, counts: np.ndarray | None) -> np.ndarray:
    """The training counts (given, or counted from the labels), once every label is a class,
    every class has a training sample and the counts do not order the classes against them."""
    for name, p in passes.items():
        as_labels("data labels" if name == "train" else "test labels", p.targets, k)
    observed = np.bincount(passes["train"].targets, minlength=k)
    missing = np.flatnonzero(observed == 0)
    if missing.size:
        raise invalid("data", f"no sample of classes {missing.tolist()}", "every class present")
    if counts is None:
        return observed.astype(np.float64)
    inputs.check_counts_order(counts, observed)
    return counts


def _split_note(passes: dict[str, _Pass], k: int, center: str) -> str:
    sizes = ", ".join(f"{n}: N = {p.targets.size}" for n, p in passes.items())
    mean = "mean of the class means" if center == "class_means" else "mean of the samples"
    note = (
        f"neural collapse measured on the training split (Papyan et al. 2020), K = {k} "
        f"({sizes}); global mean mu_G = {mean}"
    )
    if "test" in passes:
        note += "; test: NC1-NC3 with its own class means, NC4 against the training means"
    return note


def _scale_note(head, scale) -> str:
    """The first note: the scale of the logits, ``head`` the module of the class vectors."""
    from palviz.heads import AnchoredHead, CosineHead

    own = getattr(head, "scale", None)
    cosine = isinstance(head, CosineHead) or (isinstance(head, AnchoredHead) and head.normalize)
    note = f"logits = model output x logit_scale = {scale:g}"
    if own is not None:
        note += f"; the {type(head).__name__}'s own scale s = {own:g} is already in its output"
    if cosine and own == 1.0 and scale == 1.0:
        note += (
            "; these logits are cosines in [-1, 1]: confidence, ECE and margins read them at "
            "scale 1; pass logit_scale=s (the LDAM / ELM loss's s, e.g. 30) to read them as the "
            "loss did"
        )
    return note


def diagnose(
    model: nn.Module,
    data: Any,
    class_counts: Any = None,
    *,
    test: Any = None,
    features: Callable[[torch.Tensor], torch.Tensor] | None = None,
    logit_scale: float | None = None,
    center: str = "class_means",
    bins: int = 15,
    batch_size: int = 256,
    device: str | torch.device | None = None,
    layer: str | nn.Module | None = None,
) -> Diagnosis:
    r"""Diagnose a trained classifier: accuracy, neural collapse, classifier geometry,
    calibration and margins, overall and per shot group.

    Args:
        model: any ``nn.Module`` mapping a batch to logits `[B, K]` (not probabilities: a
            model ending in a softmax is refused); its features are the input of its
            classifier layer (see the module), or ``features(x)``.
        data: the **training** split, where neural collapse is measured (as Papyan et al. do):
            a ``DataLoader`` yielding ``(x, y)`` or ``(x, y, index)`` (further items ignored;
            ``(index, x, y)`` is refused) or an ``(x, y)`` tuple of tensors (``y`` may be a
            NumPy array; cut into ``batch_size`` batches). Labels are integer class indices:
            float and bool labels are refused, never rounded. Every class must occur.
        class_counts: the training samples of each of the K classes, `[K]`, for the shot groups
            (many > 100, medium 20-100, few < 20, :func:`palviz.metrics.shot_groups`); default:
            counted from ``data``'s labels. Refused: labels (``diagnose(model, x, y)`` for
            ``diagnose(model, (x, y))``), other than K counts, counts ordering two classes
            against ``data``'s labels (over twice the other's count, under half its samples in
            ``data``; a uniform sub-sample of the training split passes).
        test: an optional second split, measured beside it (NC1-NC3 with its own class means,
            NC4 against the training class means; NC measures left out if a class is absent).
        features: a callable ``x -> h`` `[B, d]` instead of the hook; the class vectors are
            then read only if the classifier layer's output is the logits (else noted).
        logit_scale: factor on the model's output (default 1.0; 30 for a cosine head trained
            with LDAM / ELM at $s = 30$).
        center: $\mu_G$ as the mean of the class means (``"class_means"``, default) or of the
            samples (``"samples"``), see :mod:`palviz.collapse`.
        bins: confidence bins of the ECE (15, Guo et al. 2017).
        batch_size: samples per forward pass for a tuple ``data``.
        device: where to run (the model is moved there), one this machine has; default:
            where its parameters are.
        layer: the classifier layer, a name of ``model.named_modules()`` (``"fc"``,
            ``"head"``) or a module of the model; default: :func:`find_classifier`'s. Its input
            is the features, its rows (if it is or holds an ``nn.Linear`` or a palviz head) the
            class vectors $W$.

    Runs under ``torch.no_grad()`` in ``model.eval()`` and restores the training mode after;
    the features and logits are taken to the CPU in float64 for the measures. The first batch
    is checked before the rest runs: the model's output must be the classifier layer's, up to a
    constant per row (else the features and $W$ read would be another layer's: pass ``layer=``
    or ``features=``), with one logit per class count. Non-finite logits or features stop the
    run, naming the split and the first bad sample. The :class:`Diagnosis` names the layer
    read in ``layer`` and in ``notes`` (:mod:`palviz.diagnosis_inputs` has every check).
    """
    import pandas as pd

    check_choice("center", center, collapse.CENTERS)
    check_int("bins", bins, 1)
    read, scale, dev = _prepare(model, device, logit_scale, features, batch_size, layer)
    n = inputs.check_split("data", data, class_counts)
    if test is not None:
        inputs.check_split("test", test)
    counts, hint = inputs.check_counts(class_counts, n)
    splits = {"train": ("data", data)} | ({} if test is None else {"test": ("test", test)})
    passes = _forward(model, splits, read, features, dev, batch_size, scale, counts, hint)
    rows_read = passes["train"].read
    W = read.class_vectors() if rows_read else None
    k = passes["train"].logits.shape[1]
    if W is not None and W.shape[0] != k:
        raise invalid("model", f"{W.shape[0]} classifier rows and {k} logits", "one row per logit")
    counts = _training_counts(passes, k, counts)
    groups = metrics.shot_groups(counts)
    group_of = np.empty(k, dtype=object)
    for name, cls in groups.items():
        group_of[cls] = name
    rows, means = _split_rows("train", passes["train"], k, W, groups, center, bins, None)
    notes = [
        _scale_note(read.rows if rows_read else None, scale),
        inputs.layer_note(read, rows_read, features is not None),
    ]
    if "test" in passes:
        test_rows, _ = _split_rows("test", passes["test"], k, W, groups, center, bins, means)
        rows += test_rows
        if np.unique(passes["test"].targets).size != k:
            notes.append("the test split lacks a class: NC1-NC3 are left out there")
    split_note = _split_note(passes, k, center)
    return Diagnosis(
        frame=pd.DataFrame(rows, columns=["split", "group", "metric", "value"]),
        per_class=pd.concat(
            [_per_class(n, p, k, W, counts, group_of, center) for n, p in passes.items()],
            ignore_index=True,
        ),
        cosines=None if W is None else metrics.prototype_cosines(W),
        reliability=pd.concat(
            [_reliability(n, p, bins) for n, p in passes.items()], ignore_index=True
        ),
        center=center,
        logit_scale=scale,
        split_note=split_note,
        notes=tuple(notes),
        layer=read.path if rows_read else None,
    )


# ----------------------------------------------------------------------------------------------
# post-hoc re-balancing
# ----------------------------------------------------------------------------------------------
def _tau_logits(module: nn.Module, h: np.ndarray, tau: float, scale: float) -> np.ndarray:
    """The logits of the class vectors' module on ``h`` with its rows tau-normalised, on the
    CPU in float64."""
    import torch

    from palviz.heads import LinearHead

    head = copy.deepcopy(module).to("cpu", torch.float64)
    rows = head.fc.weight if isinstance(head, LinearHead) else head.weight
    with torch.no_grad():
        rows.copy_(torch.as_tensor(calibration.tau_normalize(rows.detach().numpy(), tau)))
        return head(torch.as_tensor(h)).numpy() * scale


def post_hoc(
    model: nn.Module,
    held_out: Any,
    test: Any,
    class_counts: Any,
    *,
    taus: Sequence[float] = calibration.TAU_GRID,
    features: Callable[[torch.Tensor], torch.Tensor] | None = None,
    logit_scale: float | None = None,
    batch_size: int = 256,
    device: str | torch.device | None = None,
    layer: str | nn.Module | None = None,
) -> pd.DataFrame:
    r"""Accuracy per shot group on ``test`` before and after post-hoc re-balancing.

    * logit adjustment $z_j - \tau \log \pi_j$ (Menon et al. 2021), on the scaled logits;
    * $\tau$-normalisation $w_j / \|w_j\|^\tau$ (Kang et al. 2020) of the classifier layer's
      rows, the layer's output being the model's logits (the bias is kept). It leaves a cosine
      head's and an equal-norm anchored head's predictions unchanged.

    Each $\tau$ is chosen on ``held_out`` (a balanced validation split, never ``test``) by
    :func:`palviz.calibration.choose_tau`. ``held_out`` and ``test`` take the forms of
    :func:`diagnose`'s ``data``; ``class_counts`` are the training counts $n_j$, one per logit;
    ``features``, ``layer`` and the checks are :func:`diagnose`'s.

    Returns:
        ``DataFrame`` with columns ``method`` (``"none"``, ``"logit adjustment"``,
        ``"tau-normalisation"``, the last only when a classifier layer was found), ``tau``,
        ``group`` (``"all"`` = accuracy over the samples; a shot group = mean of its classes'
        accuracies) and ``accuracy``.
    """
    import pandas as pd

    read, scale, dev = _prepare(model, device, logit_scale, features, batch_size, layer)
    inputs.check_split("held_out", held_out)
    inputs.check_split("test", test)
    counts = check_class_counts("class_counts", class_counts)
    splits = {"held_out": ("held_out", held_out), "test": ("test", test)}
    hint = "if they are labels, pass each split as (x, y)"
    passes = _forward(model, splits, read, features, dev, batch_size, scale, counts, hint)
    val, tst = passes["held_out"], passes["test"]
    k = counts.size
    methods: list[tuple[str, float, np.ndarray]] = [("none", float("nan"), tst.logits)]
    tau, _ = calibration.choose_tau(
        lambda t: calibration.logit_adjust(val.logits, counts, t), val.targets, taus
    )
    methods.append(("logit adjustment", tau, calibration.logit_adjust(tst.logits, counts, tau)))
    if read.rows is not None and features is None:  # the rows' output is the logits (checked)
        tau, _ = calibration.choose_tau(
            lambda t: _tau_logits(read.rows, val.features, t, scale), val.targets, taus
        )
        methods.append(("tau-normalisation", tau, _tau_logits(read.rows, tst.features, tau, scale)))
    rows = []
    for method, t, z in methods:
        preds = z.argmax(axis=1)
        rows.append((method, t, "all", float(np.mean(preds == tst.targets))))
        per_class = metrics.per_class_accuracy(preds, tst.targets, k)
        for group, acc in metrics.shot_group_accuracy(per_class, counts).items():
            if acc is not None:
                rows.append((method, t, group, acc))
    return pd.DataFrame(rows, columns=["method", "tau", "group", "accuracy"])
