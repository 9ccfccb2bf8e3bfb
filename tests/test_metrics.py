"""Specification of palviz.metrics on small examples worked out by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from palviz import metrics
from palviz.metrics import (
    VANISHED_NORM,
    alive_reach,
    alive_units,
    confusion_matrix,
    feature_norms_per_class,
    mean_confidence_per_class,
    mean_pairwise_cosine,
    min_prototype_angle,
    per_class_accuracy,
    prototype_cosines,
    realised_noise_rate,
    sample_margins,
    shot_group_accuracy,
    shot_groups,
    simplex_error,
    transition_matrix,
    vanished_rows,
    weight_norms,
)

CIFAR10_LT_100 = [5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50]


# ----------------------------------------------------------------------------------------------
# accuracy
# ----------------------------------------------------------------------------------------------
def test_per_class_accuracy_from_predictions():
    targets = [0, 0, 0, 1, 1, 2]
    preds = [0, 1, 0, 1, 1, 0]
    # class 0: 2 of 3, class 1: 2 of 2, class 2: 0 of 1
    np.testing.assert_allclose(per_class_accuracy(preds, targets, 3), [2 / 3, 1.0, 0.0])


def test_per_class_accuracy_from_logits_uses_the_argmax():
    logits = torch.tensor([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [5.0, 0.0, 1.0], [0.0, 0.0, 9.0]])
    targets = torch.tensor([0, 1, 1, 2])
    np.testing.assert_allclose(per_class_accuracy(logits, targets, 3), [1.0, 0.5, 1.0])


def test_per_class_accuracy_is_nan_for_a_class_without_test_samples():
    acc = per_class_accuracy([0, 1, 1], [0, 1, 0], 4)
    assert acc[0] == 0.5 and acc[1] == 1.0
    assert np.isnan(acc[2]) and np.isnan(acc[3])


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (([0, 1], [0, 3], 3), ValueError, r"targets must be in \[0, 2\] for num_classes=3"),
        (([0, 1, 2], [0, 1], 3), ValueError, "same length, got 3 and 2"),
        ((np.zeros((2, 4)), [0, 1], 3), ValueError, r"logits must have shape \(2, 3\)"),
        (([0, 1], [0.0, 1.0], 3), TypeError, "targets must hold integer class indices"),
        (([0, 1], [0, 1], 1), ValueError, "num_classes must be >= 2, got 1"),
    ],
)
def test_per_class_accuracy_validates_its_inputs(args, error, message):
    with pytest.raises(error, match=message):
        per_class_accuracy(*args)


def test_shot_groups_follow_the_ldam_thresholds():
    groups = shot_groups([500, 101, 100, 20, 19, 1])
    assert groups["many"].tolist() == [0, 1]
    assert groups["medium"].tolist() == [2, 3]
    assert groups["few"].tolist() == [4, 5]


def test_shot_group_accuracy_is_the_mean_of_per_class_accuracies():
    acc = [0.9, 0.7, 0.4, 0.2, 0.1]
    counts = [1000, 200, 50, 30, 5]
    out = shot_group_accuracy(acc, counts)
    assert out["many"] == pytest.approx(0.8)
    assert out["medium"] == pytest.approx(0.3)
    assert out["few"] == pytest.approx(0.1)


def test_an_empty_shot_group_is_none_never_zero():
    # CIFAR-10-LT rho=100 has no class with fewer than 20 training images
    out = shot_group_accuracy(np.linspace(0.9, 0.5, 10), CIFAR10_LT_100)
    assert out["few"] is None
    assert out["medium"] == pytest.approx(np.mean(np.linspace(0.9, 0.5, 10)[8:]))


def test_shot_group_accuracy_skips_classes_without_test_samples():
    out = shot_group_accuracy([0.5, np.nan, np.nan], [500, 50, 5])
    assert out == {"many": 0.5, "medium": None, "few": None}


def test_shot_group_accuracy_validates_lengths():
    with pytest.raises(ValueError, match="same length, got 2 and 3"):
        shot_group_accuracy([0.1, 0.2], [1, 2, 3])


# ----------------------------------------------------------------------------------------------
# geometry
# ----------------------------------------------------------------------------------------------
def regular_triangle() -> np.ndarray:
    angles = np.deg2rad([90.0, 210.0, 330.0])
    return 3.0 * np.stack([np.cos(angles), np.sin(angles)], axis=1)  # norm 3, 120 degrees apart


def test_prototype_cosines_of_a_regular_triangle():
    cos = prototype_cosines(regular_triangle())
    expected = np.full((3, 3), -0.5)
    np.fill_diagonal(expected, 1.0)
    np.testing.assert_allclose(cos, expected, atol=1e-12)


def test_min_prototype_angle_in_degrees():
    assert min_prototype_angle(regular_triangle()) == pytest.approx(120.0)
    W = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])  # 90, 45 and 45 degrees apart
    assert min_prototype_angle(W) == pytest.approx(45.0)
    assert min_prototype_angle(torch.eye(4)) == pytest.approx(90.0)


def test_mean_pairwise_cosine_over_all_and_over_a_subset():
    W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]])
    s = 1 / math.sqrt(2)
    # pairs: (0,1) 0, (0,2) s, (0,3) -1, (1,2) s, (1,3) 0, (2,3) -s
    assert mean_pairwise_cosine(W) == pytest.approx((0 + s - 1 + s + 0 - s) / 6)
    assert mean_pairwise_cosine(W, classes=[0, 2]) == pytest.approx(s)
    assert mean_pairwise_cosine(regular_triangle()) == pytest.approx(-0.5)
    with pytest.raises(ValueError, match="at least 2 classes"):
        mean_pairwise_cosine(W, classes=[1])


def test_a_vector_vanishes_below_the_one_tolerance_relative_to_the_rms_norm():
    # rows of norm 2, 2 and t * rms, with rms = sqrt((4 + 4 + t^2 rms^2) / 3) worked out
    # by hand: rms^2 (3 - t^2) = 8
    for t, gone in [(0.5 * VANISHED_NORM, True), (2.0 * VANISHED_NORM, False)]:
        rms = math.sqrt(8 / (3 - t**2))
        W = np.array([[2.0, 0.0], [0.0, 2.0], [t * rms, 0.0]])
        assert vanished_rows(W).tolist() == [False, False, gone]
    assert vanished_rows(np.zeros((3, 2))).all()  # nothing has a direction
    assert vanished_rows(np.ones((4, 3, 2))).shape == (4, 3)  # batched: [..., k, d]
    with pytest.raises(ValueError, match="X must have shape"):
        vanished_rows(np.ones(3))


def test_the_one_tolerance_is_a_single_named_constant():
    assert metrics.VANISHED_NORM == VANISHED_NORM == 1e-4
    source = Path(metrics.__file__).read_text(encoding="utf-8")
    assert source.count("1e-4") == 1  # stated once, where VANISHED_NORM is defined


def test_the_cosines_of_a_vanished_vector_are_undefined():
    W = np.array([[1.0, 0.0], [0.0, 1.0], [1e-9, 1e-9], [-1.0, 0.0]])
    cos = prototype_cosines(W)
    assert np.isnan(cos[2]).all() and np.isnan(cos[:, 2]).all()
    assert cos[0, 3] == pytest.approx(-1.0) and cos[1, 1] == 1.0
    assert math.isnan(mean_pairwise_cosine(W))  # "undefined: vanished", not 1 or 0
    assert math.isnan(mean_pairwise_cosine(W, classes=[1, 2]))
    assert mean_pairwise_cosine(W, classes=[0, 1, 3]) == pytest.approx((0 - 1 + 0) / 3)
    # two vanished vectors at the same point: still undefined, not cosine 1
    assert math.isnan(mean_pairwise_cosine(np.array([[1.0, 0.0], [1e-9, 0], [1e-9, 0]]), [1, 2]))


def test_weight_and_feature_norms():
    np.testing.assert_allclose(weight_norms([[3.0, 4.0], [0.0, 1.0]]), [5.0, 1.0])
    features = np.array([[3.0, 4.0], [6.0, 8.0], [1.0, 0.0]])
    norms = feature_norms_per_class(features, [0, 0, 2], 3)
    assert norms[0] == pytest.approx(7.5) and norms[2] == pytest.approx(1.0)
    assert np.isnan(norms[1])
    with pytest.raises(ValueError, match=r"features must have shape \(2, d\), got \(3, 2\)"):
        feature_norms_per_class(features, [0, 1], 3)


# ----------------------------------------------------------------------------------------------
# margins and confidence
# ----------------------------------------------------------------------------------------------
def test_sample_margin_is_target_minus_strongest_other_logit():
    logits = np.array([[3.0, 1.0, 2.0], [0.5, 0.0, 2.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(sample_margins(logits, [0, 1, 2]), [1.0, -2.0, 0.0])


def test_mean_confidence_per_class_is_the_mean_top_probability():
    logits = np.array([[0.0, 0.0], [math.log(3.0), 0.0], [0.0, math.log(9.0)]])
    # top probabilities: 1/2, 3/4, 9/10; true classes 0, 0, 1
    conf = mean_confidence_per_class(logits, [0, 0, 1], 2)
    np.testing.assert_allclose(conf, [(0.5 + 0.75) / 2, 0.9])
    huge = mean_confidence_per_class(np.array([[1000.0, 0.0]]), [0], 2)
    assert huge[0] == pytest.approx(1.0) and np.isnan(huge[1])


# ----------------------------------------------------------------------------------------------
# label noise
# ----------------------------------------------------------------------------------------------
def test_confusion_matrix_counts_rows_true_columns_predicted():
    cm = confusion_matrix([0, 0, 1, 2, 2, 2], [0, 1, 1, 2, 0, 2], 3)
    np.testing.assert_array_equal(cm, [[1, 1, 0], [0, 1, 0], [1, 0, 2]])
    assert cm.dtype == np.int64


def test_transition_matrix_of_known_flips():
    # 10 of each class; 2 of class 0 flipped to 1, 5 of class 2 flipped to 0, class 1 clean
    clean = np.repeat([0, 1, 2], 10)
    noisy = clean.copy()
    noisy[:2] = 1
    noisy[20:25] = 0
    T = transition_matrix(clean, noisy, 3)
    np.testing.assert_allclose(T, [[0.8, 0.2, 0.0], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
    np.testing.assert_allclose(T.sum(axis=1), 1.0)
    assert realised_noise_rate(clean, noisy) == pytest.approx(7 / 30)


def test_transition_matrix_row_of_an_absent_class_is_nan():
    T = transition_matrix([0, 0], [0, 1], 3)
    np.testing.assert_allclose(T[0], [0.5, 0.5, 0.0])
    assert np.all(np.isnan(T[1])) and np.all(np.isnan(T[2]))


def test_noise_helpers_validate_their_inputs():
    with pytest.raises(ValueError, match="same length, got 3 and 2"):
        realised_noise_rate([0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match=r"preds must be in \[0, 1\] for num_classes=2"):
        confusion_matrix([0, 1], [0, 2], 2)


# ----------------------------------------------------------------------------------------------
# simplex_error
# ----------------------------------------------------------------------------------------------
def _simplex_error_by_hand(W: np.ndarray) -> float:
    """max over i < j of |cos(w_i, w_j) + 1/(k-1)|, one pair at a time in plain Python."""
    k = len(W)
    worst = 0.0
    for i in range(k):
        for j in range(i + 1, k):
            dot = sum(float(a) * float(b) for a, b in zip(W[i], W[j], strict=True))
            ni = sum(float(a) ** 2 for a in W[i]) ** 0.5
            nj = sum(float(b) ** 2 for b in W[j]) ** 0.5
            worst = max(worst, abs(dot / (ni * nj) + 1.0 / (k - 1)))
    return worst


def test_simplex_error_matches_a_pairwise_computation():
    rng = np.random.default_rng(3)
    for k, d in ((3, 2), (5, 7), (10, 4)):
        W = rng.normal(size=(k, d))
        expected = _simplex_error_by_hand(W)
        assert simplex_error(W) == pytest.approx(expected, abs=1e-12)
        assert simplex_error(prototype_cosines(W)) == pytest.approx(expected, abs=1e-12)


def test_simplex_error_is_zero_on_the_simplex_and_known_off_it():
    k = 6
    W = np.eye(k) - 1.0 / k  # the simplex ETF, rows centred
    assert simplex_error(W) < 1e-12
    # orthogonal vectors: every cosine 0, error 1/(k-1); a square W, read as vectors
    assert simplex_error(np.eye(k)[:, ::-1] * 2.0) == pytest.approx(1.0 / (k - 1))
    assert simplex_error(np.eye(k), cosines=False) == pytest.approx(1.0 / (k - 1))
    with pytest.raises(ValueError, match=r"W_or_cosines must be a square cosine matrix"):
        simplex_error(np.ones((3, 4)), cosines=True)


def test_alive_units_marks_units_that_fire_on_some_sample():
    features = np.array([[0.0, 0.5, 0.0], [0.0, 0.0, 0.0], [0.0, 2.0, 1e-3]])
    assert alive_units(features).tolist() == [False, True, True]
    assert alive_units(features, threshold=0.01).tolist() == [False, True, False]


def test_alive_reach_is_the_positive_part_on_alive_units():
    W = np.array([[1.0, -1.0, 0.0, 0.0], [0.0, 0.5, 0.5, -1.0]])
    everything = alive_reach(W, [True] * 4)
    # ||w+|| / ||w|| by hand
    assert np.allclose(everything, [1 / np.sqrt(2), np.sqrt(0.5) / np.sqrt(1.5)])
    dead_first = alive_reach(W, [False, True, True, True])
    assert dead_first[0] == 0.0 and np.isclose(dead_first[1], everything[1])
    with pytest.raises(ValueError, match=r"alive must be a bool vector of length 4"):
        alive_reach(W, [True, False])
