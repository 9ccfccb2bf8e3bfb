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
* NC2 and NC3 also have a second, one-number form in the reference code of Zhu et al.
  (tding1/Neural-Collapse ``validate_NC.py``: ``compute_ETF``, ``compute_W_H_relation``) and
  of rhubarbwu/neural-collapse (``measure.py``: ``simplex_etf_error``,
  ``self_duality_error``): the distance of a normalised Gram matrix to the simplex ETF's,
  :func:`etf_distance` and :func:`duality_distance`.
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

from palviz.checks import as_labels, as_matrix, check_choice, check_num_classes, invalid
from palviz.metrics import prototype_cosines

__all__ = [
    "CENTERS",
    "centered_means",
    "class_means",
    "duality_distance",
    "equiangularity",
    "equinorm",
    "etf_distance",
    "global_mean",
    "max_angle",
    "nc1",
    "nc1_per_class",
    "nc3",
    "nc4",
    "ncc_predictions",
]

#: The two readings of the global mean $\mu_G$ (see the module).
CENTERS = ("class_means", "samples")


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
    Computed class by class (:func:`nc1_per_class`), without a $d \times d$ matrix when
    $K < d$.

    Args:
        features, targets, num_classes: $H$ `[N, d]`, `[N]`, $K$.
        center: ``"class_means"`` or ``"samples"``.
        classes: restrict $\Sigma_W$ to the samples of these classes (a shot group: then $N$
            is their number), against the same $\Sigma_B$ of all $K$ classes. Default: all.
    """
    parts = nc1_per_class(features, targets, num_classes, center)
    y = as_labels("targets", targets, parts.size)
    n = np.bincount(y, minlength=parts.size)  # n_c
    idx = np.arange(parts.size)
    if classes is not None:
        idx = as_labels("classes", np.atleast_1d(np.asarray(classes)), parts.size)
        if idx.size == 0:
            raise invalid("classes", idx, "at least one class")
        idx = np.unique(idx)
    return float(parts[idx].sum() / n[idx].sum())  # sum over the classes' samples / N


def nc1_per_class(
    features: Any, targets: Any, num_classes: int, center: str = "class_means"
) -> np.ndarray:
    r"""Each class's share of NC1 before the division by $N$, float64 `[K]`:
    $t_c = \frac{1}{K}\sum_{i: y_i = c} (h_i - \mu_c)^\top \Sigma_B^{+} (h_i - \mu_c)$, so that
    :func:`nc1` over a set of classes $C$ is $\sum_{c \in C} t_c / \sum_{c \in C} n_c$ (one
    pass gives NC1 of every shot group).

    $\Sigma_B = M^\top M / K$ is inverted through the eigen-decomposition of the smaller Gram
    matrix of the centred means $M$ ($M^\top M$ `[d, d]` or $M M^\top$ `[K, K]`), never
    $d \times d$ when $K < d$; eigenvalues at most ``max(K, d) * eps`` times the largest are
    taken as 0 (rounding; the pseudo-inverse's rank)."""
    check_choice("center", center, CENTERS)
    h, y, k = _features_and_targets(features, targets, num_classes)
    mu = _means(h, y, k)
    M = mu - (mu.mean(axis=0) if center == "class_means" else h.mean(axis=0))  # mu_c - mu_G
    # Sigma_B = M^T M / K = V diag(lam) V^T / K with lam = s^2, V the right singular vectors
    # of M, so Tr(Sigma_W Sigma_B^+) / K = sum_i sum_j ((h_i - mu_{y_i}) . v_j)^2 / (N lam_j)
    if k < h.shape[1]:  # M M^T = U diag(lam) U^T, V = M^T U / s
        lam, U = np.linalg.eigh(M @ M.T)
        kept = lam > _rank_cut(lam, M.shape)
        V = M.T @ U[:, kept] / np.sqrt(lam[kept])
    else:
        lam, V = np.linalg.eigh(M.T @ M)
        kept = lam > _rank_cut(lam, M.shape)
        V = V[:, kept]
    projected = (h - mu[y]) @ (V / np.sqrt(lam[kept]))  # (h_i - mu_{y_i}) . v_j / s_j
    return np.bincount(y, weights=(projected**2).sum(axis=1), minlength=k)  # sum_{y_i = c}


def _rank_cut(lam: np.ndarray, shape: tuple[int, int]) -> float:
    """The eigenvalue of a Gram matrix below which it is rounding: max(K, d) eps lam_max."""
    top = float(lam.max()) if lam.size else 0.0
    return max(top, 0.0) * max(shape) * np.finfo(np.float64).eps


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


def _pair_cosines(vectors: Any, classes: Any, cosines: Any) -> tuple[np.ndarray, int]:
    V = as_matrix("vectors", vectors)
    if V.shape[0] < 2:
        raise invalid("vectors", f"shape {V.shape}", "at least 2 rows")
    k = V.shape[0]
    cos = prototype_cosines(V) if cosines is None else np.asarray(cosines, dtype=np.float64)
    if cos.shape != (k, k):
        raise invalid("cosines", f"shape {cos.shape}", f"the ({k}, {k}) cosines of vectors")
    if classes is not None:
        idx = np.unique(as_labels("classes", np.atleast_1d(classes), k))
        cos = cos[np.ix_(idx, idx)]
    # the pairs c < c': the off-diagonal entries, each pair twice (the same mean and std)
    pairs = cos[~np.eye(cos.shape[0], dtype=bool)]
    return pairs[~np.isnan(pairs)], k  # NaN: a vanished vector's row and column


def equiangularity(vectors: Any, classes: Any = None, *, cosines: Any = None) -> float:
    r"""NC2 equiangularity spread: $\mathrm{Std}_{c < c'} \cos(v_c, v_{c'})$ (population std
    over the pairs, Papyan et al.'s Fig. 3), equal to the std of $\cos + \frac{1}{K-1}$; 0 for
    equiangular rows. Vanished rows are left out; NaN when fewer than 2 pairs remain.

    Args:
        vectors: `[K, d]`, centred class means or classifier rows.
        classes: only the pairs among these classes (a shot group). Default: all.
        cosines: their cosine matrix if already computed
            (:func:`palviz.metrics.prototype_cosines`).
    """
    pairs, _ = _pair_cosines(vectors, classes, cosines)
    return float(pairs.std()) if pairs.size >= 2 else float("nan")


def max_angle(vectors: Any, classes: Any = None, *, cosines: Any = None) -> float:
    r"""NC2's max-angle reading: $\mathrm{Avg}_{c < c'} |\cos(v_c, v_{c'}) + \frac{1}{K-1}|$,
    $K$ the number of rows of ``vectors`` (also for a subset ``classes``); 0 for a simplex ETF.
    Vanished rows are left out; NaN when no pair remains. ``cosines`` as in
    :func:`equiangularity`."""
    pairs, k = _pair_cosines(vectors, classes, cosines)
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


def _distance_to_simplex(inner: float, norm: float, k: int, name: str) -> float:
    r"""$\| G/\|G\|_F - E \|_F$ for the simplex ETF's Gram matrix at unit norm
    $E = (I - \frac{1}{K}11^\top)/\sqrt{K-1}$, from $\langle G, E\rangle$ (``inner``) and
    $\|G\|_F$ (``norm``): $\|G/\|G\|_F - E\|_F^2 = 2 - 2\langle G, E\rangle / \|G\|_F$,
    without the $K \times K$ matrices."""
    if norm == 0:
        raise invalid(name, "a zero Gram matrix", "vectors with a length")
    return float(np.sqrt(max(2.0 - 2.0 * inner / norm, 0.0)))


def etf_distance(vectors: Any) -> float:
    r"""NC2 as one distance: $\| V V^\top / \|V V^\top\|_F - (I - \frac{1}{K}11^\top) /
    \sqrt{K-1} \|_F$, 0 exactly when the rows of $V$ `[K, d]` form a simplex ETF (of any
    scale); at most 2. tding1/Neural-Collapse ``validate_NC.py`` ``compute_ETF`` (on the
    classifier rows $W$), rhubarbwu/neural-collapse ``measure.py`` ``simplex_etf_error`` (on
    the centred class means $M$)."""
    V = as_matrix("vectors", vectors)
    k = V.shape[0]
    if k < 2:
        raise invalid("vectors", f"shape {V.shape}", "at least 2 rows")
    # <V V^T, E> = (tr V V^T - 1^T V V^T 1 / K) / sqrt(K-1) = (||V||_F^2 - ||V^T 1||^2 / K) / ...
    inner = ((V**2).sum() - (V.sum(axis=0) ** 2).sum() / k) / np.sqrt(k - 1)
    small = V.T @ V if V.shape[1] < k else V @ V.T  # ||V V^T||_F = ||V^T V||_F
    return _distance_to_simplex(inner, np.linalg.norm(small), k, "vectors")


def duality_distance(W: Any, M: Any) -> float:
    r"""NC3 as one distance: $\| W M^\top / \|W M^\top\|_F - (I - \frac{1}{K}11^\top) /
    \sqrt{K-1} \|_F$ with $W$ the classifier rows and $M$ the centred class means `[K, d]`:
    0 when the classifier and the means are one simplex ETF (up to scale). tding1/Neural-Collapse
    ``validate_NC.py`` ``compute_W_H_relation``, rhubarbwu/neural-collapse ``measure.py``
    ``self_duality_error``. Unlike :func:`nc3` it also asks for the simplex."""
    W = as_matrix("W", W)
    M = as_matrix("M", M, rows=W.shape[0], cols=W.shape[1])
    k = W.shape[0]
    if k < 2:
        raise invalid("W", f"shape {W.shape}", "at least 2 rows")
    # <W M^T, E> = (tr W M^T - 1^T W M^T 1 / K) / sqrt(K-1)
    inner = ((W * M).sum() - W.sum(axis=0) @ M.sum(axis=0) / k) / np.sqrt(k - 1)
    # ||W M^T||_F^2 = tr(W^T W M^T M) (d x d) or the K x K product itself
    if W.shape[1] < k:
        norm = np.sqrt(max(float(np.sum((W.T @ W) * (M.T @ M))), 0.0))
    else:
        norm = np.linalg.norm(W @ M.T)
    return _distance_to_simplex(inner, norm, k, "W M^T")


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
