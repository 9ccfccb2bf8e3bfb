"""Long-tailed tables and feature geometry (palviz.experiments and palviz.plots, notebooks 06
and 08)."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from palviz import collapse, plots
from palviz import experiments as ex

COUNTS_RHO100 = [939, 562, 337, 202, 121, 72, 43, 26, 15, 9]  # MNIST-1D-LT, rho = 100
COUNTS_RHO10 = [939, 727, 562, 435, 337, 261, 202, 156, 121, 93]  # no few-shot class


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    return tmp_path / "runs"


def fake_result(method="CE", seed=0, rho=100, last=0.5, best=0.6, per_class=None, dataset=None):
    """A RunResult with hand-made metrics (no training)."""
    spec = ex.lt_spec(
        method.replace("+PAL", ""),
        pal=method.endswith("+PAL"),
        seed=seed,
        imbalance_ratio=rho,
        profile="quick",
        dataset=dataset,
    )
    counts = COUNTS_RHO100 if rho == 100 else COUNTS_RHO10
    per_class = [last] * 10 if per_class is None else per_class
    from palviz.metrics import shot_group_accuracy

    metrics = {
        "train_counts": counts,
        "profile_sizes": {"train": sum(counts), "test": 2400},
        "last_acc": last,
        "best_acc": best,
        "best_epoch": 27,
        "per_class_acc": per_class,
        "shot_groups": shot_group_accuracy(per_class, counts),
        "feature_norms": list(np.arange(10.0)),
    }
    return ex.RunResult(spec, metrics, path=None)


def test_lt_grid_nests_dataset_ratio_method_pal_seed_and_reuses_lt_spec():
    specs = ex.lt_grid(["CE", "LDAM-DRW"], ratios=(100, 10), seeds={10: (0,)}, profile="quick")
    setup_seeds = ex.long_tailed_setup("quick")["seeds"]
    assert len(specs) == 2 * 2 * len(setup_seeds) + 2 * 2 * 1
    first = specs[0]
    assert first.key() == ex.lt_spec("CE", imbalance_ratio=100, profile="quick").key()
    assert [s.label for s in specs[: 2 * len(setup_seeds)]] == ["CE"] * len(setup_seeds) + [
        "CE+PAL"
    ] * len(setup_seeds)
    tail = specs[-4:]
    assert [(s.label, s.imbalance_ratio, s.seed) for s in tail] == [
        ("CE", 10, 0),
        ("CE+PAL", 10, 0),
        ("LDAM-DRW", 10, 0),
        ("LDAM-DRW+PAL", 10, 0),
    ]


def test_lt_grid_refuses_an_unknown_method_once_in_the_method_table():
    with pytest.raises(ValueError, match="method must be one of .*got 'LDAM'"):
        ex.lt_grid(["CE", "LDAM"], profile="quick")


def test_lt_table_averages_over_seeds_and_keeps_an_empty_shot_group_as_none():
    results = [
        fake_result("CE", 0, 100, last=0.5, best=0.6),
        fake_result("CE", 1, 100, last=0.7, best=0.8),
        fake_result("CE", 0, 10, last=0.9, best=0.9),
    ]
    rows = ex.lt_table(results)
    assert [(r["method"], r["imbalance_ratio"], r["seeds"]) for r in rows] == [
        ("CE", 100, [0, 1]),
        ("CE", 10, [0]),
    ]
    mean, std = rows[0]["last"]
    assert mean == pytest.approx(0.6) and std == pytest.approx(np.std([0.5, 0.7], ddof=1))
    assert rows[0]["best"][0] == pytest.approx(0.7)
    assert rows[0]["best_epochs"] == [28, 28]  # 1-based
    assert rows[0]["few"][0] == pytest.approx(0.6)
    assert math.isnan(rows[1]["last"][1])  # one seed: no spread
    assert rows[1]["few"] is None  # rho = 10 has no class with < 20 samples


def test_lt_table_refuses_a_seed_twice():
    with pytest.raises(ValueError, match="seed twice"):
        ex.lt_table([fake_result("CE", 0), fake_result("CE", 0)])


def test_lt_table_markdown_labels_epochs_groups_and_shows_n_a():
    results = [fake_result("CE", 0, 10), fake_result("CE", 1, 10, last=0.6), fake_result("CE+PAL")]
    text = ex.lt_table_markdown(results, profile="quick")
    assert "overall, last epoch" in text and "overall, best epoch" in text
    assert "few-shot, last (0 cl.)" in text  # rho = 10
    assert "few-shot, last (2 cl.)" in text  # rho = 100
    assert "n/a" in text
    assert "55.0 ± 7.1" in text
    assert "profile quick" in text and "seeds 0, 1" in text
    assert "published" not in text  # no published number for MNIST-1D


def test_lt_table_markdown_puts_the_published_numbers_beside_cifar_rows():
    results = [fake_result("LDAM-DRW", 0, 100, dataset="cifar100"), fake_result("ETF+DR", 0, 100)]
    text = ex.lt_table_markdown(results, profile="paper")
    row = next(line for line in text.splitlines() if line.startswith("| LDAM-DRW"))
    assert "published (source)" in text
    assert "42.04 (LDAM-DRW paper)" in row and "42.9 (OpenLT README reproduced)" in row
    assert "published" not in text.split("**MNIST-1D")[1]  # no number for MNIST-1D rows
    styled = ex.style_lt_tables(results[:1], profile="paper")[0].to_html()
    assert "42.04 (LDAM-DRW paper)" in styled


def test_select_runs_filters_and_orders_by_the_given_labels():
    results = [
        fake_result("CE", 1),
        fake_result("CE+PAL"),
        fake_result("CE", 0),
        fake_result("CE", 0, 10),
    ]
    picked = ex.select_runs(results, imbalance_ratio=100, labels=["CE+PAL", "CE"])
    assert [(r.label, r.spec.seed) for r in picked] == [("CE+PAL", 0), ("CE", 0), ("CE", 1)]
    assert len(ex.select_runs(results, seed=0)) == 3


def test_the_class_means_of_the_geometry_are_the_means_of_each_class():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(50, 4))
    y = rng.integers(0, 3, size=50)
    means = collapse.class_means(z, y, 4, missing="nan")
    for c in range(3):
        assert np.allclose(means[c], z[y == c].mean(axis=0))
    assert np.all(np.isnan(means[3]))  # class without a sample
    centred = collapse.centered_means(z, y, 3)
    assert np.allclose(centred.sum(axis=0), 0)
    assert np.allclose(centred[1] - centred[0], means[1] - means[0])


def test_feature_geometry_of_a_pal_run_keeps_the_simplex(runs):
    spec = ex.lt_spec("CE", pal=True, imbalance_ratio=10, profile="smoke", epochs=1)
    result = ex.run(spec.replace(train_size=300))
    geometry = ex.feature_geometry(result)
    k = len(geometry["train_counts"])
    off = ~np.eye(k, dtype=bool)
    assert np.abs(geometry["prototype_cosines"][off] + 1 / (k - 1)).max() < 1e-5
    assert geometry["min_prototype_angle"] == pytest.approx(np.degrees(np.arccos(-1 / 9)), abs=1e-3)
    assert np.allclose(geometry["feature_norms"], result.metrics["feature_norms"], rtol=1e-5)
    assert geometry["class_mean_cosines"].shape == (k, k)


def test_plot_paired_runs_draws_both_variants_of_each_method():
    fig, ax = plt.subplots()
    plots.plot_paired_runs(
        ax, {"CE": ([0.5, 0.6], [0.7, 0.8]), "LDAM": ([0.6], [0.65])}, ylabel="%"
    )
    assert [t.get_text() for t in ax.get_xticklabels()] == ["CE", "LDAM"]
    assert len(ax.collections) == 4
    plt.close(fig)


def test_save_markdown_writes_next_to_the_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path))
    path = plots.save_markdown("| a |\n", "results", notebook="06_long_tailed", profile="quick")
    assert path == tmp_path / "06_long_tailed_results.md"
    assert path.read_text() == "| a |\n"
    smoke = plots.save_markdown("x", "results", notebook="06_long_tailed", profile="smoke")
    assert smoke == tmp_path / "smoke" / "06_long_tailed_results.md"
