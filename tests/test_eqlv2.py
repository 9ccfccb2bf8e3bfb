"""EQL v2 in palviz's classification form (``palviz.losses.eqlv2``, docs/reference.md 2.3).

The expected values are computed here from the formula, in float64 numpy, one sample and class
at a time: weights q_j = f(g_j), r_j = 1 + alpha (1 - q_j), f(x) = 1 / (1 + e^{-gamma (x - mu)}),
loss (1/N) sum_ij w_ij BCE(z_ij, t_ij), then the sums P_j, Q_j of w_ij |sigmoid(z_ij) - t_ij|
over the positives and negatives, g_j = P_j / (Q_j + 1e-10), starting from g_j = 100.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_losses import TOL, value

from palviz.experiments import methods
from palviz.losses import LOSSES, EQLv2Loss, eqlv2_mapping, make_loss


class RefEQLv2:
    """The formula, step by step, with its state."""

    def __init__(self, c: int, gamma=12.0, mu=0.8, alpha=4.0) -> None:
        self.c, self.gamma, self.mu, self.alpha = c, gamma, mu, alpha
        self.pos, self.neg = [0.0] * c, [0.0] * c
        self.ratio = [100.0] * c

    def f(self, x: float) -> float:
        return 1.0 / (1.0 + math.exp(-self.gamma * (x - self.mu)))

    def step(self, z: np.ndarray, y: np.ndarray) -> float:
        q = [self.f(g) for g in self.ratio]
        r = [1.0 + self.alpha * (1.0 - qj) for qj in q]
        total = 0.0
        pos, neg = [0.0] * self.c, [0.0] * self.c
        for i in range(len(y)):
            for j in range(self.c):
                t = 1.0 if j == y[i] else 0.0
                p = 1.0 / (1.0 + math.exp(-z[i, j]))
                bce = -(t * math.log(p) + (1 - t) * math.log(1 - p))
                w = r[j] if t else q[j]
                total += w * bce
                if t:
                    pos[j] += w * abs(p - t)
                else:
                    neg[j] += w * abs(p - t)
        for j in range(self.c):
            self.pos[j] += pos[j]
            self.neg[j] += neg[j]
            self.ratio[j] = self.pos[j] / (self.neg[j] + 1e-10)
        return total / len(y)


def batch(n: int, c: int, seed: int, rare: int | None = None):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, c, generator=g) * 2
    targets = torch.randint(0, c, (n,), generator=g)
    if rare is not None:  # class `rare` appears once only: a tail class
        targets[targets == rare] = (rare + 1) % c
        targets[0] = rare
    return logits, targets


def train_step(loss: EQLv2Loss, logits: torch.Tensor, targets: torch.Tensor) -> float:
    x = logits.clone().requires_grad_(True)
    out = loss(x, targets)
    out.backward()
    return value(out)


def test_reference_reproduces_hand_computed_values():
    # first step, zero logits: every weight f(100) ~ 1, BCE log 2 per entry, C entries per row
    ref = RefEQLv2(3)
    assert ref.step(np.zeros((2, 3)), np.array([0, 1])) == pytest.approx(3 * math.log(2), rel=1e-9)
    # |p - t| = 1/2 everywhere: P = (1/2, 1/2, 0), Q = (1/2, 1/2, 1), weights ~ 1
    assert ref.ratio == pytest.approx([1.0, 1.0, 0.0], abs=1e-9)


@pytest.mark.parametrize(("n", "c"), [(1, 2), (16, 10), (40, 5)])
def test_eqlv2_over_two_steps_is_the_formula_with_its_accumulated_ratios(n, c):
    loss, ref = EQLv2Loss(c), RefEQLv2(c)
    for step in range(2):
        logits, targets = batch(n, c, seed=10 * n + c + step, rare=0 if c > 2 else None)
        got = train_step(loss, logits, targets)
        assert got == pytest.approx(ref.step(logits.double().numpy(), targets.numpy()), abs=TOL)
        np.testing.assert_allclose(loss.pos_grad.numpy(), ref.pos, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(loss.neg_grad.numpy(), ref.neg, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(loss.pos_neg.numpy(), ref.ratio, rtol=1e-4, atol=1e-6)


def test_other_constants_follow_the_formula():
    loss, ref = EQLv2Loss(4, gamma=6.0, mu=0.5, alpha=2.0), RefEQLv2(4, 6.0, 0.5, 2.0)
    for step in range(3):
        logits, targets = batch(12, 4, seed=50 + step, rare=3)
        assert train_step(loss, logits, targets) == pytest.approx(
            ref.step(logits.double().numpy(), targets.numpy()), abs=TOL
        )


def test_a_rare_class_gets_its_negatives_damped_and_its_positives_boosted():
    loss = EQLv2Loss(5)
    for step in range(4):
        train_step(loss, *batch(64, 5, seed=step, rare=4))
    r, q = loss.weights()
    # class 4 has one positive per batch against 63 negatives: g_4 is small
    assert float(q[4]) < 0.05 and float(r[4]) > 1 + 4 * 0.95
    assert float(q[4]) < float(q[:4].min())
    np.testing.assert_allclose(q.numpy(), eqlv2_mapping(loss.pos_neg).numpy())


def test_the_sums_grow_only_when_the_loss_is_back_propagated():
    loss = EQLv2Loss(3)
    logits, targets = batch(8, 3, seed=3)
    with torch.no_grad():
        first = value(loss(logits, targets))
    assert value(loss(logits, targets)) == first  # a call without backward changes nothing
    assert torch.equal(loss.pos_neg, torch.full((3,), 100.0))
    assert train_step(loss, logits, targets) == pytest.approx(first, abs=1e-6)
    assert not torch.equal(loss.pos_neg, torch.full((3,), 100.0))
    assert value(loss(logits, targets)) != pytest.approx(first, abs=1e-6)


def test_the_mapping_is_the_logistic_of_gamma_x_minus_mu():
    x = torch.tensor([0.0, 0.8, 2.0], dtype=torch.float64)
    expected = [1 / (1 + math.exp(12 * 0.8)), 0.5, 1 / (1 + math.exp(-12 * 1.2))]
    np.testing.assert_allclose(eqlv2_mapping(x).numpy(), expected, rtol=1e-12)


def test_invalid_arguments_name_the_argument():
    with pytest.raises(ValueError, match="gamma must be > 0, got -1"):
        EQLv2Loss(3, gamma=-1)
    with pytest.raises(ValueError, match="alpha"):
        EQLv2Loss(3, alpha=-0.5)
    with pytest.raises(ValueError, match="num_classes"):
        EQLv2Loss(1)
    with pytest.raises(ValueError, match="num_classes=3"):
        EQLv2Loss(3)(torch.zeros(2, 4), torch.tensor([0, 1]))


def test_eqlv2_is_registered_with_its_table_method():
    assert LOSSES["eqlv2"].factory is EQLv2Loss and LOSSES["eqlv2"].needs == ("num_classes",)
    assert make_loss("eqlv2", num_classes=10).alpha == 4.0
    m = methods.method("long_tailed", "EQLv2")
    assert m.head() == ("linear", {}) and not m.drw
    assert m.base.kwargs() == {"gamma": 12.0, "mu": 0.8, "alpha": 4.0}
    assert "EQLv2+PAL" not in methods.methods_of("long_tailed")
