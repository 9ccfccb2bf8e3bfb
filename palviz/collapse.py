r"""
# Neural collapse: the geometry of the last-layer features and the classifier

NumPy arrays (or torch tensors) in, floats or float64 arrays out; shapes as in
:mod:`palviz.metrics`: features $H$ `[N, d]`, targets `[N]` in $[0, K)$, class vectors $W$
`[K, d]` (one row per class, as the heads' `prototypes`), bias $b$ `[K]`.

Papyan, Han & Donoho (2020, PNAS, "Prevalence of neural collapse during the terminal phase of
deep learning training") observe four properties of a network trained past zero training error,
measured on the **training** set:

* **NC1** within-class variability collapses: $\mathrm{Tr}(\Sigma_W \Sigma_B^{+}) / K \to 0$;
* **NC2** the centred class means $\mu_c - \mu_G$ (and the classifier rows) become equinorm
  and equiangular, cosines $-\frac{1}{K-1}$: a simplex equiangular tight frame (ETF);
* **NC3** the classifier aligns with the class means:
  $\| W / \|W\|_F - M / \|M\|_F \|_F \to 0$, $M$ the centred class means (rows);
* **NC4** the classifier's decision becomes the nearest class mean's.

Conventions, following the paper and the reference code of Zhu et al. (2021),
tding1/Neural-Collapse, ``validate_NC.py`` (``compute_info``, ``compute_Sigma_W``,
``compute_Sigma_B``):

* $\mu_c = \frac{1}{n_c} \sum_{i: y_i = c} h_i$. The **global mean** $\mu_G$ has two readings,
  chosen by ``center``: ``"class_means"`` (default), $\mu_G = \frac{1}{K}\sum_c \mu_c$, the
  balanced convention of the papers (their data sets are balanced, where both agree), or
  ``"samples"``, $\mu_G = \frac{1}{N}\sum_i h_i$ (what ``validate_NC.py`` accumulates). Under
  class imbalance they differ: only the first puts a simplex ETF of class means at the origin.
* $\Sigma_W = \frac{1}{N} \sum_i (h_i - \mu_{y_i})(h_i - \mu_{y_i})^\top$, divided by the number
  of samples $N$ (``Sigma_W /= len(dataloader.dataset)`` in ``validate_NC.py``; Papyan et al.
  write $\mathrm{Ave}_{i,c}$, the same on a balanced set), not per class.
* $\Sigma_B = \frac{1}{K} \sum_c (\mu_c - \mu_G)(\mu_c - \mu_G)^\top$; $^{+}$ the Moore-Penrose
  pseudo-inverse.
* NC2 spreads as in Papyan et al.'s Fig. 2-4: equinorm is the coefficient of variation
  $\mathrm{Std}_c \|v_c\| / \mathrm{Avg}_c \|v_c\|$; **equiangularity** is
  $\mathrm{Std}_{c \neq c'} \cos(v_c, v_{c'})$ (population std over the pairs), which equals the
  std of $\cos + \frac{1}{K-1}$; the **max-angle** reading is
  $\mathrm{Avg}_{c \neq c'} |\cos(v_c, v_{c'}) + \frac{1}{K-1}|$. A vector that has vanished
  (:func:`palviz.metrics.vanished_rows`) has no direction: its cosines are left out (its norm
  stays in equinorm) and :func:`palviz.metrics.vanished_rows` reports it.

Calibration and post-hoc re-balancing live in :mod:`palviz.calibration`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from palviz.checks import check_choice, check_num_classes, invalid
from palviz.metrics import prototype_cosines

__all__ = [
    "CENTERS",
    "as_labels",
    "as_matrix",
    "centered_means",
    "class_means",
    "equiangularity",
    "equinorm",
    "global_mean",
    "max_angle",
    "nc1",
    "nc3",
    "nc4",
    "ncc_predictions",
]

#: The two readings of the global mean $\mu_G$ (see the module).
CENTERS = ("class_means", "samples")

#: The pseudo-inverse's cut, numpy's default: eigenvalues of $\Sigma_B$ at most this times the
#: largest count as 0.
_RCOND = 1e-15


# ----------------------------------------------------------------------------------------------
# the argument checks of this module and of palviz.calibration / palviz.diagnosis, with the
# messages of palviz.metrics
# ----------------------------------------------------------------------------------------------
def _numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def as_labels(name: str, x: Any, num_classes: int | None = None) -> np.ndarray:
    """``x`` as int64 class indices `[N]`, in ``[0, num_classes)`` when given (else >= 0)."""
    a = _numpy(x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D (N,), got shape {a.shape}")
    if a.size == 0:
        return a.astype(np.int64)
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name} must hold integer class indices, got dtype {a.dtype}")
    a = a.astype(np.int64)
    low, high = 0, (num_classes - 1 if num_classes is not None else None)
    if a.min() < low or (high is not None and a.max() > high):
        allowed = f"in [0, {high}] for num_classes={num_classes}" if high is not None else ">= 0"
        raise ValueError(f"{name} must be {allowed}, got values in [{a.min()}, {a.max()}]")
    return a


def as_matrix(name: str, x: Any, rows: int | None = None, cols: int | None = None) -> np.ndarray:
    """``x`` as a finite float64 matrix, of shape ``(rows, cols)`` where given."""
    a = _numpy(x)
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {a.shape}")
    if (rows is not None and a.shape[0] != rows) or (cols is not None and a.shape[1] != cols):
        want = f"({rows if rows is not None else 'N'}, {cols if cols is not None else 'd'})"
        raise ValueError(f"{name} must have shape {want}, got {a.shape}")
    a = np.asarray(a, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got NaN or inf entries")
    return a


def _features_and_targets(
    features: Any, targets: Any, num_classes: int
) -> tuple[np.ndarray, np.ndarray, int]:
    k = check_num_classes(num_classes)
    y = as_labels("targets", targets, k)
    h = as_matrix("features", features, rows=y.shape[0])
    if y.size == 0:
        raise invalid("features", f"shape {h.shape}", "at least one sample")
    missing = np.setdiff1d(np.arange(k), y)
    if missing.size:
        raise invalid(
            "targets", f"no sample of classes {missing.tolist()}", f"every class 0..{k - 1} present"
        )
    return h, y, k


def class_means(features: Any, targets: Any, num_classes: int) -> np.ndarray:
    r"""Class means $\mu_c = \frac{1}{n_c}\sum_{i: y_i = c} h_i$: float64 `[K, d]`.

    Every class must have a sample (``ValueError`` otherwise, naming the missing classes)."""
    h, y, k = _features_and_targets(features, targets, num_classes)
    return _means(h, y, k)


def _means(h: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    order = np.argsort(y, kind="stable")  # the samples grouped by class, every class present
    starts = np.searchsorted(y[order], np.arange(k))
    sums = np.add.reduceat(h[order], starts, axis=0)  # sum_{y_i = c} h_i
    return sums / np.bincount(y, minlength=k)[:, None]  # mu_c = (1/n_c) sum_{y_i = c} h_i


def global_mean(
    features: Any, targets: Any, num_classes: int, center: str = "class_means"
) -> np.ndarray:
    r"""The global mean $\mu_G$ `[d]`: ``center="class_means"`` (default)
    $\frac{1}{K}\sum_c \mu_c$, the papers' balanced convention, or ``"samples"``
    $\frac{1}{N}\sum_i h_i$, the sample mean; they differ when the class counts differ."""
    check_choice("center", center, CENTERS)
    if center == "class_means":
        return class_means(features, targets, num_classes).mean(axis=0)  # (1/K) sum_c mu_c
    h, _, _ = _features_and_targets(features, targets, num_classes)
    return h.mean(axis=0)  # (1/N) sum_i h_i


def centered_means(
    features: Any, targets: Any, num_classes: int, center: str = "class_means"
) -> np.ndarray:
    r"""The centred class means $M$, rows $\mu_c - \mu_G$: float64 `[K, d]` (``center`` as in
    :func:`global_mean`)."""
    check_choice("center", center, CENTERS)
    h, y, k = _features_and_targets(features, targets, num_classes)
    mu = _means(h, y, k)
    mu_g = mu.mean(axis=0) if center == "class_means" else h.mean(axis=0)
    return mu - mu_g  # mu_c - mu_G


def nc1(
    features: Any,
    targets: Any,
    num_classes: int,
    center: str = "class_means",
    classes: Any = None,
) -> float:
    r"""NC1, $\frac{1}{K}\mathrm{Tr}(\Sigma_W \Sigma_B^{+})$ (0 when every feature sits on its
    class mean).

    $\Sigma_W = \frac{1}{N}\sum_i (h_i - \mu_{y_i})(h_i - \mu_{y_i})^\top$ (normalised by the
    number of samples $N$, as ``validate_NC.py``), $\Sigma_B = \frac{1}{K}\sum_c (\mu_c -
    \mu_G)(\mu_c - \mu_G)^\top$ with $\mu_G$ chosen by ``center`` (see the module).
    Computed through the SVD $M = U S V^\top$ of the centred means, without a $d \times d$
    matrix: $\frac{1}{K}\mathrm{Tr}(\Sigma_W \Sigma_B^{+}) = \sum_i \frac{1}{N s_i^2}
    \sum_n ((h_n - \mu_{y_n})^\top v_i)^2$ over the non-zero $s_i$.

    Args:
        features, targets, num_classes: $H$ `[N, d]`, `[N]`, $K$.
        center: ``"class_means"`` or ``"samples"``.
        classes: restrict $\Sigma_W$ to the samples of these classes (a shot group: then $N$
            is their number), against the same $\Sigma_B$ of all $K$ classes. Default: all.
    """
    check_choice("center", center, CENTERS)
    h, y, k = _features_and_targets(features, targets, num_classes)
    mu = _means(h, y, k)
    M = mu - (mu.mean(axis=0) if center == "class_means" else h.mean(axis=0))  # mu_c - mu_G
    keep = np.ones(y.shape[0], dtype=bool)
    if classes is not None:
        idx = as_labels("classes", np.atleast_1d(np.asarray(classes)), k)
        if idx.size == 0:
            raise invalid("classes", idx, "at least one class")
        keep = np.isin(y, idx)
    within = h[keep] - mu[y[keep]]  # h_i - mu_{y_i}
    # Sigma_B = M^T M / K = V S^2 V^T / K (M = U S V^T), so Sigma_B^+ = K V S^-2 V^T and
    # Tr(Sigma_W Sigma_B^+) / K = sum_i ||(h - mu_y) v_i||^2 / (N s_i^2), over the s_i that
    # numpy's pinv keeps (eigenvalues of Sigma_B above 1e-15 times the largest): no d x d matrix
    _, sv, vt = np.linalg.svd(M, full_matrices=False)
    kept = sv**2 > _RCOND * sv.max() ** 2 if sv.size and sv.max() > 0 else np.zeros(0, bool)
    projected = within @ vt[kept].T  # (h_i - mu_{y_i}) . v_i
    return float(np.sum((projected**2).sum(axis=0) / sv[kept] ** 2) / within.shape[0])


def equinorm(vectors: Any) -> float:
    r"""NC2 equinorm spread: $\mathrm{Std}_c \|v_c\| / \mathrm{Avg}_c \|v_c\|$, the coefficient
    of variation of the row norms (population std; 0 when all rows have one length).

    Pass the centred class means $M$ or the classifier rows $W$ `[K, d]`."""
    V = as_matrix("vectors", vectors)
    if V.shape[0] < 2:
        raise invalid("vectors", f"shape {V.shape}", "at least 2 rows")
    norms = np.linalg.norm(V, axis=1)
    if norms.mean() == 0:
        raise invalid("vectors", "all-zero rows", "rows with a length")
    return float(norms.std() / norms.mean())  # Std_c ||v_c|| / Avg_c ||v_c||


def _pair_cosines(vectors: Any, classes: Any) -> tuple[np.ndarray, int]:
    V = as_matrix("vectors", vectors)
    if V.shape[0] < 2:
        raise invalid("vectors", f"shape {V.shape}", "at least 2 rows")
    k = V.shape[0]
    cos = prototype_cosines(V)  # NaN row and column for a vanished vector
    idx = np.arange(k) if classes is None else as_labels("classes", np.atleast_1d(classes), k)
    sub = cos[np.ix_(idx, idx)]
    pairs = sub[np.triu_indices(idx.size, 1)]
    return pairs[~np.isnan(pairs)], k


def equiangularity(vectors: Any, classes: Any = None) -> float:
    r"""NC2 equiangularity spread: $\mathrm{Std}_{c < c'} \cos(v_c, v_{c'})$ (population std
    over the pairs, Papyan et al.'s Fig. 3), equal to the std of $\cos + \frac{1}{K-1}$; 0 for
    equiangular rows. Vanished rows are left out; NaN when fewer than 2 pairs remain.

    Args:
        vectors: `[K, d]`, centred class means or classifier rows.
        classes: only the pairs among these classes (a shot group). Default: all.
    """
    pairs, _ = _pair_cosines(vectors, classes)
    return float(pairs.std()) if pairs.size >= 2 else float("nan")


def max_angle(vectors: Any, classes: Any = None) -> float:
    r"""NC2's max-angle reading: $\mathrm{Avg}_{c < c'} |\cos(v_c, v_{c'}) + \frac{1}{K-1}|$,
    $K$ the number of rows of ``vectors`` (also for a subset ``classes``); 0 for a simplex ETF.
    Vanished rows are left out; NaN when no pair remains."""
    pairs, k = _pair_cosines(vectors, classes)
    if pairs.size == 0:
        return float("nan")
    return float(np.mean(np.abs(pairs + 1.0 / (k - 1))))  # Avg |cos + 1/(K-1)|


def nc3(W: Any, M: Any) -> float:
    r"""NC3, self-duality: $\| W / \|W\|_F - M / \|M\|_F \|_F$ with $W$ the classifier rows
    `[K, d]` and $M$ the centred class means `[K, d]` (Papyan et al.'s Fig. 5; 0 when the
    classifier is a positive multiple of the centred means; at most 2).

    ``validate_NC.py`` measures the same duality through $WM^\top$ against the simplex ETF
    (``compute_W_H_relation``); this is the paper's form."""
    W = as_matrix("W", W)
    M = as_matrix("M", M, rows=W.shape[0], cols=W.shape[1])
    for name, a in (("W", W), ("M", M)):
        if not np.any(a):
            raise invalid(name, "an all-zero matrix", "a matrix with ||.||_F > 0")
    return float(np.linalg.norm(W / np.linalg.norm(W) - M / np.linalg.norm(M)))  # ||.||_F


def ncc_predictions(features: Any, means: Any) -> np.ndarray:
    r"""The nearest-class-mean rule $\arg\min_c \|h_i - \mu_c\|_2$: int64 `[N]`."""
    mu = as_matrix("means", means)
    h = as_matrix("features", features, cols=mu.shape[1])
    # ||h - mu_c||^2 = ||h||^2 - 2 h.mu_c + ||mu_c||^2; ||h||^2 is the same for every c
    dist = -2.0 * h @ mu.T + (mu**2).sum(axis=1)[None, :]
    return dist.argmin(axis=1)


def nc4(features: Any, W: Any, b: Any, means: Any, preds: Any = None) -> float:
    r"""NC4: the fraction of samples on which the classifier $\arg\max_c (w_c^\top h + b_c)$
    and the nearest class mean $\arg\min_c \|h - \mu_c\|$ disagree (0 at collapse).

    Args:
        features: $H$ `[N, d]`.
        W, b: the classifier rows `[K, d]` and bias `[K]` (``None``: no bias). Unused when
            ``preds`` is given.
        means: the class means $\mu_c$ `[K, d]` (uncentred: the rule compares distances).
        preds: the classifier's predictions `[N]`, for a head whose logits are not
            $Wh + b$ (a cosine or anchored head); default from ``W`` and ``b``.
    """
    mu = as_matrix("means", means)
    h = as_matrix("features", features, cols=mu.shape[1])
    k = mu.shape[0]
    if preds is None:
        if W is None:
            raise invalid("W", None, "the classifier rows (K, d) when preds is not given")
        W = as_matrix("W", W, rows=k, cols=mu.shape[1])
        bias = np.zeros(k) if b is None else np.asarray(b, dtype=np.float64)
        if bias.shape != (k,):
            raise invalid("b", f"shape {bias.shape}", f"a vector of shape ({k},)")
        preds = (h @ W.T + bias).argmax(axis=1)  # argmax_c w_c.h + b_c
    else:
        preds = as_labels("preds", preds, k)
        if preds.shape[0] != h.shape[0]:
            raise invalid("preds", f"{preds.shape[0]} labels", f"one per sample ({h.shape[0]})")
    return float(np.mean(preds != ncc_predictions(h, mu)))
