r"""
# Margins of LDAM and ELM

The ELM paper, Eq. 1-7: cross-entropy in three equal forms, the last a softplus hinge on the
gap to the strongest wrong class $c^*$ with a bias margin $\hat\rho$ (`ce_softplus_forms`);
LDAM's per-class margins $\Delta_j \propto n_j^{-1/4}$ (`ldam_margins`); the margin ELM asks
for, $\Delta_y - \lambda\Delta_{c^*}$ (`elm_effective_margins`); LDAM and ELM as that hinge
(`margin_softplus_form`, Eq. 5-6); and logits that move only the gap $z_y - z_{c^*}$, for
drawing a loss against it (`logits_along_gap`, a float64 tensor). All are also importable
from :mod:`palviz.theory`.

Everything is computed in float64 and returned as NumPy arrays (but `logits_along_gap`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from palviz.checks import check_int as _check_int
from palviz.checks import check_non_negative
from palviz.checks import check_positive as _check_positive
from palviz.losses import ldam_margins as _ldam_margins
from palviz.theory._inputs import as_float64 as _as_float64

__all__ = [
    "ce_softplus_forms",
    "elm_effective_margins",
    "ldam_margins",
    "logits_along_gap",
    "margin_softplus_form",
]


def ldam_margins(cls_num_list: Sequence[int], max_m: float = 0.5) -> np.ndarray:
    r"""LDAM's per-class margins $\Delta_j = C / n_j^{1/4}$ with $C$ chosen so that
    $\max_j \Delta_j$ = `max_m` (the rarest class gets the largest margin):
    :func:`palviz.losses.ldam_margins` in float64, as NumPy.

    Returns:
        float64 array `[num_classes]`.
    """
    return _ldam_margins(cls_num_list, max_m, dtype=torch.float64).numpy()


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
