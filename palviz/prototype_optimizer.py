r"""PAL's prototype generation (Table 7), with its history, for teaching.

:func:`optimize_prototypes` minimises the normalised softmax loss $L_0$ of $k$ random features
and $k$ random prototypes and keeps the normalised prototypes: the regular simplex
$w_i^\top w_j = -\frac{1}{k-1}$ when $d \geq k - 1$ (:func:`palviz.heads.simplex_prototypes`
with ``method="optimize"``). The scale must be small: at $s \geq 10$ the loss saturates before
the configuration is equiangular, and SGD stalls; Adam at a small scale converges.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from palviz.checks import check_choice as _check_choice
from palviz.checks import check_int as _check_int
from palviz.checks import check_positive as _check_positive
from palviz.metrics import simplex_error
from palviz.threads import single_thread

__all__ = ["optimize_prototypes"]

# Defaults of the "optimize" recipe. Adam at a small scale converges to the simplex; the
# check every `_CHECK_EVERY` steps stops as soon as every pairwise cosine is within
# `_OPT_TOL` of -1/(k-1).
_OPT_SCALE = 2.0
_OPT_LR = 0.01
_OPT_MAX_STEPS = 10_000
_OPT_TOL = 1e-5
_CHECK_EVERY = 250


def _l0_loss_and_grad(X: torch.Tensor, k: int, s: float) -> tuple[torch.Tensor, torch.Tensor]:
    r"""$L_0$ and its gradient for stacked `X = [z; w]` of shape `[2k, d]` (labels $y_i = i$).

    With $\hat Z, \hat W$ the row-normalised halves, $P = \mathrm{softmax}(s \hat Z \hat W^\top)$
    (row-wise) and $G = \frac{s}{k}(P - I)$:
    $\partial L_0 / \partial \hat Z = G \hat W$, $\partial L_0 / \partial \hat W = G^\top \hat Z$,
    and through the normalisation $\partial L_0/\partial x = (g - \hat x\, \hat x^\top g)/\|x\|$.
    Written out by hand because it is faster than autograd at this size.
    """
    norms = X.norm(dim=1, keepdim=True)
    Xn = X / norms
    zn, wn = Xn[:k], Xn[k:]
    logits = s * (zn @ wn.T)
    # L_0 = mean_i CE(s cos(z_i, w_.), i)
    logp = torch.log_softmax(logits, dim=1)
    loss = -logp.diagonal().mean()
    G = (logp.exp() - torch.eye(k, dtype=X.dtype)) * (s / k)
    dXn = torch.cat([G @ wn, G.T @ zn])
    # project out the radial part: d(x/||x||)/dx = (I - x^ x^T) / ||x||
    grad = (dXn - Xn * (dXn * Xn).sum(dim=1, keepdim=True)) / norms
    return loss, grad


def optimize_prototypes(
    num_classes: int,
    dim: int,
    scale: float = _OPT_SCALE,
    lr: float = _OPT_LR,
    steps: int = _OPT_MAX_STEPS,
    optimizer: str = "adam",
    tol: float | None = _OPT_TOL,
    seed: int = 0,
    record_every: int = _CHECK_EVERY,
    return_features: bool = False,
) -> (
    tuple[torch.Tensor, dict[str, list[float]]]
    | tuple[torch.Tensor, dict[str, list[float]], torch.Tensor]
):
    r"""PAL's prototype generation (Table 7), with its history, for teaching.

    Minimises the normalised softmax loss $L_0$ over $k$ random features $z_i$ and $k$ random
    prototypes $w_i$ with labels $y_i = i$ (balanced, $N = k$):

    $$L_0 = -\frac{1}{k}\sum_{i=1}^{k}
    \log \frac{e^{s \hat w_i^\top \hat z_i}}{\sum_{j=1}^{k} e^{s \hat w_j^\top \hat z_i}},
    \qquad \hat v = v / \|v\|_2 .$$

    The gradient is computed in closed form and the optimiser (Adam with PyTorch's default
    betas (0.9, 0.999) and eps 1e-8, or plain SGD) is written out, in float32, on one thread.

    Args:
        num_classes: $k \geq 2$.
        dim: feature dimension $d \geq 1$ (a simplex needs $d \geq k - 1$).
        scale: $s > 0$. Small (1-2) works; $s \geq 10$ saturates before the simplex is reached.
        lr: learning rate.
        steps: maximum number of steps.
        optimizer: ``"adam"`` (converges) or ``"sgd"`` (plain gradient descent; stalls, kept to
            show it).
        tol: stop once $\max_{i\neq j}|\hat w_i^\top \hat w_j + \frac{1}{k-1}| <$ `tol`
            (checked every `record_every` steps; only when $d \geq k-1$). ``None`` runs all
            `steps`. For $d < k-1$ (no simplex) the run stops when $L_0$ no longer changes
            (relative change below 1e-7 between two checks).
        seed: seeds the random initialisation; the result is deterministic for a seed.
        record_every: record the history (and check for convergence) every so many steps.
        return_features: also return the optimised features $\hat z_i$ (PAL's Theorem 3.2:
            at the optimum each sits at its own prototype, $\hat z_i = \hat w_i$).

    In one dimension the unit sphere is $\{-1, +1\}$ and normalisation has zero gradient, so
    ``dim=1`` returns alternating signs $(+1, -1, +1, \dots)$ directly with an empty history.

    Returns:
        ``(W, history)``: `W` float32 `[num_classes, dim]` with unit rows, and ``history`` with
        lists ``"step"``, ``"loss"`` and ``"max_cosine_error"`` (the distance of the worst
        pairwise cosine from $-1/(k-1)$). With ``return_features=True``, ``(W, history, Z)``
        with `Z` float32 `[num_classes, dim]` the unit features, row $i$ of class $i$.
    """
    k = _check_int("num_classes", num_classes, 2)
    d = _check_int("dim", dim, 1)
    s = _check_positive("scale", scale)
    lr = _check_positive("lr", lr)
    steps = _check_int("steps", steps, 1)
    optimizer = _check_choice("optimizer", optimizer, ("adam", "sgd"))
    record_every = _check_int("record_every", record_every, 1)
    if tol is not None:
        tol = _check_positive("tol", tol)
    seed = _check_int("seed", seed, 0)

    history: dict[str, list[float]] = {"step": [], "loss": [], "max_cosine_error": []}
    if d == 1:
        # The unit "sphere" of R^1 is {-1, +1}: normalisation has zero gradient, so no step
        # can move a point. Return the optimum directly: alternating signs (the simplex when
        # k = 2; for k > 2 the two halves are as balanced as possible).
        signs = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(k)])[:, None]
        return (signs, history, signs.clone()) if return_features else (signs, history)

    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(k, d, generator=gen)
    w = torch.randn(k, d, generator=gen)
    X = torch.cat([z, w])  # [2k, d]: features then prototypes
    m = torch.zeros_like(X)
    v = torch.zeros_like(X)
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    simplex_exists = d >= k - 1
    previous_loss = math.inf
    with single_thread():
        for step in range(1, steps + 1):
            loss, grad = _l0_loss_and_grad(X, k, s)
            if optimizer == "sgd":
                X.add_(grad, alpha=-lr)
            else:
                # Adam: m <- b1 m + (1-b1) g, v <- b2 v + (1-b2) g^2,
                # x <- x - lr * m_hat / (sqrt(v_hat) + eps)
                m.mul_(beta1).add_(grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (v.sqrt() / math.sqrt(1 - beta2**step)).add_(eps)
                X.addcdiv_(m, denom, value=-lr / (1 - beta1**step))
            if step % record_every == 0 or step == steps:
                value = float(loss)
                err = simplex_error(X[k:].double().numpy(), cosines=False)
                history["step"].append(float(step))
                history["loss"].append(value)
                history["max_cosine_error"].append(err)
                if tol is not None:
                    if simplex_exists and err < tol:
                        break
                    if not simplex_exists and abs(previous_loss - value) < 1e-7 * max(1.0, value):
                        break
                previous_loss = value
    W = F.normalize(X[k:].double(), dim=1).float()
    if return_features:
        return W, history, F.normalize(X[:k].double(), dim=1).float()
    return W, history
