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
:mod:`palviz.experiments.recipes`, the tables made from results in :mod:`palviz.experiments.tables`,
the folders' upkeep (broken entries, listing, clearing) in :mod:`palviz.experiments.cachedir`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import numbers
import os
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
from palviz.checks import ArgumentTypeError, check_choice, check_probability, check_real, invalid
from palviz.cpu import pin_label, pin_state
from palviz.experiments.cachedir import (
    check_cache_writable,
    checkpoint_problem,
    entry_problem,
    quarantine,
)
from palviz.files import (
    DiskFullError,
    StorageError,
    cache_dir,
    runs_dir,
    save_npz,
    setting_key,
    storage_errors,
    write_json,
)
from palviz.heads import HEAD_KINDS, HEADS
from palviz.losses import registry
from palviz.models import check_arch, make_model
from palviz.threads import single_thread
from palviz.train import TrainConfig, evaluate, fit, resolve_device

#: Bump when the meaning or layout of cached results changes.
CACHE_SCHEMA = 5  # 5: the key holds the CPU pin and the data's fingerprint; held_out

#: The toy sizes (``RunSpec.toy``): 1 epoch on at most 200 training samples, tested on at
#: most 200 test samples (each class present keeps at least one).
TOY = {"epochs": 1, "train": 200, "test": 200}


def toy_sizes() -> dict | None:
    """``RunSpec.toy`` of a spec made now without one: :data:`TOY` when ``$PALVIZ_TOY`` is set
    (to anything but ``""``/``"0"``), else ``None``. The way a test or a command asks for the
    ``paper`` profile's code path end to end on a CPU: the variable is read only when a spec
    is made, and the spec then says it is a toy run (its ``spec.json`` and its key)."""
    if os.environ.get("PALVIZ_TOY", "") in ("", "0"):
        return None
    return dict(TOY)


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
    - ``held_out``: set aside this many training samples of every class (seeded), before the
      long-tailed cut, so that the cut is made from the rest: a balanced split, the head class
      included, that the run never trains on (:func:`palviz.experiments.posthoc.held_out_split`
      chooses post-hoc parameters there). 0 sets none aside.
    - ``toy``: ``None``, or the toy sizes ``{"epochs", "train", "test"}``: the run keeps its
      recipe but trains ``epochs`` epochs on a stratified subset of at most ``train`` samples
      (cut after the long tail, before the noise), tested on at most ``test``. Default:
      :func:`toy_sizes` (``$PALVIZ_TOY``), read as the spec is made.
    - ``head``/``head_kw``: ``"linear"``, ``"cosine"`` (learnable, normalised) or
      ``"anchored"`` (PAL; ``normalize=True, scale=s`` is FNPAL).

    Every field is checked when the spec is made (a ``ValueError``, or a ``TypeError`` for a
    value of the wrong type, naming ``RunSpec.<field>``, the value and what is allowed): the
    dataset, network, loss and head are ones palviz knows, the network reads the dataset's
    samples; ``loss_kw`` and ``head_kw`` hold arguments of the loss's and the head's
    constructors (whose values those constructors check when the run builds them), ``train``
    may be a dict. Making a spec builds nothing.
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
    held_out: int = 0
    toy: dict | None = field(default_factory=toy_sizes)
    seed: int = 0
    train: TrainConfig = field(default_factory=TrainConfig)
    label: str = ""

    def __post_init__(self):
        # Every field is checked before a key or a folder exists; a ``train`` dict becomes its
        # TrainConfig, nothing else is converted: the key is a hash of the fields as given.
        check_choice("RunSpec.dataset", self.dataset, pdata.DATASETS)
        check_arch("RunSpec.arch", self.arch, reads=pdata.dataset_info(self.dataset))
        check_choice("RunSpec.loss", self.loss, tuple(registry.LOSSES))
        if not isinstance(self.loss_kw, dict):
            rule = f"a dict of arguments of loss {self.loss!r}"
            raise _wrong_type("RunSpec.loss_kw", self.loss_kw, rule)
        registry.check_loss_kw(self.loss, self.loss_kw, field_name="RunSpec.loss_kw")
        _check_head(self.head, self.head_kw)
        check_choice("RunSpec.lt_shape", self.lt_shape, pdata.LONG_TAIL_SHAPES)
        if check_real("RunSpec.imbalance_ratio", self.imbalance_ratio) < 1:
            raise invalid("RunSpec.imbalance_ratio", self.imbalance_ratio, ">= 1")
        check_probability("RunSpec.noise_rate", self.noise_rate)
        check_choice("RunSpec.noise_kind", self.noise_kind, ("symmetric", "asymmetric"))
        if self.train_size is not None:
            _check_integer("RunSpec.train_size", self.train_size, 2, "None or an integer >= 2")
        toy_rule = 'None or a dict {"epochs", "train", "test"} of integers >= 1'
        if self.toy is not None and (not isinstance(self.toy, dict) or set(self.toy) != set(TOY)):
            raise _wrong_type("RunSpec.toy", self.toy, toy_rule)
        for value in (self.toy or {}).values():
            _check_integer("RunSpec.toy", value, 1, toy_rule)
        _check_integer("RunSpec.held_out", self.held_out, 0, "an integer >= 0")
        _check_integer("RunSpec.seed", self.seed, 0, "an integer >= 0")
        if isinstance(self.train, dict):
            object.__setattr__(self, "train", _train_config(self.train))
        if not isinstance(self.train, TrainConfig):
            raise _wrong_type("RunSpec.train", self.train, "a TrainConfig (or its dict)")
        if not isinstance(self.label, str):
            raise _wrong_type("RunSpec.label", self.label, "a string")

    def to_dict(self) -> dict:
        """The spec as JSON-ready data (``train`` as a dict)."""
        return dataclasses.asdict(self)

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
        """16 hex digits identifying the result: a hash of the spec (without ``label`` and
        ``train.progress``, which only change how it is shown), palviz's version, the
        :data:`CACHE_SCHEMA`, the dataset's content (:func:`palviz.data.dataset_fingerprint`:
        a changed loader trains again), this process's CPU pin (:func:`palviz.cpu.pin_label`:
        a run unpinned never stands in for a pinned one) and, for a noisy spec,
        :data:`palviz.data.NOISE_REVISION`."""
        payload = self.to_dict()
        payload.pop("label")
        payload["train"].pop("progress")
        payload["_version"] = palviz.__version__
        payload["_schema"] = CACHE_SCHEMA
        payload["_data"] = pdata.dataset_fingerprint(self.dataset)
        payload["_cpu"] = pin_label()
        if self.noise_rate > 0:
            payload["_noise_revision"] = pdata.NOISE_REVISION
        return setting_key(payload)

    def replace(self, **changes: Any) -> RunSpec:
        """A copy with some fields changed (``train=dict(...)`` updates the TrainConfig)."""
        if isinstance(changes.get("train"), dict):
            changes["train"] = dataclasses.replace(self.train, **changes["train"])
        return dataclasses.replace(self, **changes)


