"""Named experiments, profiles and the run cache.

A notebook describes each training run as a :class:`RunSpec` (plain data: dataset,
long-tail ratio, label noise, model, head, loss, training schedule, seed) and asks
:func:`run` for its result. The result is cached under ``runs/<key>/``, where ``key`` is a
hash of the full spec plus palviz's version and :data:`CACHE_SCHEMA`, so changing anything
that could change the result (including a fixed bug, by bumping the version or schema)
trains again, and nothing else does:

- ``spec.json``     the spec, for people
- ``checkpoint.pt`` the trainer's checkpoint (model, optimiser, history; ``weights_only=True``);
  an interrupted run resumes from it
- ``features.npz``  test-set penultimate features, logits, targets and the head's prototypes
- ``metrics.json``  everything a table or figure needs; written last, so its presence marks
  a finished run

Every file is written atomically. Methods (``"LDAM-DRW"``, ``"CE+PAL"``, ``"CE+FNPAL"``, ...)
are named recipes of loss + head + re-weighting, following REFERENCE.md 6.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import palviz
from palviz import data as pdata
from palviz import metrics as pmetrics
from palviz.files import resolve_profile, runs_dir, save_npz, write_json
from palviz.losses import make_loss
from palviz.models import make_model
from palviz.theory import noise_aware_scale
from palviz.train import TrainConfig, evaluate, fit, resolve_device

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
      long-tailed subset (``lt_profile`` "exp" or "step", REFERENCE.md 1).
    - ``noise_rate``/``noise_kind``: synthetic label noise on the training labels only
      (REFERENCE.md 4), drawn with ``seed``.
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
    lt_profile: str = "exp"
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
            x, y, spec.imbalance_ratio, profile=spec.lt_profile, seed=spec.seed
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
    threads = torch.get_num_threads()
    if resolve_device(spec.train.device).type == "cpu":
        # One thread: the CPU-sized nets gain nothing from more, run_many trains two runs side
        # by side, and the numbers do not depend on the machine's core count.
        torch.set_num_threads(1)
    try:
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
    finally:
        torch.set_num_threads(threads)
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
        "per_class_acc": _floats(per_class),
        "shot_groups": pmetrics.shot_group_accuracy(per_class, counts),
        "min_prototype_angle": float(pmetrics.min_prototype_angle(prototypes)),
        "weight_norms": _floats(pmetrics.weight_norms(prototypes)),
        "feature_norms": _floats(pmetrics.feature_norms_per_class(feats, targets, k)),
        "confidence": _floats(pmetrics.mean_confidence_per_class(logits, targets, k)),
        "seconds": seconds,
        "torch": torch.__version__,
        "palviz": palviz.__version__,
    }
    if spec.noise_rate > 0:
        clean, noisy = prepared["clean_labels"], prepared["noisy_labels"]
        out["transition_matrix"] = pmetrics.transition_matrix(clean, noisy, k).tolist()
        out["realised_noise_rate"] = float(pmetrics.realised_noise_rate(clean, noisy))
    return out


def _floats(values) -> list[float | None]:
    return [None if np.isnan(v) else float(v) for v in np.asarray(values, dtype=float)]


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


def summarise_over_seeds(results: Sequence[RunResult], key: str = "last_acc") -> dict:
    """Mean and standard deviation (over seeds) of ``metrics[key]``, per label, in order of
    first appearance: ``{label: (mean, std, n)}``; std is NaN for a single seed."""
    groups: dict[str, list[float]] = {}
    for result in results:
        groups.setdefault(result.label, []).append(result.metrics[key])
    return {
        label: (
            float(np.mean(v)),
            float(np.std(v, ddof=1)) if len(v) > 1 else float("nan"),
            len(v),
        )
        for label, v in groups.items()
    }


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


# --------------------------------------------------------------------------------------
# Methods: named recipes of loss + head + re-weighting (REFERENCE.md 6)
# --------------------------------------------------------------------------------------

#: Long-tailed methods: name -> (loss, loss kwargs, head, DRW on/off).
LT_METHODS: dict[str, tuple[str, dict, str, bool]] = {
    "CE": ("ce", {}, "linear", False),
    "Focal": ("focal", {"gamma": 1.0}, "linear", False),
    "CE-DRW": ("ce", {}, "linear", True),
    "LDAM-DRW": ("ldam", {}, "cosine", True),
    "ELM": ("elm", {}, "cosine", False),
    "ELM-DRW": ("elm", {}, "cosine", True),
    "LMSCE": ("lmsce", {}, "linear", False),
}


def lt_method(name: str, pal: bool = False) -> dict:
    """Loss, head and DRW switch of a long-tailed method, with or without PAL.

    With PAL, CE-family losses use ``AnchoredHead(normalize=False)`` (plain logits on fixed
    prototypes) and LDAM / ELM use ``AnchoredHead(normalize=True, scale=1)`` (cosine logits
    on fixed prototypes; the loss's s = 30 scales them) - REFERENCE.md 6.
    """
    if name not in LT_METHODS:
        raise ValueError(f"method must be one of {tuple(LT_METHODS)}, got {name!r}")
    loss, loss_kw, head, drw = LT_METHODS[name]
    head_kw: dict = {}
    if pal:
        head_kw = {"normalize": head == "cosine", "scale": 1.0}
        head = "anchored"
    return {
        "loss": loss,
        "loss_kw": dict(loss_kw),
        "head": head,
        "head_kw": head_kw,
        "drw": drw,
        "label": name + ("+PAL" if pal else ""),
    }


#: APL hyperparameters (REFERENCE.md 3) per dataset family; MNIST's row serves MNIST-1D and
#: digits, which have the same ten digit classes.
APL_PARAMS = {
    "mnist": {
        "nce+rce": {"alpha": 1.0, "beta": 10.0},
        "nfl+rce": {"alpha": 1.0, "beta": 10.0, "gamma": 0.5},
        "nce+mae": {"alpha": 1.0, "beta": 10.0},
        "sce": {"alpha": 0.01, "beta": 1.0},
    },
    "cifar10": {
        "nce+rce": {"alpha": 1.0, "beta": 1.0},
        "nfl+rce": {"alpha": 1.0, "beta": 1.0, "gamma": 0.5},
        "nce+mae": {"alpha": 1.0, "beta": 1.0},
        "sce": {"alpha": 0.1, "beta": 1.0},
    },
    "cifar100": {
        "nce+rce": {"alpha": 10.0, "beta": 0.1},
        "nfl+rce": {"alpha": 10.0, "beta": 0.1, "gamma": 0.5},
        "nce+mae": {"alpha": 10.0, "beta": 1.0},
        "sce": {"alpha": 6.0, "beta": 0.1},
    },
}

NOISE_METHODS = (
    "CE",
    "Focal",
    "GCE",
    "SCE",
    "NCE+MAE",
    "NCE+RCE",
    "NFL+RCE",
    "CE+FNPAL",
    "SCE+FNPAL",
    "NCE+RCE+FNPAL",
    "NFL+RCE+FNPAL",
    "CE+FNPN",
)


def noise_method(name: str, dataset: str, eta: float, scale: float | None = None) -> dict:
    """Loss and head of a noisy-label method (REFERENCE.md 3 and 5).

    FNPAL uses ``AnchoredHead(normalize=True, scale=s)`` with the noise-aware
    ``s = 0.25 / (0.05 + eta)`` for CE and SCE and ``s = 10`` for the APL losses, unless
    ``scale`` is given. ``CE+FNPN`` is the comparison with learnable normalised prototypes.
    """
    if name not in NOISE_METHODS:
        raise ValueError(f"method must be one of {NOISE_METHODS}, got {name!r}")
    family = "mnist" if dataset in ("mnist", "mnist1d", "digits") else dataset
    params = APL_PARAMS[family]
    base = name.replace("+FNPAL", "").replace("+FNPN", "")
    loss = {"CE": "ce", "Focal": "focal", "GCE": "gce"}.get(base, base.lower())
    loss_kw: dict = {}
    if loss == "focal":
        loss_kw = {"gamma": 0.5, "detach_modulating": True}
    elif loss == "gce":
        loss_kw = {"q": 0.7}
    elif loss in params:
        loss_kw = dict(params[loss])
    head, head_kw = "linear", {}
    if name.endswith("+FNPAL") or name.endswith("+FNPN"):
        if scale is None:
            scale = noise_aware_scale(eta) if base in ("CE", "SCE") else 10.0
        if name.endswith("+FNPAL"):
            head, head_kw = "anchored", {"normalize": True, "scale": float(scale)}
        else:
            head, head_kw = "cosine", {"scale": float(scale)}
    return {"loss": loss, "loss_kw": loss_kw, "head": head, "head_kw": head_kw, "label": name}


# --------------------------------------------------------------------------------------
# Profiles: what each notebook trains at each size
# --------------------------------------------------------------------------------------


def long_tailed_setup(profile: str | None = None) -> dict:
    """Data, model and schedule of the long-tailed experiments (notebooks 00, 06, 08).

    ``smoke``: MNIST-1D-LT as in ``quick`` but 2 epochs and one seed.
    ``quick``: MNIST-1D (about 960 training samples per class before the cut), the 1-D CNN,
    30 epochs with the LDAM-DRW shape of schedule scaled down (warm-up 2 epochs, DRW and
    the first decay at 80 % of training, the second at 90 %).
    ``paper``: CIFAR-10/100-LT, ResNet-32, 200 epochs, REFERENCE.md 6.
    """
    profile = resolve_profile(profile)
    if profile == "paper":
        return {
            "datasets": ("cifar10", "cifar100"),
            "arch": "resnet32",
            "ratios": (100, 10),
            "seeds": (0,),
            "train": _ldam_schedule(200, batch_size=128, augment=True),
        }
    epochs = 2 if profile == "smoke" else 30
    return {
        "datasets": ("mnist1d",),
        "arch": "cnn1d",
        "ratios": (100,) if profile == "smoke" else (100, 10),
        "seeds": (0,) if profile == "smoke" else (0, 1),
        "train_size": None,
        "train": _ldam_schedule(epochs, batch_size=64, augment=False, lr=0.05),
    }


def _ldam_schedule(epochs: int, *, batch_size: int, augment: bool, lr: float = 0.1) -> dict:
    """LDAM-DRW's schedule scaled to ``epochs``: linear warm-up (5 of 200 epochs), DRW and
    lr x0.01 at 80 % (160 of 200), x0.0001 at 90 % (180 of 200), SGD momentum 0.9, wd 2e-4."""
    first = round(0.8 * epochs)
    second = max(round(0.9 * epochs), first + 1)
    return {
        "epochs": epochs,
        "batch_size": batch_size,
        "lr": lr,
        "weight_decay": 2e-4,
        "schedule": "multistep",
        "milestones": (first, second),
        "lr_factors": (0.01, 1e-4),
        "warmup_epochs": max(1, round(epochs * 5 / 200)) if epochs >= 10 else 0,
        "drw_epoch": first,
        "augment": augment,
    }


def lt_spec(
    method: str,
    *,
    pal: bool = False,
    imbalance_ratio: float = 100,
    seed: int = 0,
    profile: str | None = None,
    dataset: str | None = None,
    **train_changes: Any,
) -> RunSpec:
    """The :class:`RunSpec` of a long-tailed method in a profile (see :func:`long_tailed_setup`)."""
    setup = long_tailed_setup(profile)
    recipe = lt_method(method, pal)
    dataset = dataset or setup["datasets"][0]
    info = pdata.dataset_info(dataset)
    schedule = dict(setup["train"])
    if not recipe["drw"]:
        schedule["drw_epoch"] = None
    schedule.update(train_changes)
    config = TrainConfig(seed=seed, mean=info.mean, std=info.std, progress=False, **schedule)
    return RunSpec(
        dataset=dataset,
        arch=setup["arch"],
        loss=recipe["loss"],
        loss_kw=recipe["loss_kw"],
        head=recipe["head"],
        head_kw=recipe["head_kw"],
        imbalance_ratio=float(imbalance_ratio),
        train_size=setup.get("train_size"),
        seed=seed,
        train=config,
        label=recipe["label"],
    )


def noisy_setup(profile: str | None = None) -> dict:
    """Data, model and schedule of the noisy-label experiments (notebook 07).

    ``smoke``: MNIST-1D, 600 training samples, 2 epochs, one noise rate of each kind.
    ``quick``: MNIST-1D, 4,000 training samples (balanced, stratified), the 1-D CNN,
    20 epochs of APL's MNIST recipe (SGD lr 0.01, Nesterov momentum 0.9, weight decay 1e-2,
    cosine annealing to 1e-3, gradient clip 5.0) instead of its 50.
    ``paper``: MNIST (4-layer CNN, 50 epochs), CIFAR-10 (8-layer CNN, 120 epochs) and
    CIFAR-100 (ResNet-34, 200 epochs) with the APL hyperparameters of REFERENCE.md 3.
    """
    profile = resolve_profile(profile)
    symmetric, asymmetric = (0.2, 0.4, 0.6, 0.8), (0.1, 0.2, 0.3, 0.4)
    if profile == "paper":
        apl = {"batch_size": 128, "momentum": 0.9, "schedule": "cosine", "grad_clip": 5.0}
        return {
            "datasets": {
                "mnist": {
                    "arch": "cnn_mnist",
                    "train": {
                        **apl,
                        "epochs": 50,
                        "lr": 0.01,
                        "weight_decay": 1e-2,
                        "nesterov": True,
                        "eta_min": 1e-3,
                    },
                },
                "cifar10": {
                    "arch": "cnn_cifar10",
                    "train": {
                        **apl,
                        "epochs": 120,
                        "lr": 0.01,
                        "weight_decay": 1e-4,
                        "augment": True,
                    },
                },
                "cifar100": {
                    "arch": "resnet34",
                    "train": {
                        **apl,
                        "epochs": 200,
                        "lr": 0.1,
                        "weight_decay": 1e-5,
                        "augment": True,
                    },
                },
            },
            "symmetric": symmetric,
            "asymmetric": asymmetric,
            "seeds": (0,),
            "train_size": None,
        }
    smoke = profile == "smoke"
    # APL's MNIST recipe (the one its beta = 10 loss weights were tuned with), shortened; at
    # lr 0.05 NCE+RCE and NFL+RCE collapse to one class on MNIST-1D.
    train = {
        "epochs": 2 if smoke else 20,
        "batch_size": 128,
        "lr": 0.01,
        "weight_decay": 1e-2,
        "nesterov": True,
        "eta_min": 1e-3,
        "schedule": "cosine",
        "grad_clip": 5.0,
    }
    return {
        "datasets": {"mnist1d": {"arch": "cnn1d", "train": train}},
        "symmetric": (0.4,) if smoke else symmetric,
        "asymmetric": (0.2,) if smoke else asymmetric,
        "seeds": (0,),
        "train_size": 600 if smoke else 4000,
    }


def noisy_spec(
    method: str,
    eta: float,
    kind: str = "symmetric",
    *,
    seed: int = 0,
    profile: str | None = None,
    dataset: str | None = None,
    scale: float | None = None,
    **train_changes: Any,
) -> RunSpec:
    """The :class:`RunSpec` of a noisy-label method (see :func:`noisy_setup`)."""
    setup = noisy_setup(profile)
    dataset = dataset or next(iter(setup["datasets"]))
    if dataset not in setup["datasets"]:
        raise ValueError(f"dataset must be one of {tuple(setup['datasets'])}, got {dataset!r}")
    recipe = noise_method(method, dataset, eta, scale)
    info = pdata.dataset_info(dataset)
    schedule = {**setup["datasets"][dataset]["train"], **train_changes}
    config = TrainConfig(seed=seed, mean=info.mean, std=info.std, progress=False, **schedule)
    return RunSpec(
        dataset=dataset,
        arch=setup["datasets"][dataset]["arch"],
        loss=recipe["loss"],
        loss_kw=recipe["loss_kw"],
        head=recipe["head"],
        head_kw=recipe["head_kw"],
        noise_rate=float(eta),
        noise_kind=kind,
        train_size=setup["train_size"],
        seed=seed,
        train=config,
        label=recipe["label"],
    )


# ---- noisy-label tables (notebook 07) ----


_PROFILE_SIZE = "profile"


def noisy_grid(
    methods: Sequence[str],
    etas: Sequence[float],
    kind: str = "symmetric",
    *,
    seeds: Sequence[int] = (0,),
    profile: str | None = None,
    dataset: str | None = None,
    train_size: int | None | str = _PROFILE_SIZE,
    **train_changes: Any,
) -> list[RunSpec]:
    """The specs of a table: every method x noise rate x seed (method-major order), with
    :func:`noisy_spec`'s defaults; ``train_size`` (default: the profile's) and
    ``train_changes`` (TrainConfig fields) change the size of every run alike."""
    specs = []
    for method in methods:
        for eta in etas:
            for seed in seeds:
                spec = noisy_spec(
                    method, eta, kind, seed=seed, profile=profile, dataset=dataset, **train_changes
                )
                if train_size != _PROFILE_SIZE:
                    spec = spec.replace(train_size=train_size)
                specs.append(spec)
    return specs


def scale_sweep(
    method: str,
    etas: Sequence[float],
    scales: Sequence[float],
    kind: str = "symmetric",
    *,
    seeds: Sequence[int] = (0,),
    profile: str | None = None,
    dataset: str | None = None,
    train_size: int | None | str = _PROFILE_SIZE,
    **train_changes: Any,
) -> list[RunSpec]:
    """The specs of an accuracy-versus-s curve (PAL Fig. 4 and 5a): ``method`` (a ``+FNPAL``
    or ``+FNPN`` method) at every noise rate x scale s x seed; each spec's label is
    ``"<method> s=<s>"``."""
    if not (method.endswith("+FNPAL") or method.endswith("+FNPN")):
        raise ValueError(f"method must be a +FNPAL or +FNPN method, got {method!r}")
    specs = []
    for eta in etas:
        for s in scales:
            for seed in seeds:
                spec = noisy_spec(
                    method,
                    eta,
                    kind,
                    seed=seed,
                    profile=profile,
                    dataset=dataset,
                    scale=float(s),
                    **train_changes,
                )
                if train_size != _PROFILE_SIZE:
                    spec = spec.replace(train_size=train_size)
                specs.append(spec.replace(label=f"{method} s={s:g}"))
    return specs


def noisy_accuracy_table(
    results: Sequence[RunResult], key: str | Callable[[dict], float] = "last_acc"
) -> dict[str, dict[tuple[str, float], tuple[float, float, int]]]:
    """``metrics[key]`` (or ``key(metrics)`` for a callable) of noisy runs as a table:
    ``{label: {(kind, eta): (mean, std, n)}}`` over seeds, rows and columns in order of first
    appearance; std is NaN for one seed."""
    value = key if callable(key) else (lambda metrics: metrics[key])
    cells: dict[str, dict[tuple[str, float], list[float]]] = {}
    for result in results:
        column = (result.spec.noise_kind, float(result.spec.noise_rate))
        cells.setdefault(result.label, {}).setdefault(column, []).append(value(result.metrics))
    return {
        label: {
            column: (
                float(np.mean(v)),
                float(np.std(v, ddof=1)) if len(v) > 1 else float("nan"),
                len(v),
            )
            for column, v in row.items()
        }
        for label, row in cells.items()
    }


def format_noisy_table(
    table: dict[str, dict[tuple[str, float], tuple[float, float, int]]],
    *,
    title: str = "",
    mark_best: bool = True,
) -> str:
    """A plain-text table of :func:`noisy_accuracy_table` in percent: one row per method, one
    column per (kind, eta), ``mean +- std`` where several seeds ran, ``-`` where a method did
    not run; with ``mark_best`` the highest mean of each column is marked ``*`` (a reading
    aid, not a ranking: differences within a seed's spread mean nothing)."""
    columns: list[tuple[str, float]] = []
    for row in table.values():
        columns += [c for c in row if c not in columns]
    kinds = {"symmetric": "sym", "asymmetric": "asym"}
    heads = [f"{kinds.get(k, k)} {eta:g}" for k, eta in columns]
    best = {
        c: max((row[c][0] for row in table.values() if c in row), default=None) for c in columns
    }

    def cell(row, c):
        if c not in row:
            return "-"
        mean, std, _ = row[c]
        text = f"{100 * mean:.1f}" if np.isnan(std) else f"{100 * mean:.1f} +- {100 * std:.1f}"
        return text + ("*" if mark_best and mean == best[c] else " ")

    body = [[cell(row, c) for c in columns] for row in table.values()]
    width0 = max([len("method")] + [len(label) for label in table])
    widths = [max(len(h), *(len(r[j]) for r in body)) for j, h in enumerate(heads)]
    lines = [title] if title else []
    lines.append(f"{'method':<{width0}}  " + _joined(heads, widths))
    for label, row in zip(table, body, strict=True):
        lines.append(f"{label:<{width0}}  " + _joined(row, widths))
    return "\n".join(lines)


def _joined(texts: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(text.rjust(w) for text, w in zip(texts, widths, strict=True))


def initial_prototypes(spec: RunSpec) -> np.ndarray:
    """The head's class vectors ``[num_classes, feat_dim]`` at initialisation, exactly as
    :func:`run` builds the model (seeded with ``spec.seed``), without training; the global
    torch random state is left as it was. Epoch 0 of a prototype-angle curve."""
    info = pdata.dataset_info(spec.dataset)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = make_model(spec.arch, info.num_classes, head=spec.head, **spec.head_kw)
    return model.head.prototypes.detach().cpu().numpy()


# ---- long-tailed tables and geometry (notebooks 06, 08) ----

#: Top-1 test accuracy published for ResNet-32 on CIFAR-LT with the exponential profile
#: (LDAM-DRW paper, Cao et al. NeurIPS 2019, top-1 error converted to accuracy; REFERENCE.md 6),
#: keyed by ``(dataset, imbalance ratio, method)``. "CE" is the paper's ERM row. The reference
#: code keeps the best test-set epoch, so these stand beside palviz's *best-epoch* column.
PUBLISHED_LT_ACCURACY: dict[tuple[str, int, str], float] = {
    ("cifar10", 100, "LDAM-DRW"): 0.7703,
    ("cifar10", 10, "LDAM-DRW"): 0.8816,
    ("cifar100", 100, "LDAM-DRW"): 0.4204,
    ("cifar100", 10, "LDAM-DRW"): 0.5871,
    ("cifar10", 10, "CE"): 0.8639,
}

#: How tables and captions name the datasets.
DATASET_NAMES = {
    "mnist1d": "MNIST-1D",
    "digits": "digits",
    "mnist": "MNIST",
    "cifar10": "CIFAR-10",
    "cifar100": "CIFAR-100",
}


def published_lt_accuracy(dataset: str, imbalance_ratio: float, method: str) -> float | None:
    """The published accuracy of ``method`` on ``dataset``-LT at ``imbalance_ratio``
    (:data:`PUBLISHED_LT_ACCURACY`), or ``None`` where the paper has no such number."""
    return PUBLISHED_LT_ACCURACY.get((dataset, int(imbalance_ratio), method))


def lt_grid(
    methods: Sequence[str] | None = None,
    *,
    pal: Sequence[bool] = (False, True),
    ratios: Sequence[float] | None = None,
    seeds: Sequence[int] | dict[float, Sequence[int]] | None = None,
    datasets: Sequence[str] | None = None,
    profile: str | None = None,
    **train_changes: Any,
) -> list[RunSpec]:
    """The specs of a long-tailed table: every dataset x ratio x method x PAL x seed, in that
    (nested) order, each made by :func:`lt_spec` so a notebook that asks for one of them gets
    the same cached run.

    Defaults come from :func:`long_tailed_setup` (``datasets``, ``ratios``, ``seeds``) and
    :data:`LT_METHODS`. ``seeds`` may map an imbalance ratio to its own seeds (a ratio it does
    not name gets the profile's seeds), e.g. ``{10: (0,)}`` to run one seed at rho = 10.
    """
    setup = long_tailed_setup(profile)
    methods = tuple(LT_METHODS) if methods is None else tuple(methods)
    for method in methods:
        if method not in LT_METHODS:
            raise ValueError(f"methods must be among {tuple(LT_METHODS)}, got {method!r}")
    if not pal or not all(isinstance(p, bool) for p in pal):
        raise ValueError(f"pal must be a non-empty sequence of True/False, got {pal!r}")
    ratios = tuple(setup["ratios"] if ratios is None else ratios)
    datasets = tuple(setup["datasets"] if datasets is None else datasets)
    specs = []
    for dataset in datasets:
        for rho in ratios:
            if isinstance(seeds, dict):
                rho_seeds = tuple(seeds.get(rho, setup["seeds"]))
            else:
                rho_seeds = tuple(setup["seeds"] if seeds is None else seeds)
            if not rho_seeds:
                raise ValueError(f"seeds must name at least one seed for rho = {rho}")
            for method in methods:
                for with_pal in pal:
                    for seed in rho_seeds:
                        specs.append(
                            lt_spec(
                                method,
                                pal=with_pal,
                                imbalance_ratio=rho,
                                seed=seed,
                                profile=profile,
                                dataset=dataset,
                                **train_changes,
                            )
                        )
    return specs


def select_runs(
    results: Iterable[RunResult],
    *,
    dataset: str | None = None,
    imbalance_ratio: float | None = None,
    labels: Sequence[str] | None = None,
    seed: int | None = None,
) -> list[RunResult]:
    """The results that match every given criterion; with ``labels``, in the order of
    ``labels`` (then by seed), else in their own order."""
    out = [
        r
        for r in results
        if (dataset is None or r.spec.dataset == dataset)
        and (imbalance_ratio is None or r.spec.imbalance_ratio == imbalance_ratio)
        and (labels is None or r.label in labels)
        and (seed is None or r.spec.seed == seed)
    ]
    if labels is not None:
        out.sort(key=lambda r: (list(labels).index(r.label), r.spec.seed))
    return out


_GROUPS = pmetrics.SHOT_GROUPS


def _mean_std(values: Sequence[float | None], what: str) -> tuple[float, float] | None:
    """(mean, std over seeds) of ``values``; std is NaN for one value; ``None`` when every
    value is ``None`` (an empty shot group)."""
    if all(v is None for v in values):
        return None
    if any(v is None for v in values):
        raise ValueError(f"{what}: some seeds have a value and some have none: {values}")
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else float("nan")


def lt_table(results: Sequence[RunResult]) -> list[dict]:
    """One row per (dataset, imbalance ratio, method label), in order of first appearance,
    with mean and standard deviation over its seeds:

    ``dataset``, ``imbalance_ratio``, ``method``, ``seeds``, ``arch``, ``epochs``,
    ``train_counts``, ``test_size``; ``last`` and ``best`` (overall test accuracy after the
    last epoch and at the best test epoch, as ``(mean, std)``); ``many``, ``medium``, ``few``
    (shot-group accuracy after the last epoch, ``(mean, std)`` or ``None`` for a group with
    no class); ``best_epochs`` (1-based, one per seed); ``published`` (the LDAM-DRW paper's
    number, :func:`published_lt_accuracy`, or ``None``). Std is NaN for a single seed.
    """
    groups: dict[tuple, list[RunResult]] = {}
    for r in results:
        groups.setdefault((r.spec.dataset, r.spec.imbalance_ratio, r.label), []).append(r)
    rows = []
    for (dataset, rho, label), runs in groups.items():
        seeds = [r.spec.seed for r in runs]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"results hold a seed twice for {label} at rho = {rho}: {seeds}")
        what = f"{label} on {dataset} at rho = {rho:g}"
        m = [r.metrics for r in runs]
        rows.append(
            {
                "dataset": dataset,
                "imbalance_ratio": rho,
                "method": label,
                "seeds": seeds,
                "arch": runs[0].spec.arch,
                "epochs": runs[0].spec.train.epochs,
                "train_counts": m[0]["train_counts"],
                "test_size": m[0]["profile_sizes"]["test"],
                "last": _mean_std([x["last_acc"] for x in m], what),
                "best": _mean_std([x["best_acc"] for x in m], what),
                "best_epochs": [None if e is None else e + 1 for e in (x["best_epoch"] for x in m)],
                **{g: _mean_std([x["shot_groups"][g] for x in m], what) for g in _GROUPS},
                "published": published_lt_accuracy(dataset, rho, label),
            }
        )
    return rows


def _seed_text(seeds: Sequence[int]) -> str:
    seeds = sorted(set(seeds))
    n = len(seeds)
    return f"seed{'s' if n > 1 else ''} {', '.join(map(str, seeds))}" + (
        f" (mean ± std over {n})" if n > 1 else " (one run, no spread)"
    )


def _sizes_text(runs: Sequence[RunResult]) -> str:
    """Sizes and seeds of runs on one data set at one ratio."""
    counts = runs[0].metrics["train_counts"]
    sizes = runs[0].metrics["profile_sizes"]
    return (
        f"{sizes['train']:,} training samples ({counts[0]:,} ... {counts[-1]:,} per class), "
        f"{sizes['test']:,} test samples (the whole test split), "
        + _seed_text([r.spec.seed for r in runs])
    )


def _setup_text(results: Sequence[RunResult], profile: str | None) -> str:
    archs = sorted({r.spec.arch for r in results})
    epochs = sorted({r.spec.train.epochs for r in results})
    return f"{', '.join(archs)}, {', '.join(map(str, epochs))} epochs, profile {profile}."


def _by_dataset_and_ratio(results: Sequence[RunResult]) -> dict[tuple, list[RunResult]]:
    out: dict[tuple, list[RunResult]] = {}
    for r in results:
        out.setdefault((r.spec.dataset, r.spec.imbalance_ratio), []).append(r)
    return out


def _lt_name(dataset: str, rho: float) -> str:
    return f"{DATASET_NAMES.get(dataset, dataset)}-LT, rho = {rho:g}"


def lt_caption(results: Sequence[RunResult], profile: str | None = None) -> str:
    """One line that says what ``results`` measured: data set, imbalance ratio(s), training
    and test sizes, seeds, network, epochs and profile (printed beside every table and figure)."""
    if not results:
        raise ValueError("results must not be empty")
    profile = resolve_profile(profile)
    parts = [
        f"{_lt_name(*key)}: {_sizes_text(runs)}"
        for key, runs in _by_dataset_and_ratio(results).items()
    ]
    return "; ".join(parts) + ". " + _setup_text(results, profile)


def _cell(value: tuple[float, float] | None) -> str:
    if value is None:
        return "n/a"
    mean, std = value
    return f"{100 * mean:.1f}" if np.isnan(std) else f"{100 * mean:.1f} ± {100 * std:.1f}"


def lt_table_markdown(results: Sequence[RunResult], profile: str | None = None) -> str:
    """Markdown tables of :func:`lt_table` (accuracy in %), one per data set and imbalance
    ratio, each under a caption (:func:`lt_caption`) and with the shot groups' class counts
    in the header. A "published" column appears beside the best-epoch column when the
    LDAM-DRW paper has a number for one of the rows."""
    rows = lt_table(results)
    blocks = []
    for dataset, rho in dict.fromkeys((r["dataset"], r["imbalance_ratio"]) for r in rows):
        block = [r for r in rows if r["dataset"] == dataset and r["imbalance_ratio"] == rho]
        groups = pmetrics.shot_groups(block[0]["train_counts"])
        shot_heads = [f"{g}-shot, last ({len(groups[g])} cl.)" for g in _GROUPS]
        published = any(r["published"] is not None for r in block)
        head = ["method", "overall, last epoch", "overall, best epoch"]
        head += ["published (paper)"] if published else []
        head += shot_heads + ["seeds"]
        runs = _by_dataset_and_ratio(results)[dataset, rho]
        lines = [
            f"**{_lt_name(dataset, rho)}**: {_sizes_text(runs)}. "
            + _setup_text(runs, resolve_profile(profile)),
            "",
            "| " + " | ".join(head) + " |",
            "|" + "|".join([":---"] + ["---:"] * (len(head) - 1)) + "|",
        ]
        for r in block:
            cells = [r["method"], _cell(r["last"]), _cell(r["best"])]
            if published:
                cells.append("-" if r["published"] is None else f"{100 * r['published']:.2f}")
            cells += [_cell(r[g]) for g in _GROUPS]
            cells.append(", ".join(map(str, r["seeds"])))
            lines.append("| " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def published_lt_markdown() -> str:
    """The published CIFAR-LT numbers (:data:`PUBLISHED_LT_ACCURACY`) as a markdown table."""
    lines = [
        "| data set | rho | method | published top-1 accuracy (%) |",
        "|:---|---:|:---|---:|",
    ]
    for (dataset, rho, method), acc in PUBLISHED_LT_ACCURACY.items():
        lines.append(f"| {DATASET_NAMES[dataset]}-LT | {rho} | {method} | {100 * acc:.2f} |")
    return "\n".join(lines) + "\n"


def stack_over_seeds(
    results: Sequence[RunResult], key: str = "per_class_acc"
) -> dict[str, np.ndarray]:
    """``{label: array}`` of ``metrics[key]`` with one row per run (seed), labels in order of
    first appearance: ``[n_runs]`` for a number (``"last_acc"``, ``"best_acc"``), ``[n_runs, k]``
    for a per-class list (``"per_class_acc"``, ``"feature_norms"``, ``"weight_norms"``,
    ``"confidence"``); ``None`` (e.g. a class without test samples) becomes NaN."""
    out: dict[str, list] = {}
    for r in results:
        value = r.metrics[key]
        if isinstance(value, (list, tuple)):
            value = [np.nan if v is None else v for v in value]
        out.setdefault(r.label, []).append(np.nan if value is None else value)
    return {label: np.asarray(rows, dtype=float) for label, rows in out.items()}


def class_mean_features(
    features: np.ndarray, targets: np.ndarray, num_classes: int, *, centred: bool = False
) -> np.ndarray:
    r"""Class means of features, $\mu_c = \frac{1}{n_c}\sum_{i: y_i = c} z_i$: `[num_classes, d]`
    (NaN rows for a class without samples). With ``centred``, minus their mean
    $\bar\mu = \frac1k \sum_c \mu_c$ (the global mean on a balanced set): the centred class
    means of neural-collapse studies (Papyan et al. 2020), whose ideal is the simplex."""
    features = np.asarray(features, dtype=np.float64)
    targets = np.asarray(targets)
    counts = np.bincount(targets, minlength=num_classes).astype(np.float64)
    sums = np.zeros((num_classes, features.shape[1]))
    np.add.at(sums, targets, features)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts[:, None]
    return means - np.nanmean(means, axis=0) if centred else means


def feature_geometry(result: RunResult) -> dict[str, Any]:
    """The geometry of a finished run, from its test features and its head's prototypes:

    ``prototype_cosines`` `[k, k]` and ``min_prototype_angle`` (degrees) of the classifier
    vectors; ``class_mean_cosines`` `[k, k]` and ``min_class_mean_angle`` of the *centred*
    class means of the test features (:func:`class_mean_features`); ``feature_norms`` and
    ``weight_norms`` `[k]`; ``train_counts``."""
    arrays = result.features()
    k = arrays["prototypes"].shape[0]
    means = class_mean_features(arrays["features"], arrays["targets"], k, centred=True)
    return {
        "prototype_cosines": pmetrics.prototype_cosines(arrays["prototypes"]),
        "min_prototype_angle": pmetrics.min_prototype_angle(arrays["prototypes"]),
        "class_mean_cosines": pmetrics.prototype_cosines(means),
        "min_class_mean_angle": pmetrics.min_prototype_angle(means),
        "feature_norms": pmetrics.feature_norms_per_class(arrays["features"], arrays["targets"], k),
        "weight_norms": pmetrics.weight_norms(arrays["prototypes"]),
        "train_counts": result.metrics["train_counts"],
    }


def lt_label_spec(label: str, **kwargs: Any) -> RunSpec:
    """:func:`lt_spec` of a method named as the tables name it: ``"LDAM-DRW"`` or, with PAL,
    ``"LDAM-DRW+PAL"``; ``kwargs`` as for :func:`lt_spec` (except ``pal``)."""
    method, pal = (label[: -len("+PAL")], True) if label.endswith("+PAL") else (label, False)
    return lt_spec(method, pal=pal, **kwargs)


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of its finished child processes (e.g. the
    training processes of :func:`run_many`), in seconds: on a shared machine a fairer
    measure of a notebook's cost than wall time. Children count on POSIX only."""
    import os

    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
