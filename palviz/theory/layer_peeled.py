r"""
# The layer-peeled model and minority collapse

The last layer of a network with its features as free variables under energy budgets
(Fang, He, Long, Su, PNAS 2021), solved numerically so notebook 02 can check minority
collapse and PAL's anchored alternative (Theorem 4.1) with `assert`s:
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
from palviz.threads import single_thread

__all__ = ["FEATURE_CONSTRAINTS", "minority_collapse_sweep", "solve_layer_peeled"]

FEATURE_CONSTRAINTS = ("class", "sample")

# A classifier shorter than this (relative to sqrt(E_W)) has collapsed to the origin.
_ZERO_NORM = 1e-4


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


def _unit(X: torch.Tensor, E: float) -> torch.Tensor:
    """Rows of `X` `[P, K, d]` scaled to unit length; rows that collapsed to the origin
    (shorter than `_ZERO_NORM` * sqrt(E)) become exactly 0."""
    norms = X.norm(dim=2, keepdim=True)
    return torch.where(norms < _ZERO_NORM * math.sqrt(E), torch.zeros_like(X), X / norms)


def _mean_pairwise_cosine(W: torch.Tensor, E_W: float) -> torch.Tensor:
    """Mean pairwise cosine among the rows of each `W` `[P, m, d]` (NaN if m < 2); a pair of
    classifiers that both collapsed to the origin counts as 1, a pair with one of them as 0."""
    P, m, _ = W.shape
    if m < 2:
        return torch.full((P,), math.nan, dtype=torch.float64)
    norms = W.norm(dim=2)
    zero = norms < _ZERO_NORM * math.sqrt(E_W)
    cos = F.normalize(W, dim=2) @ F.normalize(W, dim=2).transpose(1, 2)
    both = zero[:, :, None] & zero[:, None, :]
    one = zero[:, :, None] ^ zero[:, None, :]
    cos = torch.where(both, torch.ones_like(cos), torch.where(one, torch.zeros_like(cos), cos))
    off = ~torch.eye(m, dtype=torch.bool)
    return cos[:, off].mean(dim=1)


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
        unit_logits = torch.einsum("pkd,pjd->pkj", _unit(H, E_H), _unit(W, E_W))
        margins_unit = margins_of(unit_logits)
        w_energy = (w_energy_weight * (W * W).sum(dim=2)).sum(dim=1)
        h_energy = (h_energy_weight * (H * H).sum(dim=2)).sum(dim=1)
        out = {
            "W": W.clone(),
            "H": H.clone(),
            "loss": loss,
            "minority_cosine": _mean_pairwise_cosine(W[:, k_major:], E_W),
            "majority_cosine": _mean_pairwise_cosine(W[:, :k_major], E_W),
            "minority_norm": W[:, k_major:].norm(dim=2).mean(dim=1),
            "majority_norm": W[:, :k_major].norm(dim=2).mean(dim=1),
            "margins": margins,
            "gamma_min": margins.min(dim=1).values,
            "gamma_min_normalized": margins_unit.min(dim=1).values,
            "w_energy": w_energy,
            "h_energy": h_energy,
        }
    return {key: value.detach().numpy() for key, value in out.items()}


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
    W_{\text{simplex}}$ (every $\|w_k\|^2 = E_W$) and optimises $H$ only (PAL, Theorem 4.1).

    **What to expect** ($k_A = k_B = 5$): at $R = 1$ the solution is the simplex
    (minority cosine $-1/9$, margin $(1 + \frac{1}{9})\sqrt{E_W E_H}$). As $R$ grows the minority
    classifiers' pairwise cosine rises to 1 (minority collapse) and their margin falls to 0.
    How fast depends on the budgets: with $E_W = E_H = 1$ the collapse is complete by
    $R \approx 3$, where the minority classifiers (and features) shrink to the origin;
    $E_W = E_H = 5$ rises gradually and reaches 1 near $R = 10^{3.6}$.
    Anchored prototypes keep the cosine at $-1/(K-1)$ and the normalised margin at
    $1 + \frac{1}{K-1}$ for every $R$ (the unnormalised margin still shrinks with the minority
    feature norms).

    Args:
        k_major, k_minor: $k_A, k_B \geq 1$.
        ratio: $R \geq 1$.
        E_W, E_H: energy budgets $> 0$.
        anchored: fix $W$ to the scaled simplex.
        steps: maximum L-BFGS iterations (100 is enough away from the collapse threshold; 300
            is accurate to ~1e-2 in the cosine near it).
        lr: L-BFGS step length.
        seed: seeds the initialisation.
        dim: feature dimension, default $K$ (Fang et al. assume $d \geq K$); at least $K - 1$.
        feature_constraint: ``"class"`` (Fang et al.) or ``"sample"``.

    Returns:
        dict with ``W`` and ``H`` (`[K, dim]` arrays, majority classes first), ``loss``,
        ``minority_cosine`` / ``majority_cosine`` (mean pairwise cosine among the minority /
        majority classifiers; NaN for a single class; a classifier shorter than
        $10^{-4}\sqrt{E_W}$ has collapsed to the origin: two such count as cosine 1, one such
        with another as 0), ``minority_norm`` / ``majority_norm`` (mean $\|w_k\|$),
        ``margins`` (`[K]`, $\gamma_k = w_k^\top h_k - \max_{j \neq k} w_j^\top h_k$ on the
        solution: all samples of class $k$ share $h_k$), ``gamma_min`` ($\min_k \gamma_k$),
        ``gamma_min_normalized`` (the same with $w$ and $h$ normalised to unit length, as PAL
        defines the sample margin; a vector that collapsed to the origin counts as 0), ``w_energy``,
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
        result[key] = value[0] if value.ndim > 1 else float(value[0])
    result["ratio"] = float(r[0])
    result["anchored"] = problem.anchored
    return result


def minority_collapse_sweep(ratios: Any = None, **problem: Any) -> dict[str, np.ndarray]:
    r"""`solve_layer_peeled` at many imbalance ratios, for plotting.

    All ratios are solved together as one batched program (the problems are independent and
    share nothing but the line search), so 41 ratios cost about as much as a few: ~1-2 s at
    the default 300 iterations and well under a second at ``steps=100`` on a 2-core CPU.

    Args:
        ratios: the ratios $R \geq 1$; default $R = 10^{0.1 i}$, $i = 0..40$ (Fang et al.'s
            sweep).
        **problem: the keyword arguments of `solve_layer_peeled` other than ``ratio``
            (``k_major``, ``k_minor``, ``E_W``, ``E_H``, ``anchored``, ``steps``, ``lr``,
            ``seed``, ``dim``, ``feature_constraint``), with the same defaults and meaning.

    Returns:
        dict of arrays indexed like ``ratios``: ``ratios``, ``minority_cosine``,
        ``majority_cosine``, ``minority_norm``, ``majority_norm``, ``gamma_min``,
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
