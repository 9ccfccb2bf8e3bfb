"""Named recipes and profiles: what a method trains and what each profile trains at what size.

Methods (``"LDAM-DRW"``, ``"CE+PAL"``, ``"CE+FNPAL"``, ...) are named recipes of loss + head +
re-weighting, following docs/reference.md 6; a profile (``smoke``, ``quick``, ``paper``) fixes the
data, network and schedule. The ``*_spec`` and ``*_grid`` functions turn both into
:class:`~palviz.runcache.RunSpec` objects for the run cache (:mod:`palviz.runcache`). Also the
published numbers the tables stand beside, and how tables name the datasets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from palviz import data as pdata
from palviz.files import resolve_profile
from palviz.runcache import RunSpec
from palviz.theory import noise_aware_scale
from palviz.train import TrainConfig

# --------------------------------------------------------------------------------------
# Methods: named recipes of loss + head + re-weighting (docs/reference.md 6)
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
    on fixed prototypes; the loss's s = 30 scales them) - docs/reference.md 6.
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


#: APL hyperparameters (docs/reference.md 3) per dataset family; MNIST's row serves MNIST-1D and
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
    """Loss and head of a noisy-label method (docs/reference.md 3 and 5).

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
    ``paper``: CIFAR-10/100-LT, ResNet-32, 200 epochs, docs/reference.md 6.
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
    CIFAR-100 (ResNet-34, 200 epochs) with the APL hyperparameters of docs/reference.md 3.
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
    train_size: int | None = None,
    **train_changes: Any,
) -> RunSpec:
    """The :class:`RunSpec` of a noisy-label method (see :func:`noisy_setup`); ``train_size``
    ``None`` keeps the profile's training size (``spec.replace(train_size=None)`` of the
    result keeps the whole split)."""
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
        train_size=setup["train_size"] if train_size is None else train_size,
        seed=seed,
        train=config,
        label=recipe["label"],
    )


def noisy_grid(
    methods: Sequence[str], etas: Sequence[float], kind: str = "symmetric", **options: Any
) -> list[RunSpec]:
    """The specs of a table: every method x noise rate x seed (method-major order), with
    :func:`noisy_spec`'s defaults. ``options``: ``seeds`` (default ``(0,)``), ``profile``,
    ``dataset``, ``train_size`` (``None``: the profile's) and TrainConfig fields, which
    change every run alike."""
    cells = [(method, eta, None, method) for method in methods for eta in etas]
    return _noisy_specs(cells, kind, **options)


def scale_sweep(
    method: str,
    etas: Sequence[float],
    scales: Sequence[float],
    kind: str = "symmetric",
    **options: Any,
) -> list[RunSpec]:
    """The specs of an accuracy-versus-s curve (PAL Fig. 4 and 5a): ``method`` (a ``+FNPAL``
    or ``+FNPN`` method) at every noise rate x scale s x seed; each spec's label is
    ``"<method> s=<s>"``. ``options`` as for :func:`noisy_grid`."""
    if not (method.endswith("+FNPAL") or method.endswith("+FNPN")):
        raise ValueError(f"method must be a +FNPAL or +FNPN method, got {method!r}")
    cells = [(method, eta, float(s), f"{method} s={s:g}") for eta in etas for s in scales]
    return _noisy_specs(cells, kind, **options)


def _noisy_specs(
    cells: Iterable[tuple[str, float, float | None, str]],
    kind: str,
    *,
    seeds: Sequence[int] = (0,),
    profile: str | None = None,
    dataset: str | None = None,
    train_size: int | None = None,
    **train_changes: Any,
) -> list[RunSpec]:
    """:func:`noisy_spec` of every ``(method, eta, scale, label)`` cell x seed, in order: the
    one body of :func:`noisy_grid` and :func:`scale_sweep`."""
    return [
        noisy_spec(
            method,
            eta,
            kind,
            seed=seed,
            profile=profile,
            dataset=dataset,
            scale=scale,
            train_size=train_size,
            **train_changes,
        ).replace(label=label)
        for method, eta, scale, label in cells
        for seed in seeds
    ]


# --------------------------------------------------------------------------------------
# Published numbers and the long-tailed grid
# --------------------------------------------------------------------------------------

#: Top-1 test accuracy published for ResNet-32 on CIFAR-LT with the exponential profile
#: (LDAM-DRW paper, Cao et al. NeurIPS 2019, top-1 error converted to accuracy;
#: docs/reference.md 6),
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


def lt_label_spec(label: str, **kwargs: Any) -> RunSpec:
    """:func:`lt_spec` of a method named as the tables name it: ``"LDAM-DRW"`` or, with PAL,
    ``"LDAM-DRW+PAL"``; ``kwargs`` as for :func:`lt_spec` (except ``pal``)."""
    method, pal = (label[: -len("+PAL")], True) if label.endswith("+PAL") else (label, False)
    return lt_spec(method, pal=pal, **kwargs)
