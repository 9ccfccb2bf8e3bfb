"""A dataset is declared once (palviz.data.register_dataset), with the network its tables
train: the built-ins and a user's own, named by a module; a run whose network cannot read its
dataset is refused when its spec is made, before anything is written; notebooks 06, 07, 08 and
``palviz plan`` take the datasets to train (06 also the ratios, for a dataset too small to cut
at rho = 100). That notebook 06, executed through papermill, trains a dataset a user's module
registers is tests/test_adding_dataset.py (the worked example of docs/contributing.md)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import torch

from palviz import cli
from palviz import data as pdata
from palviz.data import registry
from palviz.experiments import plan, recipes
from palviz.experiments.runcache import run
from palviz.experiments.runspec import RunSpec
from palviz.models import make_model

#: A module a user would write: one call declares a dataset of 40-d vectors (4 Gaussian
#: blobs, 200 training and 60 test samples a class) and the network its tables train, the 1-D
#: CNN (without ``network=`` a vector dataset trains the MLP).
USER_MODULE = '''
"""My datasets: registered when imported."""
import numpy as np

from palviz.data import register_dataset


def load(split, root=None, download=False):
    centres = np.random.default_rng(7).normal(scale=1.5, size=(4, 40))
    n = 200 if split == "train" else 60
    y = np.repeat(np.arange(4), n)
    noise = np.random.default_rng(0 if split == "train" else 1).normal(size=(len(y), 40))
    return (centres[y] + noise).astype(np.float32), y


register_dataset("blobs", load, num_classes=4, shape=(40,), network="cnn1d", title="Blobs-40")
'''


@pytest.fixture
def registry_copy(monkeypatch):
    """The registry as it is, restored after the test (whatever it registers)."""
    for name in ("_INFOS", "_LOADERS", "FINGERPRINTS"):
        monkeypatch.setattr(registry, name, type(getattr(registry, name))(getattr(registry, name)))
    monkeypatch.setenv(pdata.DATASET_MODULES_ENV, "")  # restored after, whatever sets it
    monkeypatch.delenv(pdata.DATASET_MODULES_ENV)


@pytest.fixture
def user_module(tmp_path, monkeypatch, registry_copy):
    """The name of a module in ``tmp_path`` (on sys.path and PYTHONPATH) that registers
    ``blobs``; not imported yet."""
    name = f"my_datasets_{os.getpid()}"
    (tmp_path / f"{name}.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    paths = [str(tmp_path), os.environ.get("PYTHONPATH")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))
    yield name
    sys.modules.pop(name, None)


@pytest.fixture
def runs(tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    monkeypatch.setenv("PALVIZ_RUNS", str(folder))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    return folder


def _vectors(split, root=None, download=False):
    n = 30 if split == "train" else 10
    return torch.zeros(n, 40), torch.arange(n) % 3


def _few(split, root=None, download=False):
    """4 classes of 20 training samples (15 after smoke's held-out 5): too few for rho = 100."""
    n = 20 if split == "train" else 5
    x = torch.randn(4 * n, 40, generator=torch.Generator().manual_seed(n))
    return x, torch.arange(4 * n) % 4


# --------------------------------------------------------------------------- the registry


def test_the_builtins_are_declared_once_and_the_views_follow_the_registry():
    assert tuple(pdata.DATASETS) == ("mnist1d", "digits", "mnist", "cifar10", "cifar100")
    assert tuple(pdata.BUILTIN_DATASETS) == tuple(pdata.DATASETS)
    assert recipes.DATASET_NAMES is pdata.DATASET_TITLES
    assert dict(pdata.DATASET_TITLES)["cifar10"] == "CIFAR-10"
    assert pdata.dataset_info("digits").shape == (1, 8, 8)
    assert pdata.dataset_info("digits").kind == "image"
    assert pdata.dataset_info("mnist1d").kind == "vector"
    assert pdata.asymmetric_map("digits") == {7: 1, 2: 7, 5: 6, 6: 5, 3: 8}


def test_a_registered_dataset_loads_and_is_in_every_view(registry_copy):
    info = pdata.register_dataset("tiny", _vectors, num_classes=3, shape=(40,), title="Tiny")
    assert info.kind == "vector" and info.title == "Tiny" and info.asymmetric_flips == ()
    assert "tiny" in pdata.DATASETS and pdata.DATASET_TITLES["tiny"] == "Tiny"
    x, y = pdata.load_dataset("tiny", "test")
    assert x.shape == (10, 40) and y.dtype == torch.int64
    # the same declaration again is accepted; another one under its name needs replace=True
    pdata.register_dataset("tiny", _vectors, num_classes=3, shape=(40,), title="Tiny")
    with pytest.raises(ValueError, match=r"dataset 'tiny' is already registered .*replace=True"):
        pdata.register_dataset("tiny", _vectors, num_classes=4, shape=(40,))
    pdata.register_dataset("tiny", _vectors, num_classes=4, shape=(40,), replace=True)
    assert pdata.dataset_info("tiny").num_classes == 4
    with pytest.raises(ValueError, match=r"declares no asymmetric-noise map"):
        pdata.asymmetric_map("tiny")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"name": "My Set"}, r"^name must be lower-case letters"),
        ({"shape": (8, 8)}, r"^shape must be \(D,\) for vectors or \(C, H, W\)"),
        ({"num_classes": 1}, r"^num_classes must be >= 2"),
        ({"loader": None}, r"^loader must be a function"),
        ({"std": (0.0,), "shape": (1, 8, 8)}, r"^std must be None or numbers > 0"),
        ({"asymmetric_map": {0: 5}}, r"^asymmetric_map must be a map of class ids in \[0, 3\)"),
        ({"network": "resnet50"}, r"^network must be one of \['resnet32', .*'cnn_digits'\], got"),
        (
            {"network": "cnn1d", "shape": (13,)},
            r"^network must be an arch that reads samples \[N, 13\], one of \['mlp1d'\], "
            r"got 'cnn1d'$",
        ),
        (
            {"network": {"long_tailed": "cnn1d", "noisy": "cnn_digits"}},
            r"^network\['noisy'\] must be an arch that reads samples \[N, 40\], one of "
            r"\['mlp1d', 'cnn1d'\], got 'cnn_digits'$",
        ),
        (
            {"network": {"long_tailed": "cnn1d"}},
            r"^network must be None, an arch of \[.*\] or a map of each of "
            r"\['long_tailed', 'noisy'\] to one, got \{'long_tailed': 'cnn1d'\}$",
        ),
        (
            {"shape": (2, 8, 8)},
            r"^shape must be one a long-tailed network reads: cnn_digits \[N, 1, 8, 8\], "
            r"cnn_mnist \[N, 1, 28, 28\], resnet32 \[N, 3, H, W\], got \(2, 8, 8\)$",
        ),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_argument(registry_copy, arguments, message):
    declaration = {"name": "tiny", "loader": _vectors, "num_classes": 3, "shape": (40,)}
    with pytest.raises(ValueError, match=message):
        pdata.register_dataset(**{**declaration, **arguments})
    assert "tiny" not in pdata.DATASETS


