r"""
# Classifier heads: linear, cosine (FNPN) and prototype-anchored (PAL / FNPAL)

A head maps penultimate features $z \in \mathbb{R}^{d}$ (a batch `[batch_size, in_features]`)
to logits `[batch_size, num_classes]`. Every head here exposes its class vectors
$W = [w_1, \dots, w_k]^\top$ (shape `[num_classes, in_features]`) through a `prototypes`
property, so metrics (minimum angle, norms, margins) read them the same way for every head.

* `LinearHead`: $\text{logits} = W z + b$, everything learned (the plain softmax classifier).
* `CosineHead`: $\text{logits} = s \, \frac{W z}{\|w_j\| \|z\|}$ with learnable $W$.
  With $s = 1$ this is LDAM's `NormedLinear` (the loss supplies the scale, e.g. $s = 30$);
  with $s > 1$ it is FNPN, the "normalised features, normalised learnable prototypes"
  comparison of PAL (Fig. 5).
* `AnchoredHead`: prototypes fixed before training, stored as a buffer (never a parameter,
  never updated). PAL: $\text{logits} = W z$. FNPAL (`normalize=True`):
  $\text{logits} = s \, W \frac{z}{\|z\|}$.

## The regular simplex

PAL (Lemma 3.1, Theorem 3.2) shows that with a balanced set and no margin, the prototypes that
maximise the minimal sample margin form a regular simplex on the unit sphere,

$$w_i^\top w_j = -\frac{1}{k-1}, \qquad i \neq j,$$

which exists when $d \geq k - 1$. `simplex_prototypes` builds it in two ways:

* `"optimize"` (PAL's Table 7 recipe, :mod:`palviz.prototype_optimizer`): minimise the
  normalised softmax loss $L_0$ over $k$ random features and $k$ random prototypes, keep the
  normalised prototypes.
* `"etf"` (closed form, the simplex equiangular tight frame): with
  $M = I_k - \frac{1}{k}\mathbf{1}\mathbf{1}^\top$, the prototypes are the normalised rows of
  $M U^\top$ for $U \in \mathbb{R}^{d \times k}$ with orthonormal columns ($d \geq k$), or of
  $M V$ for $V \in \mathbb{R}^{k \times (k-1)}$ an orthonormal basis of $\mathbf{1}^\perp$
  ($d = k - 1$).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from palviz.checks import check_choice as _check_choice
from palviz.checks import check_int as _check_int
from palviz.checks import check_positive as _check_positive
from palviz.prototype_optimizer import optimize_prototypes

__all__ = [
    "HEADS",
    "HEAD_KINDS",
    "PROTOTYPE_METHODS",
    "PROTOTYPE_ORIENTATIONS",
    "SIMPLEX_TOL",
    "AnchoredHead",
    "CosineHead",
    "LinearHead",
    "make_head",
    "simplex_prototypes",
]

PROTOTYPE_METHODS = ("optimize", "etf")
PROTOTYPE_ORIENTATIONS = ("random", "axis", "block")
HEAD_KINDS = ("linear", "cosine", "anchored")
#: How far a pairwise cosine may lie from -1/(k-1) for prototypes to count as a regular simplex
#: (the guarantee of `simplex_prototypes` for d >= k - 1; lesson 01 and its exercises use it).
SIMPLEX_TOL = 1e-3


# ----------------------------------------------------------------------------------------------
# simplex prototypes
# ----------------------------------------------------------------------------------------------
def _etf_prototypes(k: int, d: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    # M = I_k - 11^T / k: centred identity; its rows are the simplex in the span of 1^perp
    M = torch.eye(k, dtype=torch.float64) - 1.0 / k
    if d >= k:
        # U (d x k), orthonormal columns: a seeded random embedding of R^k into R^d
        U, _ = torch.linalg.qr(torch.randn(d, k, generator=gen, dtype=torch.float64))
        P = M @ U.T
    else:  # d == k - 1
        # V (k x (k-1)): orthonormal basis of 1^perp (QR of [1, random]), then a seeded rotation
        ones = torch.ones(k, 1, dtype=torch.float64)
        A = torch.cat([ones, torch.randn(k, k - 1, generator=gen, dtype=torch.float64)], dim=1)
        Q, _ = torch.linalg.qr(A)
        V = Q[:, 1:]
        R, _ = torch.linalg.qr(torch.randn(k - 1, k - 1, generator=gen, dtype=torch.float64))
        P = M @ V @ R
    return F.normalize(P, dim=1).float()


def _block_simplex(k: int, d: int, units: int) -> torch.Tensor:
    r"""The simplex on $k$ disjoint blocks of `units` coordinates each (the first $k\,m$ of $d$):
    $u_i = \mathbf{1}_{B_i} / \sqrt{m}$ (orthonormal), $w_i \propto u_i - \frac{1}{k}\sum_j u_j$.
    With $m = 1$ this is $w_i \propto e_i - \frac{1}{k}\mathbf{1}_k$, the coordinate axes."""
    U = torch.zeros(k, d, dtype=torch.float64)
    for i in range(k):
        U[i, i * units : (i + 1) * units] = 1.0 / math.sqrt(units)
    return F.normalize(U - U.mean(dim=0), dim=1).float()


def simplex_prototypes(
    num_classes: int,
    dim: int,
    method: str = "optimize",
    seed: int = 0,
    orientation: str = "random",
) -> torch.Tensor:
    r"""Unit prototypes forming a regular simplex: $w_i^\top w_j = -\frac{1}{k-1}$, $i \neq j$.

    Every regular simplex is every other one up to a rotation (and an order of the classes),
    so the rotation is a free choice. It matters for features that end in a ReLU: a feature
    $z \geq 0$ reaches at best $\cos(z, w) = \|w^+\| / \|w\|$
    (:func:`palviz.theory.reachable_cosine`), and a prototype whose positive part sits on few
    units hangs on those units. `orientation` picks the rotation:

    * ``"random"`` (default, as in the papers): whatever rotation `method` and `seed` give.
      The reachable cosine then differs from class to class
      (:func:`palviz.theory.reachable_cosine` computes it).
    * ``"axis"``: $w_i \propto e_i - \frac{1}{k}\mathbf{1}_k$ in the first $k$ coordinates.
      Every class reaches $\sqrt{(k-1)/k}$ (0.949 for $k = 10$), but its positive part is one
      unit: if that ReLU unit dies, no feature points towards the class any more.
    * ``"block"``: the first $k\,m$ coordinates, $m = \lfloor d/k \rfloor$, cut into $k$
      disjoint blocks $B_i$; $u_i = \mathbf{1}_{B_i}/\sqrt{m}$ are orthonormal and
      $w_i = \sqrt{k/(k-1)}\,(u_i - \frac{1}{k}\sum_j u_j)$. Same pairwise cosines, every
      class again reaches $\sqrt{(k-1)/k}$ (its positive part is
      $\sqrt{k/(k-1)}\,(1 - \frac{1}{k})\,u_i$, of norm $\sqrt{(k-1)/k}$), and that positive
      part is spread evenly over the $m$ units of its block (6 for $k = 10$, $d = 64$).
      ``"axis"`` is the case $m = 1$.

    ``"axis"`` and ``"block"`` are closed forms: `method` and `seed` do not change them.

    Args:
        num_classes: $k \geq 2$.
        dim: $d \geq 1$ ($d \geq k$ for ``"axis"`` and ``"block"``).
        method: ``"optimize"`` (PAL's Table 7 recipe: Adam, lr 0.01, $s = 2$, on $L_0$ with
            $N = k$ random features, stopped once every pairwise cosine is within 1e-5 of
            $-1/(k-1)$, at most 10,000 steps; see
            :func:`palviz.prototype_optimizer.optimize_prototypes`) or ``"etf"`` (closed
            form $M U^\top$ / $M V$, normalised rows).
        seed: seeds the random initialisation / embedding; same seed, same prototypes.
        orientation: ``"random"``, ``"axis"`` or ``"block"`` (above).

    Returns:
        float32 tensor `[num_classes, dim]` with unit rows. For $d \geq k-1$ every pairwise
        cosine is within 1e-3 of $-1/(k-1)$ (the tested bound): "optimize" stops once within
        1e-5 unless it reaches the 10,000-step cap first, and "etf", "axis" and "block" are
        exact up to float32 rounding. For $d < k-1$ no simplex exists:
        "optimize" returns the spread configuration the optimiser reaches (not claimed to be a
        best packing) and "etf" raises ``ValueError``.
    """
    k = _check_int("num_classes", num_classes, 2)
    d = _check_int("dim", dim, 1)
    method = _check_choice("method", method, PROTOTYPE_METHODS)
    seed = _check_int("seed", seed, 0)
    orientation = _check_choice("orientation", orientation, PROTOTYPE_ORIENTATIONS)
    if orientation != "random":
        if d < k:
            raise ValueError(
                f"dim must be >= num_classes for orientation={orientation!r}, got dim={d}, "
                f"num_classes={k}"
            )
        return _block_simplex(k, d, 1 if orientation == "axis" else d // k)
    if method == "etf":
        if d < k - 1:
            raise ValueError(
                f"method='etf' needs dim >= num_classes - 1 (a simplex of {k} points needs "
                f"{k - 1} dimensions), got dim={d}, num_classes={k}; use method='optimize' "
                f"for a spread configuration"
            )
        return _etf_prototypes(k, d, seed)
    W, _ = optimize_prototypes(k, d, seed=seed)
    return W


# ----------------------------------------------------------------------------------------------
# heads
# ----------------------------------------------------------------------------------------------
class _Head(nn.Module):
    """What every head shares: the sizes $d$ (`in_features`) and $k$ (`num_classes`), checked
    once here, the check of the features in `forward` and the `prototypes`."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.in_features = _check_int("in_features", in_features, 1)
        self.num_classes = _check_int("num_classes", num_classes, 2)

    @property
    def prototypes(self) -> torch.Tensor:
        """The class vectors $W$ (the ``weight``), `[num_classes, in_features]`, detached."""
        return self.weight.detach()

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """The head's `logits` of features `z`, `[batch_size, in_features]` (checked)."""
        if z.dim() != 2 or z.shape[1] != self.in_features:
            raise ValueError(
                f"features must have shape (batch_size, {self.in_features}), got {tuple(z.shape)}"
            )
        return self.logits(z)

    def logits(self, z: torch.Tensor) -> torch.Tensor:
        """The logits `[batch_size, num_classes]` of checked features `z`; each head has its
        own."""
        raise NotImplementedError


