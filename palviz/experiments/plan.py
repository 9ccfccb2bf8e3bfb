"""What each notebook trains, declared once: :func:`experiment`.

Every notebook that trains (00, 02, 03, 06, 07, 08) asks :func:`experiment` for its runs,
passing its parameters cell; ``palviz plan``, ``palviz train`` and ``palviz sweep`` call it
with the defaults (:func:`planned_specs`), so a plan names exactly the cache keys the notebooks
will read.
Nothing here needs a dataset or a GPU.

The parameters every training notebook accepts (``None`` keeps the profile's value):

- ``epochs``, ``lr``, ``weight_decay``, ``batch_size``: TrainConfig fields that reach every run
  of the notebook (and so its cache keys); in the long-tailed notebooks a new ``epochs``
  re-scales the LDAM-DRW schedule with it (milestones, DRW, warm-up);
- ``seeds`` (06, 07) or ``seed`` (00, 02, 03, 08);
- ``methods``: the table labels (``"CE"``, ``"LDAM-DRW+PAL"``, ...; 03 sweeps weight decay
  with CE and has ``weight_decays`` instead of ``weight_decay``);
- ``rates`` (07): the noise rates its tables and sweep keep; ``kinds`` (07): the noise
  kinds of its tables;
- ``ratios`` (06): the imbalance ratios of its grid (its replication keeps its own);
- ``datasets`` (06, 07, 08): the datasets trained instead of the profile's, each a registered
  dataset (:func:`palviz.data.register_dataset`) with its network
  (:func:`palviz.experiments.recipes.network_for`); ``palviz plan --datasets`` sets it.

Each experiment returns its runs as named groups, ``{group: [RunSpec, ...]}``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from palviz.checks import (
    invalid,
)
from palviz.experiments import recipes
from palviz.experiments.runspec import RunSpec
from palviz.files import resolve_profile


def train_overrides(
    epochs: Any = None, lr: Any = None, weight_decay: Any = None, batch_size: Any = None
) -> dict:
    """The training fields a parameters cell changes (``None``: unchanged). The values were
    checked by the notebook's parameters check and are checked again by ``TrainConfig``."""
    given = dict(epochs=epochs, lr=lr, weight_decay=weight_decay, batch_size=batch_size)
    return {name: value for name, value in given.items() if value is not None}


def _or(values: Any, default: Sequence) -> tuple:
    """``values`` as a tuple, or ``default`` when ``None``."""
    return tuple(default if values is None else values)


def _label_experiment(group: str, default: tuple[str, ...], doc: str) -> Callable[..., dict]:
    """The experiment of a notebook that trains a few table labels (00, 02, 08): the group
    ``group`` of the labels ``methods`` (default ``default``) on each dataset of ``datasets``
    (default: the profile's first), at one ratio and seed."""

    def declare(profile, *, methods=None, imbalance_ratio=100, seed=0, datasets=None, **train):
        labels, changes = _or(methods, default), train_overrides(**train)
        setup = recipes.long_tailed_setup(profile, datasets)
        chosen = setup["datasets"] if datasets is not None else setup["datasets"][:1]
        specs = [
            recipes.lt_label_spec(
                m, imbalance_ratio=imbalance_ratio, seed=seed, profile=profile, dataset=d, **changes
            )
            for d in chosen
            for m in labels
        ]
        return {group: specs}

    declare.__doc__ = doc
    return declare


_tour = _label_experiment(
    "tour", ("CE", "LDAM-DRW", "CE+PAL"), "00: CE, LDAM-DRW and CE + PAL on the long-tailed set."
)
_heads = _label_experiment(
    "heads",
    ("CE", "CE+PAL"),
    "02: the learned and the anchored head, trained alike (CE and CE + PAL).",
)


