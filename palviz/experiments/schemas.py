"""The parameters cell of every notebook, as literal data: :data:`SCHEMAS`, notebook ->
parameter -> :class:`Parameter`. What an entry means, and how a cell's comments state it, is
told in :mod:`palviz.experiments.params`, which checks the values (and re-exports these
names). This module imports nothing of palviz's, so that a value of the wrong type stops a
notebook within a second of its kernel starting.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

#: The named sets of allowed names a ``"labels"`` entry draws from, and where each is defined.
CHOICES: dict[str, str] = {
    "long-tailed methods": "palviz.experiments.recipes.LT_METHODS",
    "long-tailed methods with PAL": (
        "the methods of palviz.experiments.recipes.LT_METHODS that have +PAL"
    ),
    "long-tailed labels": (
        'palviz.experiments.methods.methods_of("long_tailed"): the methods and +PAL forms'
    ),
    "noisy-label methods": "palviz.experiments.recipes.NOISE_METHODS",
    "orientations": '("axis", "block"), palviz.experiments.methods.ORIENTATIONS without "random"',
    "datasets": (
        "palviz.data.DATASETS: the registered datasets, after importing DATASET_MODULES and "
        "$PALVIZ_DATASET_MODULES"
    ),
}


@dataclass(frozen=True)
class Parameter:
    """One parameter of a parameters cell: a schema entry (see :mod:`palviz.experiments.params`)."""

    kind: str
    rule: str
    doc: str
    examples: tuple
    wrong: Any
    none: bool = False
    min: float | None = None
    max: float | None = None
    min_open: bool = False
    max_open: bool = False
    choices: str | None = None
    min_len: int = 0
    distinct: bool = False
    length: int | None = None


def _int(low: int, high: int, doc: str, examples: tuple, wrong: Any) -> Parameter:
    """An integer in ``[low, high]``."""
    rule = f"an integer in [{low}, {high}]"
    return Parameter("int", rule, doc, examples, wrong, min=low, max=high)


def _real(
    low: float, high: float, doc: str, examples: tuple, wrong: Any, *, low_open: bool = False
) -> Parameter:
    """A number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""
    rule = f"a number in {'(' if low_open else '['}{low:g}, {high:g}]"
    return Parameter("real", rule, doc, examples, wrong, min=low, max=high, min_open=low_open)


def _labels(
    choices: str, rule: str, doc: str, examples: tuple, wrong: Any = "CE", **range_: Any
) -> Parameter:
    """A tuple of distinct names of :data:`CHOICES` entry ``choices``; ``range_``: ``none``
    (default ``True``), ``min_len`` (default 1), ``length``."""
    range_ = {"none": True, "min_len": 1, **range_}
    return Parameter("labels", rule, doc, examples, wrong, choices=choices, distinct=True, **range_)


_PROFILE = Parameter(
    kind="profile",
    none=True,
    rule='None or "smoke" | "quick" | "full" | "paper"',
    doc='the size of everything the notebook computes; None reads $PALVIZ_PROFILE ("quick")',
    examples=(None, "smoke"),
    wrong=1,
)
_SEED = Parameter(
    kind="int",
    min=0,
    max=2**32 - 1,
    rule="an integer in [0, 2**32 - 1]",
    doc="seeds every random draw (numpy's legacy seeds, UMAP's among them, stop at 2**32)",
    examples=(0, 2**32 - 1),
    wrong="0",
)
_INTERACTIVE = Parameter(
    kind="bool",
    rule="True or False",
    doc="show ipywidgets controls in JupyterLab (never in smoke)",
    examples=(False, True),
    wrong="yes",
)
_RATIO = _real(
    1,
    200,
    "rho = n_max / n_min of the long-tailed training set: 1 is balanced; at 200 the "
    "rarest class keeps 4 MNIST-1D signals (2 CIFAR-100 images)",
    (1, 100, 200),
    "100",
)


def _optional(entry: Parameter) -> Parameter:
    """``entry``, allowing ``None`` too (its rule says so)."""
    return replace(entry, none=True, rule=f"None or {entry.rule}")


