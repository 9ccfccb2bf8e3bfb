"""palviz.stats: paired Student-t intervals, p-values (paired t, exact sign-flip), Holm's
correction and the verdicts on one interval and on a family."""

import math

import numpy as np
import pandas as pd
import pytest

from palviz import stats

T_975_4 = 2.7764451051977987  # t_{0.975, 4}, from a table (not from scipy)


# ------------------------------------------------------------------ paired_difference


def test_paired_difference_matches_a_hand_computation():
    baseline = [70.0, 71.0, 69.0, 72.0, 70.0]
    method = [73.0, 73.5, 72.0, 76.0, 72.5]
    # differences 3.0, 2.5, 3.0, 4.0, 2.5: mean 15 / 5 = 3.0
    # squared deviations 0, .25, 0, 1, .25 -> sum 1.5, variance 1.5 / 4 = .375
    mean, sd = 3.0, math.sqrt(0.375)
    half = T_975_4 * sd / math.sqrt(5)
    d = stats.paired_difference(baseline, method)
    assert d.n == 5 and d.method == "t" and d.confidence == 0.95
    assert d.mean == pytest.approx(mean, abs=1e-12)
    assert d.sd == pytest.approx(sd, abs=1e-12)
    assert d.ci_low == pytest.approx(mean - half, abs=1e-12)
    assert d.ci_high == pytest.approx(mean + half, abs=1e-12)


def test_paired_difference_pairs_series_by_seed_not_by_position():
    baseline = pd.Series([70.0, 71.0, 69.0], index=[0, 1, 2])
    method = pd.Series([71.0, 74.0, 72.0], index=[2, 0, 1])  # seed 0: +4, 1: +1, 2: +2
    d = stats.paired_difference(baseline, method)
    assert d.mean == pytest.approx(7 / 3)
    assert d.sd == pytest.approx(np.std([4.0, 1.0, 2.0], ddof=1))


def test_paired_difference_of_one_seed_has_no_interval_and_says_so():
    d = stats.paired_difference([0.5], [0.6])
    assert d.n == 1 and d.mean == pytest.approx(0.1)
    assert math.isnan(d.sd) and math.isnan(d.ci_low) and math.isnan(d.ci_high)
    assert "one seed" in d.note
    assert stats.verdict(d.ci_low, d.ci_high) == stats.INCONCLUSIVE


@pytest.mark.parametrize(
    ("baseline", "method", "argument"),
    [
        (pd.Series([1.0, 2.0], index=[0, 1]), pd.Series([1.0, 2.0], index=[0, 2]), "method"),
        ([1.0, 2.0, 3.0], [1.0, 2.0], "method"),
        ([], [], "baseline"),
        ([1.0, float("nan")], [1.0, 2.0], "baseline"),
        (pd.Series([1.0, 2.0], index=[0, 0]), pd.Series([1.0, 2.0], index=[0, 1]), "baseline"),
        ("abc", [1.0], "baseline"),
    ],
)
def test_paired_difference_errors_name_the_argument(baseline, method, argument):
    with pytest.raises(ValueError, match=f"^{argument} must"):
        stats.paired_difference(baseline, method)


def test_paired_difference_errors_show_the_seeds_and_the_confidence():
    with pytest.raises(ValueError, match=r"method must .*\[0, 1\].*got \[0, 2\]"):
        stats.paired_difference(pd.Series([1.0, 2.0], [0, 1]), pd.Series([1.0, 2.0], [0, 2]))
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\), got 1.5"):
        stats.paired_difference([1.0, 2.0], [2.0, 3.0], confidence=1.5)


# ------------------------------------------------------------------------------ verdict


@pytest.mark.parametrize(
    ("low", "high", "direction", "expected"),
    [
        (0.5, 2.0, +1, stats.CONSISTENT),
        (-2.0, -0.5, +1, stats.CONTRADICTED),
        (-0.5, 2.0, +1, stats.INCONCLUSIVE),
        (0.0, 2.0, +1, stats.INCONCLUSIVE),  # touching 0 is not "the whole interval above"
        (-2.0, -0.5, -1, stats.CONSISTENT),
        (0.5, 2.0, -1, stats.CONTRADICTED),
        (-2.0, 0.5, -1, stats.INCONCLUSIVE),
        (float("nan"), float("nan"), +1, stats.INCONCLUSIVE),
        (float("nan"), float("nan"), -1, stats.INCONCLUSIVE),
    ],
)
def test_verdict_reads_the_whole_interval(low, high, direction, expected):
    assert stats.verdict(low, high, direction) == expected


def test_verdict_refuses_a_bad_direction_or_a_reversed_interval():
    with pytest.raises(ValueError, match="direction must be .*got 0"):
        stats.verdict(1.0, 2.0, 0)
    with pytest.raises(ValueError, match="ci_low must be <= ci_high"):
        stats.verdict(2.0, 1.0)


# ------------------------------------------------------------ p-values, Holm, families


def _t4_two_sided_p(t):
    """Student's t with 4 degrees of freedom in closed form: F(t) = 1/2 + 3/4 u (1 - u^2/3),
    u = t / sqrt(t^2 + 4)."""
    u = abs(t) / math.sqrt(t * t + 4)
    return 2 * (0.5 - 0.75 * u * (1 - u * u / 3))


