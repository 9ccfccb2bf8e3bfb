"""Damaged and hostile dataset files: each reader names the file, what is wrong and how to
fetch it again; a damaged MNIST-1D cache is generated again; CIFAR's pickles are read by an
unpickler that refuses anything a CIFAR batch does not hold, without running it.

The stand-in datasets come from the writers of the paper-profile tests (the real on-disk
formats); tmp data folders via ``PALVIZ_DATA``.
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import pickletools
import shutil
import struct
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from test_paper_profile import write_cifar10
from test_paper_toy import write_cifar100, write_mnist

from palviz import cli
from palviz.data import DatasetFileError, load_dataset
from palviz.data import datasets as ds

CIFAR10_BATCHES = "cifar-10-batches-py"
CIFAR100_FILES = "cifar-100-python"
MNIST_RAW = ("MNIST", "raw")
WRITERS = {"cifar10": write_cifar10, "cifar100": write_cifar100, "mnist": write_mnist}


@pytest.fixture
def data(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("PALVIZ_DATA", str(folder))
    return folder


def truncate(path, keep):
    """Keep the first ``keep`` bytes of ``path`` (a fraction if below 1)."""
    raw = path.read_bytes()
    path.write_bytes(raw[: int(len(raw) * keep) if keep < 1 else keep])


def assert_names_file_and_fetch(err, path, name, problem):
    text = str(err)
    assert isinstance(err, DatasetFileError) and isinstance(err, ValueError)
    assert err.path == path and err.dataset == name
    assert str(path) in text and problem in text
    assert f"Delete it, then fetch it again with `palviz download {name}`" in text


# ---------------------------------------------------------------------------------------------
# CIFAR: what a CIFAR batch holds still loads
# ---------------------------------------------------------------------------------------------


class Python2Pickler(pickle._Pickler):
    """Pickles as Python 2's cPickle and numpy 1.x wrote the official CIFAR python batches
    (protocol 2; str and bytes as Python 2 ``str``; ndarray via
    ``numpy.core.multiarray._reconstruct``)."""

    dispatch = dict(pickle._Pickler.dispatch)

    def save_python2_str(self, obj):
        raw = obj.encode("latin1") if isinstance(obj, str) else bytes(obj)
        if len(raw) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(raw)]) + raw)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(raw)) + raw)
        self.memoize(obj)

    dispatch[str] = save_python2_str
    dispatch[bytes] = save_python2_str

    def save_global(self, obj, name=None):
        module = "numpy.core.multiarray" if obj.__name__ == "_reconstruct" else obj.__module__
        self.write(pickle.GLOBAL + f"{module}\n{obj.__name__}\n".encode())
        self.memoize(obj)


def globals_named(raw):
    """The ``module.name`` globals a protocol-2 pickle names (GLOBAL opcodes)."""
    return {arg.replace(" ", ".") for op, arg, _ in pickletools.genops(raw) if op.name == "GLOBAL"}


def official_batch(n, label_key, num_classes, seed):
    rng = np.random.default_rng(seed)
    batch = {
        b"batch_label": b"training batch 1 of 5",
        label_key.encode(): rng.integers(0, num_classes, size=n).tolist(),
        b"data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8),
        b"filenames": [f"img_{i}.png".encode() for i in range(n)],
    }
    if label_key == "fine_labels":
        batch[b"coarse_labels"] = [c // 5 for c in batch[b"fine_labels"]]
    return batch


def write_official(path, batch):
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    Python2Pickler(buffer, protocol=2).dump(batch)
    path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "folder", "files", "label_key"),
    [
        ("cifar10", CIFAR10_BATCHES, [f"data_batch_{i}" for i in range(1, 6)], "labels"),
        ("cifar100", CIFAR100_FILES, ["train"], "fine_labels"),
    ],
)
def test_batches_laid_out_as_the_official_ones_load(data, name, folder, files, label_key):
    batches = [official_batch(7, label_key, 10, seed) for seed, _ in enumerate(files)]
    for file, batch in zip(files, batches, strict=True):
        raw = write_official(data / folder / file, batch)
        assert raw[:2] == b"\x80\x02"  # protocol 2, as the official files
        assert globals_named(raw) == {
            "numpy.core.multiarray._reconstruct",
            "numpy.ndarray",
            "numpy.dtype",
        }
    x, y = load_dataset(name, "train")
    expected = np.concatenate([b[b"data"] for b in batches]).reshape(-1, 3, 32, 32)
    assert x.dtype == torch.uint8 and np.array_equal(x.numpy(), expected)
    assert y.tolist() == sum((b[label_key.encode()] for b in batches), [])


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_python3_batches_with_bytes_load_at_every_protocol(data, protocol):
    folder = data / CIFAR100_FILES
    folder.mkdir()
    batch = official_batch(5, "fine_labels", 100, protocol)
    batch[b"filenames"].append(b"")  # Python 3 pickles the empty bytes differently
    batch[b"coarse_labels"] = np.asarray(batch[b"coarse_labels"], dtype=np.int64)
    with open(folder / "test", "wb") as handle:
        pickle.dump(batch, handle, protocol=protocol)
    x, y = load_dataset("cifar100", "test")
    assert np.array_equal(x.numpy().reshape(5, -1), batch[b"data"])
    assert y.tolist() == batch[b"fine_labels"]


def test_the_stand_in_writers_files_load(data):
    write_cifar10(data, per_class_train=3, per_class_test=2)
    write_cifar100(data, per_class_train=1, per_class_test=1)
    assert load_dataset("cifar10", "train")[0].shape == (30, 3, 32, 32)
    assert load_dataset("cifar10", "test")[1].tolist() == np.repeat(np.arange(10), 2).tolist()
    assert sorted(load_dataset("cifar100", "train")[1].tolist()) == list(range(100))


# ---------------------------------------------------------------------------------------------
# CIFAR: damaged files
# ---------------------------------------------------------------------------------------------


HTML = b"<html>404 Not Found</html>"  # what a failed download through a proxy may leave


@pytest.mark.parametrize(
    ("name", "file", "split", "damage", "problem"),
    [
        ("cifar10", f"{CIFAR10_BATCHES}/data_batch_3", "train", 0.5, "it is truncated"),
        ("cifar10", f"{CIFAR10_BATCHES}/data_batch_3", "train", 0.999, "it is truncated"),
        ("cifar10", f"{CIFAR10_BATCHES}/data_batch_3", "train", 7, "it is truncated"),
        ("cifar10", f"{CIFAR10_BATCHES}/data_batch_3", "train", 0, "it is empty"),
        ("cifar10", f"{CIFAR10_BATCHES}/test_batch", "test", HTML, "it is not a readable pickle"),
        ("cifar100", f"{CIFAR100_FILES}/train", "train", 0.6, "it is truncated"),
        ("mnist", "MNIST/raw/train-images-idx3-ubyte.gz", "train", 0.5, "truncated (EOFError"),
        ("mnist", "MNIST/raw/t10k-labels-idx1-ubyte.gz", "test", HTML, "not a readable .gz file"),
    ],
)
def test_a_damaged_file_is_named_with_the_download(data, name, file, split, damage, problem):
    WRITERS[name](data, 2, 1)
    path = data / file
    if isinstance(damage, bytes):
        path.write_bytes(damage)
    else:
        truncate(path, damage)
    with pytest.raises(DatasetFileError) as err:
        load_dataset(name, split)
    assert_names_file_and_fetch(err.value, path, name, problem)
    load_dataset(name, "test" if split == "train" else "train")  # the other split is sound


def _data(n=4):
    return np.zeros((n, 3072), dtype=np.uint8)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ([1, 2, 3], "not a CIFAR batch: it holds a list, not a dict"),
        ({"labels": [0]}, "not a CIFAR batch: no ['data'] key"),
        ({"data": _data(), "fine_labels": [0] * 4}, "no ['labels'] key"),
        ({"data": [[0] * 3072], "labels": [0]}, "its data is a list"),
        ({"data": _data().astype(np.float32), "labels": [0] * 4}, "its data is float32"),
        ({"data": np.zeros((4, 1024), np.uint8), "labels": [0] * 4}, "of shape (4, 1024)"),
        ({"data": _data(), "labels": [0] * 3}, "are not 4 class numbers"),
        ({"data": _data(), "labels": ["a"] * 4}, "are not 4 class numbers"),
        ({"data": _data(), "labels": [0, 1, 2, 10]}, "run from 0 to 10, outside 0..9"),
        ({"data": _data(), "labels": [0, 1, -1, 2]}, "run from -1 to 2"),
    ],
)
def test_a_pickle_that_is_not_a_cifar_batch_is_named(data, content, problem):
    path = data / CIFAR10_BATCHES / "test_batch"
    path.parent.mkdir()
    path.write_bytes(pickle.dumps(content))
    with pytest.raises(DatasetFileError) as err:
        load_dataset("cifar10", "test")
    assert_names_file_and_fetch(err.value, path, "cifar10", problem)


# ---------------------------------------------------------------------------------------------
# CIFAR: hostile pickles are refused, not run
# ---------------------------------------------------------------------------------------------


class Planted:
    """Unpickles by calling ``call(*args)``: each call below creates the marker file."""

    def __init__(self, call, *args):
        self.call, self.args = call, args

    def __reduce__(self):
        return self.call, self.args


def _payloads(marker):
    return {
        "open": (Planted(open, str(marker), "w"), "io.open"),
        "os.system": (Planted(os.system, f"touch '{marker}'"), f"{os.name}.system"),
        "eval": (
            Planted(eval, f"__import__('pathlib').Path({str(marker)!r}).touch()"),
            "builtins.eval",
        ),
        "numpy.save": (Planted(np.save, str(marker), np.zeros(1)), "numpy.save"),
    }


@pytest.mark.parametrize("payload", ["open", "os.system", "eval", "numpy.save"])
@pytest.mark.parametrize(
    ("name", "file", "split"),
    [
        ("cifar10", f"{CIFAR10_BATCHES}/data_batch_1", "train"),
        ("cifar100", f"{CIFAR100_FILES}/test", "test"),
    ],
)
@pytest.mark.parametrize("where", ["whole file", "inside a batch"])
def test_a_planted_pickle_is_refused_and_not_run(data, tmp_path, payload, name, file, split, where):
    marker = tmp_path / "planted-marker"
    planted, refused_global = _payloads(marker)[payload]
    if where == "inside a batch":  # a sound-looking batch, the payload among its labels
        planted = {b"data": _data(2), b"labels": [0, planted], b"fine_labels": [0, planted]}
    raw = pickle.dumps(planted)

    # The payload is live: plain pickle runs it (numpy.save adds .npy to the name).
    pickle.loads(raw)
    made = marker if marker.exists() else marker.with_name(marker.name + ".npy")
    assert made.exists()
    made.unlink()

    # a sound data folder, one file of it replaced by the planted one
    WRITERS[name](data, 1, 1)
    path = data / file
    path.write_bytes(raw)
    with pytest.raises(DatasetFileError) as err:
        load_dataset(name, split)
    assert_names_file_and_fetch(
        err.value, path, name, f"its pickle asks for {refused_global}, which a CIFAR batch"
    )
    assert "refused, not run" in str(err.value)
    assert not marker.exists() and not marker.with_name(marker.name + ".npy").exists()


def test_codecs_encode_is_admitted_only_to_make_latin1_bytes(data):
    import _codecs

    path = data / CIFAR10_BATCHES / "test_batch"
    path.parent.mkdir()
    # what Python 3 writes for bytes under protocol 2 loads ...
    path.write_bytes(pickle.dumps({"data": _data(1), "labels": [0], "x": b"\xff"}, protocol=2))
    assert "_codecs.encode" in globals_named(path.read_bytes())
    assert load_dataset("cifar10", "test")[1].tolist() == [0]
    # ... another codec is refused
    path.write_bytes(pickle.dumps(Planted(_codecs.encode, "abc", "rot13"), protocol=2))
    with pytest.raises(DatasetFileError, match="calls _codecs.encode other than to make bytes"):
        load_dataset("cifar10", "test")


def test_the_error_crosses_process_boundaries(data):
    write_cifar10(data, per_class_train=1, per_class_test=1)
    path = data / CIFAR10_BATCHES / "test_batch"
    truncate(path, 0.5)
    with pytest.raises(DatasetFileError) as err:
        load_dataset("cifar10", "test")
    copy = pickle.loads(pickle.dumps(err.value))
    assert type(copy) is DatasetFileError and str(copy) == str(err.value)
    assert (copy.path, copy.dataset, copy.problem) == (path, "cifar10", err.value.problem)


# ---------------------------------------------------------------------------------------------
# MNIST: idx files, plain and gzipped
# ---------------------------------------------------------------------------------------------


def mnist_raw(data):
    return data.joinpath(*MNIST_RAW)


def gunzip_all(raw):
    """Leave the plain idx files next to the .gz ones, as torchvision's download does."""
    for gz in raw.glob("*.gz"):
        gz.with_suffix("").write_bytes(gzip.decompress(gz.read_bytes()))