# The training fields of the notebooks that train (00, 02, 03, 08): they reach every run.
_EPOCHS = Parameter(
    "int",
    "None or an integer >= 1",
    "epochs of every run; None keeps the profile's (the LDAM-DRW schedule scales along)",
    (1, 3),
    "3",
    none=True,
    min=1,
)
_LR = _optional(
    _real(
        0,
        1,
        "SGD's learning rate in every run; None keeps the profile's (up to 10 times the "
        "papers' 0.1 every run stays finite, even one sample per step)",
        (1e-4, 0.05, 1.0),
        "0.05",
        low_open=True,
    )
)
_WEIGHT_DECAY = _optional(
    _real(
        0,
        0.05,
        "weight decay of every run; None keeps the profile's (notebook 03's grid reaches 0.05)",
        (0.0, 2.4e-3, 0.05),
        "0",
    )
)
_BATCH_SIZE = replace(
    _EPOCHS,
    doc="samples per SGD step in every run; None keeps the profile's (more than the training "
    "set makes one step per epoch)",
    examples=(1, 64, 4096),
    wrong=64.0,
)
_TRAIN = {
    "EPOCHS": _EPOCHS,
    "LR": _LR,
    "WEIGHT_DECAY": _WEIGHT_DECAY,
    "BATCH_SIZE": _BATCH_SIZE,
}


def _lt_labels(default: tuple[str, ...], high: tuple[str, ...]) -> Parameter:
    return _labels(
        "long-tailed labels",
        'a tuple of distinct labels of palviz.experiments.methods.methods_of("long_tailed"), '
        "at least 1",
        "the methods trained and compared, as the tables name them",
        (("CE",), default, high),
        none=False,
    )


# 06, 07 and 08: the datasets they train, and the modules that register datasets of one's own.
_DATASET_MODULES = Parameter(
    kind="modules",
    distinct=True,
    rule="a tuple (may be empty) of module names",
    doc="modules that register datasets of one's own (palviz.data.register_dataset), imported "
    "first, as $PALVIZ_DATASET_MODULES's are (the worker processes import them too)",
    examples=((), ("palviz.data.datasets",)),  # the module that registers the built-ins
    wrong="my_datasets",
)
_DATASETS = _labels(
    "datasets",
    "None or a tuple of distinct registered datasets (palviz.data.DATASETS)",
    "the datasets trained, each with its network (palviz.experiments.recipes.network_for) "
    "and the profile's schedule; None: the profile's",
    (("mnist1d",), ("mnist1d", "digits")),
    wrong="mnist1d",
)
# 06 and 07: the rules their parameters cells state.
_SEEDS = Parameter(
    "ints",
    "None or a tuple of distinct integers >= 0",
    "the seeds of every table; None keeps the profile's",
    ((0,), (1, 2)),
    0,
    none=True,
    min=0,
    min_len=1,
    distinct=True,
)
_TRAIN_67 = {
    "EPOCHS": _EPOCHS,
    "LR": replace(_LR, max=None, rule="None or a number > 0", examples=(1e-4, 0.05, 0.5)),
    "WEIGHT_DECAY": replace(_WEIGHT_DECAY, max=None, rule="None or a number >= 0"),
    "BATCH_SIZE": _BATCH_SIZE,
}
# 06: the imbalance ratios, as SEEDS (a dataset too small to cut at rho = 100 runs at (10,)).
_RATIOS = Parameter(
    "reals",
    "None or a tuple of distinct numbers >= 1",
    "the imbalance ratios rho of every table, figure and claim (1 is balanced); None keeps "
    "the profile's",
    # rho = 1, the largest training set, at the high edge, whose BATCH_SIZE is one step an epoch
    ((10,), (1, 100)),
    100,
    none=True,
    min=1,
    min_len=1,
    distinct=True,
)

