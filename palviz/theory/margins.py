r"""
# Margins of LDAM and ELM

The ELM paper, Eq. 1-7: cross-entropy in three equal forms, the last a softplus hinge on the
gap to the strongest wrong class $c^*$ with a bias margin $\hat\rho$ (`ce_softplus_forms`);
LDAM's per-class margins $\Delta_j = C\,n_j^{-1/4}$ with $C = M\,n_{\min}^{1/4}$, so that the
rarest class gets $\max_j \Delta_j = M$ (`ldam_margins`); the margin ELM asks for,
$\Delta_y - \lambda\Delta_{c^*}$ (`elm_effective_margins`); LDAM and ELM as that hinge
(`margin_softplus_form`, Eq. 5-6); and logits that move only the gap $z_y - z_{c^*}$, for
drawing a loss against it (`logits_along_gap`, a float64 tensor). All are also importable
from :mod:`palviz.theory`.

Fisher consistency (PAL Sec. 3, the theorem after Thm 3.2: different per-class margins are
not Fisher consistent) and logit adjustment (Menon et al., ICLR 2021) are read with
`la_pairwise_margins` (the lead $\tau\log(\pi_j/\pi_y)$ the logit-adjusted loss asks of $y$
over $j$), `margin_read_from_loss` (the lead any loss module asks, read off its value) and
`conditional_risk_minimiser` (the logits minimising $\sum_y \eta_y L(z, y)$ for a class
posterior $\eta$) with `decision_switch_posterior` (for two classes, the posterior at which
that minimiser changes its prediction); these four are imported from this module.

Everything is computed in float64 and returned as NumPy arrays (but `logits_along_gap`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from palviz.checks import check_class_counts as _check_class_counts
from palviz.checks import check_int as _check_int
from palviz.checks import check_non_negative
from palviz.checks import check_positive as _check_positive
from palviz.theory._inputs import as_float64 as _as_float64

__all__ = [
    "ce_softplus_forms",
    "conditional_risk_minimiser",
    "decision_switch_posterior",
    "elm_effective_margins",
    "la_pairwise_margins",
    "ldam_margins",
    "logits_along_gap",
    "margin_read_from_loss",
    "margin_softplus_form",
]


def ldam_margins(cls_num_list: Sequence[int], max_m: float = 0.5) -> np.ndarray:
    r"""LDAM's per-class margins $\Delta_j = C\,n_j^{-1/4}$ with $C = M\,n_{\min}^{1/4}$, $M$ =
    `max_m`, so that $\max_j \Delta_j = M$ (the rarest class gets the largest margin).

    Source: Cao et al., *Learning Imbalanced Datasets with Label-Distribution-Aware Margin
    Loss*, NeurIPS 2019; https://github.com/kaidic/LDAM-DRW (``losses.py``). Used unchanged by
    ELM, and by :class:`palviz.losses.LDAMLoss` (as a float32 buffer).

    Args:
        cls_num_list: training-set count of each class, `[C]`, all > 0.
        max_m: the margin of the rarest class, > 0.

    Returns:
        float64 array `[num_classes]`.
    """
    counts = _check_class_counts("cls_num_list", cls_num_list)
    max_m = _check_positive("max_m", max_m)
    m = counts**-0.25  # m_j = n_j^{-1/4}
    return m * (max_m / m.max())  # rescale: max_j Delta_j = M


def elm_effective_margins(
    cls_num_list: Sequence[int],
    max_m: float = 0.5,
    lam: float = 1.0,
    use_target_margin: bool = True,
) -> np.ndarray:
    r"""The margin ELM actually asks for, for every (true class, strongest wrong class) pair.

    ELM (Eq. 6) is
    $\mathrm{softplus}(s(z_{c^*} - z_y) + s\Delta_y - s\lambda\Delta_{c^*} + \hat\rho)$:
    the target must beat the strongest wrong logit $z_{c^*}$ by
    $$m_{\text{eff}}(y, c^*) = \Delta_y - \lambda \Delta_{c^*}$$
    ($-\lambda\Delta_{c^*}$ for "ELM w/o $\Delta_y$", ``use_target_margin=False``), against
    LDAM's $\Delta_y$. For $\lambda > 0$ it is *smaller* than LDAM's margin: on CIFAR-10-LT
    ($\rho = 100$), rarest true class vs the most frequent wrong class, 0.342 instead of 0.5;
    the reverse pair gets -0.342.

    Returns:
        float64 array `[C, C]`: rows = true class $y$, columns = strongest wrong class $c^*$,
        diagonal NaN ($c^* \neq y$).
    """
    m = ldam_margins(cls_num_list, max_m)
    lam = check_non_negative("lam", lam)
    target = m[:, None] if use_target_margin else np.zeros((m.size, 1))
    eff = target - lam * m[None, :]
    np.fill_diagonal(eff, np.nan)
    return eff


def ce_softplus_forms(z: Any, y: Any) -> dict[str, np.ndarray]:
    r"""The three equal forms of cross-entropy of the ELM paper (Eq. 1-3), per sample.

    * ``"ce"`` (Eq. 1): $-\log \frac{e^{z_y}}{\sum_c e^{z_c}}$.
    * ``"softplus_logsumexp"`` (Eq. 2): $\mathrm{softplus}(\log\sum_{c \neq y} e^{z_c} - z_y)$.
    * ``"softplus_margin"`` (Eq. 3): $\mathrm{softplus}(z_{c^*} - z_y + \hat\rho)$ with
      $c^* = \arg\max_{c \neq y} z_c$ and the bias margin
      $\hat\rho = \log \sum_{c \neq y} e^{z_c - z_{c^*}} \in [0, \log(C-1)]$ (also returned as
      ``"rho_hat"``, with ``"c_star"``).

    Args:
        z: logits `[batch_size, C]`, $C \geq 2$.
        y: targets `[batch_size]` in $[0, C)$.

    Returns:
        dict of float64 arrays `[batch_size]` (``c_star`` int64).
    """
    z = _as_float64("z", z)
    y = torch.as_tensor(np.asarray(y) if not isinstance(y, torch.Tensor) else y).cpu()
    if z.dim() != 2 or z.shape[1] < 2:
        raise ValueError(f"z must have shape (batch_size, C >= 2), got {tuple(z.shape)}")
    if y.dim() != 1 or y.shape[0] != z.shape[0]:
        raise ValueError(f"y must have shape ({z.shape[0]},), got {tuple(y.shape)}")
    if y.dtype.is_floating_point or y.dtype == torch.bool:
        raise TypeError(f"y must hold integer class indices, got dtype {y.dtype}")
    y = y.long()
    C = z.shape[1]
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= C):
        raise ValueError(
            f"y must be in [0, {C - 1}], got values in [{int(y.min())}, {int(y.max())}]"
        )
    z_y = z.gather(1, y[:, None]).squeeze(1)
    # Eq. 1: CE = logsumexp_c z_c - z_y
    ce = torch.logsumexp(z, dim=1) - z_y
    others = z.scatter(1, y[:, None], -math.inf)
    # Eq. 2: softplus(log sum_{c != y} e^{z_c} - z_y)
    sp_lse = F.softplus(torch.logsumexp(others, dim=1) - z_y)
    z_star, c_star = others.max(dim=1)
    # Eq. 3: rho_hat = log sum_{c != y} e^{z_c - z_{c*}}, CE = softplus(z_{c*} - z_y + rho_hat)
    rho_hat = torch.logsumexp(others - z_star[:, None], dim=1)
    sp_margin = F.softplus(z_star - z_y + rho_hat)
    return {
        "ce": ce.numpy(),
        "softplus_logsumexp": sp_lse.numpy(),
        "softplus_margin": sp_margin.numpy(),
        "rho_hat": rho_hat.numpy(),
        "c_star": c_star.numpy(),
    }


def margin_softplus_form(
    z: Any,
    y: Any,
    cls_num_list: Sequence[int],
    max_m: float = 0.5,
    s: float = 30.0,
    lam: float = 1.0,
    use_target_margin: bool = True,
) -> dict[str, np.ndarray]:
    r"""LDAM (ELM paper Eq. 5) and ELM (Eq. 6) written as a softplus hinge, per sample.

    $$\mathrm{softplus}\big(s(z_{c^*} - z_y) + s\,m_{\text{eff}}(y, c^*) + \hat\rho\big), \qquad
    \hat\rho = \log\sum_{c \neq y} e^{s(z_c - z_{c^*})},$$

    with $c^* = \arg\max_{c \neq y} z_c$ and $m_{\text{eff}}$ = `elm_effective_margins`:
    $\Delta_y - \lambda\Delta_{c^*}$ (ELM), $\Delta_y$ for ``lam=0`` (LDAM, Eq. 5),
    $-\lambda\Delta_{c^*}$ for ``use_target_margin=False`` ("ELM w/o $\Delta_y$"). The scale $s$
    multiplies every logit, as in the official ELM and LDAM code (the paper's Eq. 4 and 7 print
    the non-target terms as $e^{z_j}$). The hinge's corner (argument 0, loss $\log 2$) is at
    $z_y - z_{c^*} = m_{\text{eff}}(y, c^*) + \hat\rho / s$.

    Args:
        z: logits `[batch_size, C]` (cosine logits in the reference runs).
        y: targets `[batch_size]` in $[0, C)$.
        cls_num_list: training count of each class, `[C]`.
        max_m, s, lam, use_target_margin: as in `palviz.losses.ELMLoss`.

    Returns:
        dict of arrays `[batch_size]`: ``"loss"`` (float64), ``"margin"`` ($m_{\text{eff}}$),
        ``"rho_hat"`` ($\hat\rho$, in $[0, \log(C-1)]$), ``"c_star"`` (int64).
    """
    s = _check_positive("s", s)
    eff = elm_effective_margins(cls_num_list, max_m, lam, use_target_margin)
    z = _as_float64("z", z)
    if z.dim() != 2 or z.shape[1] != eff.shape[0]:
        raise ValueError(
            f"z must have shape (batch_size, {eff.shape[0]}) to match cls_num_list, "
            f"got {tuple(z.shape)}"
        )
    # c* and rho_hat of the scaled logits s z (Eq. 3 applied to s z); c* is the same for z
    forms = ce_softplus_forms(s * z, y)
    c_star = forms["c_star"]
    y = np.asarray(torch.as_tensor(y).long())
    rows = np.arange(z.shape[0])
    zn = z.numpy()
    margin = eff[y, c_star]
    gap = zn[rows, y] - zn[rows, c_star]  # z_y - z_{c*}
    # softplus(s (z_{c*} - z_y) + s m_eff + rho_hat), written stably
    x = torch.as_tensor(s * (margin - gap) + forms["rho_hat"])
    return {
        "loss": F.softplus(x, threshold=50.0).numpy(),
        "margin": margin,
        "rho_hat": forms["rho_hat"],
        "c_star": c_star,
    }


def logits_along_gap(
    gaps: Any, y: int, c_star: int, num_classes: int, others_below: float = 0.05
) -> torch.Tensor:
    r"""Logit vectors that move only the gap $z_y - z_{c^*}$, for drawing a loss against it.

    Row $g$ has $z_{c^*} = 0$, $z_y$ = `gaps[g]` and every other logit at $-$`others_below`, so
    $c^*$ stays the strongest wrong class and $\hat\rho = \log(1 + (C-2)\,e^{-s\cdot
    \text{others\_below}})$ is the same in every row.

    Returns:
        float64 tensor `[len(gaps), num_classes]`.
    """
    k = _check_int("num_classes", num_classes, 2)
    y = _check_int("y", y, 0)
    c_star = _check_int("c_star", c_star, 0)
    if y >= k or c_star >= k or y == c_star:
        raise ValueError(
            f"y and c_star must be two different classes in [0, {k - 1}], got {y} and {c_star}"
        )
    below = _check_positive("others_below", others_below)
    g = _as_float64("gaps", np.atleast_1d(np.asarray(gaps, dtype=np.float64)))
    z = torch.full((g.numel(), k), -below, dtype=torch.float64)
    z[:, c_star] = 0.0
    z[:, y] = g
    return z


def la_pairwise_margins(cls_num_list: Sequence[int], tau: float = 1.0) -> np.ndarray:
    r"""The lead the logit-adjusted loss (Menon et al., ICLR 2021, Eq. 10) asks of the target
    $y$ over each class $j$: with $\pi_j = n_j / \sum_k n_k$,

    $$\mathrm{CE}(z + \tau\log\pi, y) = \log\Big[1 + \sum_{j \neq y}
    e^{z_j - z_y + \tau\log(\pi_j / \pi_y)}\Big],$$

    so the pair $(y, j)$ has the margin $\tau\log(\pi_j/\pi_y) = \tau\log(n_j / n_y)$: a
    *relative* pairwise margin $g_y - g_j$ with $g = -\tau\log\pi$, antisymmetric in $(y, j)$.

    Returns:
        float64 array `[C, C]`: rows = target $y$, columns = rival $j$, diagonal NaN.
    """
    n = _check_class_counts("cls_num_list", cls_num_list)
    tau = check_non_negative("tau", tau)
    out = tau * np.log(n[None, :] / n[:, None])  # tau log(n_j / n_y)
    np.fill_diagonal(out, np.nan)
    return out


def margin_read_from_loss(loss: Any, num_classes: int, s: float = 1.0) -> np.ndarray:
    r"""The lead $z_y - z_j$ a loss module asks at its hinge corner, read off its value for every
    pair $(y, j)$: logits $z_j = 0$, $z_y = -t$ and every other logit at $-10^4$ (so $j$ is the
    strongest wrong class and $\hat\rho = 0$); a loss of the form
    $\mathrm{softplus}(s\,(z_j - z_y + m))$ then equals $\mathrm{softplus}(s\,(t + m))$, and
    $m = \log(e^{L} - 1) / s - t$, with the smallest integer $t \geq 0$ that makes
    $L \geq \log 2$ (a loss far below it is not resolved in float32).

    Args:
        loss: a module `loss(logits [1, C], targets [1]) -> scalar` (e.g. `ELMLoss`,
            `LDAMLoss`, `LogitAdjustedLoss`).
        num_classes: C >= 2.
        s: the scale the loss multiplies the logits by (30 for LDAM and ELM, 1 for LA-CE).

    Returns:
        float64 array `[C, C]`: rows = target $y$, columns = rival $j$, diagonal NaN.
    """
    k = _check_int("num_classes", num_classes, 2)
    s = _check_positive("s", s)
    out = np.full((k, k), np.nan)
    for y in range(k):
        for j in range(k):
            if j == y:
                continue
            # read where the softplus argument is >= 0 (the loss >= log 2, well conditioned
            # in float32): let z_y trail z_j by t, then L = softplus(s (t + m))
            for t in range(1001):
                z = torch.full((1, k), -1e4, dtype=torch.float64)
                z[0, j], z[0, y] = 0.0, -float(t)
                value = float(loss(z, torch.tensor([y])))
                if value >= math.log(2):
                    break
            out[y, j] = math.log(math.expm1(value)) / s - t  # softplus^{-1}(L) / s - t
    return out


def conditional_risk_minimiser(posterior: Any, loss: Any, iterations: int = 200) -> np.ndarray:
    r"""The logits $z^*$ minimising the conditional risk $\sum_y \eta_y L(z, y)$ of one input
    whose class posterior is $\eta$ = `posterior`. A loss is *Fisher consistent* when
    $\arg\max_y z^*_y = \arg\max_y \eta_y$ (the Bayes class) for every $\eta$. The losses of
    this module (CE with margins or a logit shift) are convex in $z$ and invariant to adding a
    constant to every logit; L-BFGS (float64) finds $z^*$, returned with mean 0.

    Args:
        posterior: $\eta$, `[C]`, every entry > 0, summing to 1.
        loss: a module `loss(logits [1, C], targets [1]) -> scalar`.

    Returns:
        float64 array `[C]`.
    """
    eta = _as_float64("posterior", posterior)
    if eta.dim() != 1 or eta.numel() < 2 or bool((eta <= 0).any()):
        raise ValueError(f"posterior must be a 1-D array of >= 2 entries > 0, got {eta.tolist()}")
    if abs(float(eta.sum()) - 1) > 1e-9:
        raise ValueError(f"posterior must sum to 1, got {float(eta.sum())!r}")
    iterations = _check_int("iterations", iterations, 1)
    k = eta.numel()
    z = torch.zeros(k, dtype=torch.float64, requires_grad=True)
    targets = torch.arange(k)
    opt = torch.optim.LBFGS([z], max_iter=iterations, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-12, tolerance_change=1e-15)  # fmt: skip

    def risk() -> torch.Tensor:
        opt.zero_grad()
        # sum_y eta_y L(z, y): the batch of C copies of z, one per label, weighted by eta
        value = (eta * torch.stack([loss(z[None], targets[y : y + 1]) for y in range(k)])).sum()
        value.backward()
        return value

    opt.step(risk)
    out = z.detach().numpy()
    return out - out.mean()


def decision_switch_posterior(loss: Any, tol: float = 1e-9) -> float:
    r"""For a two-class loss: the posterior $\eta_0$ of class 0 above which the minimiser of the
    conditional risk (`conditional_risk_minimiser`) predicts class 0, found by bisection on
    $\eta_0 \in (0, 1)$ to `tol`. The Bayes classifier switches at $\eta_0 = 1/2$: a loss whose
    switch lies elsewhere is not Fisher consistent (the classifier minimising the balanced
    error switches at $\eta_0 = \pi_0$, the class prior of class 0).
    """
    tol = _check_positive("tol", tol)
    lo, hi = tol, 1.0 - tol
    while hi - lo > tol:
        mid = (lo + hi) / 2
        z = conditional_risk_minimiser([mid, 1.0 - mid], loss)
        lo, hi = (lo, mid) if z[0] > z[1] else (mid, hi)  # predicts class 0 at mid: look lower
    return (lo + hi) / 2