def _edit(path, change):
    raw = bytearray(path.read_bytes())
    path.write_bytes(bytes(change(raw)))


@pytest.mark.parametrize(
    ("file", "change", "problem"),
    [
        ("train-images-idx3-ubyte", lambda b: b[:-1], "truncated: 15679 bytes of data"),
        ("train-images-idx3-ubyte", lambda b: b + b"\0", "wrong size: 15681 bytes of data"),
        ("train-labels-idx1-ubyte", lambda b: b[:5], "shorter than its 8-byte header"),
        ("train-labels-idx1-ubyte", lambda b: b"", "it is empty"),
        ("train-labels-idx1-ubyte", lambda b: b[:3], "truncated: 3 bytes"),
        # the images' magic on the labels file: 3 dimensions, not 1
        ("train-labels-idx1-ubyte", lambda b: b[:3] + b"\x03" + b[4:], "0x00000803"),
        ("train-images-idx3-ubyte", lambda b: b[:2] + b"\x0d" + b[3:], "wrong magic number"),
        (
            "train-images-idx3-ubyte",
            lambda b: b[:11] + b"\x1d" + b[12:],
            "[20, 29, 28], expected N x (28, 28)",
        ),
    ],
)
def test_plain_idx_of_wrong_size_or_magic_names_file_and_download(data, file, change, problem):
    write_mnist(data, per_class_train=2, per_class_test=1)  # 20 training images: 15680 bytes
    raw = mnist_raw(data)
    gunzip_all(raw)
    path = raw / file
    _edit(path, change)
    with pytest.raises(DatasetFileError) as err:
        load_dataset("mnist", "train")
    assert_names_file_and_fetch(err.value, path, "mnist", problem)
    # the advice holds: without the damaged plain file, its intact .gz twin is read
    path.unlink()
    assert load_dataset("mnist", "train")[0].shape == (20, 1, 28, 28)


