r"""
# Metrics: what the notebooks measure

NumPy arrays or torch tensors in, plain Python numbers or NumPy arrays out. Accuracies are
fractions in $[0, 1]$. Shapes: logits `[N, k]`, predictions and targets `[N]` (integer class
indices in $[0, k)$), features `[N, d]`, class vectors $W$ `[k, d]` (one row per class, as the
heads' `prototypes`). A per-class result (`per_class_accuracy`, `*_per_class`) is a float64
array `[k]`, NaN for a class with no sample.

* **Per-class and shot-group accuracy** (LDAM-DRW convention): many-shot classes have
  $> 100$ training images, medium-shot $20..100$, few-shot $< 20$; a group's accuracy is the
  mean of its classes' accuracies, and a group with no class is ``None`` (reported as n/a).
* **Geometry of the classifier**: pairwise cosines $\hat w_i^\top \hat w_j$, the minimum angle
  $\min_{i \neq j} \arccos(\hat w_i^\top \hat w_j)$ (the regular simplex has
  $\arccos(-\frac{1}{k-1})$, e.g. 96.38 degrees for $k = 10$), weight and feature norms. A class
  vector that has *vanished* (norm at most `VANISHED_NORM` times the root-mean-square norm of
  all the class vectors) has no direction: every cosine with it is NaN ("undefined: vanished"),
  here and in :mod:`palviz.theory.layer_peeled`, which calls the same `vanished_rows`.
* **Margins and confidence**: sample margin $\gamma_i = z_{i, y_i} - \max_{j \neq y_i} z_{ij}$
  (PAL's $\gamma_i$ when the logits are cosines), mean top softmax probability per class.
* **Label noise**: confusion counts, the realised transition matrix
  $T_{ij} = P(\tilde y = j \mid y = i)$ and the realised noise rate $P(\tilde y \neq y)$.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from palviz.checks import as_labels, as_matrix, check_num_classes, check_real, invalid

__all__ = [
    "SHOT_GROUPS",
    "VANISHED_NORM",
    "alive_units",
    "alive_reach",
    "confusion_matrix",
    "feature_norms_per_class",
    "mean_confidence_per_class",
    "mean_pairwise_cosine",
    "min_prototype_angle",
    "nan_to_none",
    "per_class_accuracy",
    "prototype_cosines",
    "realised_noise_rate",
    "sample_margins",
    "shot_group_accuracy",
    "shot_groups",
    "simplex_error",
    "transition_matrix",
    "vanished_rows",
    "weight_norms",
]

SHOT_GROUPS = ("many", "medium", "few")

#: A class vector whose norm is at most this fraction of the root-mean-square norm of all the
#: class vectors, $\sqrt{\frac{1}{k}\sum_j \|w_j\|^2}$ ($= \sqrt{E_W}$ in the layer-peeled
#: model, whose energy constraint is active), has vanished: its cosines are undefined (NaN).
VANISHED_NORM = 1e-4


# ----------------------------------------------------------------------------------------------
# conversion and validation
# ----------------------------------------------------------------------------------------------
def nan_to_none(values: Any) -> list[float | None]:
    """``values`` as a JSON-ready list of floats, NaN as ``None`` (an empty class's accuracy)."""
    return [None if np.isnan(v) else float(v) for v in np.asarray(values, dtype=float).ravel()]


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def _same_length(a_name: str, a: np.ndarray, b_name: str, b: np.ndarray) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{a_name} and {b_name} must have the same length, got {a.shape[0]} and {b.shape[0]}"
        )


def _prototypes(W: Any) -> np.ndarray:
    W = as_matrix("W", W)
    if W.shape[0] < 2:
        raise ValueError(f"W must have at least 2 rows (classes), got shape {W.shape}")
    return W


