"""Post-hoc re-balancing of cached runs (palviz.experiments.posthoc): the held-out split is
balanced and disjoint from what the run trains on, tau is chosen there, and the reported test
accuracies are those of the formulas, computed here from the run's own arrays."""

from __future__ import annotations

import numpy as np
import pytest

from palviz import data as pdata
from palviz import experiments as ex
from palviz.calibration import TAU_GRID
from palviz.evaluation import evaluate
from palviz.experiments.posthoc import _load_model


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))


def _spec(**changes):
    spec = ex.lt_spec("CE", imbalance_ratio=10, profile="smoke", epochs=2)
    return spec.replace(**changes)


def test_prepare_data_records_which_training_samples_the_run_trains_on():
    spec = _spec(train_size=600)
    prepared = ex.prepare_data(spec)
    x, y = pdata.load_dataset(spec.dataset, "train")
    index = prepared["train_index"]
    assert np.array_equal(x[index].numpy(), prepared["train"][0].numpy())
    assert np.array_equal(y[index].numpy(), prepared["clean_labels"])


def test_the_held_out_split_is_balanced_seeded_and_unused_by_the_run():
    spec = _spec(train_size=600)
    assert spec.held_out > 0  # the profile's
    prepared = ex.prepare_data(spec)
    x_val, y_val = ex.held_out_split(spec, prepared)
    assert np.bincount(y_val.numpy()).tolist() == [spec.held_out] * 10  # every class, the head too
    x, _ = pdata.load_dataset(spec.dataset, "train")
    trained = {tuple(row) for row in x[prepared["train_index"]].numpy().round(6)}
    assert not {tuple(row) for row in x_val.numpy().round(6)} & trained
    again = ex.held_out_split(spec, prepared)
    assert np.array_equal(again[1].numpy(), y_val.numpy())
    other = ex.held_out_split(spec.replace(seed=1))
    assert not np.array_equal(other[0].numpy(), x_val.numpy())


def test_the_held_out_split_has_every_class_when_class_0_is_not_the_largest(monkeypatch):
    from palviz.data import registry

    for name in ("_INFOS", "_LOADERS", "FINGERPRINTS"):
        monkeypatch.setattr(registry, name, dict(getattr(registry, name)))
    sizes = {"train": [40, 90, 25, 60], "test": [10, 10, 10, 10]}

    def skewed(split, root=None, download=False):  # class 1 the largest, class 2 the smallest
        y = np.repeat(np.arange(4), sizes[split])
        return np.random.default_rng(len(y)).normal(size=(len(y), 40)).astype(np.float32), y

    pdata.register_dataset("skewed", skewed, num_classes=4, shape=(40,))
    spec = ex.RunSpec(dataset="skewed", arch="cnn1d", loss="ce", imbalance_ratio=5.0, held_out=10)
    prepared = ex.prepare_data(spec)
    assert np.bincount(ex.held_out_split(spec, prepared)[1].numpy()).tolist() == [10] * 4
    # the cut from n_max = 25 - 10, the smallest class's count after the set-aside
    assert prepared["train_counts"] == [int(15 * 5 ** (-i / 3)) for i in range(4)]
    with pytest.raises(
        ValueError, match=r"^RunSpec.held_out must be fewer than the 25 samples of class 2"
    ):
        ex.prepare_data(spec.replace(held_out=25))
    with pytest.raises(ValueError, match=r"RunSpec.held_out = 0\), so it has no held-out split"):
        ex.held_out_split(spec.replace(held_out=0))


def _mean_class_acc(z, y, k):
    return np.nanmean(
        [np.mean(z[y == c].argmax(1) == c) if np.any(y == c) else np.nan for c in range(k)]
    )


def test_post_hoc_reports_the_formulas_at_the_tau_chosen_on_the_held_out_split(runs):
    spec = _spec(train_size=600)
    result = ex.run(spec)
    frame = ex.post_hoc_frame([result])
    counts = np.asarray(result.metrics["train_counts"], dtype=float)
    k = counts.size
    log_prior = np.log(counts / counts.sum())  # log pi_j
    # the held-out logits, and the test arrays the run cached
    model = _load_model(result, k)
    val = evaluate(model, *ex.held_out_split(spec), mean=spec.train.mean, std=spec.train.std)
    zv, hv, yv = (val[key].double().numpy() for key in ("logits", "features", "targets"))
    arrays = result.features()
    z, h, W, y = (
        arrays[key].astype(float) for key in ("logits", "features", "prototypes", "targets")
    )
    b = (z - h @ W.T).mean(0)  # the bias, from z = W h + b
    bv = (zv - hv @ W.T).mean(0)
    assert np.allclose(b, bv, atol=1e-4)

    def tau_norm(hh, tau):  # w_j / ||w_j||^tau, bias kept
        return hh @ (W / np.linalg.norm(W, axis=1, keepdims=True) ** tau).T + b

    expected = {
        "CE + logit adjustment (post hoc)": (
            lambda tau: zv - tau * log_prior,
            lambda tau: z - tau * log_prior,
        ),
        "CE + tau-normalisation (post hoc)": (
            lambda tau: tau_norm(hv, tau),
            lambda tau: tau_norm(h, tau),
        ),
    }
    for label, (on_val, on_test) in expected.items():
        rows = frame[frame["label"] == label]
        scores = [_mean_class_acc(on_val(t), yv.astype(int), k) for t in TAU_GRID]
        tau = TAU_GRID[int(np.argmax(scores))]  # the first best tau of the grid
        assert rows["tau"].iloc[0] == pytest.approx(tau)
        overall = rows.loc[rows["group"] == "all", "accuracy"].item()
        assert overall == pytest.approx(np.mean(on_test(tau).argmax(1) == y), abs=1e-6)
        assert rows["held_out"].iloc[0] == len(yv)


def test_a_run_without_its_checkpoint_is_listed_not_re_balanced(runs):
    result = ex.run(_spec(train_size=300, train={"epochs": 1}))
    (result.path / "checkpoint.pt").unlink()
    frame = ex.post_hoc_frame([result])
    assert frame.empty
    assert frame.attrs["without_checkpoint"] == [f"CE (seed 0, {result.path.name})"]
    table = ex.post_hoc_table_markdown([result], frame)
    assert "| CE | - |" in table and "post hoc" not in table


def test_anchored_and_cosine_runs_are_not_re_balanced(runs):
    pal = ex.run(
        ex.lt_spec("CE", pal=True, imbalance_ratio=10, profile="smoke", epochs=1).replace(
            train_size=1000
        )
    )
    assert ex.post_hoc_frame([pal]).empty