def test_idx_labels_that_do_not_match_the_images_are_named(data):
    write_mnist(data, per_class_train=2, per_class_test=1)
    path = mnist_raw(data) / "t10k-labels-idx1-ubyte.gz"
    labels = gzip.decompress(path.read_bytes())[8:]
    for body, problem in (
        (labels[:-1], "it holds 9 labels, t10k-images-idx3-ubyte.gz holds 10 images"),
        (labels[:-1] + b"\x0a", "its labels run up to 10, outside 0..9"),
    ):
        path.write_bytes(gzip.compress(struct.pack(">II", 0x0801, len(body)) + body))
        with pytest.raises(DatasetFileError) as err:
            load_dataset("mnist", "test")
        assert_names_file_and_fetch(err.value, path, "mnist", problem)


# ---------------------------------------------------------------------------------------------
# The advice holds: delete the damaged file, and `palviz download NAME` fetches it again
# ---------------------------------------------------------------------------------------------


def _fake_torchvision(monkeypatch, tmp_path, name, calls):
    """A stand-in for torchvision whose dataset classes record the call and put back the
    missing files (from a fresh stand-in dataset), as the real download does. (Importing the
    real torchvision just to replace one attribute takes seconds.)"""
    fresh = tmp_path / "fresh"
    WRITERS[name](fresh, 2, 1)

    def fetch(root, train, download):
        calls.append((name, train, download))
        for source in fresh.rglob("*"):
            target = Path(root) / source.relative_to(fresh)
            if source.is_file() and not target.exists():
                shutil.copyfile(source, target)

    def refuse(*args, **kwargs):
        raise AssertionError("the download asked torchvision for another dataset")

    classes = {"cifar10": "CIFAR10", "cifar100": "CIFAR100", "mnist": "MNIST"}
    datasets = {cls: fetch if key == name else refuse for key, cls in classes.items()}
    monkeypatch.setitem(
        sys.modules,
        "torchvision",
        types.SimpleNamespace(datasets=types.SimpleNamespace(**datasets)),
    )
    return fresh