def _wrong_type(name: str, value: Any, rule: str) -> ArgumentTypeError:
    return ArgumentTypeError(str(invalid(name, value, rule)))


def _check_integer(name: str, value: Any, minimum: int, rule: str) -> None:
    """``value`` is an int (not a bool) >= ``minimum``, else an error naming ``rule``."""
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


def _check_head(head: Any, head_kw: Any) -> None:
    """``RunSpec.head`` is a head palviz knows, ``RunSpec.head_kw`` holds arguments its
    constructor takes (but ``in_features`` and ``num_classes``, which the model supplies)."""
    check_choice("RunSpec.head", head, HEAD_KINDS)
    params = inspect.signature(HEADS[head]).parameters
    allowed = tuple(name for name in params if name not in ("in_features", "num_classes"))
    rule = f"a dict of arguments of the {head!r} head"
    if not isinstance(head_kw, dict):
        raise _wrong_type("RunSpec.head_kw", head_kw, f"{rule} {allowed}")
    for key in head_kw:
        if key not in allowed:
            why = f"keys from {list(allowed)} ({key!r} is not one of them)"
            raise invalid("RunSpec.head_kw", head_kw, f"{rule}, {why}")


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
        embedding = umap_embedding(arrays["features"][keep], seed=seed)
        labels = arrays["targets"][keep]
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


