"""The layer-peeled model under imbalance: the majority simplex, minority collapse, anchored
margins (facts notebook 02 states beyond tests/test_theory.py)."""

import numpy as np
import pytest

from palviz import metrics
from palviz.metrics import VANISHED_NORM, mean_pairwise_cosine
from palviz.theory import layer_peeled, minority_collapse_sweep, solve_layer_peeled


def test_with_unit_budgets_the_majority_classifiers_form_their_own_simplex():
    # once the minority classifiers have shrunk to the origin, the k_A majority classifiers
    # are the balanced solution for k_A classes: pairwise cosine -1/(k_A - 1)
    out = solve_layer_peeled(k_major=5, k_minor=5, ratio=1e4, steps=100)
    assert out["minority_norm"] < 1e-4
    assert out["majority_cosine"] == pytest.approx(-1 / 4, abs=1e-3)


def test_majority_classifiers_spread_apart_as_the_minority_collapses():
    sweep = minority_collapse_sweep([1.0, 10.0, 100.0, 1e3, 1e4], E_W=5.0, E_H=5.0, steps=100)
    major = sweep["majority_cosine"]
    assert major[0] == pytest.approx(-1 / 9, abs=1e-3)
    assert np.all(np.diff(major) < 0)


def test_anchored_unnormalised_margin_shrinks_but_stays_positive():
    # anchored W: the minority features get less of the shared budget E_H as R grows, so the
    # unnormalised gamma_min falls, while the features keep pointing at their own prototypes
    sweep = minority_collapse_sweep(
        [1.0, 10.0, 100.0, 1e3, 1e4], E_W=5.0, E_H=5.0, anchored=True, steps=100
    )
    gamma = sweep["gamma_min"]
    assert gamma[0] == pytest.approx(5.0 * (1 + 1 / 9), rel=1e-4)
    assert np.all(np.diff(gamma) < 0) and gamma[-1] > 0
    np.testing.assert_allclose(sweep["gamma_min_normalized"], 1 + 1 / 9, atol=1e-4)


def _minority_cosine_by_hand(W, k_major, tol):
    """Mean pairwise cosine of the rows k_major.. of W, NaN if one is shorter than tol times
    the RMS norm of all rows: the convention written out again, independently of palviz."""
    norms = np.sqrt((W * W).sum(axis=1))
    rms = np.sqrt((norms**2).mean())
    V, n = W[k_major:], norms[k_major:]
    if (n <= tol * rms).any():
        return float("nan")
    m = len(V)
    return sum(V[i] @ V[j] / (n[i] * n[j]) for i in range(m) for j in range(m) if i != j) / (
        m * (m - 1)
    )


def test_the_solver_and_the_metric_read_one_cosine_with_one_convention():
    # E = 1: the minority classifiers coincide at R = 10^0.4, then vanish; the solver's
    # cosines must be the metric's on the same W, NaN (not 1) where they vanished
    ratios = [1.0, 10**0.4, 1e4]
    sweep = minority_collapse_sweep(ratios, steps=100)
    assert sweep["minority_vanished"].tolist() == [False, False, True]
    for i in range(len(ratios)):
        W = sweep["W"][i]
        by_metric = mean_pairwise_cosine(W, list(range(5, 10)))
        by_hand = _minority_cosine_by_hand(W, 5, VANISHED_NORM)
        for value in (by_metric, by_hand):
            np.testing.assert_allclose(sweep["minority_cosine"][i], value, atol=1e-12)
        assert np.isnan(sweep["minority_cosine"][i]) == bool(metrics.vanished_rows(W)[5:].any())
    assert np.isnan(sweep["minority_cosine"][2]) and np.isnan(sweep["minority_spread"][2])
    # the normalised margin uses the same tolerance: undefined where a classifier vanished
    assert np.isnan(sweep["gamma_min_normalized"][2])


def test_the_layer_peeled_geometry_of_vectors_built_by_hand():
    W = np.zeros((2, 4, 3))
    W[0] = [[1.0, 0, 0], [0, 1.0, 0], [0, 0, 2.0], [0, 0, 1.0]]  # cosines 0, 1 of rows 2, 3
    W[1] = [[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [0, 0, 1e-9]]  # row 3 vanished
    geometry = layer_peeled._group_geometry(W, [2, 3])
    np.testing.assert_allclose(geometry["cosine"], [1.0, np.nan])
    np.testing.assert_allclose(geometry["norm"], [1.5, (1 + 1e-9) / 2])
    assert geometry["vanished"].tolist() == [False, True]
    np.testing.assert_allclose(geometry["spread"], [1.0 / 2.0, np.nan])  # |w_2 - w_3| / |w_2|


def test_collapse_is_read_where_the_minority_classifiers_keep_a_length():
    # E = 1, R = 10^0.4: the minority classifiers coincide (w_k - w_k' -> 0) while their norm
    # is far above the tolerance, which is collapse and not vanishing
    out = solve_layer_peeled(ratio=10**0.4, steps=300)
    W_minor = out["W"][5:]
    gaps = max(np.linalg.norm(a - b) for a in W_minor for b in W_minor)
    assert not out["minority_vanished"]
    assert np.linalg.norm(W_minor, axis=1).min() > 1e3 * VANISHED_NORM
    assert gaps / np.linalg.norm(W_minor, axis=1).max() < 1e-3
    assert out["minority_spread"] == pytest.approx(
        gaps / np.linalg.norm(W_minor, axis=1).max(), abs=1e-12
    )


def test_anchored_features_point_at_their_own_prototypes():
    # the symmetry argument: with W a simplex some optimum has h_k = rho_k w_k / |w_k|
    out = solve_layer_peeled(ratio=100.0, E_W=5.0, E_H=5.0, anchored=True, steps=300)
    W, H = out["W"], out["H"]
    cos = (W * H).sum(axis=1) / (np.linalg.norm(W, axis=1) * np.linalg.norm(H, axis=1))
    np.testing.assert_allclose(cos, 1.0, atol=1e-4)
    K = len(W)
    assert out["gamma_min_normalized"] == pytest.approx(K / (K - 1), abs=1e-4)
