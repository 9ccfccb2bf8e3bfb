r"""
# The measures of one split for :func:`palviz.diagnose`, each named by its definition

:func:`split_rows` turns the features, logits and labels of one split into the rows of
:attr:`palviz.diagnosis.Diagnosis.frame`: ``(split, group, metric, definition, value)``. The
class statistics are computed once per split (:class:`ClassStats`): the class means, the
centred means $M$, and each class's share of NC1 (:func:`palviz.collapse.nc1_per_class`), from
which NC1 of a shot group is a sum, so the data is read once and no group recomputes
$\Sigma_B^{+}$. The cosine matrices of $M$ and of the classifier rows $W$ are computed once and
shared by every group's NC2. The formulas live in :mod:`palviz.collapse` and
:mod:`palviz.calibration`; this module only gathers them.

Where the literature measures one property in two forms, both are rows of the frame, told apart
by ``definition`` (:data:`DEFINITIONS`; the first form listed is what
:meth:`~palviz.diagnosis.Diagnosis.value` returns by default):

* ``"Papyan"``: the forms of Papyan, Han & Donoho (2020): NC1 $\mathrm{Tr}(\Sigma_W
  \Sigma_B^{+})/K$, NC2 as the spreads of norms and cosines, NC3 $\|W/\|W\|_F -
  M/\|M\|_F\|_F$, NC4 the fraction of samples where the classifier and the nearest class mean
  disagree;
* ``"ETF distance"``: NC2 and NC3 as the distance of a normalised Gram matrix ($VV^\top$,
  $WM^\top$) to the simplex ETF's (tding1/Neural-Collapse, rhubarbwu/neural-collapse);
* ``"agreement"``: NC4 as the fraction where they agree (rhubarbwu/neural-collapse);
* ``"Guo"``: the ECE over equal-width confidence bins (Guo et al. 2017);
* ``"palviz"``: a reading with one form (accuracy, margins, vanished rows, the minimum angle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from palviz import calibration, collapse, metrics

__all__ = ["DEFINITIONS", "ClassStats", "Reading", "per_class", "reliability", "split_rows"]

#: Each definition of the frame's ``definition`` column: (what it is, where it comes from).
DEFINITIONS = {
    "Papyan": (
        "the form of Papyan, Han & Donoho (2020)",
        "Papyan et al., PNAS 2020, Fig. 2-7; tding1/Neural-Collapse validate_NC.py for NC1",
    ),
    "ETF distance": (
        "||G / ||G||_F - (I - 11^T/K) / sqrt(K-1)||_F, G = V V^T (NC2) or W M^T (NC3)",
        "tding1/Neural-Collapse validate_NC.py compute_ETF, compute_W_H_relation; "
        "rhubarbwu/neural-collapse measure.py simplex_etf_error, self_duality_error",
    ),
    "agreement": (
        "1 - NC4: the fraction where classifier and nearest class mean agree",
        "rhubarbwu/neural-collapse measure.py clf_ncc_agreement",
    ),
    "Guo": ("equal-width confidence bins", "Guo, Pleiss, Sun & Weinberger, ICML 2017"),
    "palviz": ("one form", "palviz.metrics"),
}


@dataclass
class ClassStats:
    """The class statistics of one split with every class present, computed once."""

    counts: np.ndarray  # n_c [K]
    means: np.ndarray  # mu_c [K, d]
    centred: np.ndarray  # M, rows mu_c - mu_G [K, d]
    nc1_parts: np.ndarray  # each class's share of NC1 [K]

    @classmethod
    def of(cls, h: np.ndarray, y: np.ndarray, k: int, center: str) -> ClassStats:
        means = collapse.class_means(h, y, k)
        mu_g = means.mean(axis=0) if center == "class_means" else h.mean(axis=0)
        return cls(
            counts=np.bincount(y, minlength=k),
            means=means,
            centred=means - mu_g,  # mu_c - mu_G
            nc1_parts=collapse.nc1_per_class(h, y, k, center),
        )

    def nc1(self, classes: np.ndarray) -> float:
        """NC1 over the samples of ``classes``: their shares over their number of samples."""
        return float(self.nc1_parts[classes].sum() / self.counts[classes].sum())


@dataclass
class Reading:
    """What one split gives beside its rows: its :class:`ClassStats` (``None`` when a class
    has no sample), the top-1 confidences, predictions, whether each is right, the margins."""

    stats: ClassStats | None
    conf: np.ndarray
    preds: np.ndarray
    correct: np.ndarray
    margins: np.ndarray


def split_rows(split, p, k, W, cos_w, groups, center, bins, train_means):
    """Rows ``(split, group, metric, definition, value)`` of one split and its
    :class:`Reading` (``p``: its features, logits, targets; ``W``, ``cos_w``: the classifier
    rows and their cosines, or ``None``; ``train_means``: NC4's rule on the test split).

    A measure of a shot group that holds every class is the whole split's, taken once."""
    rows: list[tuple[str, str, str, str, float]] = []
    y, z, h = p.targets, p.logits, p.features
    members = {"all": np.arange(k), **groups}
    masks = {group: np.isin(y, cls) for group, cls in members.items()}

    def add(group, metric, value, definition="palviz"):
        if value is not None and np.isfinite(value):
            rows.append((split, group, metric, definition, float(value)))

    def by_group(metric, definition, measure, least=1):
        """``measure(classes, mask)`` per group of at least ``least`` classes and a sample."""
        whole = measure(members["all"], masks["all"])
        for group, cls in members.items():
            if cls.size >= least and masks[group].any():
                add(
                    group,
                    metric,
                    whole if cls.size == k else measure(cls, masks[group]),
                    definition,
                )

    conf, preds = calibration.confidences(z, kind="logits")  # one softmax per split
    read = Reading(None, conf, preds, preds == y, metrics.sample_margins(z, y))
    per_class_acc = metrics.per_class_accuracy(preds, y, k)
    add("all", "accuracy", np.mean(read.correct))
    add("all", "mean per-class accuracy", np.nanmean(per_class_acc))
    for group, cls in groups.items():
        if masks[group].any():  # a shot group's accuracy: the mean of its classes'
            add(group, "accuracy", np.nanmean(per_class_acc[cls]))

    def ece(cls, mask):
        return calibration.ece_of_bins(
            calibration.bin_confidences(conf[mask], read.correct[mask], bins)
        )

    by_group("ECE", "Guo", ece)
    by_group("mean sample margin", "palviz", lambda cls, mask: read.margins[mask].mean())
    if np.unique(y).size == k:  # every class has a sample: the class means exist
        read.stats = stats = ClassStats.of(h, y, k, center)
        M = stats.centred
        add("all", "vanished class means", metrics.vanished_rows(M).sum())
        by_group("NC1", "Papyan", lambda cls, mask: stats.nc1(cls))
        _spreads(by_group, add, M, metrics.prototype_cosines(M), "means")
        if W is not None:
            add("all", "NC3", collapse.nc3(W, M), "Papyan")
            add("all", "NC3", collapse.duality_distance(W, M), "ETF distance")
    rule = train_means if train_means is not None else getattr(read.stats, "means", None)
    if rule is not None:
        ncc = collapse.ncc_predictions(h, rule)  # argmin_c ||h - mu_c||
        by_group("NC4", "Papyan", lambda cls, mask: np.mean(preds[mask] != ncc[mask]))
        # rhubarbwu's form: the agreement, 1 - NC4
        by_group("NC4", "agreement", lambda cls, mask: np.mean(preds[mask] == ncc[mask]))
    if W is not None and split == "train":
        _spreads(by_group, add, W, cos_w, "classifier")
        add("all", "min prototype angle (deg)", metrics.min_prototype_angle(W, cosines=cos_w))
        add("all", "vanished classifier rows", metrics.vanished_rows(W).sum())
    return rows, read


def _spreads(by_group, add, vectors, cos, on: str) -> None:
    """NC2 of ``vectors`` (``on``: "means" or "classifier"): the three spreads per group, the
    distance to the simplex ETF over all classes."""
    by_group(f"NC2 equinorm ({on})", "Papyan", lambda cls, m: collapse.equinorm(vectors[cls]), 2)
    by_group(
        f"NC2 equiangularity ({on})",
        "Papyan",
        lambda cls, m: collapse.equiangularity(vectors, cls, cosines=cos),
        2,
    )
    by_group(
        f"NC2 max-angle ({on})",
        "Papyan",
        lambda cls, m: collapse.max_angle(vectors, cls, cosines=cos),
        2,
    )
    add("all", f"NC2 ETF distance ({on})", collapse.etf_distance(vectors), "ETF distance")


def _class_mean(values: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    """Mean of ``values`` over the samples of each class; NaN for a class with no sample."""
    n = np.bincount(y, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            n > 0, np.bincount(y, weights=values, minlength=k) / np.maximum(n, 1), np.nan
        )


def per_class(split, p, k, W, counts, group_of, read: Reading) -> Any:
    """One row per class of one split: count, group, accuracy, norms, margin, confidence."""
    import pandas as pd

    y = p.targets
    M = None if read.stats is None else read.stats.centred
    return pd.DataFrame(
        {
            "split": split,
            "class": np.arange(k),
            "count": counts.astype(np.int64),
            "group": group_of,
            "accuracy": metrics.per_class_accuracy(read.preds, y, k),
            "classifier_norm": np.full(k, np.nan) if W is None else metrics.weight_norms(W),
            "feature_mean_norm": np.full(k, np.nan) if M is None else np.linalg.norm(M, axis=1),
            "mean_margin": _class_mean(read.margins, y, k),
            # metrics.mean_confidence_per_class, from the confidences already taken
            "mean_confidence": _class_mean(read.conf, y, k),
        }
    )


def reliability(split, read: Reading, bins) -> Any:
    """The reliability bins of one split (:func:`palviz.calibration.bin_confidences`)."""
    import pandas as pd

    r = calibration.bin_confidences(read.conf, read.correct, bins)
    return pd.DataFrame({"split": split, "bin": np.arange(bins), **r})
