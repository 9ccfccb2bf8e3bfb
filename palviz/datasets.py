"""Which datasets palviz loads, and how it reads them from disk.

:func:`load_dataset` returns one split of a dataset; :func:`dataset_info` says what a batch
pipeline and a model need to know about it. The real datasets are read in their on-disk
formats by the small readers at the end of this module (CIFAR's python pickles, MNIST's idx
files), so tests can write stand-in files in the same format. The data policy (embedded
datasets never touch the network; downloaded ones only when asked) is described in
:mod:`palviz.data`, which re-exports every public name here.
"""

from __future__ import annotations

import gzip
import pickle
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from palviz.checks import DATASETS, check_choice, check_dataset
from palviz.files import data_dir, save_npz

__all__ = [
    "DATASETS",
    "MNIST1D_NUM_SAMPLES",
    "MNIST1D_SEED",
    "DatasetInfo",
    "dataset_info",
    "load_dataset",
]

# Per-channel statistics of the published CIFAR set-ups (docs/reference.md 6). CIFAR-100 uses the
# same constants, as the LDAM-DRW reference code does for both datasets.
_CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
_CIFAR_STD = (0.2023, 0.1994, 0.2010)

# MNIST-1D: 12000 generated samples (the package default is 5000), split 80/20 by the
# generator, i.e. ~960 training samples per class. A rho = 100 long-tailed subset then keeps
# ~9 samples in its rarest class instead of ~4. Seed 42 is the package default.
MNIST1D_NUM_SAMPLES = 12000
MNIST1D_SEED = 42

# digits' per-channel statistics, computed from its training split (on the 0..1 scale of
# the uint8 images); tests/test_data.py recomputes them.
_DIGITS_MEAN = (0.3062,)
_DIGITS_STD = (0.3769,)


@dataclass(frozen=True)
class DatasetInfo:
    """What a batch pipeline and a model need to know about a dataset.

    Attributes:
        name: one of :data:`DATASETS`.
        num_classes: number of classes ``C``.
        kind: ``"image"`` (``uint8`` ``N x C x H x W``) or ``"vector"`` (float32 ``N x D``).
        shape: shape of one sample, e.g. ``(3, 32, 32)`` or ``(40,)``.
        mean, std: per-channel normalisation statistics (images, on the ``[0, 1]`` scale);
            ``None`` for vectors (MNIST-1D is standardised by its generator).
        augment: whether the published set-up uses random crop + horizontal flip.
    """

    name: str
    num_classes: int
    kind: str
    shape: tuple[int, ...]
    mean: tuple[float, ...] | None
    std: tuple[float, ...] | None
    augment: bool


def dataset_info(name: str) -> DatasetInfo:
    """The :class:`DatasetInfo` of ``name`` (one of :data:`DATASETS`).

    digits' mean and std are those of its training split (rounded to 4 decimals);
    CIFAR-100 shares CIFAR-10's constants, as in the reference code of the published tables.
    """
    check_dataset("name", name)
    if name == "mnist1d":
        return DatasetInfo(name, 10, "vector", (40,), None, None, False)
    if name == "digits":
        return DatasetInfo(name, 10, "image", (1, 8, 8), _DIGITS_MEAN, _DIGITS_STD, False)
    if name == "mnist":
        return DatasetInfo(name, 10, "image", (1, 28, 28), (0.1307,), (0.3081,), False)
    if name == "cifar10":
        return DatasetInfo(name, 10, "image", (3, 32, 32), _CIFAR_MEAN, _CIFAR_STD, True)
    return DatasetInfo(name, 100, "image", (3, 32, 32), _CIFAR_MEAN, _CIFAR_STD, True)


