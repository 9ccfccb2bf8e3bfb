"""The ``paper`` profile's code path, on small stand-in files in CIFAR's real on-disk format
(the real datasets need a download, which no test may do)."""

import pickle

import numpy as np
import pytest

from palviz import cli
from palviz import experiments as ex
from palviz.cli import figures as cli_figures


def write_cifar10(root, per_class_train=30, per_class_test=10, seed=0):
    """``root/cifar-10-batches-py`` as torchvision leaves it: five pickled training batches,
    a test batch and the meta file, each a dict with ``data`` (N x 3072 uint8, channel-major)
    and ``labels``."""
    rng = np.random.default_rng(seed)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)

    def batch(labels):
        labels = list(map(int, labels))
        # noise around a class-dependent grey level, so the classes are learnable
        noise = rng.integers(0, 56, size=(len(labels), 3072))
        data = (noise + 20 * np.array(labels)[:, None]).astype(np.uint8)
        return {"batch_label": "stand-in", "labels": labels, "data": data, "filenames": []}

    train_labels = rng.permutation(np.repeat(np.arange(10), per_class_train))
    for i, part in enumerate(np.array_split(train_labels, 5), start=1):
        with open(folder / f"data_batch_{i}", "wb") as handle:
            pickle.dump(batch(part), handle)
    with open(folder / "test_batch", "wb") as handle:
        pickle.dump(batch(np.repeat(np.arange(10), per_class_test)), handle)
    with open(folder / "batches.meta", "wb") as handle:
        pickle.dump({"label_names": [f"class{i}" for i in range(10)]}, handle)


@pytest.fixture
def paper_env(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    return tmp_path


def test_paper_long_tailed_run_trains_resnet32_on_cifar_format_files(paper_env):
    write_cifar10(paper_env / "data")
    setup = ex.long_tailed_setup("paper")
    assert set(setup["networks"].values()) == {"resnet32"} and setup["train"]["epochs"] == 200
    assert setup["train"]["milestones"] == (160, 180) and setup["train"]["drw_epoch"] == 160
    # The published recipe, shortened to two epochs with DRW switched on in the second.
    spec = ex.lt_spec(
        "LDAM-DRW",
        pal=True,
        imbalance_ratio=10,
        profile="paper",
        dataset="cifar10",
        epochs=2,
        batch_size=16,
        warmup_epochs=1,
        drw_epoch=1,
    )
    assert spec.train.augment and spec.train.mean == pytest.approx((0.4914, 0.4822, 0.4465))
    result = ex.run(spec)
    m = result.metrics
    n_max = 30 - spec.held_out  # the paper profile's held-out images set aside first
    assert spec.held_out == 20 and m["train_counts"][0] == n_max
    assert m["train_counts"][-1] == int(n_max / 10)
    assert m["profile_sizes"] == {"train": sum(m["train_counts"]), "test": 100}
    assert len(m["history"]) == 2
    assert result.features()["features"].shape == (100, 64)  # ResNet-32's 64-d features


def test_paper_profile_refuses_to_start_without_the_datasets(paper_env, capsys):
    code = cli.main(["figures", "--profile", "paper", "--only", "06"])
    assert code == 2
    err = capsys.readouterr().err
    assert "palviz download cifar10 cifar100" in err
    assert "--download" in err


def test_missing_dataset_error_names_the_download_command(paper_env):
    from palviz.data import load_dataset

    with pytest.raises(FileNotFoundError, match="palviz download cifar100"):
        load_dataset("cifar100", "train")


def test_runs_command_reports_an_empty_cache(paper_env, capsys):
    assert cli.main(["runs"]) == 0
    assert "no cached runs" in capsys.readouterr().out
    assert cli.main(["runs", "--clear"]) == 0
    assert "deleted 0 cached run(s)" in capsys.readouterr().out


def test_figures_only_refuses_an_unknown_notebook_number():
    with pytest.raises(SystemExit, match="no notebook numbered"):
        cli_figures.notebooks(["99"])
    assert [p.name[:2] for p in cli_figures.notebooks(["0"])] == ["00"]
