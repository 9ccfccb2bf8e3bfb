"""A RunSpec is checked when it is made: a field palviz does not know raises, naming
``RunSpec.<field>``, the value and what is allowed, before any key or run folder exists; the
same holds for the specs ``palviz train`` reads from a JSON-lines file."""

import dataclasses
import json

import pytest

from palviz import cli
from palviz import experiments as ex
from palviz.cli import sweep as cli_sweep
from palviz.experiments import runcache
from palviz.experiments.runspec import RunSpec
from palviz.losses import registry
from palviz.train import TrainConfig

#: A valid spec's fields: LDAM on an anchored head.
BASE = {
    "dataset": "mnist1d",
    "arch": "cnn1d",
    "loss": "ldam",
    "loss_kw": {"max_m": 0.5, "s": 30.0},
    "head": "anchored",
    "head_kw": {"normalize": True, "orientation": "axis"},
    "train": {"epochs": 1},
}

#: (changed fields, the field named, words of what is allowed, exception type)
BAD = [
    ({"dataset": "cifar11"}, "RunSpec.dataset", ["cifar10", "mnist1d"], ValueError),
    ({"arch": "cnn1dd"}, "RunSpec.arch", ["cnn1d", "resnet32"], ValueError),
    ({"dataset": "digits"}, "RunSpec.arch", ["'cnn1d' cannot read", "[N, 1, 8, 8]"], ValueError),
    ({"loss": "ldma", "loss_kw": {}}, "RunSpec.loss", ["ldam", "elm", "ce"], ValueError),
    ({"loss_kw": {"max_mm": 0.5}}, "RunSpec.loss_kw", ["max_mm", "max_m", "allowed"], ValueError),
    ({"loss_kw": [0.5]}, "RunSpec.loss_kw", ["a dict"], TypeError),
    ({"loss": "ce", "loss_kw": {"num_classes": 3}}, "RunSpec.loss_kw", ["weight"], ValueError),
    ({"head": "anchord"}, "RunSpec.head", ["linear", "cosine", "anchored"], ValueError),
    ({"head_kw": {"orient": "axis"}}, "RunSpec.head_kw", ["orientation", "scale"], ValueError),
    ({"head_kw": {"in_features": 8}}, "RunSpec.head_kw", ["normalize"], ValueError),
    ({"head": "linear", "head_kw": {"scale": 2.0}}, "RunSpec.head_kw", ["bias"], ValueError),
    ({"head_kw": None}, "RunSpec.head_kw", ["a dict"], TypeError),
    ({"lt_shape": "expo"}, "RunSpec.lt_shape", ["exp", "step"], ValueError),
    ({"imbalance_ratio": 0.5}, "RunSpec.imbalance_ratio", [">= 1"], ValueError),
    ({"imbalance_ratio": "100"}, "RunSpec.imbalance_ratio", ["real number"], TypeError),
    ({"noise_rate": 1.5}, "RunSpec.noise_rate", ["[0, 1]"], ValueError),
    ({"noise_kind": "pair"}, "RunSpec.noise_kind", ["symmetric", "asymmetric"], ValueError),
    ({"train_size": 1}, "RunSpec.train_size", ["None or an integer >= 2"], ValueError),
    ({"train_size": 2.5}, "RunSpec.train_size", ["None or an integer >= 2"], TypeError),
    ({"toy": {"epochs": 1}}, "RunSpec.toy", ['"epochs", "train", "test"'], TypeError),
    ({"toy": {"epochs": 0, "train": 9, "test": 9}}, "RunSpec.toy", ["integers >= 1"], ValueError),
    ({"seed": -1}, "RunSpec.seed", ["an integer >= 0"], ValueError),
    ({"seed": True}, "RunSpec.seed", ["an integer >= 0"], TypeError),
    ({"seed": "0"}, "RunSpec.seed", ["an integer >= 0"], TypeError),
    ({"train": 3}, "RunSpec.train", ["TrainConfig"], TypeError),
    ({"train": {"epochs": 1, "colour": 1}}, "RunSpec.train", ["colour", "epochs"], ValueError),
    ({"train": {"lr": "fast"}}, "RunSpec.train", ["lr"], TypeError),
    ({"label": 3}, "RunSpec.label", ["a string"], TypeError),
]