def load_dataset(
    name: str,
    split: str = "train",
    root: str | Path | None = None,
    download: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Load one split of a dataset.

    Args:
        name: one of :data:`DATASETS`.
        split: ``"train"`` or ``"test"``.
        root: data folder; ``None`` means the project's ``data/`` (:func:`palviz.files.data_dir`).
        download: let torchvision fetch missing MNIST / CIFAR files into ``root``. Ignored by
            the embedded datasets, which never need the network.

    Returns:
        ``(x, y)``: ``x`` is ``uint8`` ``[N, C, H, W]`` for images (MNIST ``1 x 28 x 28``,
        CIFAR ``3 x 32 x 32``, digits ``1 x 8 x 8`` with the 0..16 values times 16, clipped
        to 255) or float32 ``[N, 40]`` for MNIST-1D; ``y`` is int64 ``[N]``.

    Sizes: MNIST-1D 9600 / 2400 (generated once, cached in
    ``root/mnist1d/mnist1d_n12000_seed42.npz``), digits 1437 / 360 (stratified 80/20,
    ``random_state=0``), MNIST 60000 / 10000, CIFAR 50000 / 10000.

    Raises:
        ValueError: unknown ``name`` or ``split``.
        FileNotFoundError: MNIST / CIFAR files missing and ``download=False``; the message
            gives the command that fetches them.
    """
    check_dataset("name", name)
    check_choice("split", split, ("train", "test"))
    root_path = Path(root).expanduser() if root is not None else data_dir()
    if name == "mnist1d":
        return _load_mnist1d(split, root_path)
    if name == "digits":
        return _load_digits(split)
    if name == "mnist":
        return _load_mnist(split, root_path, download, root is not None)
    return _load_cifar(name, split, root_path, download, root is not None)


def _load_mnist1d(split: str, root: Path) -> tuple[torch.Tensor, torch.Tensor]:
    path = root / "mnist1d" / f"mnist1d_n{MNIST1D_NUM_SAMPLES}_seed{MNIST1D_SEED}.npz"
    if not path.is_file():
        from mnist1d.data import get_dataset_args, make_dataset

        args = get_dataset_args()
        args.num_samples = MNIST1D_NUM_SAMPLES
        args.seed = MNIST1D_SEED
        # make_dataset reseeds Python's and NumPy's global generators: put them back after.
        np_state, py_state = np.random.get_state(), random.getstate()
        try:
            data = make_dataset(args)
        finally:
            np.random.set_state(np_state)
            random.setstate(py_state)
        save_npz(
            path,
            x=np.asarray(data["x"], dtype=np.float32),
            y=np.asarray(data["y"], dtype=np.int64),
            x_test=np.asarray(data["x_test"], dtype=np.float32),
            y_test=np.asarray(data["y_test"], dtype=np.int64),
        )
    kx, ky = ("x", "y") if split == "train" else ("x_test", "y_test")
    with np.load(path) as arrays:
        x = torch.from_numpy(arrays[kx].astype(np.float32))
        y = torch.from_numpy(arrays[ky].astype(np.int64))
    return x, y


def _load_digits(split: str) -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    bunch = load_digits()
    images = np.clip(bunch.images * 16, 0, 255).astype(np.uint8)[:, None]  # N x 1 x 8 x 8
    labels = bunch.target.astype(np.int64)
    train_idx, test_idx = train_test_split(
        np.arange(len(labels)), test_size=0.2, stratify=labels, random_state=0
    )
    idx = np.sort(train_idx if split == "train" else test_idx)
    return torch.from_numpy(images[idx]), torch.from_numpy(labels[idx])


def _missing_error(name: str, root: Path, missing: Path, custom_root: bool) -> FileNotFoundError:
    root_arg = f", root={str(root)!r}" if custom_root else ""
    return FileNotFoundError(
        f"{name} is not downloaded: {missing} does not exist. Fetch it with "
        f"`palviz download {name}` (from the project root), or in Python with "
        f"`palviz.data.load_dataset({name!r}{root_arg}, download=True)`."
    )


# ---- CIFAR: the python pickles of https://www.cs.toronto.edu/~kriz/cifar.html -----------------

_CIFAR_LAYOUT = {
    "cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)], ["test_batch"]),
    "cifar100": ("cifar-100-python", ["train"], ["test"]),
}


def _unpickle(path: Path) -> dict:
    with open(path, "rb") as handle:
        batch = pickle.load(handle, encoding="latin1")
    # The official files load with str keys under latin1; files written by Python 3 keep bytes.
    return {(k.decode("latin1") if isinstance(k, bytes) else k): v for k, v in batch.items()}


def _load_cifar(
    name: str, split: str, root: Path, download: bool, custom_root: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    folder, train_files, test_files = _CIFAR_LAYOUT[name]
    paths = [root / folder / f for f in (train_files if split == "train" else test_files)]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        if not download:
            raise _missing_error(name, root, missing[0], custom_root)
        import torchvision

        dataset_cls = (
            torchvision.datasets.CIFAR10 if name == "cifar10" else torchvision.datasets.CIFAR100
        )
        # torchvision downloads the archive, checks its MD5 and extracts it.
        dataset_cls(str(root), train=split == "train", download=True)
    label_key = "labels" if name == "cifar10" else "fine_labels"
    xs, ys = [], []
    for path in paths:
        batch = _unpickle(path)
        data = np.asarray(batch["data"], dtype=np.uint8)
        xs.append(data.reshape(len(data), 3, 32, 32))
        ys.append(np.asarray(batch[label_key], dtype=np.int64))
    return torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys))


# ---- MNIST: the idx files of http://yann.lecun.com/exdb/mnist/ ------------------------------

_MNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def _find_idx(raw: Path, stem: str) -> Path | None:
    for candidate in (raw / stem, raw / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    return None


def _read_idx(path: Path) -> np.ndarray:
    """Read an idx file of unsigned bytes (magic ``0x0000 08 ndim``, big-endian int32 sizes)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        raw = handle.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path} is not an idx file of unsigned bytes (bad magic number)")
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">i4", count=ndim, offset=4).astype(int)
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path} holds {data.size} bytes of data, its header says {dims.tolist()}")
    return data.reshape(tuple(dims)).copy()


def _load_mnist(
    split: str, root: Path, download: bool, custom_root: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    raw = root / "MNIST" / "raw"
    image_stem, label_stem = _MNIST_FILES[split]
    found = [_find_idx(raw, image_stem), _find_idx(raw, label_stem)]
    if None in found:
        if not download:
            missing = raw / (image_stem if found[0] is None else label_stem)
            raise _missing_error("mnist", root, missing, custom_root)
        import torchvision

        # torchvision downloads the gzipped idx files, checks their MD5 and extracts them.
        torchvision.datasets.MNIST(str(root), train=split == "train", download=True)
        found = [_find_idx(raw, image_stem), _find_idx(raw, label_stem)]
    images = _read_idx(found[0])  # N x 28 x 28
    labels = _read_idx(found[1]).astype(np.int64)
    return torch.from_numpy(images[:, None]), torch.from_numpy(labels)