def _per_class_mean(values: np.ndarray, targets: np.ndarray, num_classes: int) -> np.ndarray:
    """Mean of `values` over the samples of each class; NaN for a class with no sample."""
    counts = np.bincount(targets, minlength=num_classes).astype(np.float64)
    sums = np.bincount(targets, weights=values, minlength=num_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


# ----------------------------------------------------------------------------------------------
# accuracy
# ----------------------------------------------------------------------------------------------
def per_class_accuracy(logits_or_preds: Any, targets: Any, num_classes: int) -> np.ndarray:
    r"""Accuracy of each class: $\mathrm{acc}_c = \frac{|\{i: y_i = c,\ \hat y_i = c\}|}
    {|\{i: y_i = c\}|}$.

    Args:
        logits_or_preds: logits `[N, num_classes]` (prediction = argmax) or predicted class
            indices `[N]`.
        targets: true classes `[N]`.
        num_classes: $k$.

    Returns:
        float64 array `[num_classes]` in $[0, 1]$; NaN for a class with no sample.
    """
    k = check_num_classes(num_classes)
    y = as_labels("targets", targets, k)
    x = _to_numpy(logits_or_preds)
    if x.ndim == 2:
        preds = as_matrix("logits", x, rows=y.shape[0], cols=k).argmax(axis=1)
    elif x.ndim == 1:
        preds = as_labels("preds", x, k)
        _same_length("preds", preds, "targets", y)
    else:
        raise ValueError(
            f"logits_or_preds must be logits (N, {k}) or predictions (N,), got shape {x.shape}"
        )
    return _per_class_mean((preds == y).astype(np.float64), y, k)


def shot_groups(train_counts: Any, many: int = 100, few: int = 20) -> dict[str, np.ndarray]:
    r"""Class indices of each shot group: many ($n_c >$ `many`), medium
    (`few` $\leq n_c \leq$ `many`), few ($n_c <$ `few`), from the training counts $n_c$."""
    n = _to_numpy(train_counts)
    if n.ndim != 1 or n.size == 0:
        raise ValueError(f"train_counts must be a non-empty 1-D array, got shape {n.shape}")
    if np.any(n < 0):
        raise ValueError(f"train_counts must be >= 0, got minimum {n.min()}")
    check_real("many", many)
    if check_real("few", few) > many:
        raise invalid("few", few, f"<= many ({many})")
    idx = np.arange(n.size)
    return {
        "many": idx[n > many],
        "medium": idx[(n >= few) & (n <= many)],
        "few": idx[n < few],
    }


def shot_group_accuracy(
    per_class_acc: Any, train_counts: Any, many: int = 100, few: int = 20
) -> dict[str, float | None]:
    r"""Many / medium / few-shot accuracy.

    Groups by training count $n_c$: many ($n_c > 100$), medium ($20 \leq n_c \leq 100$),
    few ($n_c < 20$). A group's accuracy is the mean of the per-class accuracies of its classes
    (classes without test samples, NaN, are left out), which equals the accuracy over the group's
    test samples when the test set is balanced. A group with no class (or no class with test
    samples) is ``None``, to be shown as n/a, never as 0: CIFAR-10-LT with $\rho = 100$ has no
    few-shot class.

    Args:
        per_class_acc: `[k]` per-class accuracies (from `per_class_accuracy`).
        train_counts: `[k]` training images per class.
        many, few: the thresholds.

    Returns:
        ``{"many": float | None, "medium": float | None, "few": float | None}``.
    """
    acc = _to_numpy(per_class_acc).astype(np.float64)
    if acc.ndim != 1:
        raise ValueError(f"per_class_acc must be 1-D, got shape {acc.shape}")
    groups = shot_groups(train_counts, many, few)
    n = sum(len(g) for g in groups.values())
    if acc.shape[0] != n:
        raise ValueError(
            f"per_class_acc and train_counts must have the same length, got {acc.shape[0]} and {n}"
        )
    out: dict[str, float | None] = {}
    for name in SHOT_GROUPS:
        values = acc[groups[name]]
        values = values[~np.isnan(values)]
        out[name] = float(values.mean()) if values.size else None
    return out


# ----------------------------------------------------------------------------------------------
# geometry of the classifier
# ----------------------------------------------------------------------------------------------
def vanished_rows(X: Any) -> np.ndarray:
    r"""Which rows of `X` `[..., k, d]` have vanished: $\|x_i\| \leq$ `VANISHED_NORM`
    $\cdot \sqrt{\frac{1}{k}\sum_j \|x_j\|^2}$ (bool `[..., k]`; all of them when `X` is 0).

    The one test of "too short to have a direction" for every cosine palviz computes
    (:func:`prototype_cosines`, :func:`mean_pairwise_cosine` and the layer-peeled solutions)."""
    X = _to_numpy(X).astype(np.float64)
    if X.ndim < 2:
        raise ValueError(f"X must have shape (..., k, d), got {X.shape}")
    norms = np.linalg.norm(X, axis=-1)
    rms = np.sqrt(np.mean(norms**2, axis=-1, keepdims=True))  # sqrt((1/k) sum_j ||x_j||^2)
    return norms <= VANISHED_NORM * rms


def prototype_cosines(W: Any) -> np.ndarray:
    r"""Pairwise cosines $\hat w_i^\top \hat w_j$ of the class vectors (rows of `W` `[k, d]`).

    Returns:
        float64 array `[k, k]` (diagonal 1); the row and column of a vanished vector (see
        :func:`vanished_rows`) are NaN: its direction, and so any cosine with it, is undefined.
    """
    W = _prototypes(W)
    gone = vanished_rows(W)
    norms = np.where(gone, 1.0, np.linalg.norm(W, axis=1))
    Wn = W / norms[:, None]
    Wn[gone] = np.nan
    cos = np.clip(Wn @ Wn.T, -1.0, 1.0)  # NaN stays NaN
    np.fill_diagonal(cos, np.where(gone, np.nan, 1.0))
    return cos


def min_prototype_angle(W: Any, *, cosines: np.ndarray | None = None) -> float:
    r"""$\min_{i \neq j} \arccos(\hat w_i^\top \hat w_j)$ in degrees.

    For the regular simplex this is $\arccos(-\frac{1}{k-1})$: 120 for $k = 3$, 96.38 for
    $k = 10$, 90.58 for $k = 100$; it is the largest possible minimum angle when $d \geq k-1$.
    ``cosines``: :func:`prototype_cosines` of ``W`` if already computed.
    """
    cos = prototype_cosines(W) if cosines is None else cosines
    k = cos.shape[0]
    off = ~np.eye(k, dtype=bool)
    return float(np.degrees(np.arccos(np.nanmax(cos[off]))))


def mean_pairwise_cosine(W: Any, classes: Any = None) -> float:
    r"""$\frac{1}{m(m-1)}\sum_{i \neq j} \hat w_i^\top \hat w_j$ over the classes in `classes`
    (default: all). $-\frac{1}{k-1}$ for the regular simplex. Fang et al.'s minority collapse
    is $w_k - w_{k'} \to 0$ for minority classes $k, k'$: this cosine tends to 1 only while
    the minority classifiers keep a length; if one of them vanishes (:func:`vanished_rows`,
    relative to all the rows of `W`) the mean is NaN, "undefined: vanished".

    Args:
        W: `[k, d]`.
        classes: indices of the classes to include (at least 2).
    """
    cos = prototype_cosines(W)
    k = cos.shape[0]
    if classes is None:
        idx = np.arange(k)
    else:
        idx = as_labels("classes", np.atleast_1d(_to_numpy(classes)), k)
        if np.unique(idx).size != idx.size:
            raise ValueError(f"classes must not repeat, got {idx.tolist()}")
    if idx.size < 2:
        raise ValueError(f"classes must name at least 2 classes, got {idx.tolist()}")
    sub = cos[np.ix_(idx, idx)]
    return float(sub[~np.eye(idx.size, dtype=bool)].mean())


def simplex_error(W_or_cosines: Any, *, cosines: bool | None = None) -> float:
    r"""$\max_{i < j} |\hat w_i^\top \hat w_j + \frac{1}{k-1}|$: how far the class vectors are
    from a regular simplex (0 for the simplex, which needs $d \geq k - 1$).

    Args:
        W_or_cosines: class vectors `W` `[k, d]` (rows; normalised here), or their pairwise
            cosines `[k, k]` (as :func:`prototype_cosines` returns).
        cosines: whether the argument is a cosine matrix; ``None`` takes a square, symmetric
            matrix with unit diagonal and entries in $[-1, 1]$ as one.
    """
    a = _prototypes(W_or_cosines)
    k = a.shape[0]
    if cosines is None:
        cosines = (
            a.shape == (k, k)
            and np.allclose(a, a.T, rtol=0.0, atol=1e-12)
            and np.allclose(np.diag(a), 1.0, rtol=0.0, atol=1e-6)
            and bool(np.all(np.abs(a) <= 1.0 + 1e-12))
        )
    elif not isinstance(cosines, bool):
        raise TypeError(f"cosines must be None, True or False, got {cosines!r}")
    if cosines and a.shape != (k, k):
        raise ValueError(f"W_or_cosines must be a square cosine matrix, got shape {a.shape}")
    cos = a if cosines else prototype_cosines(a)
    upper = np.triu_indices(k, 1)
    return float(np.max(np.abs(cos[upper] + 1.0 / (k - 1))))


def weight_norms(W: Any) -> np.ndarray:
    r"""$\|w_c\|_2$ for every class: float64 array `[k]`."""
    return np.linalg.norm(_prototypes(W), axis=1)


def feature_norms_per_class(features: Any, targets: Any, num_classes: int) -> np.ndarray:
    r"""Mean feature norm per class, $\frac{1}{n_c}\sum_{i: y_i = c} \|z_i\|_2$, of the rows of
    ``features`` `[N, d]` grouped by ``targets`` `[N]` (a per-class result, see the module)."""
    k = check_num_classes(num_classes)
    y = as_labels("targets", targets, k)
    f = as_matrix("features", features, rows=y.shape[0])
    return _per_class_mean(np.linalg.norm(f, axis=1), y, k)


def alive_units(features: Any, threshold: float = 0.0) -> np.ndarray:
    r"""Which units of a (ReLU) feature layer fire on any sample: bool array `[d]`, True where
    some row of ``features`` `[N, d]` exceeds ``threshold``. A unit that is zero on every
    sample is *dead*: no input moves it, so it carries no class."""
    check_real("threshold", threshold)
    return (as_matrix("features", features) > threshold).any(axis=0)


def alive_reach(prototypes: Any, alive: Any) -> np.ndarray:
    r"""For each class, the best cosine a non-negative feature that lives on the ``alive``
    units can reach with its prototype: $\|w^+_{	ext{alive}}\| / \|w\|$, float64 `[k]`.

    With every unit alive this is :func:`palviz.theory.reachable_cosine`; a class whose
    prototype has all its positive part on dead units gets 0 (no feature can score it above
    the others' zero), the single-unit failure of the axis orientation."""
    W = _prototypes(prototypes)
    mask = np.asarray(alive, dtype=bool)
    if mask.shape != (W.shape[1],):
        raise invalid("alive", f"shape {mask.shape}", f"a bool vector of length {W.shape[1]}")
    positive = np.where(mask[None, :], np.clip(W, 0.0, None), 0.0)
    return np.linalg.norm(positive, axis=1) / np.linalg.norm(W, axis=1)


# ----------------------------------------------------------------------------------------------
# margins and confidence
# ----------------------------------------------------------------------------------------------
def _logits_and_targets(
    logits: Any, targets: Any, num_classes: int | None
) -> tuple[np.ndarray, np.ndarray]:
    z = _to_numpy(logits)
    if z.ndim != 2 or z.shape[1] < 2:
        raise ValueError(f"logits must have shape (N, C >= 2), got {z.shape}")
    if num_classes is not None and z.shape[1] != num_classes:
        raise ValueError(f"logits must have shape (N, {num_classes}), got {z.shape}")
    y = as_labels("targets", targets, z.shape[1])
    z = as_matrix("logits", z, rows=y.shape[0])
    return z, y


def sample_margins(logits: Any, targets: Any) -> np.ndarray:
    r"""Sample margins $\gamma_i = z_{i, y_i} - \max_{j \neq y_i} z_{ij}$.

    Positive when sample $i$ is classified correctly. With cosine logits (unit features and
    prototypes) this is PAL's sample margin, and $\gamma_{\min} = \min_i \gamma_i$.

    Args:
        logits: `[N, C]`.
        targets: `[N]`.

    Returns:
        float64 array `[N]`.
    """
    z, y = _logits_and_targets(logits, targets, None)
    rows = np.arange(y.shape[0])
    target = z[rows, y]
    others = z.copy()
    others[rows, y] = -np.inf
    return target - others.max(axis=1)


def mean_confidence_per_class(logits: Any, targets: Any, num_classes: int) -> np.ndarray:
    r"""Mean confidence $\max_j \mathrm{softmax}(z_i)_j$ over the samples of each *true* class.

    Over-confidence shows as confidence above accuracy (PAL Sec. 4, Fig. 2 and Sec. B.1).
    Takes ``logits`` `[N, num_classes]` and ``targets`` `[N]`; a per-class result, see the
    module.
    """
    k = check_num_classes(num_classes)
    z, y = _logits_and_targets(logits, targets, k)
    # max_j softmax(z)_j = 1 / sum_j exp(z_j - max z)
    conf = 1.0 / np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1)
    return _per_class_mean(conf, y, k)


