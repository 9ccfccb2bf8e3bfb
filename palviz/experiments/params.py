"""The parameters cell of every notebook as a contract: :data:`SCHEMAS` says what each
parameter may be, :func:`check_parameters` checks the values up front.

Each notebook's first code cell (tagged ``parameters``, papermill's tag) sets its UPPER_CASE
parameters; the code that follows calls ``check_parameters("02", PROFILE=PROFILE, ...)``
before any work, so that a bad value stops the notebook in its first cells with one message
of the project's form (:mod:`palviz.checks`), naming the parameter as the notebook spells
it: ``K_MAJOR must be an integer in [2, 10], got 1``. A value of the wrong type raises
:class:`~palviz.checks.ArgumentTypeError` (a ``TypeError`` and a ``ValueError``), a value of
the right type outside the range ``ValueError``; so do an unknown name and a missing one.

**A schema entry** is a :class:`Parameter` of literal data (the schemas:
:mod:`palviz.experiments.schemas`):

- ``kind``: ``"profile"``, ``"int"``, ``"real"``, ``"bool"``, ``"labels"`` (a tuple of names
  from ``choices``), ``"ints"`` / ``"reals"`` (a tuple of numbers), ``"noise_pairs"``
  (``(kind, eta)`` pairs whose eta is among the profile's noise rates of that kind),
  ``"noise_rates"`` (a tuple of numbers that keeps at least one of the profile's rates of
  each kind, :func:`palviz.experiments.recipes.select_noise_rates`) or ``"modules"`` (a
  tuple of module names, each imported when checked: ``DATASET_MODULES``, whose modules
  register datasets, :func:`palviz.data.register_dataset`; it comes before ``DATASETS``,
  whose choices are the registered datasets);
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
from typing import Any

from palviz.checks import ArgumentTypeError, invalid
from palviz.experiments.schemas import CHOICES, SCHEMAS, Parameter
from palviz.files import PROFILES, resolve_profile

_NOISE_KINDS = ("symmetric", "asymmetric")


def choices(name: str) -> tuple:
    """The names of :data:`CHOICES` entry ``name`` (imports the registry on first use)."""
    from palviz.experiments import recipes
    from palviz.experiments.methods import ORIENTATIONS, methods_of

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
        return tuple(o for o in ORIENTATIONS if o != "random")
    if name == "datasets":
        from palviz import data as pdata

        pdata.import_dataset_modules()  # those $PALVIZ_DATASET_MODULES names
        return tuple(pdata.DATASETS)
    raise ValueError(f"choices must be one of {tuple(CHOICES)}, got {name!r}")


def _import_modules(name: str, value: Any, modules: tuple, entry: Parameter) -> None:
    """Import each module of a ``"modules"`` entry (it registers its datasets), or fail
    naming the one that cannot be imported and why."""
    from palviz.data import import_dataset_modules

    for module in modules:
        try:
            import_dataset_modules((module,), where=name)
        except ValueError as err:
            why = f"{type(err.__cause__).__name__}: {err.__cause__}"
            raise _fail(name, value, entry, f"{module!r} cannot be imported ({why})") from err


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
    if kind in ("labels", "modules"):
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
    if entry.length is not None and kind != "noise_pairs" and len(items) != entry.length:
        raise _fail(name, value, entry, f"{len(items)} given")
    if kind == "modules":
        _import_modules(name, value, items, entry)
    elif kind == "labels":
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
