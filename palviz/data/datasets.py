"""The datasets palviz ships, declared in :data:`BUILTIN_DATASETS`, and how it reads them.

:func:`load_dataset` returns one split of any registered dataset (:mod:`palviz.data.registry`:
the built-ins below and those a user registers), checked against its declaration. The real
datasets are read in their on-disk formats by the small readers of :mod:`palviz.data.formats`
(CIFAR's python pickles, MNIST's idx files), so tests can write stand-in files in the same
format. The data policy (embedded datasets never touch the network; downloaded ones only when
asked) is described in :mod:`palviz.data`, which re-exports every public name here.

Damaged and hostile files: every reader checks what it reads. A downloaded file that is
truncated or is not what its name says raises :class:`DatasetFileError`, naming the file, what is
wrong and how to fetch it again; a damaged MNIST-1D cache is generated again, with a warning.
"""

from __future__ import annotations

import hashlib
import random
import warnings
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch

from palviz.checks import check_choice
from palviz.data.formats import Damaged, read_cifar_batch, read_idx
from palviz.data.registry import (
    FINGERPRINTS,
    DatasetInfo,
    check_dataset,
    dataset_info,
    dataset_loader,
    register_dataset,
)
from palviz.files import data_dir, save_npz

__all__ = [
    "BUILTIN_DATASETS",
    "MNIST1D_NUM_SAMPLES",
    "MNIST1D_SEED",
    "DatasetFileError",
    "dataset_fingerprint",
    "load_dataset",
    "missing_datasets",
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

# Asymmetric label noise (docs/reference.md 4), source class -> noisy class. The digit sets
# share MNIST's flips: 7 -> 1, 2 -> 7, 5 <-> 6, 3 -> 8.
_MNIST_FLIPS = {7: 1, 2: 7, 5: 6, 6: 5, 3: 8}
# truck -> automobile, bird -> airplane, cat <-> dog, deer -> horse
_CIFAR10_FLIPS = {9: 1, 2: 0, 3: 5, 5: 3, 4: 7}
# Within each block of 5 consecutive ids, i -> the next id of its block, cyclically (the
# convention of the published tables; not CIFAR-100's semantic superclasses).
_CIFAR100_FLIPS = {i: 5 * (i // 5) + (i + 1) % 5 for i in range(100)}


class DatasetFileError(ValueError):
    """A dataset file that is there but cannot be used: truncated, of the wrong format or
    size, or (a CIFAR pickle) asking for something a CIFAR batch never holds.

    The message names the file, what is wrong and how to fetch it again.

    Attributes:
        path: the file.
        dataset: the dataset it belongs to (one of :data:`palviz.data.DATASETS`).
        problem: what is wrong with it.
    """

    def __init__(self, path: str | Path, dataset: str, problem: str, remedy: str):
        self.path = Path(path)
        self.dataset = dataset
        self.problem = problem
        self.remedy = remedy
        super().__init__(f"{path}: damaged {dataset} file: {problem}. {remedy}")

    def __reduce__(self):  # so that it crosses process boundaries (worker pools) intact
        return type(self), (self.path, self.dataset, self.problem, self.remedy)


def load_dataset(
    name: str,
    split: str = "train",
    root: str | Path | None = None,
    download: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Load one split of a dataset.

    Args:
        name: one of :data:`palviz.data.DATASETS` (a built-in or one registered with
            :func:`palviz.data.register_dataset`).
        split: ``"train"`` or ``"test"``.
        root: data folder; ``None`` means the project's ``data/`` (:func:`palviz.files.data_dir`)
            for the built-ins, the loader's own choice for a registered dataset.
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
        ValueError: unknown ``name`` or ``split``, or a loader that returned other data than
            its dataset declares (the wrong sample shape, labels out of range).
        FileNotFoundError: MNIST / CIFAR files missing and ``download=False``; the message
            gives the command that fetches them.
    """
    check_dataset("name", name)
    check_choice("split", split, ("train", "test"))
    root_path = Path(root).expanduser() if root is not None else None
    x, y = dataset_loader(name)(split, root_path, download)
    return _as_declared(name, split, x, y)


def dataset_fingerprint(name: str) -> str:
    """What a run key holds of dataset ``name``'s content: ``"version <v>"`` when its
    registration declares a version, else 16 hex digits of a SHA-256 of both splits as
    :func:`load_dataset` returns them (dtype, shape and bytes of ``x`` and ``y``), computed
    once per process and remembered (a new registration of the name forgets it). The embedded
    datasets are fingerprinted so (MNIST-1D's arrays are generated; their key stays as long as
    the arrays do); MNIST and CIFAR declare the version of their torchvision-checked files."""
    info = dataset_info(name)
    if info.version is not None:
        return f"version {info.version}"
    if name not in FINGERPRINTS:
        digest = hashlib.sha256()
        for split in ("train", "test"):
            for tensor in load_dataset(name, split):
                array = np.ascontiguousarray(tensor.numpy())
                digest.update(f"{array.dtype} {array.shape}".encode())
                digest.update(array.tobytes())
        FINGERPRINTS[name] = digest.hexdigest()[:16]
    return FINGERPRINTS[name]


def missing_datasets(names: Iterable[str]) -> list[str]:
    """Which of the datasets ``names`` are not on disk: those whose test split raises
    ``FileNotFoundError`` (a downloaded dataset not fetched yet), in order."""
    missing = []
    for name in names:
        try:
            load_dataset(name, "test")
        except FileNotFoundError:
            missing.append(name)
    return missing


def _as_declared(name: str, split: str, x, y) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, y)`` as torch tensors (``y`` int64), checked against the declaration of ``name``."""
    info = dataset_info(name)
    x = torch.as_tensor(x)
    y = torch.as_tensor(y)
    where = f"the loader of dataset {name!r} returned for split {split!r}"
    if tuple(x.shape[1:]) != info.shape or x.dim() != 1 + len(info.shape):
        raise ValueError(
            f"{where} samples of shape {list(x.shape)}; the dataset declares "
            f"[N, {', '.join(map(str, info.shape))}]"
        )
    if y.shape != (len(x),) or y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise ValueError(f"{where} labels {y.dtype} of shape {list(y.shape)}; expected [{len(x)}]")
    y = y.to(torch.int64)
    if len(y) and (int(y.min()) < 0 or int(y.max()) >= info.num_classes):
        raise ValueError(
            f"{where} labels from {int(y.min())} to {int(y.max())}; the dataset declares "
            f"{info.num_classes} classes (0..{info.num_classes - 1})"
        )
    return x, y


# The arrays of the MNIST-1D cache (as the generator names them) and their dtypes.
_MNIST1D_ARRAYS = {"x": np.float32, "y": np.int64, "x_test": np.float32, "y_test": np.int64}


def _mnist1d_generate() -> dict[str, np.ndarray]:
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
    return {key: np.asarray(data[key], dtype=dtype) for key, dtype in _MNIST1D_ARRAYS.items()}


def _mnist1d_read(path: Path) -> dict[str, np.ndarray]:
    """The four arrays of the MNIST-1D cache, checked; :class:`~palviz.data.formats.Damaged`
    if they are not sound."""
    try:
        loaded = np.load(path)  # allow_pickle=False: a pickle here is refused, not run
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise Damaged("not an .npz archive but a single .npy array")
        with loaded:
            absent = [key for key in _MNIST1D_ARRAYS if key not in loaded.files]
            if absent:
                raise Damaged(f"the arrays {absent} are missing")
            arrays = {key: loaded[key] for key in _MNIST1D_ARRAYS}
    except PermissionError:
        raise
    except (OSError, EOFError, ValueError, zlib.error, zipfile.BadZipFile) as err:
        raise Damaged(f"not a readable .npz archive ({type(err).__name__}: {err})") from err
    (width,) = dataset_info("mnist1d").shape
    classes = dataset_info("mnist1d").num_classes
    for kx, ky in (("x", "y"), ("x_test", "y_test")):
        x, y = arrays[kx], arrays[ky]
        want_x, want_y = np.dtype(_MNIST1D_ARRAYS[kx]), np.dtype(_MNIST1D_ARRAYS[ky])
        if x.dtype != want_x or x.ndim != 2 or x.shape[1] != width:
            raise Damaged(f"{kx} is {x.dtype} of shape {x.shape}, expected {want_x} N x {width}")
        if y.dtype != want_y or y.shape != (len(x),):
            raise Damaged(f"{ky} is {y.dtype} of shape {y.shape}, expected {want_y} ({len(x)},)")
        if not np.isfinite(x).all() or y.min(initial=0) < 0 or y.max(initial=0) >= classes:
            raise Damaged(f"{kx} / {ky} hold values out of range")
    total = len(arrays["x"]) + len(arrays["x_test"])
    if total != MNIST1D_NUM_SAMPLES:
        raise Damaged(f"it holds {total} samples, expected {MNIST1D_NUM_SAMPLES}")
    return arrays


def _load_mnist1d(split: str, root: Path | None, download: bool = False):
    path = (
        (root or data_dir()) / "mnist1d" / f"mnist1d_n{MNIST1D_NUM_SAMPLES}_seed{MNIST1D_SEED}.npz"
    )
    arrays = None
    if path.is_file():
        try:
            arrays = _mnist1d_read(path)
        except Damaged as err:
            warnings.warn(
                f"the MNIST-1D cache {path} is damaged ({err}); generating it again "
                "(offline, a few seconds) and replacing it",
                RuntimeWarning,
                stacklevel=3,
            )
    if arrays is None:
        arrays = _mnist1d_generate()
        try:
            save_npz(path, **arrays)
        except OSError as err:  # a read-only or full data/: use the data all the same
            warnings.warn(
                f"could not write the MNIST-1D cache {path} ({err}); using the generated "
                "data without caching it (it is generated again next time)",
                RuntimeWarning,
                stacklevel=3,
            )
    kx, ky = ("x", "y") if split == "train" else ("x_test", "y_test")
    return torch.from_numpy(arrays[kx]), torch.from_numpy(arrays[ky])


def _load_digits(split: str, root: Path | None = None, download: bool = False):
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


# ---- The downloaded datasets: CIFAR's python pickles and MNIST's idx files ---------------


def _reading(path: Path, read, *args):
    """``read(path, *args)``; a :class:`Damaged` it raises names ``path``."""
    try:
        return read(path, *args)
    except Damaged as err:
        err.path = path
        raise


def _read_cifar(paths: list[Path], info: DatasetInfo):
    label_key = "labels" if info.name == "cifar10" else "fine_labels"
    args = (label_key, info.shape, info.num_classes)
    batches = [_reading(path, read_cifar_batch, *args) for path in paths]
    return tuple(np.concatenate(arrays) for arrays in zip(*batches, strict=True))


def _read_mnist(paths: list[Path], info: DatasetInfo):
    item_shapes = (info.shape[1:], ())  # N x 28 x 28 images, N labels
    images, labels = (_reading(p, read_idx, s) for p, s in zip(paths, item_shapes, strict=True))
    if len(labels) != len(images):
        problem = f"it holds {len(labels)} labels, {paths[0].name} holds {len(images)} images"
        raise Damaged(problem, paths[1])
    if labels.max(initial=0) >= info.num_classes:
        problem = f"its labels run up to {labels.max()}, outside 0..{info.num_classes - 1}"
        raise Damaged(problem, paths[1])
    return images[:, None], labels.astype(np.int64)


def _load_downloaded(
    name: str, split: str, given_root: Path | None, download: bool, files, read, suffixes=("",)
):
    """One split of a downloaded dataset, read by ``read(paths, info)`` from its ``files`` in the
    data folder, each the name or else the name with one of ``suffixes`` (MNIST's may be
    gzipped); torchvision fetches them first where one is missing and ``download`` allows it."""
    root = given_root or data_dir()
    root_arg = f", root={str(root)!r}" if given_root is not None else ""
    fetch = (
        f"`palviz download {name}` (from the project root), or in Python with "
        f"`palviz.data.load_dataset({name!r}{root_arg}, download=True)`"
    )

    def find() -> list[Path]:  # the first of each file's names that exists, else the plain one
        names = [[root / f"{file}{suffix}" for suffix in suffixes] for file in files]
        return [next((p for p in paths if p.is_file()), paths[0]) for paths in names]

    paths = find()
    missing = [path for path in paths if not path.is_file()]
    if missing and not download:
        raise FileNotFoundError(
            f"{name} is not downloaded: {missing[0]} does not exist. Fetch it with {fetch}."
        )
    if missing:
        import torchvision

        # torchvision.datasets.MNIST, CIFAR10 or CIFAR100 downloads the files, checks their
        # MD5 and extracts them.
        fetcher = getattr(torchvision.datasets, name.upper())
        fetcher(str(root), train=split == "train", download=True)
        paths = find()
    try:
        return read(paths, dataset_info(name))
    except Damaged as err:
        # The download fetches only missing files (it reads those present), hence "delete it".
        remedy = f"Delete it, then fetch it again with {fetch}."
        raise DatasetFileError(err.path, name, err.problem, remedy) from err.__cause__


# ---- The built-in datasets, declared -----------------------------------------------------


def _load_mnist(split: str, root: Path | None, download: bool):
    prefix = "MNIST/raw/" + ("train" if split == "train" else "t10k")
    files = [f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"]
    return _load_downloaded("mnist", split, root, download, files, _read_mnist, ("", ".gz"))


def _load_cifar10(split: str, root: Path | None, download: bool):
    batches = [f"data_batch_{i}" for i in range(1, 6)] if split == "train" else ["test_batch"]
    files = [f"cifar-10-batches-py/{batch}" for batch in batches]
    return _load_downloaded("cifar10", split, root, download, files, _read_cifar)


def _load_cifar100(split: str, root: Path | None, download: bool):
    files = [f"cifar-100-python/{split}"]
    return _load_downloaded("cifar100", split, root, download, files, _read_cifar)


#: The downloaded datasets' version (:func:`dataset_fingerprint`): the files torchvision
#: fetches and checks against these MD5 sums (``torchvision.datasets.CIFAR10.tgz_md5``, ...),
#: so that a run key does not need the 50,000 images read and hashed.
_MNIST_VERSION = "idx md5 f68b3c2d d53e105e 9fb629c4 ec29112d"

#: The datasets palviz ships: each one's declaration (:func:`palviz.data.register_dataset`'s
#: arguments). digits' mean and std are those of its training split (rounded to 4 decimals);
#: CIFAR-100 shares CIFAR-10's constants, as in the reference code of the published tables.
#: Networks: the published tables' own (docs/reference.md 3 and 6), the CPU-sized nets on the rest.
BUILTIN_DATASETS: dict[str, dict] = {
    "mnist1d": dict(
        loader=_load_mnist1d, num_classes=10, shape=(40,), network="cnn1d", title="MNIST-1D",
        asymmetric_map=_MNIST_FLIPS,
    ),
    "digits": dict(
        loader=_load_digits, num_classes=10, shape=(1, 8, 8), network="cnn_digits",
        mean=_DIGITS_MEAN, std=_DIGITS_STD, title="digits", asymmetric_map=_MNIST_FLIPS,
    ),
    "mnist": dict(
        loader=_load_mnist, num_classes=10, shape=(1, 28, 28), network="cnn_mnist",
        mean=(0.1307,), std=(0.3081,), title="MNIST", asymmetric_map=_MNIST_FLIPS,
        version=_MNIST_VERSION,
    ),
    "cifar10": dict(
        loader=_load_cifar10, num_classes=10, shape=(3, 32, 32),
        network={"long_tailed": "resnet32", "noisy": "cnn_cifar10"}, mean=_CIFAR_MEAN,
        std=_CIFAR_STD, augment=True, title="CIFAR-10", asymmetric_map=_CIFAR10_FLIPS,
        version="cifar-10-python.tar.gz md5 c58f30108f718f92721af3b95e74349a",
    ),
    "cifar100": dict(
        loader=_load_cifar100, num_classes=100, shape=(3, 32, 32),
        network={"long_tailed": "resnet32", "noisy": "resnet34"}, mean=_CIFAR_MEAN,
        std=_CIFAR_STD, augment=True, title="CIFAR-100", asymmetric_map=_CIFAR100_FLIPS,
        version="cifar-100-python.tar.gz md5 eb9058c3a382ffc7106e4002c42a8d85",
    ),
}  # fmt: skip

for _name, _declaration in BUILTIN_DATASETS.items():
    register_dataset(_name, **_declaration)
