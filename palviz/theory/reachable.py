r"""
# What a ReLU feature can reach

Features that come out of a ReLU are non-negative, so they cannot point anywhere:
`reachable_cosine` is the best cosine a feature $z \geq 0$ can have with each prototype,
$\|w_i^+\| / \|w_i\|$, and `orientation_report` adds how many units carry each prototype's
positive part and what is left once its strongest unit is dead. Both are also importable from
:mod:`palviz.theory`.

Everything is computed in float64 and returned as NumPy arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from palviz.theory._inputs import as_float64 as _as_float64

__all__ = ["orientation_report", "reachable_cosine"]


def _prototype_rows(W: Any) -> np.ndarray:
    W = _as_float64("W", W).numpy()
    if W.ndim != 2 or W.shape[0] < 1:
        raise ValueError(f"W must have shape (num_classes, dim), got {W.shape}")
    if np.any(np.linalg.norm(W, axis=1) == 0):
        raise ValueError("every prototype must be non-zero")
    return W


def reachable_cosine(W: Any) -> np.ndarray:
    r"""The best cosine a non-negative feature can have with each prototype:
    $\max_{z \geq 0,\, z \neq 0} \cos(z, w_i) = \|w_i^+\| / \|w_i\|$, $w^+ = \max(w, 0)$.

    Networks whose features come out of a ReLU only produce $z \geq 0$, so this is how close
    such a feature can get to its class's prototype.

    **Proof.** Write $w = w^+ - w^-$ with $w^+, w^- \geq 0$ on disjoint coordinates. For
    $z \geq 0$: $w^\top z = w^{+\top} z - w^{-\top} z \leq w^{+\top} z \leq \|w^+\|\,\|z\|$
    (Cauchy-Schwarz), so $\cos(z, w) \leq \|w^+\| / \|w\|$. At $z = w^+$ both steps are
    equalities ($w^{-\top} w^+ = 0$, and $z$ is parallel to $w^+$): the bound is attained.
    (A prototype with no positive entry is the exception: there the best is its largest
    entry over $\|w\|$, at the unit vector of that coordinate, and that is returned.)

    Args:
        W: prototypes as rows, `[num_classes, dim]`, none of them zero.

    Returns:
        float64 array `[num_classes]`.
    """
    W = _prototype_rows(W)
    norms = np.linalg.norm(W, axis=1)
    positive = np.linalg.norm(np.maximum(W, 0.0), axis=1)
    return np.where(positive > 0, positive, W.max(axis=1)) / norms


def orientation_report(W: Any) -> dict[str, np.ndarray]:
    r"""How well a ReLU feature can point at each prototype, and on how many units it hangs.

    Returns:
        dict of float64 arrays `[num_classes]`:

        * ``"reachable_cosine"``: `reachable_cosine` $\|w^+\| / \|w\|$.
        * ``"units"``: the participation ratio of the positive part,
          $(\sum_u (w_u^+)^2)^2 / \sum_u (w_u^+)^4$: the number of units carrying it (exactly
          $m$ when $w^+$ is spread evenly over $m$ units, 1 for a single unit).
        * ``"reachable_without_top_unit"``: the reachable cosine once the unit with the largest
          positive entry is dead (outputs 0 for every input): $\|w^+\|$ without that entry,
          over $\|w\|$. 0 means one dead ReLU unit leaves no feature that points towards
          the class.
    """
    W = _prototype_rows(W)
    norms = np.linalg.norm(W, axis=1)
    plus = np.maximum(W, 0.0)
    sq = plus**2
    with np.errstate(invalid="ignore", divide="ignore"):
        units = np.where(sq.sum(axis=1) > 0, sq.sum(axis=1) ** 2 / (sq**2).sum(axis=1), 0.0)
    without_top = np.sqrt(np.maximum(sq.sum(axis=1) - sq.max(axis=1), 0.0)) / norms
    return {
        "reachable_cosine": reachable_cosine(W),
        "units": units,
        "reachable_without_top_unit": without_top,
    }
