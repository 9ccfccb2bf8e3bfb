r"""
# `diagnose`: one call that reads a trained classifier

``diagnose(model, train_data)`` runs any PyTorch classifier over its training split (and,
optionally, a test split) in eval mode and reports, in one tidy frame: accuracy (all classes
and per shot group), the four neural-collapse measures of Papyan, Han & Donoho (2020)
(:mod:`palviz.collapse`), the geometry of the classifier (cosines, minimum angle, vanished
rows; :mod:`palviz.metrics`), calibration (ECE, Guo et al. 2017) and sample margins
(:mod:`palviz.calibration`, :mod:`palviz.metrics`); each row names its definition where the
literature has two (:mod:`palviz.diagnosis_stats`). :func:`diagnose_checkpoints` follows them
over training, one checkpoint at a time. :func:`post_hoc` re-balances the trained classifier
after training (logit adjustment, $\tau$-normalisation) with $\tau$ chosen on a held-out split
(:mod:`palviz.diagnosis_posthoc`); :mod:`palviz.diagnosis_pass` runs the forward pass.

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
:mod:`palviz.diagnosis_inputs` checks what a call is given (:mod:`palviz.diagnosis_layer`
its ``layer=``).

**Logits** are the model's output times ``logit_scale``. A cosine head (or FNPAL) trained with
LDAM or ELM outputs cosines that the loss multiplies by its $s$ (30 in the papers): pass
``logit_scale=30`` to read confidence, ECE and margins as the loss saw them. A palviz head's own
``scale`` is already in its output; ``logit_scale`` multiplies on top (default 1.0, the output
as it is); the returned :class:`Diagnosis` says in ``notes`` what was used. Predictions, and so
accuracy and NC4, do not depend on the scale.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from palviz import collapse, diagnosis_layer, metrics
from palviz import diagnosis_inputs as inputs
from palviz import diagnosis_stats as stats
from palviz.checks import as_labels, check_choice, check_int, invalid
from palviz.diagnosis_pass import Pass, find_classifier, forward, prepare
from palviz.diagnosis_posthoc import PostHoc, post_hoc

# torch, pandas and the heads are imported on the first call, so that ``import palviz`` (which
# exports ``diagnose``) stays free of torch
if TYPE_CHECKING:
    import pandas as pd
    import torch
    from torch import nn

__all__ = [
    "Diagnosis",
    "PostHoc",
    "diagnose",
    "diagnose_checkpoints",
    "find_classifier",
    "post_hoc",
]


@dataclass
class Diagnosis:
    """What :func:`diagnose` measured.

    Attributes:
        frame: tidy ``DataFrame`` with columns ``split`` (``"train"``, ``"test"``), ``group``
            (``"all"``, ``"many"``, ``"medium"``, ``"few"``), ``metric``, ``definition`` (the
            form measured, a key of :data:`palviz.diagnosis_stats.DEFINITIONS`: ``"Papyan"``,
            ``"ETF distance"``, ``"agreement"``, ...), ``value``; a measure undefined for a
            group (fewer than 2 classes, no sample) is left out.
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

    def value(
        self,
        metric: str,
        split: str = "train",
        group: str = "all",
        definition: str | None = None,
    ) -> float:
        """One number of :attr:`frame` (``KeyError`` naming what exists if it is absent);
        ``definition=None``: the first form of the metric (Papyan et al.'s where there are
        two)."""
        f = self.frame
        hit = f[(f.metric == metric) & (f.split == split) & (f.group == group)]
        if definition is not None:
            hit = hit[hit.definition == definition]
        if hit.empty:
            forms = sorted(f.definition[f.metric == metric].unique())
            raise KeyError(
                f"no {metric!r} for split={split!r}, group={group!r}, definition="
                f"{definition!r}; its definitions: {forms}; metrics: {sorted(f.metric.unique())}"
            )
        return float(hit.value.iloc[0])

    def plot(self):
        """The figure of :func:`palviz.plots.diagnose.plot_diagnosis`."""
        from palviz.plots.diagnose import plot_diagnosis

        return plot_diagnosis(self)


def _training_counts(passes: dict[str, Pass], k: int, counts: np.ndarray | None) -> np.ndarray:
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


