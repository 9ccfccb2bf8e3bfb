"""Each notebook's parameters cell as one table, :data:`TABLES`, and :func:`check_parameters`,
which a notebook calls right after the cell: ``check_parameters("02", globals())``.

A table holds, per parameter, one :class:`Param`: its default (the value the cell sets), its
type (``kind``) and what is allowed (a range, a named set of choices, a length). A bad value
stops the notebook in its first cells with one message of the project's form
(:mod:`palviz.checks`), naming the parameter as the cell spells it, the value and what is
allowed: ``K_MAJOR must be an integer in [2, 10], got 1``. A value of the wrong type raises
:class:`~palviz.checks.ArgumentTypeError` (a ``TypeError`` and a ``ValueError``), a value of
the right type outside what is allowed ``ValueError``.

Kinds: ``"profile"``, ``"int"``, ``"real"``, ``"bool"``; tuples (a list is taken for one):
``"ints"``, ``"reals"``, ``"labels"`` (names from one of :data:`CHOICES`), ``"modules"``
(modules that register datasets, imported when checked), ``"noise_rates"`` (keeping at least
one of the profile's rates of each noise kind) and ``"noise_pairs"`` (``(kind, eta)`` pairs
the notebook trains). The cell's comment of a parameter states its :func:`rule` word for word
(every alternative between ``" or "``); tests/test_notebook_params.py checks it and runs
every notebook at the :func:`edges` of every range.

This module sits outside :mod:`palviz.experiments`, whose package imports torch: all types
are checked before anything is imported, so a value of the wrong type stops a notebook
within a second of its kernel starting; the named choices import the method registry when a
value is checked against them.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from palviz.checks import ArgumentTypeError, check_choice, invalid
from palviz.files import PROFILES, resolve_profile

_NOISE_KINDS = ("symmetric", "asymmetric")


def _lt_labels() -> tuple:
    from palviz.experiments.methods import methods_of

    return tuple(methods_of("long_tailed"))


def _recipes() -> Any:
    from palviz.experiments import recipes

    return recipes


def _datasets() -> tuple:
    from palviz import data as pdata

    pdata.import_dataset_modules()  # those $PALVIZ_DATASET_MODULES names
    return tuple(pdata.DATASETS)


#: The named sets a ``"labels"`` parameter draws its names from, each read when needed.
CHOICES: dict[str, Callable[[], tuple]] = {
    "long-tailed methods": lambda: _recipes().LT_METHODS,
    "long-tailed methods with PAL": lambda: tuple(
        m for m in _recipes().LT_METHODS if f"{m}+PAL" in _lt_labels()
    ),
    "long-tailed labels": _lt_labels,
    "noisy-label methods": lambda: _recipes().NOISE_METHODS,
    "orientations": lambda: ("axis", "block"),
    "noise kinds": lambda: _NOISE_KINDS,
    "datasets": _datasets,
}


@dataclass(frozen=True)
class Param:
    """One parameter: its ``default``, its ``kind`` and what is allowed: ``min`` / ``max``
    (``min_open``: ``min`` itself is not) for a number and the numbers of a tuple;
    ``choices`` (a name of :data:`CHOICES`); ``min_len``, ``length``, ``distinct`` for a
    tuple; ``none``: ``None`` too. ``text``: the allowed values in words, where the range
    does not say it; ``edges``: valid values (in every profile) at the low and the high edge
    of the range, where the range does not give them."""

    default: Any
    kind: str
    min: float | None = None
    max: float | None = None
    min_open: bool = False
    none: bool = False
    choices: str | None = None
    min_len: int = 1
    length: int | None = None
    distinct: bool = True
    text: str = ""
    edges: tuple = ()


def _range(p: Param) -> str:
    if p.max is not None:
        return f"in {'(' if p.min_open else '['}{p.min:g}, {p.max:g}]"
    return f"{'>' if p.min_open else '>='} {p.min:g}"


def rule(p: Param) -> str:
    """What ``p`` allows, in words: the ``<rule>`` of ``<NAME> must be <rule>, got <value>``."""
    noun = "integer" if p.kind in ("int", "ints") else "number"
    if p.text:
        text = p.text
    elif p.kind == "profile":
        text = '"smoke" | "quick" | "full" | "paper"'
    elif p.kind == "bool":
        text = "True or False"
    elif p.kind in ("int", "real"):
        text = f"{'an' if noun == 'integer' else 'a'} {noun} {_range(p)}"
    else:  # ints, reals
        least = f"at least {p.min_len} " if p.min_len > 1 else ""
        text = f"a tuple of {least}{'distinct ' * p.distinct}{noun}s {_range(p)}"
    return f"None or {text}" if p.none else text


def edges(p: Param) -> tuple:
    """Two valid values of ``p``, at the low and at the high edge of what it allows."""
    return p.edges or (p.min, p.max)


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _is_real(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


_TYPES: dict[str, Callable[[Any], bool]] = {
    "profile": lambda v: isinstance(v, str),
    "int": _is_int,
    "real": _is_real,
    "bool": lambda v: isinstance(v, bool),
    "ints": _is_int,
    "reals": _is_real,
    "noise_rates": _is_real,
    "labels": lambda v: isinstance(v, str),
    "modules": lambda v: isinstance(v, str),
    "noise_pairs": lambda v: (
        isinstance(v, list | tuple) and len(v) == 2 and isinstance(v[0], str) and _is_real(v[1])
    ),
}
_SCALARS = ("profile", "int", "real", "bool")


def _check_type(name: str, value: Any, p: Param) -> None:
    ok = _TYPES[p.kind]
    if value is None and p.none:
        return
    if p.kind in _SCALARS and ok(value):
        return
    if p.kind not in _SCALARS and isinstance(value, list | tuple) and all(map(ok, value)):
        return
    raise ArgumentTypeError(str(invalid(name, value, rule(p))))


def _within(x: float, p: Param) -> bool:
    if x != x or x in (float("inf"), float("-inf")):
        return False
    low = p.min is None or (x > p.min if p.min_open else x >= p.min)
    return low and (p.max is None or x <= p.max)


def _noisy_setup(values: Mapping) -> dict:
    """Notebook 07's noise settings in its ``PROFILE``, of its ``NOISE_KINDS``."""
    recipes = _recipes()
    setup = recipes.noisy_setup(resolve_profile(values.get("PROFILE")))
    return recipes.select_noise_kinds(setup, values.get("NOISE_KINDS"))