def _weight_decay(
    profile: str,
    *,
    weight_decays: Any = None,
    imbalance_ratio: Any = 100,
    seed: Any = 0,
    epochs: Any = None,
    lr: Any = None,
    batch_size: Any = None,
) -> dict[str, list[RunSpec]]:
    """03: CE with each weight decay of ``weight_decays`` (default: the profile's grid)."""
    decays = sorted(_or(weight_decays, recipes.long_tailed_setup(profile)["weight_decays"]))
    train = train_overrides(epochs=epochs, lr=lr, batch_size=batch_size)
    specs = [
        recipes.lt_spec(
            "CE",
            imbalance_ratio=imbalance_ratio,
            seed=seed,
            profile=profile,
            **{**train, "weight_decay": wd},
        )
        for wd in decays
    ]
    return {"weight decay": specs}


def long_tailed_groups(
    profile: str | None = None,
    methods: Iterable[str] | None = None,
    orientations: Iterable[str] | None = None,
    pal_methods: Iterable[str] | None = None,
    *,
    seeds: Any = None,
    ratios: Any = None,
    datasets: Any = None,
    **train: Any,
) -> dict[str, list[RunSpec]]:
    """06: ``"grid"``, every method of ``methods`` without PAL and every method of
    ``pal_methods`` with PAL, at every dataset, ratio and seed of the profile; and for each
    prototype orientation of ``orientations``, CE + PAL with that orientation. Defaults: the
    profile's; given ``methods`` only, ``pal_methods`` defaults to the profile's PAL methods
    among them (and orientations to none unless CE is among them). ``seeds`` and ``ratios``
    replace the profile's in the grid and the orientations, not in the replication (its
    profile's); ``datasets`` replaces the profile's datasets everywhere, in the replication
    too."""
    profile = resolve_profile(profile)
    setup = recipes.long_tailed_setup(profile, datasets)
    if methods is None:
        chosen, default_pal = tuple(setup["methods"]), tuple(setup["pal_methods"])
    else:
        chosen = tuple(methods)
        default_pal = tuple(m for m in setup["pal_methods"] if m in chosen)
    pal = _or(pal_methods, default_pal)
    if orientations is None:
        turned = tuple(setup["orientations"]) if "CE" in pal else ()
    else:
        turned = tuple(orientations)
        if turned and "CE" not in pal:
            raise invalid("orientations", orientations, "empty unless 'CE' is among pal_methods")
    seeds_, ratios_ = _or(seeds, setup["seeds"]), _or(ratios, setup["ratios"])
    changes = train_overrides(**train)
    common = dict(
        profile=profile, seeds=seeds_, ratios=ratios_, datasets=setup["datasets"], **changes
    )
    grid = recipes.lt_grid(chosen, pal=(False,), **common)
    if pal:
        grid += recipes.lt_grid(pal, pal=(True,), **common)
    groups = {"grid": grid}
    for o in turned:
        groups[o] = recipes.lt_grid(("CE",), pal=(True,), orientation=o, **common)
    if setup.get("replication"):
        where = setup["datasets"] if datasets is not None else None
        groups["replication"] = _lt_replication(setup, profile, chosen, pal, changes, where)
    return groups


def _lt_replication(
    setup: dict, profile: str, chosen: tuple, pal: tuple, changes: dict, datasets: Any
) -> list:
    """The runs of a profile's ``replication``: the methods (and PAL methods) of the profile
    it replicates, among those chosen here, at that profile's datasets (or ``datasets``) and
    ratios, on the fresh seeds, at this profile's size."""
    rep = setup["replication"]
    first = recipes.long_tailed_setup(rep["of"], datasets)
    where = dict(profile=profile, seeds=tuple(rep["seeds"]), ratios=first["ratios"], **changes)
    where["datasets"] = first["datasets"]
    methods = tuple(m for m in first["methods"] if m in chosen)
    pal_methods = tuple(m for m in first["pal_methods"] if m in pal and m in methods)
    specs = recipes.lt_grid(methods, pal=(False,), **where) if methods else []
    return specs + (recipes.lt_grid(pal_methods, pal=(True,), **where) if pal_methods else [])


