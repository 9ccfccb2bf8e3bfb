"""The ``paper`` branch of notebooks 06, 07 and 08 end to end at toy size (``PALVIZ_TOY=1``: the
same datasets, networks and recipes, 1 epoch on a few hundred samples), on stand-in CIFAR-10,
CIFAR-100 and MNIST files in their real on-disk formats."""

import gzip
import json
import os
import pickle
import struct

import numpy as np
import pytest
from notebook_support import ROOT
from notebook_support import execute as _execute
from test_paper_profile import write_cifar10

from palviz import cli
from palviz import experiments as ex
from palviz.data import long_tail_counts
from palviz.experiments.runspec import TOY


def write_cifar100(root, per_class_train=120, per_class_test=2, seed=0):
    """``root/cifar-100-python``: ``train``, ``test`` and ``meta`` pickles with ``data``
    (N x 3072 uint8) and ``fine_labels`` / ``coarse_labels``."""
    rng = np.random.default_rng(seed)
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)

    def batch(labels):
        labels = list(map(int, labels))
        data = rng.integers(0, 100, size=(len(labels), 3072)) + np.array(labels)[:, None]
        return {
            "filenames": [],
            "batch_label": "stand-in",
            "fine_labels": labels,
            "coarse_labels": [c // 5 for c in labels],
            "data": data.astype(np.uint8),
        }

    for name, n in (("train", per_class_train), ("test", per_class_test)):
        with open(folder / name, "wb") as handle:
            pickle.dump(batch(rng.permutation(np.repeat(np.arange(100), n))), handle)
    with open(folder / "meta", "wb") as handle:
        pickle.dump({"fine_label_names": [f"c{i}" for i in range(100)]}, handle)


def write_mnist(root, per_class_train=30, per_class_test=5, seed=0):
    """``root/MNIST/raw``: the four gzipped idx files (magic 0x0803 / 0x0801, big-endian
    sizes)."""
    rng = np.random.default_rng(seed)
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for prefix, n in (("train", per_class_train), ("t10k", per_class_test)):
        labels = rng.permutation(np.repeat(np.arange(10), n)).astype(np.uint8)
        images = rng.integers(0, 60, size=(len(labels), 28, 28)) + 19 * labels[:, None, None]
        with gzip.open(raw / f"{prefix}-images-idx3-ubyte.gz", "wb") as handle:
            handle.write(struct.pack(">IIII", 0x0803, len(labels), 28, 28))
            handle.write(images.astype(np.uint8).tobytes())
        with gzip.open(raw / f"{prefix}-labels-idx1-ubyte.gz", "wb") as handle:
            handle.write(struct.pack(">II", 0x0801, len(labels)))
            handle.write(labels.tobytes())


@pytest.fixture
def toy_paper(tmp_path, monkeypatch):
    for name in ("DATA", "RUNS", "FIGURES", "BUILD"):
        monkeypatch.setenv(f"PALVIZ_{name}", str(tmp_path / name.lower()))
    monkeypatch.setenv("PALVIZ_TOY", "1")
    data = tmp_path / "data"
    # 100 per class after the paper profile's 20 held out: rho = 100 keeps one of the rarest
    write_cifar10(data, per_class_train=120, per_class_test=10)
    write_cifar100(data)
    write_mnist(data)
    return tmp_path


def test_toy_runs_keep_the_recipe_at_a_tiny_size(toy_paper):
    spec = ex.lt_spec("LDAM-DRW", pal=True, profile="paper", dataset="cifar100")
    result = ex.run(spec)
    m = result.metrics
    assert spec.toy == m["toy"] == TOY == {"epochs": 1, "train": 100, "test": 100}
    assert len(m["history"]) == 1 and spec.train.epochs == 200
    assert m["profile_sizes"]["train"] <= TOY["train"] + 100 and min(m["train_counts"]) >= 1
    assert m["profile_sizes"]["test"] == TOY["test"]
    assert m["train_counts"][0] > m["train_counts"][-1]  # still long-tailed
    # the long-tailed split before the toy reduction, recorded for rendering without the data
    split = long_tail_counts(100, 100, 100)
    assert m["split_train_counts"] == split and sum(m["train_counts"]) < sum(split)
    assert ex.recorded_split_counts([spec]) == split
    assert result.features()["features"].shape[1] == 64  # ResNet-32
    assert json.loads((result.path / "spec.json").read_text())["toy"] == TOY
    os.environ.pop("PALVIZ_TOY")
    real = ex.lt_spec("LDAM-DRW", pal=True, profile="paper", dataset="cifar100")
    assert real.toy is None and real == spec.replace(toy=None)
    assert not ex.is_cached(real)  # a toy run never stands in for a real one


SLOW = pytest.mark.skipif(not os.environ.get("PALVIZ_SLOW"), reason="set PALVIZ_SLOW=1")
_FOLDERS = ("DATA", "RUNS", "FIGURES", "BUILD")


#: Notebooks 06 and 08 of the paper profile cut down through their parameters cells: four of
#: 06's methods (CE with PAL) on both datasets at rho = 100, on two seeds (the fewest whose
#: paired difference has an interval; 20 runs), and 08 as it is (4 runs).
TOY_06_08 = {
    "06": {
        "PROFILE": "paper",
        "METHODS": ["CE", "LDAM-DRW", "ELM-DRW", "ETF+DR"],
        "PAL_METHODS": ["CE"],
        "ORIENTATIONS": [],
        "SEEDS": [0, 1],
        "RATIOS": [100],
    },
    "08": {"PROFILE": "paper"},
}


@pytest.fixture(scope="module")
def toy_cache(tmp_path_factory):
    """Notebooks 06 and 08 of the paper profile trained and rendered once at toy size on the
    stand-in files (:data:`TOY_06_08`; 08 reuses runs of 06); the tests below read that cache."""
    root = tmp_path_factory.mktemp("toy_paper")
    with pytest.MonkeyPatch.context() as patch:
        for name in _FOLDERS:
            patch.setenv(f"PALVIZ_{name}", str(root / name.lower()))
        patch.setenv("PALVIZ_TOY", "1")
        data = root / "data"
        write_cifar10(data, per_class_train=120, per_class_test=10)
        write_cifar100(data)
        write_mnist(data)
        patch.setenv("PALVIZ_ROOT", str(ROOT))
        patch.setenv("MPLBACKEND", "Agg")
        for number, parameters in TOY_06_08.items():
            _execute(number, root / f"{number}.ipynb", parameters)
        yield root


def test_paper_branch_of_notebooks_06_and_08_runs_at_toy_size(toy_cache):
    for number in ("06", "08"):
        assert list((toy_cache / "figures" / "paper").glob(f"{number}_*.png")), number


def test_notebook_06_paper_branch_puts_the_published_numbers_beside_the_toy_runs(toy_cache):
    """The results table of 06 holds a "published (source)" column: on CIFAR-10-LT at
    rho = 100, LDAM-DRW's row lists the LDAM-DRW paper's 77.03 beside the measured cells."""
    (path,) = (toy_cache / "figures" / "paper").glob("06_*results.md")
    text = path.read_text()
    block = text.split("**CIFAR-10-LT, rho = 100**")[1].split("**CIFAR-")[0]
    assert "published (source)" in block
    row = next(line for line in block.splitlines() if line.startswith("| LDAM-DRW "))
    assert "77.03 (LDAM-DRW paper)" in row
    assert "OpenLT" in text.split("**CIFAR-100-LT, rho = 100**")[1]


@pytest.mark.slow
@SLOW
def test_paper_branch_of_notebook_07_runs_at_toy_size(toy_paper):
    """About 300 runs, a third of them ResNet-34: tens of minutes on a CPU."""
    assert cli.main(["figures", "--profile", "paper", "--only", "07"]) == 0
    assert list((toy_paper / "figures" / "paper").glob("07_*.png"))


def _rendered(figures):
    """What a render leaves that a reader reads: the claims, the result tables, the figures."""
    files = sorted(p for p in figures.iterdir() if p.suffix in (".csv", ".md", ".png"))
    return {p.name: p.read_bytes() for p in files}


def test_packed_paper_results_render_without_a_gpu_or_the_datasets(
    toy_cache, tmp_path, monkeypatch
):
    """A teacher packs the trained runs; a student with an empty cache and no datasets
    unpacks them and renders 06 and 08 of the paper profile: the same figures, tables and
    claims, and nothing trains."""
    archive = tmp_path / "paper.tar.gz"
    for name in _FOLDERS:
        monkeypatch.setenv(f"PALVIZ_{name}", str(toy_cache / name.lower()))
    monkeypatch.setenv("PALVIZ_TOY", "1")
    monkeypatch.setenv("PALVIZ_ROOT", str(ROOT))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    assert (
        cli.main(["runs", "pack", "--profile", "paper", "--only", "06", "08", "-o", str(archive)])
        == 0
    )
    before = _rendered(toy_cache / "figures" / "paper")
    for name in _FOLDERS:  # the student's machine: an empty cache and no data
        monkeypatch.setenv(f"PALVIZ_{name}", str(tmp_path / name.lower()))
    (tmp_path / "data").mkdir()
    assert cli.main(["runs", "unpack", str(archive)]) == 0
    unpacked = sorted(p.name for p in (tmp_path / "runs").iterdir() if not p.name.startswith("."))
    for number, parameters in TOY_06_08.items():
        _execute(number, tmp_path / f"{number}.ipynb", parameters)
    after = _rendered(tmp_path / "figures" / "paper")
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir() if not p.name.startswith("."))
    assert runs == unpacked, "the render trained runs or the archive lacked some"
    assert not list((tmp_path / "data").iterdir())  # nothing was downloaded
    assert sorted(after) == sorted(before)
    text = [n for n in before if not n.endswith(".png")]
    assert text and all(after[n] == before[n] for n in text), "tables or claims differ"
    png = [n for n in before if n.endswith(".png")]
    differ = [n for n in png if after[n] != before[n]]
    assert not differ, f"figures differ after unpacking: {differ}"


