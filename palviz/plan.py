"""Which runs each notebook asks the run cache for, without running it: :func:`planned_specs`.

Notebooks 06 and 07 ask for :func:`long_tailed_groups` and :func:`noisy_groups` themselves;
for the others each function below repeats, with the notebook's default parameters, the cell
that builds the specs it passes to ``run_many``, calling the same public functions of
:mod:`palviz.recipes`, so a plan names exactly the cache keys the notebook will read (a test
executes the notebooks' own cells and compares). Nothing here needs a dataset or a GPU.
Used by ``palviz plan``, ``palviz train`` and ``palviz sweep``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from palviz import recipes
from palviz.files import resolve_profile
from palviz.runcache import RunSpec

__all__ = [
    "NOTEBOOKS_WITH_RUNS",
    "long_tailed_groups",
    "noisy_groups",
    "plan",
    "planned_specs",
]


def _nb00(profile: str) -> list[RunSpec]:
    methods = [("CE", False), ("LDAM-DRW", False), ("CE", True)]
    return [
        recipes.lt_spec(m, pal=pal, imbalance_ratio=100, seed=0, profile=profile)
        for m, pal in methods
    ]


def _nb02(profile: str) -> list[RunSpec]:
    return [
        recipes.lt_spec("CE", imbalance_ratio=100, seed=0, profile=profile),
        recipes.lt_spec("CE", pal=True, imbalance_ratio=100, seed=0, profile=profile),
    ]


def _nb03(profile: str) -> list[RunSpec]:
    decays = recipes.long_tailed_setup(profile)["weight_decays"]
    return [
        recipes.lt_spec("CE", imbalance_ratio=100, seed=0, profile=profile, weight_decay=wd)
        for wd in tuple(sorted(decays))
    ]


def long_tailed_groups(
    profile: str | None = None,
    methods: Iterable[str] | None = None,
    orientations: Iterable[str] | None = None,
    pal_methods: Iterable[str] | None = None,
) -> dict[str, list[RunSpec]]:
    """What notebook 06 trains: ``"grid"``, every method of ``methods`` without PAL and every
    method of ``pal_methods`` with PAL, at every ratio and seed of
    :func:`palviz.recipes.long_tailed_setup`; and for each prototype orientation of
    ``orientations``, CE + PAL with that orientation (each default: the profile's)."""
    setup = recipes.long_tailed_setup(profile)
    methods = tuple(setup["methods"] if methods is None else methods)
    pal_methods = tuple(setup["pal_methods"] if pal_methods is None else pal_methods)
    orientations = tuple(setup["orientations"] if orientations is None else orientations)
    grid = recipes.lt_grid(methods, pal=(False,), profile=profile)
    groups = {"grid": grid + recipes.lt_grid(pal_methods, pal=(True,), profile=profile)}
    for o in orientations:
        groups[o] = recipes.lt_grid(("CE",), pal=(True,), orientation=o, profile=profile)
    return groups


def noisy_groups(profile: str | None = None) -> dict:
    """What notebook 07 trains, from :func:`palviz.recipes.noisy_setup`: per dataset the
    tables (``(dataset, "symmetric")``, ``(dataset, "asymmetric")``: their methods, rates and
    seeds) and the headline comparisons (``(dataset, "headline")``: five paired seeds in
    ``quick``); ``"sweep"``, CE+FNPAL at every s of the sweep."""
    setup = recipes.noisy_setup(profile)
    head = setup["headline"]
    groups: dict = {}
    for d in setup["datasets"]:
        common = dict(seeds=setup["seeds"], profile=profile, dataset=d)
        groups[d, "symmetric"] = recipes.noisy_grid(
            setup["methods"], setup["symmetric"], "symmetric", **common
        )
        groups[d, "asymmetric"] = recipes.noisy_grid(
            setup["asymmetric_methods"], setup["asymmetric"], "asymmetric", **common
        )
        groups[d, "headline"] = recipes.noisy_grid(
            head["methods"], [head["eta"]], head["kind"], **{**common, "seeds": head["seeds"]}
        )
    groups["sweep"] = recipes.scale_sweep(
        "CE+FNPAL",
        setup["sweep_etas"],
        setup["scales"],
        seeds=setup["seeds"],
        profile=profile,
        dataset=setup["sweep_dataset"],
    )
    return groups


def _nb06(profile: str) -> list[RunSpec]:
    return [s for specs in long_tailed_groups(profile).values() for s in specs]


def _nb07(profile: str) -> list[RunSpec]:
    return [s for specs in noisy_groups(profile).values() for s in specs]


def _nb08(profile: str) -> list[RunSpec]:
    methods = ("CE", "LDAM-DRW", "ELM-DRW", "CE+PAL")
    return [recipes.lt_label_spec(m, imbalance_ratio=100, seed=0, profile=profile) for m in methods]


#: Notebook number -> the function that lists its runs.
NOTEBOOKS_WITH_RUNS: dict[str, Callable[[str], list[RunSpec]]] = {
    "00": _nb00,
    "02": _nb02,
    "03": _nb03,
    "06": _nb06,
    "07": _nb07,
    "08": _nb08,
}


def planned_specs(notebook: str, profile: str | None = None) -> list[RunSpec]:
    """The specs notebook ``notebook`` (``"06"`` or ``"06_long_tailed"``) passes to the run
    cache in ``profile``, in its order (duplicates kept); ``[]`` for a notebook that trains
    nothing."""
    number = str(notebook)[:2].zfill(2)
    make = NOTEBOOKS_WITH_RUNS.get(number)
    return [] if make is None else make(resolve_profile(profile))


def plan(notebooks: Iterable[str], profile: str | None = None) -> list[dict]:
    """The distinct runs of these notebooks, in first-asked order: one dict per cache key with
    ``key``, ``spec`` and ``notebooks`` (the numbers that ask for it)."""
    rows: dict[str, dict] = {}
    for number in notebooks:
        for spec in planned_specs(number, profile):
            row = rows.setdefault(spec.key(), {"key": spec.key(), "spec": spec, "notebooks": []})
            if number[:2] not in row["notebooks"]:
                row["notebooks"].append(number[:2])
    return list(rows.values())
