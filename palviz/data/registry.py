"""The datasets palviz knows, declared once each: :func:`register_dataset`.

A dataset is a name, a loader and the facts a model and a batch pipeline read off it (a
:class:`DatasetInfo`: classes, the shape of one sample, the network each table trains on it,
normalisation statistics, how tables name it, its asymmetric-noise map). The built-ins (``mnist1d``,
``digits``, ``mnist``, ``cifar10``, ``cifar100``) are declared by :mod:`palviz.data.datasets`
with the same call a user makes from a module of their own::

    # my_datasets.py, somewhere on sys.path (PYTHONPATH)
    from palviz.data import register_dataset

    def load(split, root=None, download=False):
        ...  # (x [N, 13] float32, y [N] int64) of the split "train" or "test"

    register_dataset("blobs", load, num_classes=4, shape=(13,), title="Blobs")

**The network.** The registration decides which network (an arch of
:data:`palviz.models.ARCHS`) every table trains on the dataset: the one it names
(``network=``), or else the one its sample shape calls for (:data:`INFERRED_NETWORKS`): a
vector of any width ``D`` the MLP ``mlp1d``, built ``D`` wide; an image the first CNN or ResNet
that reads it. Where the published set-ups train different networks in the long-tailed and the
noisy-label tables (CIFAR), ``network`` maps each of :data:`TASKS` to its own.

**Naming a module of datasets.** Such a module registers its datasets when it is imported.
:func:`import_dataset_modules` imports the modules it is given and those that
``$PALVIZ_DATASET_MODULES`` names (comma-separated module names); a notebook's
``DATASET_MODULES`` parameter and the ``palviz`` command call it before they plan. It adds the
modules it is given to ``$PALVIZ_DATASET_MODULES``, so that the worker processes a run starts
(which inherit the environment) import them too; and a name that is not registered is looked
for again after importing the modules ``$PALVIZ_DATASET_MODULES`` names, so a process started
with it set finds every dataset it names without any call.

:data:`DATASETS` (the names, in order of registration) and :data:`DATASET_TITLES` (name ->
title) are live views of the registry: a dataset registered later is in them.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from palviz.checks import (
    check_bool,
    check_choice,
    check_num_classes,
    check_sample_shape,
    invalid,
)
from palviz.models import ARCHS, arch_input, input_problem

__all__ = [
    "DATASETS",
    "DATASET_MODULES_ENV",
    "DATASET_TITLES",
    "INFERRED_NETWORKS",
    "TASKS",
    "DatasetInfo",
    "check_dataset",
    "dataset_info",
    "import_dataset_modules",
    "register_dataset",
]

#: The environment variable naming the modules that register datasets (comma-separated).
DATASET_MODULES_ENV = "PALVIZ_DATASET_MODULES"

#: ``loader(split, root, download) -> (x, y)``: ``split`` is ``"train"`` or ``"test"``,
#: ``root`` the data folder :func:`palviz.data.load_dataset` was given (``None``: the loader's
#: own choice), ``download`` whether it may fetch missing files. ``x`` is ``[N, *shape]``
#: (``uint8`` images or ``float32`` vectors), ``y`` ``[N]`` integer labels in
#: ``[0, num_classes)``; torch tensors or NumPy arrays.
Loader = Callable[..., tuple[Any, Any]]

#: The tables a dataset trains in, each with a network of its own: long-tailed and
#: noisy-label learning.
TASKS = ("long_tailed", "noisy")

#: The network of a dataset registered without one, by the shape of its samples: a vector
#: ``(D,)`` of any width the MLP; an image the first of its table's nets that reads it
#: (:data:`palviz.models.ARCH_INPUTS`): scikit-learn digits' CNN ``(1, 8, 8)``, APL's MNIST CNN
#: ``(1, 28, 28)``, then the CIFAR nets of the published tables: LDAM-DRW's ResNet-32 for RGB
#: images of any size in the long-tailed tables, APL's CNN ``(3, 32, 32)`` and its ResNet-34 in
#: the noisy-label ones.
INFERRED_NETWORKS: dict[str, dict[str, tuple[str, ...]]] = {
    "vector": {"long_tailed": ("mlp1d",), "noisy": ("mlp1d",)},
    "image": {
        "long_tailed": ("cnn_digits", "cnn_mnist", "resnet32"),
        "noisy": ("cnn_digits", "cnn_mnist", "cnn_cifar10", "resnet34"),
    },
}


@dataclass(frozen=True)
class DatasetInfo:
    """What a batch pipeline and a model need to know about a dataset.

    Attributes:
        name: one of :data:`DATASETS`.
        num_classes: number of classes ``C``.
        kind: ``"image"`` (``uint8`` ``N x C x H x W``) or ``"vector"`` (float32 ``N x D``).
        shape: shape of one sample, e.g. ``(3, 32, 32)`` or ``(40,)``.
        networks: ``(task, arch)`` for each of :data:`TASKS`: the network every table of that
            kind trains on the dataset (:meth:`network`).
        mean, std: per-channel normalisation statistics (images, on the ``[0, 1]`` scale);
            ``None`` for vectors (MNIST-1D is standardised by its generator).
        augment: whether the published set-up uses random crop + horizontal flip.
        title: how tables and captions name it (``"CIFAR-10"``).
        asymmetric_flips: the class flips of asymmetric label noise, ``(source, noisy)``
            pairs (:func:`palviz.data.asymmetric_map`); empty: none declared.
        version: what the run key holds of the data's content when the registration declares
            it; ``None``: a fingerprint of what the loader returns
            (:func:`palviz.data.dataset_fingerprint`).
    """

    name: str
    num_classes: int
    kind: str
    shape: tuple[int, ...]
    networks: tuple[tuple[str, str], ...]
    mean: tuple[float, ...] | None
    std: tuple[float, ...] | None
    augment: bool
    title: str = ""
    asymmetric_flips: tuple[tuple[int, int], ...] = ()
    version: str | None = None

    def network(self, task: str) -> str:
        """The arch the tables of ``task`` (one of :data:`TASKS`) train on this dataset."""
        return dict(self.networks)[check_choice("task", task, TASKS)]


_INFOS: dict[str, DatasetInfo] = {}
_LOADERS: dict[str, Loader] = {}
#: name -> fingerprint of what its loader returned, computed once per process
#: (:func:`palviz.data.dataset_fingerprint`); a new registration forgets it
FINGERPRINTS: dict[str, str] = {}

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_KINDS = ("vector", "image")


def _stats(name: str, values: Any, channels: int | None) -> tuple[float, ...] | None:
    if values is None:
        return None
    stats = tuple(float(v) for v in (values if isinstance(values, Sequence) else (values,)))
    if channels is not None and len(stats) not in (1, channels):
        raise invalid(name, values, f"None or {channels} numbers (one per channel)")
    if name == "std" and any(not s > 0 for s in stats):
        raise invalid(name, values, "None or numbers > 0")
    return stats


def _flips(mapping: Mapping[int, int] | None, num_classes: int) -> tuple[tuple[int, int], ...]:
    if mapping is None:
        return ()
    pairs = tuple((int(s), int(t)) for s, t in dict(mapping).items())
    if any(not (0 <= c < num_classes) for pair in pairs for c in pair):
        raise invalid("asymmetric_map", mapping, f"a map of class ids in [0, {num_classes})")
    return pairs


def _networks(network: Any, shape: tuple[int, ...]) -> tuple[tuple[str, str], ...]:
    """``network`` (``None``, an arch, or a map of :data:`TASKS` to archs) as ``(task, arch)``
    pairs, each arch one that reads samples of ``shape``; ``None``: :data:`INFERRED_NETWORKS`."""
    sample = f"samples [N, {', '.join(map(str, shape))}]"
    if network is None:
        pairs = []
        for task, candidates in INFERRED_NETWORKS["vector" if len(shape) == 1 else "image"].items():
            readers = [arch for arch in candidates if input_problem(arch, shape) is None]
            if not readers:
                reads = ", ".join(f"{arch} {arch_input(arch)}" for arch in candidates)
                raise invalid(
                    "shape", shape, f"one a {task.replace('_', '-')} network reads: {reads}"
                )
            pairs.append((task, readers[0]))
        return tuple(pairs)
    by_task = dict.fromkeys(TASKS, network) if isinstance(network, str) else network
    if not isinstance(by_task, Mapping) or set(by_task) != set(TASKS):
        raise invalid(
            "network",
            network,
            f"None, an arch of {list(ARCHS)} or a map of each of {list(TASKS)} to one",
        )
    readers = [arch for arch in ARCHS if input_problem(arch, shape) is None]
    for task in TASKS:
        where = "network" if isinstance(network, str) else f"network[{task!r}]"
        if check_choice(where, by_task[task], ARCHS) not in readers:
            raise invalid(where, by_task[task], f"an arch that reads {sample}, one of {readers}")
    return tuple((task, by_task[task]) for task in TASKS)


def register_dataset(
    name: str,
    loader: Loader,
    *,
    num_classes: int,
    shape: Sequence[int],
    network: str | Mapping[str, str] | None = None,
    kind: str | None = None,
    mean: float | Sequence[float] | None = None,
    std: float | Sequence[float] | None = None,
    augment: bool = False,
    title: str | None = None,
    asymmetric_map: Mapping[int, int] | None = None,
    version: str | None = None,
    replace: bool = False,
) -> DatasetInfo:
    """Declare a dataset: after this, :func:`palviz.data.load_dataset` loads it, a
    :class:`~palviz.experiments.runspec.RunSpec` may name it and the notebooks train it.

    Args:
        name: lower-case letters, digits, ``_`` and ``-`` (it enters cache keys and file
            names), e.g. ``"blobs"``.
        loader: ``loader(split, root, download) -> (x, y)`` (:data:`Loader`).
        num_classes: ``C >= 2``.
        shape: the shape of one sample: ``(D,)`` for vectors, ``(C, H, W)`` for images.
        network: the network every table trains on it: an arch of :data:`palviz.models.ARCHS`
            that reads ``shape`` (:data:`palviz.models.ARCH_INPUTS`: ``(D,)`` of any width for
            ``mlp1d``, ``(40,)`` for ``cnn1d``, ``(1, 8, 8)`` for ``cnn_digits``, ``(3, H, W)``
            for the ResNets), or a map of each of :data:`TASKS` to one (e.g. CIFAR-10:
            ``{"long_tailed": "resnet32", "noisy": "cnn_cifar10"}``); ``None``: the network
            ``shape`` calls for (:data:`INFERRED_NETWORKS`: ``mlp1d`` for vectors of any width).
        kind: ``"vector"`` or ``"image"``; default from ``shape`` (1-D: vector).
        mean, std: per-channel statistics of images on the ``[0, 1]`` scale, or ``None``.
        augment: whether the published set-up of the dataset crops and flips.
        title: how tables name it; default ``name``.
        asymmetric_map: source class -> noisy class of asymmetric label noise, or ``None``
            (then only symmetric noise is possible).
        version: a string that changes whenever what the loader returns changes (e.g. the
            checksum of a file it reads), entering the run key in place of the data; ``None``:
            the run key holds a hash of both splits as the loader returns them, computed the
            first time a process makes a key (:func:`palviz.data.dataset_fingerprint`). Either
            way a changed dataset never serves the runs of the old one.
        replace: allow a new declaration under a name already registered. The same
            declaration again (the same facts and loader) is always accepted.

    Returns:
        The dataset's :class:`DatasetInfo`.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise invalid("name", name, "lower-case letters, digits, '_' and '-', e.g. 'blobs'")
    if not callable(loader):
        raise invalid("loader", loader, "a function loader(split, root, download) -> (x, y)")
    if version is not None and (not isinstance(version, str) or not version):
        raise invalid("version", version, "None or a non-empty string")
    num_classes = check_num_classes(num_classes)
    dims = check_sample_shape("shape", shape)
    kind = check_choice("kind", kind or ("vector" if len(dims) == 1 else "image"), _KINDS)
    channels = dims[0] if kind == "image" else None
    info = DatasetInfo(
        name,
        num_classes,
        kind,
        dims,
        _networks(network, dims),
        _stats("mean", mean, channels),
        _stats("std", std, channels),
        check_bool("augment", augment),
        title if title is not None else name,
        _flips(asymmetric_map, num_classes),
        version,
    )
    if name in _INFOS and not replace:
        old = _LOADERS[name]
        same = _INFOS[name] == info and (old.__module__, old.__qualname__) == (
            loader.__module__,
            loader.__qualname__,
        )
        if not same:
            raise ValueError(
                f"dataset {name!r} is already registered (as {_INFOS[name]}); pass "
                "replace=True to declare it anew, or choose another name"
            )
    _INFOS[name] = info
    _LOADERS[name] = loader
    FINGERPRINTS.pop(name, None)
    return info


