"""Smoke tests of the notebook figures in palviz.viz: each draws on an Agg figure."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from palviz import theory, viz  # noqa: E402


def test_plot_lipschitz_vs_b_draws_three_curves_and_the_numeric_markers():
    k = 10
    b = np.linspace(0.1, 5.0, 20)
    fig, ax = plt.subplots()
    numeric = {"anchored": {1.0: 1.69, 5.0: 9.6}, "unanchored": {1.0: 8.0}}
    viz.plot_lipschitz_vs_b(
        ax,
        b,
        [theory.lipschitz_pal(k, v) for v in b],
        [theory.lipschitz_normalized_unanchored_lower_bound(k, v) for v in b],
        theory.lipschitz_unnormalized_z_lower_bound(k),
        num_classes=k,
        numeric=numeric,
    )
    assert len(ax.lines) == 5  # case 3, k line, lambda_PAL, two marker sets
    assert ax.get_yscale() == "log"
    assert "B" in ax.get_xlabel() and ax.get_title().startswith("k = 10")
    plt.close(fig)


def test_plot_noise_aware_scale_marks_every_noise_rate_on_both_panels():
    k = 10
    s = np.geomspace(0.1, 10.0, 30)
    rows = []
    for eta in (0.0, 0.4, 0.8):
        se = theory.noise_aware_scale(eta)
        rows.append((eta, se, theory.lipschitz_pal(k, se), theory.fnpal_max_confidence(k, se)))
    fig, (ax_l, ax_p) = plt.subplots(1, 2)
    viz.plot_noise_aware_scale(
        ax_l,
        ax_p,
        s,
        [theory.lipschitz_pal(k, v) for v in s],
        [theory.fnpal_max_confidence(k, v) for v in s],
        rows,
        num_classes=k,
    )
    for ax in (ax_l, ax_p):
        assert len(ax.texts) == len(rows)
        assert len(ax.lines) == 1 + len(rows) + 1  # curve, one dot per eta, limit line
        assert ax.get_xscale() == "log"
    assert ax_l.get_yscale() == "log" and ax_p.get_ylim() == (0, 1.05)
    plt.close(fig)


def _sweep(ratios, start, end):
    values = np.linspace(start, end, len(ratios))
    return {
        "minority_cosine": values,
        "majority_cosine": values[::-1] - 0.5,
        "gamma_min_normalized": 1 - values,
        "gamma_min": 2 - values,
    }


def test_plot_minority_collapse_draws_four_sweeps_and_two_reference_lines():
    ratios = 10.0 ** (0.1 * np.arange(0, 41, 4))
    fig, ax = plt.subplots()
    viz.plot_minority_collapse(
        ax,
        ratios,
        _sweep(ratios, -1 / 9, 1.0),
        _sweep(ratios, -1 / 9, 1.0),
        _sweep(ratios, -1 / 9, -1 / 9),
        simplex_cosine=-1 / 9,
        energy=5.0,
        k_major=5,
        k_minor=5,
    )
    assert len(ax.lines) == 6 and len(ax.texts) == 2
    assert len(ax.get_legend().get_texts()) == 4
    assert ax.get_xscale() == "log" and ax.get_ylim() == (-0.3, 1.1)
    plt.close(fig)


def test_plot_gamma_min_vs_ratio_labels_both_margins():
    ratios = 10.0 ** (0.1 * np.arange(0, 41, 4))
    fig, (ax_unit, ax_raw) = plt.subplots(1, 2)
    viz.plot_gamma_min_vs_ratio(
        ax_unit,
        ax_raw,
        ratios,
        _sweep(ratios, -1 / 9, 1.0),
        _sweep(ratios, -1 / 9, -1 / 9),
        gamma_max=1 + 1 / 9,
        energy=5.0,
    )
    assert len(ax_unit.lines) == 4 and len(ax_raw.lines) == 3
    assert "normalised" in ax_unit.get_title() and "5" in ax_raw.get_ylabel()
    plt.close(fig)


def _simplex(k, d):
    from palviz.heads import simplex_prototypes

    return np.asarray(simplex_prototypes(k, d, method="etf", seed=0))


def test_plot_pairwise_cosine_histograms_zooms_only_the_named_sets():
    k, d = 6, 8
    rng = np.random.default_rng(0)
    cosines = {
        "random": rng.uniform(-0.5, 0.5, k * (k - 1) // 2),
        "simplex": np.full(k * (k - 1) // 2, -1 / (k - 1)),
    }
    fig, (ax_full, ax_zoom) = plt.subplots(1, 2)
    viz.plot_pairwise_cosine_histograms(
        ax_full, ax_zoom, cosines, num_classes=k, dim=d, zoom=["simplex"], colors=["0.6", "C0"]
    )
    assert len(ax_full.patches) == 2 * 200 and len(ax_zoom.patches) == 80
    assert ax_full.get_yscale() == "log" and "15 pairs" in ax_full.get_title()
    plt.close(fig)


def test_plot_simplex_prototypes_draws_a_triangle_and_a_tetrahedron():
    fig, ax = plt.subplots()
    viz.plot_simplex_prototypes(ax, _simplex(3, 2))
    # circle, 3 edges, 3 arrows; one label per prototype
    assert len(ax.lines) == 1 + 3 + 3 and len(ax.texts) == 3
    assert ax.get_xlabel() == "$x_1$" and ax.get_xlim() == (-1.3, 1.3)
    plt.close(fig)
    fig = plt.figure()
    ax = fig.add_subplot(projection="3d")
    viz.plot_simplex_prototypes(ax, _simplex(4, 3))
    assert len(ax.texts) == 4 and ax.get_zlabel() == "$x_3$"
    plt.close(fig)


def test_plot_min_angle_vs_dim_annotates_every_dimension():
    fig, ax = plt.subplots()
    angles = {2: 36.0, 3: 63.4, 4: 90.0}
    viz.plot_min_angle_vs_dim(ax, angles, simplex_angle=96.38, num_classes=10, seed=0)
    assert len(ax.texts) == len(angles) and list(ax.get_xticks()) == [2, 3, 4]
    assert ax.get_ylabel() == "minimum pairwise angle (degrees)"
    plt.close(fig)


def test_plot_per_class_lines_orders_classes_by_count_and_draws_the_reference():
    counts = [5, 50, 20]
    fig, ax = plt.subplots()
    viz.plot_per_class_lines(
        ax,
        {"a": [0.5, 0.1, 0.3], "b": [0.6, 0.2, 0.4]},
        counts,
        ylabel="confidence - accuracy",
        colors=["C0", "C1"],
        reference=0,
    )
    assert len(ax.lines) == 3
    # most frequent class first: class 1 (n=50), then 2, then 0
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [0.1, 0.3, 0.5])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1\n(n=50)", "2\n(n=20)", "0\n(n=5)"]
    assert ax.get_ylabel() == "confidence - accuracy"
    plt.close(fig)
