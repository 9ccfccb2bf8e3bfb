r"""
# The layer-peeled model and minority collapse

The last layer of a network with its features as free variables under energy budgets
(Fang, He, Long, Su, PNAS 2021), solved numerically so notebook 02 can check minority
collapse and the anchored alternative (a layer-peeled analogue of PAL Theorem 4.1, which is
about $L_\alpha$ with unit features) with `assert`s:
`solve_layer_peeled` (one imbalance ratio) and `minority_collapse_sweep` (many, batched).
Both are also importable from :mod:`palviz.theory`.

Everything is computed in float64 and returned as Python floats or NumPy arrays.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from palviz.checks import check_choice as _check_choice
from palviz.checks import check_int as _check_int
from palviz.checks import check_positive as _check_positive
from palviz.heads import simplex_prototypes
from palviz.metrics import mean_pairwise_cosine, vanished_rows
from palviz.threads import single_thread

__all__ = ["FEATURE_CONSTRAINTS", "minority_collapse_sweep", "solve_layer_peeled"]

FEATURE_CONSTRAINTS = ("class", "sample")


@dataclass(frozen=True)
class _Problem:
    """The validated arguments of `solve_layer_peeled` other than the ratio."""

    k_major: int
    k_minor: int
    E_W: float
    E_H: float
    anchored: bool
    steps: int
    lr: float
    seed: int
    dim: int
    feature_constraint: str


def _into_ball(U: torch.Tensor, weights: torch.Tensor, E: float) -> torch.Tensor:
    r"""Map free `U` `[P, K, d]` into $\{X: \sum_k a_k \|x_k\|^2 \leq E\}$ by rescaling:
    $X = U / \sqrt{\max(1, e(U)/E)}$ with $e(U) = \sum_k a_k \|u_k\|^2$ (the identity inside)."""
    energy = (weights * (U * U).sum(dim=2)).sum(dim=1)  # [P]
    return U / torch.sqrt((energy / E).clamp(min=1.0))[:, None, None]


def _unit(X: torch.Tensor) -> torch.Tensor:
    """Rows of `X` `[P, K, d]` scaled to unit length; a row that vanished
    (:func:`palviz.metrics.vanished_rows`) has no direction and becomes NaN."""
    gone = torch.from_numpy(vanished_rows(X.numpy()))[:, :, None]
    return torch.where(gone, torch.full_like(X, math.nan), X / X.norm(dim=2, keepdim=True))


def _group_geometry(W: np.ndarray, classes: list[int]) -> dict[str, np.ndarray]:
    r"""Per problem, for the rows `classes` of each `W` `[P, K, d]`: the mean pairwise cosine
    (:func:`palviz.metrics.mean_pairwise_cosine`; NaN for one class or a vanished classifier),
    the mean norm, whether one of them vanished, and the relative spread
    $\max_{k, k'}\|w_k - w_{k'}\| / \max_k \|w_k\|$ (NaN where the cosine is)."""
    norms = np.linalg.norm(W[:, classes], axis=2)  # [P, m]
    gone = vanished_rows(W)[:, classes].any(axis=1)
    if len(classes) < 2:
        cosine = spread = np.full(len(W), math.nan)
    else:
        cosine = np.array([mean_pairwise_cosine(Wp, classes) for Wp in W])
        V = W[:, classes]
        gaps = np.linalg.norm(V[:, :, None] - V[:, None, :], axis=3)  # ||w_k - w_k'||
        spread = np.where(gone, math.nan, gaps.max(axis=(1, 2)) / norms.max(axis=1))
    return {"cosine": cosine, "norm": norms.mean(axis=1), "vanished": gone, "spread": spread}


def _solve_layer_peeled_batch(ratios: np.ndarray, problem: _Problem) -> dict[str, np.ndarray]:
    k_major, k_minor, E_W, E_H = problem.k_major, problem.k_minor, problem.E_W, problem.E_H
    anchored, dim, feature_constraint = problem.anchored, problem.dim, problem.feature_constraint
    steps, lr, seed = problem.steps, problem.lr, problem.seed
    K = k_major + k_minor
    P = len(ratios)
    R = torch.as_tensor(ratios, dtype=torch.float64)
    # n_k / N per class: majority classes are R times as numerous as minority classes
    n = torch.ones(P, K, dtype=torch.float64)
    n[:, :k_major] = R[:, None]
    class_weight = n / n.sum(dim=1, keepdim=True)  # [P, K]
    w_energy_weight = torch.full((P, K), 1.0 / K, dtype=torch.float64)
    h_energy_weight = w_energy_weight if feature_constraint == "class" else class_weight

    gen = torch.Generator().manual_seed(seed)

    def on_boundary(X: torch.Tensor, weights: torch.Tensor, E: float) -> torch.Tensor:
        energy = (weights * (X * X).sum(dim=2)).sum(dim=1)
        return X * torch.sqrt(E / energy)[:, None, None]

    # one random start per problem, on the boundary of the constraint set
    U = on_boundary(
        torch.randn(P, K, dim, generator=gen, dtype=torch.float64), h_energy_weight, E_H
    )
    V = on_boundary(
        torch.randn(P, K, dim, generator=gen, dtype=torch.float64), w_energy_weight, E_W
    )
    if anchored:
        # scaled simplex: ||w_j||^2 = E_W, so (1/K) sum_j ||w_j||^2 = E_W exactly
        W_fixed = math.sqrt(E_W) * simplex_prototypes(K, dim, method="etf", seed=seed).double()
        W_fixed = W_fixed.expand(P, K, dim)
    params = [U] if anchored else [U, V]
    for p in params:
        p.requires_grad_()
    labels = torch.arange(K).repeat(P)

    def current() -> tuple[torch.Tensor, torch.Tensor]:
        H = _into_ball(U, h_energy_weight, E_H)
        W = W_fixed if anchored else _into_ball(V, w_energy_weight, E_W)
        return W, H

    def objective() -> torch.Tensor:
        W, H = current()
        logits = torch.einsum("pkd,pjd->pkj", H, W)  # [P, K classes' features, K logits]
        ce = F.cross_entropy(logits.reshape(P * K, K), labels, reduction="none")
        # (R * sum_A CE + sum_B CE) / (k_A R + k_B)
        return (class_weight * ce.reshape(P, K)).sum(dim=1)  # [P]

    opt = torch.optim.LBFGS(
        params,
        lr=lr,
        max_iter=steps,
        history_size=50,
        tolerance_grad=1e-12,
        tolerance_change=1e-15,
        line_search_fn="strong_wolfe",
    )

    def closure() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        total = objective().sum()  # problems are independent: each sees only its own term
        total.backward()
        return total

    with single_thread():
        opt.step(closure)

    with torch.no_grad():
        W, H = current()
        loss = objective()
        logits = torch.einsum("pkd,pjd->pkj", H, W)
        eye = torch.eye(K, dtype=torch.bool)

        def margins_of(lg: torch.Tensor) -> torch.Tensor:
            # gamma_k = w_k . h_k - max_{j != k} w_j . h_k
            return lg.diagonal(dim1=1, dim2=2) - lg.masked_fill(eye, -math.inf).amax(dim=2)

        margins = margins_of(logits)
        unit_logits = torch.einsum("pkd,pjd->pkj", _unit(H), _unit(W))
        margins_unit = margins_of(unit_logits)
        w_energy = (w_energy_weight * (W * W).sum(dim=2)).sum(dim=1)
        h_energy = (h_energy_weight * (H * H).sum(dim=2)).sum(dim=1)
        out = {
            "W": W.clone(),
            "H": H.clone(),
            "loss": loss,
            "margins": margins,
            "gamma_min": margins.min(dim=1).values,
            "gamma_min_normalized": margins_unit.min(dim=1).values,
            "w_energy": w_energy,
            "h_energy": h_energy,
        }
    result = {key: value.detach().numpy() for key, value in out.items()}
    for group, classes in [("minority", range(k_major, K)), ("majority", range(k_major))]:
        for key, value in _group_geometry(result["W"], list(classes)).items():
            if group == "minority" or key in ("cosine", "norm"):
                result[f"{group}_{key}"] = value
    return result


def _problem(arguments: dict[str, Any]) -> _Problem:
    """Validate keyword arguments of `solve_layer_peeled` (all but ``ratio``), with the defaults
    of its signature filled in; an unknown name is a ``TypeError`` as in a call."""
    if "ratio" in arguments:
        raise TypeError("minority_collapse_sweep takes ratios, not ratio")
    bound = inspect.signature(solve_layer_peeled).bind(**arguments)
    bound.apply_defaults()
    a = bound.arguments
    k_major = _check_int("k_major", a["k_major"], 1)
    k_minor = _check_int("k_minor", a["k_minor"], 1)
    K = k_major + k_minor
    return _Problem(
        k_major=k_major,
        k_minor=k_minor,
        E_W=_check_positive("E_W", a["E_W"]),
        E_H=_check_positive("E_H", a["E_H"]),
        anchored=bool(a["anchored"]),
        steps=_check_int("steps", a["steps"], 1),
        lr=_check_positive("lr", a["lr"]),
        seed=_check_int("seed", a["seed"], 0),
        dim=K if a["dim"] is None else _check_int("dim", a["dim"], K - 1),
        feature_constraint=_check_choice(
            "feature_constraint", a["feature_constraint"], FEATURE_CONSTRAINTS
        ),
    )


def _check_ratios(ratios: Any) -> np.ndarray:
    r = np.atleast_1d(np.asarray(ratios, dtype=np.float64))
    if r.ndim != 1 or r.size == 0:
        raise ValueError(f"ratios must be a non-empty 1-D sequence, got shape {r.shape}")
    if not np.all(np.isfinite(r)) or np.any(r < 1):
        raise ValueError(f"every ratio must be a finite number >= 1, got {ratios!r}")
    return r


def solve_layer_peeled(
    k_major: int = 5,
    k_minor: int = 5,
    ratio: float = 1.0,
    E_W: float = 1.0,
    E_H: float = 1.0,
    anchored: bool = False,
    steps: int = 300,
    lr: float = 1.0,
    seed: int = 0,
    dim: int | None = None,
    feature_constraint: str = "class",
) -> dict[str, Any]:
    r"""Solve the layer-peeled model of an imbalanced problem (Fang et al., PNAS 2021).

    $k_A$ = `k_major` classes with $n_A$ samples each, $k_B$ = `k_minor` classes with $n_B$,
    ratio $R = n_A / n_B$, $K = k_A + k_B$, $N = k_A n_A + k_B n_B$:

    $$\min_{W, H}\ \frac{1}{N}\sum_{k=1}^{K}\sum_{i=1}^{n_k} \mathrm{CE}(W h_{k,i}, k)
    \quad \text{s.t.}\quad \frac{1}{K}\sum_{k=1}^{K}\|w_k\|^2 \leq E_W,\quad
    \frac{1}{K}\sum_{k=1}^{K}\frac{1}{n_k}\sum_{i=1}^{n_k}\|h_{k,i}\|^2 \leq E_H .$$

    **One feature per class.** For fixed $W$ the objective is convex in each $h_{k,i}$ and the
    constraint is convex, so replacing the features of a class by their mean keeps feasibility
    and (Jensen) does not increase the loss: some optimum has $h_{k,i} = h_k$, and the program
    becomes
    $$\min_{W, H}\ \frac{R \sum_{k \in A}\mathrm{CE}(W h_k, k)
    + \sum_{k \in B}\mathrm{CE}(W h_k, k)}{k_A R + k_B},$$
    i.e. the minority terms are down-weighted by $R$. The feature constraint is Fang et al.'s
    class-averaged one (``feature_constraint="class"``: $\frac{1}{K}\sum_k\|h_k\|^2 \leq E_H$);
    ``"sample"`` uses the per-sample average $\frac{1}{N}\sum_i \|h_i\|^2 =
    \sum_k \frac{n_k}{N}\|h_k\|^2 \leq E_H$ instead (the two agree at $R = 1$).

    **Optimisation.** $W$ and $H$ (`[K, dim]`) are the images of free variables $U, V$ under
    the rescaling into the constraint set, $X = U / \sqrt{\max(1, e(U)/E)}$ (identity inside,
    radial projection outside; it is onto, so minimising over $U$ solves the constrained
    problem), and L-BFGS (strong-Wolfe line search, step `lr`, at most `steps` iterations,
    float64) minimises the loss over $U, V$ from a random start on the boundary. At the solutions
    found, both constraints are active. ``anchored=True`` fixes $W = \sqrt{E_W}\,
    W_{\text{simplex}}$ (every $\|w_k\|^2 = E_W$) and optimises $H$ only.

    **Anchored: a layer-peeled analogue of PAL Theorem 4.1** (PAL's theorem is about
    $L_\alpha$ with unit features; here it follows by symmetry). With $W$ a simplex, the
    permutations of the prototypes other than $w_k$ are orthogonal maps $Q$ that fix $w_k$,
    and $\mathrm{CE}(W Q h, k) = \mathrm{CE}(W h, k)$. The loss is convex in $h_k$ and
    averaging over these maps does not lengthen $h_k$, so the average $\bar h_k$ is feasible
    and no worse (Jensen); it is fixed by every such $Q$, and the only such directions in
    the span of $W$ are multiples of $w_k$ (the rest of $h_k$ changes no logit and only costs
    budget). So some optimum has $h_k = \rho_k\, w_k / \|w_k\|$ with $\rho_k \geq 0$: only
    the lengths $\rho_k$ depend on $R$. On unit vectors every class then has the margin
    $1 + \frac{1}{K-1} = \frac{K}{K-1}$, the largest any $K$ unit prototypes allow (PAL
    Lemma 3.1), for every $R$ (while $\rho_k > 0$); the unnormalised margin
    $\rho_k \sqrt{E_W}\,\frac{K}{K-1}$ shrinks with the minority lengths.

    **Vanished vectors.** A classifier or feature whose norm is at most
    :data:`palviz.metrics.VANISHED_NORM` times the root-mean-square norm of its matrix
    (:func:`palviz.metrics.vanished_rows`) has no direction: its cosines, and the normalised
    margins it enters, are NaN ("undefined: vanished"), the convention of
    :func:`palviz.metrics.mean_pairwise_cosine`, which computes the cosines here. Minority
    collapse is Fang et al.'s limit $w_k - w_{k'} \to 0$ ($R \to \infty$, minority
    $k, k'$); classifiers that shrink to the origin satisfy it too but say nothing of
    directions, so ``minority_spread`` $= \max_{k,k'}\|w_k - w_{k'}\| / \max_k \|w_k\|$ is
    read only where none vanished. Which happens first, at which $R$, depends on $k_A$, $k_B$
    and the budgets (notebook 02 computes it).

    **What to expect** at $R = 1$: the simplex (minority cosine $-\frac{1}{K-1}$, margin
    $\frac{K}{K-1}\sqrt{E_W E_H}$). Anchored prototypes keep the cosine at $-\frac{1}{K-1}$
    for every $R$ by construction (they are not variables).

    Args:
        k_major, k_minor: $k_A, k_B \geq 1$.
        ratio: $R \geq 1$.
        E_W, E_H: energy budgets $> 0$.
        anchored: fix $W$ to the scaled simplex.
        steps: maximum L-BFGS iterations (near the collapse threshold the batched sweep can
            stop short: notebook 02 solves the problems its checks read on their own).
        lr: L-BFGS step length.
        seed: seeds the initialisation.
        dim: feature dimension, default $K$ (Fang et al. assume $d \geq K$); at least $K - 1$.
        feature_constraint: ``"class"`` (Fang et al.) or ``"sample"``.

    Returns:
        dict with ``W`` and ``H`` (`[K, dim]` arrays, majority classes first), ``loss``,
        ``minority_cosine`` / ``majority_cosine`` (mean pairwise cosine among the minority /
        majority classifiers; NaN for a single class or where one of them vanished),
        ``minority_norm`` / ``majority_norm`` (mean $\|w_k\|$), ``minority_vanished``
        (whether a minority classifier vanished), ``minority_spread`` (see above),
        ``margins`` (`[K]`, $\gamma_k = w_k^\top h_k - \max_{j \neq k} w_j^\top h_k$ on the
        solution: all samples of class $k$ share $h_k$), ``gamma_min`` ($\min_k \gamma_k$),
        ``gamma_min_normalized`` (the same with $w$ and $h$ normalised to unit length, as PAL
        defines the sample margin; NaN where a vector that enters it vanished), ``w_energy``,
        ``h_energy`` (the constraint values, $\leq E_W, E_H$), ``ratio`` and ``anchored``.
    """
    arguments = dict(locals())  # the parameters, as this function was called
    del arguments["ratio"]
    problem = _problem(arguments)
    r = _check_ratios(ratio)
    if r.size != 1:
        raise ValueError(f"ratio must be a single number, got {ratio!r}")
    out = _solve_layer_peeled_batch(r, problem)
    result: dict[str, Any] = {}
    for key, value in out.items():
        result[key] = value[0] if value.ndim > 1 else value[0].item()
    result["ratio"] = float(r[0])
    result["anchored"] = problem.anchored
    return result


def minority_collapse_sweep(ratios: Any = None, **problem: Any) -> dict[str, np.ndarray]:
    r"""`solve_layer_peeled` at many imbalance ratios, for plotting.

    All ratios are solved together as one batched program (the problems are independent and
    share nothing but the line search), so 41 ratios cost about as much as a few.

    Args:
        ratios: the ratios $R \geq 1$; default $R = 10^{0.1 i}$, $i = 0..40$ (Fang et al.'s
            sweep).
        **problem: the keyword arguments of `solve_layer_peeled` other than ``ratio``
            (``k_major``, ``k_minor``, ``E_W``, ``E_H``, ``anchored``, ``steps``, ``lr``,
            ``seed``, ``dim``, ``feature_constraint``), with the same defaults and meaning.

    Returns:
        dict of arrays indexed like ``ratios``: ``ratios``, ``minority_cosine``,
        ``majority_cosine``, ``minority_norm``, ``majority_norm``, ``minority_vanished``,
        ``minority_spread``, ``gamma_min``,
        ``gamma_min_normalized``, ``loss``, ``w_energy``, ``h_energy``, and ``W``, ``H``
        (`[len(ratios), K, dim]`), ``margins`` (`[len(ratios), K]`). Keys as in
        `solve_layer_peeled`.
    """
    checked = _problem(problem)
    if ratios is None:
        ratios = 10.0 ** (0.1 * np.arange(41))
    r = _check_ratios(ratios)
    out = _solve_layer_peeled_batch(r, checked)
    out["ratios"] = r
    return out