def test_the_paper_profile_without_its_runs_or_data_says_what_is_missing(
    tmp_path, monkeypatch, capsys
):
    for name in _FOLDERS:
        monkeypatch.setenv(f"PALVIZ_{name}", str(tmp_path / name.lower()))
    assert cli.main(["figures", "--profile", "paper", "--only", "06"]) == 2
    err = capsys.readouterr().err
    assert "cifar10" in err and "palviz download" in err and "palviz runs unpack" in err


#: Notebook 07 of the paper profile cut down through its parameters cell: two methods, one seed,
#: eta 0.4 of each kind on each dataset, and the s-sweep at eta 0.4 (19 runs, 4 of them ResNet-34).
TOY_07 = {"PROFILE": "paper", "METHODS": ["CE", "CE+FNPAL"], "SEEDS": [0], "RATES": [0.4]}


def test_notebook_07_paper_branch_at_toy_size_packs_and_renders_without_the_data(
    tmp_path, monkeypatch
):
    """The paper branch of 07 at toy size, restricted through its parameters cell, runs on the
    stand-in MNIST, CIFAR-10 and CIFAR-100 files with every check of the notebook holding (the
    realised noise follows the flip rule); its runs packed and unpacked into an empty cache
    with no data render the same tables, claims and figures, and nothing trains."""
    monkeypatch.setenv("PALVIZ_ROOT", str(ROOT))
    monkeypatch.setenv("PALVIZ_TOY", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")

    def machine(name):
        for folder in _FOLDERS:
            monkeypatch.setenv(f"PALVIZ_{folder}", str(tmp_path / name / folder.lower()))
        return tmp_path / name

    teacher = machine("teacher")
    write_cifar10(teacher / "data", per_class_train=120, per_class_test=10)
    write_cifar100(teacher / "data")
    write_mnist(teacher / "data")
    _execute("07", tmp_path / "teacher.ipynb", TOY_07)
    cells = json.loads((tmp_path / "teacher.ipynb").read_text())["cells"]
    shown = json.dumps([c.get("outputs", []) for c in cells])  # what the reader sees printed
    assert "**eps-softmax paper, CIFAR-10**" in shown and "Not run here" not in shown
    trained = sorted(p.name for p in (teacher / "runs").iterdir() if not p.name.startswith("."))
    archive = tmp_path / "paper-07.tar.gz"
    assert cli.main(["runs", "pack", "--profile", "paper", "--only", "07", "-o", str(archive)]) == 0
    before = _rendered(teacher / "figures" / "paper")

    student = machine("student")
    (student / "data").mkdir(parents=True)
    assert cli.main(["runs", "unpack", str(archive)]) == 0
    _execute("07", tmp_path / "student.ipynb", TOY_07)
    after = _rendered(student / "figures" / "paper")
    runs = sorted(p.name for p in (student / "runs").iterdir() if not p.name.startswith("."))
    assert runs == trained, "the render trained runs or the archive lacked some"
    assert not list((student / "data").iterdir())  # nothing was downloaded
    assert sorted(after) == sorted(before) and any(n.endswith(".png") for n in before)
    differ = [n for n in before if after[n] != before[n]]
    assert not differ, f"tables, claims or figures differ after unpacking: {differ}"