class LinearHead(_Head):
    r"""The plain softmax classifier: $\text{logits} = W z + b$.

    Args:
        in_features: $d$.
        num_classes: $k$.
        bias: learn a bias $b$.

    Shapes: `[batch_size, in_features]` -> `[batch_size, num_classes]`.
    """

    def __init__(self, in_features: int, num_classes: int, bias: bool = True) -> None:
        super().__init__(in_features, num_classes)
        self.fc = nn.Linear(self.in_features, self.num_classes, bias=bool(bias))

    @property
    def prototypes(self) -> torch.Tensor:
        """The class vectors $W$ (``fc``'s weight), `[num_classes, in_features]`, detached."""
        return self.fc.weight.detach()

    def logits(self, z: torch.Tensor) -> torch.Tensor:
        # W z + b
        return self.fc(z)


class CosineHead(_Head):
    r"""Cosine logits with learnable prototypes: $\text{logits}_j = s\,\hat w_j^\top \hat z$.

    $\hat v = v / \|v\|_2$. With ``scale=1`` this is LDAM's `NormedLinear` (the LDAM / ELM
    loss multiplies by its own $s$); with ``scale=s`` it is FNPN (PAL Fig. 5).

    The weight is initialised as in LDAM's `NormedLinear`: uniform on $[-1, 1]$, then each
    prototype row rescaled to norm 1 (`renorm`). Only directions matter for the logits;
    `prototypes` are the learnable $W$, not normalised.

    Args:
        in_features: $d$.
        num_classes: $k$.
        scale: $s > 0$; logits lie in $[-s, s]$.

    Shapes: `[batch_size, in_features]` -> `[batch_size, num_classes]`.
    """

    def __init__(self, in_features: int, num_classes: int, scale: float = 1.0) -> None:
        super().__init__(in_features, num_classes)
        self.scale = _check_positive("scale", scale)
        self.weight = nn.Parameter(torch.empty(self.num_classes, self.in_features))
        with torch.no_grad():
            self.weight.uniform_(-1.0, 1.0).renorm_(2, 0, 1e-5).mul_(1e5)

    def logits(self, z: torch.Tensor) -> torch.Tensor:
        # s * cos(z, w_j) = s * (z / ||z||) . (w_j / ||w_j||)
        return self.scale * F.normalize(z, dim=1) @ F.normalize(self.weight, dim=1).T

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, num_classes={self.num_classes}, scale={self.scale}"


