"""The run cache: a run's result (:class:`RunResult`) and :func:`run`, which trains a spec
(:class:`~palviz.experiments.runspec.RunSpec`) once in this process and serves it from
``runs/`` afterwards (training many runs in other processes is
:func:`palviz.experiments.cluster.run_many`'s, which builds on this module).

A run's result is cached under ``runs/<key>/``, where ``key`` is a hash of the full spec plus
palviz's version and :data:`~palviz.experiments.runspec.CACHE_SCHEMA`
(:meth:`~palviz.experiments.runspec.RunSpec.key`), so changing anything that could change the
result (including a fixed bug, by bumping the version or schema) trains again, and nothing
else does:

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
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

import palviz
from palviz import data as pdata
from palviz import metrics as pmetrics
from palviz.cpu import pin_state
from palviz.experiments.cachedir import (
    check_cache_writable,
    checkpoint_problem,
    entry_problem,
    quarantine,
)
from palviz.experiments.runspec import RunSpec
from palviz.files import (
    DiskFullError,
    StorageError,
    cache_dir,
    runs_dir,
    save_npz,
    storage_errors,
    write_json,
)
from palviz.losses import registry
from palviz.models import make_model
from palviz.threads import single_thread
from palviz.train import evaluate, fit, resolve_device


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
