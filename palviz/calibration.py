r"""
# Calibration and post-hoc re-balancing of a trained classifier

NumPy arrays (or torch tensors) in, floats or float64 arrays out; logits `[N, K]`, targets
`[N]`, class vectors $W$ `[K, d]`.

* **Expected calibration error** (Guo, Pleiss, Sun & Weinberger 2017, "On calibration of
  modern neural networks", Sec. 2): the top-1 confidences $\hat p_i = \max_j
  \mathrm{softmax}(z_i)_j$ fall into $B$ equal-width bins $(\frac{b-1}{B}, \frac{b}{B}]$
  (15 in the paper), and $\mathrm{ECE} = \sum_b \frac{|B_b|}{n}
  |\mathrm{acc}(B_b) - \mathrm{conf}(B_b)|$. Confidence depends on the scale of the logits:
  a cosine head trained with LDAM or ELM at $s = 30$ must be read at $s z$.
* **Post-hoc logit adjustment** (Menon et al. 2021, "Long-tail learning via logit
  adjustment", Sec. 4, eq. 9): $\tilde z_j = z_j - \tau \log \pi_j$ with the training class
  priors $\pi_j = n_j / \sum_c n_c$; $\tau = 1$ is Bayes-consistent for the balanced error.
* **$\tau$-normalisation** (Kang et al. 2020, "Decoupling representation and classifier for
  long-tailed recognition", Sec. 4): $\tilde w_j = w_j / \|w_j\|^\tau$; $\tau = 1$ gives unit
  rows, $\tau = 0$ the trained classifier. It removes the head classes' larger norms. It does
  **nothing** to a cosine head (the logits use $w_j / \|w_j\|$, whatever the norm) nor to an
  anchored head whose prototypes share one norm (every row is divided by the same
  $\|w\|^\tau$, so all logits scale by one positive constant and the argmax is unchanged).
* :func:`choose_tau` picks $\tau$ from a grid by the accuracy on a **held-out** split that the
  caller provides (a balanced validation set): never the test set, whose accuracy it would
  then overstate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from palviz.checks import (
    as_labels,
    as_matrix,
    check_choice,
    check_class_counts,
    check_int,
    check_real,
    invalid,
)
from palviz.metrics import per_class_accuracy

__all__ = [
    "TAU_GRID",
    "bin_confidences",
    "choose_tau",
    "confidences",
    "ece_of_bins",
    "expected_calibration_error",
    "logit_adjust",
    "reliability_bins",
    "softmax",
    "tau_normalize",
]

#: The default grid of $\tau$ for :func:`choose_tau`: 0, 0.1, ..., 2.
TAU_GRID = tuple(round(0.1 * i, 1) for i in range(21))


def softmax(logits: Any) -> np.ndarray:
    r"""$\mathrm{softmax}(z)_j = e^{z_j - \max z} / \sum_c e^{z_c - \max z}$, row-wise."""
    z = as_matrix("logits", logits)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _probabilities(probs_or_logits: Any, kind: str) -> np.ndarray:
    check_choice("kind", kind, ("auto", "probs", "logits"))
    a = as_matrix("probs_or_logits", probs_or_logits)
    if a.shape[1] < 2:
        raise invalid("probs_or_logits", f"shape {a.shape}", "(N, K >= 2)")
    looks_like_probs = bool(np.all(a >= 0) and np.allclose(a.sum(axis=1), 1.0, atol=1e-6))
    if kind == "probs" and not looks_like_probs:
        raise invalid(
            "probs_or_logits", "rows that are not distributions", "rows >= 0 summing to 1"
        )
    if kind == "probs" or (kind == "auto" and looks_like_probs):
        return a
    return softmax(a)


def confidences(probs_or_logits: Any, kind: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    r"""Top-1 confidence $\max_j p_{ij}$ and prediction $\arg\max_j p_{ij}$ of each sample.

    ``kind``: ``"probs"``, ``"logits"`` (softmax taken here) or ``"auto"`` (rows that are
    non-negative and sum to 1 are probabilities, anything else logits)."""
    if kind == "logits":  # max_j softmax(z)_j = 1 / sum_j exp(z_j - max z), no [N, K] division
        z = as_matrix("probs_or_logits", probs_or_logits)
        if z.shape[1] < 2:
            raise invalid("probs_or_logits", f"shape {z.shape}", "(N, K >= 2)")
        top = z.max(axis=1, keepdims=True)
        return 1.0 / np.exp(z - top).sum(axis=1), z.argmax(axis=1)
    p = _probabilities(probs_or_logits, kind)
    return p.max(axis=1), p.argmax(axis=1)


def reliability_bins(
    probs_or_logits: Any, targets: Any, bins: int = 15, kind: str = "auto"
) -> dict[str, np.ndarray]:
    r"""The reliability diagram of Guo et al. (2017): $B$ equal-width bins
    $(\frac{b-1}{B}, \frac{b}{B}]$ of top-1 confidence.

    Returns:
        ``lower``, ``upper`` (the bin edges), ``confidence`` (mean $\hat p$ in the bin),
        ``accuracy`` (fraction correct in the bin), both NaN for an empty bin, and ``count``
        (int64), each `[bins]`.
    """
    B = check_int("bins", bins, 1)
    conf, pred = confidences(probs_or_logits, kind)
    y = as_labels("targets", targets, None)
    if y.shape[0] != conf.shape[0]:
        raise ValueError(
            f"probs_or_logits and targets must have the same length, "
            f"got {conf.shape[0]} and {y.shape[0]}"
        )
    return bin_confidences(conf, pred == y, B)


def bin_confidences(conf: np.ndarray, correct: np.ndarray, bins: int) -> dict[str, np.ndarray]:
    """:func:`reliability_bins` of top-1 confidences ``conf`` `[N]` and whether each
    prediction is right ``correct`` `[N]` (for a caller that has them: no softmax again)."""
    B = check_int("bins", bins, 1)
    edges = np.linspace(0.0, 1.0, B + 1)
    # bin b holds edges[b] < conf <= edges[b + 1] (Guo et al.'s reference code)
    which = np.clip(np.digitize(conf, edges, right=True) - 1, 0, B - 1)
    count = np.bincount(which, minlength=B)
    right = np.bincount(which, weights=np.asarray(correct, dtype=np.float64), minlength=B)
    total_conf = np.bincount(which, weights=conf, minlength=B)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(count > 0, right / np.maximum(count, 1), np.nan)
        confidence = np.where(count > 0, total_conf / np.maximum(count, 1), np.nan)
    return {
        "lower": edges[:-1],
        "upper": edges[1:],
        "confidence": confidence,
        "accuracy": accuracy,
        "count": count.astype(np.int64),
    }


def ece_of_bins(r: dict[str, np.ndarray]) -> float:
    r"""$\sum_b \frac{|B_b|}{n} |\mathrm{acc}(B_b) - \mathrm{conf}(B_b)|$ of the bins of
    :func:`reliability_bins`."""
    n = r["count"].sum()
    if n == 0:
        raise invalid("targets", "no sample", "at least one sample")
    full = r["count"] > 0
    gaps = np.abs(r["accuracy"][full] - r["confidence"][full])  # |acc(B_b) - conf(B_b)|
    return float(np.sum(r["count"][full] / n * gaps))  # sum_b |B_b|/n * gap_b


def expected_calibration_error(
    probs_or_logits: Any, targets: Any, bins: int = 15, kind: str = "auto"
) -> float:
    r"""$\mathrm{ECE} = \sum_b \frac{|B_b|}{n} |\mathrm{acc}(B_b) - \mathrm{conf}(B_b)|$ over
    ``bins`` equal-width bins of top-1 confidence (Guo et al. 2017, 15 bins); in $[0, 1]$.

    Args:
        probs_or_logits: `[N, K]` probabilities or logits (see :func:`confidences`).
        targets: `[N]`.
        bins: $B \geq 1$.
        kind: ``"auto"``, ``"probs"`` or ``"logits"``.
    """
    return ece_of_bins(reliability_bins(probs_or_logits, targets, bins, kind))


def logit_adjust(logits: Any, class_counts: Any, tau: float = 1.0) -> np.ndarray:
    r"""Post-hoc logit adjustment (Menon et al. 2021, eq. 9): $\tilde z_{ij} = z_{ij} - \tau
    \log \pi_j$, $\pi_j = n_j / \sum_c n_c$ the training priors; float64 `[N, K]`.

    Args:
        logits: `[N, K]` (at the scale the loss saw them: $s\cos$ for a cosine head).
        class_counts: the training counts $n_j$ `[K]`, all > 0.
        tau: $\tau$, finite (1: the paper's default; 0: no adjustment).
    """
    counts = check_class_counts("class_counts", class_counts)
    z = as_matrix("logits", logits, cols=counts.size)
    t = check_real("tau", tau)
    prior = counts / counts.sum()  # pi_j = n_j / sum_c n_c
    return z - t * np.log(prior)[None, :]  # z_j - tau log pi_j


def tau_normalize(W: Any, tau: float) -> np.ndarray:
    r"""$\tau$-normalised classifier (Kang et al. 2020): $\tilde w_j = w_j / \|w_j\|^\tau$,
    float64 `[K, d]`. A zero row stays zero. No effect on the decisions of a cosine head,
    nor of an anchored head with equal-norm prototypes (see the module)."""
    W = as_matrix("W", W)
    t = check_real("tau", tau)
    norms = np.linalg.norm(W, axis=1)
    with np.errstate(divide="ignore"):
        scale = np.where(norms > 0, np.power(np.where(norms > 0, norms, 1.0), -t), 0.0)
    return W * scale[:, None]  # w_j / ||w_j||^tau


def choose_tau(
    logits_at: Callable[[float], Any],
    targets: Any,
    taus: Sequence[float] = TAU_GRID,
) -> tuple[float, np.ndarray]:
    r"""The $\tau$ of ``taus`` with the best mean per-class accuracy on a **held-out** split.

    Mean per-class accuracy equals plain accuracy on a balanced split and does not reward the
    head classes on an unbalanced one. Pass a validation split, never the test set: a $\tau$
    chosen on the test set overstates its accuracy. Ties go to the first $\tau$ of the grid.

    Args:
        logits_at: ``tau -> logits [N, K]`` on the held-out split, e.g.
            ``lambda t: logit_adjust(z_val, counts, t)``.
        targets: the held-out labels `[N]`.
        taus: the grid (non-empty, finite).

    Returns:
        ``(tau, accuracies)``: the chosen $\tau$ and the mean per-class accuracy at every
        grid point, float64 `[len(taus)]`.
    """
    if not callable(logits_at):
        raise invalid("logits_at", logits_at, "a function tau -> logits (N, K)")
    grid = [check_real("taus", t) for t in np.atleast_1d(np.asarray(taus, dtype=object)).tolist()]
    if not grid:
        raise invalid("taus", taus, "a non-empty sequence of numbers")
    y = as_labels("targets", targets, None)
    scores = []
    for t in grid:
        z = as_matrix("logits_at(tau)", logits_at(t), rows=y.shape[0])
        scores.append(np.nanmean(per_class_accuracy(z, y, z.shape[1])))
    acc = np.asarray(scores, dtype=np.float64)
    return grid[int(np.argmax(acc))], acc