def test_a_loader_that_returns_other_data_than_declared_is_named(registry_copy):
    pdata.register_dataset("tiny", _vectors, num_classes=3, shape=(1, 8, 8))
    with pytest.raises(ValueError, match=r"tiny. returned .* \[30, 40\]; .*\[N, 1, 8, 8\]"):
        pdata.load_dataset("tiny")
    pdata.register_dataset("few", _vectors, num_classes=2, shape=(40,))
    with pytest.raises(ValueError, match=r"labels from 0 to 2; the dataset declares 2 classes"):
        pdata.load_dataset("few")


def test_a_module_named_in_the_environment_registers_when_a_name_is_looked_up(
    user_module, monkeypatch
):
    assert "blobs" not in pdata.DATASETS
    monkeypatch.setenv(pdata.DATASET_MODULES_ENV, user_module)
    assert "blobs" in pdata.DATASETS  # looked for in $PALVIZ_DATASET_MODULES's modules
    assert pdata.dataset_info("blobs").title == "Blobs-40"
    x, y = pdata.load_dataset("blobs")
    assert x.shape == (800, 40) and np.bincount(y.numpy()).tolist() == [200] * 4


def test_importing_a_module_names_it_for_the_processes_started_after(user_module, monkeypatch):
    pdata.import_dataset_modules((user_module,))
    assert "blobs" in pdata.DATASETS
    assert os.environ[pdata.DATASET_MODULES_ENV] == user_module
    with pytest.raises(ValueError, match=r"dataset module 'no_such_module' cannot be imported"):
        pdata.import_dataset_modules(("no_such_module",))


