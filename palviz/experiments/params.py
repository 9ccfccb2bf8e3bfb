"""The parameters cell of every notebook as a contract: :data:`SCHEMAS` says what each
parameter may be, :func:`check_parameters` checks the values up front.

Each notebook's first code cell (tagged ``parameters``, papermill's tag) sets its UPPER_CASE
parameters; the code that follows calls ``check_parameters("02", PROFILE=PROFILE, ...)``
before any work, so that a bad value stops the notebook in its first cells with one message
of the project's form (:mod:`palviz.checks`), naming the parameter as the notebook spells
it: ``K_MAJOR must be an integer in [2, 10], got 1``. A value of the wrong type raises
:class:`~palviz.checks.ArgumentTypeError` (a ``TypeError`` and a ``ValueError``), a value of
the right type outside the range ``ValueError``; so do an unknown name and a missing one.

**A schema entry** is a :class:`Parameter` of literal data:

- ``kind``: ``"profile"``, ``"int"``, ``"real"``, ``"bool"``, ``"labels"`` (a tuple of names
  from ``choices``), ``"ints"`` / ``"reals"`` (a tuple of numbers), ``"noise_pairs"``
  (``(kind, eta)`` pairs whose eta is among the profile's noise rates of that kind) or
  ``"noise_rates"`` (a tuple of numbers that keeps at least one of the profile's rates of
  each kind, :func:`palviz.experiments.recipes.select_noise_rates`);
- the range: ``min`` / ``max`` (with ``min_open`` / ``max_open`` for an open end) for numbers
  and the items of a tuple, ``choices`` (a name of :data:`CHOICES`), ``min_len``,
  ``distinct``, ``length``; ``none``: ``None`` is allowed too;
- ``rule``: the range in words, the ``<rule>`` of the message;
- ``doc``: what the parameter does, in one line;
- ``examples``: valid values (in every profile) the tests run the notebook with, the first
  at the low edge of the range and the last at its high edge; ``wrong``: a value of the
  wrong type.

**The comment convention.** In the parameters cell, the comment of a parameter (the comment
at the end of its line and the comment lines directly above it) states its rule: every
alternative of the rule, the parts of its text between ``" or "``, appears in it word for
word (spacing aside). ``PROFILE = None  # None or "smoke" | "quick" | "full" | "paper"; ...``
states ``None or "smoke" | "quick" | "full" | "paper"``. tests/test_notebook_params.py
checks it, and runs every notebook with the examples.

This module imports neither torch nor the loss registry until a value needs them, so that a
value of the wrong type stops a notebook within a second of its kernel starting.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace
from typing import Any

from palviz.checks import ArgumentTypeError, invalid
from palviz.files import PROFILES, resolve_profile

__all__ = [
    "CHOICES",
    "SCHEMAS",
    "Parameter",
    "check_parameters",
    "choices",
    "noise_pairs",
    "rule_alternatives",
]

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
    "orientations": '("axis", "block"), palviz.experiments.recipes.ORIENTATIONS without "random"',
}

_NOISE_KINDS = ("symmetric", "asymmetric")


def choices(name: str) -> tuple:
    """The names of :data:`CHOICES` entry ``name`` (imports the registry on first use)."""
    from palviz.experiments import recipes
    from palviz.experiments.methods import methods_of

    if name == "long-tailed methods":
        return tuple(recipes.LT_METHODS)
    if name == "long-tailed methods with PAL":
        labels = methods_of("long_tailed")
        return tuple(m for m in recipes.LT_METHODS if f"{m}+PAL" in labels)
    if name == "long-tailed labels":
        return tuple(methods_of("long_tailed"))
    if name == "noisy-label methods":
        return tuple(recipes.NOISE_METHODS)
    if name == "orientations":
        return tuple(o for o in recipes.ORIENTATIONS if o != "random")
    raise ValueError(f"choices must be one of {tuple(CHOICES)}, got {name!r}")


# --------------------------------------------------------------------------------------
# The schemas
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Parameter:
    """One parameter of a parameters cell: a schema entry (see the module docstring)."""

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
_RATIO = Parameter(
    kind="real",
    min=1,
    max=200,
    rule="a number in [1, 200]",
    doc="rho = n_max / n_min of the long-tailed training set: 1 is balanced; at 200 the "
    "rarest class keeps 4 MNIST-1D signals (2 CIFAR-100 images)",
    examples=(1, 100, 200),
    wrong="100",
)
# The training fields of the notebooks that train (00, 02, 03, 08): they reach every run.
_EPOCHS = Parameter(
    kind="int",
    none=True,
    min=1,
    rule="None or an integer >= 1",
    doc="epochs of every run; None keeps the profile's (the LDAM-DRW schedule scales along)",
    examples=(1, 3),
    wrong="3",
)
_LR = Parameter(
    kind="real",
    none=True,
    min=0,
    min_open=True,
    max=1,
    rule="None or a number in (0, 1]",
    doc="SGD's learning rate in every run; None keeps the profile's (up to 10 times the "
    "papers' 0.1 every run stays finite, even one sample per step)",
    examples=(1e-4, 0.05, 1.0),
    wrong="0.05",
)
_WEIGHT_DECAY = Parameter(
    kind="real",
    none=True,
    min=0,
    max=0.05,
    rule="None or a number in [0, 0.05]",
    doc="weight decay of every run; None keeps the profile's (notebook 03's grid reaches 0.05)",
    examples=(0.0, 2.4e-3, 0.05),
    wrong="0",
)
_BATCH_SIZE = Parameter(
    kind="int",
    none=True,
    min=1,
    rule="None or an integer >= 1",
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
    return Parameter(
        kind="labels",
        choices="long-tailed labels",
        min_len=1,
        distinct=True,
        rule=(
            "a tuple of distinct labels of"
            ' palviz.experiments.methods.methods_of("long_tailed"), at least 1'
        ),
        doc="the methods trained and compared, as the tables name them",
        examples=(("CE",), default, high),
        wrong="CE",
    )


# 06 and 07: the rules their parameters cells state.
_SEEDS = Parameter(
    kind="ints",
    none=True,
    min=0,
    min_len=1,
    distinct=True,
    rule="None or a tuple of distinct integers >= 0",
    doc="the seeds of every table; None keeps the profile's",
    examples=((0,), (1, 2)),
    wrong=0,
)
_TRAIN_67 = {
    "EPOCHS": _EPOCHS,
    "LR": replace(_LR, max=None, rule="None or a number > 0", examples=(1e-4, 0.05, 0.5)),
    "WEIGHT_DECAY": replace(_WEIGHT_DECAY, max=None, rule="None or a number >= 0"),
    "BATCH_SIZE": _BATCH_SIZE,
}

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
        "NUM_CLASSES": Parameter(
            kind="int",
            min=2,
            max=100,
            rule="an integer in [2, 100]",
            doc="k of the first comparison, the convergence curves and the explorer",
            examples=(2, 10, 100),
            wrong=10.0,
        ),
        "DIM": Parameter(
            kind="int",
            min=2,
            max=128,
            rule="an integer in [2, 128]",
            doc="d of the same; below k - 1 no simplex exists (in d = 1 the sphere is two "
            "points and PAL's recipe has nothing to optimise)",
            examples=(2, 16, 128),
            wrong="16",
        ),
        "SEED": _SEED,
        "INTERACTIVE": _INTERACTIVE,
    },
    "02": {
        "PROFILE": _PROFILE,
        "K_MAJOR": Parameter(
            kind="int",
            min=2,
            max=10,
            rule="an integer in [2, 10]",
            doc="k_A, the majority classes of the layer-peeled model (2 or more: their own "
            "simplex needs them)",
            examples=(2, 5, 10),
            wrong=5.0,
        ),
        "K_MINOR": Parameter(
            kind="int",
            min=2,
            max=10,
            rule="an integer in [2, 10]",
            doc="k_B, the minority classes (2 or more: a pairwise cosine needs two)",
            examples=(2, 5, 10),
            wrong="5",
        ),
        "ENERGY": Parameter(
            kind="real",
            min=1,
            max=5,
            rule="a number in [1, 5]",
            doc="E_W = E_H, the energy budgets; above 5 the loss is nearly flat at the optimum "
            "and L-BFGS stops short of it (off the R = 1 simplex by 0.04 at 10)",
            examples=(1.0, 5.0),
            wrong="5",
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
        "NUM_CLASSES": Parameter(
            kind="int",
            min=3,
            max=100,
            rule="an integer in [3, 100]",
            doc="k; with k = 2 the anchored pair is already the best pair of unit prototypes "
            "(2 tanh B both ways), so the comparisons would be equalities",
            examples=(3, 10, 100),
            wrong=10.0,
        ),
        "B_MAX": Parameter(
            kind="real",
            min=0.5,
            max=40,
            rule="a number in [0.5, 40]",
            doc="the right end of the B axes (the slider's range)",
            examples=(0.5, 10.0, 40.0),
            wrong="10",
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
        "MAX_M": Parameter(
            kind="real",
            min=0,
            min_open=True,
            max=1,
            rule="a number in (0, 1]",
            doc="M, the largest LDAM / ELM margin (the rarest class's), on cosine logits",
            examples=(1e-3, 0.5, 1.0),
            wrong="0.5",
        ),
        "LAM": Parameter(
            kind="real",
            min=0,
            max=2,
            rule="a number in [0, 2]",
            doc="ELM's lambda, the weight of the wrong-class margin (0 is LDAM; the slider's "
            "range)",
            examples=(0.0, 1.0, 2.0),
            wrong="1",
        ),
        "S": Parameter(
            kind="real",
            min=1,
            max=100,
            rule="a number in [1, 100]",
            doc="the logit scale s of LDAM and ELM (1: plain cosine logits; the papers' 30)",
            examples=(1.0, 30.0, 100.0),
            wrong="30",
        ),
        "SEED": _SEED,
        "INTERACTIVE": _INTERACTIVE,
    },
    "06": {
        "PROFILE": _PROFILE,
        "METHODS": Parameter(
            kind="labels",
            none=True,
            choices="long-tailed methods",
            min_len=1,
            distinct=True,
            rule="None or a tuple of methods of palviz.experiments.recipes.LT_METHODS",
            doc="the methods of the tables, without PAL; None: the profile's",
            examples=(("CE",), ("CE", "LDAM-DRW", "ELM-DRW")),
            wrong="CE",
        ),
        "PAL_METHODS": Parameter(
            kind="labels",
            none=True,
            choices="long-tailed methods with PAL",
            min_len=0,
            distinct=True,
            rule="None or a tuple (may be empty) of methods also trained with PAL",
            doc="the methods also trained with PAL; None: the profile's among METHODS",
            examples=((), ("CE", "LDAM-DRW")),
            wrong="CE",
        ),
        "ORIENTATIONS": Parameter(
            kind="labels",
            none=True,
            choices="orientations",
            min_len=0,
            distinct=True,
            rule='None or a tuple (may be empty) from ("axis", "block")',
            doc="CE + PAL with its simplex turned so (needs CE among PAL_METHODS)",
            examples=((), ("axis", "block")),
            wrong="axis",
        ),
        "SEEDS": _SEEDS,
        **_TRAIN_67,
        "FIGURE_METHODS": Parameter(
            kind="labels",
            choices="long-tailed labels",
            min_len=1,
            distinct=True,
            rule="a tuple of table labels",
            doc="the labels of the per-class figure (those not trained are skipped)",
            examples=(("CE",), ("CE", "LDAM-DRW", "ELM-DRW", "CE+PAL", "LDAM-DRW+PAL")),
            wrong="CE",
        ),
    },
    "07": {
        "PROFILE": _PROFILE,
        "METHODS": Parameter(
            kind="labels",
            none=True,
            choices="noisy-label methods",
            min_len=1,
            distinct=True,
            rule="None or a tuple of methods of palviz.experiments.recipes.NOISE_METHODS",
            doc="the methods of the tables; None: the profile's",
            examples=(("CE",), ("CE", "CE+FNPAL", "CE+FNPN")),
            wrong="CE",
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
        "WORKERS": Parameter(
            kind="int",
            none=True,
            min=1,
            rule="None or an integer >= 1",
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
}


# --------------------------------------------------------------------------------------
# The check
# --------------------------------------------------------------------------------------


def rule_alternatives(rule: str) -> list[str]:
    """The alternatives of a rule, the parts between ``" or "``: what a parameter's comment
    must state word for word (the comment convention of the module docstring)."""
    return [part.strip() for part in rule.split(" or ")]


def _fail(name: str, value: Any, entry: Parameter, detail: str | None = None) -> ValueError:
    rule = entry.rule if detail is None else f"{entry.rule}; {detail}"
    return invalid(name, value, rule)


def _wrong_type(name: str, value: Any, entry: Parameter) -> ArgumentTypeError:
    return ArgumentTypeError(str(_fail(name, value, entry)))


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _is_real(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _is_sequence(x: Any) -> bool:
    return isinstance(x, (list, tuple))


def _item_type_ok(kind: str, item: Any) -> bool:
    if kind == "labels":
        return isinstance(item, str)
    if kind == "ints":
        return _is_int(item)
    if kind in ("reals", "noise_rates"):
        return _is_real(item)
    # noise_pairs: (kind, eta)
    return _is_sequence(item) and len(item) == 2 and isinstance(item[0], str) and _is_real(item[1])


def _check_type(name: str, value: Any, entry: Parameter) -> None:
    """Raise :class:`ArgumentTypeError` unless ``value`` has the entry's type."""
    kind = entry.kind
    if value is None and entry.none:
        return
    ok = {
        "profile": lambda v: isinstance(v, str),
        "int": _is_int,
        "real": _is_real,
        "bool": lambda v: isinstance(v, bool),
    }.get(kind)
    if ok is not None:
        if not ok(value):
            raise _wrong_type(name, value, entry)
        return
    if not _is_sequence(value) or not all(_item_type_ok(kind, item) for item in value):
        raise _wrong_type(name, value, entry)


