"""Named recipes and profiles: what a method trains and what each profile trains at what size.

Methods (``"LDAM-DRW"``, ``"CE+PAL"``, ``"CE+FNPAL"``, ...) come from the loss registry
(:mod:`palviz.experiments.methods`); a profile (``smoke``, ``quick``, ``full``, ``paper``) is a row
of literal data in :data:`LONG_TAILED_PROFILES` or :data:`NOISY_PROFILES`: data, network,
schedule, and the methods it trains, named (registering a method never changes a profile).
The ``*_spec`` and ``*_grid`` functions turn both into :class:`~palviz.experiments.runcache.RunSpec`
objects for the run cache (:mod:`palviz.experiments.runcache`). Also the published numbers the
tables stand beside, how tables name the datasets, and every departure from the reference code
(:data:`DEPARTURES`).
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from palviz import data as pdata
from palviz.experiments import methods as pmethods
from palviz.experiments.methods import ORIENTATIONS, dataset_family
from palviz.experiments.runcache import RunSpec
from palviz.files import atomic_write, project_root, resolve_profile
from palviz.theory import noise_aware_scale
from palviz.train import TrainConfig

# --------------------------------------------------------------------------------------
# Methods: named recipes of loss + head + re-weighting, from the registry
# (palviz.experiments.methods)
# --------------------------------------------------------------------------------------

#: The long-tailed methods (without ``+PAL``), in registration order.
LT_METHODS: tuple[str, ...] = pmethods.long_tailed_methods()

#: Every noisy-label method, ``+FNPAL`` and ``+FNPN`` variants included.
NOISE_METHODS: tuple[str, ...] = pmethods.noisy_methods()

__all__ = [
    "DATASET_NAMES",
    "DEPARTURES",
    "LONG_TAILED_PROFILES",
    "LT_METHODS",
    "NOISE_METHODS",
    "NOISY_PROFILES",
    "ORIENTATIONS",
    "PAPER_LR_WD_INTEGRAL",
    "PAPER_PRECISION",
    "PUBLISHED_LT_ACCURACY",
    "TRAIN_OVERRIDES",
    "Departure",
    "departures_markdown",
    "expand_schedule",
    "long_tailed_setup",
    "lt_grid",
    "lt_label_spec",
    "lt_method",
    "lt_spec",
    "noise_method",
    "noisy_grid",
    "noisy_setup",
    "noisy_spec",
    "published_lt_accuracy",
    "scale_sweep",
    "write_departures",
]


def lt_method(name: str, pal: bool = False, orientation: str = "random") -> dict:
    """Loss, head and DRW switch of a long-tailed method, with or without PAL.

    With PAL, CE-family losses use ``AnchoredHead(normalize=False)`` (plain logits on fixed
    prototypes) and LDAM / ELM use ``AnchoredHead(normalize=True, scale=1)`` (cosine logits
    on fixed prototypes; the loss's s = 30 scales them) - docs/reference.md 6. ``orientation``
    places the simplex (:data:`ORIENTATIONS`; only with PAL); a method with another
    orientation than the default is labelled e.g. ``"CE+PAL (axis)"``.
    """
    if name not in LT_METHODS:
        raise ValueError(f"method must be one of {LT_METHODS}, got {name!r}")
    if not isinstance(pal, bool):
        raise ValueError(f"pal must be True or False, got {pal!r}")
    m = pmethods.method("long_tailed", name + ("+PAL" if pal else ""))
    head, head_kw = m.head(orientation=orientation)
    return {
        "loss": m.loss,
        "loss_kw": m.base.kwargs(),
        "head": head,
        "head_kw": head_kw,
        "drw": m.drw,
        "label": m.label + (f" ({orientation})" * (orientation != "random")),
    }


def noise_method(name: str, dataset: str, eta: float, scale: float | None = None) -> dict:
    """Loss and head of a noisy-label method (docs/reference.md 3 and 5).

    FNPAL uses ``AnchoredHead(normalize=True, scale=s)`` with the noise-aware
    ``s = 0.25 / (0.05 + eta)`` for CE and SCE and ``s = 10`` for the APL losses (each loss's
    declaration says which), unless ``scale`` is given. ``CE+FNPN`` is the comparison with
    learnable normalised prototypes.
    """
    m = pmethods.method("noisy", name)
    if m.variant and scale is None:
        rule = m.base.fnpal_scale
        scale = noise_aware_scale(eta) if rule == "noise_aware" else float(rule)
    head, head_kw = m.head(scale=scale)
    loss_kw = m.base.kwargs(dataset_family(dataset))
    return {"loss": m.loss, "loss_kw": loss_kw, "head": head, "head_kw": head_kw, "label": name}


# --------------------------------------------------------------------------------------
# Profiles: what each notebook trains at each size, as literal data
# --------------------------------------------------------------------------------------


#: The sum over SGD steps of lr x weight decay in LDAM-DRW's CIFAR-10-LT run (ResNet-32,
#: 200 epochs of 97 steps, lr 0.1 with warm-up, x0.01 at epoch 160, wd 2e-4): how far weight
#: decay has pulled the weights in the published regime (palviz.experiments.budget computes it).
PAPER_LR_WD_INTEGRAL = 0.31

#: The precision of every ``paper`` run: float32, because both reference codes train in it
#: (LDAM-DRW's ``cifar_train.py`` and APL's ``trainer.py`` use no autocast). bfloat16 or
#: float16 autocast would compute the convolutions and the cosine logits (scaled by s = 30
#: afterwards) in half precision and so change the results, not only the speed; a GPU run may
#: still choose one (``TrainConfig(precision=...)``), as a departure (:data:`DEPARTURES`).
PAPER_PRECISION = "fp32"

#: The training fields a notebook's parameters cell may change (``EPOCHS``, ``LR``,
#: ``WEIGHT_DECAY``, ``BATCH_SIZE``); they reach every run the notebook trains.
TRAIN_OVERRIDES = ("epochs", "lr", "weight_decay", "batch_size")

# The long-tailed methods of the full and paper grids, named (the registry may hold more).
_LT_ALL = (
    "CE",
    "Focal",
    "CE-DRW",
    "LDAM-DRW",
    "ELM",
    "ELM-DRW",
    "LMSCE",
    "LA-CE",
    "IB-Focal",
)

#: ``full`` reads ``quick``'s claims a second time on seeds ``quick`` never uses.
_REPLICATION = {"seeds": (5, 6, 7, 8, 9), "of": "quick"}

#: The long-tailed experiments (notebooks 00, 02, 03, 06, 08) per profile. ``train`` is the
#: schedule: ``shape="ldam-drw"`` is LDAM-DRW's shape scaled to ``epochs`` (see
#: :func:`expand_schedule`), the other keys are TrainConfig fields.
#:
#: ``quick``: MNIST-1D-LT at rho = 100 (2,326 training signals, 939 down to 9 per class), the
#: 1-D CNN, 90 epochs of 37 steps (3,330 SGD steps; the paper's CIFAR-10-LT run has 19,400).
#: Every method fits its training set, and weight decay is raised to 2.4e-3 so that the sum
#: over steps of lr x wd is 0.32, as in the paper's run (0.31) - at the paper's 2e-4 and these
#: few steps it would be 0.026 and weight decay would barely act. Headline methods only, five
#: paired seeds, and CE + PAL with the axis orientation (the block one is in ``full``).
#: ``full``: the same data and per-run size, the methods of both papers' CIFAR-LT tables that
#: palviz has, at rho = 100 and 10, both orientations, and ``quick``'s runs again on seeds 5-9
#: (``replication``: the claims read a second time on fresh seeds). ``smoke``: 2 epochs, one
#: seed, two methods. ``paper``: CIFAR-10/100-LT, ResNet-32, 200 epochs, docs/reference.md 6.
LONG_TAILED_PROFILES: dict[str, dict[str, Any]] = {
    "smoke": {
        "datasets": ("mnist1d",),
        "arch": "cnn1d",
        "ratios": (100,),
        "seeds": (0,),
        "methods": ("CE", "LDAM-DRW"),
        "pal_methods": ("CE", "LDAM-DRW"),
        "orientations": (),
        "weight_decays": (2e-4, 2.4e-3),
        "train_size": None,
        "train": {
            "shape": "ldam-drw",
            "epochs": 2,
            "batch_size": 64,
            "lr": 0.05,
            "weight_decay": 2.4e-3,
            "augment": False,
        },
    },
    "quick": {
        "datasets": ("mnist1d",),
        "arch": "cnn1d",
        "ratios": (100,),
        "seeds": (0, 1, 2, 3, 4),
        "methods": ("CE", "LDAM-DRW", "ELM-DRW"),
        "pal_methods": ("CE", "LDAM-DRW"),
        "orientations": ("axis",),
        "weight_decays": (2e-4, 2.4e-3, 2e-2),
        "train_size": None,
        "train": {
            "shape": "ldam-drw",
            "epochs": 90,
            "batch_size": 64,
            "lr": 0.05,
            "weight_decay": 2.4e-3,
            "augment": False,
        },
    },
    "full": {
        "datasets": ("mnist1d",),
        "arch": "cnn1d",
        "ratios": (100, 10),
        "seeds": (0, 1, 2, 3, 4),
        "methods": _LT_ALL,
        "pal_methods": _LT_ALL,
        "orientations": ("axis", "block"),
        "weight_decays": (2e-4, 2.4e-3, 2e-2),
        "replication": _REPLICATION,
        "train_size": None,
        "train": {
            "shape": "ldam-drw",
            "epochs": 90,
            "batch_size": 64,
            "lr": 0.05,
            "weight_decay": 2.4e-3,
            "augment": False,
        },
    },
    "paper": {
        "datasets": ("cifar10", "cifar100"),
        "arch": "resnet32",
        "ratios": (100, 10),
        "seeds": (0,),
        "methods": _LT_ALL,
        "pal_methods": _LT_ALL,
        "orientations": (),
        "weight_decays": (0.0, 2e-4, 5e-4, 2e-3, 5e-3),
        "train_size": None,
        "train": {
            "shape": "ldam-drw",
            "epochs": 200,
            "batch_size": 128,
            "lr": 0.1,
            "weight_decay": 2e-4,
            "augment": True,
            "precision": PAPER_PRECISION,
        },
    },
}


def expand_schedule(train: Mapping[str, Any]) -> dict:
    """The TrainConfig fields of a profile's ``train`` entry. ``shape="ldam-drw"``: LDAM-DRW's
    schedule scaled to ``epochs``: linear warm-up (5 of 200 epochs, none below 10 epochs), DRW
    and lr x0.01 at 80 % (160 of 200), x0.0001 at 90 % (180 of 200), SGD momentum 0.9, float32
    (:data:`PAPER_PRECISION`); the
    entry's other keys (and explicit ``milestones``, ``drw_epoch``, ...) are kept as given.
    Without ``shape`` the entry is returned as it is."""
    train = dict(train)
    shape = train.pop("shape", None)
    if shape is None:
        return train
    if shape != "ldam-drw":
        raise ValueError(f"train shape must be 'ldam-drw' or absent, got {shape!r}")
    epochs = train["epochs"]
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1, got {epochs!r}")
    first = round(0.8 * epochs)
    second = max(round(0.9 * epochs), first + 1)
    shaped = {
        "epochs": epochs,
        "batch_size": 128,
        "lr": 0.1,
        "weight_decay": 2e-4,
        "schedule": "multistep",
        "milestones": (first, second),
        "lr_factors": (0.01, 1e-4),
        "warmup_epochs": max(1, round(epochs * 5 / 200)) if epochs >= 10 else 0,
        "drw_epoch": first,
        "augment": False,
        "precision": PAPER_PRECISION,
    }
    return {**shaped, **train}


def _setup(table: Mapping[str, dict], profile: str | None) -> dict:
    return copy.deepcopy(table[resolve_profile(profile)])


def long_tailed_setup(profile: str | None = None) -> dict:
    """The row of :data:`LONG_TAILED_PROFILES` for ``profile`` (default: ``$PALVIZ_PROFILE``),
    a copy, with ``train`` expanded to TrainConfig fields (:func:`expand_schedule`) and the
    unexpanded entry as ``train_recipe``."""
    setup = _setup(LONG_TAILED_PROFILES, profile)
    setup["train_recipe"] = setup["train"]
    setup["train"] = expand_schedule(setup["train"])
    return setup


def _split_changes(changes: Mapping[str, Any]) -> tuple[dict, dict]:
    """Training changes that re-shape the schedule (the recipe's own keys) and the others."""
    recipe_keys = ("epochs", "batch_size", "lr", "weight_decay", "augment")
    return (
        {k: v for k, v in changes.items() if k in recipe_keys},
        {k: v for k, v in changes.items() if k not in recipe_keys},
    )


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
    ``orientation`` as for :func:`lt_method`. ``train_changes`` are TrainConfig fields; a
    change of ``epochs`` re-scales the LDAM-DRW schedule (milestones, DRW, warm-up) with it."""
    setup = long_tailed_setup(profile)
    recipe = lt_method(method, pal, orientation)
    dataset = dataset or setup["datasets"][0]
    info = pdata.dataset_info(dataset)
    reshape, others = _split_changes(train_changes)
    schedule = expand_schedule({**setup["train_recipe"], **reshape})
    if not recipe["drw"]:
        schedule["drw_epoch"] = None
    schedule.update(others)
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


_APL_TRAIN = {
    "batch_size": 128,
    "momentum": 0.9,
    "schedule": "cosine",
    "grad_clip": 5.0,
    "precision": PAPER_PRECISION,
}
# APL's per-channel statistics (its dataset.py), which differ from the LDAM-DRW constants the
# long-tailed runs (and palviz.data.dataset_info) use.
_APL_CIFAR10_STATS = {
    "mean": (0.49139968, 0.48215827, 0.44653124),
    "std": (0.24703233, 0.24348505, 0.26158768),
}
_APL_CIFAR100_STATS = {"mean": (0.5071, 0.4865, 0.4409), "std": (0.2673, 0.2564, 0.2762)}
# APL's MNIST recipe (the one its beta = 10 loss weights were tuned with), on MNIST-1D; at
# lr 0.05 NCE+RCE and NFL+RCE collapse to one class there.
_MNIST1D_TRAIN = {
    "epochs": 120,
    "batch_size": 128,
    "lr": 0.01,
    "weight_decay": 1e-2,
    "nesterov": True,
    "eta_min": 1e-3,
    "schedule": "cosine",
    "grad_clip": 5.0,
}
_SYMMETRIC, _ASYMMETRIC = (0.2, 0.4, 0.6, 0.8), (0.1, 0.2, 0.3, 0.4)
# The noisy-label methods of the full and paper tables, named (the registry may hold more).
_NOISY_ALL = (
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
)
_PAIR = ("CE", "CE+FNPAL")
_HEADLINE = (
    "CE",
    "CE+FNPAL",
    "NCE+RCE",
    "NCE+RCE+FNPAL",
    "NFL+RCE",
    "NFL+RCE+FNPAL",
    "CE+FNPN",
)
_FIVE = (0, 1, 2, 3, 4)

#: The noisy-label experiments (notebook 07) per profile.
#:
#: Keys: ``datasets`` (name -> arch and schedule), ``symmetric`` / ``asymmetric`` (noise rates
#: of the tables), ``methods`` / ``asymmetric_methods`` (the tables' methods), ``seeds`` (the
#: tables'), ``headline`` (``kind``, ``eta``, ``methods``, ``seeds``: the paired comparisons
#: the claims are read from), ``fnpn_scales`` (CE+FNPN and CE+FNPAL at these fixed s too, at
#: the headline setting and seeds: "under the same s" read at several s), ``replication``
#: (optional: another profile's runs on fresh seeds), ``sweep_dataset``, ``sweep_etas``,
#: ``sweep_seeds``, ``scales`` (accuracy against s), ``train_size``.
#:
#: ``quick``: MNIST-1D, 4,000 training signals (balanced, stratified), the 1-D CNN, APL's
#: MNIST recipe (SGD lr 0.01, Nesterov momentum 0.9, weight decay 1e-2, cosine annealing to
#: 1e-3, gradient clip 5.0) for 120 epochs of 32 steps: 3,840 SGD steps (APL's MNIST run has
#: 23,400). At this size CE fits its noisy training labels beyond their clean share and its
#: test accuracy falls after a peak: the memorisation regime the robust losses and FNPAL are
#: meant for. Every comparison a claim reads runs five paired seeds: CE and CE+FNPAL at
#: symmetric 0.2 and 0.4 and asymmetric 0.4, CE+FNPN at symmetric 0.4 (at its noise-aware s
#: only); CE+FNPAL also runs a short sweep of s (seed 0). ``full``: the same per-run size,
#: every table method at every noise rate, three seeds; the headline (with NCE+RCE, NFL+RCE
#: and their FNPAL variants) at five seeds; CE+FNPN and CE+FNPAL at three more fixed s; the
#: sweep of s at four noise rates; and ``quick``'s runs again on seeds 5-9. ``smoke``: 600
#: training signals, 2 epochs, one noise rate of each kind, one seed. ``paper``: MNIST
#: (4-layer CNN, 50 epochs), CIFAR-10 (8-layer CNN, 120 epochs) and CIFAR-100 (ResNet-34,
#: 200 epochs) with the APL hyperparameters of docs/reference.md 3.
NOISY_PROFILES: dict[str, dict[str, Any]] = {
    "smoke": {
        "datasets": {"mnist1d": {"arch": "cnn1d", "train": {**_MNIST1D_TRAIN, "epochs": 2}}},
        "symmetric": (0.4,),
        "asymmetric": (0.4,),  # 0.4: a rate of each kind in every profile
        "methods": _PAIR,
        "asymmetric_methods": _PAIR,
        "seeds": (0,),
        "headline": {
            "kind": "symmetric",
            "eta": 0.4,
            "methods": ("CE", "CE+FNPAL", "CE+FNPN"),
            "seeds": (0,),
        },
        "fnpn_scales": (),
        "sweep_dataset": "mnist1d",
        "sweep_etas": (0.4,),
        "sweep_seeds": (0,),
        "scales": (0.3, 3.0),
        "train_size": 600,
    },
    "quick": {
        "datasets": {"mnist1d": {"arch": "cnn1d", "train": _MNIST1D_TRAIN}},
        "symmetric": (0.2, 0.4),
        "asymmetric": (0.4,),
        "methods": _PAIR,
        "asymmetric_methods": _PAIR,
        "seeds": _FIVE,
        "headline": {
            "kind": "symmetric",
            "eta": 0.4,
            "methods": ("CE", "CE+FNPAL", "CE+FNPN"),
            "seeds": _FIVE,
        },
        "fnpn_scales": (),
        "sweep_dataset": "mnist1d",
        "sweep_etas": (0.4,),
        "sweep_seeds": (0,),
        "scales": (2.0, 8.0, 32.0),
        "train_size": 4000,
    },
    "full": {
        "datasets": {"mnist1d": {"arch": "cnn1d", "train": _MNIST1D_TRAIN}},
        "symmetric": _SYMMETRIC,
        "asymmetric": _ASYMMETRIC,
        "methods": _NOISY_ALL,
        "asymmetric_methods": _NOISY_ALL,
        "seeds": (0, 1, 2),
        "headline": {"kind": "symmetric", "eta": 0.4, "methods": _HEADLINE, "seeds": _FIVE},
        "fnpn_scales": (1.0, 3.0, 10.0),
        "replication": _REPLICATION,
        "sweep_dataset": "mnist1d",
        "sweep_etas": _SYMMETRIC,
        "sweep_seeds": (0, 1, 2),
        "scales": (0.3, 1.0, 3.0, 10.0, 30.0),
        "train_size": 4000,
    },
    "paper": {
        "datasets": {
            "mnist": {
                "arch": "cnn_mnist",
                "train": {
                    **_APL_TRAIN,
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
                    **_APL_TRAIN,
                    **_APL_CIFAR10_STATS,
                    "epochs": 120,
                    "lr": 0.01,
                    "weight_decay": 1e-4,
                    "augment": True,
                },
            },
            "cifar100": {
                "arch": "resnet34",
                "train": {
                    **_APL_TRAIN,
                    **_APL_CIFAR100_STATS,
                    "epochs": 200,
                    "lr": 0.1,
                    "weight_decay": 1e-5,
                    "augment": True,
                    "rotation": 20.0,  # APL's RandomRotation(20), after the crop and flip
                },
            },
        },
        "symmetric": _SYMMETRIC,
        "asymmetric": _ASYMMETRIC,
        "methods": _NOISY_ALL,
        "asymmetric_methods": _NOISY_ALL,
        "seeds": (0,),
        "headline": {"kind": "symmetric", "eta": 0.4, "methods": _HEADLINE, "seeds": (0,)},
        "fnpn_scales": (),
        "sweep_dataset": "cifar10",  # PAL Fig. 4-5
        "sweep_etas": _SYMMETRIC,
        "sweep_seeds": (0,),
        "scales": (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0),
        "train_size": None,
    },
}


def noisy_setup(profile: str | None = None) -> dict:
    """The row of :data:`NOISY_PROFILES` for ``profile`` (default: ``$PALVIZ_PROFILE``), a
    copy."""
    return _setup(NOISY_PROFILES, profile)


def noise_rates_problem(setup: dict, rates: Iterable[float]) -> str | None:
    """What is wrong with keeping only ``rates`` of ``setup`` (a row of
    :data:`NOISY_PROFILES`): a kind left without a rate, in words; ``None`` when each kind
    keeps at least one."""
    lost = [k for k in ("symmetric", "asymmetric") if not set(setup[k]) & set(rates)]
    if not lost:
        return None
    have = "; ".join(f"{k} {tuple(setup[k])}" for k in ("symmetric", "asymmetric"))
    return f"no {' or '.join(lost)} rate of the profile is among them (its rates: {have})"


def select_noise_rates(setup: dict, rates: Any, name: str = "rates") -> dict:
    """``setup`` (a row of :data:`NOISY_PROFILES`) with its symmetric and asymmetric rates, and
    the rates of its s-sweep, cut down to those among ``rates`` (``None``: all of them). Each
    kind must keep at least one rate, or ``ValueError`` names ``name`` and
    :func:`noise_rates_problem`."""
    if rates is None:
        return setup
    problem = noise_rates_problem(setup, rates)
    if problem:
        raise ValueError(f"{name} {tuple(rates)!r}: {problem}")
    kept = {
        k: tuple(eta for eta in setup[k] if eta in rates)
        for k in ("symmetric", "asymmetric", "sweep_etas")
    }
    return {**setup, **kept}


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
    # the dataset's statistics unless the profile names the reference's own (APL's CIFAR)
    stats = {"mean": info.mean, "std": info.std}
    schedule = {**stats, **setup["datasets"][dataset]["train"], **train_changes}
    config = TrainConfig(seed=seed, progress=False, **schedule)
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

    Defaults come from :func:`long_tailed_setup` (``datasets``, ``ratios``, ``seeds``,
    ``methods``). ``seeds`` may map an imbalance ratio to its own seeds (a ratio it does
    not name gets the profile's seeds), e.g. ``{10: (0,)}`` to run one seed at rho = 10.
    ``orientation`` places PAL's simplex (:data:`ORIENTATIONS`; with ``pal=(True,)`` only).
    """
    setup = long_tailed_setup(profile)
    methods = tuple(setup["methods"] if methods is None else methods)
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


# --------------------------------------------------------------------------------------
# Departures from the reference code, declared once (docs/reference.md 9 and the README)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Departure:
    """One way palviz differs from the reference code it follows: ``topic``, what the
    ``reference`` (repository and file) does, what palviz does instead, and the section of
    docs/reference.md that explains it."""

    topic: str
    reference: str
    palviz: str
    section: str


#: Every departure from the reference code, in the order of docs/reference.md. Rendered by
#: :func:`departures_markdown` into docs/reference.md 9 and the README (``write_departures``);
#: a test checks that both hold the current table.
DEPARTURES: tuple[Departure, ...] = (
    Departure(
        "Long-tailed subsets",
        "LDAM-DRW `imbalance_cifar.py` seeds NumPy's global generator once and draws the "
        "classes in turn, so a class's images depend on the classes before it",
        "each class is drawn by its own generator, seeded from (seed, class): the same "
        "counts, other images, and the subsets of one seed are nested",
        "1",
    ),
    Departure(
        "LDAM",
        "LDAM-DRW `losses.py` builds CUDA-only tensors",
        "the margins follow the logits' device (no effect on results)",
        "2",
    ),
    Departure(
        "ELM",
        "ELMloss `loss.py` reads `self.lambda` (a syntax error) and builds CUDA-only tensors; "
        "the paper's Eq. 7 leaves the non-target logits unscaled, the code scales them",
        "the evident intent: lambda as meant, the logits' device, s scaling every logit as "
        "the code does; its margin is smaller than LDAM's for lambda > 0 (section 7), so "
        "palviz does not repeat the paper's 'enlarged'",
        "2",
    ),
    Departure(
        "LMSCE",
        "tk1980/LargeMarginInSoftmax excludes the target by subtracting 1e6 from its logit "
        "and offers a `deg_logit` switch",
        "masks the target with -inf; no `deg_logit` (no effect on results)",
        "2",
    ),
    Departure(
        "LA-CE",
        "google-research `logit_adjustment/utils.py` adds log(pi^tau + 1e-12) and has no "
        "class weights",
        "adds tau log(pi) exactly (every count is > 0) and takes optional class weights, so "
        "that DRW applies",
        "2.1",
    ),
    Departure(
        "IB-Focal",
        "pseulki/IB-Loss starts the IB stage at epoch 100 of 200 and cuts the learning rate "
        "on its own steps (x0.01 at 100, x1e-4 at 160, x1e-6 at 180)",
        "the IB stage starts at 80 % of the epochs, under the profile's schedule (LDAM-DRW's "
        "shape), so that one method trains runs of any length",
        "2.2",
    ),
    Departure(
        "NRCE",
        "Active-Passive-Losses `loss.py` normalises RCE with an operator-precedence slip "
        "(`1 / 4 * (C - 1)`)",
        "palviz has no NRCE",
        "3",
    ),
    Departure(
        "Label noise",
        "Active-Passive-Losses `dataset.py` flips floor(floor(eta N) / C) labels in every "
        "class (symmetric); re-draws CIFAR-10's dog flips from labels already flipped; flips "
        "MNIST and CIFAR-100 samples independently (asymmetric), so counts are random",
        "exactly floor(eta n_c) flips per (source) class, chosen from the clean labels, so the "
        "realised rate is the nominal one; every noisy run reports its transition matrix",
        "4",
    ),
    Departure(
        "PAL prototypes",
        "PAL generates the prototypes by minimising L_0 (its Table 7)",
        "the closed-form simplex whenever it exists (d >= k - 1; the same pairwise cosines), "
        "the optimisation otherwise",
        "5",
    ),
    Departure(
        "Layer-peeled model",
        "Fang et al. (PNAS 2021) state the program over every feature",
        "one feature per class (an optimum has this form), solved by L-BFGS in float64 over "
        "variables rescaled into the norm constraints",
        "5",
    ),
    Departure(
        "Input pipeline",
        "both codes apply torchvision's `RandomCrop(32, padding=4)`, `RandomHorizontalFlip` "
        "(and APL's CIFAR-100 `RandomRotation(20)`) to PIL images in `DataLoader` workers",
        "the same transforms, batched on the device on the uint8 tensors with palviz's own "
        "seeded draws; the rotation equals torchvision's tensor `rotate`, which rounds a tie "
        "here and there differently from PIL's (no effect on results beyond the draws)",
        "6",
    ),
    Departure(
        "Precision",
        "both codes train in float32",
        "float32 by default in every profile; `TrainConfig(precision='bf16')` or `'fp16'` "
        "(autocast, the convolutions and cosine logits in half precision) departs when chosen",
        "6",
    ),
    Departure(
        "Model selection",
        "LDAM-DRW `cifar_train.py` reports the epoch with the best test accuracy",
        "the last epoch, and the best test epoch beside it, labelled as such",
        "6.1",
    ),
    Departure(
        "CIFAR-100 network (noise tables)",
        "Active-Passive-Losses' CIFAR-100 configs name a ResNet-50",
        "the ResNet-34 of the APL paper's text",
        "6.2",
    ),
)


_DEPARTURES_MARKERS = (
    "<!-- departures (palviz.experiments.recipes.DEPARTURES; palviz methods --write-docs) -->",
    "<!-- end departures -->",
)


def _section_anchor(reference_text: str, section: str) -> str:
    """The GitHub anchor of docs/reference.md's heading numbered ``section``."""
    found = re.search(rf"^#+ {re.escape(section)}\.? (.*)$", reference_text, re.MULTILINE)
    if found is None:
        raise ValueError(f"docs/reference.md has no section numbered {section!r}")
    title = f"{section} {found.group(1)}".strip().lower()
    return re.sub(r"[^\w\- ]", "", title).replace(" ", "-")


def departures_markdown(reference_text: str, link: str = "") -> str:
    """:data:`DEPARTURES` as a markdown table; each row links its section of docs/reference.md
    (``reference_text``, its text) at ``link`` (``""`` on that page itself,
    ``"reference.md"`` from docs/departures.md)."""
    lines = ["| topic | the reference code | palviz | details |", "|---|---|---|---|"]
    for d in DEPARTURES:
        anchor = _section_anchor(reference_text, d.section)
        where = f"[{'docs/reference.md ' if link else ''}{d.section}]({link}#{anchor})"
        lines.append(f"| {d.topic} | {d.reference} | {d.palviz} | {where} |")
    return "\n".join(lines)


def write_departures(root: str | os.PathLike | None = None, *, check: bool = False) -> bool:
    """Write :func:`departures_markdown` between the departures markers of
    ``docs/reference.md`` and ``docs/departures.md`` under ``root`` (default: the project's);
    with ``check``, write nothing and return whether both are up to date. Returns ``True``
    when both hold the current table (after writing, always)."""
    root = Path(project_root() if root is None else root)
    reference = root / "docs" / "reference.md"
    reference_text = reference.read_text()
    start, end = _DEPARTURES_MARKERS
    pattern = re.compile(re.escape(start) + r"\n(?:[^\n]*\n)*?" + re.escape(end))
    current = True
    for path, link in ((reference, ""), (root / "docs" / "departures.md", "reference.md")):
        text = reference_text if path == reference else path.read_text()
        if not pattern.search(text):
            raise ValueError(f"{path} has no block {start!r} ... {end!r}")
        block = f"{start}\n{departures_markdown(reference_text, link)}\n{end}"
        new = pattern.sub(lambda _m, b=block: b, text)
        if new == text:
            continue
        current = False
        if not check:
            with atomic_write(path, "w") as f:
                f.write(new)
    return current if check else True