@pytest.mark.parametrize(
    ("name", "damaged"),
    [
        ("cifar10", f"{CIFAR10_BATCHES}/test_batch"),
        ("cifar100", f"{CIFAR100_FILES}/train"),
        ("mnist", "MNIST/raw/t10k-images-idx3-ubyte.gz"),
    ],
)
def test_delete_then_palviz_download_fetches_the_file_again(
    data, tmp_path, monkeypatch, capsys, name, damaged
):
    calls = []
    fresh = _fake_torchvision(monkeypatch, tmp_path, name, calls)
    shutil.copytree(fresh, data, dirs_exist_ok=True)
    path = data / damaged
    truncate(path, 0.5)
    # with the damaged file there, the download reads it and stops at it (it fetches nothing),
    # saying so in one line that names the file
    assert cli.main(["download", name]) == 1
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("palviz download: ") and str(path) in said[0]
    assert calls == []
    path.unlink()  # as the message says
    assert cli.main(["download", name]) == 0
    assert calls and all(call[2] for call in calls)
    assert path.read_bytes() == (fresh / damaged).read_bytes()
    load_dataset(name, "train")
    load_dataset(name, "test")


# ---------------------------------------------------------------------------------------------
# MNIST-1D: a damaged cache is generated again
# ---------------------------------------------------------------------------------------------