def test_paired_difference_p_value_is_the_two_sided_paired_t_test():
    baseline = [70.0, 71.0, 69.0, 72.0, 70.0]
    method = [70.5, 72.5, 68.0, 73.5, 71.0]  # differences .5 1.5 -1 1.5 1
    diffs = np.subtract(method, baseline)
    t = diffs.mean() / (np.std(diffs, ddof=1) / math.sqrt(5))
    d = stats.paired_difference(baseline, method)
    assert d.p_value == pytest.approx(_t4_two_sided_p(t), abs=1e-12)
    # the interval excludes 0 exactly when p < 0.05 (same t quantile)
    assert (d.ci_low > 0) == (d.p_value < 0.05)


def _brute_sign_flip(d):
    import itertools

    observed = abs(np.mean(d))
    hits = [
        abs(np.mean(np.multiply(signs, d))) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=len(d))
    ]
    return sum(hits) / len(hits)


@pytest.mark.parametrize(
    "diffs", [[1.0, 2.0, 3.0, 4.0, 5.0], [3.0, -1.0, 2.0, 0.5, 1.5], [1.0, -1.0, 1.0], [0.0, 0.0]]
)
def test_sign_flip_p_counts_the_sign_patterns(diffs):
    assert stats.sign_flip_p(diffs) == pytest.approx(_brute_sign_flip(diffs))


def test_sign_flip_p_of_five_pairs_is_never_below_one_sixteenth():
    assert stats.sign_flip_p([5.0, 4.0, 6.0, 5.5, 4.5]) == pytest.approx(1 / 16)
    assert math.isnan(stats.sign_flip_p([1.0]))
    with pytest.raises(ValueError, match="differences must be at most 16 pairs"):
        stats.sign_flip_p(np.ones(17))


def test_holm_by_hand():
    # sorted 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> running max 0.06)
    assert stats.holm([0.04, 0.01, float("nan"), 0.03]) == pytest.approx(
        [0.06, 0.03, float("nan"), 0.06], nan_ok=True
    )
    assert stats.holm([0.5, 0.9]) == [1.0, 1.0]  # capped at 1
    assert stats.holm([0.02]) == [0.02]


@pytest.mark.parametrize(
    ("reading", "means", "p", "expected"),
    [
        ("all", [2.0, 3.0], [0.01, 0.02], stats.CONSISTENT),
        # every member below 0.05 on its own, none after Holm (0.06, 0.06): "every member
        # holds" is an intersection-union test, read without Holm
        ("all", [2.0, 3.0], [0.03, 0.04], stats.CONSISTENT),
        ("all", [2.0, 3.0], [0.01, 0.2], stats.INCONCLUSIVE),
        ("all", [2.0, -3.0], [0.01, 0.01], stats.CONTRADICTED),  # one case measurably worse
        # "some member worse" needs Holm: 0.03 is 0.06 after it, so not contradicted
        ("all", [2.0, -3.0], [0.2, 0.03], stats.INCONCLUSIVE),
        ("all", [2.0, float("nan")], [0.01, float("nan")], stats.INCONCLUSIVE),  # one not run
        ("any", [2.0, -0.5], [0.01, 0.6], stats.CONSISTENT),
        ("any", [2.0, 0.5], [0.03, 0.6], stats.INCONCLUSIVE),  # "some member" needs Holm: 0.06
        ("any", [-2.0, -3.0], [0.01, 0.02], stats.CONTRADICTED),
        ("any", [-2.0, -3.0], [0.03, 0.04], stats.CONTRADICTED),  # "every member": no Holm
        ("any", [-2.0, 3.0], [0.01, 0.2], stats.INCONCLUSIVE),
        ("single", [2.0], [0.05], stats.INCONCLUSIVE),  # on the edge: not below alpha
        ("single", [2.0], [0.049], stats.CONSISTENT),
        ("all", [float("nan")], [float("nan")], stats.NOT_RUN),
    ],
)
def test_family_verdict_reads_the_family_as_stated(reading, means, p, expected):
    assert stats.family_verdict(reading, means, p, [+1] * len(means)) == expected


def test_family_verdict_reads_a_claimed_decrease_and_refuses_bad_input():
    assert stats.family_verdict("all", [-2.0, -3.0], [0.03, 0.04], [-1, -1]) == stats.CONSISTENT
    assert stats.family_verdict("all", [2.0], [0.01], [-1]) == stats.CONTRADICTED
    with pytest.raises(ValueError, match="reading must be one of"):
        stats.family_verdict("most", [1.0], [0.01], [1])
    with pytest.raises(ValueError, match="means must be one value per member"):
        stats.family_verdict("all", [1.0, 2.0], [0.01], [1, 1])


def test_sign_flip_floor_is_the_smallest_p_the_patterns_allow():
    """2 / 2**n two-sided, 1 / 2**n one-sided: checked against the brute-force count of the
    patterns for differences all of one sign, which is where the count is smallest."""
    for n in (2, 3, 5, 8):
        same_sign = np.arange(1.0, n + 1)
        assert stats.sign_flip_floor(n) == pytest.approx(_brute_sign_flip(same_sign))
        one_sided = np.mean([np.dot(signs, same_sign) >= same_sign.sum() for signs in _patterns(n)])
        assert stats.sign_flip_floor(n, two_sided=False) == pytest.approx(one_sided)
    assert stats.sign_flip_floor(5) == pytest.approx(0.0625)  # 2 / 32: never below 0.05
    assert stats.sign_flip_floor(6) == pytest.approx(0.03125)  # the first n that can
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="n must be an integer >= 1"):
            stats.sign_flip_floor(bad)


def _patterns(n):
    import itertools

    return [np.array(signs) for signs in itertools.product((1, -1), repeat=n)]