def _check_value(name: str, value: Any, p: Param, values: Mapping) -> Any:
    """``value``, of ``p``'s type, checked against what ``p`` allows (``values``: the other
    parameters, whose ``PROFILE``, ``NOISE_KINDS`` and ``RATES`` a range may depend on);
    lists as tuples."""

    def fail(detail: str = "") -> ValueError:
        return invalid(name, value, rule(p) + (f"; {detail}" if detail else ""))

    if p.kind == "profile":
        if value is not None and value not in PROFILES:
            raise fail()
        resolve_profile(value)  # None reads $PALVIZ_PROFILE, checked too, naming it
        return value
    if value is None or p.kind == "bool":
        return value
    if p.kind in ("int", "real"):
        if not _within(value, p):
            raise fail()
        return value
    items = tuple(tuple(v) if isinstance(v, list) else v for v in value)
    if p.length is not None and len(items) != p.length:
        raise fail(f"{len(items)} {'pairs ' * (p.kind == 'noise_pairs')}given")
    if len(items) < p.min_len:
        raise fail()
    if p.distinct and len(set(items)) != len(items):
        raise fail("repeats found")
    profile = values.get("PROFILE")
    if p.kind in ("ints", "reals"):
        for item in items:
            if not _within(item, p):
                raise fail(f"{item!r} is out of range")
    elif p.kind == "labels":
        allowed = CHOICES[p.choices]()
        for i, item in enumerate(items):
            check_choice(f"{name}[{i}]", item, allowed)
    elif p.kind == "modules":
        from palviz.data import import_dataset_modules

        for module in items:
            try:
                import_dataset_modules((module,), where=name)
            except ValueError as err:
                cause = f"{type(err.__cause__).__name__}: {err.__cause__}"
                raise fail(f"{module!r} cannot be imported ({cause})") from err
    elif p.kind == "noise_rates":
        problem = _recipes().noise_rates_problem(_noisy_setup(values), items)
        if problem:
            raise fail(problem)
    else:  # noise_pairs
        rates, kinds = values.get("RATES"), values.get("NOISE_KINDS")
        setup = _recipes().select_noise_rates(_noisy_setup(values), rates, "RATES")
        allowed = tuple((kind, eta) for kind in _NOISE_KINDS for eta in setup[kind])
        for pair in items:
            if pair not in allowed:
                shown = ", ".join(f"({k!r}, {e})" for k, e in allowed)
                kept = "" if kinds is None else f" of NOISE_KINDS {tuple(kinds)!r}"
                kept += "" if rates is None else f" kept by RATES {tuple(rates)!r}"
                where = f"the pairs of profile {resolve_profile(profile)!r}{kept} are {shown}"
                raise fail(f"{where}; {pair!r} is not one of them")
    return items