class AnchoredHead(_Head):
    r"""Prototype-anchored head (PAL; FNPAL with ``normalize=True``).

    The prototypes $W$ are fixed before training and stored as a buffer named ``weight``: they
    are in the `state_dict`, move with `.to(device)`, but are not in `parameters()` and no
    optimiser updates them.

    * PAL (``normalize=False``): $\text{logits} = W z$ (the feature norm is learned freely).
    * FNPAL (``normalize=True``): $\text{logits} = s\, W \frac{z}{\|z\|_2}$, i.e. $s \cos$ for
      unit prototypes; ``scale=1`` when a margin loss (LDAM, ELM) supplies its own $s$, or
      the noise-aware $s = 0.25 / (0.05 + \eta)$ with CE / SCE.

    Args:
        in_features: $d$.
        num_classes: $k$.
        normalize: L2-normalise features (FNPAL).
        scale: $s > 0$, used only with ``normalize=True`` (plain PAL logits are not scaled).
        prototypes: `[num_classes, in_features]` tensor or array to anchor, used as given (not
            renormalised). Default: ``simplex_prototypes(num_classes, in_features, "etf")``
            when ``in_features >= num_classes - 1`` (exact, instant), else
            ``simplex_prototypes(num_classes, in_features, "optimize")`` (no simplex exists;
            the optimiser's spread configuration).
        orientation: the rotation of the default simplex, ``"random"`` (default), ``"axis"``
            or ``"block"`` (see `simplex_prototypes`; the last two need
            ``in_features >= num_classes``). Only with ``prototypes=None``.

    Shapes: `[batch_size, in_features]` -> `[batch_size, num_classes]`.
    """

    weight: torch.Tensor

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        normalize: bool = False,
        scale: float = 1.0,
        prototypes: torch.Tensor | np.ndarray | None = None,
        orientation: str = "random",
    ) -> None:
        super().__init__(in_features, num_classes)
        self.normalize = bool(normalize)
        self.scale = _check_positive("scale", scale)
        self.orientation = _check_choice("orientation", orientation, PROTOTYPE_ORIENTATIONS)
        if prototypes is None:
            method = "etf" if self.in_features >= self.num_classes - 1 else "optimize"
            W = simplex_prototypes(
                self.num_classes, self.in_features, method=method, orientation=self.orientation
            )
        elif self.orientation != "random":
            raise ValueError(
                f"orientation={self.orientation!r} orients the default simplex; it cannot be "
                f"combined with explicit prototypes"
            )
        else:
            W = torch.as_tensor(prototypes).detach().clone().to(torch.float32)
            expected = (self.num_classes, self.in_features)
            if tuple(W.shape) != expected:
                raise ValueError(
                    f"prototypes must have shape (num_classes, in_features) = {expected}, "
                    f"got {tuple(W.shape)}"
                )
            if not torch.isfinite(W).all():
                raise ValueError("prototypes must be finite, got NaN or inf entries")
        self.register_buffer("weight", W)

    def logits(self, z: torch.Tensor) -> torch.Tensor:
        if self.normalize:
            # FNPAL: s * W^T (z / ||z||)
            return self.scale * F.normalize(z, dim=1) @ self.weight.T
        # PAL: W^T z
        return z @ self.weight.T

    def extra_repr(self) -> str:
        orientation = "" if self.orientation == "random" else f", orientation={self.orientation!r}"
        return (
            f"in_features={self.in_features}, num_classes={self.num_classes}, "
            f"normalize={self.normalize}, scale={self.scale}{orientation}"
        )


#: The head classes by name (:data:`HEAD_KINDS`), as :func:`make_head` builds them.
HEADS: dict[str, type[nn.Module]] = {
    "linear": LinearHead,
    "cosine": CosineHead,
    "anchored": AnchoredHead,
}


def make_head(kind: str, in_features: int, num_classes: int, **kw: Any) -> nn.Module:
    """Build a head by name: ``"linear"`` (`LinearHead`), ``"cosine"`` (`CosineHead`) or
    ``"anchored"`` (`AnchoredHead`); keyword arguments go to the class.

    >>> make_head("anchored", 64, 10, normalize=True, scale=5.0)
    AnchoredHead(in_features=64, num_classes=10, normalize=True, scale=5.0)
    """
    kind = _check_choice("kind", kind, HEAD_KINDS)
    return HEADS[kind](in_features, num_classes, **kw)