@pytest.fixture
def runs(tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    monkeypatch.setenv("PALVIZ_RUNS", str(folder))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    return folder


def nothing_under(folder):
    return not folder.exists() or not any(folder.iterdir())


def test_the_base_spec_is_valid_and_a_train_dict_becomes_its_config():
    spec = RunSpec(**BASE)
    assert spec.train == TrainConfig(epochs=1)
    assert RunSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


@pytest.mark.parametrize(
    ("changes", "field", "allowed", "kind"), BAD, ids=[str(c) for c, *_ in BAD]
)
def test_a_bad_field_is_refused_when_the_spec_is_made(runs, changes, field, allowed, kind):
    with pytest.raises(kind) as made:
        RunSpec(**{**BASE, **changes})
    message = str(made.value)
    assert message.startswith(field), message
    for word in allowed:
        assert word in message, message
    with pytest.raises(kind) as read:
        RunSpec.from_dict({**BASE, **changes})
    assert str(read.value) == message
    assert nothing_under(runs)


@pytest.mark.parametrize(("changes", "field", "allowed", "kind"), BAD[:6])
def test_replace_checks_the_changed_fields_too(changes, field, allowed, kind):
    spec = RunSpec(**BASE)
    with pytest.raises(kind, match=field.replace("[", r"\[").replace("]", r"\]")):
        spec.replace(**changes)
    with pytest.raises(kind):
        dataclasses.replace(spec, **changes)


def build_loss(spec):
    return registry.build_loss(spec.loss, spec.loss_kw, class_counts=[10] * 10, num_classes=10)


def test_a_spec_builds_nothing_and_the_loss_checks_its_values_when_the_run_builds_it():
    spec = RunSpec(**{**BASE, "loss_kw": {"max_m": -1}})  # the names are LDAMLoss's arguments
    with pytest.raises(ValueError, match=r"^max_m must be > 0, got -1$"):
        build_loss(spec)
    spec = RunSpec(**{**BASE, "loss_kw": {"max_m": "big"}})
    with pytest.raises(TypeError, match="max_m"):
        build_loss(spec)


@pytest.mark.parametrize(
    ("head_kw", "message"),
    [
        ({"orientation": "diagonal"}, "orientation must be one of ['random', 'axis', 'block']"),
        ({"scale": -1.0}, "scale must be > 0, got -1.0"),
    ],
)
def test_the_head_checks_its_values_when_the_run_builds_it_before_any_folder(
    runs, head_kw, message
):
    spec = RunSpec(**{**BASE, "head_kw": head_kw})  # the names are AnchoredHead's arguments
    with pytest.raises(ValueError) as built:
        runcache.initial_prototypes(spec)
    assert str(built.value).startswith(message)
    with pytest.raises(ValueError) as trained:
        runcache.run(spec)
    assert str(trained.value) == str(built.value)
    assert not (runs / spec.key()).exists()  # no entry: nothing to resume, nothing to clear


def test_the_messages_follow_the_project_form():
    with pytest.raises(ValueError) as err:
        RunSpec(**{**BASE, "arch": "cnn1dd"})
    assert str(err.value).endswith(", got 'cnn1dd'")
    assert "RunSpec.arch must be one of [" in str(err.value)


def test_from_dict_names_unknown_and_missing_fields_and_wrong_types():
    with pytest.raises(ValueError, match=r"unknown RunSpec fields \['colour'\]"):
        RunSpec.from_dict({**BASE, "colour": "red"})
    with pytest.raises(ValueError, match=r"missing RunSpec fields \['arch'\]; required"):
        RunSpec.from_dict({"dataset": "mnist1d", "loss": "ce"})
    with pytest.raises(TypeError, match="a dict of RunSpec fields, got 3"):
        RunSpec.from_dict(3)


def test_a_bad_spec_never_reaches_the_run_cache(runs):
    def through_run_cache(fields):
        return runcache.run(RunSpec.from_dict(fields))

    for changes, field, *_ in BAD:
        with pytest.raises((TypeError, ValueError), match=field.split("[")[0]):
            through_run_cache({**BASE, **changes})
    with pytest.raises(ValueError, match="RunSpec.arch"):
        ex.run_many([RunSpec.from_dict({**BASE, "arch": "cnn1dd"})])
    assert nothing_under(runs)


def test_every_planned_spec_is_valid_and_round_trips():
    from palviz.experiments import plan

    for profile in ("smoke", "paper"):
        for number in plan.NOTEBOOKS_WITH_RUNS:
            for spec in plan.planned_specs(number, profile):
                back = RunSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
                assert back.key() == spec.key()


# ----------------------------------------------------------------- palviz train SPECFILE


def good_line():
    spec = ex.lt_spec("CE", profile="smoke")
    return json.dumps({"key": spec.key(), "notebooks": ["06"], "spec": spec.to_dict()})


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"spec": {"dataset": "mnist1d",', "not JSON"),
        ('{"spec": 3}', '"spec" must be a JSON object of RunSpec fields, got 3'),
        ("3", 'expected a JSON object of RunSpec fields, or one with them under "spec", got 3'),
        ('["mnist1d"]', "expected a JSON object of RunSpec fields"),
        (json.dumps({"spec": {**BASE, "arch": "cnn1dd"}}), "RunSpec.arch must be one of"),
        (json.dumps({**BASE, "colour": 1}), "unknown RunSpec fields ['colour']"),
    ],
)
def test_palviz_train_names_the_file_and_line_of_a_bad_spec_before_training(
    runs, tmp_path, capsys, line, expected
):
    path = tmp_path / "runs.jsonl"
    path.write_text(good_line() + "\n\n" + line + "\n" + good_line() + "\n")
    assert cli.main(["train", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}, line 3: " in err and expected in err, err
    assert nothing_under(runs)
    with pytest.raises(ValueError, match="line 3"):
        cli_sweep.read_specs(path)


def test_palviz_train_of_a_missing_file_says_so(runs, tmp_path, capsys):
    assert cli.main(["train", str(tmp_path / "nowhere.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert nothing_under(runs)
