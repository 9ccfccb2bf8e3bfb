"""The run cache: a training run as plain data (:class:`RunSpec`), its result
(:class:`RunResult`), and :func:`run` / :func:`run_many`, which train a spec once and serve it
from ``runs/`` afterwards.

A run's result is cached under ``runs/<key>/``, where ``key`` is a hash of the full spec plus
palviz's version and :data:`CACHE_SCHEMA`, so changing anything that could change the result
(including a fixed bug, by bumping the version or schema) trains again, and nothing else does:

- ``spec.json``     the spec, for people
- ``checkpoint.pt`` the trainer's checkpoint (model, optimiser, history; ``weights_only=True``);
  an interrupted run resumes from it
- ``features.npz``  test-set penultimate features, logits, targets and the head's prototypes
- ``metrics.json``  everything a table or figure needs; written last, so its presence marks
  a finished run

Every file is written atomically. The named recipes that make specs live in
:mod:`palviz.recipes`, the tables made from results in :mod:`palviz.tables`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import palviz
from palviz import data as pdata
from palviz import metrics as pmetrics
from palviz.files import runs_dir, save_npz, write_json
from palviz.losses import make_loss
from palviz.models import make_model
from palviz.threads import single_thread
from palviz.train import TrainConfig, _nan_to_none, evaluate, fit, resolve_device

#: Bump when the meaning or layout of cached results changes.
CACHE_SCHEMA = 2

#: Losses whose constructor takes the training class counts.
_NEEDS_COUNTS = ("ldam", "elm", "elm_wo_delta_y")
#: Losses whose constructor takes the number of classes.
_NEEDS_NUM_CLASSES = ("mae", "rce", "gce", "sce", "nce", "nfl", "nce+rce", "nfl+rce", "nce+mae")


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
        if self.dataset not in pdata.DATASETS:
            raise ValueError(f"dataset must be one of {pdata.DATASETS}, got {self.dataset!r}")
        if not self.imbalance_ratio >= 1:
            raise ValueError(f"imbalance_ratio must be >= 1, got {self.imbalance_ratio!r}")
        if not 0 <= self.noise_rate <= 1:
            raise ValueError(f"noise_rate must be in [0, 1], got {self.noise_rate!r}")
        if self.noise_kind not in ("symmetric", "asymmetric"):
            raise ValueError(
                f"noise_kind must be 'symmetric' or 'asymmetric', got {self.noise_kind!r}"
            )
        if self.train_size is not None and self.train_size < 2:
            raise ValueError(f"train_size must be >= 2 or None, got {self.train_size!r}")

    def to_dict(self) -> dict:
        """The spec as JSON-ready data (``train`` as a dict)."""
        out = dataclasses.asdict(self)
        out["train"] = dataclasses.asdict(self.train)
        return out

    def key(self) -> str:
        """16 hex digits identifying the result: the spec without ``label``, palviz's version
        and the cache schema."""
        payload = self.to_dict()
        payload.pop("label")
        payload["train"].pop("progress", None)  # how a run is displayed does not change it
        payload["_version"] = palviz.__version__
        payload["_schema"] = CACHE_SCHEMA
        text = json.dumps(payload, sort_keys=True, default=_jsonable)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def replace(self, **changes: Any) -> RunSpec:
        """A copy with some fields changed (``train=dict(...)`` updates the TrainConfig)."""
        if isinstance(changes.get("train"), dict):
            changes["train"] = dataclasses.replace(self.train, **changes["train"])
        return dataclasses.replace(self, **changes)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, set)):
        return list(value)
    raise TypeError(f"cannot put {type(value).__name__} into a run spec")


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
        with np.load(self.path / "features.npz") as arrays:
            return {name: arrays[name] for name in arrays.files}

    def embedding(self, max_points: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """A 2-D UMAP embedding of (at most ``max_points``, stratified) test features and
        their labels, cached next to the run."""
        path = self.path / f"umap_{max_points}_{seed}.npz"
        if path.exists():
            with np.load(path) as arrays:
                return arrays["embedding"], arrays["labels"]
        from palviz.viz import umap_embedding

        arrays = self.features()
        keep = _stratified_subset(arrays["targets"], max_points, seed)
        embedding = umap_embedding(arrays["features"][keep], seed=seed)
        save_npz(path, embedding=embedding, labels=arrays["targets"][keep])
        return embedding, arrays["targets"][keep]


def _stratified_subset(targets: np.ndarray, size: int | None, seed: int) -> np.ndarray:
    """Sorted indices of a seeded subset of ``size`` samples with class proportions kept."""
    targets = np.asarray(targets)
    if size is None or size >= len(targets):
        return np.arange(len(targets))
    rng = np.random.default_rng(seed)
    classes, sizes = np.unique(targets, return_counts=True)
    # largest-remainder apportionment: exactly `size` samples, class proportions kept
    quota = size * sizes / len(targets)
    take = np.floor(quota).astype(int)
    take[np.argsort(take - quota, kind="stable")[: size - take.sum()]] += 1
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
        keep = _stratified_subset(y.numpy(), spec.train_size, spec.seed)
        x, y = x[keep], y[keep]
    if spec.imbalance_ratio > 1:
        x, y, _ = pdata.make_long_tailed(
            x, y, spec.imbalance_ratio, shape=spec.lt_shape, seed=spec.seed
        )
    counts = np.bincount(np.asarray(y), minlength=info.num_classes).tolist()
    clean = np.asarray(y).copy()
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
        "clean_labels": clean,
        "noisy_labels": np.asarray(y),
    }


def build_loss(spec: RunSpec, train_counts: Sequence[int], num_classes: int):
    """The loss a spec names, given the training class counts."""
    kw = dict(spec.loss_kw)
    if spec.loss in _NEEDS_COUNTS:
        kw.setdefault("cls_num_list", list(train_counts))
    if spec.loss in _NEEDS_NUM_CLASSES:
        kw.setdefault("num_classes", num_classes)
    return make_loss(spec.loss, **kw)


def run(spec: RunSpec, *, retrain: bool = False) -> RunResult:
    """The result of ``spec``: from the cache when it is there, else trained now (resuming
    from a checkpoint an interrupted run left) and cached."""
    folder = runs_dir() / spec.key()
    done = folder / "metrics.json"
    if done.exists() and not retrain:
        return RunResult(spec, json.loads(done.read_text()), folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "spec.json", spec.to_dict())
    prepared = prepare_data(spec)
    info = prepared["info"]
    torch.manual_seed(spec.seed)
    model = make_model(spec.arch, info.num_classes, head=spec.head, **spec.head_kw)
    loss_fn = build_loss(spec, prepared["train_counts"], info.num_classes)
    start = time.perf_counter()
    cpu = resolve_device(spec.train.device).type == "cpu"
    # One thread on a CPU: the CPU-sized nets gain nothing from more, run_many trains two runs
    # side by side, and the numbers do not depend on the machine's core count.
    with single_thread() if cpu else contextlib.nullcontext():
        record = fit(
            model,
            loss_fn,
            prepared["train"],
            prepared["test"],
            spec.train,
            cls_num_list=prepared["train_counts"],
            checkpoint_path=folder / "checkpoint.pt",
            resume=(folder / "checkpoint.pt").exists() and not retrain,
        )
        x_test, y_test = prepared["test"]
        ev = evaluate(model, x_test, y_test, mean=spec.train.mean, std=spec.train.std)
    seconds = time.perf_counter() - start
    metrics = _summarise(spec, record, ev, model, prepared, seconds)
    prototypes = model.head.prototypes.detach().cpu().numpy()
    save_npz(
        folder / "features.npz",
        features=np.asarray(ev["features"], dtype=np.float32),
        logits=np.asarray(ev["logits"], dtype=np.float32),
        targets=np.asarray(ev["targets"]),
        prototypes=prototypes.astype(np.float32),
    )
    write_json(done, metrics)
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
        "history": record.history,
        "last_acc": float(ev["acc"]),
        "best_acc": float(record.best_acc) if record.best_acc is not None else None,
        "best_epoch": record.best_epoch,
        "per_class_acc": _nan_to_none(per_class),
        "shot_groups": pmetrics.shot_group_accuracy(per_class, counts),
        "min_prototype_angle": float(pmetrics.min_prototype_angle(prototypes)),
        "weight_norms": _nan_to_none(pmetrics.weight_norms(prototypes)),
        "feature_norms": _nan_to_none(pmetrics.feature_norms_per_class(feats, targets, k)),
        "confidence": _nan_to_none(pmetrics.mean_confidence_per_class(logits, targets, k)),
        "seconds": seconds,
        "torch": torch.__version__,
        "palviz": palviz.__version__,
    }
    if spec.noise_rate > 0:
        clean, noisy = prepared["clean_labels"], prepared["noisy_labels"]
        out["transition_matrix"] = pmetrics.transition_matrix(clean, noisy, k).tolist()
        out["realised_noise_rate"] = float(pmetrics.realised_noise_rate(clean, noisy))
    return out


def is_cached(spec: RunSpec) -> bool:
    """Whether :func:`run` would serve ``spec`` from the cache without training."""
    return (runs_dir() / spec.key() / "metrics.json").exists()


def run_many(
    specs: Iterable[RunSpec], *, desc: str = "runs", workers: int | None = None
) -> list[RunResult]:
    """:func:`run` each spec, with one progress bar; missing runs train ``workers`` at a time.

    Cached runs are read here (a warm cache starts no process). Each missing cache key is
    trained once, in ``workers`` fresh (spawned) processes; ``workers=None`` means one per
    core (at most 2) on a CPU and 1 (in this process) on CUDA. Since :func:`run` trains CPU
    runs on one thread, two runs side by side use two cores fully. Returns one
    :class:`RunResult` per spec, in order, each carrying its own spec (and label).
    """
    from tqdm.auto import tqdm

    specs = list(specs)
    if workers is None:
        workers = 1 if torch.cuda.is_available() else max(1, min(2, os.cpu_count() or 1))
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be None or an integer >= 1, got {workers!r}")
    results: list[RunResult | None] = [None] * len(specs)
    missing: dict[str, list[int]] = {}
    for i, spec in enumerate(specs):
        if is_cached(spec):
            results[i] = run(spec)
        else:
            missing.setdefault(spec.key(), []).append(i)

    def store(key: str, result: RunResult) -> None:
        for i in missing[key]:
            results[i] = RunResult(specs[i], result.metrics, result.path)

    todo = {key: specs[idx[0]] for key, idx in missing.items()}
    if todo and (workers == 1 or len(todo) == 1):
        with tqdm(todo.items(), desc=desc, unit="run") as bar:
            for key, spec in bar:
                bar.set_postfix_str(spec.label or spec.loss)
                store(key, run(spec))
    elif todo:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        context = multiprocessing.get_context("spawn")  # fork is unsafe after torch's threads
        with ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=context) as pool:
            futures = {pool.submit(run, spec): key for key, spec in todo.items()}
            with tqdm(total=len(futures), desc=desc, unit="run") as bar:
                for future in as_completed(futures):
                    store(futures[future], future.result())
                    bar.update()
    return results  # type: ignore[return-value]


def run_grouped(
    groups: dict[Any, Sequence[RunSpec]], *, desc: str = "runs", workers: int | None = None
) -> dict[Any, list[RunResult]]:
    """:func:`run_many` over several named lists of specs at once (one pool of workers for
    all of them), returning the results under the same names, each list in order."""
    flat = [spec for specs in groups.values() for spec in specs]
    results = iter(run_many(flat, workers=workers, desc=desc))
    return {name: [next(results) for _ in specs] for name, specs in groups.items()}


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
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        spec_file = folder / "spec.json"
        spec = json.loads(spec_file.read_text()) if spec_file.exists() else {}
        done = folder / "metrics.json"
        acc = json.loads(done.read_text()).get("last_acc") if done.exists() else None
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
    targets = [p for p in root.iterdir() if p.is_dir() and (keys is None or p.name in keys)]
    for folder in targets:
        shutil.rmtree(folder)
    return len(targets)


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
    training processes of :func:`run_many`), in seconds: on a shared machine a fairer
    measure of a notebook's cost than wall time. Children count on POSIX only."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