def _within(x: float, entry: Parameter) -> bool:
    low, high = entry.min, entry.max
    if x != x or x in (float("inf"), float("-inf")):
        return False
    if low is not None and (x <= low if entry.min_open else x < low):
        return False
    return not (high is not None and (x >= high if entry.max_open else x > high))


def _check_value(name: str, value: Any, entry: Parameter, profile: Any, rates: Any = None) -> Any:
    """``value`` (of the entry's type) checked against its range (``profile`` and the noise
    ``rates`` a notebook keeps are what a profile-dependent range depends on); returned with
    tuples for lists."""
    kind = entry.kind
    if kind == "profile" and value is None:
        resolve_profile(None)  # $PALVIZ_PROFILE is checked too, naming it
        return None
    if value is None:
        return None
    if kind == "profile":
        if value not in PROFILES:
            raise _fail(name, value, entry)
        return value
    if kind in ("int", "real"):
        if not _within(value, entry):
            raise _fail(name, value, entry)
        return value
    if kind == "bool":
        return value
    items = tuple(tuple(v) if _is_sequence(v) else v for v in value)
    if kind == "labels":
        allowed = choices(entry.choices)
        for item in items:
            if item not in allowed:
                raise _fail(name, value, entry, f"{item!r} is not one of {allowed}")
    elif kind in ("ints", "reals"):
        for item in items:
            if not _within(item, entry):
                raise _fail(name, value, entry, f"{item!r} is out of range")
    elif kind == "noise_rates":
        from palviz.experiments.recipes import noise_rates_problem, noisy_setup

        problem = noise_rates_problem(noisy_setup(resolve_profile(profile)), items)
        if problem:
            raise _fail(name, value, entry, problem)
    elif kind == "noise_pairs":
        if len(items) != entry.length:
            raise _fail(name, value, entry, f"{len(items)} pairs given")
        _check_noise_pairs(name, value, items, entry, profile, rates)
    if len(items) < entry.min_len:
        raise _fail(name, value, entry)
    if entry.distinct and len(set(items)) != len(items):
        raise _fail(name, value, entry, "repeats found")
    return items


