"""Inspecting one finished run beyond the numbers of its ``metrics.json``: a metric's history
over the epochs (:func:`history_series`), the geometry of its test features and its head's
prototypes (:func:`feature_geometry`) and how far its noisy labels are from the rule that made
them (:func:`transition_rule_error`). The tables of many runs are
:mod:`palviz.experiments.tables`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from palviz import collapse
from palviz import metrics as pmetrics
from palviz.data import asymmetric_map, flip_count
from palviz.experiments.runcache import RunResult


def history_series(result: RunResult, key: str) -> tuple[np.ndarray, np.ndarray]:
    """``(epochs, values)`` of ``key`` over the epochs whose history row has it (1-based
    epochs, so the last of E epochs is E), e.g. ``"test_acc"`` or ``"min_prototype_angle"``."""
    rows = [r for r in result.metrics["history"] if key in r]
    if not rows:
        raise ValueError(f"no history row of {result.label!r} has {key!r}")
    epochs = np.array([r["epoch"] + 1 for r in rows])
    return epochs, np.array([r[key] for r in rows], dtype=float)


def feature_geometry(result: RunResult) -> dict[str, Any]:
    """The geometry of a finished run, from its test features and its head's prototypes:

    ``prototype_cosines`` `[k, k]` and ``min_prototype_angle`` (degrees) of the classifier
    vectors; ``class_mean_cosines`` `[k, k]` and ``min_class_mean_angle`` of the *centred*
    class means of the test features (:func:`palviz.collapse.centered_means`, the class means
    minus their mean); ``feature_norms`` and ``weight_norms`` `[k]`; ``train_counts``."""
    arrays = result.features()
    k = arrays["prototypes"].shape[0]
    means = collapse.centered_means(arrays["features"], arrays["targets"], k)  # mu_c - mu_G
    return {
        "prototype_cosines": pmetrics.prototype_cosines(arrays["prototypes"]),
        "min_prototype_angle": pmetrics.min_prototype_angle(arrays["prototypes"]),
        "class_mean_cosines": pmetrics.prototype_cosines(means),
        "min_class_mean_angle": pmetrics.min_prototype_angle(means),
        "feature_norms": pmetrics.feature_norms_per_class(arrays["features"], arrays["targets"], k),
        "weight_norms": pmetrics.weight_norms(arrays["prototypes"]),
        "train_counts": result.metrics["train_counts"],
    }


def transition_rule_error(result: RunResult) -> float:
    """How far a noisy run's realised transition matrix is from the rule that made its labels:
    ``flip_count(eta, n_c)`` labels of each class ``c`` flipped (symmetric: off the diagonal;
    asymmetric: to the class :func:`palviz.data.asymmetric_map` names). The largest absolute
    difference over the diagonal (symmetric) or the whole matrix (asymmetric)."""
    T = np.asarray(result.metrics["transition_matrix"], dtype=float)
    n = np.asarray(result.metrics["train_counts"])
    eta, kind = result.spec.noise_rate, result.spec.noise_kind
    flipped = np.array([flip_count(eta, int(c)) for c in n]) / n
    expected = np.eye(len(n))
    if kind == "symmetric":
        return float(np.max(np.abs(np.diag(T) - (1 - flipped))))
    for s, t in asymmetric_map(result.spec.dataset).items():
        expected[s, s], expected[s, t] = 1 - flipped[s], flipped[s]
    return float(np.max(np.abs(T - expected)))
