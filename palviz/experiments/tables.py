"""Result tables: every finished run as one row of a pandas frame, and the tables, captions
and geometry the notebooks print from it.

:func:`results_frame` is the one place that reads a run's metrics into columns; the tables
(:func:`lt_table`, :func:`noisy_accuracy_table`, ...) are group-bys of that frame (mean and
standard deviation over seeds, :func:`_over_seeds`), and the markdown is written by
``DataFrame.to_markdown``. Every accuracy a table prints is formatted by one function,
:func:`palviz.plots.format_accuracy`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from palviz import collapse
from palviz import metrics as pmetrics
from palviz.data import asymmetric_map, flip_count
from palviz.experiments.published import (
    PUBLISHED,
    SOURCES,
    Published,
    published_for,
    published_text,
)
from palviz.experiments.recipes import DATASET_NAMES
from palviz.experiments.runcache import RunResult
from palviz.files import resolve_profile
from palviz.plots import format_accuracy

_GROUPS = pmetrics.SHOT_GROUPS

#: Per-class lists of ``metrics.json`` and the prefix of their columns in
#: :func:`results_frame` (``acc_class_0``, ``acc_class_1``, ...).
PER_CLASS_COLUMNS = {
    "per_class_acc": "acc_class",
    "feature_norms": "feature_norm_class",
    "weight_norms": "weight_norm_class",
    "confidence": "confidence_class",
}

_PER_CLASS_PREFIXES = tuple(PER_CLASS_COLUMNS.values())

#: Integer columns of :func:`results_frame` that a run may lack (pandas' nullable ``Int64``).
_INT_COLUMNS = ("steps", "train_size", "test_size", "num_classes", "best_epoch")


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _run_row(result: RunResult) -> dict[str, Any]:
    spec, m = result.spec, result.metrics
    sizes = m.get("profile_sizes", {})
    counts = m.get("train_counts")
    per_class = m.get("per_class_acc")
    num_classes = len(counts) if counts is not None else (len(per_class) if per_class else None)
    steps = None
    if "train" in sizes:
        steps = spec.train.epochs * math.ceil(sizes["train"] / spec.train.batch_size)
    groups = m.get("shot_groups") or {}
    row = {
        "key": spec.key(),
        "label": result.label,
        "method": result.label.split(" s=")[0],
        "dataset": spec.dataset,
        "arch": spec.arch,
        "loss": spec.loss,
        "head": spec.head,
        "scale": _number(spec.head_kw.get("scale")),
        "imbalance_ratio": float(spec.imbalance_ratio),
        "noise_kind": spec.noise_kind,
        "noise_rate": float(spec.noise_rate),
        "seed": int(spec.seed),
        "epochs": int(spec.train.epochs),
        "steps": steps,
        "train_size": sizes.get("train"),
        "test_size": sizes.get("test"),
        "num_classes": num_classes,
        "train_counts": counts,
        "last_acc": _number(m.get("last_acc")),
        "best_acc": _number(m.get("best_acc")),
        "best_epoch": None if m.get("best_epoch") is None else m["best_epoch"] + 1,
        **{g: _number(groups.get(g)) for g in _GROUPS},
        "min_prototype_angle": _number(m.get("min_prototype_angle")),
        "realised_noise_rate": _number(m.get("realised_noise_rate")),
        "seconds": _number(m.get("seconds")),
    }
    for key, prefix in PER_CLASS_COLUMNS.items():
        for c, value in enumerate(m.get(key) or []):
            row[f"{prefix}_{c}"] = _number(value)
    return row


def results_frame(results: Iterable[RunResult]) -> pd.DataFrame:
    """One tidy row per run, in the order of ``results``:

    - what ran: ``key`` (the cache key), ``label`` (display name), ``method`` (the label
      without a scale sweep's ``" s=<s>"``), ``dataset``, ``arch``, ``loss``, ``head``,
      ``scale`` (the head's s, NaN for a linear head), ``imbalance_ratio``, ``noise_kind``,
      ``noise_rate``, ``seed``, ``epochs``, ``steps`` (optimiser steps: epochs x batches per
      epoch), ``train_size``, ``test_size``, ``num_classes``, ``train_counts`` (a list);
    - what it measured: ``last_acc``, ``best_acc`` (overall test accuracy after the last and at
      the best epoch), ``best_epoch`` (1-based), ``many``, ``medium``, ``few`` (shot-group
      accuracy after the last epoch, NaN for a group without a class), ``min_prototype_angle``
      (degrees), ``realised_noise_rate``, ``seconds``;
    - one column per class for each per-class list of the metrics
      (:data:`PER_CLASS_COLUMNS`): ``acc_class_<c>``, ``feature_norm_class_<c>``,
      ``weight_norm_class_<c>``, ``confidence_class_<c>``; NaN for a class without test samples
      and beyond a run's ``num_classes``.

    A number a run's metrics do not hold is NaN (``<NA>`` in the integer columns)."""
    rows = [_run_row(r) for r in results]
    columns = [c for c in rows[0] if not c.startswith(_PER_CLASS_PREFIXES)] if rows else []
    for prefix in _PER_CLASS_PREFIXES:
        width = max((sum(k.startswith(prefix + "_") for k in row) for row in rows), default=0)
        columns += [f"{prefix}_{c}" for c in range(width)]
    frame = pd.DataFrame(rows, columns=columns)
    for column in _INT_COLUMNS:
        if column in frame:
            frame[column] = frame[column].astype("Int64")
    return frame


def _over_seeds(frame: pd.DataFrame, by: Sequence[str], columns: Sequence[str]) -> pd.DataFrame:
    """Mean, standard deviation (``ddof=1``; NaN for one seed) and count of ``columns`` over
    the rows of each group of ``by``, groups in order of first appearance; NaN values (an
    empty shot group) are left out of all three. Columns ``(column, "mean" | "std" | "count")``."""
    return frame.groupby(list(by), sort=False)[list(columns)].agg(["mean", "std", "count"])


def select_runs(
    results: Iterable[RunResult],
    *,
    dataset: str | None = None,
    imbalance_ratio: float | None = None,
    labels: Sequence[str] | None = None,
    seed: int | None = None,
) -> list[RunResult]:
    """The results that match every given criterion; with ``labels``, in the order of
    ``labels`` (then by seed), else in their own order."""
    results = list(results)
    frame = results_frame(results)
    if frame.empty:
        return []
    keep = pd.Series(True, index=frame.index)
    for column, wanted in (("dataset", dataset), ("imbalance_ratio", imbalance_ratio)):
        if wanted is not None:
            keep &= frame[column] == wanted
    if seed is not None:
        keep &= frame["seed"] == seed
    picked = frame[keep]
    if labels is not None:
        order = list(labels)
        picked = picked[picked["label"].isin(order)]
        picked = picked.assign(_order=picked["label"].map(order.index))
        picked = picked.sort_values(["_order", "seed"], kind="stable")
    return [results[i] for i in picked.index]


def history_series(result: RunResult, key: str) -> tuple[np.ndarray, np.ndarray]:
    """``(epochs, values)`` of ``key`` over the epochs whose history row has it (1-based
    epochs, so the last of E epochs is E), e.g. ``"test_acc"`` or ``"min_prototype_angle"``."""
    rows = [r for r in result.metrics["history"] if key in r]
    if not rows:
        raise ValueError(f"no history row of {result.label!r} has {key!r}")
    epochs = np.array([r["epoch"] + 1 for r in rows])
    return epochs, np.array([r[key] for r in rows], dtype=float)


def lt_table(results: Sequence[RunResult]) -> list[dict]:
    """One row per (dataset, imbalance ratio, method label), in order of first appearance,
    with mean and standard deviation over its seeds:

    ``dataset``, ``imbalance_ratio``, ``method``, ``seeds``, ``arch``, ``epochs``,
    ``train_counts``, ``test_size``; ``last`` and ``best`` (overall test accuracy after the
    last epoch and at the best test epoch, as ``(mean, std)``); ``many``, ``medium``, ``few``
    (shot-group accuracy after the last epoch, ``(mean, std)`` or ``None`` for a group with
    no class); ``best_epochs`` (1-based, one per seed); ``published`` (the published numbers of
    the same data set, ratio and method, :func:`~palviz.experiments.published.published_for`,
    possibly none). Std is NaN for a single seed.
    """
    frame = results_frame(results)
    if frame.empty:
        return []
    by = ["dataset", "imbalance_ratio", "label"]
    stats = _over_seeds(frame, by, ["last_acc", "best_acc", *_GROUPS])
    rows = []
    for (dataset, rho, label), runs in frame.groupby(by, sort=False):
        seeds = runs["seed"].tolist()
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"results hold a seed twice for {label} at rho = {rho}: {seeds}")
        cell = stats.loc[(dataset, rho, label)]
        what = f"{label} on {dataset} at rho = {rho:g}"
        first = runs.iloc[0]
        rows.append(
            {
                "dataset": dataset,
                "imbalance_ratio": rho,
                "method": label,
                "seeds": seeds,
                "arch": first["arch"],
                "epochs": int(first["epochs"]),
                "train_counts": first["train_counts"],
                "test_size": None if pd.isna(first["test_size"]) else int(first["test_size"]),
                "last": _mean_std(cell, "last_acc", len(runs), what),
                "best": _mean_std(cell, "best_acc", len(runs), what),
                "best_epochs": [None if pd.isna(e) else int(e) for e in runs["best_epoch"]],
                **{g: _mean_std(cell, g, len(runs), what) for g in _GROUPS},
                "published": published_for(dataset, label, imbalance_ratio=rho),
            }
        )
    return rows


def _mean_std(cell: pd.Series, column: str, runs: int, what: str) -> tuple[float, float] | None:
    """``(mean, std)`` of ``column`` in a row of :func:`_over_seeds`; ``None`` when no seed has
    a value (an empty shot group)."""
    n = cell[column, "count"]
    if n == 0:
        return None
    if n != runs:
        raise ValueError(f"{what}: some seeds have a {column} and some have none")
    return float(cell[column, "mean"]), float(cell[column, "std"])


def _percent(value: tuple[float, float] | None) -> str:
    """A ``(mean, std)`` of :func:`lt_table` (or ``None``) as :func:`format_accuracy` text."""
    return format_accuracy(*(value or (None,)))


def _seed_text(seeds: Iterable[int]) -> str:
    seeds = sorted(set(seeds))
    n = len(seeds)
    return f"seed{'s' if n > 1 else ''} {', '.join(map(str, seeds))}" + (
        f" (mean ± std over {n})" if n > 1 else " (one run, no spread)"
    )


def _sizes_text(runs: pd.DataFrame) -> str:
    """Sizes and seeds of the runs (frame rows) on one data set at one ratio."""
    first = runs.iloc[0]
    counts = first["train_counts"]
    return (
        f"{first['train_size']:,} training samples ({counts[0]:,} ... {counts[-1]:,} per class), "
        f"{first['test_size']:,} test samples (the whole test split), "
        + _seed_text(runs["seed"].tolist())
    )


def _setup_text(runs: pd.DataFrame, profile: str | None) -> str:
    archs = sorted(set(runs["arch"]))
    epochs = sorted(set(runs["epochs"].tolist()))
    return f"{', '.join(archs)}, {', '.join(map(str, epochs))} epochs, profile {profile}."


def _lt_name(dataset: str, rho: float) -> str:
    return f"{DATASET_NAMES.get(dataset, dataset)}-LT, rho = {rho:g}"


def _by_dataset_and_ratio(frame: pd.DataFrame):
    return frame.groupby(["dataset", "imbalance_ratio"], sort=False)


def lt_caption(results: Sequence[RunResult], profile: str | None = None) -> str:
    """One line that says what ``results`` measured: data set, imbalance ratio(s), training
    and test sizes, seeds, network, epochs and profile (printed beside every table and figure)."""
    if not results:
        raise ValueError("results must not be empty")
    frame = results_frame(results)
    parts = [f"{_lt_name(*key)}: {_sizes_text(runs)}" for key, runs in _by_dataset_and_ratio(frame)]
    return "; ".join(parts) + ". " + _setup_text(frame, resolve_profile(profile))


def _markdown(frame: pd.DataFrame, *, index: bool = True) -> str:
    """``frame`` (cells already text) as a markdown table: names (the index, ``method``,
    ``data set``) left-aligned, numbers right-aligned, no cell re-parsed as a number."""
    names = ([frame.index.name] if index else []) + list(frame.columns)
    align = ["left" if name in ("method", "data set") else "right" for name in names]
    return frame.to_markdown(index=index, disable_numparse=True, colalign=align)


def _lt_frames(results: Sequence[RunResult], profile: str | None) -> list[tuple[str, pd.DataFrame]]:
    """One ``(caption, frame)`` per data set and imbalance ratio of :func:`lt_table`: the
    frame's accuracy cells are ``(mean, std)`` or ``None`` (formatted by the caller), the
    ``published`` cells text (:func:`~palviz.experiments.published.published_text`)."""
    frame = results_frame(results)
    rows = lt_table(results)
    out = []
    for (dataset, rho), runs in _by_dataset_and_ratio(frame):
        block = [r for r in rows if r["dataset"] == dataset and r["imbalance_ratio"] == rho]
        groups = pmetrics.shot_groups(block[0]["train_counts"])
        table = pd.DataFrame({"method": [r["method"] for r in block]})
        table["overall, last epoch"] = [r["last"] for r in block]
        table["overall, best epoch"] = [r["best"] for r in block]
        if any(r["published"] for r in block):
            table[_PUBLISHED] = [published_text(r["published"]) for r in block]
        for g in _GROUPS:
            table[f"{g}-shot, last ({len(groups[g])} cl.)"] = [r[g] for r in block]
        table["seeds"] = [", ".join(map(str, r["seeds"])) for r in block]
        caption = f"**{_lt_name(dataset, rho)}**: {_sizes_text(runs)}. " + _setup_text(
            runs, resolve_profile(profile)
        )
        out.append((caption, table))
    return out


#: The column of :func:`_lt_frames` that lists the published numbers beside the measured ones.
_PUBLISHED = "published (source)"


def _lt_text(table: pd.DataFrame) -> pd.DataFrame:
    text = table.copy()
    for column in text.columns.drop(["method", "seeds", _PUBLISHED], errors="ignore"):
        text[column] = [_percent(v) for v in text[column]]
    return text


def lt_table_markdown(results: Sequence[RunResult], profile: str | None = None) -> str:
    """Markdown tables of :func:`lt_table` (accuracy in %, :func:`~palviz.plots.format_accuracy`),
    one per data set and imbalance ratio, each under a caption (:func:`lt_caption`) and with
    the shot groups' class counts in the header. A "published (source)" column appears beside
    the best-epoch column when a source of :mod:`palviz.experiments.published` has a number
    for one of the rows (each number with its source's name, ``-`` for none)."""
    blocks = [
        caption + "\n\n" + _markdown(_lt_text(table), index=False)
        for caption, table in _lt_frames(results, profile)
    ]
    return "\n\n".join(blocks) + "\n"


#: The cell padding of every styled accuracy table, so that neighbouring cells do not run together.
CELL_PADDING = [{"selector": "th, td", "props": "padding: 0.25em 0.75em;"}]


def style_lt_tables(results: Sequence[RunResult], profile: str | None = None) -> list:
    """The tables of :func:`lt_table_markdown` as styled DataFrames for a notebook, one per
    data set and imbalance ratio, the same cells (``df.style.format``) under the same
    captions."""
    styled = []
    for caption, table in _lt_frames(results, profile):
        accuracy = table.columns.drop(["method", "seeds", _PUBLISHED], errors="ignore")
        style = table.style.format(_percent, subset=list(accuracy)).hide(axis="index")
        styled.append(style.set_caption(caption.replace("**", "")).set_table_styles(CELL_PADDING))
    return styled


def _published_blocks(
    records: Sequence[Published], setting: Callable[[Published], str], *, by_dataset: bool = False
) -> str:
    """``records`` as markdown, one table per source (and data set, ``by_dataset``) under a
    line naming the source and what it reports: a row per method, a column per ``setting(r)``
    (and column of the source)."""
    blocks = []
    for source in SOURCES.values():
        mine = [r for r in records if r.source == source.name]
        parts = dict.fromkeys(r.dataset for r in mine) if by_dataset else {None: None}
        for dataset in parts:
            cells: dict[str, dict[str, str]] = {}
            for r in mine:
                if dataset is None or r.dataset == dataset:
                    column = f"{setting(r)}, {r.column}" if r.column else setting(r)
                    cells.setdefault(r.method, {})[column] = r.text
            if not cells:
                continue
            frame = pd.DataFrame.from_dict(cells, orient="index").fillna("-")
            frame.index.name = "method"
            on = f", {DATASET_NAMES.get(dataset, dataset)}" if dataset else ""
            blocks.append(
                f"**{source.name}{on}**: {source.citation}, {source.where}. Top-1 "
                f"{source.reports} in the source, shown as accuracy (%); epoch: "
                f"{source.selection}; {source.spread}; set-up: {source.setup}.\n\n"
                + _markdown(frame)
            )
    return "\n\n".join(blocks) + "\n" if blocks else ""


def published_lt_markdown() -> str:
    """Every long-tailed number of :data:`~palviz.experiments.published.PUBLISHED` as
    markdown, one table per source: a row per method, a column per data set and ratio."""
    records = [r for r in PUBLISHED if r.imbalance_ratio is not None]
    records.sort(key=lambda r: (r.dataset, -r.imbalance_ratio))  # CIFAR-10 first, rho 100 first
    return _published_blocks(records, lambda r: _lt_name(r.dataset, r.imbalance_ratio))


def published_noisy_markdown(datasets: Iterable[str] | None = None) -> str:
    """The noisy-label numbers of :data:`~palviz.experiments.published.PUBLISHED` (on
    ``datasets``, default all) as markdown, one table per source and data set: a row per
    method, a column per noise kind and rate (``sym 0.4``, as in :func:`format_noisy_table`);
    ``""`` when no source has a number on them."""
    wanted = None if datasets is None else set(datasets)
    records = [r for r in PUBLISHED if r.noise_kind and (wanted is None or r.dataset in wanted)]
    kinds = {"symmetric": "sym", "asymmetric": "asym"}
    return _published_blocks(
        records, lambda r: f"{kinds[r.noise_kind]} {r.noise_rate:g}", by_dataset=True
    )


def noisy_accuracy_table(
    results: Sequence[RunResult], key: str | Callable[[dict], float] = "last_acc"
) -> dict[str, dict[tuple[str, float], tuple[float, float, int]]]:
    """``metrics[key]`` (or ``key(metrics)`` for a callable) of noisy runs as a table:
    ``{label: {(kind, eta): (mean, std, n)}}`` over seeds, rows and columns in order of first
    appearance; std is NaN for one seed. (A dict rather than a frame: the shape
    :func:`format_noisy_table` and :func:`style_noisy_table` print; the figures draw the frame
    of :func:`results_frame` itself.)"""
    frame = results_frame(results)
    if frame.empty:
        return {}
    if callable(key) or key not in frame:
        value = key if callable(key) else (lambda metrics: metrics[key])
        frame["value"] = [_number(value(r.metrics)) for r in results]
    else:
        frame["value"] = frame[key]
    stats = _over_seeds(frame, ["label", "noise_kind", "noise_rate"], ["value"])["value"]
    table: dict[str, dict[tuple[str, float], tuple[float, float, int]]] = {}
    for (label, kind, eta), cell in stats.iterrows():
        table.setdefault(label, {})[kind, float(eta)] = (
            float(cell["mean"]),
            float(cell["std"]),
            int(cell["count"]),
        )
    return table


def format_noisy_table(
    table: dict[str, dict[tuple[str, float], tuple[float, float, int]]],
    *,
    title: str = "",
    mark_best: bool = True,
) -> str:
    """:func:`noisy_accuracy_table` as a markdown table in percent (under ``title``): one row
    per method, one column per (kind, eta), ``mean ± std`` where several seeds ran
    (:func:`~palviz.plots.format_accuracy`), ``-`` where a method did not run; with
    ``mark_best`` the highest mean of each column is marked ``*`` (a reading aid, not a
    ranking: differences within a seed's spread mean nothing)."""
    columns: list[tuple[str, float]] = []
    for row in table.values():
        columns += [c for c in row if c not in columns]
    best = {c: max(row[c][0] for row in table.values() if c in row) for c in columns}
    kinds = {"symmetric": "sym", "asymmetric": "asym"}

    def cell(row: dict, c: tuple[str, float]) -> str:
        if c not in row:
            return "-"
        mean, std, _ = row[c]
        return format_accuracy(mean, std) + ("*" if mark_best and mean == best[c] else "")

    frame = pd.DataFrame(
        [[cell(row, c) for c in columns] for row in table.values()],
        index=pd.Index(list(table), name="method"),
        columns=[f"{kinds.get(k, k)} {eta:g}" for k, eta in columns],
    )
    return (f"{title}\n" if title else "") + _markdown(frame)


def class_mean_features(
    features: np.ndarray, targets: np.ndarray, num_classes: int, *, centred: bool = False
) -> np.ndarray:
    r"""Class means of features, $\mu_c = \frac{1}{n_c}\sum_{i: y_i = c} z_i$: `[num_classes, d]`
    (:func:`palviz.collapse.class_means`, NaN rows for a class without samples). With
    ``centred``, minus their mean $\bar\mu = \frac1k \sum_c \mu_c$ (the global mean on a
    balanced set): the centred class means of neural-collapse studies (Papyan et al. 2020),
    whose ideal is the simplex."""
    means = collapse.class_means(features, targets, num_classes, missing="nan")
    return means - np.nanmean(means, axis=0) if centred else means


def feature_geometry(result: RunResult) -> dict[str, Any]:
    """The geometry of a finished run, from its test features and its head's prototypes:

    ``prototype_cosines`` `[k, k]` and ``min_prototype_angle`` (degrees) of the classifier
    vectors; ``class_mean_cosines`` `[k, k]` and ``min_class_mean_angle`` of the *centred*
    class means of the test features (:func:`class_mean_features`); ``feature_norms`` and
    ``weight_norms`` `[k]`; ``train_counts``."""
    arrays = result.features()
    k = arrays["prototypes"].shape[0]
    means = class_mean_features(arrays["features"], arrays["targets"], k, centred=True)
    return {
        "prototype_cosines": pmetrics.prototype_cosines(arrays["prototypes"]),
        "min_prototype_angle": pmetrics.min_prototype_angle(arrays["prototypes"]),
        "class_mean_cosines": pmetrics.prototype_cosines(means),
        "min_class_mean_angle": pmetrics.min_prototype_angle(means),
        "feature_norms": pmetrics.feature_norms_per_class(arrays["features"], arrays["targets"], k),
        "weight_norms": pmetrics.weight_norms(arrays["prototypes"]),
        "train_counts": result.metrics["train_counts"],
    }


def per_class_frame(
    results: Sequence[RunResult] | pd.DataFrame, key: str = "per_class_acc"
) -> pd.DataFrame:
    """The per-class values ``key`` (a key of :data:`PER_CLASS_COLUMNS`) of ``results`` (runs
    or their :func:`results_frame`) in long form, one row per run and class: ``label``,
    ``seed``, ``dataset``, ``imbalance_ratio``, ``class``, ``train_count`` (the class's
    training samples) and ``value`` (NaN for a class without test samples). Classes beyond a
    run's ``num_classes`` are left out. Seaborn plots this frame directly."""
    frame = results if isinstance(results, pd.DataFrame) else results_frame(results)
    prefix = PER_CLASS_COLUMNS[key] + "_"
    ids = ["label", "seed", "dataset", "imbalance_ratio", "num_classes", "train_counts"]
    long = frame.reset_index(drop=True).melt(
        id_vars=ids,
        value_vars=[c for c in frame if c.startswith(prefix)],
        var_name="class",
        value_name="value",
    )
    long["class"] = long["class"].str.removeprefix(prefix).astype(int)
    long = long[long["class"] < long["num_classes"]].copy()
    pairs = zip(long["train_counts"], long["class"], strict=True)
    long["train_count"] = [counts[c] for counts, c in pairs]
    return long.drop(columns=["num_classes", "train_counts"]).reset_index(drop=True)


def style_noisy_table(
    table: dict[str, dict[tuple[str, float], tuple[float, float, int]]], *, caption: str = ""
):
    """:func:`noisy_accuracy_table` as a styled DataFrame for a notebook: one row per method,
    one column per (kind, eta) headed ``"symmetric η = 0.2"``, cells ``mean ± std`` in percent
    (:func:`~palviz.plots.format_accuracy`, ``-`` where a method did not run), the highest mean
    of each column in bold (a reading aid, not a ranking), under ``caption`` and the key to the
    bold cells; cells padded so that they do not run together."""
    columns: list[tuple[str, float]] = []
    for row in table.values():
        columns += [c for c in row if c not in columns]
    frame = pd.DataFrame(
        [[row.get(c) for c in columns] for row in table.values()],
        index=pd.Index(list(table), name="method"),
        columns=[f"{kind} η = {eta:g}" for kind, eta in columns],
    )

    def bold_best(column: pd.Series) -> list[str]:
        means = [np.nan if v is None else v[0] for v in column]
        best = np.nanmax(means)
        return ["font-weight: bold" if m == best else "" for m in means]

    key = "Bold: the highest mean of its column (a reading aid, not a ranking)."
    return (
        frame.style.format(lambda v: "-" if v is None else format_accuracy(v[0], v[1]))
        .apply(bold_best, axis=0)
        .set_caption(f"{caption} {key}".strip())
        .set_table_styles(CELL_PADDING)
    )


def transition_rule_error(result: RunResult) -> float:
    """How far a noisy run's realised transition matrix is from the rule that made its labels:
    ``flip_count(eta, n_c)`` labels of each class ``c`` flipped (symmetric: off the diagonal;
    asymmetric: to the class :func:`palviz.data.asymmetric_map` names). The largest absolute
    difference over the diagonal (symmetric) or the whole matrix (asymmetric)."""
    T = np.asarray(result.metrics["transition_matrix"], dtype=float)
    n = np.asarray(result.metrics["train_counts"])
    eta, kind = result.spec.noise_rate, result.spec.noise_kind
    flipped = np.array([flip_count(eta, int(c)) for c in n]) / n
    expected = np.eye(len(n))
    if kind == "symmetric":
        return float(np.max(np.abs(np.diag(T) - (1 - flipped))))
    for s, t in asymmetric_map(result.spec.dataset).items():
        expected[s, s], expected[s, t] = 1 - flipped[s], flipped[s]
    return float(np.max(np.abs(T - expected)))