def noise_pairs(profile: str | None = None, rates: Any = None) -> tuple[tuple[str, float], ...]:
    """The ``(kind, eta)`` pairs that notebook 07 trains in profile ``profile`` (``None``:
    ``$PALVIZ_PROFILE``) keeping the noise rates ``rates`` (its ``RATES``; ``None``: all),
    each kind's rates in order: what ``TRANSITION_SHOWN`` may name."""
    from palviz.experiments.recipes import noisy_setup, select_noise_rates

    setup = select_noise_rates(noisy_setup(resolve_profile(profile)), rates, "RATES")
    return tuple((kind, eta) for kind in _NOISE_KINDS for eta in setup[kind])


def _check_noise_pairs(
    name: str, value: Any, pairs: tuple, entry: Parameter, profile: Any, rates: Any
) -> None:
    allowed = noise_pairs(profile, rates)
    for kind, eta in pairs:
        if (kind, eta) not in allowed:
            shown = ", ".join(f"({k!r}, {e})" for k, e in allowed)
            kept = "" if rates is None else f" kept by RATES {tuple(rates)!r}"
            detail = f"the pairs of profile {resolve_profile(profile)!r}{kept} are {shown}"
            raise _fail(name, value, entry, f"{detail}; ({kind!r}, {eta}) is not one of them")


