"""Specification of palviz.heads: simplex prototypes and the linear, cosine and anchored heads."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from palviz.heads import (
    HEAD_KINDS,
    PROTOTYPE_ORIENTATIONS,
    AnchoredHead,
    CosineHead,
    LinearHead,
    make_head,
    simplex_prototypes,
)
from palviz.prototype_optimizer import _l0_loss_and_grad, optimize_prototypes


def pairwise_cosines(W: torch.Tensor) -> np.ndarray:
    """Cosines computed here in float64 with NumPy, independently of the code under test."""
    a = W.detach().cpu().numpy().astype(np.float64)
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    return a @ a.T


def off_diagonal(m: np.ndarray) -> np.ndarray:
    return m[~np.eye(m.shape[0], dtype=bool)]


# ----------------------------------------------------------------------------------------------
# simplex_prototypes
# ----------------------------------------------------------------------------------------------
OPTIMIZE_CASES = [
    (2, 1),
    (3, 2),
    (4, 3),
    (10, 9),
    (10, 64),
    (20, 19),
    (50, 49),
    (100, 128),
]
ETF_CASES = [(2, 1), (3, 2), (4, 3), (10, 9), (10, 64), (20, 19), (50, 49), (100, 99), (100, 128)]


@pytest.mark.parametrize(("num_classes", "dim"), OPTIMIZE_CASES)
def test_optimized_prototypes_form_a_regular_simplex(num_classes, dim):
    W = simplex_prototypes(num_classes, dim, method="optimize")
    assert W.shape == (num_classes, dim)
    assert W.dtype == torch.float32
    cos = off_diagonal(pairwise_cosines(W))
    assert np.abs(cos + 1.0 / (num_classes - 1)).max() < 1e-3


@pytest.mark.parametrize(("num_classes", "dim"), ETF_CASES)
def test_etf_prototypes_form_a_regular_simplex(num_classes, dim):
    W = simplex_prototypes(num_classes, dim, method="etf")
    assert W.shape == (num_classes, dim)
    assert W.dtype == torch.float32
    cos = off_diagonal(pairwise_cosines(W))
    assert np.abs(cos + 1.0 / (num_classes - 1)).max() < 1e-6


@pytest.mark.parametrize("method", ["optimize", "etf"])
@pytest.mark.parametrize(("num_classes", "dim"), [(3, 2), (10, 9), (10, 64)])
def test_prototypes_have_unit_rows(method, num_classes, dim):
    W = simplex_prototypes(num_classes, dim, method=method).double()
    np.testing.assert_allclose(W.norm(dim=1).numpy(), 1.0, atol=1e-6)


@pytest.mark.parametrize(("num_classes", "dim"), [(4, 3), (10, 9), (20, 32)])
def test_both_methods_agree_in_every_pairwise_cosine(num_classes, dim):
    a = pairwise_cosines(simplex_prototypes(num_classes, dim, method="optimize"))
    b = pairwise_cosines(simplex_prototypes(num_classes, dim, method="etf"))
    assert np.abs(a - b).max() < 1e-3


@pytest.mark.parametrize("method", ["optimize", "etf"])
def test_prototypes_are_deterministic_for_a_seed(method):
    a = simplex_prototypes(10, 16, method=method, seed=3)
    b = simplex_prototypes(10, 16, method=method, seed=3)
    c = simplex_prototypes(10, 16, method=method, seed=4)
    assert torch.equal(a, b)
    assert not torch.allclose(a, c)


def test_simplex_minimum_angle_is_arccos_of_minus_one_over_k_minus_one():
    W = simplex_prototypes(10, 9, method="etf")
    angles = np.degrees(np.arccos(np.clip(off_diagonal(pairwise_cosines(W)), -1, 1)))
    assert angles.min() == pytest.approx(96.3794, abs=1e-3)


def test_etf_needs_dim_at_least_k_minus_one_and_names_both_values():
    with pytest.raises(ValueError, match=r"dim=3.*num_classes=10"):
        simplex_prototypes(10, 3, method="etf")


def test_optimize_below_k_minus_one_returns_a_spread_configuration():
    W = simplex_prototypes(10, 3, method="optimize")
    assert W.shape == (10, 3)
    np.testing.assert_allclose(W.double().norm(dim=1).numpy(), 1.0, atol=1e-6)
    cos = off_diagonal(pairwise_cosines(W))
    # no simplex in R^3 for 10 points; the points are still spread (best packing: 66.15 deg)
    assert np.degrees(np.arccos(cos.max())) > 50.0
    assert cos.mean() == pytest.approx(-1.0 / 9.0, abs=1e-3)  # sum of the w_i is ~0


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"num_classes": 1, "dim": 4}, ValueError, "num_classes must be >= 2, got 1"),
        ({"num_classes": 3, "dim": 0}, ValueError, "dim must be >= 1, got 0"),
        ({"num_classes": 3, "dim": 2, "method": "qr"}, ValueError, "method must be one of"),
        ({"num_classes": 3.0, "dim": 2}, TypeError, "num_classes must be an integer"),
        ({"num_classes": 3, "dim": True}, TypeError, "dim must be an integer"),
    ],
)
def test_simplex_prototypes_validates_its_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        simplex_prototypes(**kwargs)


def test_closed_form_gradient_of_l0_matches_autograd():
    torch.manual_seed(0)
    k, d, s = 5, 7, 2.0
    X = torch.randn(2 * k, d, dtype=torch.float64, requires_grad=True)
    z, w = X[:k], X[k:]
    logits = s * F.normalize(z, dim=1) @ F.normalize(w, dim=1).T
    reference = F.cross_entropy(logits, torch.arange(k))
    (expected,) = torch.autograd.grad(reference, X)
    loss, grad = _l0_loss_and_grad(X.detach(), k, s)
    assert float(loss) == pytest.approx(float(reference.detach()), rel=1e-12)
    torch.testing.assert_close(grad, expected, rtol=1e-10, atol=1e-12)


def test_a_large_scale_saturates_before_the_simplex_is_reached():
    _, small = optimize_prototypes(10, 9, scale=2.0, steps=3000)
    _, large = optimize_prototypes(10, 9, scale=10.0, steps=3000)
    assert small["max_cosine_error"][-1] < 1e-4
    assert large["max_cosine_error"][-1] > 1e-2


def test_optimize_history_records_a_decreasing_loss():
    _, history = optimize_prototypes(6, 5, steps=1000, tol=None, record_every=100)
    assert history["step"] == [float(s) for s in range(100, 1001, 100)]
    assert history["loss"][-1] < history["loss"][0]


# ----------------------------------------------------------------------------------------------
# heads
# ----------------------------------------------------------------------------------------------
def test_linear_head_computes_wz_plus_b_and_exposes_its_weight():
    head = LinearHead(6, 4)
    z = torch.randn(3, 6)
    expected = z @ head.fc.weight.T + head.fc.bias
    torch.testing.assert_close(head(z), expected)
    assert head.prototypes.shape == (4, 6)
    assert not head.prototypes.requires_grad
    assert LinearHead(6, 4, bias=False).fc.bias is None


def test_cosine_head_gives_scaled_cosines_within_plus_minus_scale():
    torch.manual_seed(0)
    head = CosineHead(8, 5, scale=16.0)
    z = 10 * torch.randn(64, 8)
    out = head(z)
    expected = 16.0 * F.cosine_similarity(z[:, None, :], head.weight[None, :, :], dim=2)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    assert out.abs().max() <= 16.0 + 1e-5


def test_cosine_head_prototypes_are_learnable_and_start_with_unit_rows():
    head = CosineHead(8, 5)
    assert [name for name, _ in head.named_parameters()] == ["weight"]
    np.testing.assert_allclose(head.prototypes.norm(dim=1).numpy(), 1.0, rtol=1e-5)
    assert not head.prototypes.requires_grad


def test_anchored_head_defaults_to_the_etf_simplex_when_it_exists():
    head = AnchoredHead(16, 10)
    assert torch.equal(head.prototypes, simplex_prototypes(10, 16, method="etf"))


def test_anchored_head_below_k_minus_one_uses_optimized_prototypes():
    head = AnchoredHead(3, 6)
    assert torch.equal(head.prototypes, simplex_prototypes(6, 3, method="optimize"))


def test_anchored_prototypes_are_a_buffer_not_a_parameter():
    head = AnchoredHead(16, 10)
    assert list(head.parameters()) == []
    assert [name for name, _ in head.named_buffers()] == ["weight"]
    assert "weight" in head.state_dict()


def test_anchored_prototypes_do_not_change_when_the_model_is_trained():
    torch.manual_seed(0)
    head = AnchoredHead(8, 4, normalize=True, scale=4.0)
    model = nn.Sequential(nn.Linear(5, 8), head)
    before = head.prototypes.clone()
    backbone_before = model[0].weight.detach().clone()
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9, weight_decay=1e-2)
    for _ in range(3):
        opt.zero_grad()
        F.cross_entropy(model(torch.randn(16, 5)), torch.randint(0, 4, (16,))).backward()
        opt.step()
    assert torch.equal(head.prototypes, before)
    assert not torch.equal(model[0].weight, backbone_before)


def test_pal_logits_are_plain_inner_products_with_the_prototypes():
    head = AnchoredHead(9, 10)
    z = 3 * torch.randn(5, 9)
    expected = torch.tensor(
        z.numpy().astype(np.float64) @ head.prototypes.numpy().astype(np.float64).T,
        dtype=torch.float32,
    )
    torch.testing.assert_close(head(z), expected, rtol=1e-5, atol=1e-5)


def test_fnpal_logits_are_scale_times_cosine():
    head = AnchoredHead(9, 10, normalize=True, scale=7.5)
    z = 3 * torch.randn(5, 9)
    expected = 7.5 * F.cosine_similarity(z[:, None, :], head.prototypes[None, :, :], dim=2)
    torch.testing.assert_close(head(z), expected, rtol=1e-5, atol=1e-5)
    # the feature norm does not matter
    torch.testing.assert_close(head(100 * z), head(z), rtol=1e-5, atol=1e-5)


def test_anchored_head_uses_given_prototypes_as_given():
    W = torch.randn(4, 6)
    head = AnchoredHead(6, 4, prototypes=W.numpy())
    assert torch.equal(head.prototypes, W)
    W.zero_()  # the head holds its own copy
    assert head.prototypes.abs().sum() > 0


def test_anchored_head_rejects_prototypes_of_the_wrong_shape_naming_both_shapes():
    with pytest.raises(ValueError, match=r"\(10, 64\).*got \(10, 32\)"):
        AnchoredHead(64, 10, prototypes=torch.randn(10, 32))


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: AnchoredHead(8, 4, scale=-1.0), "scale must be > 0, got -1.0"),
        (lambda: AnchoredHead(8, 4, scale=0), "scale must be > 0, got 0"),
        (lambda: CosineHead(8, 4, scale=0.0), "scale must be > 0, got 0.0"),
        (lambda: LinearHead(0, 4), "in_features must be >= 1, got 0"),
        (lambda: CosineHead(8, 1), "num_classes must be >= 2, got 1"),
        (lambda: AnchoredHead(8, 4, prototypes=torch.full((4, 8), float("nan"))), "finite"),
    ],
)
def test_heads_validate_their_arguments(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()


@pytest.mark.parametrize("kind", HEAD_KINDS)
def test_every_head_maps_features_to_logits_and_exposes_prototypes(kind):
    head = make_head(kind, 12, 5)
    out = head(torch.randn(7, 12))
    assert out.shape == (7, 5)
    assert head.prototypes.shape == (5, 12)
    with pytest.raises(ValueError, match=r"\(batch_size, 12\), got \(7, 11\)"):
        head(torch.randn(7, 11))


def test_make_head_builds_each_kind_and_passes_keywords():
    assert HEAD_KINDS == ("linear", "cosine", "anchored")
    assert isinstance(make_head("linear", 4, 3), LinearHead)
    assert isinstance(make_head("cosine", 4, 3), CosineHead)
    head = make_head("anchored", 4, 3, normalize=True, scale=3.0)
    assert isinstance(head, AnchoredHead)
    assert head.normalize and head.scale == 3.0


def test_make_head_rejects_an_unknown_kind_listing_the_allowed_ones():
    with pytest.raises(ValueError, match=r"kind must be one of \['linear', 'cosine', 'anchored'\]"):
        make_head("mlp", 4, 3)


def test_fnpal_scale_one_logits_lie_in_minus_one_one():
    head = AnchoredHead(16, 10, normalize=True)
    out = head(torch.randn(32, 16))
    assert out.abs().max() <= 1.0 + 1e-6
    assert math.isclose(head.scale, 1.0)


# ----------------------------------------------------------------------------------------------
# orientations of the simplex
# ----------------------------------------------------------------------------------------------
# simplex_prototypes(10, 64, method="etf", seed=0)[0, :4], recorded before orientations existed
ETF_10_64_ROW0 = [
    -0.25896891951560974,
    0.06257251650094986,
    -0.033493686467409134,
    -0.11496477574110031,
]


def test_random_orientation_is_the_default_and_unchanged():
    W = simplex_prototypes(10, 64, method="etf", seed=0)
    assert torch.equal(W[0, :4], torch.tensor(ETF_10_64_ROW0, dtype=torch.float32))
    assert torch.equal(W, simplex_prototypes(10, 64, method="etf", seed=0, orientation="random"))
    opt = simplex_prototypes(5, 8, method="optimize", seed=1)
    assert torch.equal(opt, simplex_prototypes(5, 8, "optimize", 1, orientation="random"))
    assert torch.equal(AnchoredHead(64, 10).prototypes, W)


@pytest.mark.parametrize("orientation", PROTOTYPE_ORIENTATIONS)
@pytest.mark.parametrize(("num_classes", "dim"), [(10, 64), (3, 3), (7, 20), (10, 10)])
def test_every_orientation_is_a_regular_simplex_of_unit_vectors(orientation, num_classes, dim):
    W = simplex_prototypes(num_classes, dim, method="etf", orientation=orientation)
    cos = pairwise_cosines(W)
    off = cos[~np.eye(num_classes, dtype=bool)]
    np.testing.assert_allclose(off, -1 / (num_classes - 1), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(W.double().numpy(), axis=1), 1.0, atol=1e-6)


def test_axis_orientation_is_the_centred_coordinate_axes():
    k, d = 4, 6
    W = simplex_prototypes(k, d, orientation="axis").double().numpy()
    expected = np.zeros((k, d))
    expected[:, :k] = np.eye(k) - 1 / k
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(W, expected, atol=1e-7)


def test_block_orientation_puts_each_positive_part_on_its_own_block():
    k, d = 10, 64
    m = d // k
    W = simplex_prototypes(k, d, orientation="block").double().numpy()
    for i in range(k):
        positive = np.flatnonzero(W[i] > 0)
        assert positive.tolist() == list(range(i * m, (i + 1) * m))
        np.testing.assert_allclose(W[i, positive], W[i, positive[0]], rtol=1e-6)
    assert np.all(W[:, k * m :] == 0)  # the d - k m leftover units are not used


@pytest.mark.parametrize("orientation", ["axis", "block"])
def test_axis_and_block_need_dim_at_least_num_classes(orientation):
    message = f"dim must be >= num_classes for orientation='{orientation}', got dim=9"
    with pytest.raises(ValueError, match=message):
        simplex_prototypes(10, 9, orientation=orientation)


def test_anchored_head_passes_the_orientation_through():
    head = AnchoredHead(64, 10, orientation="block")
    assert torch.equal(head.prototypes, simplex_prototypes(10, 64, orientation="block"))
    assert "orientation='block'" in repr(head)
    assert "orientation" not in repr(AnchoredHead(64, 10))
    with pytest.raises(ValueError, match="orientation must be one of"):
        AnchoredHead(64, 10, orientation="diagonal")
    with pytest.raises(ValueError, match="cannot be combined with explicit prototypes"):
        AnchoredHead(3, 3, prototypes=torch.eye(3), orientation="axis")


@pytest.mark.parametrize(("num_classes", "dim"), [(10, 16), (4, 3), (6, 5)])
def test_optimized_features_gather_at_their_own_prototypes(num_classes, dim):
    # PAL Theorem 3.2: at the minimum of L_0 each feature sits at its own prototype
    W, history, Z = optimize_prototypes(num_classes, dim, seed=0, return_features=True)
    W2, _ = optimize_prototypes(num_classes, dim, seed=0)
    assert torch.equal(W, W2) and Z.shape == W.shape
    own = (Z.double() * W.double()).sum(dim=1).numpy()
    np.testing.assert_allclose(np.linalg.norm(Z.double().numpy(), axis=1), 1.0, atol=1e-6)
    assert np.abs(own - 1.0).max() < 1e-5
