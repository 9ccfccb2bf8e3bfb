r"""
# `post_hoc`: re-balancing a trained classifier after training

* logit adjustment $z_j - \tau \log \pi_j$ (Menon et al. 2021), on the scaled logits;
* $\tau$-normalisation $w_j / \|w_j\|^\tau$ (Kang et al. 2020) of the classifier layer's
  rows, the layer's output being the model's logits (the bias is kept). It leaves a cosine
  head's and an equal-norm anchored head's predictions unchanged.

Each $\tau$ is chosen on ``held_out`` (a balanced validation split, never the test split nor
the training split) by :func:`palviz.calibration.choose_tau`, the best mean per-class accuracy
over the grid. :class:`PostHoc` holds the accuracy and ECE before and after, the curve over
$\tau$, the re-balanced logits and, through :meth:`PostHoc.model`, a copy of the model that
outputs them.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from palviz import calibration, metrics
from palviz import diagnosis_inputs as inputs
from palviz.checks import as_labels, check_choice, check_int, invalid
from palviz.diagnosis_pass import forward, prepare

if TYPE_CHECKING:
    import pandas as pd
    import torch
    from torch import nn

__all__ = ["METHODS", "PostHoc", "post_hoc"]

#: The trained model and the two re-balancings.
METHODS = ("none", "logit adjustment", "tau-normalisation")


@dataclass
class PostHoc:
    r"""What :func:`post_hoc` found.

    Attributes:
        table: columns ``method`` (:data:`METHODS`; ``"tau-normalisation"`` only when the
            classifier rows were read), ``tau`` (the chosen one; 0 for ``"none"``, the trained
            model, which is $\tau = 0$ of either method), ``split`` (``"test"``, else
            ``"held_out"`` when no test split was given), ``group`` (``"all"``: over the
            samples; a shot group: the mean of its classes' accuracies), ``accuracy``, ``ECE``.
        curve: columns ``method``, ``tau``, ``split`` (``"held_out"``: what chose $\tau$;
            ``"test"``), ``accuracy`` (mean per-class accuracy, what :func:`choose_tau`
            maximises), for every $\tau$ of the grid.
        logits: per method, the re-balanced logits of the split of ``table`` at the chosen
            $\tau$, float64 `[N, K]`.
        taus: the chosen $\tau$ per method.
        notes: what the call assumed or warned of.
    """

    table: pd.DataFrame
    curve: pd.DataFrame
    logits: dict[str, np.ndarray]
    taus: dict[str, float]
    notes: tuple[str, ...] = ()
    _make: dict[str, Callable[[], nn.Module]] = field(default_factory=dict, repr=False)

    def model(self, method: str) -> nn.Module:
        """A copy of the model whose output is ``method``'s re-balanced logits (divided by
        ``logit_scale``: the same scale as the model's own output)."""
        check_choice("method", method, tuple(self._make))
        return self._make[method]()


def _shifted(model: nn.Module, offset: np.ndarray) -> nn.Module:
    """A copy of ``model`` whose output is moved by a constant per class, ``z - offset``."""
    import torch

    class Shifted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = copy.deepcopy(model)
            self.register_buffer("offset", torch.as_tensor(offset, dtype=torch.float32))

        def forward(self, x):
            out = self.model(x)
            return out - self.offset.to(out.dtype)  # z_j - tau log pi_j / s

    return Shifted()


def _normalise_rows(head: nn.Module, tau: float) -> None:
    """Tau-normalises, in place, the rows of a palviz head or ``nn.Linear``."""
    import torch

    from palviz.heads import LinearHead

    weight = head.fc.weight if isinstance(head, LinearHead) else head.weight
    with torch.no_grad():
        new = calibration.tau_normalize(weight.detach().double().cpu().numpy(), tau)
        weight.copy_(torch.as_tensor(new, dtype=weight.dtype))  # w_j / ||w_j||^tau


def _tau_normalised(model: nn.Module, rows: nn.Module, tau: float) -> nn.Module:
    """A copy of ``model`` with the rows of its module ``rows`` tau-normalised."""
    memo: dict[int, Any] = {}
    out = copy.deepcopy(model, memo)
    _normalise_rows(memo[id(rows)], tau)  # the copy of the rows' module
    return out


def _tau_logits(rows: nn.Module, h: np.ndarray, tau: float, scale: float) -> np.ndarray:
    """The logits of the rows' module on ``h`` with its rows tau-normalised, on the CPU in
    float64."""
    import torch

    head = copy.deepcopy(rows).to("cpu", torch.float64)
    _normalise_rows(head, tau)
    with torch.no_grad():
        return head(torch.as_tensor(h)).numpy() * scale


def _counted(data: Any, batch_size: int) -> np.ndarray:
    """The class counts of the training split ``data``'s labels (no forward pass)."""
    labels = np.concatenate([y.numpy() for _, y in inputs.batches(data, batch_size, "data")])
    y = as_labels("data labels", labels)
    return np.bincount(y).astype(np.float64)


def _same_split(a: Any, b: Any) -> bool:
    """Whether two splits are one object, or (x, y) tuples of one input tensor."""
    if a is b:
        return True
    return isinstance(a, tuple | list) and isinstance(b, tuple | list) and a[0] is b[0]


def _held_out_notes(held_out, data, test, targets, counts) -> list[str]:
    """A warning when ``held_out`` is the training or the test split, or holds exactly the
    training counts (then likely the training split)."""
    for name, split in (("the training split", data), ("the test split", test)):
        if split is not None and _same_split(held_out, split):
            return [f"held_out is {name}: tau chosen there flatters the re-balancing"]
    if np.array_equal(np.bincount(targets, minlength=counts.size), counts):
        return [
            "held_out holds exactly the training class counts: if it is the training split, "
            "tau chosen there flatters the re-balancing"
        ]
    return []


def _rows(method, tau, split, z, y, counts, bins):
    """Accuracy and ECE of logits ``z`` over the split and per shot group."""
    conf, preds = calibration.confidences(z, kind="logits")
    correct = preds == y
    per_class = metrics.per_class_accuracy(preds, y, counts.size)
    ece = calibration.ece_of_bins(calibration.bin_confidences(conf, correct, bins))
    out = [(method, tau, split, "all", float(correct.mean()), ece)]
    for group, cls in metrics.shot_groups(counts).items():
        mask = np.isin(y, cls)
        if mask.any():
            bins_of = calibration.bin_confidences(conf[mask], correct[mask], bins)
            acc = float(np.nanmean(per_class[cls]))  # mean of the group's class accuracies
            out.append((method, tau, split, group, acc, calibration.ece_of_bins(bins_of)))
    return out


def post_hoc(
    model: nn.Module,
    data: Any = None,
    class_counts: Any = None,
    *,
    held_out: Any,
    test: Any = None,
    taus: Sequence[float] = calibration.TAU_GRID,
    bins: int = 15,
    features: Callable[[torch.Tensor], torch.Tensor] | None = None,
    logit_scale: float | None = None,
    batch_size: int = 256,
    device: str | torch.device | None = None,
    layer: str | nn.Module | None = None,
) -> PostHoc:
    r"""Re-balance a trained classifier after training, $\tau$ chosen on ``held_out``.

    Args:
        model: as :func:`palviz.diagnose`'s.
        data: the training split (the forms of :func:`palviz.diagnose`'s ``data``): only its
            labels are read, for the class counts when ``class_counts`` is ``None``; ``None``
            when ``class_counts`` is given.
        class_counts: the training counts $n_j$, one per logit; default: counted from ``data``.
        held_out: the split that chooses $\tau$, balanced and disjoint from the training
            split (a warning when it is ``data``, or holds exactly the training counts).
        test: the split that reports the result; default: none, and ``table`` reports on
            ``held_out`` (which chose $\tau$, so it flatters the re-balancing).
        taus: the grid of $\tau$ (:data:`palviz.calibration.TAU_GRID`: 0, 0.1, ..., 2).
        bins: the ECE's confidence bins (15).
        features, logit_scale, batch_size, device, layer: :func:`palviz.diagnose`'s, with its
            checks.
    """
    import pandas as pd

    read, scale, dev = prepare(model, device, logit_scale, features, batch_size, layer)
    check_int("bins", bins, 1)
    inputs.check_split("held_out", held_out)
    if test is not None:
        inputs.check_split("test", test)
    if class_counts is None:
        if data is None:
            raise invalid(
                "class_counts", None, "the training counts, or pass data= the training split"
            )
        inputs.check_split("data", data)
        class_counts = _counted(data, batch_size)
    counts, hint = inputs.check_counts(class_counts, None)
    splits = {"held_out": ("held_out", held_out)}
    if test is not None:
        splits["test"] = ("test", test)
    passes = forward(model, splits, read, features, dev, batch_size, scale, counts, hint)
    val = passes["held_out"]
    notes = _held_out_notes(held_out, data, test, val.targets, counts)
    for note in notes:
        warnings.warn(note, UserWarning, stacklevel=2)
    report = "test" if test is not None else "held_out"
    methods: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
        "logit adjustment": lambda p, t: calibration.logit_adjust(p.logits, counts, t)
    }
    if read.rows is not None and features is None:  # the rows' output is the logits (checked)
        methods["tau-normalisation"] = lambda p, t: _tau_logits(read.rows, p.features, t, scale)
    table = _rows("none", 0.0, report, passes[report].logits, passes[report].targets, counts, bins)
    curve, logits, chosen = [], {"none": passes[report].logits}, {"none": 0.0}
    for method, at in methods.items():
        tau, acc = calibration.choose_tau(lambda t, at=at: at(val, t), val.targets, taus)
        chosen[method], logits[method] = tau, at(passes[report], tau)
        grid = [float(t) for t in np.atleast_1d(np.asarray(taus, dtype=np.float64))]
        curve += [(method, t, "held_out", a) for t, a in zip(grid, acc, strict=True)]
        if test is not None:
            y = passes["test"].targets
            for t in grid:
                acc_t = metrics.per_class_accuracy(at(passes["test"], t), y, counts.size)
                curve.append((method, t, "test", float(np.nanmean(acc_t))))
        table += _rows(method, tau, report, logits[method], passes[report].targets, counts, bins)
    make = {"none": lambda: copy.deepcopy(model)}
    offset = chosen["logit adjustment"] * np.log(counts / counts.sum()) / scale  # tau log pi / s
    make["logit adjustment"] = lambda: _shifted(model, offset)
    if "tau-normalisation" in chosen:
        make["tau-normalisation"] = lambda: _tau_normalised(
            model, read.rows, chosen["tau-normalisation"]
        )
    return PostHoc(
        table=pd.DataFrame(table, columns=["method", "tau", "split", "group", "accuracy", "ECE"]),
        curve=pd.DataFrame(curve, columns=["method", "tau", "split", "accuracy"]),
        logits=logits,
        taus=chosen,
        notes=tuple(notes),
        _make=make,
    )
