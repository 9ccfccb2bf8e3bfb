"""What each profile trains, as literal data: the facts :mod:`palviz.experiments.recipes` turns
into run specs.

- :data:`LONG_TAILED_PROFILES` and :data:`NOISY_PROFILES`: per profile (``smoke``, ``quick``,
  ``full``, ``paper``) the datasets it trains by default, the training recipe (``train``,
  and ``train_by_dataset`` where a dataset has its own), the methods, ratios or noise rates
  and seeds;

The published numbers the tables stand beside live in :mod:`palviz.experiments.published`.

What a dataset *is* (its loader, sample shape, classes, title, and the network each table
trains on it) is declared once, in the data registry (:func:`palviz.data.register_dataset`);
nothing here repeats it. A dataset a profile does not name (one a user registered) trains with
the profile's ``train`` recipe.
"""

from __future__ import annotations

from typing import Any

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
# The comparisons trained without PAL only: EQL v2 and MM-LDAM (ELM's table) and the fixed ETF
# classifier with the dot-regression loss (Yang et al., NeurIPS 2022), PAL's closest rival, with
# and without mixup (the rival's own CIFAR recipe has mixup).
_LT_RIVALS = ("EQLv2", "MM-LDAM-DRW", "ETF+DR", "ETF+DR+mixup")

#: ``full`` reads ``quick``'s claims a second time on seeds ``quick`` never uses.
_REPLICATION = {"seeds": (5, 6, 7, 8, 9), "of": "quick"}

# The long-tailed recipe of the CPU-sized profiles: LDAM-DRW's schedule over 90 epochs.
_LT_SMALL_TRAIN = {
    "shape": "ldam-drw",
    "epochs": 90,
    "batch_size": 64,
    "lr": 0.05,
    "weight_decay": 2.4e-3,
    "augment": False,
}

#: The long-tailed experiments (notebooks 00, 02, 03, 06, 08) per profile. ``datasets``: what
#: the notebooks train by default (their ``DATASETS`` parameter chooses others); ``train`` is
#: the schedule of every dataset: ``shape="ldam-drw"`` is LDAM-DRW's shape scaled to
#: ``epochs`` (see :func:`palviz.experiments.recipes.expand_schedule`), the other keys are
#: TrainConfig fields. The network of each dataset is its registration's
#: (:meth:`palviz.data.DatasetInfo.network`). ``held_out``: the
#: training samples of every class each run sets aside before its long-tailed cut
#: (``RunSpec.held_out``), where lesson 06 chooses its post-hoc tau.
#:
#: ``quick``: MNIST-1D-LT at rho = 100, the 1-D CNN, 90 epochs: far fewer SGD steps than the
#: paper's CIFAR-10-LT run (lesson 06 prints both, from :mod:`palviz.experiments.budget`).
#: Every method fits its training set, and weight decay is raised to 2.4e-3 so that the sum
#: over steps of lr x wd comes close to the paper's run's
#: (:data:`palviz.experiments.budget.PAPER_LR_WD_INTEGRAL`; lesson 06 prints both); at the
#: paper's 2e-4 and these few steps weight decay would barely act. Headline methods only, five
#: paired seeds, and CE + PAL with the axis orientation (the block one is in ``full``).
#: ``full``: the same data and per-run size, the methods of both papers' CIFAR-LT tables that
#: palviz has (EQLv2 and the rival ETF+DR, also with mixup, without PAL), at rho = 100, 50
#: and 10, both orientations, and ``quick``'s runs again on seeds 5-9 (``replication``: the
#: claims read a second time on fresh seeds). ``smoke``: 2 epochs, one seed, two methods. ``paper``:
#: CIFAR-10/100-LT, ResNet-32, 200 epochs, docs/reference.md 6, at the papers' protocol: rho =
#: 100, 50 and 10 and three seeds of every method (ELM's tables average three runs, APL's
#: report a mean and standard deviation).
LONG_TAILED_PROFILES: dict[str, dict[str, Any]] = {
    "smoke": {
        "datasets": ("mnist1d",),
        "ratios": (100,),
        "seeds": (0,),
        "methods": ("CE", "LDAM-DRW"),
        "pal_methods": ("CE", "LDAM-DRW"),
        "orientations": (),
        "weight_decays": (2e-4, 2.4e-3),
        "train_size": None,
        "held_out": 5,
        "train": {**_LT_SMALL_TRAIN, "epochs": 2},
    },
    "quick": {
        "datasets": ("mnist1d",),
        "ratios": (100,),
        "seeds": (0, 1, 2, 3, 4),
        "methods": ("CE", "LDAM-DRW", "ELM-DRW"),
        "pal_methods": ("CE", "LDAM-DRW"),
        "orientations": ("axis",),
        "weight_decays": (2e-4, 2.4e-3, 2e-2),
        "train_size": None,
        "held_out": 50,
        "train": _LT_SMALL_TRAIN,
    },
    "full": {
        "datasets": ("mnist1d",),
        "ratios": (100, 50, 10),
        "seeds": (0, 1, 2, 3, 4),
        "methods": _LT_ALL + _LT_RIVALS,
        "pal_methods": _LT_ALL,
        "orientations": ("axis", "block"),
        "weight_decays": (2e-4, 2.4e-3, 2e-2),
        "replication": _REPLICATION,
        "train_size": None,
        "held_out": 50,
        "train": _LT_SMALL_TRAIN,
    },
    "paper": {
        "datasets": ("cifar10", "cifar100"),
        "ratios": (100, 50, 10),
        "seeds": (0, 1, 2),
        "methods": _LT_ALL + _LT_RIVALS,
        "pal_methods": _LT_ALL,
        "orientations": (),
        "weight_decays": (0.0, 2e-4, 5e-4, 2e-3, 5e-3),
        "train_size": None,
        "held_out": 20,
        "train": {
            "shape": "ldam-drw",
            "epochs": 200,
            "batch_size": 128,
            "lr": 0.1,
            "weight_decay": 2e-4,
            "augment": True,
        },
    },
}

