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