#: Notebook number -> parameter -> its :class:`Parameter`, in the order of the notebook's
#: parameters cell.
SCHEMAS: dict[str, dict[str, Parameter]] = {
    "00": {
        "PROFILE": _PROFILE,
        "IMBALANCE_RATIO": _RATIO,
        "SEED": _SEED,
        "METHODS": _lt_labels(
            ("CE", "LDAM-DRW", "CE+PAL"),
            ("CE-DRW", "Focal+PAL", "LDAM-DRW", "ELM-DRW+PAL", "LMSCE"),
        ),
        **_TRAIN,
    },
    "01": {
        "PROFILE": _PROFILE,
        "NUM_CLASSES": _int(
            2,
            100,
            "k of the first comparison, the convergence curves and the explorer",
            (2, 10, 100),
            10.0,
        ),
        "DIM": _int(
            2,
            128,
            "d of the same; below k - 1 no simplex exists (in d = 1 the sphere is two "
            "points and PAL's recipe has nothing to optimise)",
            (2, 16, 128),
            "16",
        ),
        "SEED": _SEED,
        "INTERACTIVE": _INTERACTIVE,
    },
    "02": {
        "PROFILE": _PROFILE,
        "K_MAJOR": _int(
            2,
            10,
            "k_A, the majority classes of the layer-peeled model (2 or more: their own "
            "simplex needs them)",
            (2, 5, 10),
            5.0,
        ),
        "K_MINOR": _int(
            2,
            10,
            "k_B, the minority classes (2 or more: a pairwise cosine needs two)",
            (2, 5, 10),
            "5",
        ),
        "ENERGY": _real(
            1,
            5,
            "E_W = E_H, the energy budgets; above 5 the loss is nearly flat at the optimum "
            "and L-BFGS stops short of it (off the R = 1 simplex by 0.04 at 10)",
            (1.0, 5.0),
            "5",
        ),
        "IMBALANCE_RATIO": _RATIO,
        "SEED": _SEED,
        "INTERACTIVE": replace(_INTERACTIVE, doc="a slider for the energy budget in JupyterLab"),
        **_TRAIN,
    },
    "03": {
        "PROFILE": _PROFILE,
        "IMBALANCE_RATIO": _RATIO,
        "SEED": _SEED,
        "WEIGHT_DECAYS": Parameter(
            kind="reals",
            none=True,
            min=0,
            max=0.05,
            min_len=2,
            distinct=True,
            rule="None or a tuple of at least 2 distinct numbers in [0, 0.05]",
            doc="the weight decays compared, one CE run each; None: the profile's grid",
            examples=((0.0, 0.05), (2e-4, 2.4e-3), (0.0, 2e-4, 1e-3, 5e-3, 2e-2, 0.05)),
            wrong=1e-3,
        ),
        "EPOCHS": _EPOCHS,
        "LR": _LR,
        "BATCH_SIZE": _BATCH_SIZE,
    },
    "04": {
        "PROFILE": _PROFILE,
        "NUM_CLASSES": _int(
            3,
            100,
            "k; with k = 2 the anchored pair is already the best pair of unit prototypes "
            "(2 tanh B both ways), so the comparisons would be equalities",
            (3, 10, 100),
            10.0,
        ),
        "B_MAX": _real(
            0.5, 40, "the right end of the B axes (the slider's range)", (0.5, 10.0, 40.0), "10"
        ),
        "NOISE_RATES": Parameter(
            kind="reals",
            min=0,
            max=1,
            min_len=1,
            rule="a tuple of numbers in [0, 1], at least 1",
            doc="the noise rates eta of the noise-aware scale's table",
            examples=((0.0,), (0.0, 0.2, 0.4, 0.6, 0.8), (0.0, 0.05, 0.5, 1.0)),
            wrong=0.4,
        ),
        "SEED": _SEED,
        "INTERACTIVE": _INTERACTIVE,
    },
    "05": {
        "PROFILE": _PROFILE,
        "IMBALANCE_RATIO": replace(
            _RATIO, doc="rho of CIFAR-10-LT (5,000 images in the largest class)"
        ),
        "MAX_M": _real(
            0,
            1,
            "M, the largest LDAM / ELM margin (the rarest class's), on cosine logits",
            (1e-3, 0.5, 1.0),
            "0.5",
            low_open=True,
        ),
        "LAM": _real(
            0,
            2,
            "ELM's lambda, the weight of the wrong-class margin (0 is LDAM; the slider's range)",
            (0.0, 1.0, 2.0),
            "1",
        ),
        "S": _real(
            1,
            100,
            "the logit scale s of LDAM and ELM (1: plain cosine logits; the papers' 30)",
            (1.0, 30.0, 100.0),
            "30",
        ),
        "SEED": _SEED,
        "INTERACTIVE": _INTERACTIVE,
    },
    "06": {
        "PROFILE": _PROFILE,
        "DATASET_MODULES": _DATASET_MODULES,
        "DATASETS": _DATASETS,
        "METHODS": _labels(
            "long-tailed methods",
            "None or a tuple of methods of palviz.experiments.recipes.LT_METHODS",
            "the methods of the tables, without PAL; None: the profile's",
            (("CE",), ("CE", "LDAM-DRW", "ELM-DRW")),
        ),
        "PAL_METHODS": _labels(
            "long-tailed methods with PAL",
            "None or a tuple (may be empty) of methods also trained with PAL",
            "the methods also trained with PAL; None: the profile's among METHODS",
            ((), ("CE", "LDAM-DRW")),
            min_len=0,
        ),
        "ORIENTATIONS": _labels(
            "orientations",
            'None or a tuple (may be empty) from ("axis", "block")',
            "CE + PAL with its simplex turned so (needs CE among PAL_METHODS)",
            ((), ("axis", "block")),
            "axis",
            min_len=0,
        ),
        "SEEDS": _SEEDS,
        "RATIOS": _RATIOS,
        **_TRAIN_67,
        "FIGURE_METHODS": _labels(
            "long-tailed labels",
            "a tuple of table labels",
            "the labels of the per-class figure (those not trained are skipped)",
            (("CE",), ("CE", "LDAM-DRW", "ELM-DRW", "CE+PAL", "LDAM-DRW+PAL")),
            none=False,
        ),
    },
    "07": {
        "PROFILE": _PROFILE,
        "DATASET_MODULES": _DATASET_MODULES,
        "DATASETS": _DATASETS,
        "METHODS": _labels(
            "noisy-label methods",
            "None or a tuple of methods of palviz.experiments.recipes.NOISE_METHODS",
            "the methods of the tables; None: the profile's",
            (("CE",), ("CE", "CE+FNPAL", "CE+FNPN")),
        ),
        "SEEDS": replace(_SEEDS, doc="the seeds of the tables and the headline"),
        "RATES": Parameter(
            kind="noise_rates",
            none=True,
            min_len=1,
            distinct=True,
            rule="None or a tuple of noise rates keeping at least one of each kind's rates",
            doc="the noise rates of the tables and the s-sweep; None: the profile's",
            examples=((0.4,), (0.2, 0.4)),  # 0.4: a rate of each kind in every profile
            wrong=0.4,
        ),
        **_TRAIN_67,
        "LR": replace(
            _LR,
            min=1e-3,
            min_open=False,
            max=None,
            rule="None or a number >= 0.001 (the cosine schedule anneals to 0.001)",
            examples=(1e-3, 0.05),
            wrong="0.01",
        ),
        "WORKERS": replace(
            _EPOCHS,
            doc="processes that train missing runs; None: 2 on a CPU, 1 on a GPU",
            examples=(1, 2),
            wrong=1.0,
        ),
        "TRANSITION_SHOWN": Parameter(
            kind="noise_pairs",
            none=True,
            length=2,
            rule="None or two (kind, eta) pairs with eta among the profile's rates",
            doc="the two transition matrices shown; None: each kind's rate nearest 0.4",
            examples=(None, (("symmetric", 0.4), ("symmetric", 0.4))),  # 0.4: in every profile
            wrong="symmetric",
        ),
        "INTERACTIVE": _INTERACTIVE,
    },
    "08": {
        "PROFILE": _PROFILE,
        "DATASET_MODULES": _DATASET_MODULES,
        # one dataset: the figures draw one long-tailed set (digits cannot reach rho = 200)
        "DATASETS": replace(
            _DATASETS,
            length=1,
            rule="None or a tuple of one registered dataset (palviz.data.DATASETS)",
            doc="the dataset whose geometry is drawn; None: the profile's first",
            examples=(("digits",), ("mnist1d",)),
        ),
        "IMBALANCE_RATIO": _RATIO,
        "SEED": replace(
            _SEED,
            doc="draws the long-tailed subset, initialises the networks and seeds UMAP "
            "(numpy's legacy seeds stop at 2**32)",
        ),
        "METHODS": _lt_labels(
            ("CE", "LDAM-DRW", "ELM-DRW", "CE+PAL"),
            ("CE", "Focal", "LDAM-DRW+PAL", "ELM-DRW", "ELM+PAL"),
        ),
        "UMAP_POINTS": Parameter(
            kind="int",
            none=True,
            min=100,
            rule="None or an integer >= 100",
            doc="test points per UMAP panel (at least 10 a class; more than the test split "
            "keeps all of it); None: 300 in smoke, 2000 otherwise",
            examples=(100, 300, 5000),
            wrong="300",
        ),
        **_TRAIN,
    },
    "09": {
        "PROFILE": _PROFILE,
        "IMBALANCE_RATIO": _real(
            1,
            100,
            "rho = n_max / n_min of the long-tailed cut of digits: 1 is balanced; at 100 the "
            "rarest class keeps one or two training images",
            (1, 100),
            "100",
        ),
        "HELD_OUT": _int(
            5,
            30,
            "images per class held out of digits' training split before the long-tailed cut: "
            "the balanced split that chooses tau (the test split is never used for it)",
            (5, 20, 30),
            20.0,
        ),
        "SEED": replace(
            _SEED,
            doc="draws the held-out split and the long-tailed subset, initialises both networks "
            "and orders their batches",
        ),
        "EPOCHS": replace(
            _EPOCHS, doc="epochs of both networks; None: the profile's (smoke 30, otherwise 300)"
        ),
        "WEIGHT_DECAY": replace(
            _WEIGHT_DECAY, doc="SGD's weight decay for both networks; None: PAL's 5e-4"
        ),
    },
}
