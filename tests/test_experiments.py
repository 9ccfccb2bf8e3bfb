"""The run cache and the named methods (specifications of palviz.experiments.runcache and
palviz.experiments.recipes,
used through the palviz.experiments facade)."""

import json

import numpy as np
import pytest

from palviz import data as pdata
from palviz import experiments as ex
from palviz.experiments import runcache, runspec
from palviz.theory import noise_aware_scale


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    return tmp_path / "runs"


def tiny_spec(**changes):
    spec = ex.lt_spec("CE", imbalance_ratio=10, profile="smoke", epochs=1)
    return spec.replace(train_size=200, **changes)


def test_cache_key_depends_on_the_configuration_but_not_on_the_label():
    spec = tiny_spec()
    assert spec.key() == spec.replace(label="another name").key()
    assert spec.key() != spec.replace(seed=1).key()
    assert spec.key() != spec.replace(train={"lr": 0.01}).key()
    assert spec.key() != spec.replace(loss_kw={"weight": None}).key()


def test_cache_key_changes_with_the_schema(monkeypatch):
    spec = tiny_spec()
    before = spec.key()
    monkeypatch.setattr(runspec, "CACHE_SCHEMA", ex.CACHE_SCHEMA + 1)
    assert spec.key() != before


def test_a_cached_run_is_served_without_training(runs, monkeypatch):
    spec = tiny_spec()
    first = ex.run(spec)
    files = sorted(p.name for p in first.path.iterdir())
    assert files == ["checkpoint.pt", "features.npz", "metrics.json", "spec.json"]
    assert not list(first.path.glob("*.tmp"))

    def no_training(*args, **kwargs):
        raise AssertionError("fit called for a cached run")

    monkeypatch.setattr(runcache, "fit", no_training)
    second = ex.run(spec.replace(label="renamed"))
    assert second.metrics == first.metrics
    assert second.label == "renamed"


def test_run_records_what_the_tables_need(runs):
    result = ex.run(tiny_spec())
    m = result.metrics
    assert len(m["per_class_acc"]) == 10 == len(m["train_counts"])
    assert m["train_counts"][0] > m["train_counts"][-1]
    assert len(m["history"]) == 1
    # the angle between the closest pair of class vectors, per evaluated epoch (PAL Fig. 5)
    assert 0.0 < m["history"][-1]["min_prototype_angle"] <= 180.0
    assert 0.0 <= m["last_acc"] <= 1.0
    assert set(m["shot_groups"]) == {"many", "medium", "few"}
    arrays = result.features()
    assert arrays["features"].shape[0] == arrays["logits"].shape[0] == m["profile_sizes"]["test"]
    assert arrays["prototypes"].shape[0] == 10
    # the metrics JSON is plain JSON
    json.dumps(m)


def test_noisy_run_reports_the_realised_transition_matrix(runs):
    spec = tiny_spec(imbalance_ratio=1.0, noise_rate=0.4, noise_kind="symmetric")
    m = ex.run(spec).metrics
    T = np.array(m["transition_matrix"])
    np.testing.assert_allclose(T.sum(axis=1), 1.0)
    assert m["realised_noise_rate"] == pytest.approx(0.4, abs=0.03)


def test_list_and_clear_runs(runs):
    ex.run(tiny_spec())
    listed = ex.list_runs()
    assert len(listed) == 1 and listed[0]["finished"] and listed[0]["bytes"] > 0
    assert ex.clear_runs() == 1
    assert ex.list_runs() == []


def test_pal_uses_plain_anchored_logits_for_ce_and_cosine_anchored_logits_for_ldam():
    ce = ex.lt_method("CE", pal=True)
    assert ce["head"] == "anchored" and ce["head_kw"] == {"normalize": False, "scale": 1.0}
    ldam = ex.lt_method("LDAM-DRW", pal=True)
    assert ldam["head"] == "anchored" and ldam["head_kw"]["normalize"] is True
    assert ex.lt_method("LDAM-DRW")["head"] == "cosine"
    assert ex.lt_method("LDAM-DRW")["drw"] and not ex.lt_method("ELM")["drw"]


def test_fnpal_scale_is_noise_aware_for_ce_and_sce_and_ten_for_apl():
    assert ex.noise_method("CE+FNPAL", "mnist1d", 0.4)["head_kw"]["scale"] == pytest.approx(
        noise_aware_scale(0.4)
    )
    assert ex.noise_method("NCE+RCE+FNPAL", "cifar10", 0.4)["head_kw"]["scale"] == 10.0
    fnpn = ex.noise_method("CE+FNPN", "mnist1d", 0.6, scale=2.0)
    assert fnpn["head"] == "cosine" and fnpn["head_kw"]["scale"] == 2.0
    assert ex.noise_method("NCE+RCE", "cifar100", 0.2)["loss_kw"] == {"alpha": 10.0, "beta": 0.1}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ex.lt_method("LDAM"), "method must be one of"),
        (lambda: ex.noise_method("CE+PAL", "mnist", 0.2), "method must be one of"),
        (lambda: tiny_spec(noise_rate=1.5), "noise_rate must be in"),
        (lambda: tiny_spec(imbalance_ratio=0.5), "imbalance_ratio must be >= 1"),
        (lambda: tiny_spec(dataset="imagenet"), "dataset must be one of"),
        (lambda: ex.long_tailed_setup("huge"), "profile must be one of"),
    ],
)
def test_bad_experiment_arguments_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_stratified_subset_has_exactly_the_size_asked_and_keeps_proportions():
    targets = np.random.default_rng(0).integers(0, 10, 9600)
    for size in (4000, 600, 7):
        keep = pdata.stratified_subset(targets, size, seed=0)
        assert len(keep) == len(np.unique(keep)) == size
        share = np.bincount(targets[keep], minlength=10) / size
        assert np.abs(share - np.bincount(targets) / 9600).max() <= 1 / size + 1e-12
