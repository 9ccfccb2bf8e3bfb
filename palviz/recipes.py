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


#: Orientations of PAL's simplex in feature space (``palviz.heads.simplex_prototypes``):
#: the papers' random rotation is the default and is not named in a spec or a label.
ORIENTATIONS = ("random", "axis", "block")


def lt_method(name: str, pal: bool = False, orientation: str = "random") -> dict:
    """Loss, head and DRW switch of a long-tailed method, with or without PAL.

    With PAL, CE-family losses use ``AnchoredHead(normalize=False)`` (plain logits on fixed
    prototypes) and LDAM / ELM use ``AnchoredHead(normalize=True, scale=1)`` (cosine logits
    on fixed prototypes; the loss's s = 30 scales them) - docs/reference.md 6. ``orientation``
    places the simplex (:data:`ORIENTATIONS`; only with PAL); a method with another
    orientation than the default is labelled e.g. ``"CE+PAL (axis)"``.
    """
    if name not in LT_METHODS:
        raise ValueError(f"method must be one of {tuple(LT_METHODS)}, got {name!r}")
    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be one of {ORIENTATIONS}, got {orientation!r}")
    if orientation != "random" and not pal:
        raise ValueError(f"orientation {orientation!r} needs pal=True (anchored prototypes)")
    loss, loss_kw, head, drw = LT_METHODS[name]
    head_kw: dict = {}
    if pal:
        head_kw = {"normalize": head == "cosine", "scale": 1.0}
        if orientation != "random":
            head_kw["orientation"] = orientation
        head = "anchored"
    return {
        "loss": loss,
        "loss_kw": dict(loss_kw),
        "head": head,
        "head_kw": head_kw,
        "drw": drw,
        "label": name + ("+PAL" if pal else "") + (f" ({orientation})" * (orientation != "random")),
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


#: The sum over SGD steps of lr x weight decay in LDAM-DRW's CIFAR-10-LT run (ResNet-32,
#: 200 epochs of 97 steps, lr 0.1 with warm-up, x0.01 at epoch 160, wd 2e-4): how far weight
#: decay has pulled the weights in the published regime (palviz.budget computes it).
PAPER_LR_WD_INTEGRAL = 0.31


def long_tailed_setup(profile: str | None = None) -> dict:
    """Data, model, schedule and method grid of the long-tailed experiments (00, 06, 08).

    ``quick``: MNIST-1D-LT at rho = 100 (2,326 training signals, 939 down to 9 per class), the
    1-D CNN, 90 epochs of 37 steps (3,330 SGD steps; the paper's CIFAR-10-LT run has 19,400)
    with the LDAM-DRW shape of schedule (warm-up, DRW and lr x0.01 at 80 %, x0.0001 at 90 %).
    The regime is judged on the baselines: every method fits its training set (training
    accuracy at the last epoch about 100 %), and weight decay is raised to 2.4e-3 so that the
    sum over steps of lr x wd is 0.32, as in the paper's run (0.31) - at the paper's 2e-4 and
    these few steps it would be 0.026 and weight decay would barely act. Headline methods only
    (CE, LDAM-DRW, ELM-DRW; CE and LDAM-DRW also with PAL), five paired seeds, and CE + PAL
    with the two other prototype orientations.
    ``full``: the same data and per-run size, every method of :data:`LT_METHODS` at rho = 100
    and 10, five seeds (an hour or two on two CPU cores).
    ``smoke``: as ``quick`` but 2 epochs, one seed, two methods.
    ``paper``: CIFAR-10/100-LT, ResNet-32, 200 epochs, docs/reference.md 6.
    """
    profile = resolve_profile(profile)
    if profile == "paper":
        return {
            "datasets": ("cifar10", "cifar100"),
            "arch": "resnet32",
            "ratios": (100, 10),
            "seeds": (0,),
            "methods": tuple(LT_METHODS),
            "pal_methods": tuple(LT_METHODS),
            "orientations": (),
            "weight_decays": (0.0, 2e-4, 5e-4, 2e-3, 5e-3),
            "train": _ldam_schedule(200, batch_size=128, augment=True),
        }
    smoke = profile == "smoke"
    train = _ldam_schedule(2 if smoke else 90, batch_size=64, augment=False, lr=0.05)
    train["weight_decay"] = 2.4e-3
    return {
        "datasets": ("mnist1d",),
        "arch": "cnn1d",
        "ratios": (100, 10) if profile == "full" else (100,),
        "seeds": (0,) if smoke else (0, 1, 2, 3, 4),
        "methods": {
            "smoke": ("CE", "LDAM-DRW"),
            "quick": ("CE", "LDAM-DRW", "ELM-DRW"),
            "full": tuple(LT_METHODS),
        }[profile],
        # the methods also trained with PAL (the headline pairs in quick, to keep it quick)
        "pal_methods": tuple(LT_METHODS) if profile == "full" else ("CE", "LDAM-DRW"),
        "orientations": () if smoke else ("axis", "block"),
        # notebook 03's grid; the profile's own 2.4e-3 run is shared with 00, 02, 06 and 08
        "weight_decays": (2e-4, 2.4e-3) if smoke else (2e-4, 2.4e-3, 2e-2),
        "train_size": None,
        "train": train,
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
    orientation: str = "random",
    **train_changes: Any,
) -> RunSpec:
    """The :class:`RunSpec` of a long-tailed method in a profile (see :func:`long_tailed_setup`);
    ``orientation`` as for :func:`lt_method`."""
    setup = long_tailed_setup(profile)
    recipe = lt_method(method, pal, orientation)
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
    """Data, model, schedule and method grid of the noisy-label experiments (notebook 07).

    ``quick``: MNIST-1D, 4,000 training signals (balanced, stratified), the 1-D CNN, APL's
    MNIST recipe (SGD lr 0.01, Nesterov momentum 0.9, weight decay 1e-2, cosine annealing to
    1e-3, gradient clip 5.0) for 120 epochs of 32 steps: 3,840 SGD steps (APL's MNIST run has
    23,400). The budget is chosen on the baseline: at this size CE fits its noisy training
    labels beyond their clean share (80 % at symmetric 0.4, where 60 % are clean) and its test
    accuracy falls after a peak (best minus last about 8 points): the memorisation regime the
    robust losses and FNPAL are meant for. The headline comparisons (CE, CE+FNPAL and CE+FNPN
    at symmetric 0.4) run five paired seeds; CE and CE+FNPAL also run one seed at three other
    noise settings and CE+FNPAL a short sweep of s.
    ``full``: the same per-run size, every method of :data:`NOISE_METHODS` at every noise rate,
    three seeds, the headline (with NCE+RCE and NCE+RCE+FNPAL) at five seeds, the sweep of s at
    four noise rates.
    ``smoke``: 600 training signals, 2 epochs, one noise rate of each kind, one seed.
    ``paper``: MNIST (4-layer CNN, 50 epochs), CIFAR-10 (8-layer CNN, 120 epochs) and
    CIFAR-100 (ResNet-34, 200 epochs) with the APL hyperparameters of docs/reference.md 3.

    Keys: ``datasets`` (name -> arch and schedule), ``symmetric`` / ``asymmetric`` (noise rates
    of the tables), ``methods`` / ``asymmetric_methods`` (the tables' methods), ``seeds`` (the
    tables'), ``headline`` (``kind``, ``eta``, ``methods``, ``seeds``: the paired comparisons
    the claims are read from), ``sweep_dataset``, ``sweep_etas``, ``scales`` (accuracy
    against s), ``train_size``.
    """
    profile = resolve_profile(profile)
    symmetric, asymmetric = (0.2, 0.4, 0.6, 0.8), (0.1, 0.2, 0.3, 0.4)
    table_methods = tuple(m for m in NOISE_METHODS if m != "CE+FNPN")
    headline = {
        "kind": "symmetric",
        "eta": 0.4,
        "methods": ("CE", "CE+FNPAL", "NCE+RCE", "NCE+RCE+FNPAL", "CE+FNPN"),
        "seeds": (0, 1, 2, 3, 4),
    }
    # quick keeps the CE pairs; the NCE+RCE pair costs half as much again per run (full has it)
    quick_headline = {**headline, "methods": ("CE", "CE+FNPAL", "CE+FNPN")}
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
            "methods": table_methods,
            "asymmetric_methods": table_methods,
            "seeds": (0,),
            "headline": {**headline, "seeds": (0,)},
            "sweep_dataset": "cifar10",  # PAL Fig. 4-5
            "sweep_etas": (0.2, 0.4, 0.6, 0.8),
            "scales": (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0),
            "train_size": None,
        }
    smoke, full = profile == "smoke", profile == "full"
    # APL's MNIST recipe (the one its beta = 10 loss weights were tuned with); at lr 0.05
    # NCE+RCE and NFL+RCE collapse to one class on MNIST-1D.
    train = {
        "epochs": 2 if smoke else 120,
        "batch_size": 128,
        "lr": 0.01,
        "weight_decay": 1e-2,
        "nesterov": True,
        "eta_min": 1e-3,
        "schedule": "cosine",
        "grad_clip": 5.0,
    }
    pair = ("CE", "CE+FNPAL")
    return {
        "datasets": {"mnist1d": {"arch": "cnn1d", "train": train}},
        "symmetric": (0.4,) if smoke else symmetric if full else (0.2, 0.4, 0.8),
        "asymmetric": (0.2,) if smoke else asymmetric if full else (0.4,),
        "methods": table_methods if full else pair,
        "asymmetric_methods": table_methods if full else pair,
        "seeds": (0, 1, 2) if full else (0,),
        "headline": {**quick_headline, "seeds": (0,)}
        if smoke
        else headline
        if full
        else quick_headline,
        "sweep_dataset": "mnist1d",
        "sweep_etas": (0.2, 0.4, 0.6, 0.8) if full else (0.4,),
        "scales": (0.3, 3.0)
        if smoke
        else (0.3, 1.0, 3.0, 10.0, 30.0)
        if full
        else (2.0, 8.0, 32.0),
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
    orientation: str = "random",
    **train_changes: Any,
) -> list[RunSpec]:
    """The specs of a long-tailed table: every dataset x ratio x method x PAL x seed, in that
    (nested) order, each made by :func:`lt_spec` so a notebook that asks for one of them gets
    the same cached run.

    Defaults come from :func:`long_tailed_setup` (``datasets``, ``ratios``, ``seeds``) and
    :data:`LT_METHODS`. ``seeds`` may map an imbalance ratio to its own seeds (a ratio it does
    not name gets the profile's seeds), e.g. ``{10: (0,)}`` to run one seed at rho = 10.
    ``orientation`` places PAL's simplex (:data:`ORIENTATIONS`; with ``pal=(True,)`` only).
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
                                orientation=orientation,
                                **train_changes,
                            )
                        )
    return specs


def lt_label_spec(label: str, **kwargs: Any) -> RunSpec:
    """:func:`lt_spec` of a method named as the tables name it: ``"LDAM-DRW"`` or, with PAL,
    ``"LDAM-DRW+PAL"``; ``kwargs`` as for :func:`lt_spec` (except ``pal``)."""
    method, pal = (label[: -len("+PAL")], True) if label.endswith("+PAL") else (label, False)
    return lt_spec(method, pal=pal, **kwargs)
