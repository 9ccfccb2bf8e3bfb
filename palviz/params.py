"""The parameters cells of the notebooks as contracts: each parameter's type and range, declared
once per notebook (:data:`SCHEMAS`), checked up front by :func:`check_parameters` in the cell
after the parameters cell, so that a bad value stops there with a message naming it
(``EPOCHS must be an integer >= 1, got 0``), before any work.

Each entry: ``rule`` (what is allowed, in words: the parameters cell's comment says the same),
``check`` (value -> raises), ``examples`` (valid values, the edges of the range among them, that
the tests run the notebook with) and ``wrong`` (a value of the wrong type, which must stop the
notebook in its first cells).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from palviz.checks import (
    check_bool,
    check_choices,
    check_int,
    check_non_negative,
    check_positive,
    check_real,
    invalid,
)
from palviz.files import PROFILES

__all__ = ["SCHEMAS", "Parameter", "check_parameters"]


@dataclass(frozen=True)
class Parameter:
    """One parameter of a parameters cell (see the module docstring)."""

    rule: str
    check: Callable[[str, Any], Any]
    examples: tuple = ()
    wrong: Any = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def _optional(check: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    def checked(name: str, value: Any) -> Any:
        return None if value is None else check(name, value)

    return checked


def _profile(name: str, value: Any) -> Any:
    if value is not None and value not in PROFILES:
        raise invalid(name, value, f"None or one of {PROFILES}")
    return value


def _int_at_least(minimum: int) -> Callable[[str, Any], int]:
    return lambda name, value: check_int(name, value, minimum)


def _real_at_least(minimum: float) -> Callable[[str, Any], float]:
    def checked(name: str, value: Any) -> float:
        x = check_real(name, value)
        if x < minimum:
            raise invalid(name, value, f">= {minimum:g}")
        return x

    return checked


def _choices(allowed: Callable[[], tuple], *, min_len: int = 1) -> Callable[[str, Any], tuple]:
    return lambda name, value: check_choices(name, value, allowed(), min_len=min_len)


def _seeds(name: str, value: Any) -> tuple:
    rule = "None or a non-empty tuple of distinct integers >= 0, e.g. (0, 1, 2)"
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
        raise invalid(name, value, rule)
    for s in value:
        check_int(f"{name} item", s, 0)
    if len(set(value)) != len(value):
        raise invalid(name, value, rule)
    return tuple(value)


def _lt_methods() -> tuple:
    from palviz.recipes import LT_METHODS

    return LT_METHODS


def _lt_labels() -> tuple:
    from palviz.methods import methods_of

    return tuple(methods_of("long_tailed"))


def _noisy_methods() -> tuple:
    from palviz.recipes import NOISE_METHODS

    return NOISE_METHODS


def _transition_shown(name: str, value: Any) -> tuple:
    rule = "None or two (kind, eta) pairs, kind 'symmetric' or 'asymmetric', eta in (0, 1)"
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise invalid(name, value, rule)
    for pair in value:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise invalid(name, value, rule)
        kind, eta = pair
        if kind not in ("symmetric", "asymmetric"):
            raise invalid(name, value, rule)
        if not 0 < check_real(f"{name} eta", eta) < 1:
            raise invalid(name, value, rule)
    return tuple(tuple(p) for p in value)


_PROFILE = Parameter('None or "smoke" | "quick" | "full" | "paper"', _profile, (None,), 3)
_TRAIN = {
    "EPOCHS": Parameter("None or an integer >= 1", _optional(_int_at_least(1)), (1, 3), "3"),
    "LR": Parameter("None or a number > 0", _optional(check_positive), (0.01, 0.1), "0.1"),
    "WEIGHT_DECAY": Parameter(
        "None or a number >= 0", _optional(check_non_negative), (0.0, 1e-2), "0"
    ),
    "BATCH_SIZE": Parameter("None or an integer >= 1", _optional(_int_at_least(1)), (16, 256), 1.5),
}
_SEEDS = Parameter(
    "None or a tuple of distinct integers >= 0", _optional(_seeds), ((0,), (1, 2)), 0
)

#: Notebook number -> its parameters (those of 06 and 07; notebooks without an entry accept
#: any parameter).
SCHEMAS: dict[str, dict[str, Parameter]] = {
    "06": {
        "PROFILE": _PROFILE,
        "METHODS": Parameter(
            "None or a tuple of methods of palviz.recipes.LT_METHODS",
            _optional(_choices(_lt_methods)),
            (("CE",), ("CE", "LDAM-DRW", "ELM-DRW")),
            "CE",
        ),
        "PAL_METHODS": Parameter(
            "None or a tuple (may be empty) of methods also trained with PAL",
            _optional(_choices(_lt_methods, min_len=0)),
            ((), ("CE",)),
            "CE",
        ),
        "ORIENTATIONS": Parameter(
            'None or a tuple (may be empty) from ("axis", "block")',
            _optional(lambda n, v: check_choices(n, v, ("axis", "block"), min_len=0)),
            ((), ("axis",)),
            "axis",
        ),
        "SEEDS": _SEEDS,
        **_TRAIN,
        "FIGURE_METHODS": Parameter(
            "a tuple of table labels",
            _choices(_lt_labels),
            (("CE",), ("CE", "LDAM-DRW", "CE+PAL")),
            "CE",
        ),
    },
    "07": {
        "PROFILE": _PROFILE,
        "METHODS": Parameter(
            "None or a tuple of methods of palviz.recipes.NOISE_METHODS",
            _optional(_choices(_noisy_methods)),
            (("CE",), ("CE", "CE+FNPAL", "CE+FNPN")),
            "CE",
        ),
        "SEEDS": _SEEDS,
        **_TRAIN,
        "LR": Parameter(
            "None or a number >= 0.001 (the cosine schedule anneals to 0.001)",
            _optional(_real_at_least(1e-3)),
            (1e-3, 0.05),
            "0.01",
        ),
        "WORKERS": Parameter("None or an integer >= 1", _optional(_int_at_least(1)), (1, 2), 1.0),
        "TRANSITION_SHOWN": Parameter(
            "None or two (kind, eta) pairs with eta among the profile's rates",
            _optional(_transition_shown),
            (None,),
            "symmetric",
        ),
        "INTERACTIVE": Parameter("True or False", check_bool, (False, True), "yes"),
    },
}


def check_parameters(notebook: str, **values: Any) -> dict:
    """Check a notebook's parameters against :data:`SCHEMAS` (a name the schema lacks, or a
    missing one, is an error too); returns the checked values."""
    number = str(notebook)[:2].zfill(2)
    schema = SCHEMAS.get(number)
    if schema is None:
        return dict(values)
    unknown = sorted(set(values) - set(schema))
    if unknown:
        raise ValueError(f"notebook {number} has no parameter {unknown}; it has {list(schema)}")
    missing = sorted(set(schema) - set(values))
    if missing:
        raise ValueError(f"notebook {number}: parameters {missing} were not passed to the check")
    return {name: schema[name].check(name, values[name]) for name in schema}