MNIST1D_CACHE = f"mnist1d/mnist1d_n{ds.MNIST1D_NUM_SAMPLES}_seed{ds.MNIST1D_SEED}.npz"


@pytest.fixture(scope="module")
def fresh_mnist1d(tmp_path_factory):
    """A fresh generation (~4 s), in a folder of its own."""
    root = tmp_path_factory.mktemp("fresh-mnist1d")
    splits = {split: load_dataset("mnist1d", split, root=root) for split in ("train", "test")}
    return root / MNIST1D_CACHE, splits


def _assert_loads_as(root, splits):
    for split, (x, y) in splits.items():
        x2, y2 = load_dataset("mnist1d", split, root=root)
        assert torch.equal(x2, x) and torch.equal(y2, y)


def test_a_truncated_mnist1d_cache_is_generated_again(fresh_mnist1d, tmp_path):
    cache, splits = fresh_mnist1d
    path = tmp_path / MNIST1D_CACHE
    path.parent.mkdir()
    shutil.copyfile(cache, path)
    truncate(path, 0.5)
    with pytest.warns(RuntimeWarning, match="generating it again") as caught:
        x, y = load_dataset("mnist1d", "train", root=tmp_path)
    assert str(path) in str(caught[0].message)
    assert torch.equal(x, splits["train"][0]) and torch.equal(y, splits["train"][1])
    # the cache was replaced atomically (no temporary left) and now loads without a warning
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    assert path.read_bytes() == cache.read_bytes()
    _assert_loads_as(tmp_path, splits)


