"""palviz.experiments.budget: SGD steps, the papers' budgets, the weight-decay integral, the
curves of the budget plot; palviz.plots.plot_budget draws them."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from palviz.data import BatchIterator  # noqa: E402
from palviz.experiments import budget, tables  # noqa: E402
from palviz.experiments.recipes import noisy_spec  # noqa: E402
from palviz.experiments.runcache import RunResult, prepare_data  # noqa: E402
from palviz.experiments.runspec import RunSpec  # noqa: E402
from palviz.plots import plot_budget  # noqa: E402
from palviz.train import TrainConfig, learning_rate  # noqa: E402

# ------------------------------------------------------------------------- steps_per_epoch


@pytest.mark.parametrize(
    ("n", "batch", "ceil", "floor"),
    [
        (12_406, 128, 97, 96),
        (60_000, 128, 469, 468),
        (50_000, 128, 391, 390),
        (128, 128, 1, 1),
        (129, 128, 2, 1),
        (1, 64, 1, None),
    ],
)
def test_steps_per_epoch_counts_the_last_batch_unless_dropped(n, batch, ceil, floor):
    assert budget.steps_per_epoch(n, batch) == ceil
    if floor is not None:
        assert budget.steps_per_epoch(n, batch, drop_last=True) == floor


@pytest.mark.parametrize(
    ("n", "batch", "drop_last"),
    [(130, 64, False), (130, 64, True), (128, 64, False), (128, 64, True), (5, 64, False)],
)
def test_steps_per_epoch_agrees_with_the_batch_iterator(n, batch, drop_last):
    it = BatchIterator(torch.zeros(n, 3), torch.zeros(n), batch, device="cpu", drop_last=drop_last)
    assert budget.steps_per_epoch(n, batch, drop_last=drop_last) == len(it)
    assert sum(1 for _ in it) == len(it)


def test_steps_per_epoch_errors_name_the_argument():
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        budget.steps_per_epoch(100, 0)
    with pytest.raises(TypeError, match="train_size must be an integer, got 1.5"):
        budget.steps_per_epoch(1.5, 10)
    with pytest.raises(ValueError, match=r"train_size must be >= batch_size \(64\) .*got 5"):
        budget.steps_per_epoch(5, 64, drop_last=True)


# ---------------------------------------------------------------------------- paper budgets


def test_paper_steps_are_derived_from_epochs_sizes_and_batches():
    assert budget.PAPER_BUDGETS["cifar10_lt_rho100"].train_size == 12_406
    # CIFAR-LT sizes as LDAM-DRW's code builds them: 12,406 / 20,431 (CIFAR-10-LT, rho 100 /
    # 10) and 10,847 / 19,573 (CIFAR-100-LT)
    sizes = {"cifar10_lt_rho10": 20_431, "cifar100_lt_rho100": 10_847, "cifar100_lt_rho10": 19_573}
    sizes.update({"cifar10_lt_rho50": 13_996, "cifar100_lt_rho50": 12_608})  # ELM's rho = 50
    for name, n in sizes.items():
        assert budget.PAPER_BUDGETS[name].train_size == n
    assert budget.PAPER_STEPS == {
        "cifar10_lt_rho100": 200 * 97,  # 19,400
        "cifar10_lt_rho50": 200 * 110,  # 13,996 images
        "cifar10_lt_rho10": 200 * 160,
        "cifar100_lt_rho100": 200 * 85,
        "cifar100_lt_rho50": 200 * 99,  # 12,608 images
        "cifar100_lt_rho10": 200 * 153,
        "mnist_noisy": 50 * 469,  # 23,450 (quoted rounded as 23,400)
        "cifar10_noisy": 120 * 391,  # 46,920 (quoted rounded as 46,900)
        "cifar100_noisy": 200 * 391,
    }
    assert budget.PAPER_STEPS["cifar10_lt_rho100"] == 19_400
    for b in budget.PAPER_BUDGETS.values():
        assert b.steps == b.epochs * math.ceil(b.train_size / b.batch_size)
        assert b.batch_size == 128


def test_paper_steps_for_a_claims_setting():
    lt, noisy = {"dataset": "mnist1d", "imbalance_ratio": 10}, {"dataset": "mnist1d"}
    assert budget.paper_steps_for(lt) == 32_000  # MNIST-1D-LT stands in for CIFAR-10-LT
    assert budget.paper_steps_for({**lt, "imbalance_ratio": 100.0}) == 19_400
    assert budget.paper_steps_for({"dataset": "cifar100", "imbalance_ratio": 100}) == 17_000
    assert budget.paper_steps_for({"dataset": "cifar10", "imbalance_ratio": 50}) == 22_000
    assert budget.paper_steps_for({"dataset": "cifar10", "imbalance_ratio": 20}) is None
    assert budget.paper_steps_for({**noisy, "noise_kind": "symmetric"}) == 23_450  # as MNIST
    assert budget.paper_steps_for({"dataset": "cifar100", "noise_kind": "asymmetric"}) == 78_200
    with pytest.raises(ValueError, match="where must be a setting with 'imbalance_ratio' or"):
        budget.paper_steps_for(noisy)
    with pytest.raises(ValueError, match="where must be a mapping with a 'dataset' entry"):
        budget.paper_steps_for({"imbalance_ratio": 10})


# ------------------------------------------------------------------------------ our runs


def _history(epochs, test=None, train=None, lr=0.01, eval_every=1):
    rows = []
    for e in range(epochs):
        row = {"epoch": e, "lr": lr, "train_loss": 1.0, "train_acc": train[e] if train else 0.5}
        if test is not None and ((e + 1) % eval_every == 0 or e == epochs - 1):
            row["test_acc"] = test[e]
        rows.append(row)
    return rows


def _noisy_result(method="CE", seed=0, *, epochs=4, test=None, train=None, size=1000, eta=0.4):
    spec = noisy_spec(method, eta, seed=seed, profile="quick", epochs=epochs, batch_size=128)
    metrics = {
        "profile_sizes": {"train": size, "test": 500},
        "history": _history(epochs, test, train),
        "last_acc": (test or [0.5] * epochs)[-1],
    }
    return RunResult(spec, metrics, path=None)


def test_steps_per_run_of_a_result_uses_its_recorded_training_size():
    result = _noisy_result(epochs=4, size=1000)
    assert budget.steps_per_run(result) == 4 * 8  # ceil(1000 / 128) = 8
    assert budget.steps_per_run(result) == tables.results_frame([result])["steps"].iloc[0]
    assert budget.steps_per_run(result.spec, train_size=1000) == 32


def test_steps_per_run_of_a_spec_subsets_like_prepare_data():
    spec = RunSpec(
        dataset="digits",
        arch="cnn_digits",
        loss="ce",
        imbalance_ratio=10,
        train_size=900,
        train=TrainConfig(epochs=3, batch_size=64),
    )
    size = sum(prepare_data(spec)["train_counts"])
    assert budget.training_size(spec) == size
    assert budget.steps_per_run(spec) == 3 * math.ceil(size / 64)


def test_steps_per_run_refuses_other_objects():
    with pytest.raises(ValueError, match="spec_or_result must be a RunSpec or a RunResult"):
        budget.steps_per_run({"epochs": 3})


# ----------------------------------------------------------------- weight_decay_integral


def test_weight_decay_integral_matches_a_hand_sum():
    history = [{"epoch": e, "lr": lr} for e, lr in enumerate([0.02, 0.04, 0.1, 0.1, 0.01])]
    # sum lr = 0.27; 10 steps per epoch; wd 5e-4 -> 0.27 * 10 * 5e-4
    assert budget.weight_decay_integral(history, 10, 5e-4) == pytest.approx(1.35e-3, rel=1e-12)
    result = _noisy_result(epochs=3)  # lr 0.01 in every epoch
    assert budget.weight_decay_integral(result, 8, 1e-2) == pytest.approx(3 * 0.01 * 8 * 1e-2)


def test_weight_decay_integral_of_the_ldam_drw_schedule():
    config = TrainConfig(
        epochs=200,
        lr=0.1,
        weight_decay=2e-4,
        warmup_epochs=5,
        schedule="multistep",
        milestones=(160, 180),
        lr_factors=(0.01, 1e-4),
    )
    history = [{"epoch": e, "lr": learning_rate(config, e)} for e in range(200)]
    # warm-up 0.02 + 0.04 + 0.06 + 0.08 + 0.1 = 0.3; epochs 5..159: 155 x 0.1 = 15.5;
    # 160..179: 20 x 0.001 = 0.02; 180..199: 20 x 1e-5 = 0.0002
    lr_sum = 0.3 + 15.5 + 0.02 + 0.0002
    assert budget.weight_decay_integral(history, 97, 2e-4) == pytest.approx(lr_sum * 97 * 2e-4)


def test_weight_decay_integral_errors_name_the_argument():
    with pytest.raises(ValueError, match="result_or_history must be per-epoch rows with"):
        budget.weight_decay_integral([{"epoch": 0}], 10, 1e-4)
    with pytest.raises(ValueError, match="result_or_history must be a RunResult or a list"):
        budget.weight_decay_integral("history", 10, 1e-4)
    with pytest.raises(ValueError, match="steps_per_epoch must be >= 1, got 0"):
        budget.weight_decay_integral([{"lr": 0.1}], 0, 1e-4)
    with pytest.raises(ValueError, match="weight_decay must be >= 0, got -1.0"):
        budget.weight_decay_integral([{"lr": 0.1}], 10, -1.0)


# ------------------------------------------------------------------------------- the plot

TESTS = {  # per seed, test accuracy after each of 4 epochs
    "CE": [[0.2, 0.4, 0.5, 0.45], [0.3, 0.5, 0.6, 0.55], [0.1, 0.3, 0.4, 0.35]],
    "CE+FNPAL": [[0.3, 0.5, 0.6, 0.65], [0.3, 0.6, 0.7, 0.75], [0.3, 0.4, 0.5, 0.55]],
}
TRAIN = [0.3, 0.45, 0.55, 0.6]


@pytest.fixture
def runs():
    return {
        label: [_noisy_result(label, s, test=t, train=TRAIN) for s, t in enumerate(seeds)]
        for label, seeds in TESTS.items()
    }


def _labels(ax):
    return [line.get_label() for line in ax.get_lines()]


def test_plot_budget_draws_means_bands_train_lines_and_both_budgets(runs):
    fig, ax = plt.subplots()
    plot_budget(ax, budget.budget_frame(runs), quick_steps=32, paper_steps=19_400, title="budget")
    labels = _labels(ax)
    assert "CE: test (mean of 3 seeds, min-max band)" in labels
    assert (
        "CE+FNPAL: training accuracy on the noisy labels (running mean over each epoch)" in labels
    )
    assert "this profile stops: 32 steps" in labels
    mean_line = ax.get_lines()[labels.index("CE: test (mean of 3 seeds, min-max band)")]
    np.testing.assert_allclose(mean_line.get_xdata(), [8, 16, 24, 32])  # ceil(1000/128) = 8
    np.testing.assert_allclose(mean_line.get_ydata(), [20, 40, 50, 45])
    train = ax.get_lines()[
        labels.index("CE: training accuracy on the noisy labels (running mean over each epoch)")
    ]
    assert train.get_linestyle() == "--" and train.get_color() == mean_line.get_color()
    assert len(ax.collections) == 2  # one band per label
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == pytest.approx(10) and band[:, 1].max() == pytest.approx(60)
    # 19,400 steps is far beyond the axis: a legend entry with an arrow, not a vertical line
    paper = [label for label in labels if label.startswith("paper: 19,400 steps")]
    assert len(paper) == 1 and "606x this profile" in paper[0] and "off the axis" in paper[0]
    entry = ax.get_lines()[labels.index(paper[0])]
    assert len(entry.get_xdata()) == 0  # a legend proxy, nothing drawn at x = 19,400
    assert ax.get_xlim()[1] < 19_400
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "CE: test (mean of 3 seeds, min-max band)" in legend
    assert ax.get_title() == "budget" and "SGD steps" in ax.get_xlabel()
    plt.close(fig)


def test_plot_budget_draws_a_paper_budget_within_reach_as_a_line(runs):
    fig, ax = plt.subplots()
    plot_budget(
        ax, budget.budget_frame(runs), quick_steps=32, paper_steps=36, show_train=False, band="sd"
    )
    labels = _labels(ax)
    assert "paper: 36 steps" in labels and ax.get_xlim()[1] >= 36
    assert "CE: test (mean of 3 seeds, +-1 sd band)" in labels
    assert not any("training accuracy" in label for label in labels)
    assert not ax.texts
    plt.close(fig)


def test_plot_budget_says_one_seed_and_draws_no_band():
    fig, ax = plt.subplots()
    one = {"CE": [_noisy_result(test=TESTS["CE"][0], eta=0.0)]}
    plot_budget(ax, budget.budget_frame(one), quick_steps=None)
    labels = _labels(ax)
    assert labels == [
        "CE: test (1 seed)",
        "CE: training accuracy (running mean over each epoch)",
    ]
    assert not ax.collections
    plt.close(fig)


def test_plot_budget_errors_name_the_argument(runs):
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="results_by_label must be a non-empty dict"):
        budget.budget_frame({})
    with pytest.raises(ValueError, match="band must be one of"):
        plot_budget(ax, budget.budget_frame(runs), quick_steps=10, band="iqr")
    unfinished = _noisy_result()
    unfinished.metrics.pop("profile_sizes")
    with pytest.raises(ValueError, match="results_by_label must be finished runs.*'CE': run 0"):
        budget.budget_frame({"CE": [unfinished]})
    plt.close(fig)