# --------------------------------------------------------------------------- the refusal


def test_a_spec_pairing_cnn1d_with_digits_is_refused_when_made_and_writes_nothing(runs):
    fields = {"dataset": "digits", "arch": "cnn1d", "loss": "ce", "train": {"epochs": 1}}
    with pytest.raises(ValueError) as made:
        RunSpec(**fields)
    message = str(made.value)
    assert message.startswith("RunSpec.arch 'cnn1d' cannot read dataset 'digits'"), message
    assert "cnn1d reads inputs [N, 40], not [N, 1, 8, 8]" in message
    spec = recipes.lt_spec("CE", profile="smoke", dataset="digits")  # digits' own network
    assert spec.arch == "cnn_digits"
    with pytest.raises(ValueError, match=r"RunSpec.arch 'cnn1d' cannot read dataset 'digits'"):
        spec.replace(arch="cnn1d")
    with pytest.raises(ValueError, match=r"RunSpec.arch 'cnn1d' cannot read"):
        RunSpec.from_dict({**spec.to_dict(), "arch": "cnn1d"})
    assert not runs.exists() or not any(runs.iterdir())


def test_a_vector_dataset_of_any_width_trains_the_mlp_built_that_wide(registry_copy, runs):
    pdata.register_dataset("wide", _vectors, num_classes=3, shape=(64,))
    specs = [
        recipes.lt_spec("CE", pal=True, profile="smoke", dataset="wide"),
        recipes.noisy_spec("CE", 0.4, profile="smoke", dataset="wide"),
        *plan.experiment_specs("06", "smoke", datasets=("wide",)),
    ]
    assert {(s.dataset, s.arch) for s in specs} == {("wide", "mlp1d")}
    # built for the dataset's samples (as a run builds it): 64 inputs to its first layer
    model = make_model("mlp1d", 3, shape=pdata.dataset_info("wide").shape)
    assert model.backbone[1].weight.shape == (256, 64)
    assert model(torch.zeros(2, 64)).shape == (2, 3)
    assert not runs.exists()


#: The network each table trains on each built-in dataset: the CPU-sized nets on the small
#: sets, APL's CNN on MNIST; on CIFAR the published tables' own (docs/reference.md 3 and 6).
BUILTIN_NETWORKS = {
    "mnist1d": {"long_tailed": "cnn1d", "noisy": "cnn1d"},
    "digits": {"long_tailed": "cnn_digits", "noisy": "cnn_digits"},
    "mnist": {"long_tailed": "cnn_mnist", "noisy": "cnn_mnist"},
    "cifar10": {"long_tailed": "resnet32", "noisy": "cnn_cifar10"},
    "cifar100": {"long_tailed": "resnet32", "noisy": "resnet34"},
}