def check_parameters(notebook: str, namespace: Mapping[str, Any]) -> dict:
    """The parameters of ``notebook`` (``"02"`` or ``"02_minority_collapse"``), read from
    ``namespace`` (the notebook's ``globals()``) and checked against its table: every type
    first, then every value in the table's order. Returns them by name, lists as tuples."""
    number = str(notebook)[:2].zfill(2)
    if number not in TABLES:
        raise ValueError(f"notebook must be one of {tuple(TABLES)}, got {notebook!r}")
    table = TABLES[number]
    missing = [name for name in table if name not in namespace]
    if missing:
        raise ValueError(f"notebook {number}: parameters {missing} are not set (set them all)")
    for name, p in table.items():
        _check_type(name, namespace[name], p)
    return {name: _check_value(name, namespace[name], p, namespace) for name, p in table.items()}


# --------------------------------------------------------------------------------------
# The tables
# --------------------------------------------------------------------------------------

_PROFILE = Param(None, "profile", none=True, edges=(None, "smoke"))
_SEED = Param(0, "int", 0, 2**32 - 1, text="an integer in [0, 2**32 - 1]")
_INTERACTIVE = Param(True, "bool", edges=(False, True))
_RATIO = Param(100, "real", 1, 200)
_EPOCHS = Param(None, "int", 1, none=True, edges=(1, 3))
_BATCH_SIZE = Param(None, "int", 1, none=True, edges=(1, 4096))
_LR = Param(None, "real", 0, 1, min_open=True, none=True, edges=(1e-4, 1.0))
_WEIGHT_DECAY = Param(None, "real", 0, 0.05, none=True)
_TRAIN = {"EPOCHS": _EPOCHS, "LR": _LR, "WEIGHT_DECAY": _WEIGHT_DECAY, "BATCH_SIZE": _BATCH_SIZE}
_TRAIN_67 = {
    **_TRAIN,
    "LR": Param(None, "real", 0, min_open=True, none=True, edges=(1e-4, 0.5)),
    "WEIGHT_DECAY": Param(None, "real", 0, none=True, edges=(0.0, 0.05)),
}
_LT_LABELS = 'a tuple of distinct labels of palviz.experiments.methods.methods_of("long_tailed")'
_EMPTY = "a tuple (may be empty) of"


def _names(default: Any, choices: str, text: str, edges: tuple, **allowed: Any) -> Param:
    """A tuple of names from :data:`CHOICES` entry ``choices``."""
    return Param(default, "labels", choices=choices, text=text, edges=edges, **allowed)


# fmt: off
_DATASET_MODULES = Param((), "modules", min_len=0, text=f"{_EMPTY} module names",
                         edges=((), ("palviz.data.datasets",)))  # it registers the built-ins
_DATASETS = _names(None, "datasets", "a tuple of distinct registered datasets "
                   "(palviz.data.DATASETS)", (("mnist1d",), ("mnist1d", "digits")), none=True)
_SEEDS = Param(None, "ints", 0, none=True, edges=((0,), (1, 2)))
_PICKED = ("CE", "LDAM-DRW", "ELM-DRW", "CE+PAL", "LDAM-DRW+PAL")

