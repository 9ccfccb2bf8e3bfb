"""Named recipes and profiles: what a method trains and what each profile trains at what size.

Methods (``"LDAM-DRW"``, ``"CE+PAL"``, ``"CE+FNPAL"``, ...) come from the loss registry
(:mod:`palviz.experiments.methods`); a profile (``smoke``, ``quick``, ``full``, ``paper``) is a row
of literal data in :data:`LONG_TAILED_PROFILES` or :data:`NOISY_PROFILES`
(:mod:`palviz.experiments.profiles`): data, schedule, and the methods it trains, named
(registering a method never changes a profile).
The ``*_setup``, ``*_spec`` and ``*_grid`` functions turn both into
:class:`~palviz.experiments.runspec.RunSpec` objects for the run cache
(:mod:`palviz.experiments.runcache`); given ``datasets`` (a notebook's ``DATASETS``) they train
those instead of the profile's, each registered dataset (:func:`palviz.data.register_dataset`)
with its network (:func:`network_for`) and the profile's schedule. Also how tables name the
datasets and every departure from the reference code
(:data:`~palviz.experiments.departures.DEPARTURES`); the published numbers the tables stand
beside are :mod:`palviz.experiments.published`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from palviz import data as pdata
from palviz.checks import check_choice, check_choices
from palviz.experiments import methods as pmethods
from palviz.experiments.methods import dataset_family
from palviz.experiments.profiles import LONG_TAILED_PROFILES, NOISY_PROFILES
from palviz.experiments.runspec import RunSpec
from palviz.files import resolve_profile
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


def lt_method(name: str, pal: bool = False, orientation: str = "random") -> dict:
    """Loss, head and DRW switch of a long-tailed method, with or without PAL.

    With PAL, CE-family losses use ``AnchoredHead(normalize=False)`` (plain logits on fixed
    prototypes) and LDAM / ELM use ``AnchoredHead(normalize=True, scale=1)`` (cosine logits
    on fixed prototypes; the loss's s = 30 scales them) - docs/reference.md 6. ``orientation``
    places the simplex (:data:`ORIENTATIONS`; only with PAL); a method with another
    orientation than the default is labelled e.g. ``"CE+PAL (axis)"``.
    """
    m = pmethods.method("long_tailed", name + ("+PAL" * bool(pal)))  # checks the name
    check_choice("orientation", orientation, pmethods.ORIENTATIONS)
    head, head_kw = m.head(orientation=orientation)
    return {
        "loss": m.loss,
        "loss_kw": m.base.kwargs(),
        "head": head,
        "head_kw": head_kw,
        "drw": m.drw,
        "mixup_alpha": m.base.mixup_alpha,
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
# Profiles: what each notebook trains at each size (the data: palviz.experiments.profiles)
# --------------------------------------------------------------------------------------

#: The training fields a notebook's parameters cell may change (``EPOCHS``, ``LR``,
#: ``WEIGHT_DECAY``, ``BATCH_SIZE``); they reach every run the notebook trains.
TRAIN_OVERRIDES = ("epochs", "lr", "weight_decay", "batch_size")


def network_for(task: str, dataset: str) -> str:
    """The arch ``task`` (one of :data:`palviz.data.TASKS`) trains on ``dataset`` in every
    profile: the one its registration names or infers from its sample shape
    (:func:`palviz.data.register_dataset`, :meth:`palviz.data.DatasetInfo.network`)."""
    return pdata.dataset_info(dataset).network(task)


def chosen_datasets(datasets: Any, default: Sequence[str]) -> tuple[str, ...]:
    """``datasets`` (``None``: ``default``, the profile's) checked: a tuple of distinct
    registered datasets (:data:`palviz.data.DATASETS`), before any spec is made."""
    if datasets is None:
        return tuple(default)
    return check_choices("datasets", datasets, pdata.DATASETS)


def _recipe(task: str, row: Mapping[str, Any], dataset: str) -> dict:
    """The network and (unexpanded) schedule a profile's ``row`` trains ``dataset`` with."""
    train = row.get("train_by_dataset", {}).get(dataset, row["train"])
    return {"arch": network_for(task, dataset), "train": copy.deepcopy(train)}


def expand_schedule(train: Mapping[str, Any]) -> dict:
    """The TrainConfig fields of a profile's ``train`` entry. ``shape="ldam-drw"``: LDAM-DRW's
    schedule scaled to ``epochs``: linear warm-up (5 of 200 epochs, none below 10 epochs), DRW
    and lr x0.01 at 80 % (160 of 200), x0.0001 at 90 % (180 of 200), SGD momentum 0.9; the
    entry's other keys (and explicit ``milestones``, ``drw_epoch``, ...) are kept as given.
    Without ``shape`` the entry is returned as it is."""
    train = dict(train)
    shape = train.pop("shape", None)
    if shape is None:
        return train
    if shape != "ldam-drw":
        raise ValueError(f"train shape must be 'ldam-drw' or absent, got {shape!r}")
    epochs = train["epochs"]  # checked where it entered (a profile, a parameters cell)
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
    }
    return {**shaped, **train}


def _setup(table: Mapping[str, dict], profile: str | None) -> dict:
    return copy.deepcopy(table[resolve_profile(profile)])


def long_tailed_setup(profile: str | None = None, datasets: Any = None) -> dict:
    """The row of :data:`LONG_TAILED_PROFILES` for ``profile`` (default: ``$PALVIZ_PROFILE``),
    a copy, with ``train`` expanded to TrainConfig fields (:func:`expand_schedule`) and the
    unexpanded entry as ``train_recipe``; ``datasets`` replaces the profile's
    (:func:`chosen_datasets`), and ``networks`` maps each to its arch (:func:`network_for`)."""
    setup = _setup(LONG_TAILED_PROFILES, profile)
    setup["datasets"] = chosen_datasets(datasets, setup["datasets"])
    setup["networks"] = {d: network_for("long_tailed", d) for d in setup["datasets"]}
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
    setup = _setup(LONG_TAILED_PROFILES, profile)
    recipe = lt_method(method, pal, orientation)
    dataset = chosen_datasets(dataset and (dataset,), setup["datasets"])[0]
    info = pdata.dataset_info(dataset)
    network = _recipe("long_tailed", setup, dataset)
    reshape, others = _split_changes(train_changes)
    schedule = expand_schedule({**network["train"], **reshape})
    if not recipe["drw"]:
        schedule["drw_epoch"] = None
    if recipe["mixup_alpha"]:  # a method trained with mixup (ETF+DR+mixup)
        schedule["mixup_alpha"] = recipe["mixup_alpha"]
    schedule.update(others)
    config = TrainConfig(seed=seed, mean=info.mean, std=info.std, progress=False, **schedule)
    return RunSpec(
        dataset=dataset,
        arch=network["arch"],
        loss=recipe["loss"],
        loss_kw=recipe["loss_kw"],
        head=recipe["head"],
        head_kw=recipe["head_kw"],
        imbalance_ratio=float(imbalance_ratio),
        train_size=setup.get("train_size"),
        held_out=setup["held_out"],
        seed=seed,
        train=config,
        label=recipe["label"],
    )


def noisy_setup(profile: str | None = None, datasets: Any = None) -> dict:
    """The row of :data:`NOISY_PROFILES` for ``profile`` (default: ``$PALVIZ_PROFILE``), a
    copy, with ``datasets`` as a dict: each dataset the profile trains (or of ``datasets``,
    :func:`chosen_datasets`) -> its ``arch`` and ``train`` schedule. The s-sweep runs on the
    profile's ``sweep_dataset`` if it is among them, else on the first."""
    setup = _setup(NOISY_PROFILES, profile)
    chosen = chosen_datasets(datasets, setup["datasets"])
    setup["datasets"] = {d: _recipe("noisy", setup, d) for d in chosen}
    if setup["sweep_dataset"] not in chosen:
        setup["sweep_dataset"] = chosen[0]
    return setup


#: The kinds of synthetic label noise (:func:`palviz.data.add_label_noise`), in table order.
NOISE_KINDS = ("symmetric", "asymmetric")


def select_noise_kinds(setup: dict, kinds: Any) -> dict:
    """``setup`` (a row of :data:`NOISY_PROFILES`) with no rate left for the noise kinds not
    among ``kinds`` (``None``: every kind), so that its tables train those kinds only; the
    headline, the s-sweep and a replication keep their settings. ``kinds`` was checked where
    it entered (notebook 07's ``NOISE_KINDS``)."""
    if kinds is None:
        return setup
    return {**setup, **{k: () for k in NOISE_KINDS if k not in kinds}}


def noise_rates_problem(setup: dict, rates: Iterable[float]) -> str | None:
    """What is wrong with keeping only ``rates`` of ``setup`` (a row of
    :data:`NOISY_PROFILES`): a kind with rates left without one, in words; ``None`` when each
    such kind keeps at least one."""
    lost = [k for k in NOISE_KINDS if setup[k] and not set(setup[k]) & set(rates)]
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
    setup = noisy_setup(profile, dataset and (dataset,))
    dataset = next(iter(setup["datasets"]))
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
# Dataset names and the long-tailed grid
# --------------------------------------------------------------------------------------

#: How tables and captions name the datasets: the registry's titles
#: (:data:`palviz.data.DATASET_TITLES`, a live view: a dataset registered later is in it).
DATASET_NAMES = pdata.DATASET_TITLES


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
    ratios = tuple(setup["ratios"] if ratios is None else ratios)
    datasets = tuple(setup["datasets"] if datasets is None else datasets)
    specs = []
    for dataset in datasets:
        for rho in ratios:
            if isinstance(seeds, dict):
                rho_seeds = tuple(seeds.get(rho, setup["seeds"]))
            else:
                rho_seeds = tuple(setup["seeds"] if seeds is None else seeds)
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
