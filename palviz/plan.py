"""Which runs each notebook asks the run cache for, without running it: :func:`planned_specs`.

Each function below repeats, with the notebook's default parameters, the cells that build the
specs a notebook passes to ``run_many`` / ``run_grouped``, calling the same public functions of
:mod:`palviz.recipes`, so a plan names exactly the cache keys the notebook will read (a test
executes the notebooks' own cells and compares). Nothing here needs a dataset or a GPU.
Used by ``palviz plan``, ``palviz train`` and ``palviz sweep``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from palviz import recipes
from palviz.files import resolve_profile
from palviz.runcache import RunSpec

__all__ = ["NOTEBOOKS_WITH_RUNS", "plan", "planned_specs"]


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
    grid = {
        "smoke": (2e-4, 5e-3),
        "quick": (2e-4, 5e-3, 2e-2),
        "paper": (0.0, 2e-4, 5e-4, 2e-3, 5e-3),
    }[profile]
    return [
        recipes.lt_spec("CE", imbalance_ratio=100, seed=0, profile=profile, weight_decay=wd)
        for wd in tuple(sorted(grid))
    ]


def _nb06(profile: str) -> list[RunSpec]:
    methods = ("CE", "Focal", "CE-DRW", "LDAM-DRW", "ELM", "ELM-DRW", "LMSCE")
    setup = recipes.long_tailed_setup(profile)
    seeds = {rho: tuple(setup["seeds"]) for rho in setup["ratios"]}
    if 10 in seeds:
        seeds[10] = seeds[10][:1]  # SEEDS_AT_RHO_10 = 1
    return recipes.lt_grid(methods, seeds=seeds, profile=profile)


def _nb07(profile: str) -> list[RunSpec]:
    fnpn_eta = 0.6
    setup = recipes.noisy_setup(profile)
    methods = [m for m in recipes.NOISE_METHODS if m != "CE+FNPN"]
    pairs = ["CE", "CE+FNPAL", "SCE", "SCE+FNPAL", "NCE+RCE", "NCE+RCE+FNPAL"]
    plan = {
        "smoke": dict(asymmetric_methods=pairs, sweep_etas=(fnpn_eta,), scales=(0.3, 3.0)),
        "quick": dict(
            asymmetric_methods=pairs,
            sweep_etas=(0.2, 0.4, 0.6, 0.8),
            scales=(0.3, 1.0, 3.0, 10.0, 30.0),
        ),
        "paper": dict(
            asymmetric_methods=methods,
            sweep_etas=(0.2, 0.4, 0.6, 0.8),
            scales=(0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0),
        ),
    }[profile]
    datasets = list(setup["datasets"])
    sweep_dataset = "cifar10" if profile == "paper" else datasets[0]
    seeds = tuple(setup["seeds"])

    def grid(names, etas, kind, dataset):
        return recipes.noisy_grid(names, etas, kind, seeds=seeds, profile=profile, dataset=dataset)

    def sweep(method, etas):
        return recipes.scale_sweep(
            method, etas, plan["scales"], seeds=seeds, profile=profile, dataset=sweep_dataset
        )

    specs = []
    for d in datasets:
        specs += grid(methods, setup["symmetric"], "symmetric", d)
        specs += grid(plan["asymmetric_methods"], setup["asymmetric"], "asymmetric", d)
    specs += sweep("CE+FNPAL", sorted({*plan["sweep_etas"], fnpn_eta}))
    specs += sweep("CE+FNPN", [fnpn_eta])
    return specs


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
