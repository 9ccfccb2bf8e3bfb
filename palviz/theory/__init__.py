r"""
# The maths of the theory notebooks

Three topics, each computed (not only stated) so a notebook can check every claim with an
`assert`:

1. **Lipschitz constants** of the summed loss (PAL Sec. 4, Remark after Prop. 4.5)
   $$L_W(z) = \sum_{i=1}^{k} L(W z, i), \qquad \|z\|_2 = B,$$
   where $W$ is `[num_classes, dim]` with the prototypes $w_i$ as *rows* (the same layout as
   the heads' `prototypes`; the paper writes $W^\top z$ with prototypes as columns). For CE
   and anchored simplex prototypes (FNPAL), the constant is
   $$\lambda_{\text{PAL}} = \frac{k\,(1 - e^{-kB/(k-1)})}{1 + (k-1)\, e^{-kB/(k-1)}},$$
   attained at $z = B w_i$. Learnable prototypes do worse: unnormalised $w$ is not Lipschitz
   at all, normalised $w$ with free $z$ gives $\geq k$, normalised $w$ and $\|z\| = B$ gives
   $\geq 2(e^{2B} - 1) / (e^{2B}/(k-1) + 1)$. `numeric_lipschitz` and
   `numeric_lipschitz_unanchored` estimate the suprema by gradient ascent.
2. **The layer-peeled model** and minority collapse (Fang, He, Long, Su, PNAS 2021):
   `solve_layer_peeled`, `minority_collapse_sweep`, defined in :mod:`palviz.theory.layer_peeled`
   and importable from here.
3. **What a ReLU feature can reach**: `reachable_cosine` (the best cosine a feature $z \geq 0$
   can have with each prototype) and `orientation_report` (that, and how many units carry
   each prototype's positive part).
4. **Margins of LDAM and ELM** (ELM paper Eq. 1-7): `ldam_margins`, `elm_effective_margins`,
   `ce_softplus_forms`, `margin_softplus_form` (Eq. 5-6 as a hinge) and `logits_along_gap`
   (logits for drawing a loss against $z_y - z_{c^*}$, a float64 tensor).

Everything is computed in float64 and returned as Python floats or NumPy arrays.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from palviz.checks import check_choice as _check_choice
from palviz.checks import check_int as _check_int
from palviz.checks import check_non_negative, check_probability, check_range
from palviz.checks import check_positive as _check_positive
from palviz.losses import ldam_margins as _ldam_margins
from palviz.theory.layer_peeled import (
    FEATURE_CONSTRAINTS,
    minority_collapse_sweep,
    solve_layer_peeled,
)
from palviz.threads import single_thread

__all__ = [
    "FEATURE_CONSTRAINTS",
    "SUMMED_LOSSES",
    "ce_softplus_forms",
    "elm_effective_margins",
    "fnpal_max_confidence",
    "ldam_margins",
    "lipschitz_normalized_unanchored_lower_bound",
    "lipschitz_pal",
    "lipschitz_unnormalized_z_lower_bound",
    "logits_along_gap",
    "margin_softplus_form",
    "minority_collapse_sweep",
    "noise_aware_scale",
    "numeric_lipschitz",
    "numeric_lipschitz_unanchored",
    "orientation_report",
    "reachable_cosine",
    "solve_layer_peeled",
    "sum_loss_over_labels",
    "unnormalized_w_gradient_norm",
]

SUMMED_LOSSES = ("ce", "gce", "focal")


# ----------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------


def _as_float64(name: str, x: Any) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
    t = t.detach().to(torch.float64).cpu()
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite, got NaN or inf entries")
    return t


# ----------------------------------------------------------------------------------------------
# 1. Lipschitz constants
# ----------------------------------------------------------------------------------------------
def lipschitz_pal(num_classes: int, B: float) -> float:
    r"""$\lambda_{\text{PAL}}$, the Lipschitz constant of $L_W$ for CE with anchored simplex
    prototypes and $\|z\| = B$ (PAL, Remark after Prop. 4.5):

    $$\lambda_{\text{PAL}} = \frac{k\,(1 - e^{-kB/(k-1)})}{1 + (k-1)\, e^{-kB/(k-1)}} .$$

    It grows with $B$ towards $k$. Check values ($k = 10$): $B = 1 \to 1.6928$, $B = 5 \to 9.6264$.
    """
    k = _check_int("num_classes", num_classes, 2)
    B = _check_positive("B", B)
    e = math.exp(-k * B / (k - 1))
    return k * (1.0 - e) / (1.0 + (k - 1) * e)


def lipschitz_unnormalized_z_lower_bound(num_classes: int) -> float:
    r"""Case 2 of PAL's Remark: unit but unanchored prototypes, unnormalised $z$:
    $\sup_{W, z} \|\partial L_W / \partial z\| \geq k > \lambda_{\text{PAL}}$."""
    return float(_check_int("num_classes", num_classes, 2))


def lipschitz_normalized_unanchored_lower_bound(num_classes: int, B: float) -> float:
    r"""Case 3 of PAL's Remark: unit, unanchored prototypes and $\|z\| = B$:

    $$\sup_{W, z}\Big\|\frac{\partial L_W}{\partial z}\Big\| \geq
    \frac{2\,(e^{2B} - 1)}{e^{2B}/(k-1) + 1} > \lambda_{\text{PAL}}.$$

    The bound is attained by $w_1 = z / B$, $w_2 = \dots = w_k = -z/B$. Check value: $k = 10$,
    $B = 1 \to 7.0171$. The inequality with $\lambda_{\text{PAL}}$ is strict for $k \geq 3$;
    for $k = 2$ the simplex $\{w, -w\}$ *is* that configuration and both equal $2\tanh B$.
    """
    k = _check_int("num_classes", num_classes, 2)
    B = _check_positive("B", B)
    e = math.exp(-2.0 * B)  # written with e^{-2B} so that large B does not overflow
    return 2.0 * (1.0 - e) / (1.0 / (k - 1) + e)


def noise_aware_scale(eta: float) -> float:
    r"""FNPAL's noise-aware scale for CE and SCE, $s = \frac{0.25}{0.05 + \eta}$ ($\eta$ = noise
    rate): a smaller $s$ (smaller $B$, smaller $\lambda_{\text{PAL}}$) for noisier labels."""
    eta = check_probability("eta", eta)
    return 0.25 / (0.05 + eta)


def _summed_loss(logits: torch.Tensor, loss: str, loss_kw: dict[str, Any]) -> torch.Tensor:
    """$\\sum_i L(\\text{logits}, i)$ for logits `[..., k]`, returned as `[...]`."""
    logp = torch.log_softmax(logits, dim=-1)
    k = logits.shape[-1]
    if loss == "ce":
        # sum_i -log p_i = k * logsumexp(z) - sum_i z_i
        return -logp.sum(dim=-1)
    p = logp.exp()
    if loss == "gce":
        # sum_i (1 - p_i^q) / q
        q = loss_kw["q"]
        return (k - (p**q).sum(dim=-1)) / q
    # focal: sum_i -(1 - p_i)^gamma log p_i
    gamma = loss_kw["gamma"]
    return -(((1.0 - p).clamp_min(0.0) ** gamma) * logp).sum(dim=-1)


def _check_loss(loss: str, loss_kw: dict[str, Any]) -> dict[str, Any]:
    loss = _check_choice("loss", loss, SUMMED_LOSSES)
    allowed = {"ce": set(), "gce": {"q"}, "focal": {"gamma"}}[loss]
    unknown = set(loss_kw) - allowed
    if unknown:
        raise TypeError(
            f"loss={loss!r} takes keyword arguments {sorted(allowed)}, got {sorted(unknown)}"
        )
    kw: dict[str, Any] = {}
    if loss == "gce":
        kw["q"] = check_range("q", loss_kw.get("q", 0.7), 0.0, 1.0, low_open=True)
    if loss == "focal":
        kw["gamma"] = check_non_negative("gamma", loss_kw.get("gamma", 0.5))
    return kw


def sum_loss_over_labels(W: Any, z: Any, loss: str = "ce", **loss_kw: Any) -> torch.Tensor:
    r"""$L_W(z) = \sum_{i=1}^{k} L(W z, i)$: the loss summed over every possible label.

    * ``"ce"``: $\sum_i -\log p_i$, $p = \mathrm{softmax}(W z)$.
    * ``"gce"`` (keyword `q`, default 0.7): $\sum_i (1 - p_i^q)/q$.
    * ``"focal"`` (keyword `gamma`, default 0.5): $\sum_i -(1 - p_i)^\gamma \log p_i$.

    Args:
        W: prototypes as rows, `[num_classes, dim]` (tensor or array).
        z: one feature `[dim]` or a batch `[batch_size, dim]`.
        loss: one of ``"ce"``, ``"gce"``, ``"focal"``.

    Returns:
        float64 tensor: a scalar for one feature, `[batch_size]` for a batch. Differentiable
        with respect to `z` (and `W`) when they are float64 tensors that require grad.
    """
    kw = _check_loss(loss, loss_kw)
    W = W if isinstance(W, torch.Tensor) and W.dtype == torch.float64 else _as_float64("W", W)
    z = z if isinstance(z, torch.Tensor) and z.dtype == torch.float64 else _as_float64("z", z)
    if W.dim() != 2 or W.shape[0] < 2:
        raise ValueError(f"W must have shape (num_classes >= 2, dim), got {tuple(W.shape)}")
    if z.dim() not in (1, 2) or z.shape[-1] != W.shape[1]:
        raise ValueError(
            f"z must have shape ({W.shape[1]},) or (batch_size, {W.shape[1]}), got {tuple(z.shape)}"
        )
    return _summed_loss(z @ W.T, loss, kw)


def fnpal_max_confidence(num_classes: int, scale: float) -> float:
    r"""The largest softmax probability FNPAL (anchored simplex, features normalised and scaled
    by $s$) can give any class: the "fitting ability" side of the noise-aware scale.

    $$p_{\max}(s) = \max_{\|u\| = 1} \mathrm{softmax}(s\, W^\top u)_y
    = \frac{1}{1 + (k-1)\, e^{-ks/(k-1)}},$$

    reached at $u = w_y$. Proof: by Jensen's inequality and $\sum_j w_j = 0$,
    $\sum_{j \ne y} e^{s (w_j - w_y)^\top u} \geq (k-1)\, e^{-\frac{ks}{k-1} w_y^\top u}
    \geq (k-1)\, e^{-\frac{ks}{k-1}}$. It ties fitting and robustness together:
    $\lambda_{\text{PAL}}(s) = \frac{k\,(k\, p_{\max}(s) - 1)}{k-1}$ (`lipschitz_pal` with $B = s$).

    Args:
        num_classes: $k \geq 2$.
        scale: $s > 0$ (the feature norm $B$ the loss sees).
    """
    k = _check_int("num_classes", num_classes, 2)
    s = _check_positive("scale", scale)
    return 1.0 / (1.0 + (k - 1) * math.exp(-k * s / (k - 1)))


def _grad_norms(W: torch.Tensor, z: torch.Tensor, loss: str, kw: dict[str, Any]) -> torch.Tensor:
    """$\\|\\nabla_z L_W(z)\\|$ for `z` `[R, d]` and `W` `[k, d]` or `[R, k, d]`; differentiable."""
    if not z.requires_grad:
        z = z.requires_grad_()
    logits = (
        z @ W.T if W.dim() == 2 else torch.einsum("rkd,rd->rk", W, z)
    )  # row r only sees z_r, so the gradient of the sum is the per-row gradient
    total = _summed_loss(logits, loss, kw).sum()
    (g,) = torch.autograd.grad(total, z, create_graph=True)
    return g.norm(dim=-1)


def _ascent(
    params: list[torch.Tensor],
    objective: Any,
    steps: int,
    lr: float,
) -> float:
    """Maximise `objective()` (a `[R]` tensor, one value per restart) with Adam and a cosine
    learning-rate decay; return the best value seen over all restarts and steps."""
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    best = -math.inf
    with single_thread():
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            values = objective()
            best = max(best, float(values.detach().max()))
            (-values.sum()).backward()
            opt.step()
            sched.step()
        best = max(best, float(objective().detach().max()))
    return best


def _ascent_options(
    B: Any, loss: Any, options: dict[str, Any]
) -> tuple[float, int, int, torch.Generator, dict[str, Any]]:
    """Validate the arguments the two numeric estimates share: `B`, `loss` and `options`
    (``restarts``, ``steps``, ``seed``, loss keywords; defaults from `numeric_lipschitz`'s
    signature). Returns ``(B, restarts, steps, generator seeded with seed, loss keywords)``."""
    bound = inspect.signature(numeric_lipschitz).bind(None, B, loss, **options)
    bound.apply_defaults()
    a = bound.arguments
    kw = _check_loss(loss, a["loss_kw"])
    B = _check_positive("B", B)
    restarts = _check_int("restarts", a["restarts"], 1)
    steps = _check_int("steps", a["steps"], 1)
    seed = _check_int("seed", a["seed"], 0)
    return B, restarts, steps, torch.Generator().manual_seed(seed), kw


def numeric_lipschitz(
    W: Any,
    B: float,
    loss: str = "ce",
    restarts: int = 32,
    steps: int = 300,
    seed: int = 0,
    **loss_kw: Any,
) -> float:
    r"""Estimate $\sup_{\|z\| = B} \|\nabla_z L_W(z)\|$ for fixed prototypes `W`.

    Gradient ascent on the sphere of radius $B$: $z = B\, u / \|u\|$ with $u$ free, Adam
    (lr 0.05, cosine decay to 0) on $\sum_r \|\nabla_z L_W(z_r)\|$ over `restarts` random
    starting points at once (restarts do not interact: each $z_r$ only enters its own term).
    The gradient norm is differentiated by double back-propagation. Returns the best value
    seen, which is attained by a feasible $z$, so it is a lower estimate of the supremum.

    For CE with the simplex the estimate matches `lipschitz_pal` to a relative error of about
    1e-7 ($k = 10$, $B$ from 0.1 to 50, defaults) and below 2e-6 ($k = 100$, $B \leq 20$); the
    tests require 1e-4. The maximiser is $z = B w_i$. (The first call in a session also pays
    a one-off import inside `torch.optim`.)

    Args:
        W: prototypes as rows, `[num_classes, dim]`.
        B: feature norm $> 0$.
        loss: ``"ce"``, ``"gce"`` (keyword `q`) or ``"focal"`` (keyword `gamma`).
        restarts: number of random starts.
        steps: ascent steps.
        seed: seeds the starting points.
    """
    W = _as_float64("W", W)
    if W.dim() != 2 or W.shape[0] < 2:
        raise ValueError(f"W must have shape (num_classes >= 2, dim), got {tuple(W.shape)}")
    B, restarts, steps, gen, kw = _ascent_options(
        B, loss, dict(restarts=restarts, steps=steps, seed=seed, **loss_kw)
    )
    u = F.normalize(torch.randn(restarts, W.shape[1], generator=gen, dtype=torch.float64), dim=1)
    u.requires_grad_()

    def objective() -> torch.Tensor:
        return _grad_norms(W, B * F.normalize(u, dim=1), loss, kw)

    return _ascent([u], objective, steps, lr=0.05)


def numeric_lipschitz_unanchored(
    num_classes: int, dim: int, B: float, loss: str = "ce", **options: Any
) -> float:
    r"""Estimate $\sup_{W, \|z\| = B} \|\nabla_z L_W(z)\|$ over *unit but free* prototypes.

    As `numeric_lipschitz`, but the ascent runs jointly over $z = B u/\|u\|$ and
    $w_i = v_i / \|v_i\|$ (case 3 of PAL's Remark). Gradient ascent from random starts finds
    a local maximum, so this is an estimate from below of the supremum: for CE with k = 10 it
    exceeded $\lambda_{\text{PAL}}$ at every B tried and came within 1e-5 (relative) of
    `lipschitz_normalized_unanchored_lower_bound` (attained by $w_1 = z/B$,
    $w_{j \ne 1} = -z/B$), but for k = 100, B = 5 it stopped at 162 against that bound's 197.

    Args:
        num_classes, dim: $k \geq 2$ prototypes in $d \geq 1$ dimensions.
        B, loss: as in `numeric_lipschitz`.
        **options: ``restarts``, ``steps``, ``seed`` and the loss's keywords, with the same
            meaning and defaults as in `numeric_lipschitz`.
    """
    k = _check_int("num_classes", num_classes, 2)
    d = _check_int("dim", dim, 1)
    B, restarts, steps, gen, kw = _ascent_options(B, loss, options)
    u = F.normalize(torch.randn(restarts, d, generator=gen, dtype=torch.float64), dim=1)
    v = F.normalize(torch.randn(restarts, k, d, generator=gen, dtype=torch.float64), dim=2)
    u.requires_grad_()
    v.requires_grad_()

    def objective() -> torch.Tensor:
        return _grad_norms(F.normalize(v, dim=2), B * F.normalize(u, dim=1), loss, kw)

    return _ascent([u, v], objective, steps, lr=0.05)


def unnormalized_w_gradient_norm(num_classes: int, B: float, t: Any) -> np.ndarray:
    r"""Case 1 of PAL's Remark: with unnormalised prototypes $L_W$ is not Lipschitz.

    Take $\|z\| = B$, $w_1 = t z$ and $w_2 = \dots = w_k = 0$. Then
    $\nabla_z L_W(z) = W^\top(k p - \mathbf{1}) = t z\,(k p_1 - 1)$ with
    $p_1 = e^{tB^2} / (e^{tB^2} + k - 1)$, whose norm $tB(kp_1 - 1) \to \infty$ as
    $t \to \infty$ (about $t B (k-1)$). Computed by automatic differentiation of CE.

    Args:
        num_classes: $k$.
        B: $\|z\| > 0$.
        t: scalar or array of $t \geq 0$.

    Returns:
        array of $\|\nabla_z L_W(z)\|$, same shape as `t`.
    """
    k = _check_int("num_classes", num_classes, 2)
    B = _check_positive("B", B)
    ts = np.asarray(t, dtype=np.float64)
    if not np.all(np.isfinite(ts)) or np.any(ts < 0):
        raise ValueError(f"t must be finite and >= 0, got {t!r}")
    flat = torch.as_tensor(ts.reshape(-1))
    z = torch.zeros(flat.numel(), 2, dtype=torch.float64)
    z[:, 0] = B
    W = torch.zeros(flat.numel(), k, 2, dtype=torch.float64)
    W[:, 0, :] = flat[:, None] * z  # w_1 = t z
    norms = _grad_norms(W, z, "ce", {})
    return norms.detach().numpy().reshape(ts.shape)


# ----------------------------------------------------------------------------------------------
# 3. What a ReLU feature can reach
# ----------------------------------------------------------------------------------------------
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


# ----------------------------------------------------------------------------------------------
# 4. Margins of LDAM and ELM
# ----------------------------------------------------------------------------------------------
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