def _number(notebook: Any) -> str:
    number = str(notebook)[:2].zfill(2)
    if number not in SCHEMAS:
        raise ValueError(
            f"notebook must be one of {tuple(SCHEMAS)} (or its file name), got {notebook!r}"
        )
    return number


def check_parameters(notebook: str, **values: Any) -> dict:
    """Check the parameters of ``notebook`` (``"02"`` or ``"02_minority_collapse"``) against
    its schema and return them, lists as tuples.

    Every parameter of the schema must be passed, and no other. All values are checked for
    their type first, then for their range, so that a value of the wrong type is reported
    before the method registry (and torch) is imported. The first bad value raises, with the
    message ``<NAME> must be <rule>, got <value>``."""
    number = _number(notebook)
    schema = SCHEMAS[number]
    unknown = [name for name in values if name not in schema]
    if unknown:
        raise ValueError(
            f"notebook {number} has no parameter {unknown}; its parameters are {list(schema)}"
        )
    missing = [name for name in schema if name not in values]
    if missing:
        raise ValueError(
            f"notebook {number}: parameters {missing} were not passed to the check (pass "
            "every parameter of the cell)"
        )
    for name, entry in schema.items():
        _check_type(name, values[name], entry)
    profile, rates = values.get("PROFILE"), values.get("RATES")
    # in the schema's order: PROFILE and RATES are checked before the values that depend on them
    return {
        name: _check_value(name, values[name], entry, profile, rates)
        for name, entry in schema.items()
    }
