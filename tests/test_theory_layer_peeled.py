"""The layer-peeled model under imbalance: the majority simplex, minority collapse, anchored
margins (facts notebook 02 states beyond tests/test_theory.py)."""

import numpy as np
import pytest

from palviz.theory import minority_collapse_sweep, solve_layer_peeled


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