def _split_note(passes: dict[str, Pass], k: int, center: str) -> str:
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
    read in ``layer`` and in ``notes`` (:mod:`palviz.diagnosis_inputs` and
    :mod:`palviz.diagnosis_layer` have every check).
    """
    import pandas as pd

    check_choice("center", center, collapse.CENTERS)
    check_int("bins", bins, 1)
    read, scale, dev = prepare(model, device, logit_scale, features, batch_size, layer)
    n = inputs.check_split("data", data, class_counts)
    if test is not None:
        inputs.check_split("test", test)
    counts, hint = inputs.check_counts(class_counts, n)
    splits = {"train": ("data", data)} | ({} if test is None else {"test": ("test", test)})
    passes = forward(model, splits, read, features, dev, batch_size, scale, counts, hint)
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
    cos_w = None if W is None else metrics.prototype_cosines(W)
    rows, notes, tables = [], [], {}
    train_means = None
    for name, p in passes.items():
        split_rows, reading = stats.split_rows(
            name, p, k, W, cos_w, groups, center, bins, train_means
        )
        st = reading.stats
        train_means = st.means if name == "train" else train_means
        rows += split_rows
        tables[name] = (
            stats.per_class(name, p, k, W, counts, group_of, reading),
            stats.reliability(name, reading, bins),
        )
        if st is None:
            notes.append(f"the {name} split lacks a class: NC1-NC3 are left out there")
    notes[:0] = [
        _scale_note(read.rows if rows_read else None, scale),
        diagnosis_layer.layer_note(read, rows_read, features is not None),
    ]
    return Diagnosis(
        frame=pd.DataFrame(rows, columns=["split", "group", "metric", "definition", "value"]),
        per_class=pd.concat([t[0] for t in tables.values()], ignore_index=True),
        cosines=cos_w,
        reliability=pd.concat([t[1] for t in tables.values()], ignore_index=True),
        center=center,
        logit_scale=scale,
        split_note=_split_note(passes, k, center),
        notes=tuple(notes),
        layer=read.path if rows_read else None,
    )


def _checkpoint_list(checkpoints: Any) -> list[tuple[int, Any]]:
    """``(epoch, state dict or path)`` pairs, epochs distinct integers >= 0, in epoch order."""
    rule = "a mapping epoch -> state dict or path, or a sequence of (epoch, state) pairs"
    if isinstance(checkpoints, Mapping):
        pairs = list(checkpoints.items())
    elif isinstance(checkpoints, list | tuple) and all(
        isinstance(p, list | tuple) and len(p) == 2 for p in checkpoints
    ):
        pairs = [tuple(p) for p in checkpoints]
    else:
        raise invalid("checkpoints", checkpoints, rule)
    if not pairs:
        raise invalid("checkpoints", checkpoints, f"{rule}, not empty")
    epochs = [check_int("checkpoints epoch", e, 0) for e, _ in pairs]
    if len(set(epochs)) != len(epochs):
        raise invalid("checkpoints", f"epochs {epochs}", "each epoch once")
    for epoch, state in pairs:
        if not isinstance(state, Mapping | str | Path):
            raise invalid(f"checkpoints[{epoch}]", state, "a state dict or the path of one")
        if isinstance(state, str | Path) and not Path(state).is_file():
            raise invalid(f"checkpoints[{epoch}]", str(state), "the path of a file")
    return sorted(zip(epochs, (s for _, s in pairs), strict=True), key=lambda p: p[0])


def diagnose_checkpoints(
    model_fn: Callable[[], nn.Module],
    checkpoints: Any,
    data: Any,
    class_counts: Any = None,
    **kwargs: Any,
) -> pd.DataFrame:
    """:func:`diagnose` at every checkpoint of a training run: neural collapse, accuracy and
    calibration over the epochs, in one tidy frame.

    Args:
        model_fn: ``() -> nn.Module``, a model of the trained architecture, into which each
            checkpoint's state dict is loaded (``load_state_dict``, strict).
        checkpoints: a mapping ``epoch -> state`` or a sequence of ``(epoch, state)`` pairs;
            a state is a state dict or the path of a file ``torch.save`` wrote one to (read
            with ``weights_only=True`` onto the CPU). Epochs are distinct integers >= 0.
        data, class_counts: :func:`diagnose`'s (the training split, its counts).
        **kwargs: the rest of :func:`diagnose`'s arguments (``test=``, ``center=``, ...).

    Returns:
        :attr:`Diagnosis.frame` of each checkpoint, concatenated in epoch order, with an
        ``epoch`` column first: one row per (epoch, split, group, metric, definition).
    """
    import pandas as pd
    import torch

    if not callable(model_fn) or isinstance(model_fn, torch.nn.Module):
        raise invalid("model_fn", model_fn, "a function () -> a fresh model (an nn.Module)")
    frames = []
    for epoch, state in _checkpoint_list(checkpoints):
        if not isinstance(state, Mapping):
            state = torch.load(state, map_location="cpu", weights_only=True)
        model = model_fn()
        if not isinstance(model, torch.nn.Module):
            raise invalid("model_fn", f"a function returning {type(model).__name__}", "a module")
        model.load_state_dict(state)
        frame = diagnose(model, data, class_counts, **kwargs).frame
        frames.append(frame.assign(epoch=epoch)[["epoch", *frame.columns]])
    return pd.concat(frames, ignore_index=True)
