"""Result tables: every finished run as one row of a pandas frame, and the tables and captions
the notebooks print from it (one run's history and geometry: :mod:`palviz.experiments.inspection`).

:func:`results_frame` is the one place that reads a run's metrics into columns; the tables
(:func:`lt_table`, :func:`noisy_accuracy_table`, ...) are group-bys of that frame (mean and
standard deviation over seeds, :func:`_over_seeds`), and every markdown table, the claims
tables included, is written by :func:`markdown_table` (``DataFrame.to_markdown``). Every
accuracy a table prints is formatted by one function, :func:`palviz.plots.format_accuracy`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from palviz import metrics as pmetrics
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
    return {
        "key": spec.key(),
        "label": result.label,
        "method": result.label.split(" s=")[0],
        **{column: getattr(spec, column) for column in ("dataset", "arch", "loss", "head")},
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
        **{c: _number(m.get(c)) for c in ("min_prototype_angle", "realised_noise_rate", "seconds")},
    }


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
    results = list(results)
    frame = pd.DataFrame([_run_row(r) for r in results])
    for key, prefix in PER_CLASS_COLUMNS.items():  # NaN beyond a run's own classes
        lists = [dict(enumerate(r.metrics.get(key) or [])) for r in results]
        frame = frame.join(pd.DataFrame(lists, dtype=float).add_prefix(prefix + "_"))
    return frame.astype({column: "Int64" for column in _INT_COLUMNS if column in frame})


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
    wanted = {"dataset": dataset, "imbalance_ratio": imbalance_ratio, "seed": seed}
    order = None if labels is None else list(labels)
    picked = [
        r
        for r in results
        if all(value is None or getattr(r.spec, name) == value for name, value in wanted.items())
        and (order is None or r.label in order)
    ]
    if order is None:
        return picked
    return sorted(picked, key=lambda r: (order.index(r.label), r.spec.seed))


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


def _lt_name(dataset: str, rho: float) -> str:
    return f"{DATASET_NAMES.get(dataset, dataset)}-LT, rho = {rho:g}"


def _caption(frame: pd.DataFrame, profile: str | None, bold: str = "") -> str:
    """What the runs (rows of :func:`results_frame`) measured: per data set and imbalance
    ratio (its name between ``bold``) the training and test sizes and the seeds; then the
    networks, epochs and profile."""
    parts = []
    for (dataset, rho), runs in frame.groupby(["dataset", "imbalance_ratio"], sort=False):
        first, seeds = runs.iloc[0], sorted(set(runs["seed"].tolist()))
        counts, n = first["train_counts"], len(seeds)
        parts.append(
            f"{bold}{_lt_name(dataset, rho)}{bold}: {first['train_size']:,} training samples "
            f"({counts[0]:,} ... {counts[-1]:,} per class), {first['test_size']:,} test samples "
            f"(the whole test split), seed{'s' if n > 1 else ''} {', '.join(map(str, seeds))}"
            + (f" (mean ± std over {n})" if n > 1 else " (one run, no spread)")
        )
    archs = ", ".join(sorted(set(frame["arch"])))
    epochs = ", ".join(map(str, sorted(set(frame["epochs"].tolist()))))
    return "; ".join(parts) + f". {archs}, {epochs} epochs, profile {resolve_profile(profile)}."


def lt_caption(results: Sequence[RunResult], profile: str | None = None) -> str:
    """One line that says what ``results`` measured: data set, imbalance ratio(s), training
    and test sizes, seeds, network, epochs and profile (printed beside every table and figure)."""
    if not results:
        raise ValueError("results must not be empty")
    return _caption(results_frame(results), profile)


def markdown_table(
    frame: pd.DataFrame, *, index: bool = True, left: Iterable[str] = ("method",)
) -> str:
    """``frame`` (cells already text; with ``index``, its index first) as a markdown table: a
    ``|`` in a cell escaped, the columns named in ``left`` left-aligned, the others (numbers)
    right-aligned, no cell re-parsed as a number."""
    cells = (frame.reset_index() if index else frame).map(lambda text: text.replace("|", "\\|"))
    align = ["left" if name in left else "right" for name in cells.columns]
    return cells.to_markdown(index=False, disable_numparse=True, colalign=align)


def _lt_frames(results: Sequence[RunResult], profile: str | None) -> list[tuple[str, pd.DataFrame]]:
    """One ``(caption, frame)`` per data set and imbalance ratio of :func:`lt_table`, every
    cell text: accuracies in % (:func:`~palviz.plots.format_accuracy`, ``n/a`` for an empty
    shot group), the published numbers (:func:`~palviz.experiments.published.published_text`)
    in a column of their own where a source has one for a row."""
    by = ["dataset", "imbalance_ratio"]
    frames = results_frame(results).groupby(by, sort=False)
    blocks = pd.DataFrame(lt_table(results)).groupby(by, sort=False)
    out = []
    for (_, runs), (_, block) in zip(frames, blocks, strict=True):
        groups = pmetrics.shot_groups(block["train_counts"].iloc[0])
        names = {"method": "method", "last": "overall, last epoch", "best": "overall, best epoch"}
        if block["published"].map(bool).any():
            names["published"] = "published (source)"
        names |= {g: f"{g}-shot, last ({len(groups[g])} cl.)" for g in _GROUPS} | {"seeds": "seeds"}
        cells = block.assign(
            published=block["published"].map(published_text),
            seeds=block["seeds"].map(lambda seeds: ", ".join(map(str, seeds))),
        )
        accuracy = ["last", "best", *_GROUPS]  # (mean, std), None for an empty shot group
        cells[accuracy] = block[accuracy].map(lambda v: format_accuracy(*(v or (None,))))
        out.append((_caption(runs, profile, "**"), cells[list(names)].rename(columns=names)))
    return out


def lt_table_markdown(results: Sequence[RunResult], profile: str | None = None) -> str:
    """Markdown tables of :func:`lt_table` (accuracy in %, :func:`~palviz.plots.format_accuracy`),
    one per data set and imbalance ratio, each under a caption (:func:`lt_caption`) and with
    the shot groups' class counts in the header. A "published (source)" column appears beside
    the best-epoch column when a source of :mod:`palviz.experiments.published` has a number
    for one of the rows (each number with its source's name, ``-`` for none)."""
    blocks = [
        caption + "\n\n" + markdown_table(table, index=False)
        for caption, table in _lt_frames(results, profile)
    ]
    return "\n\n".join(blocks) + "\n"


#: The cell padding of every styled accuracy table, so that neighbouring cells do not run together.
CELL_PADDING = [{"selector": "th, td", "props": "padding: 0.25em 0.75em;"}]


def style_lt_tables(results: Sequence[RunResult], profile: str | None = None) -> list:
    """The tables of :func:`lt_table_markdown` as styled DataFrames for a notebook, one per
    data set and imbalance ratio, the same cells under the same captions."""
    return [
        table.style.hide(axis="index")
        .set_caption(caption.replace("**", ""))
        .set_table_styles(CELL_PADDING)
        for caption, table in _lt_frames(results, profile)
    ]


def _published_blocks(
    records: Sequence[Published], setting: Callable[[Published], str], *, by_dataset: bool = False
) -> str:
    """``records`` as markdown, one table per source (and data set, ``by_dataset``) under a
    line naming the source and what it reports: a row per method, a column per ``setting(r)``
    (and column of the source)."""
    blocks = []
    for source in SOURCES.values():
        mine = [r for r in records if r.source == source.name]
        for dataset in dict.fromkeys(r.dataset if by_dataset else None for r in mine):
            cells: dict[str, dict[str, str]] = {}
            for r in mine:
                if dataset in (None, r.dataset):
                    column = f"{setting(r)}, {r.column}" if r.column else setting(r)
                    cells.setdefault(r.method, {})[column] = r.text
            frame = pd.DataFrame.from_dict(cells, orient="index").fillna("-").rename_axis("method")
            on = f", {DATASET_NAMES.get(dataset, dataset)}" if dataset else ""
            blocks.append(
                f"**{source.name}{on}**: {source.citation}, {source.where}. Top-1 "
                f"{source.reports} in the source, shown as accuracy (%); epoch: "
                f"{source.selection}; {source.spread}; set-up: {source.setup}.\n\n"
                + markdown_table(frame)
            )
    return "\n\n".join(blocks) + "\n" if blocks else ""


#: A noise kind as a column of the noisy tables says it (``sym 0.4``).
_KINDS = {"symmetric": "sym", "asymmetric": "asym"}


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
    return _published_blocks(
        records, lambda r: f"{_KINDS[r.noise_kind]} {r.noise_rate:g}", by_dataset=True
    )


#: The shape of :func:`noisy_accuracy_table`: ``{label: {(kind, eta): (mean, std, n)}}``.
NoisyTable = dict[str, dict[tuple[str, float], tuple[float, float, int]]]


def noisy_accuracy_table(
    results: Sequence[RunResult], key: str | Callable[[dict], float] = "last_acc"
) -> NoisyTable:
    """``metrics[key]`` (or ``key(metrics)`` for a callable) of noisy runs as a table:
    ``{label: {(kind, eta): (mean, std, n)}}`` over seeds, rows and columns in order of first
    appearance; std is NaN for one seed. (A dict rather than a frame: the shape
    :func:`format_noisy_table` and :func:`style_noisy_table` print; the figures draw the frame
    of :func:`results_frame` itself.)"""
    frame = results_frame(results)
    if frame.empty:
        return {}
    if isinstance(key, str) and key in frame:
        frame["value"] = frame[key]
    else:  # a function of the metrics, or a number of metrics.json that is no column
        values = [key(r.metrics) if callable(key) else r.metrics[key] for r in results]
        frame["value"] = [_number(v) for v in values]
    stats = _over_seeds(frame, ["label", "noise_kind", "noise_rate"], ["value"])["value"]
    table: NoisyTable = {}
    for (label, kind, eta), (mean, std, n) in stats.iterrows():
        table.setdefault(label, {})[kind, float(eta)] = (float(mean), float(std), int(n))
    return table


def _noisy_frame(
    table: NoisyTable,
    header: Callable[[str, float], str],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`noisy_accuracy_table` as text cells, one row per method and one column per
    (kind, eta) in order of first appearance, headed ``header(kind, eta)``: ``mean ± std`` in
    percent (:func:`~palviz.plots.format_accuracy`), ``-`` where a method did not run; and
    where each column's highest mean is (a reading aid, not a ranking)."""
    columns = list(dict.fromkeys(c for row in table.values() for c in row))
    cells = pd.DataFrame(
        [[row.get(c) for c in columns] for row in table.values()],
        index=pd.Index(list(table), name="method"),
        columns=[header(*c) for c in columns],
    )
    means = cells.map(lambda v: np.nan if v is None else v[0])
    text = cells.map(lambda v: "-" if v is None else format_accuracy(v[0], v[1]))
    return text, means.eq(means.max())


def format_noisy_table(
    table: NoisyTable,
    *,
    title: str = "",
    mark_best: bool = True,
) -> str:
    """:func:`noisy_accuracy_table` as a markdown table in percent (under ``title``): one row
    per method, one column per (kind, eta), ``mean ± std`` where several seeds ran
    (:func:`~palviz.plots.format_accuracy`), ``-`` where a method did not run; with
    ``mark_best`` the highest mean of each column is marked ``*`` (a reading aid, not a
    ranking: differences within a seed's spread mean nothing)."""
    text, best = _noisy_frame(table, lambda kind, eta: f"{_KINDS.get(kind, kind)} {eta:g}")
    if mark_best:
        text = text.mask(best, text + "*")
    return (f"{title}\n" if title else "") + markdown_table(text)


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
    long = long[long["class"] < long["num_classes"]]
    counts = [counts[c] for counts, c in zip(long["train_counts"], long["class"], strict=True)]
    long = long.assign(train_count=counts).drop(columns=["num_classes", "train_counts"])
    return long.reset_index(drop=True)


def style_noisy_table(table: NoisyTable, *, caption: str = ""):
    """:func:`noisy_accuracy_table` as a styled DataFrame for a notebook: one row per method,
    one column per (kind, eta) headed ``"symmetric η = 0.2"``, cells ``mean ± std`` in percent
    (:func:`~palviz.plots.format_accuracy`, ``-`` where a method did not run), the highest mean
    of each column in bold (a reading aid, not a ranking), under ``caption`` and the key to the
    bold cells; cells padded so that they do not run together."""
    text, best = _noisy_frame(table, lambda kind, eta: f"{kind} η = {eta:g}")
    key = "Bold: the highest mean of its column (a reading aid, not a ranking)."
    return (
        text.style.apply(lambda _: np.where(best, "font-weight: bold", ""), axis=None)
        .set_caption(f"{caption} {key}".strip())
        .set_table_styles(CELL_PADDING)
    )
