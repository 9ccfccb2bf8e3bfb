"""Specification of palviz.theory: Lipschitz constants, the layer-peeled model, LDAM/ELM margins."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from palviz.heads import simplex_prototypes
from palviz.theory import (
    ce_softplus_forms,
    elm_effective_margins,
    ldam_margins,
    lipschitz_normalized_unanchored_lower_bound,
    lipschitz_pal,
    lipschitz_unnormalized_z_lower_bound,
    minority_collapse_sweep,
    noise_aware_scale,
    numeric_lipschitz,
    numeric_lipschitz_unanchored,
    solve_layer_peeled,
    sum_loss_over_labels,
    unnormalized_w_gradient_norm,
)

CIFAR10_LT_100 = [5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50]


# ----------------------------------------------------------------------------------------------
# Lipschitz constants
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("B", "expected"), [(1.0, 1.6928), (5.0, 9.6264)])
def test_lipschitz_pal_check_values_for_ten_classes(B, expected):
    assert lipschitz_pal(10, B) == pytest.approx(expected, abs=1e-4)


def test_case_three_bound_check_value_for_ten_classes():
    assert lipschitz_normalized_unanchored_lower_bound(10, 1.0) == pytest.approx(7.0171, abs=1e-4)


def test_case_two_bound_is_the_number_of_classes():
    assert lipschitz_unnormalized_z_lower_bound(10) == 10.0


@pytest.mark.parametrize("num_classes", [3, 10, 100])
@pytest.mark.parametrize("B", [0.1, 1.0, 5.0, 10.0])
def test_anchoring_gives_the_smallest_lipschitz_constant(num_classes, B):
    pal = lipschitz_pal(num_classes, B)
    assert pal < lipschitz_normalized_unanchored_lower_bound(num_classes, B)
    assert pal < lipschitz_unnormalized_z_lower_bound(num_classes)


@pytest.mark.parametrize("B", [0.1, 1.0, 5.0])
def test_with_two_classes_the_simplex_is_the_worst_case_and_both_are_two_tanh_b(B):
    # k = 2: the simplex {w, -w} is the configuration of the case-3 bound
    assert lipschitz_pal(2, B) == pytest.approx(2 * math.tanh(B), rel=1e-12)
    assert lipschitz_normalized_unanchored_lower_bound(2, B) == pytest.approx(2 * math.tanh(B))


def test_lambda_pal_grows_with_the_feature_norm_towards_k():
    values = [lipschitz_pal(10, B) for B in (0.5, 1, 2, 5, 10, 50)]
    assert all(a < b for a, b in zip(values, values[1:], strict=False))
    assert values[-1] == pytest.approx(10.0, abs=1e-9)


def test_ce_summed_over_labels_is_the_sum_of_k_cross_entropies():
    rng = np.random.default_rng(0)
    W, z = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    logits = z @ W.T
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(sum_loss_over_labels(W, z).numpy(), -logp.sum(axis=1), rtol=1e-12)
    p = np.exp(logp)
    np.testing.assert_allclose(
        sum_loss_over_labels(W, z, "gce", q=0.7).numpy(),
        ((1 - p**0.7) / 0.7).sum(axis=1),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        sum_loss_over_labels(W, z, "focal", gamma=2.0).numpy(),
        (-((1 - p) ** 2) * logp).sum(axis=1),
        rtol=1e-12,
    )
    assert sum_loss_over_labels(W, z[0]).dim() == 0


def test_sum_loss_over_labels_rejects_unknown_losses_and_keywords():
    W, z = np.eye(3), np.ones(3)
    with pytest.raises(ValueError, match=r"loss must be one of \['ce', 'gce', 'focal'\]"):
        sum_loss_over_labels(W, z, "mae")
    with pytest.raises(TypeError, match="q"):
        sum_loss_over_labels(W, z, "ce", q=0.5)
    with pytest.raises(ValueError, match="q must be in"):
        sum_loss_over_labels(W, z, "gce", q=1.5)


@pytest.mark.parametrize("B", [1.0, 5.0])
def test_numeric_lipschitz_on_the_simplex_matches_lambda_pal(B):
    W = simplex_prototypes(10, 9, method="etf")
    estimate = numeric_lipschitz(W, B)
    assert estimate == pytest.approx(lipschitz_pal(10, B), rel=1e-4)


def test_the_gradient_norm_at_a_prototype_is_lambda_pal():
    W = simplex_prototypes(10, 9, method="etf").double()
    z = (3.0 * W[0]).clone().requires_grad_()
    (grad,) = torch.autograd.grad(sum_loss_over_labels(W, z), z)
    assert float(grad.norm()) == pytest.approx(lipschitz_pal(10, 3.0), rel=1e-6)


@pytest.mark.parametrize("B", [1.0, 5.0])
def test_free_unit_prototypes_have_a_larger_lipschitz_constant(B):
    estimate = numeric_lipschitz_unanchored(10, 16, B)
    assert estimate > lipschitz_pal(10, B)
    assert estimate >= (1 - 1e-3) * lipschitz_normalized_unanchored_lower_bound(10, B)


def test_unnormalized_prototypes_are_not_lipschitz():
    t = np.array([1.0, 10.0, 100.0, 1000.0])
    k, B = 10, 1.0
    norms = unnormalized_w_gradient_norm(k, B, t)
    # closed form: ||grad|| = t B (k p_1 - 1), p_1 = e^{tB^2} / (e^{tB^2} + k - 1)
    p1 = 1.0 / (1.0 + (k - 1) * np.exp(-t * B**2))
    np.testing.assert_allclose(norms, t * B * (k * p1 - 1), rtol=1e-10)
    assert np.all(np.diff(norms) > 0)
    assert norms[-1] > 1000 * lipschitz_pal(k, B)


@pytest.mark.parametrize(
    ("eta", "expected"), [(0.0, 5.0), (0.2, 1.0), (0.45, 0.5), (1.0, 0.25 / 1.05)]
)
def test_noise_aware_scale(eta, expected):
    assert noise_aware_scale(eta) == pytest.approx(expected, rel=1e-12)


def test_noise_aware_scale_rejects_a_rate_outside_zero_one():
    with pytest.raises(ValueError, match=r"eta must be in \[0, 1\], got 1.5"):
        noise_aware_scale(1.5)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: lipschitz_pal(1, 1.0), "num_classes must be >= 2, got 1"),
        (lambda: lipschitz_pal(10, -0.5), "B must be > 0, got -0.5"),
        (lambda: lipschitz_normalized_unanchored_lower_bound(10, 0), "B must be > 0, got 0"),
        (lambda: numeric_lipschitz(np.ones((1, 3)), 1.0), "num_classes >= 2"),
        (lambda: numeric_lipschitz(np.eye(3), 1.0, restarts=0), "restarts must be >= 1, got 0"),
    ],
)
def test_lipschitz_helpers_validate_their_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ----------------------------------------------------------------------------------------------
# layer-peeled model
# ----------------------------------------------------------------------------------------------
def mean_offdiag_cosine(W: np.ndarray) -> float:
    Wn = W / np.linalg.norm(W, axis=1, keepdims=True)
    c = Wn @ Wn.T
    return float(c[~np.eye(len(W), dtype=bool)].mean())


def test_balanced_layer_peeled_solution_is_the_simplex():
    out = solve_layer_peeled(ratio=1.0, steps=100)
    W, H = out["W"], out["H"]
    assert mean_offdiag_cosine(W) == pytest.approx(-1 / 9, abs=1e-4)
    assert out["minority_cosine"] == pytest.approx(-1 / 9, abs=1e-4)
    assert out["majority_cosine"] == pytest.approx(-1 / 9, abs=1e-4)
    # h_k is aligned with w_k and both lie on the constraint boundary: margin 1 + 1/(k-1)
    assert out["gamma_min"] == pytest.approx(1 + 1 / 9, abs=1e-4)
    np.testing.assert_allclose(np.linalg.norm(H, axis=1), 1.0, atol=1e-4)


def test_minority_classifiers_collapse_at_large_imbalance():
    balanced = solve_layer_peeled(ratio=1.0, E_W=5.0, E_H=5.0, steps=300)
    imbalanced = solve_layer_peeled(ratio=1e4, E_W=5.0, E_H=5.0, steps=300)
    assert balanced["minority_cosine"] == pytest.approx(-1 / 9, abs=1e-3)
    assert imbalanced["minority_cosine"] > 0.9
    assert mean_offdiag_cosine(imbalanced["W"][5:]) > 0.9  # recomputed from W itself
    assert imbalanced["gamma_min_normalized"] < 1e-3 < balanced["gamma_min_normalized"]


def test_with_unit_budgets_the_minority_classifiers_shrink_to_the_origin():
    out = solve_layer_peeled(ratio=1e4, steps=100)
    assert np.linalg.norm(out["W"][5:], axis=1).max() < 1e-4
    # vanished classifiers have no direction: their cosine is undefined, not 1
    assert out["minority_vanished"] and np.isnan(out["minority_cosine"])


def test_anchored_prototypes_do_not_collapse():
    sweep = minority_collapse_sweep(anchored=True, steps=100)
    assert sweep["ratios"].shape == (41,)
    assert sweep["ratios"][-1] == pytest.approx(1e4)
    np.testing.assert_allclose(sweep["minority_cosine"], -1 / 9, atol=1e-6)
    np.testing.assert_allclose(sweep["gamma_min_normalized"], 1 + 1 / 9, atol=1e-4)


def test_sweep_shows_the_minority_cosine_rising_with_the_ratio():
    sweep = minority_collapse_sweep(E_W=5.0, E_H=5.0, steps=100)
    cos = sweep["minority_cosine"]
    assert cos[0] == pytest.approx(-1 / 9, abs=1e-3)
    assert cos[-1] > 0.9
    assert np.all(np.diff(cos[:30]) > 0)  # monotone up to R = 10^3
    assert sweep["W"].shape == (41, 10, 10) and sweep["margins"].shape == (41, 10)


@pytest.mark.parametrize("feature_constraint", ["class", "sample"])
@pytest.mark.parametrize("anchored", [False, True])
def test_layer_peeled_solutions_satisfy_the_energy_constraints(feature_constraint, anchored):
    R, E_W, E_H = 30.0, 2.0, 3.0
    out = solve_layer_peeled(
        3, 4, R, E_W, E_H, anchored=anchored, steps=100, feature_constraint=feature_constraint
    )
    W, H = out["W"], out["H"]
    n = np.array([R] * 3 + [1.0] * 4)
    assert (W**2).sum(axis=1).mean() <= E_W * (1 + 1e-9)
    if feature_constraint == "class":
        assert (H**2).sum(axis=1).mean() <= E_H * (1 + 1e-9)
    else:
        assert (n * (H**2).sum(axis=1)).sum() / n.sum() <= E_H * (1 + 1e-9)
    # the reported loss is the class-weighted cross-entropy of the returned W, H
    logits = H @ W.T
    ce = np.log(np.exp(logits).sum(axis=1)) - np.diag(logits)
    assert out["loss"] == pytest.approx((n * ce).sum() / n.sum(), rel=1e-9)


def test_layer_peeled_margins_are_target_minus_strongest_other():
    out = solve_layer_peeled(ratio=10.0, E_W=5.0, E_H=5.0, steps=100)
    logits = out["H"] @ out["W"].T
    others = np.where(np.eye(10, dtype=bool), -np.inf, logits).max(axis=1)
    np.testing.assert_allclose(out["margins"], np.diag(logits) - others, rtol=1e-12)
    assert out["gamma_min"] == pytest.approx(out["margins"].min())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ratio": 0.5}, "every ratio must be a finite number >= 1"),
        ({"k_minor": 0}, "k_minor must be >= 1, got 0"),
        ({"E_W": -1.0}, "E_W must be > 0, got -1.0"),
        ({"feature_constraint": "batch"}, "feature_constraint must be one of"),
        ({"dim": 3}, "dim must be >= 9, got 3"),
    ],
)
def test_solve_layer_peeled_validates_its_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        solve_layer_peeled(**kwargs)


# ----------------------------------------------------------------------------------------------
# LDAM and ELM margins, softplus forms of CE
# ----------------------------------------------------------------------------------------------
def test_ldam_margin_is_largest_for_the_rarest_class():
    m = ldam_margins(CIFAR10_LT_100, max_m=0.5)
    assert m.max() == pytest.approx(0.5) and m.argmax() == 9
    assert np.all(np.diff(m) > 0)
    assert m[0] == pytest.approx(0.5 * (50 / 5000) ** 0.25)


def test_elm_effective_margin_is_smaller_than_ldam_as_published():
    eff = elm_effective_margins(CIFAR10_LT_100, max_m=0.5, lam=1.0)
    assert eff.shape == (10, 10)
    assert np.all(np.isnan(np.diag(eff)))
    # rarest true class vs most frequent wrong class: 0.342 instead of LDAM's 0.5
    assert eff[9, 0] == pytest.approx(0.342, abs=1e-3)
    assert eff[0, 9] == pytest.approx(-0.342, abs=1e-3)
    ldam = ldam_margins(CIFAR10_LT_100)
    off = ~np.eye(10, dtype=bool)
    assert np.all(eff[off] < np.broadcast_to(ldam[:, None], (10, 10))[off])


def test_elm_without_target_margin_is_never_positive():
    eff = elm_effective_margins(CIFAR10_LT_100, use_target_margin=False)
    off = ~np.eye(10, dtype=bool)
    assert np.all(eff[off] <= 0)


def test_elm_with_lambda_zero_is_ldam():
    eff = elm_effective_margins(CIFAR10_LT_100, lam=0.0)
    ldam = ldam_margins(CIFAR10_LT_100)
    off = ~np.eye(10, dtype=bool)
    np.testing.assert_allclose(eff[off], np.broadcast_to(ldam[:, None], (10, 10))[off])


def test_margin_helpers_validate_their_arguments():
    with pytest.raises(ValueError, match="max_m must be > 0, got -0.5"):
        ldam_margins(CIFAR10_LT_100, max_m=-0.5)
    with pytest.raises(ValueError, match="counts > 0"):
        ldam_margins([10, 0, 5])
    with pytest.raises(ValueError, match="lam must be >= 0, got -1.0"):
        elm_effective_margins(CIFAR10_LT_100, lam=-1.0)


def test_the_three_forms_of_cross_entropy_agree():
    torch.manual_seed(0)
    z = 8 * torch.randn(200, 7, dtype=torch.float64)
    y = torch.randint(0, 7, (200,))
    forms = ce_softplus_forms(z, y)
    reference = F.cross_entropy(z, y, reduction="none").numpy()
    for key in ("ce", "softplus_logsumexp", "softplus_margin"):
        np.testing.assert_allclose(forms[key], reference, rtol=1e-6, atol=1e-6)
    # the bias margin lies in [0, log(C - 1)] and c* is never the target
    assert np.all(forms["rho_hat"] >= 0) and np.all(forms["rho_hat"] <= math.log(6) + 1e-12)
    assert np.all(forms["c_star"] != y.numpy())


def test_ce_softplus_forms_validates_targets():
    with pytest.raises(ValueError, match=r"y must be in \[0, 2\], got values in \[0, 3\]"):
        ce_softplus_forms(np.zeros((2, 3)), np.array([0, 3]))
    with pytest.raises(ValueError, match=r"y must have shape \(2,\), got \(3,\)"):
        ce_softplus_forms(np.zeros((2, 3)), np.array([0, 1, 2]))