def test_a_network_is_chosen_for_every_dataset_by_its_registration(registry_copy):
    for dataset, networks in BUILTIN_NETWORKS.items():
        assert dict(pdata.dataset_info(dataset).networks) == networks
        for task, arch in networks.items():
            assert recipes.network_for(task, dataset) == arch
    pdata.register_dataset("signals", _vectors, num_classes=3, shape=(40,))
    assert pdata.dataset_info("signals").network("long_tailed") == "mlp1d"  # inferred
    pdata.register_dataset(
        "signals", _vectors, num_classes=3, shape=(40,), network="cnn1d", replace=True
    )
    assert recipes.network_for("noisy", "signals") == "cnn1d"  # named
    pdata.register_dataset("rgb", _vectors, num_classes=3, shape=(3, 16, 16))
    assert dict(pdata.dataset_info("rgb").networks) == {
        "long_tailed": "resnet32",
        "noisy": "resnet34",
    }
    pdata.register_dataset("gray", _vectors, num_classes=3, shape=(1, 28, 28))
    assert set(dict(pdata.dataset_info("gray").networks).values()) == {"cnn_mnist"}
    with pytest.raises(ValueError, match=r"^task must be one of \['long_tailed', 'noisy'\]"):
        pdata.dataset_info("rgb").network("balanced")


# --------------------------------------------------------------------------- the run key

#: A user's module whose loader's labels follow $BLOBS_SHIFT (a loader that changed), and a
#: script that trains one short run of it and prints its key and whether it trained.
SHIFTING_MODULE = USER_MODULE.replace(
    "return (centres[y] + noise).astype(np.float32), y",
    "import os\n    shift = int(os.environ['BLOBS_SHIFT'])\n"
    "    return (centres[y] + noise).astype(np.float32), (y + shift) % 4",
)
TRAIN_ONE = """
import json, sys
import palviz
from palviz.experiments.runcache import is_cached, run
from palviz.experiments.runspec import RunSpec
spec = RunSpec(dataset="blobs", arch="cnn1d", loss="ce", train={"epochs": 1, "progress": False})
cached = is_cached(spec)
result = run(spec)
print(json.dumps({"key": spec.key(), "cached": cached, "acc": result.metrics["last_acc"]}))
"""


def _train_in_a_process(module: str, shift: int) -> dict:
    import json
    import subprocess

    env = {**os.environ, "BLOBS_SHIFT": str(shift), pdata.DATASET_MODULES_ENV: module}
    out = subprocess.run(
        [sys.executable, "-c", TRAIN_ONE], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_loader_that_changes_what_it_returns_trains_its_runs_again(
    tmp_path, monkeypatch, registry_copy, runs
):
    name = f"shifting_{os.getpid()}"
    (tmp_path / f"{name}.py").write_text(SHIFTING_MODULE)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    )
    first = _train_in_a_process(name, 0)
    again = _train_in_a_process(name, 0)
    changed = _train_in_a_process(name, 1)
    assert not first["cached"] and again == {**first, "cached": True}  # the same data: served
    assert not changed["cached"] and changed["key"] != first["key"]  # new labels: trained again
    assert sorted(p.name for p in runs.iterdir() if not p.name.startswith(".")) == sorted(
        [first["key"], changed["key"]]
    )


def test_a_declared_version_stands_for_the_data_and_the_loader_is_not_read(registry_copy):
    def unreadable(split, root=None, download=False):
        raise AssertionError("the loader was called")

    pdata.register_dataset("versioned", unreadable, num_classes=3, shape=(40,), version="v1")
    assert pdata.dataset_fingerprint("versioned") == "version v1"
    spec = RunSpec(dataset="versioned", arch="cnn1d", loss="ce")
    key = spec.key()
    pdata.register_dataset(
        "versioned", unreadable, num_classes=3, shape=(40,), version="v2", replace=True
    )
    assert spec.key() != key
    with pytest.raises(ValueError, match=r"^version must be None or a non-empty string, got ''"):
        pdata.register_dataset("other", unreadable, num_classes=3, shape=(40,), version="")