#: Notebook number -> parameter -> its :class:`Param`, in the order of the parameters cell.
TABLES: dict[str, dict[str, Param]] = {
    "00": {"PROFILE": _PROFILE, "IMBALANCE_RATIO": _RATIO, "SEED": _SEED,
           "METHODS": _names(("CE", "LDAM-DRW", "CE+PAL"), "long-tailed labels", _LT_LABELS, (
               ("CE",), ("CE-DRW", "Focal+PAL", "LDAM-DRW", "ELM-DRW+PAL", "LMSCE"))),
           **_TRAIN},
    "01": {"PROFILE": _PROFILE, "NUM_CLASSES": Param(10, "int", 2, 100),
           "DIM": Param(16, "int", 2, 128), "SEED": _SEED, "INTERACTIVE": _INTERACTIVE},
    "02": {"PROFILE": _PROFILE, "K_MAJOR": Param(5, "int", 2, 10),
           "K_MINOR": Param(5, "int", 2, 10), "ENERGY": Param(5.0, "real", 1, 5),
           "IMBALANCE_RATIO": _RATIO, "SEED": _SEED, "INTERACTIVE": _INTERACTIVE, **_TRAIN},
    "03": {"PROFILE": _PROFILE, "IMBALANCE_RATIO": _RATIO, "SEED": _SEED,
           "WEIGHT_DECAYS": Param(None, "reals", 0, 0.05, none=True, min_len=2, edges=(
               (0.0, 0.05), (0.0, 2e-4, 1e-3, 5e-3, 2e-2, 0.05))),
           "EPOCHS": _EPOCHS, "LR": _LR, "BATCH_SIZE": _BATCH_SIZE},
    "04": {"PROFILE": _PROFILE, "NUM_CLASSES": Param(10, "int", 3, 100),
           "B_MAX": Param(10.0, "real", 0.5, 40),
           "NOISE_RATES": Param((0.0, 0.2, 0.4, 0.6, 0.8), "reals", 0, 1, distinct=False,
                                edges=((0.0,), (0.0, 0.05, 0.5, 1.0))),
           "SEED": _SEED, "INTERACTIVE": _INTERACTIVE},
    "05": {"PROFILE": _PROFILE, "IMBALANCE_RATIO": _RATIO,
           "MAX_M": Param(0.5, "real", 0, 1, min_open=True, edges=(1e-3, 1.0)),
           "LAM": Param(1.0, "real", 0, 2), "S": Param(30.0, "real", 1, 100),
           "SEED": _SEED, "INTERACTIVE": _INTERACTIVE},
    "06": {"PROFILE": _PROFILE, "DATASET_MODULES": _DATASET_MODULES, "DATASETS": _DATASETS,
           "METHODS": _names(None, "long-tailed methods", "a tuple of methods of "
                             "palviz.experiments.recipes.LT_METHODS",
                             (("CE",), ("CE", "LDAM-DRW", "ELM-DRW")), none=True),
           "PAL_METHODS": _names(None, "long-tailed methods with PAL",
                                 f"{_EMPTY} methods also trained with PAL",
                                 ((), ("CE", "LDAM-DRW")), none=True, min_len=0),
           "ORIENTATIONS": _names(None, "orientations",
                                  'a tuple (may be empty) from ("axis", "block")',
                                  ((), ("axis", "block")), none=True, min_len=0),
           "SEEDS": _SEEDS,
           # a dataset too small to cut at rho = 100 runs at (10,); rho = 1 is the largest set
           "RATIOS": Param(None, "reals", 1, none=True, edges=((10,), (1, 100))),
           **_TRAIN_67,
           "FIGURE_METHODS": _names(_PICKED, "long-tailed labels", "a tuple of table labels",
                                    (("CE",), _PICKED))},
    "07": {"PROFILE": _PROFILE, "DATASET_MODULES": _DATASET_MODULES, "DATASETS": _DATASETS,
           "METHODS": _names(None, "noisy-label methods", "a tuple of methods of "
                             "palviz.experiments.recipes.NOISE_METHODS",
                             (("CE",), ("CE", "CE+FNPAL", "CE+FNPN")), none=True),
           "SEEDS": _SEEDS,
           "NOISE_KINDS": _names(None, "noise kinds", 'a tuple of noise kinds from '
                                 '("symmetric", "asymmetric")', (("symmetric",), _NOISE_KINDS),
                                 none=True),
           "RATES": Param(None, "noise_rates", none=True, edges=((0.4,), (0.2, 0.4)),  # 0.4: in
                          text="a tuple of noise rates keeping at least one of each kind's "
                          "rates"),  # every profile, as in TRANSITION_SHOWN's edge
           **_TRAIN_67,
           "LR": Param(None, "real", 1e-3, none=True, edges=(1e-3, 0.05), text="a number >= "
                       "0.001 (the cosine schedule anneals to 0.001)"),
           "WORKERS": Param(None, "int", 1, none=True, edges=(1, 2)),
           "TRANSITION_SHOWN": Param(None, "noise_pairs", none=True, length=2, distinct=False,
                                     text="two (kind, eta) pairs with eta among the profile's "
                                     "rates", edges=(None, (("symmetric", 0.4),) * 2)),
           "INTERACTIVE": _INTERACTIVE},
    # 08 draws one dataset's geometry: one long-tailed set (digits cannot reach rho = 200)
    "08": {"PROFILE": _PROFILE, "DATASET_MODULES": _DATASET_MODULES,
           "DATASETS": _names(None, "datasets", "a tuple of one registered dataset "
                              "(palviz.data.DATASETS)", (("digits",), ("mnist1d",)), none=True,
                              length=1),
           "IMBALANCE_RATIO": _RATIO, "SEED": _SEED,
           "METHODS": _names(("CE", "LDAM-DRW", "ELM-DRW", "CE+PAL"), "long-tailed labels",
                             _LT_LABELS, (("CE",), ("CE", "Focal", "LDAM-DRW+PAL", "ELM-DRW",
                                                    "ELM+PAL"))),
           "UMAP_POINTS": Param(None, "int", 100, none=True, edges=(100, 5000)), **_TRAIN},
    "09": {"PROFILE": _PROFILE, "IMBALANCE_RATIO": Param(100, "real", 1, 100),
           "HELD_OUT": Param(20, "int", 5, 30), "SEED": _SEED, "EPOCHS": _EPOCHS,
           "WEIGHT_DECAY": _WEIGHT_DECAY},
}
# fmt: on
