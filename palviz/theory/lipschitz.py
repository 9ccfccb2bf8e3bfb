r"""
# Lipschitz constants of the summed loss

PAL Sec. 4, Remark after Prop. 4.5: the loss summed over every label,
$$L_W(z) = \sum_{i=1}^{k} L(W z, i), \qquad \|z\|_2 = B,$$
where $W$ is `[num_classes, dim]` with the prototypes $w_i$ as *rows* (the same layout as
the heads' `prototypes`; the paper writes $W^\top z$ with prototypes as columns). For CE and
anchored simplex prototypes (FNPAL), the constant is
$$\lambda_{\text{PAL}} = \frac{k\,(1 - e^{-kB/(k-1)})}{1 + (k-1)\, e^{-kB/(k-1)}},$$
attained at $z = B w_i$ (`lipschitz_pal`). Learnable prototypes do worse: unnormalised $w$ is
not Lipschitz at all (`unnormalized_w_gradient_norm`), normalised $w$ with free $z$ gives
$\geq k$ (`lipschitz_unnormalized_z_lower_bound`), normalised $w$ and $\|z\| = B$ gives
$\geq 2(e^{2B} - 1) / (e^{2B}/(k-1) + 1)$ (`lipschitz_normalized_unanchored_lower_bound`).
`numeric_lipschitz` and `numeric_lipschitz_unanchored` estimate the suprema by gradient
ascent on `sum_loss_over_labels`; `noise_aware_scale` and `fnpal_max_confidence` are FNPAL's
scale and the confidence it allows. All are also importable from :mod:`palviz.theory`.

PAL Theorem 4.4 (Eq. 7) is what these constants are for: under symmetric label noise at rate
$\eta < 1 - 1/k$, a loss whose $L_W$ is $\lambda$-Lipschitz on the ball $\|z\| \leq B$ has
$$0 \leq R_L(\hat f) - R_L(f^*) \leq \frac{2\eta\lambda B}{k(1-\eta) - 1}$$
(`noisy_risk_bound`), where $\hat f$ minimises the noisy risk and $f^*$ the clean one.
`noisy_risk_minimiser` finds $\hat f$'s feature for one sample, so that the bound can be
checked against an excess risk computed without it. These two are imported from this module.

Everything is computed in float64 and returned as Python floats or NumPy arrays.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from palviz.checks import check_choice as _check_choice
from palviz.checks import check_int as _check_int
from palviz.checks import check_non_negative, check_probability, check_range
from palviz.checks import check_positive as _check_positive
from palviz.theory._inputs import as_float64 as _as_float64
from palviz.threads import single_thread

__all__ = [
    "SUMMED_LOSSES",
    "fnpal_max_confidence",
    "lipschitz_normalized_unanchored_lower_bound",
    "lipschitz_pal",
    "lipschitz_unnormalized_z_lower_bound",
    "noise_aware_scale",
    "noisy_risk_bound",
    "noisy_risk_minimiser",
    "numeric_lipschitz",
    "numeric_lipschitz_unanchored",
    "sum_loss_over_labels",
    "unnormalized_w_gradient_norm",
]

SUMMED_LOSSES = ("ce", "gce", "focal")


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


def noisy_risk_bound(num_classes: int, eta: float, lam: float, B: float) -> float:
    r"""PAL Theorem 4.4 (Eq. 7): the excess clean risk of the noisy-risk minimiser,

    $$0 \leq R_L(\hat f) - R_L(f^*) \leq \frac{2\eta\lambda B}{k(1-\eta) - 1},$$

    for symmetric label noise at rate $\eta < 1 - 1/k$ and a loss $L$ whose
    $L_W(z) = \sum_i L(W^\top z, i)$ is $\lambda$-Lipschitz on $\|z\|_2 \leq B$. Why: with
    $\tilde R$ the noisy risk, $\tilde R(f) = (1 - \frac{\eta k}{k-1}) R(f) +
    \frac{\eta}{k-1} \mathbb{E}\, L_W(z)$, and $|L_W(z_1) - L_W(z_2)| \leq 2\lambda B$ on the
    ball; $\tilde R(\hat f) \leq \tilde R(f^*)$ then leaves the bound. A symmetric loss
    ($L_W$ constant, $\lambda = 0$) gives 0, Ghosh et al.'s Theorem 1.

    Args:
        num_classes: k >= 2.
        eta: the noise rate, in $[0, 1 - 1/k)$.
        lam: the Lipschitz constant $\lambda \geq 0$ (e.g. `lipschitz_pal(k, B)`).
        B: the feature norm bound, > 0.
    """
    k = _check_int("num_classes", num_classes, 2)
    eta = check_range("eta", eta, 0.0, 1 - 1 / k, high_open=True)  # k(1 - eta) - 1 > 0
    lam = check_non_negative("lam", lam)
    B = _check_positive("B", B)
    return 2 * eta * lam * B / (k * (1 - eta) - 1)  # Eq. 7


def noisy_risk_minimiser(
    W: Any, eta: float, B: float, target: int = 0, steps: int = 4000, lr: float = 0.5
) -> np.ndarray:
    r"""The feature $\hat z$, $\|\hat z\|_2 \leq B$, minimising the noisy CE risk of one sample
    of clean class $y$ = `target` under symmetric noise at rate $\eta$:

    $$\hat z = \arg\min_{\|z\| \leq B}\ (1-\eta)\,L(Wz, y) + \frac{\eta}{k-1}
    \sum_{i \neq y} L(Wz, i) = \arg\min_{\|z\| \leq B} \mathrm{CE}(Wz, q),$$

    $q$ the soft label ($1-\eta$ on $y$, $\frac{\eta}{k-1}$ elsewhere). The risk is convex in $z$
    and the ball is convex, so projected gradient descent (gradient $W^\top(p - q)$, step `lr`,
    `steps` steps from $z = 0$) finds it; nothing about the simplex is assumed.

    Args:
        W: prototypes `[k, d]` (rows).
        eta: the noise rate in $[0, 1]$.
        B: the radius, > 0.

    Returns:
        float64 array `[d]`.
    """
    W = _as_float64("W", W).numpy()
    if W.ndim != 2:
        raise ValueError(f"W must have shape (num_classes, dim), got {W.shape}")
    k = W.shape[0]
    eta = check_probability("eta", eta)
    B = _check_positive("B", B)
    y = _check_int("target", target, 0)
    if y >= k:
        raise ValueError(f"target must be in [0, {k - 1}], got {y}")
    steps = _check_int("steps", steps, 1)
    lr = _check_positive("lr", lr)
    q = np.full(k, eta / (k - 1))
    q[y] = 1 - eta
    # start where the steepest descent from z = 0 meets the sphere: with a one-hot label
    # (eta = 0) the minimiser lies on the sphere, where the gradient is too small to get there
    g0 = W.T @ (np.full(k, 1 / k) - q)
    z = -B * g0 / np.linalg.norm(g0) if np.linalg.norm(g0) > 0 else np.zeros(W.shape[1])
    for _ in range(steps):
        logits = W @ z
        p = np.exp(logits - logits.max())
        z = z - lr * W.T @ (p / p.sum() - q)  # gradient of CE(Wz, q): W^T (p - q)
        norm = np.linalg.norm(z)
        if norm > B:
            z *= B / norm  # project onto the ball ||z|| <= B
    return z