def prepare_data(spec: RunSpec) -> dict[str, Any]:
    """The training and test data a spec describes: the (optionally reduced, long-tailed,
    noisy) training split and the whole test split, plus the class counts,
    ``train_index`` (which samples of the dataset's training split the run trains on) and
    ``held_out``, the ``(x, y)`` set aside first (``spec.held_out`` per class, clean labels).
    A ``held_out`` that leaves a class without a sample to train on is a ``ValueError``."""
    info = pdata.dataset_info(spec.dataset)
    x, y = pdata.load_dataset(spec.dataset, "train")
    x_test, y_test = pdata.load_dataset(spec.dataset, "test")
    labels = np.asarray(y)
    # the samples of the training split the run trains on, cut step by step
    index = pdata.stratified_subset(labels, spec.train_size, spec.seed)
    aside = pdata.held_out_indices(
        labels[index], spec.held_out, info.num_classes, spec.seed, "RunSpec.held_out"
    )
    held_out = (x[index[aside]], y[index[aside]])
    index = np.delete(index, aside)
    if spec.imbalance_ratio > 1:
        index, _, _ = pdata.make_long_tailed(
            index, labels[index], spec.imbalance_ratio, shape=spec.lt_shape, seed=spec.seed
        )
    split_counts = np.bincount(labels[index], minlength=info.num_classes).tolist()
    # the training set the spec describes, before any toy reduction; a toy run reduces it
    # before the labels are corrupted, so that its noise follows the rule on what it trains on
    if spec.toy is not None:
        index = index[pdata.covering_subset(labels[index], spec.toy["train"], spec.seed)]
        test_keep = pdata.covering_subset(np.asarray(y_test), spec.toy["test"], spec.seed)
        x_test, y_test = x_test[test_keep], y_test[test_keep]
    x, y, clean = x[index], y[index], labels[index]
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
        "train_index": index,
        "held_out": held_out,
        "train_counts": np.bincount(clean, minlength=info.num_classes).tolist(),
        "split_train_counts": split_counts,
        "clean_labels": clean,
        "noisy_labels": np.asarray(y),
    }


def read_cached(spec: RunSpec, folder: Path | None = None) -> RunResult | None:
    """The finished, sound entry of ``spec`` (in ``folder``, by default ``runs/<key>``), or
    ``None`` (missing, moved aside meanwhile by another process, or broken: then moved aside
    with a warning)."""
    folder = runs_dir() / spec.key() if folder is None else folder
    with contextlib.suppress(FileNotFoundError):  # moved aside by another process meanwhile
        if (folder / "metrics.json").exists():
            problem = entry_problem(folder)
            if problem is None:
                return RunResult(spec, json.loads((folder / "metrics.json").read_text()), folder)
            quarantine(folder, problem, spec.label)
    return None


def run(spec: RunSpec, *, retrain: bool = False) -> RunResult:
    """The result of ``spec``: from the cache when it is there, else trained now (resuming
    from a checkpoint an interrupted or killed run left) and cached.

    Safe for concurrent workers on one ``runs/`` folder (see :mod:`palviz.experiments.locks`): one
    of them trains a key, the others wait and read its result. A broken entry (unreadable
    ``metrics.json``, ``features.npz`` or ``checkpoint.pt``, or a key that is not its folder's
    name) is moved to ``runs/.broken/`` with a warning and trained again.
    """
    from palviz.experiments.locks import RunLock

    folder = runs_dir() / spec.key()
    cached = None if retrain else read_cached(spec, folder)
    if cached is not None:
        return cached
    check_cache_writable([spec])
    lock = RunLock(folder.parent, spec.key())
    # another worker holding the lock may finish the run meanwhile: then read its result
    while not lock.acquire(done=lambda: not retrain and (folder / "metrics.json").exists()):
        if (cached := read_cached(spec, folder)) is not None:
            return cached
    try:
        cached = None if retrain else read_cached(spec, folder)
        return cached if cached is not None else _train(spec, folder, retrain=retrain)
    finally:
        lock.release()