def noisy_groups(
    profile: str | None = None,
    *,
    methods: Any = None,
    seeds: Any = None,
    kinds: Any = None,
    rates: Any = None,
    datasets: Any = None,
    **train: Any,
) -> dict:
    """07, from :func:`palviz.experiments.recipes.noisy_setup`: per dataset the tables
    (``(dataset, "symmetric")``, ``(dataset, "asymmetric")``: their methods, rates and seeds)
    and the headline comparisons (``(dataset, "headline")``: five paired seeds in ``quick``);
    ``"sweep"``, CE+FNPAL at every s of the sweep. ``methods`` replaces the tables' methods;
    the headline keeps the profile's headline methods among them, and the sweep runs only if
    CE+FNPAL is among them. ``seeds`` replaces the tables' and the headline's seeds;
    ``kinds`` keeps the tables of those noise kinds only
    (:func:`palviz.experiments.recipes.select_noise_kinds`; a kind left out has empty
    groups); ``rates`` keeps the tables' and the sweep's noise rates among it
    (:func:`palviz.experiments.recipes.select_noise_rates`); ``datasets`` replaces the
    profile's datasets (the sweep runs on the first unless the profile's sweep dataset is
    among them)."""
    profile = resolve_profile(profile)
    setup = recipes.select_noise_kinds(recipes.noisy_setup(profile, datasets), kinds)
    setup = recipes.select_noise_rates(setup, rates)
    head = setup["headline"]
    if methods is None:
        sym, asym, head_methods = setup["methods"], setup["asymmetric_methods"], head["methods"]
    else:
        sym = asym = chosen = tuple(methods)
        head_methods = tuple(m for m in head["methods"] if m in chosen)
    table_seeds = _or(seeds, setup["seeds"])
    head_seeds = _or(seeds, head["seeds"])
    changes = train_overrides(**train)
    groups: dict = {}
    for d in setup["datasets"]:
        common = dict(seeds=table_seeds, profile=profile, dataset=d, **changes)
        groups[d, "symmetric"] = recipes.noisy_grid(sym, setup["symmetric"], "symmetric", **common)
        groups[d, "asymmetric"] = recipes.noisy_grid(
            asym, setup["asymmetric"], "asymmetric", **common
        )
        groups[d, "headline"] = recipes.noisy_grid(
            head_methods, [head["eta"]], head["kind"], **{**common, "seeds": head_seeds}
        )
        fnpn = [m for m in ("CE+FNPN", "CE+FNPAL") if m in head_methods]
        if setup["fnpn_scales"] and len(fnpn) == 2:  # the same s for both (PAL Fig. 5a)
            groups[d, "fnpn"] = [
                spec
                for m in fnpn
                for spec in recipes.scale_sweep(
                    m, [head["eta"]], setup["fnpn_scales"], head["kind"],
                    **{**common, "seeds": head_seeds},
                )
            ]  # fmt: skip
        if setup.get("replication"):
            groups[d, "replication"] = _noisy_replication(setup, sym, head_methods, common)
    sweep = methods is None or "CE+FNPAL" in methods
    groups["sweep"] = (
        recipes.scale_sweep(
            "CE+FNPAL",
            setup["sweep_etas"],
            setup["scales"],
            seeds=_or(seeds, setup["sweep_seeds"]),
            profile=profile,
            dataset=setup["sweep_dataset"],
            **changes,
        )
        if sweep
        else []
    )
    return groups


def _noisy_replication(setup: dict, sym: tuple, head_methods: tuple, common: dict) -> list:
    """The runs of a noisy profile's ``replication``: the tables' and headline methods of the
    profile it replicates (among those chosen here), at its noise settings, on the fresh
    seeds, at this profile's size."""
    rep = setup["replication"]
    first = recipes.noisy_setup(rep["of"])
    where = {**common, "seeds": tuple(rep["seeds"])}
    specs = []
    for kind in ("symmetric", "asymmetric"):
        table = first["methods"] if kind == "symmetric" else first["asymmetric_methods"]
        specs += recipes.noisy_grid([m for m in table if m in sym], first[kind], kind, **where)
    head = first["headline"]
    chosen = [m for m in head["methods"] if m in head_methods]
    specs += recipes.noisy_grid(chosen, [head["eta"]], head["kind"], **where)
    return list({s.key(): s for s in specs}.values())


