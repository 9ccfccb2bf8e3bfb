"""results_frame, the one frame every table of palviz.experiments.tables is a group-by of."""

import numpy as np
import pandas as pd
import pytest

from palviz.experiments import inspection, tables
from palviz.experiments.recipes import lt_spec, noisy_spec
from palviz.experiments.runcache import RunResult
from palviz.metrics import shot_group_accuracy

COUNTS = [939, 562, 337, 202, 121, 72, 43, 26, 15, 9]  # MNIST-1D-LT, rho = 100


def lt_result(method="CE", seed=0, last=0.5, per_class=None, **metrics):
    spec = lt_spec(method, seed=seed, profile="quick")
    per_class = [last] * 10 if per_class is None else per_class
    m = {
        "train_counts": COUNTS,
        "profile_sizes": {"train": sum(COUNTS), "test": 2400},
        "last_acc": last,
        "best_acc": last + 0.1,
        "best_epoch": 3,
        "per_class_acc": per_class,
        "shot_groups": shot_group_accuracy(per_class, COUNTS),
        "feature_norms": list(np.arange(10.0)),
        "weight_norms": [1.0] * 10,
        "min_prototype_angle": 96.4,
        **metrics,
    }
    return RunResult(spec, m, path=None)


def test_results_frame_has_one_row_per_run_with_the_documented_columns():
    results = [lt_result("CE", 0), lt_result("CE", 1, last=0.7), lt_result("LDAM-DRW", 0)]
    frame = tables.results_frame(results)
    assert len(frame) == 3
    for column in (
        "key label method dataset imbalance_ratio noise_kind noise_rate seed epochs steps "
        "last_acc best_acc many medium few min_prototype_angle"
    ).split():
        assert column in frame, column
    assert [f"acc_class_{c}" for c in range(10)] == [c for c in frame if c.startswith("acc_class_")]
    assert frame["key"].tolist() == [r.spec.key() for r in results]
    assert frame["label"].tolist() == ["CE", "CE", "LDAM-DRW"]
    assert frame["seed"].tolist() == [0, 1, 0]
    assert frame["imbalance_ratio"].tolist() == [100.0] * 3
    spec = results[0].spec
    assert frame["steps"][0] == spec.train.epochs * int(np.ceil(sum(COUNTS) / 64))
    assert frame["best_epoch"][0] == 4  # 1-based
    assert frame["feature_norm_class_3"][0] == 3.0 and frame["weight_norm_class_9"][2] == 1.0
    assert frame["min_prototype_angle"].tolist() == [96.4] * 3
    assert np.isnan(frame["realised_noise_rate"]).all()


def test_results_frame_turns_missing_values_into_nan_and_names_scale_sweeps():
    per_class = [0.5] * 9 + [None]
    lt = lt_result(per_class=per_class)
    spec = noisy_spec("CE+FNPN", 0.6, profile="smoke", scale=2.0).replace(label="CE+FNPN s=2")
    noisy = RunResult(spec, {"last_acc": 0.4, "history": []}, path=None)
    frame = tables.results_frame([lt, noisy])
    assert np.isnan(frame["acc_class_9"][0])
    assert frame["method"][1] == "CE+FNPN" and frame["label"][1] == "CE+FNPN s=2"
    assert frame["scale"][1] == 2.0 and frame["noise_rate"][1] == 0.6
    assert frame["acc_class_0"].isna()[1] and frame["num_classes"].isna()[1]
    assert tables.results_frame([]).empty


