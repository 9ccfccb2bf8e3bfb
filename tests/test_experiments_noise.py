"""The noisy-label tables of notebook 07 (specifications of palviz.experiments' grid helpers)."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from palviz import experiments as ex
from palviz.experiments import runcache
from palviz.plots import plot_lines, plot_transition_matrix
from palviz.theory import noise_aware_scale


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    return tmp_path / "runs"


def tiny_grid(methods=("CE", "CE+FNPAL"), etas=(0.4,), kind="symmetric", **kw):
    return ex.noisy_grid(methods, etas, kind, profile="smoke", train_size=200, epochs=1, **kw)


def test_noisy_grid_is_method_major_and_resizes_every_run():
    specs = tiny_grid(etas=(0.2, 0.6), seeds=(0, 1))
    assert [(s.label, s.noise_rate, s.seed) for s in specs] == [
        ("CE", 0.2, 0),
        ("CE", 0.2, 1),
        ("CE", 0.6, 0),
        ("CE", 0.6, 1),
        ("CE+FNPAL", 0.2, 0),
        ("CE+FNPAL", 0.2, 1),
        ("CE+FNPAL", 0.6, 0),
        ("CE+FNPAL", 0.6, 1),
    ]
    assert {s.train_size for s in specs} == {200}
    assert {s.train.epochs for s in specs} == {1}
    # the noise-aware scale of each noise rate, not one scale for the grid
    assert specs[4].head_kw["scale"] == pytest.approx(noise_aware_scale(0.2))
    assert specs[6].head_kw["scale"] == pytest.approx(noise_aware_scale(0.6))


def test_noisy_grid_keeps_the_profile_size_unless_told():
    spec = ex.noisy_grid(["CE"], [0.2], profile="smoke")[0]
    assert spec.train_size == ex.noisy_setup("smoke")["train_size"]
    assert spec.key() == ex.noisy_spec("CE", 0.2, profile="smoke").key()
    assert ex.noisy_grid(["CE"], [0.2], profile="smoke", train_size=300)[0].train_size == 300
    sweep = ex.scale_sweep("CE+FNPAL", [0.2], [1.0], profile="smoke", train_size=300)
    assert sweep[0].train_size == 300


def test_scale_sweep_sets_the_scale_and_names_it():
    specs = ex.scale_sweep("CE+FNPN", [0.6], [0.5, 2], profile="smoke")
    assert [s.head for s in specs] == ["cosine", "cosine"]
    assert [s.head_kw["scale"] for s in specs] == [0.5, 2.0]
    assert [s.label for s in specs] == ["CE+FNPN s=0.5", "CE+FNPN s=2"]
    with pytest.raises(ValueError, match="FNPAL or \\+FNPN"):
        ex.scale_sweep("CE", [0.6], [1.0], profile="smoke")


def test_run_many_trains_each_missing_key_once_and_keeps_order_and_labels(runs):
    specs = tiny_grid()
    renamed = specs[0].replace(label="CE again")
    results = ex.run_many([*specs, renamed], workers=2)
    assert [r.label for r in results] == ["CE", "CE+FNPAL", "CE again"]
    assert results[2].metrics == results[0].metrics
    assert len([p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")]) == 2
    assert all(ex.is_cached(s) for s in specs)


def test_run_many_serves_a_warm_cache_without_training(runs, monkeypatch):
    specs = tiny_grid(methods=("GCE",))
    first = ex.run_many(specs, workers=1)

    def no_training(*args, **kwargs):
        raise AssertionError("fit called for a cached run")

    monkeypatch.setattr(runcache, "fit", no_training)
    again = ex.run_many(specs, workers=2)
    assert again[0].metrics == first[0].metrics


def test_run_many_refuses_bad_worker_counts():
    with pytest.raises(ValueError, match="workers must be None or an integer >= 1, got 0"):
        ex.run_many([], workers=0)


def _fake_result(label, kind, eta, seed, last):
    spec = ex.noisy_spec("CE", eta, kind, seed=seed, profile="smoke").replace(label=label)
    return ex.RunResult(spec, {"last_acc": last, "history": []}, path=None)


def test_noisy_accuracy_table_averages_over_seeds_per_method_and_setting():
    results = [
        _fake_result("CE", "symmetric", 0.4, 0, 0.5),
        _fake_result("CE", "symmetric", 0.4, 1, 0.7),
        _fake_result("CE", "asymmetric", 0.2, 0, 0.9),
        _fake_result("GCE", "symmetric", 0.4, 0, 0.8),
    ]
    table = ex.noisy_accuracy_table(results)
    assert list(table) == ["CE", "GCE"]
    mean, std, n = table["CE"][("symmetric", 0.4)]
    assert (mean, n) == (pytest.approx(0.6), 2)
    assert std == pytest.approx(math.sqrt(0.02))
    assert math.isnan(table["CE"][("asymmetric", 0.2)][1])
    text = ex.format_noisy_table(table, title="last epoch")
    lines = text.splitlines()
    assert lines[0] == "last epoch"
    assert "sym 0.4" in lines[1] and "asym 0.2" in lines[1]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[3:]]
    assert cells == [["CE", "60.0 ± 14.1", "90.0*"], ["GCE", "80.0*", "-"]]


def test_history_series_reads_the_evaluated_epochs():
    spec = ex.noisy_spec("CE", 0.4, profile="smoke")
    history = [{"epoch": 0, "train_loss": 1.0}, {"epoch": 1, "test_acc": 0.5}]
    result = ex.RunResult(spec, {"history": history}, path=None)
    epochs, values = ex.history_series(result, "test_acc")
    assert epochs.tolist() == [2] and values.tolist() == [0.5]
    with pytest.raises(ValueError, match="min_prototype_angle"):
        ex.history_series(result, "min_prototype_angle")


def test_plot_transition_matrix_writes_each_nonzero_entry_in_percent():
    T = np.array([[0.6, 0.4], [0.0, 1.0]])
    fig, ax = plt.subplots()
    plot_transition_matrix(ax, T, title="T")
    assert sorted(t.get_text() for t in ax.texts if t.get_text()) == ["100", "40", "60"]
    with pytest.raises(ValueError, match="square"):
        plot_transition_matrix(ax, np.ones((2, 3)))
    plt.close(fig)


def test_plot_lines_draws_one_line_per_curve_in_percent():
    fig, ax = plt.subplots()
    plot_lines(ax, {"a": ([1, 2], [0.5, 0.6])}, xlabel="s", ylabel="%", percent=True, logx=True)
    (line,) = ax.get_lines()
    assert line.get_ydata().tolist() == [50.0, 60.0]
    assert ax.get_xscale() == "log"
    plt.close(fig)


def test_run_grouped_returns_each_group_in_order(runs):
    a = tiny_grid(methods=("CE",))
    b = tiny_grid(methods=("GCE", "CE"))
    out = ex.run_grouped({"a": a, ("b", 1): b}, workers=1)
    assert list(out) == ["a", ("b", 1)]
    assert [r.label for r in out[("b", 1)]] == ["GCE", "CE"]
    assert out[("b", 1)][1].metrics == out["a"][0].metrics


def test_noisy_accuracy_table_takes_a_function_of_the_metrics_and_can_skip_the_marks():
    results = [_fake_result("CE", "symmetric", 0.4, 0, 0.5)]
    results[0].metrics["history"] = [{"epoch": 0, "train_acc": 0.25}]
    table = ex.noisy_accuracy_table(results, lambda m: m["history"][-1]["train_acc"])
    assert table["CE"][("symmetric", 0.4)][0] == 0.25
    assert "*" not in ex.format_noisy_table(table, mark_best=False)


def test_initial_prototypes_are_the_prototypes_run_starts_from(runs):
    spec = ex.noisy_spec("CE+FNPN", 0.6, profile="smoke", scale=3.0, epochs=1, lr=1e-9, eta_min=0.0)
    spec = spec.replace(train_size=200)
    state = torch.random.get_rng_state()
    before = ex.initial_prototypes(spec)
    assert torch.equal(state, torch.random.get_rng_state())
    after_one_tiny_step = ex.run(spec).features()["prototypes"]
    np.testing.assert_allclose(before, after_one_tiny_step, atol=1e-5)
    # anchored prototypes start (and stay) at the simplex
    anchored = ex.initial_prototypes(ex.noisy_spec("CE+FNPAL", 0.6, profile="smoke"))
    cos = anchored @ anchored.T
    assert np.max(np.abs(cos[~np.eye(10, dtype=bool)] + 1 / 9)) < 1e-3
