"""The run cache: a training run as plain data (:class:`RunSpec`), its result
(:class:`RunResult`), and :func:`run`, which trains a spec once in this process and serves it
from ``runs/`` afterwards (training many runs in other processes is
:func:`palviz.experiments.cluster.run_many`'s, which builds on this module).

A run's result is cached under ``runs/<key>/``, where ``key`` is a hash of the full spec plus
palviz's version and :data:`CACHE_SCHEMA`, so changing anything that could change the result
(including a fixed bug, by bumping the version or schema) trains again, and nothing else does:

- ``spec.json``     the spec, for people
- ``checkpoint.pt`` the trainer's checkpoint (model, optimiser, history; ``weights_only=True``);
  an interrupted run resumes from it
- ``features.npz``  test-set penultimate features, logits, targets and the head's prototypes
- ``metrics.json``  everything a table or figure needs; written last, so its presence marks
  a finished run. Its ``attempts`` say how the run got there: ``count`` (1 + the times it
  resumed from its checkpoint) and ``resumed_from`` (the epochs done at each resumption)

Every file is written atomically. The named recipes that make specs live in
:mod:`palviz.experiments.recipes`, the tables made from results in :mod:`palviz.experiments.tables`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import numbers
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import palviz
from palviz import data as pdata
from palviz import metrics as pmetrics
from palviz.checks import (
    ArgumentTypeError,
    check_choice,
    check_positive,
    check_probability,
    check_real,
    invalid,
)
from palviz.files import (
    DiskFullError,
    ReadOnlyError,
    StorageError,
    cache_dir,
    not_writable_reason,
    require_writable,
    runs_dir,
    save_npz,
    storage_errors,
    write_json,
)
from palviz.heads import HEAD_KINDS, HEADS, PROTOTYPE_ORIENTATIONS
from palviz.losses import registry
from palviz.models import ARCH_REVISIONS, check_arch, make_model
from palviz.threads import single_thread
from palviz.train import TrainConfig, evaluate, fit, legacy_config_dict, resolve_device

#: Bump when the meaning or layout of cached results changes.
CACHE_SCHEMA = 2


@dataclass(frozen=True)
class RunSpec:
    """One training run, as plain data. Everything here enters the cache key except
    ``label`` (a display name).

    - ``imbalance_ratio``: 1 keeps the balanced training split; rho > 1 keeps a seeded
      long-tailed subset (``lt_shape`` "exp" or "step", docs/reference.md 1).
    - ``noise_rate``/``noise_kind``: synthetic label noise on the training labels only
      (docs/reference.md 4), drawn with ``seed``.
    - ``train_size``: keep a stratified subset of this many training samples first (used by
      the ``smoke`` profile to stay within seconds); ``None`` keeps all.
    - ``head``/``head_kw``: ``"linear"``, ``"cosine"`` (learnable, normalised) or
      ``"anchored"`` (PAL; ``normalize=True, scale=s`` is FNPAL).

    Every field is checked when the spec is made (a ``ValueError``, or a ``TypeError`` for a
    value of the wrong type, naming ``RunSpec.<field>``, the value and what is allowed): the
    dataset, network, loss and head are ones palviz knows, the network reads the dataset's
    samples; ``loss_kw`` builds the loss, ``head_kw`` holds head arguments, ``train`` may be a dict.
    """

    dataset: str
    arch: str
    loss: str
    loss_kw: dict = field(default_factory=dict)
    head: str = "linear"
    head_kw: dict = field(default_factory=dict)
    imbalance_ratio: float = 1.0
    lt_shape: str = "exp"
    noise_rate: float = 0.0
    noise_kind: str = "symmetric"
    train_size: int | None = None
    seed: int = 0
    train: TrainConfig = field(default_factory=TrainConfig)
    label: str = ""

    def __post_init__(self):
        # Every field is checked here, before a key or a folder exists; the dict of a
        # ``train`` field becomes its TrainConfig. Nothing else is converted: the key is a hash
        # of the fields as given.
        check_choice("RunSpec.dataset", self.dataset, pdata.DATASETS)
        check_arch("RunSpec.arch", self.arch, reads=pdata.dataset_info(self.dataset))
        _check_loss(self.loss, self.loss_kw, pdata.dataset_info(self.dataset).num_classes)
        _check_head(self.head, self.head_kw)
        check_choice("RunSpec.lt_shape", self.lt_shape, pdata.LONG_TAIL_SHAPES)
        if check_real("RunSpec.imbalance_ratio", self.imbalance_ratio) < 1:
            raise invalid("RunSpec.imbalance_ratio", self.imbalance_ratio, ">= 1")
        check_probability("RunSpec.noise_rate", self.noise_rate)
        check_choice("RunSpec.noise_kind", self.noise_kind, ("symmetric", "asymmetric"))
        if self.train_size is not None:
            _check_int_field("train_size", self.train_size, 2, "None or an integer >= 2")
        _check_int_field("seed", self.seed, 0, "an integer >= 0")
        if isinstance(self.train, dict):
            object.__setattr__(self, "train", _train_config(self.train))
        if not isinstance(self.train, TrainConfig):
            raise _wrong_type("RunSpec.train", self.train, "a TrainConfig (or its dict)")
        if not isinstance(self.label, str):
            raise _wrong_type("RunSpec.label", self.label, "a string")

    def to_dict(self) -> dict:
        """The spec as JSON-ready data (``train`` as a dict)."""
        out = dataclasses.asdict(self)
        out["train"] = dataclasses.asdict(self.train)
        return out

    @classmethod
    def from_dict(cls, d: dict) -> RunSpec:
        """The inverse of :meth:`to_dict` (e.g. of a line of ``palviz plan --jsonl``); unknown
        or missing fields are an error naming them, and every field is checked as in
        :class:`RunSpec`."""
        if not isinstance(d, dict):
            raise _wrong_type("RunSpec.from_dict's argument", d, "a dict of RunSpec fields")
        fields = dataclasses.fields(cls)
        names = [f.name for f in fields]
        unknown = sorted(set(d) - set(names))
        if unknown:
            raise ValueError(f"unknown RunSpec fields {unknown}; allowed: {sorted(names)}")
        required = [f.name for f in fields if f.default is f.default_factory is dataclasses.MISSING]
        missing = [name for name in required if name not in d]
        if missing:
            raise ValueError(f"missing RunSpec fields {missing}; required: {required}")
        return cls(**d)

    def key(self) -> str:
        """16 hex digits identifying the result: the spec without ``label``, palviz's version
        and the cache schema (and, under ``PALVIZ_TOY``, the toy sizes: a toy run never
        stands in for a real one). ``train`` enters as
        :func:`palviz.train.legacy_config_dict` spells it and the arch's revision
        (:data:`palviz.models.ARCH_REVISIONS`) only above 1, so the runs that neither change
        keep their keys."""
        payload = self.to_dict()
        payload.pop("label")
        payload["train"] = legacy_config_dict(self.train)
        payload["train"].pop("progress", None)  # how a run is displayed does not change it
        if ARCH_REVISIONS[self.arch] > 1:
            payload["_arch_revision"] = ARCH_REVISIONS[self.arch]
        payload["_version"] = palviz.__version__
        payload["_schema"] = CACHE_SCHEMA
        toy = toy_settings()
        if toy is not None:
            payload["_toy"] = toy
        text = json.dumps(payload, sort_keys=True, default=_jsonable)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def replace(self, **changes: Any) -> RunSpec:
        """A copy with some fields changed (``train=dict(...)`` updates the TrainConfig)."""
        if isinstance(changes.get("train"), dict):
            changes["train"] = dataclasses.replace(self.train, **changes["train"])
        return dataclasses.replace(self, **changes)


def _wrong_type(name: str, value: Any, rule: str) -> ArgumentTypeError:
    return ArgumentTypeError(str(invalid(name, value, rule)))


def _check_int_field(field_name: str, value: Any, minimum: int, rule: str) -> None:
    """``RunSpec.<field_name>`` is an int (not a bool) >= ``minimum``."""
    name = f"RunSpec.{field_name}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _wrong_type(name, value, rule)
    if value < minimum:
        raise invalid(name, value, rule)


def _train_config(d: dict) -> TrainConfig:
    """``RunSpec.train`` given as a dict: its TrainConfig, an error naming the field."""
    try:
        return TrainConfig.from_dict(d)
    except TypeError as err:
        raise ArgumentTypeError(f"RunSpec.train: {err}") from None
    except ValueError as err:
        raise ValueError(f"RunSpec.train: {err}") from None


def _check_loss(loss: Any, loss_kw: Any, num_classes: int) -> None:
    """``RunSpec.loss`` is registered and ``RunSpec.loss_kw`` holds arguments it takes, with
    values that build it (built once, with ``num_classes`` classes of 2 samples each standing
    in for the facts of the run)."""
    check_choice("RunSpec.loss", loss, tuple(registry.LOSSES))
    if not isinstance(loss_kw, dict):
        raise _wrong_type("RunSpec.loss_kw", loss_kw, f"a dict of arguments of loss {loss!r}")
    registry.check_loss_kw(loss, loss_kw, field_name="RunSpec.loss_kw")
    try:
        registry.build_loss(loss, loss_kw, class_counts=[2] * num_classes, num_classes=num_classes)
    except (TypeError, ValueError) as err:
        message = str(invalid("RunSpec.loss_kw", loss_kw, f"arguments that build loss {loss!r}"))
        kind = ArgumentTypeError if isinstance(err, TypeError) else ValueError
        raise kind(f"{message} ({err})") from None


def _head_arguments(head: str) -> tuple[str, ...]:
    """The arguments ``RunSpec.head_kw`` may pass to head ``head``: its constructor's, but
    ``in_features`` and ``num_classes`` (the model supplies them)."""
    params = inspect.signature(HEADS[head]).parameters
    return tuple(
        name
        for name, p in params.items()
        if name not in ("in_features", "num_classes")
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    )


def _check_head(head: Any, head_kw: Any) -> None:
    """``RunSpec.head`` is a head palviz knows, ``RunSpec.head_kw`` holds arguments it takes
    (an anchored head's ``orientation`` one of :data:`palviz.heads.PROTOTYPE_ORIENTATIONS`, a
    ``scale`` > 0)."""
    check_choice("RunSpec.head", head, HEAD_KINDS)
    allowed = _head_arguments(head)
    if not isinstance(head_kw, dict):
        raise _wrong_type(
            "RunSpec.head_kw", head_kw, f"a dict of arguments of the {head!r} head {allowed}"
        )
    for key in head_kw:
        if key not in allowed:
            raise invalid(
                "RunSpec.head_kw",
                head_kw,
                f"a dict of arguments of the {head!r} head, keys from {list(allowed)} "
                f"({key!r} is not one of them)",
            )
    if "orientation" in head_kw:
        check_choice(
            "RunSpec.head_kw['orientation']", head_kw["orientation"], PROTOTYPE_ORIENTATIONS
        )
    if "scale" in head_kw:
        check_positive("RunSpec.head_kw['scale']", head_kw["scale"])


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, set)):
        return list(value)
    raise TypeError(f"cannot put {type(value).__name__} into a run spec")


#: ``PALVIZ_TOY=1``: every run trains 1 epoch on at most this many training samples and is
#: tested on at most this many test samples (each class present keeps at least one).
TOY_EPOCHS, TOY_TRAIN, TOY_TEST = 1, 200, 200


def toy_settings() -> dict | None:
    """The toy size override, ``{"epochs", "train", "test"}``, when ``$PALVIZ_TOY`` is set (to
    anything but ``""``/``"0"``), else ``None``.

    Under it every run keeps its dataset, network, loss and schedule (the long-tailed cut and
    the label noise are drawn on the whole split as usual), then trains :data:`TOY_EPOCHS`
    epoch on a seeded class-stratified subset of at most :data:`TOY_TRAIN` of those training
    samples and is tested on a stratified subset of at most :data:`TOY_TEST` test samples.
    For trying the ``paper`` profile's code path end to end on a CPU; the cache keys differ
    from the real runs'.
    """
    if os.environ.get("PALVIZ_TOY", "") in ("", "0"):
        return None
    return {"epochs": TOY_EPOCHS, "train": TOY_TRAIN, "test": TOY_TEST}


@dataclass
class RunResult:
    """A finished run: its spec, its metrics (``metrics.json``) and its folder."""

    spec: RunSpec
    metrics: dict
    path: Path

    @property
    def label(self) -> str:
        return self.spec.label or f"{self.spec.loss}/{self.spec.head}"

    def features(self) -> dict[str, np.ndarray]:
        """Test-set ``features`` (N, d), ``logits`` (N, C), ``targets`` (N,) and the head's
        ``prototypes`` (C, d) at the end of training."""
        with np.load(self.path / "features.npz", allow_pickle=False) as arrays:
            return {name: arrays[name] for name in arrays.files}

    def embedding_paths(self, max_points: int = 2000, seed: int = 0) -> tuple[Path, Path]:
        """Where :meth:`embedding` keeps its coordinates, in order: next to the run
        (``umap_<points>_<seed>.npz``, which ``palviz runs pack`` carries), else under
        ``cache_dir()/umap/<key>/`` (for a run cache that is read-only or full)."""
        name = f"umap_{max_points}_{seed}.npz"
        return self.path / name, cache_dir() / "umap" / self.path.name / name

    def embedding(self, max_points: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """A 2-D UMAP embedding of (at most ``max_points``, stratified) test features and
        their labels, cached in the first of :meth:`embedding_paths` that takes it; where
        neither does (read-only, full), computed in memory with a printed note."""
        places = self.embedding_paths(max_points, seed)
        for path in places:
            if path.exists():
                with np.load(path, allow_pickle=False) as arrays:
                    return arrays["embedding"], arrays["labels"]
        from palviz.plots import umap_embedding

        arrays = self.features()
        keep = pdata.stratified_subset(arrays["targets"], max_points, seed)
        embedding, labels = (
            umap_embedding(arrays["features"][keep], seed=seed),
            arrays["targets"][keep],
        )
        refused = []
        for path in places:
            try:
                save_npz(path, embedding=embedding, labels=labels)
                return embedding, labels
            except StorageError as err:
                why = "disk full" if isinstance(err, DiskFullError) else "not writable"
                refused.append(f"{path.parent} ({why})")
        print(
            f"note: the UMAP coordinates of run {self.path.name} ({self.label}) are computed "
            f"in memory and not kept (the next call computes them again): they cannot go in "
            f"{' nor in '.join(refused)}; set PALVIZ_CACHE to a writable folder to keep them"
        )
        return embedding, labels


def _covering_subset(targets: np.ndarray, size: int, seed: int) -> np.ndarray:
    """Sorted indices of a seeded subset of about ``size`` samples, class proportions kept,
    at least one sample of every class present (a long tail's last class survives)."""
    targets = np.asarray(targets)
    if size >= len(targets):
        return np.arange(len(targets))
    rng = np.random.default_rng([seed, 7])
    classes, sizes = np.unique(targets, return_counts=True)
    take = np.minimum(sizes, np.maximum(1, np.floor(size * sizes / len(targets)).astype(int)))
    keep = [
        rng.choice(np.flatnonzero(targets == c), size=n, replace=False)
        for c, n in zip(classes, take, strict=True)
    ]
    return np.sort(np.concatenate(keep))


def prepare_data(spec: RunSpec) -> dict[str, Any]:
    """The training and test data a spec describes: the (optionally reduced, long-tailed,
    noisy) training split and the whole test split, plus the class counts."""
    info = pdata.dataset_info(spec.dataset)
    x, y = pdata.load_dataset(spec.dataset, "train")
    x_test, y_test = pdata.load_dataset(spec.dataset, "test")
    if spec.train_size is not None:
        keep = pdata.stratified_subset(y.numpy(), spec.train_size, spec.seed)
        x, y = x[keep], y[keep]
    if spec.imbalance_ratio > 1:
        x, y, _ = pdata.make_long_tailed(
            x, y, spec.imbalance_ratio, shape=spec.lt_shape, seed=spec.seed
        )
    split_counts = np.bincount(np.asarray(y), minlength=info.num_classes).tolist()
    # the training set the spec describes, before any toy reduction; a toy run reduces it
    # before the labels are corrupted, so that its noise follows the rule on what it trains on
    toy = toy_settings()
    if toy is not None:
        keep = _covering_subset(np.asarray(y), toy["train"], spec.seed)
        x, y = x[keep], y[keep]
        test_keep = _covering_subset(np.asarray(y_test), toy["test"], spec.seed)
        x_test, y_test = x_test[test_keep], y_test[test_keep]
    clean = np.asarray(y).copy()
    counts = np.bincount(clean, minlength=info.num_classes).tolist()
    if spec.noise_rate > 0:
        noisy = pdata.add_label_noise(
            clean,
            spec.noise_rate,
            kind=spec.noise_kind,
            dataset=spec.dataset,
            seed=spec.seed,
            num_classes=info.num_classes,
        )
        y = torch.as_tensor(noisy, dtype=torch.int64)
    return {
        "info": info,
        "train": (x, y),
        "test": (x_test, y_test),
        "train_counts": counts,
        "split_train_counts": split_counts,
        "clean_labels": clean,
        "noisy_labels": np.asarray(y),
    }


def build_loss(spec: RunSpec, train_counts: Sequence[int], num_classes: int):
    """The loss a spec names, given the training class counts: the registry hands the loss
    the facts of the run it declares it needs (:mod:`palviz.losses.registry`)."""
    return registry.build_loss(
        spec.loss, spec.loss_kw, class_counts=train_counts, num_classes=num_classes
    )


#: The arrays of ``features.npz``.
FEATURE_ARRAYS = ("features", "logits", "targets", "prototypes")


def entry_problem(folder: Path, *, thorough: bool = False) -> str | None:
    """What is wrong with the cache entry ``folder`` (``None``: nothing; a folder without
    ``metrics.json`` is an unfinished run, not a broken one, unless its checkpoint is
    unreadable).

    Checked: ``metrics.json`` parses and names the folder's key; ``features.npz`` holds its
    arrays (read with ``allow_pickle=False``); ``checkpoint.pt``, if there is one, is a
    complete archive (``thorough``: loads with ``torch.load(weights_only=True)``). A finished
    run needs no checkpoint (only resuming a run reads it; ``palviz runs pack`` leaves it out
    by default). Nothing is unpickled.
    """
    done = folder / "metrics.json"
    checkpoint = folder / "checkpoint.pt"
    if not done.exists():
        if checkpoint.exists():
            return _checkpoint_problem(checkpoint, thorough=True)
        return None
    try:
        metrics = json.loads(done.read_text())
    except (ValueError, OSError) as err:
        return f"metrics.json is not readable JSON (truncated?): {err}"
    if not isinstance(metrics, dict):
        return "metrics.json does not hold a JSON object"
    if metrics.get("key") != folder.name:
        return f"metrics.json names key {metrics.get('key')!r}, its folder is {folder.name!r}"
    features = folder / "features.npz"
    if not features.exists():
        return "features.npz is missing"
    try:
        with np.load(features, allow_pickle=False) as arrays:
            missing = [name for name in FEATURE_ARRAYS if name not in arrays.files]
            if missing:
                return f"features.npz lacks {missing}"
            if thorough:
                for name in arrays.files:
                    arrays[name]  # reads every array (and checks its CRC)
    except Exception as err:  # noqa: BLE001 - any failure to read is the finding
        return f"features.npz is not readable: {type(err).__name__}: {err}"
    if not checkpoint.exists():  # a finished run is read without it (e.g. unpacked results)
        return None
    return _checkpoint_problem(checkpoint, thorough=thorough)


def _checkpoint_problem(path: Path, *, thorough: bool) -> str | None:
    import zipfile

    try:
        if thorough:
            state = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(state, dict) or "model" not in state:
                return "checkpoint.pt does not hold a training checkpoint"
        else:
            with zipfile.ZipFile(path) as archive:  # a truncated archive has no directory
                archive.namelist()
    except Exception as err:  # noqa: BLE001 - any failure to read is the finding
        return f"checkpoint.pt is not readable (truncated?): {type(err).__name__}: {err}"
    return None


def _utc_stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def quarantine(folder: Path, problem: str, label: str = "") -> Path:
    """Move a broken cache entry aside to ``runs/.broken/<key>-<UTC time>/`` with a warning
    naming its key, its label and what was wrong; returns where it went."""
    import warnings

    broken = folder.parent / ".broken"
    try:
        with storage_errors(broken):
            broken.mkdir(parents=True, exist_ok=True)
            target = broken / f"{folder.name}-{_utc_stamp()}"
            n = 1
            while target.exists():
                n += 1
                target = broken / f"{folder.name}-{_utc_stamp()}-{n}"
            os.replace(folder, target)
    except ReadOnlyError as err:
        raise ReadOnlyError(
            err.errno,
            f"run cache entry {folder} ({label or 'no label'}) is broken: {problem}; the run "
            f"cache {folder.parent} {not_writable_reason(err.errno)}, so it cannot be moved "
            "aside and trained again. Repair the cache where it is writable (palviz runs "
            "--check --fix, then train), or set PALVIZ_RUNS to a writable copy of it",
            str(folder),
        ) from None
    if not label:
        with contextlib.suppress(Exception):
            label = json.loads((target / "spec.json").read_text()).get("label", "")
    warnings.warn(
        f"run cache: entry {folder.name} ({label or 'no label'}) is broken: {problem}; "
        f"moved to {target}; it will be trained again",
        RuntimeWarning,
        stacklevel=3,
    )
    return target


def read_cached(spec: RunSpec, folder: Path | None = None) -> RunResult | None:
    """The finished, sound entry of ``spec`` (in ``folder``, by default ``runs/<key>``), or
    ``None`` (missing, or broken: then moved aside with a warning)."""
    folder = runs_dir() / spec.key() if folder is None else folder
    done = folder / "metrics.json"
    if not done.exists():
        return None
    problem = entry_problem(folder)
    if problem is not None:
        quarantine(folder, problem, spec.label)
        return None
    return RunResult(spec, json.loads(done.read_text()), folder)


def check_cache_writable(specs: Sequence[RunSpec]) -> None:
    """Before training ``specs`` (runs the cache lacks): a
    :class:`~palviz.files.ReadOnlyError` naming the run cache and what to do when it cannot
    take new entries (a read-only mount, another user's folder), so nothing starts; a full
    disk there raises :class:`~palviz.files.DiskFullError`."""
    root = runs_dir()
    try:
        require_writable(root / ".locks")
    except ReadOnlyError as err:
        labels = ", ".join(f"{s.label or s.loss} {s.key()}" for s in specs[:3])
        more = f" and {len(specs) - 3} more" if len(specs) > 3 else ""
        raise ReadOnlyError(
            err.errno,
            f"the run cache {root} {not_writable_reason(err.errno)}, and {len(specs)} run(s) "
            f"asked for are not in it ({labels}{more}): nothing was trained. Set PALVIZ_RUNS to "
            "a writable folder (a copy of this cache, or one filled with palviz runs unpack "
            "FILE) and run the command again, or train the runs where the cache is writable",
            str(root),
        ) from None


def run(spec: RunSpec, *, retrain: bool = False) -> RunResult:
    """The result of ``spec``: from the cache when it is there, else trained now (resuming
    from a checkpoint an interrupted or killed run left) and cached.

    Safe for concurrent workers on one ``runs/`` folder (see :mod:`palviz.experiments.locks`): one
    of them trains a key, the others wait and read its result. A broken entry (unreadable
    ``metrics.json``, ``features.npz`` or ``checkpoint.pt``, or a key that is not its folder's
    name) is moved to ``runs/.broken/`` with a warning and trained again.
    """
    from palviz.experiments.locks import RunLock

    root = runs_dir()
    folder = root / spec.key()
    if not retrain:
        with contextlib.suppress(FileNotFoundError):  # moved aside by another worker meanwhile
            cached = read_cached(spec, folder)
            if cached is not None:
                return cached
    check_cache_writable([spec])
    lock = RunLock(root, spec.key())
    while not lock.acquire(done=lambda: not retrain and (folder / "metrics.json").exists()):
        with contextlib.suppress(FileNotFoundError):
            cached = read_cached(spec, folder)
            if cached is not None:
                return cached
    try:
        if not retrain:
            cached = read_cached(spec, folder)
            if cached is not None:
                return cached
        return _train(spec, folder, retrain=retrain)
    finally:
        lock.release()


def _train(spec: RunSpec, folder: Path, *, retrain: bool) -> RunResult:
    """Train ``spec`` into ``folder`` (the caller holds its lock)."""
    checkpoint = folder / "checkpoint.pt"
    if checkpoint.exists() and not retrain:
        problem = _checkpoint_problem(checkpoint, thorough=True)
        if problem is not None:
            quarantine(folder, problem, spec.label)
    # The data first: a run that cannot read it (e.g. a dataset not downloaded) leaves no entry.
    prepared = prepare_data(spec)
    with storage_errors(folder):
        folder.mkdir(parents=True, exist_ok=True)
    for leftover in folder.glob(".*.tmp"):  # half-written files of a killed run
        with contextlib.suppress(OSError):
            leftover.unlink()
    write_json(folder / "spec.json", spec.to_dict())
    info = prepared["info"]
    toy = toy_settings()
    config = spec.train if toy is None else dataclasses.replace(spec.train, epochs=toy["epochs"])
    torch.manual_seed(spec.seed)
    model = make_model(spec.arch, info.num_classes, head=spec.head, **spec.head_kw)
    loss_fn = build_loss(spec, prepared["train_counts"], info.num_classes)
    start = time.perf_counter()
    cpu = resolve_device(config.device).type == "cpu"
    # One thread on a CPU: the CPU-sized nets gain nothing from more, run_many trains two runs
    # side by side, and the numbers do not depend on the machine's core count.
    with single_thread() if cpu else contextlib.nullcontext():
        record = fit(
            model,
            loss_fn,
            prepared["train"],
            prepared["test"],
            config,
            cls_num_list=prepared["train_counts"],
            checkpoint_path=checkpoint,
            resume=checkpoint.exists() and not retrain,
            name=f"{spec.key()} ({spec.label})" if spec.label else spec.key(),
        )
        x_test, y_test = prepared["test"]
        ev = evaluate(
            model, x_test, y_test, mean=config.mean, std=config.std, precision=config.precision
        )
    seconds = time.perf_counter() - start
    metrics = _summarise(spec, record, ev, model, prepared, seconds)
    if toy is not None:
        metrics["toy"] = toy
    prototypes = model.head.prototypes.detach().cpu().numpy()
    save_npz(
        folder / "features.npz",
        features=np.asarray(ev["features"], dtype=np.float32),
        logits=np.asarray(ev["logits"], dtype=np.float32),
        targets=np.asarray(ev["targets"]),
        prototypes=prototypes.astype(np.float32),
    )
    write_json(folder / "metrics.json", metrics)
    return RunResult(spec, metrics, folder)


def _summarise(spec, record, ev, model, prepared, seconds) -> dict:
    info = prepared["info"]
    k = info.num_classes
    counts = prepared["train_counts"]
    logits, targets, feats = ev["logits"], ev["targets"], ev["features"]
    per_class = pmetrics.per_class_accuracy(logits, targets, k)
    prototypes = model.head.prototypes.detach().cpu()
    out = {
        "label": spec.label,
        "key": spec.key(),
        "profile_sizes": {"train": int(sum(counts)), "test": int(len(targets))},
        "train_counts": list(map(int, counts)),
        "split_train_counts": list(map(int, prepared.get("split_train_counts", counts))),
        "history": record.history,
        "last_acc": float(ev["acc"]),
        "best_acc": float(record.best_acc) if record.best_acc is not None else None,
        "best_epoch": record.best_epoch,
        "per_class_acc": pmetrics.nan_to_none(per_class),
        "shot_groups": pmetrics.shot_group_accuracy(per_class, counts),
        "min_prototype_angle": float(pmetrics.min_prototype_angle(prototypes)),
        "weight_norms": pmetrics.nan_to_none(pmetrics.weight_norms(prototypes)),
        "feature_norms": pmetrics.nan_to_none(pmetrics.feature_norms_per_class(feats, targets, k)),
        "confidence": pmetrics.nan_to_none(pmetrics.mean_confidence_per_class(logits, targets, k)),
        "seconds": seconds,
        "attempts": {"count": 1 + len(record.resumed_from), "resumed_from": record.resumed_from},
        "torch": torch.__version__,
        "palviz": palviz.__version__,
    }
    if spec.noise_rate > 0:
        clean, noisy = prepared["clean_labels"], prepared["noisy_labels"]
        out["transition_matrix"] = pmetrics.transition_matrix(clean, noisy, k).tolist()
        out["realised_noise_rate"] = float(pmetrics.realised_noise_rate(clean, noisy))
    return out


def recorded_split_counts(specs: Sequence[RunSpec]) -> list[int] | None:
    """The training class counts of the split the specs describe (long-tailed cut, training
    subset; before a toy reduction), read from the first of ``specs`` that is cached: what a
    notebook needs of the data when it renders from the cache without the dataset (e.g.
    results unpacked from ``palviz runs unpack``). ``None`` when none is cached (or the runs
    predate the record and are toy runs)."""
    for spec in specs:
        result = read_cached(spec)
        if result is None:
            continue
        m = result.metrics
        if "split_train_counts" in m:
            return [int(c) for c in m["split_train_counts"]]
        if "toy" not in m:
            return [int(c) for c in m["train_counts"]]
    return None


def is_cached(spec: RunSpec) -> bool:
    """Whether :func:`run` would serve ``spec`` from the cache without training (a finished
    entry that reads back soundly)."""
    folder = runs_dir() / spec.key()
    return (folder / "metrics.json").exists() and entry_problem(folder) is None


def history_series(result: RunResult, key: str) -> tuple[np.ndarray, np.ndarray]:
    """``(epochs, values)`` of ``key`` over the epochs whose history row has it (1-based
    epochs, so the last of E epochs is E), e.g. ``"test_acc"`` or ``"min_prototype_angle"``."""
    rows = [r for r in result.metrics["history"] if key in r]
    if not rows:
        raise ValueError(f"no history row of {result.label!r} has {key!r}")
    epochs = np.array([r["epoch"] + 1 for r in rows])
    return epochs, np.array([r[key] for r in rows], dtype=float)


def list_runs() -> list[dict]:
    """Every cached run: key, label, dataset, loss, head, finished or not, size on disk."""
    root = runs_dir()
    out = []
    if not root.exists():
        return out
    for folder in _entries(root):
        spec_file = folder / "spec.json"
        try:
            spec = json.loads(spec_file.read_text()) if spec_file.exists() else {}
        except ValueError:
            spec = {}
        done = folder / "metrics.json"
        try:
            acc = json.loads(done.read_text()).get("last_acc") if done.exists() else None
        except (ValueError, AttributeError):
            acc = None
        out.append(
            {
                "key": folder.name,
                "label": spec.get("label", ""),
                "dataset": spec.get("dataset", "?"),
                "loss": spec.get("loss", "?"),
                "head": spec.get("head", "?"),
                "epochs": spec.get("train", {}).get("epochs"),
                "finished": done.exists(),
                "last_acc": acc,
                "bytes": sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()),
            }
        )
    return out


