"""PAL's risk bound under symmetric label noise (Theorem 4.4, Eq. 7) in ``palviz.theory.lipschitz``:
the bound's formula, its domain, and the excess risk of the noisy-risk minimiser against it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from palviz.heads import AnchoredHead
from palviz.theory import lipschitz_pal
from palviz.theory.lipschitz import noisy_risk_bound, noisy_risk_minimiser


def test_the_bound_is_two_eta_lambda_b_over_k_one_minus_eta_minus_one():
    # k = 10, eta = 0.4, lambda = 3, B = 2: 2 * 0.4 * 3 * 2 / (10 * 0.6 - 1) = 4.8 / 5
    assert noisy_risk_bound(10, 0.4, 3.0, 2.0) == pytest.approx(0.96, rel=1e-12)


def test_a_symmetric_loss_has_no_excess_risk_and_clean_labels_none_either():
    assert noisy_risk_bound(10, 0.4, 0.0, 2.0) == 0.0
    assert noisy_risk_bound(10, 0.0, 3.0, 2.0) == 0.0


@pytest.mark.parametrize("eta", [0.9, 1.0, -0.1])
def test_a_noise_rate_outside_the_theorem_is_refused(eta):
    with pytest.raises(ValueError, match=r"eta must be in \[0, 0.9\)"):
        noisy_risk_bound(10, eta, 1.0, 1.0)


def _soft_ce(logits, q):
    logp = logits - logits.max() - math.log(np.exp(logits - logits.max()).sum())
    return float(-(q * logp).sum())


@pytest.mark.parametrize("eta, B", [(0.4, 5.0), (0.2, 10.0), (0.6, 3.0), (0.4, 0.5)])
def test_the_noisy_minimiser_is_where_the_soft_label_is_matched_and_its_excess_is_bounded(eta, B):
    k = 10
    W = AnchoredHead(k, k).prototypes.double().numpy()
    z = noisy_risk_minimiser(W, eta, B)
    # by symmetry z = r w_0 with the logit gap r k/(k-1) = log((1 - eta)(k - 1)/eta), capped at B
    r = min(B, (k - 1) / k * math.log((1 - eta) * (k - 1) / eta))
    assert np.allclose(z, r * W[0], atol=1e-5)
    q = np.full(k, eta / (k - 1))
    q[0] = 1 - eta
    rng = np.random.default_rng(0)
    for _ in range(200):  # no feature in the ball has a smaller noisy risk
        u = rng.normal(size=k)
        u *= B * rng.uniform() ** (1 / k) / np.linalg.norm(u)
        assert _soft_ce(W @ u, q) >= _soft_ce(W @ z, q) - 1e-9
    onehot = np.eye(k)[0]
    excess = _soft_ce(W @ z, onehot) - _soft_ce(B * W @ W[0], onehot)  # f* puts z at B w_0
    assert -1e-6 <= excess <= noisy_risk_bound(k, eta, lipschitz_pal(k, B), B)


def test_with_clean_labels_the_minimiser_reaches_the_sphere_at_its_prototype():
    W = AnchoredHead(10, 10).prototypes.double().numpy()
    z = noisy_risk_minimiser(W, 0.0, 10.0, target=3)
    assert np.allclose(z, 10.0 * W[3], atol=1e-5)
