"""Margins of LDAM and ELM in ``palviz.theory``: ELM paper Eq. 5-6 as a softplus hinge, and
logits that move only the gap z_y - z_c* (used by notebook 05)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from palviz import theory
from palviz.losses import ELMLoss, LDAMLoss

CIFAR10_LT_100 = [5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50]


def cosine_batch(n: int, c: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    z = 2 * torch.rand(n, c, generator=gen, dtype=torch.float64) - 1
    return z, torch.randint(0, c, (n,), generator=gen)


def reference_hinge(z, y, counts, max_m, s, lam, use_target_margin):
    """softplus(s (z_c* - z_y) + s m_eff + rho_hat), one sample at a time, float64 numpy."""
    m = np.asarray(counts, dtype=float) ** -0.25
    m = m * max_m / m.max()
    out = []
    for zi, yi in zip(z.numpy(), y.numpy(), strict=True):
        others = np.delete(np.arange(len(zi)), yi)
        c = others[np.argmax(zi[others])]
        margin = (m[yi] if use_target_margin else 0.0) - lam * m[c]
        rho = math.log(np.exp(s * (zi[others] - zi[c])).sum())
        x = s * (zi[c] - zi[yi]) + s * margin + rho
        out.append(max(x, 0.0) + math.log1p(math.exp(-abs(x))))
    return np.array(out)


@pytest.mark.parametrize("lam, use_target_margin", [(0.0, True), (1.0, True), (0.3, False)])
def test_margin_softplus_form_matches_its_formula(lam, use_target_margin):
    z, y = cosine_batch(64, 10, seed=1)
    got = theory.margin_softplus_form(z, y, CIFAR10_LT_100, 0.5, 30.0, lam, use_target_margin)
    expected = reference_hinge(z, y, CIFAR10_LT_100, 0.5, 30.0, lam, use_target_margin)
    assert np.abs(got["loss"] - expected).max() < 1e-9
    assert np.all(got["rho_hat"] >= 0) and np.all(got["rho_hat"] <= math.log(9) + 1e-12)


@pytest.mark.parametrize("lam, use_target_margin", [(0.0, True), (1.0, True), (0.5, False)])
def test_margin_softplus_form_equals_the_ldam_and_elm_modules_per_sample(lam, use_target_margin):
    z, y = cosine_batch(40, 10, seed=2)
    if lam == 0.0:
        module = LDAMLoss(CIFAR10_LT_100, max_m=0.5, s=30.0)
    else:
        module = ELMLoss(CIFAR10_LT_100, 0.5, 30.0, lam, use_target_margin=use_target_margin)
    form = theory.margin_softplus_form(z, y, CIFAR10_LT_100, 0.5, 30.0, lam, use_target_margin)
    each = np.array([module(z[i : i + 1], y[i : i + 1]).item() for i in range(len(y))])
    # the modules keep the margins in float32: ~3e-8 error, times s = 30
    assert np.abs(each - form["loss"]).max() < 1e-5


def test_margin_is_the_effective_margin_of_the_sample_pair():
    z, y = cosine_batch(50, 10, seed=3)
    form = theory.margin_softplus_form(z, y, CIFAR10_LT_100, 0.5, 30.0, 1.0)
    eff = theory.elm_effective_margins(CIFAR10_LT_100, 0.5, 1.0)
    c_star = z.masked_fill(torch.nn.functional.one_hot(y, 10).bool(), -math.inf).argmax(1)
    assert np.array_equal(form["c_star"], c_star.numpy())
    assert np.allclose(form["margin"], eff[y.numpy(), c_star.numpy()])


def test_elm_hinge_corner_sits_at_the_effective_margin_plus_rho_over_s():
    s, below = 30.0, 0.05
    rho = math.log(1 + 8 * math.exp(-s * below))
    eff = theory.elm_effective_margins(CIFAR10_LT_100, 0.5, 1.0)
    loss = ELMLoss(CIFAR10_LT_100, max_m=0.5, s=s, lam=1.0)
    for y, c in [(9, 0), (0, 9), (4, 7)]:
        z = theory.logits_along_gap([eff[y, c] + rho / s], y, c, 10, below)
        assert loss(z, torch.tensor([y])).item() == pytest.approx(math.log(2), abs=1e-5)


def test_logits_along_gap_moves_only_the_gap_and_keeps_c_star():
    gaps = np.linspace(-0.5, 0.8, 14)
    z = theory.logits_along_gap(gaps, 2, 7, 10, others_below=0.1)
    assert z.shape == (14, 10) and z.dtype == torch.float64
    assert torch.allclose(z[:, 2] - z[:, 7], torch.as_tensor(gaps))
    forms = theory.ce_softplus_forms(z, torch.full((14,), 2))
    assert np.all(forms["c_star"] == 7)
    assert np.allclose(forms["rho_hat"], math.log(1 + 8 * math.exp(-0.1)))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"y": 3, "c_star": 3}, "different classes"),
        ({"y": 10, "c_star": 0}, "different classes"),
        ({"others_below": 0.0}, "others_below"),
    ],
)
def test_logits_along_gap_rejects_bad_arguments(kwargs, match):
    args = {"gaps": [0.0], "y": 1, "c_star": 0, "num_classes": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        theory.logits_along_gap(**args)


def test_margin_softplus_form_rejects_logits_of_the_wrong_width():
    z, y = cosine_batch(4, 5, seed=0)
    with pytest.raises(ValueError, match="cls_num_list"):
        theory.margin_softplus_form(z, y, CIFAR10_LT_100)


# --- Fisher consistency and logit adjustment ---------------------------------------------------
def test_la_pairwise_margins_are_tau_log_of_the_count_ratio():
    m = theory.margins.la_pairwise_margins([100, 10, 1], tau=0.5)
    assert m[2, 0] == pytest.approx(0.5 * math.log(100), rel=1e-12)
    assert m[0, 1] == pytest.approx(0.5 * math.log(0.1), rel=1e-12)
    assert np.isnan(np.diag(m)).all()


def test_margins_read_from_the_loss_modules_match_their_formulas():
    from palviz.losses import LogitAdjustedLoss

    c = CIFAR10_LT_100
    n = np.asarray(c, dtype=float)
    delta = 0.5 * (n.min() / n) ** 0.25  # C n_j^{-1/4}, C = M n_min^{1/4}
    read = theory.margins.margin_read_from_loss
    elm = read(ELMLoss(c, 0.5, 30.0, 1.0), 10, s=30.0)
    la = read(LogitAdjustedLoss(c), 10)
    ldam = read(LDAMLoss(c, 0.5, 30.0), 10, s=30.0)
    off = ~np.eye(10, dtype=bool)
    assert np.allclose(elm[off], (delta[:, None] - delta[None, :])[off], atol=1e-5)
    assert np.allclose(la[off], np.log(n[None, :] / n[:, None])[off], atol=1e-5)
    assert np.allclose(ldam[off], np.broadcast_to(delta[:, None], (10, 10))[off], atol=1e-5)


def test_two_class_ldam_switches_away_from_one_half_and_equal_margins_do_not():
    sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    d0, d1 = 0.5 * (50 / 5000) ** 0.25, 0.5  # LDAM's margins of counts [5000, 50], M = 0.5
    switch = theory.margins.decision_switch_posterior(LDAMLoss([5000, 50], 0.5, 30.0), tol=1e-7)
    # R'(t) at t = z_0 - z_1 = 0 changes sign where eta_0 sig(s d0) = (1 - eta_0) sig(s d1)
    assert switch == pytest.approx(sig(30 * d1) / (sig(30 * d0) + sig(30 * d1)), abs=1e-6)
    equal = theory.margins.decision_switch_posterior(LDAMLoss([50, 50], 0.5, 30.0), tol=1e-7)
    assert equal == pytest.approx(0.5, abs=1e-6)


def test_the_conditional_risk_minimiser_of_plain_ce_is_the_log_posterior():
    eta = np.array([0.5, 0.3, 0.2])
    z = theory.margins.conditional_risk_minimiser(eta, torch.nn.CrossEntropyLoss())
    assert np.allclose(z, np.log(eta) - np.log(eta).mean(), atol=1e-6)


def test_a_posterior_that_is_not_a_distribution_is_refused():
    with pytest.raises(ValueError, match="posterior must sum to 1"):
        theory.margins.conditional_risk_minimiser([0.5, 0.4], torch.nn.CrossEntropyLoss())
    with pytest.raises(ValueError, match="posterior must be a 1-D array"):
        theory.margins.conditional_risk_minimiser([1.0, 0.0], torch.nn.CrossEntropyLoss())