# ----------------------------------------------------------------------------------------------
# label noise
# ----------------------------------------------------------------------------------------------
def confusion_matrix(targets: Any, preds: Any, num_classes: int) -> np.ndarray:
    r"""Counts $C_{ij} = |\{n: y_n = i,\ \hat y_n = j\}|$ (rows: true class, columns: predicted).

    Returns:
        int64 array `[num_classes, num_classes]`.
    """
    k = check_num_classes(num_classes)
    y = as_labels("targets", targets, k)
    p = as_labels("preds", preds, k)
    _same_length("targets", y, "preds", p)
    return np.bincount(y * k + p, minlength=k * k).reshape(k, k).astype(np.int64)


def transition_matrix(clean: Any, noisy: Any, num_classes: int) -> np.ndarray:
    r"""Realised noise transition matrix $T_{ij} = P(\tilde y = j \mid y = i)$.

    Row-normalised counts of (clean, noisy) label pairs; each row sums to 1. The diagonal is
    the fraction of class $i$ left untouched. A class with no clean sample gets a NaN row.

    Args:
        clean: clean labels `[N]`.
        noisy: noisy labels `[N]`.
        num_classes: $k$.

    Returns:
        float64 array `[num_classes, num_classes]`.
    """
    counts = confusion_matrix(clean, noisy, num_classes).astype(np.float64)
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, counts / np.maximum(totals, 1), np.nan)


def realised_noise_rate(clean: Any, noisy: Any) -> float:
    r"""Fraction of labels that differ, $\frac{1}{N}|\{n: \tilde y_n \neq y_n\}|$."""
    y = as_labels("clean", clean)
    t = as_labels("noisy", noisy)
    _same_length("clean", y, "noisy", t)
    if y.size == 0:
        raise ValueError("clean and noisy must not be empty")
    return float(np.mean(y != t))