_APL_TRAIN = {
    "batch_size": 128,
    "momentum": 0.9,
    "schedule": "cosine",
    "grad_clip": 5.0,
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
#: Keys: ``datasets`` (what notebook 07 trains by default; its ``DATASETS`` parameter chooses
#: others), ``train`` (the schedule of every dataset) and ``train_by_dataset`` (dataset ->
#: its own schedule, where it has one), ``symmetric`` / ``asymmetric`` (noise rates of the
#: tables), ``methods`` / ``asymmetric_methods`` (the tables' methods), ``seeds`` (the
#: tables'), ``headline`` (``kind``, ``eta``, ``methods``, ``seeds``: the paired comparisons
#: the claims are read from), ``fnpn_scales`` (CE+FNPN and CE+FNPAL at these fixed s too, at
#: the headline setting and seeds: "under the same s" read at several s), ``replication``
#: (optional: another profile's runs on fresh seeds), ``sweep_dataset`` (when trained; else
#: the first dataset trained), ``sweep_etas``, ``sweep_seeds``, ``scales`` (accuracy against
#: s), ``train_size``. The network of each dataset is its registration's
#: (:meth:`palviz.data.DatasetInfo.network`).
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
#: 200 epochs) with the APL hyperparameters of docs/reference.md 3, three seeds of every table
#: method (APL reports a mean and standard deviation); the sweep of s keeps one seed.
NOISY_PROFILES: dict[str, dict[str, Any]] = {
    "smoke": {
        "datasets": ("mnist1d",),
        "train": {**_MNIST1D_TRAIN, "epochs": 2},
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
        "datasets": ("mnist1d",),
        "train": _MNIST1D_TRAIN,
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
        "datasets": ("mnist1d",),
        "train": _MNIST1D_TRAIN,
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
        "datasets": ("mnist", "cifar10", "cifar100"),
        # APL's MNIST recipe (the 4-layer CNN's), for MNIST and a dataset without its own
        "train": {
            **_APL_TRAIN,
            "epochs": 50,
            "lr": 0.01,
            "weight_decay": 1e-2,
            "nesterov": True,
            "eta_min": 1e-3,
        },
        "train_by_dataset": {
            "cifar10": {
                **_APL_TRAIN,
                **_APL_CIFAR10_STATS,
                "epochs": 120,
                "lr": 0.01,
                "weight_decay": 1e-4,
                "augment": True,
            },
            "cifar100": {
                **_APL_TRAIN,
                **_APL_CIFAR100_STATS,
                "epochs": 200,
                "lr": 0.1,
                "weight_decay": 1e-5,
                "augment": True,
                "rotation": 20.0,  # APL's RandomRotation(20), after the crop and flip
            },
        },
        "symmetric": _SYMMETRIC,
        "asymmetric": _ASYMMETRIC,
        "methods": _NOISY_ALL,
        "asymmetric_methods": _NOISY_ALL,
        "seeds": (0, 1, 2),
        "headline": {"kind": "symmetric", "eta": 0.4, "methods": _HEADLINE, "seeds": (0, 1, 2)},
        "fnpn_scales": (),
        "sweep_dataset": "cifar10",  # PAL Fig. 4-5
        "sweep_etas": _SYMMETRIC,
        "sweep_seeds": (0,),
        "scales": (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0),
        "train_size": None,
    },
}