def test_group_by_over_seeds_agrees_with_numpy_mean_and_std():
    rng = np.random.default_rng(0)
    results = []
    for method in ("CE", "Focal"):
        for seed in range(3):
            results.append(lt_result(method, seed, per_class=list(rng.uniform(0, 1, 10))))
    frame = tables.results_frame(results)
    stats = tables._over_seeds(frame, ["label"], ["last_acc", "few", "acc_class_9"])
    for method in ("CE", "Focal"):
        runs = [r for r in results if r.label == method]
        for column, values in (
            ("last_acc", [r.metrics["last_acc"] for r in runs]),
            ("few", [r.metrics["shot_groups"]["few"] for r in runs]),
            ("acc_class_9", [r.metrics["per_class_acc"][9] for r in runs]),
        ):
            assert stats.loc[method, (column, "mean")] == pytest.approx(np.mean(values))
            assert stats.loc[method, (column, "std")] == pytest.approx(np.std(values, ddof=1))
            assert stats.loc[method, (column, "count")] == 3
    rows = tables.lt_table(results)
    assert rows[1]["few"] == pytest.approx(
        (
            stats.loc["Focal", ("few", "mean")],
            stats.loc["Focal", ("few", "std")],
        )
    )


def test_one_seed_has_no_spread_and_every_table_formats_it_alike():
    results = [lt_result("CE", 0, last=0.5)]
    (row,) = tables.lt_table(results)
    assert row["last"][0] == 0.5 and np.isnan(row["last"][1])
    cells = tables.lt_table_markdown(results, profile="quick").splitlines()[-1].split("|")
    assert [c.strip() for c in cells[2:4]] == ["50.0", "60.0"]  # last, best: no "±"
    noisy = tables.noisy_accuracy_table(results)
    cells = tables.format_noisy_table(noisy).splitlines()[-1].split("|")
    assert [c.strip() for c in cells[1:3]] == ["CE", "50.0*"]


def test_markdown_tables_escape_a_bar_and_align_names_left_and_numbers_right():
    frame = pd.DataFrame({"method": ["A|B"], "sym 0.2": ["50.0"]})
    lines = tables.markdown_table(frame, index=False).splitlines()
    assert lines[1].startswith("|:-") and lines[1].endswith("-:|")  # left, then right
    assert lines[2].startswith("| A\\|B ")
    assert tables.markdown_table(frame.set_index("method")).splitlines() == lines


def test_per_class_frame_has_one_row_per_run_and_class_with_its_training_count():
    results = [lt_result("CE", 0, last=0.5), lt_result("CE", 1, last=0.7)]
    long = tables.per_class_frame(results)
    assert len(long) == 2 * 10
    assert {"label", "seed", "class", "train_count", "value"} <= set(long)
    first = long[(long["seed"] == 1) & (long["class"] == 9)].iloc[0]
    assert first["value"] == 0.7 and first["train_count"] == COUNTS[9]
    norms = tables.per_class_frame(tables.results_frame(results), "feature_norms")
    assert norms[norms["seed"] == 0]["value"].tolist() == list(np.arange(10.0))


def test_styled_tables_show_the_same_cells_as_the_markdown():
    results = [lt_result("CE", 0, last=0.5), lt_result("CE", 1, last=0.7)]
    (styled,) = tables.style_lt_tables(results, profile="quick")
    html = styled.to_html()
    markdown = tables.lt_table_markdown(results, profile="quick").splitlines()[-1].split("|")
    assert markdown[2].strip() == "60.0 ± 14.1"
    assert ">60.0 ± 14.1<" in html and "MNIST-1D-LT, rho = 100" in html
    noisy = tables.noisy_accuracy_table(results)
    html = tables.style_noisy_table(noisy, caption="acc").to_html()
    assert ">60.0 ± 14.1<" in html and "font-weight: bold" in html
    assert ">acc Bold: the highest mean of its column" in html  # the key in the caption
    assert "padding: 0.25em 0.75em" in html


def test_transition_rule_error_is_zero_for_the_rule_and_sees_a_wrong_flip():
    counts = [10, 20, 10]
    spec = noisy_spec("CE", 0.4, profile="smoke")
    flipped = np.array([int(0.4 * n) for n in counts]) / np.array(counts)
    T = np.full((3, 3), 0.0) + np.diag(1 - flipped)
    metrics = {"transition_matrix": T.tolist(), "train_counts": counts}
    assert inspection.transition_rule_error(RunResult(spec, metrics, path=None)) == 0.0
    T[0, 0] = 0.5
    metrics["transition_matrix"] = T.tolist()
    error = inspection.transition_rule_error(RunResult(spec, metrics, path=None))
    assert error == pytest.approx(0.1)
