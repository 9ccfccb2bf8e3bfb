"""What a ReLU feature can reach: palviz.theory.reachable_cosine and orientation_report against
independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from palviz.heads import simplex_prototypes
from palviz.theory import orientation_report, reachable_cosine


def best_cosine_by_ascent(w: np.ndarray, restarts: int = 16, steps: int = 400) -> float:
    """max over z >= 0 of cos(z, w), by projected gradient ascent (z clipped at 0 after each
    step) from random non-negative starts; independent of the closed form."""
    gen = torch.Generator().manual_seed(0)
    wt = torch.as_tensor(w, dtype=torch.float64)
    z = torch.rand(restarts, len(w), generator=gen, dtype=torch.float64).requires_grad_()
    opt = torch.optim.Adam([z], lr=0.02)
    for _ in range(steps):
        opt.zero_grad()
        cos = (z @ wt) / (z.norm(dim=1) * wt.norm() + 1e-300)
        (-cos.sum()).backward()
        opt.step()
        with torch.no_grad():
            z.clamp_(min=1e-12)
    with torch.no_grad():
        return float(((z @ wt) / (z.norm(dim=1) * wt.norm())).max())


@pytest.mark.parametrize("orientation", ["random", "axis", "block"])
def test_reachable_cosine_is_what_ascent_over_non_negative_features_finds(orientation):
    W = simplex_prototypes(5, 12, method="etf", seed=3, orientation=orientation).double().numpy()
    formula = reachable_cosine(W)
    for i, w in enumerate(W):
        assert best_cosine_by_ascent(w) == pytest.approx(formula[i], abs=1e-3)


def test_no_non_negative_feature_beats_the_formula():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((6, 9))
    z = rng.random((20_000, 9)) * (rng.random((20_000, 9)) < 0.5)  # sparse, non-negative
    z = z[np.linalg.norm(z, axis=1) > 0]
    cos = (z @ W.T) / np.linalg.norm(z, axis=1)[:, None] / np.linalg.norm(W, axis=1)
    assert np.all(cos.max(axis=0) <= reachable_cosine(W) + 1e-12)
    # and the maximiser z = w^+ attains it
    plus = np.maximum(W, 0)
    attained = (plus * W).sum(axis=1) / np.linalg.norm(plus, axis=1) / np.linalg.norm(W, axis=1)
    np.testing.assert_allclose(attained, reachable_cosine(W), rtol=1e-12)


def test_a_prototype_without_positive_entries_reaches_its_largest_entry():
    w = np.array([[-0.6, -0.8, 0.0], [-3.0, -4.0, -1.0]])
    np.testing.assert_allclose(reachable_cosine(w), [0.0, -1.0 / math.sqrt(26)])
    assert best_cosine_by_ascent(w[1]) == pytest.approx(-1.0 / math.sqrt(26), abs=1e-3)


@pytest.mark.parametrize(("num_classes", "dim"), [(10, 64), (4, 9), (3, 3)])
def test_axis_and_block_reach_the_same_cosine_for_every_class(num_classes, dim):
    bound = math.sqrt((num_classes - 1) / num_classes)
    for orientation in ("axis", "block"):
        W = simplex_prototypes(num_classes, dim, orientation=orientation)
        np.testing.assert_allclose(reachable_cosine(W), bound, atol=1e-6)


def test_orientation_report_counts_the_units_behind_each_prototype():
    k, d = 10, 64
    axis = orientation_report(simplex_prototypes(k, d, orientation="axis"))
    block = orientation_report(simplex_prototypes(k, d, orientation="block"))
    rand = orientation_report(simplex_prototypes(k, d, method="etf", seed=0))
    np.testing.assert_allclose(axis["units"], 1.0, rtol=1e-6)
    np.testing.assert_allclose(block["units"], d // k, rtol=1e-6)
    np.testing.assert_allclose(axis["reachable_without_top_unit"], 0.0, atol=1e-7)
    # block: one of the m equal entries gone leaves sqrt((m-1)/m) of the reachable cosine
    m = d // k
    expected = math.sqrt((m - 1) / m) * math.sqrt((k - 1) / k)
    np.testing.assert_allclose(block["reachable_without_top_unit"], expected, rtol=1e-6)
    # the seed-0 random rotation: 0.53 to 0.82 reachable, spread over more units
    assert 0.5 < rand["reachable_cosine"].min() < 0.55 and rand["reachable_cosine"].max() < 0.85
    assert rand["units"].min() > m


def test_reachable_cosine_rejects_a_zero_prototype():
    with pytest.raises(ValueError, match="non-zero"):
        reachable_cosine(np.array([[1.0, 0.0], [0.0, 0.0]]))