_geometry = _label_experiment(
    "geometry",
    ("CE", "LDAM-DRW", "ELM-DRW", "CE+PAL"),
    "08: the feature geometry of a few long-tailed methods.",
)


#: Notebook number -> the function that declares its runs, ``f(profile, **parameters)``.
EXPERIMENTS: dict[str, Callable[..., dict]] = {
    "00": _tour,
    "02": _heads,
    "03": _weight_decay,
    "06": long_tailed_groups,
    "07": noisy_groups,
    "08": _geometry,
}

#: The notebooks that train (kept as a name for ``palviz plan`` and the tests).
NOTEBOOKS_WITH_RUNS = EXPERIMENTS


def _number(notebook: Any) -> str:
    number = str(notebook)[:2].zfill(2)
    return number


def experiment(notebook: str, profile: str | None = None, **parameters: Any) -> dict:
    """The runs of ``notebook`` (``"06"`` or ``"06_long_tailed"``) in ``profile``, as named
    groups of specs, with the notebook's ``parameters`` (see the module docstring); an unknown
    parameter or a bad value raises before any spec is made, naming it."""
    number = _number(notebook)
    if number not in EXPERIMENTS:
        raise ValueError(
            f"notebook must be one that trains, one of {tuple(EXPERIMENTS)}, got {notebook!r}"
        )
    make = EXPERIMENTS[number]
    params = inspect.signature(make).parameters
    accepted = [p for p, v in params.items() if p != "profile" and v.kind is not v.VAR_KEYWORD]
    if any(v.kind is v.VAR_KEYWORD for v in params.values()):
        accepted += [f for f in recipes.TRAIN_OVERRIDES if f not in accepted]
    unknown = sorted(set(parameters) - set(accepted))
    if unknown:
        raise ValueError(f"notebook {number} has no parameter {unknown}; allowed: {accepted}")
    return make(resolve_profile(profile), **parameters)


def experiment_specs(notebook: str, profile: str | None = None, **parameters: Any) -> list:
    """:func:`experiment`'s specs in one list, in group order."""
    groups = experiment(notebook, profile, **parameters)
    return [s for specs in groups.values() for s in specs]


def takes(notebook: str, parameter: str) -> bool:
    """Whether ``notebook``'s parameters cell has ``parameter``: ``DATASETS`` (06, 07, 08) and
    ``METHODS`` (00, 06, 07, 08) are what ``palviz plan --datasets`` / ``--methods`` change."""
    from palviz.parameters import TABLES

    return parameter in TABLES.get(_number(notebook), {})


def planned_specs(
    notebook: str,
    profile: str | None = None,
    datasets: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
) -> list[RunSpec]:
    """The specs notebook ``notebook`` (``"06"`` or ``"06_long_tailed"``) passes to the run
    cache in ``profile`` with its default parameters, in its order (duplicates kept); ``[]``
    for a notebook that trains nothing. ``datasets`` and ``methods`` are its ``DATASETS`` and
    ``METHODS`` parameters (for the notebooks that have them, :func:`takes`; the others keep
    their defaults)."""
    if _number(notebook) not in EXPERIMENTS:
        return []
    given = {"datasets": datasets, "methods": methods}
    chosen = {k: tuple(v) for k, v in given.items() if v is not None and takes(notebook, k.upper())}
    return experiment_specs(notebook, profile, **chosen)


def plan(
    notebooks: Iterable[str],
    profile: str | None = None,
    datasets: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
) -> list[dict]:
    """The distinct runs of these notebooks, in first-asked order: one dict per cache key with
    ``key``, ``spec`` and ``notebooks`` (the numbers that ask for it); ``datasets`` and
    ``methods`` as for :func:`planned_specs`."""
    rows: dict[str, dict] = {}
    for number in notebooks:
        for spec in planned_specs(number, profile, datasets, methods):
            row = rows.setdefault(spec.key(), {"key": spec.key(), "spec": spec, "notebooks": []})
            if number[:2] not in row["notebooks"]:
                row["notebooks"].append(number[:2])
    return list(rows.values())