def _write_npz(path, **arrays):
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def _with(arrays, **changes):
    return {**arrays, **changes}


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda p, a: p.write_bytes(b""), "not a readable .npz archive"),
        (lambda p, a: p.write_bytes(b"PK\x03\x04 not really"), "not a readable .npz archive"),
        (lambda p, a: p.write_bytes(pickle.dumps(a)), "not a readable .npz archive"),
        (lambda p, a: np.save(p, a["x"]), "not an .npz archive but a single .npy array"),
        (
            lambda p, a: _write_npz(p, x=a["x"], y=a["y"]),
            "the arrays ['x_test', 'y_test'] are missing",
        ),
        (
            lambda p, a: _write_npz(p, **_with(a, x=a["x"][:, :39])),
            "x is float32 of shape (9600, 39)",
        ),
        (lambda p, a: _write_npz(p, **_with(a, y=a["y"][:-1])), "y is int64 of shape (9599,)"),
        (
            lambda p, a: _write_npz(p, **_with(a, y_test=a["y_test"] + 10)),
            "x_test / y_test hold values out of range",
        ),
        (
            lambda p, a: _write_npz(p, **_with(a, x=a["x"][:-1], y=a["y"][:-1])),
            "it holds 11999 samples",
        ),
    ],
)
def test_any_damaged_mnist1d_cache_is_generated_again(
    fresh_mnist1d, tmp_path, monkeypatch, damage, problem
):
    cache, splits = fresh_mnist1d
    with np.load(cache) as loaded:
        arrays = dict(loaded)
    # The generation itself is timed once, above: here it is the fresh arrays, counted.
    generated = []
    monkeypatch.setattr(ds, "_mnist1d_generate", lambda: generated.append(1) or dict(arrays))
    path = tmp_path / MNIST1D_CACHE
    path.parent.mkdir()
    damage(path, arrays)
    if not path.exists():  # np.save adds .npy
        path.with_name(path.name + ".npy").rename(path)
    with pytest.warns(RuntimeWarning) as caught:
        load_dataset("mnist1d", "test", root=tmp_path)
    message = str(caught[0].message)
    assert str(path) in message and problem in message and "generating it again" in message
    assert generated == [1]
    _assert_loads_as(tmp_path, splits)
    assert generated == [1]


def test_mnist1d_on_a_data_folder_that_cannot_be_written_is_used_uncached(
    fresh_mnist1d, tmp_path, monkeypatch
):
    cache, splits = fresh_mnist1d
    with np.load(cache) as loaded:
        arrays = dict(loaded)
    monkeypatch.setattr(ds, "_mnist1d_generate", lambda: dict(arrays))

    def read_only(path, **arrays):
        raise OSError(30, "Read-only file system", str(path))

    monkeypatch.setattr(ds, "save_npz", read_only)
    with pytest.warns(RuntimeWarning, match="could not write the MNIST-1D cache") as caught:
        x, y = load_dataset("mnist1d", "train", root=tmp_path)
    assert str(tmp_path / MNIST1D_CACHE) in str(caught[0].message)
    assert torch.equal(x, splits["train"][0]) and torch.equal(y, splits["train"][1])