#: The keys of the built-in datasets' runs, made in a fresh process.
KEYS = """
import json
import palviz
from palviz.data import dataset_fingerprint
from palviz.experiments import recipes
print(json.dumps({
    "fingerprints": [dataset_fingerprint(d) for d in ("mnist1d", "digits", "mnist", "cifar10")],
    "lt": recipes.lt_spec("CE", profile="quick").key(),
    "digits": recipes.lt_spec("CE", profile="smoke", dataset="digits").key(),
    "noisy": recipes.noisy_spec("CE", 0.4, profile="quick").key(),
}))
"""


def test_the_builtin_datasets_keys_are_the_same_in_two_processes():
    import json
    import subprocess

    made = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", KEYS], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(2)
    ]
    assert made[0] == made[1]
    assert made[0]["fingerprints"][0] == pdata.dataset_fingerprint("mnist1d")  # and this one's
    assert made[0]["fingerprints"][3].startswith("version cifar-10-python.tar.gz md5")


# --------------------------------------------------------------------------- the notebooks' runs


@pytest.mark.parametrize("profile", ["smoke", "quick", "full"])
@pytest.mark.parametrize("number", ["06", "07", "08"])
def test_naming_the_profiles_datasets_changes_nothing(number, profile):
    default = plan.experiment_specs(number, profile)
    (dataset,) = {s.dataset for s in default}
    named = plan.experiment_specs(number, profile, datasets=(dataset,))
    assert [s.key() for s in named] == [s.key() for s in default]


def test_digits_lt_runs_everywhere_in_06_its_replication_included():
    groups = plan.experiment("06", "full", datasets=("digits",))
    assert set(groups) >= {"grid", "replication"}
    specs = [s for group in groups.values() for s in group]
    assert {(s.dataset, s.arch) for s in specs} == {("digits", "cnn_digits")}
    noisy = plan.experiment("07", "smoke", datasets=("digits",))
    assert {s.dataset for group in noisy.values() for s in group} == {"digits"}


def test_a_dataset_too_small_for_rho_100_trains_in_06_at_the_ratios_given(registry_copy, runs):
    pdata.register_dataset("few", _few, num_classes=4, shape=(40,))
    at_100 = plan.experiment_specs("06", "smoke", datasets=("few",))
    with pytest.raises(ValueError, match=r"^imbalance_ratio=100.0 with n_max=15 rounds the tail"):
        run(at_100[0])
    specs = plan.experiment_specs("06", "smoke", datasets=("few",), ratios=(10,))
    assert [s.label for s in specs] == [s.label for s in at_100]
    assert {(s.dataset, s.imbalance_ratio) for s in specs} == {("few", 10)}
    assert run(specs[0]).metrics["train_counts"] == [15, 6, 3, 1]


def test_plan_takes_the_datasets_of_06_07_08(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    assert cli.main(["plan", "--profile", "smoke", "--datasets", "digits"]) == 0
    out = capsys.readouterr().out
    rows = plan.plan(list(plan.EXPERIMENTS), "smoke", ("digits",))
    assert f"{len(rows)} run(s) (smoke)" in out
    by_notebook = {
        n: {r["spec"].dataset for r in rows if n in r["notebooks"]} for n in plan.EXPERIMENTS
    }
    assert by_notebook["06"] == by_notebook["07"] == by_notebook["08"] == {"digits"}
    assert by_notebook["00"] == by_notebook["03"] == {"mnist1d"}  # no DATASETS parameter
    with pytest.raises(SystemExit) as stopped:
        cli.main(["plan", "--profile", "smoke", "--datasets", "cifar11"])
    assert stopped.value.code == 2
    assert "palviz plan: datasets must be" in capsys.readouterr().err


def test_plan_lists_a_users_dataset_named_by_the_environment(
    user_module, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(pdata.DATASET_MODULES_ENV, user_module)
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    assert cli.main(["plan", "--profile", "smoke", "--only", "06", "--datasets", "blobs"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if " blobs " in ln]
    assert lines and all(" cnn1d " in ln for ln in lines)
