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
from palviz.files import resolve_profile, runs_dir, save_npz, write_json
from palviz.losses import make_loss
from palviz.models import make_model
from palviz.theory import noise_aware_scale
from palviz.train import TrainConfig, evaluate, fit

#: Bump when the meaning or layout of cached results changes.
CACHE_SCHEMA = 1

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
    keep = []
    for c in np.unique(targets):
        idx = np.flatnonzero(targets == c)
        n = max(1, round(size * len(idx) / len(targets)))
        keep.append(rng.choice(idx, size=min(n, len(idx)), replace=False))
    return np.sort(np.concatenate(keep))


def prepare_data(spec: RunSpec) -> dict[str, Any]:
    """The training and test data a spec describes: the (optionally reduced, long-tailed,
    noisy) training split and the full, balanced test split, plus the class counts."""
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
    seconds = time.perf_counter() - start
    x_test, y_test = prepared["test"]
    ev = evaluate(model, x_test, y_test, mean=spec.train.mean, std=spec.train.std)
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


def run_many(specs: Iterable[RunSpec], *, desc: str = "runs") -> list[RunResult]:
    """:func:`run` each spec, with one progress bar over the runs (cached runs are instant)."""
    from tqdm.auto import tqdm

    specs = list(specs)
    results = []
    with tqdm(specs, desc=desc, unit="run") as bar:
        for spec in bar:
            bar.set_postfix_str(spec.label or spec.loss)
            results.append(run(spec))
    return results


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
    20 epochs, SGD + cosine annealing, clip 5.0 (the APL recipe, shortened).
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
    train = {
        "epochs": 2 if smoke else 20,
        "batch_size": 128,
        "lr": 0.05,
        "weight_decay": 5e-4,
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