def _env_modules() -> list[str]:
    return [m.strip() for m in os.environ.get(DATASET_MODULES_ENV, "").split(",") if m.strip()]


def import_dataset_modules(modules: Sequence[str] = (), *, where: str = "dataset module") -> None:
    """Import ``modules`` and the modules ``$PALVIZ_DATASET_MODULES`` names (each registers
    its datasets), and add ``modules`` to ``$PALVIZ_DATASET_MODULES`` so that the processes
    this one starts import them too. A module that cannot be imported raises ``ValueError``
    naming it (``where`` says what named it) and why."""
    if isinstance(modules, str):
        raise invalid(where, modules, "a tuple of module names, not a string")
    wanted = [*modules, *(m for m in _env_modules() if m not in modules)]
    for module in wanted:
        _import(module, where)
    named = _env_modules()
    added = [m for m in modules if m not in named]
    if added:
        os.environ[DATASET_MODULES_ENV] = ",".join([*named, *added])


def _import(module: str, where: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError as err:
        raise ValueError(
            f"{where} {module!r} cannot be imported ({type(err).__name__}: {err}); it must be "
            "a module on sys.path (PYTHONPATH) that calls palviz.data.register_dataset"
        ) from err


def _find(name: Any) -> bool:
    """Whether ``name`` is registered, after importing the modules of
    ``$PALVIZ_DATASET_MODULES`` if it is not (one already imported is only looked up in
    ``sys.modules``: it registers its datasets once)."""
    if not isinstance(name, str):
        return False
    if name not in _INFOS:
        for module in _env_modules():
            _import(module, f"${DATASET_MODULES_ENV} module")
    return name in _INFOS


def check_dataset(name: str, value: Any) -> str:
    """``value`` if it is a registered dataset (one of :data:`DATASETS`)."""
    if _find(value):
        return value
    return check_choice(name, value, tuple(_INFOS))


def dataset_info(name: str) -> DatasetInfo:
    """The :class:`DatasetInfo` of ``name`` (one of :data:`DATASETS`)."""
    return _INFOS[check_dataset("name", name)]


def dataset_loader(name: str) -> Loader:
    """The loader ``name`` was registered with."""
    return _LOADERS[check_dataset("name", name)]


class _Names(Sequence):
    """The registered datasets' names, in order of registration (a live view)."""

    def __getitem__(self, index):
        return tuple(_INFOS)[index]

    def __len__(self) -> int:
        return len(_INFOS)

    def __contains__(self, value: object) -> bool:
        return _find(value)

    def __repr__(self) -> str:
        return repr(tuple(_INFOS))


class _Titles(Mapping):
    """Registered name -> title, e.g. ``"cifar10" -> "CIFAR-10"`` (a live view)."""

    def __getitem__(self, name: str) -> str:
        if not _find(name):
            raise KeyError(name)
        return _INFOS[name].title

    def __len__(self) -> int:
        return len(_INFOS)

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(_INFOS))

    def __repr__(self) -> str:
        return repr(dict(self))


#: The names of the registered datasets (:func:`register_dataset`), a live sequence view.
DATASETS: Sequence[str] = _Names()

#: How tables and captions name each registered dataset, a live mapping view.
DATASET_TITLES: Mapping[str, str] = _Titles()
