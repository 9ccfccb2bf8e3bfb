"""Smoke tests of the notebook figures (palviz.plots, palviz.plots.theory, palviz.plots.margins,
palviz.plots.experiments, all importable from palviz.plots): each draws on an Agg figure."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from palviz import plots, theory  # noqa: E402
from palviz.metrics import VANISHED_NORM  # noqa: E402


def test_plot_lipschitz_vs_b_draws_three_curves_and_the_numeric_markers():
    k = 10
    b = np.linspace(0.1, 5.0, 20)
    fig, ax = plt.subplots()
    numeric = {"anchored": {1.0: 1.69, 5.0: 9.6}, "unanchored": {1.0: 8.0}}
    plots.plot_lipschitz_vs_b(
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
    plots.plot_noise_aware_scale(
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
        "minority_norm": np.geomspace(1.0, 1e-8, len(ratios)),
        "minority_vanished": np.arange(len(ratios)) >= len(ratios) - 3,
    }


def test_plot_minority_collapse_draws_the_cosines_and_the_norms_beside_them():
    ratios = 10.0 ** (0.1 * np.arange(0, 41, 4))
    fig, (ax, ax_norm) = plt.subplots(1, 2)
    unit = _sweep(ratios, -1 / 9, 1.0)
    unit["minority_cosine"] = np.where(unit["minority_vanished"], np.nan, 1.0)
    plots.plot_minority_collapse(
        ax,
        ax_norm,
        ratios,
        _sweep(ratios, -1 / 9, 1.0),
        unit,
        {**_sweep(ratios, -1 / 9, -1 / 9), "minority_norm": np.full(len(ratios), np.sqrt(5.0))},
        simplex_cosine=-1 / 9,
        energy=5.0,
        k_major=5,
        k_minor=5,
    )
    # 4 cosine curves, 2 rows of crosses where the minority vanished, 2 reference lines
    assert len(ax.lines) == 8 and len(ax.texts) == 2
    assert len(ax.get_legend().get_texts()) == 6
    assert ax.get_xscale() == "log" and ax.get_ylim() == (-0.3, 1.1)
    # 3 norm curves and the tolerance below which a norm has vanished
    assert len(ax_norm.lines) == 4 and ax_norm.get_yscale() == "log"
    assert ax_norm.lines[-1].get_ydata()[0] == VANISHED_NORM
    plt.close(fig)


def test_plot_gamma_min_vs_ratio_labels_both_margins():
    ratios = 10.0 ** (0.1 * np.arange(0, 41, 4))
    fig, (ax_unit, ax_raw) = plt.subplots(1, 2)
    plots.plot_gamma_min_vs_ratio(
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
    plots.plot_pairwise_cosine_histograms(
        ax_full, ax_zoom, cosines, num_classes=k, dim=d, zoom=["simplex"], colors=["0.6", "C0"]
    )
    assert len(ax_full.patches) == 2 * 200 and len(ax_zoom.patches) == 80
    assert ax_full.get_yscale() == "log" and "15 pairs" in ax_full.get_title()
    plt.close(fig)


def test_plot_simplex_prototypes_draws_a_triangle_and_a_tetrahedron():
    fig, ax = plt.subplots()
    plots.plot_simplex_prototypes(ax, _simplex(3, 2))
    # circle, 3 edges, 3 arrows; one label per prototype
    assert len(ax.lines) == 1 + 3 + 3 and len(ax.texts) == 3
    assert ax.get_xlabel() == "$x_1$" and ax.get_xlim() == (-1.3, 1.3)
    plt.close(fig)
    fig = plt.figure()
    ax = fig.add_subplot(projection="3d")
    plots.plot_simplex_prototypes(ax, _simplex(4, 3))
    assert len(ax.texts) == 4 and ax.get_zlabel() == "$x_3$"
    plt.close(fig)


def test_plot_min_angle_vs_dim_annotates_every_dimension():
    fig, ax = plt.subplots()
    angles = {2: 36.0, 3: 63.4, 4: 90.0}
    plots.plot_min_angle_vs_dim(ax, angles, simplex_angle=96.38, num_classes=10, seed=0)
    assert len(ax.texts) == len(angles) and list(ax.get_xticks()) == [2, 3, 4]
    assert ax.get_ylabel() == "minimum pairwise angle (degrees)"
    plt.close(fig)


def test_plot_per_class_lines_orders_classes_by_count_and_draws_the_reference():
    counts = [5, 50, 20]
    fig, ax = plt.subplots()
    plots.plot_per_class_lines(
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


# ---- notebook 05's margin figures ----


def test_plot_class_margins_labels_every_bar_with_class_and_count():
    counts = [500, 100, 20]
    fig, ax = plt.subplots()
    plots.plot_class_margins(ax, theory.ldam_margins(counts, 0.5), counts, title="margins")
    assert len(ax.patches) == 3 and len(ax.texts) == 3
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0\n500", "1\n100", "2\n20"]
    assert "Delta" in ax.get_ylabel() and ax.get_title() == "margins"
    plt.close(fig)


def test_plot_hinge_corners_draws_four_logit_planes_with_one_legend_entry_per_class():
    counts = [500, 100, 20]
    fig = plots.plot_hinge_corners(counts, 0.5, 1.0, 30.0, imbalance_ratio=25)
    assert len(fig.axes) == 4
    assert len(fig.legends[0].get_texts()) == 3
    for ax in fig.axes:
        assert "z_{c^*}" in ax.get_xlabel() and ax.get_title()
    plt.close(fig)


def test_plot_loss_against_gap_finds_each_hinge_corner_at_log_2():
    import torch.nn.functional as F

    from palviz.losses import ELMLoss, LDAMLoss

    counts, s = [500, 100, 20], 30.0
    delta = theory.ldam_margins(counts, 0.5)
    curves = [
        ("CE", lambda z, t: F.cross_entropy(s * z, t), np.zeros((3, 3)), "C0"),
        ("LDAM", LDAMLoss(counts, max_m=0.5, s=s), np.tile(delta[:, None], 3), "C1"),
        (
            "ELM",
            ELMLoss(counts, max_m=0.5, s=s),
            theory.elm_effective_margins(counts, 0.5, 1.0),
            "C2",
        ),
    ]
    fig, ax = plt.subplots()
    worst = plots.plot_loss_against_gap(
        ax, curves, 2, 0, counts, s=s, others_below=0.05, gaps=np.linspace(-0.5, 1, 31)
    )
    assert worst < 1e-5
    assert len(ax.get_legend().get_texts()) == 3
    assert "gap" in ax.get_xlabel()
    plt.close(fig)


def test_plot_effective_margins_draws_three_annotated_heatmaps_and_a_colour_bar():
    counts = [500, 100, 20]
    fig = plots.plot_effective_margins(counts, 0.5, 1.0, imbalance_ratio=25)
    heatmaps = [ax for ax in fig.axes if ax.get_title()]
    assert len(heatmaps) == 3 and len(fig.axes) == 4  # three maps and the colour bar
    ldam = heatmaps[0]
    assert len([t for t in ldam.texts if t.get_text()]) == 6  # every off-diagonal pair
    assert "LDAM" in ldam.get_title() and "true class" in ldam.get_ylabel()
    assert "100% of the 6 pairs" in fig._suptitle.get_text()
    plt.close(fig)


# ---- the experiment figures of notebooks 06-08 ----


def _per_class(counts=(5, 50, 20)):
    rows = []
    runs = {("A", 0): [0.1, 0.5, 0.2], ("A", 1): [0.3, 0.7, 0.2], ("B", 0): [1.0, 0.8, 0.6]}
    for (label, seed), acc in runs.items():
        for c, value in enumerate(acc):
            rows.append((label, seed, "d", 10.0, c, counts[c], value))
    columns = ["label", "seed", "dataset", "imbalance_ratio", "class", "train_count", "value"]
    return pd.DataFrame(rows, columns=columns)


def test_plot_per_class_orders_classes_by_count_with_sd_error_bars():
    fig, ax = plt.subplots()
    plots.plot_per_class(ax, _per_class(), ylabel="acc (%)", percent=True, title="t")
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["1\nn=50", "2\nn=20", "0\nn=5"]
    heights = [p.get_height() for p in ax.patches][:3]
    assert heights == pytest.approx([60.0, 20.0, 20.0])  # A's means, most frequent first
    assert len(ax.patches) >= 6 and ax.lines  # two methods' bars; A's error bars
    legend = ax.get_legend()
    assert "sd" in legend.get_title().get_text()
    assert [t.get_text() for t in legend.get_texts()] == ["A (2 seeds)", "B"]
    assert ax.get_ylabel() == "acc (%)" and ax.get_title() == "t"
    plt.close(fig)


def test_plot_per_class_draws_lines_for_many_classes():
    counts = list(range(100, 0, -1))
    frame = pd.DataFrame(
        {
            "label": "A",
            "seed": 0,
            "class": range(100),
            "train_count": counts,
            "value": np.ones(100),
        }
    )
    fig, ax = plt.subplots()
    plots.plot_per_class(ax, frame, ylabel="acc", legend=None)
    curves = [line for line in ax.lines if len(line.get_xdata()) == 100]
    assert len(curves) == 1 and not ax.patches and ax.get_legend() is None
    plt.close(fig)


def _noisy_frame():
    rows = []
    for label in ("CE", "CE+FNPAL"):
        for eta in (0.2, 0.4):
            for seed in (0, 1):
                acc = 0.8 - eta + 0.05 * seed + 0.1 * label.endswith("FNPAL")
                rows.append((label, "symmetric", eta, seed, 10 / (1 + eta), acc))
    columns = ["label", "noise_kind", "noise_rate", "seed", "scale", "last_acc"]
    return pd.DataFrame(rows, columns=columns)


def test_plot_accuracy_vs_noise_pairs_each_method_with_its_fnpal_variant():
    fig, ax = plt.subplots()
    plots.plot_accuracy_vs_noise(ax, _noisy_frame(), "symmetric", title="sym")
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"CE", "own head", "FNPAL head"} <= set(texts)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.2", "0.4"]
    assert "noise rate" in ax.get_xlabel() and "%" in ax.get_ylabel()
    means = {tuple(np.round(np.asarray(line.get_ydata(), dtype=float), 3)) for line in ax.lines}
    assert {(62.5, 42.5), (72.5, 52.5)} <= means  # mean over the two seeds, in percent
    plt.close(fig)


def test_plot_accuracy_vs_scale_marks_noise_aware_scale_and_baseline():
    frame = _noisy_frame()
    fig, ax = plt.subplots()
    plots.plot_accuracy_vs_scale(
        ax, frame, "noise_rate", marked={0.2: (8.0, 0.7)}, baseline={0.4: 0.3}, title="s"
    )
    assert ax.get_xscale() == "log"
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "$\\eta$ = 0.2" in texts and any("noise-aware" in t for t in texts)
    assert any(line.get_marker() == "*" for line in ax.lines)
    assert ax.get_xlabel().startswith("scale")
    plt.close(fig)


def test_plot_training_counts_and_mark_schedule():
    fig, ax = plt.subplots()
    plots.plot_training_counts(ax, {10: [100, 30, 10], 100: [100, 10, 1]}, title="counts")
    assert len(ax.get_legend().get_texts()) == 2 and ax.get_yscale() == "log"
    schedule = {"drw_epoch": 3, "milestones": [3, 9], "lr_factors": [0.1, 0.1], "epochs": 5}
    plots.mark_schedule(ax, schedule)  # epoch 9 is beyond the run: no line
    assert [t.get_text() for t in ax.texts][-1] == " DRW on (-DRW methods), lr x0.1"
    plt.close(fig)


def test_plot_angle_histories_draws_each_run_and_the_simplex_angle():
    fig, ax = plt.subplots()
    histories = {"s = 1": ([0, 1, 2], [30, 60, 80]), "s = 10": ([0, 1, 2], [30, 50, 90])}
    plots.plot_angle_histories(ax, histories, simplex_angle=96.4, reference="FNPAL")
    assert len(ax.lines) == 3
    assert ax.get_legend().get_texts()[-1].get_text() == "FNPAL: 96.40°"
    plt.close(fig)


def test_plot_embeddings_and_cosine_heatmaps_make_one_panel_per_run():
    rng = np.random.default_rng(0)
    emb = {m: (rng.normal(size=(30, 2)), np.arange(30) % 3) for m in ("A", "B", "C")}
    fig = plots.plot_embeddings(emb, [20, 10, 5], {m: m for m in emb}, suptitle="umap")
    assert len(fig.axes) == 4 and not fig.axes[3].axison  # the fourth panel is empty
    assert len(fig.legends[0].get_texts()) == 3
    plt.close(fig)
    cos = np.eye(3) - 0.5 * (1 - np.eye(3))
    geo = {"min_prototype_angle": 120.0, "min_class_mean_angle": 110.0}
    geometry = {m: {**geo, "prototype_cosines": cos, "class_mean_cosines": cos} for m in "AB"}
    fig = plots.plot_cosine_heatmaps(geometry, suptitle="cosines")
    assert len(fig.axes) == 5  # 2 x 2 heatmaps and a colour bar
    plt.close(fig)


# ---- the sliders of notebooks 01, 04, 05 ----


def test_sliders_displays_an_interactive_that_redraws_the_figure(monkeypatch):
    widgets = pytest.importorskip("ipywidgets")
    plt.close("all")
    drawn = []

    def draw(num_classes, scale):
        drawn.append((num_classes, scale))
        fig, ax = plt.subplots()
        ax.plot([0, num_classes], [0, scale])
        return fig

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setenv("PALVIZ_WIDGETS", "1")  # as in a kernel JupyterLab started
    # returns None, so a cell ending with the call does not show the controls twice
    assert plots.sliders(draw, num_classes=(10, 2, 30, "k"), scale=(1.0, 0.5, 4.0, 0.5)) is None
    assert len(shown) == 1 and isinstance(shown[0], widgets.interactive)
    panel = shown[0]
    k, s = panel.children[:2]
    assert isinstance(k, widgets.IntSlider) and (k.value, k.min, k.max) == (10, 2, 30)
    assert k.description == "k" and not k.continuous_update
    assert isinstance(s, widgets.FloatSlider) and s.step == 0.5 and s.description == "scale"
    assert drawn[-1] == (10, 1.0)  # drawn once on display
    k.value = 12
    assert drawn[-1] == (12, 1.0)
    assert plt.get_fignums() == []  # each figure is shown, then closed


def test_sliders_show_a_note_where_no_kernel_can_move_them(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setenv("PALVIZ_WIDGETS", "0")
    assert plots.sliders(lambda k: None, k=(1, 0, 2)) is None
    assert len(shown) == 1 and "palviz-widget-note" in shown[0].data


def test_sliders_does_nothing_when_disabled(monkeypatch):
    monkeypatch.setenv("PALVIZ_WIDGETS", "1")
    assert plots.sliders(lambda k: None, enabled=False, k=(1, 0, 2)) is None
    with pytest.raises(ValueError, match="slider 'k'"):
        plots.sliders(lambda k: None, k=(1, 2))


def test_a_value_and_a_list_of_choices_make_a_dropdown(monkeypatch):
    widgets = pytest.importorskip("ipywidgets")
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setenv("PALVIZ_WIDGETS", "1")
    drawn = []
    choices = [("symmetric 0.4", ("symmetric", 0.4)), ("asymmetric 0.2", ("asymmetric", 0.2))]
    plots.sliders(lambda noise: drawn.append(noise), noise=(("symmetric", 0.4), choices, "noise"))
    menu = shown[0].children[0]
    assert isinstance(menu, widgets.Dropdown) and menu.description == "noise"
    menu.value = ("asymmetric", 0.2)
    assert drawn == [("symmetric", 0.4), ("asymmetric", 0.2)]


def test_a_notebook_started_in_a_profile_saves_its_figures_under_that_profile(
    tmp_path, monkeypatch
):
    """A notebook run with PROFILE = "paper" while $PALVIZ_PROFILE says quick once wrote its
    figures into figures/quick."""
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path))
    monkeypatch.setenv("PALVIZ_PROFILE", "quick")
    monkeypatch.setattr(plots, "_current_notebook", None)
    monkeypatch.setattr(plots, "_current_profile", None)
    assert plots.setup_notebook("07_noisy_labels", "paper") == "paper"
    fig = plt.figure()
    path = plots.savefig(fig, "accuracy")
    plt.close(fig)
    assert path == plots.figures_dir("paper") / "07_noisy_labels_accuracy.png" and path.exists()
    assert plots.figure_path("x", profile="smoke").parent == plots.figures_dir("smoke")