def _train(spec: RunSpec, folder: Path, *, retrain: bool) -> RunResult:
    """Train ``spec`` into ``folder`` (the caller holds its lock)."""
    checkpoint = folder / "checkpoint.pt"
    if checkpoint.exists() and not retrain:
        problem = checkpoint_problem(checkpoint, thorough=True)
        if problem is not None:
            quarantine(folder, problem, spec.label)
    # The data, the model and the loss first: a run that cannot read its data (e.g. a dataset
    # not downloaded) or build its head or loss (their constructors check the values of
    # ``head_kw`` and ``loss_kw``) leaves no entry.
    prepared = prepare_data(spec)
    model = _initial_model(spec)
    k, counts = prepared["info"].num_classes, prepared["train_counts"]
    loss_fn = registry.build_loss(spec.loss, spec.loss_kw, class_counts=counts, num_classes=k)
    with storage_errors(folder):
        folder.mkdir(parents=True, exist_ok=True)
    for leftover in folder.glob(".*.tmp"):  # half-written files of a killed run
        with contextlib.suppress(OSError):
            leftover.unlink()
    write_json(folder / "spec.json", spec.to_dict())
    epochs = spec.train.epochs if spec.toy is None else spec.toy["epochs"]  # a toy run stops early
    config = dataclasses.replace(spec.train, epochs=epochs)
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
            cls_num_list=counts,
            checkpoint_path=checkpoint,
            resume=checkpoint.exists() and not retrain,
            name=f"{spec.key()} ({spec.label})" if spec.label else spec.key(),
        )
        ev = evaluate(model, *prepared["test"], mean=config.mean, std=config.std)
    prototypes = model.head.prototypes.detach().cpu()
    metrics = _summarise(spec, record, ev, prototypes, prepared, time.perf_counter() - start)
    save_npz(
        folder / "features.npz",
        features=np.asarray(ev["features"], dtype=np.float32),
        logits=np.asarray(ev["logits"], dtype=np.float32),
        targets=np.asarray(ev["targets"]),
        prototypes=prototypes.numpy().astype(np.float32),
    )
    write_json(folder / "metrics.json", metrics)
    return RunResult(spec, metrics, folder)


def _summarise(spec, record, ev, prototypes, prepared, seconds) -> dict:
    """The ``metrics.json`` of a run: what a table or figure needs of it."""
    k = prepared["info"].num_classes
    counts = prepared["train_counts"]
    logits, targets, feats = ev["logits"], ev["targets"], ev["features"]
    per_class = pmetrics.per_class_accuracy(logits, targets, k)
    out = {
        "label": spec.label,
        "key": spec.key(),
        "profile_sizes": {"train": int(sum(counts)), "test": int(len(targets))},
        "train_counts": list(map(int, counts)),
        "split_train_counts": list(map(int, prepared["split_train_counts"])),
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
        "cpu": pin_state(),
    }
    if spec.noise_rate > 0:
        clean, noisy = prepared["clean_labels"], prepared["noisy_labels"]
        out["transition_matrix"] = pmetrics.transition_matrix(clean, noisy, k).tolist()
        out["realised_noise_rate"] = float(pmetrics.realised_noise_rate(clean, noisy))
    if spec.toy is not None:
        out["toy"] = spec.toy
    return out


def recorded_split_counts(specs: Sequence[RunSpec]) -> list[int] | None:
    """The training class counts of the split the specs describe (long-tailed cut, training
    subset; before a toy reduction), read from the first of ``specs`` that is cached: what a
    notebook needs of the data when it renders from the cache without the dataset (e.g.
    results unpacked from ``palviz runs unpack``). ``None`` when none is cached."""
    for spec in specs:
        result = read_cached(spec)
        if result is not None:
            return [int(c) for c in result.metrics["split_train_counts"]]
    return None


def is_cached(spec: RunSpec) -> bool:
    """Whether :func:`run` would serve ``spec`` from the cache without training (a finished
    entry that reads back soundly)."""
    folder = runs_dir() / spec.key()
    return (folder / "metrics.json").exists() and entry_problem(folder) is None


def _initial_model(spec: RunSpec) -> torch.nn.Module:
    """The model ``spec`` trains, as initialised (torch seeded with ``spec.seed``)."""
    info = pdata.dataset_info(spec.dataset)
    torch.manual_seed(spec.seed)
    return make_model(spec.arch, info.num_classes, spec.head, shape=info.shape, **spec.head_kw)


def initial_prototypes(spec: RunSpec) -> np.ndarray:
    """The head's class vectors ``[num_classes, feat_dim]`` at initialisation, exactly as
    :func:`run` builds the model (seeded with ``spec.seed``), without training; the global
    torch random state is left as it was. Epoch 0 of a prototype-angle curve."""
    with torch.random.fork_rng(devices=[]):
        return _initial_model(spec).head.prototypes.detach().cpu().numpy()


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of its finished child processes (e.g. the
    training processes of :func:`palviz.experiments.cluster.run_many`), in seconds: on a shared
    machine a fairer measure of a notebook's cost than wall time (children: POSIX only)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