def clear_runs(keys: Sequence[str] | None = None) -> int:
    """Delete the cached runs with these keys (all when ``None``); returns how many."""
    root = runs_dir()
    if not root.exists():
        return 0
    targets = [p for p in _entries(root) if keys is None or p.name in keys]
    for folder in targets:
        shutil.rmtree(folder)
    return len(targets)


def _entries(root: Path) -> list[Path]:
    """The run folders under ``root`` (not ``.locks``, ``.broken`` or other dot folders)."""
    if not root.exists():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def check_runs(*, fix: bool = False) -> list[dict]:
    """Verify every cache entry (files present and readable, the checkpoint loaded with
    ``weights_only=True``, the key in ``metrics.json`` equal to the folder's name). Returns one
    row per entry: ``key``, ``label``, ``status`` (``"ok"``, ``"unfinished"`` or
    ``"broken"``), ``problem``, and for an unfinished one ``resumable`` (it has a checkpoint).
    ``fix=True`` moves broken entries to ``runs/.broken/`` and removes the unfinished entries
    with nothing to resume (a run that failed before its first checkpoint) that no process is
    training (their lock is free); such a row gets ``removed=True``."""
    import warnings

    from palviz.experiments.locks import RunLock

    root = runs_dir()
    rows = []
    for folder in _entries(root):
        label = ""
        with contextlib.suppress(Exception):
            label = json.loads((folder / "spec.json").read_text()).get("label", "")
        problem = entry_problem(folder, thorough=True)
        finished = (folder / "metrics.json").exists()
        status = "broken" if problem else ("ok" if finished else "unfinished")
        row = {"key": folder.name, "label": label, "status": status, "problem": problem}
        if problem and fix:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                row["moved_to"] = str(quarantine(folder, problem, label))
        if status == "unfinished":
            row["resumable"] = (folder / "checkpoint.pt").exists()
            if fix and not row["resumable"]:
                lock = RunLock(root, folder.name, poll=0)
                if lock.acquire(done=lambda: True):  # False at once while a process trains it
                    try:
                        if not (folder / "checkpoint.pt").exists():
                            shutil.rmtree(folder)
                            row["removed"] = True
                    finally:
                        lock.release()
        rows.append(row)
    return rows


def initial_prototypes(spec: RunSpec) -> np.ndarray:
    """The head's class vectors ``[num_classes, feat_dim]`` at initialisation, exactly as
    :func:`run` builds the model (seeded with ``spec.seed``), without training; the global
    torch random state is left as it was. Epoch 0 of a prototype-angle curve."""
    info = pdata.dataset_info(spec.dataset)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = make_model(spec.arch, info.num_classes, head=spec.head, **spec.head_kw)
    return model.head.prototypes.detach().cpu().numpy()


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of its finished child processes (e.g. the
    training processes of :func:`palviz.experiments.cluster.run_many`), in seconds: on a shared
    machine a
    fairer measure of a notebook's cost than wall time. Children count on POSIX only."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
