"""The experiment figures of notebooks 06-08 (and the tour, 00): per-class accuracy and norms,
accuracy against the noise rate and against the scale s, transition matrices, training counts
and curves, prototype angles and UMAP embeddings (the paired runs of 06 and 07 are
:mod:`palviz.plots.paired`).

The statistical figures are seaborn plots of the tidy frame of
:func:`palviz.experiments.tables.results_frame` (one row per run;
:func:`palviz.experiments.tables.per_class_frame` melts the per-class columns to one row per run and
class): a bar or point is the mean over seeds and its error bar one standard deviation over seeds
(``errorbar="sd"``; none for a single seed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from palviz.plots.style import class_colors, count_order, heatmap, log_ticks

__all__ = [
    "plot_per_class_accuracy",
    "plot_per_class",
    "plot_lines",
    "plot_embedding",
    "plot_embeddings",
    "plot_transition_matrix",
    "plot_accuracy_vs_noise",
    "plot_accuracy_vs_scale",
    "plot_training_counts",
    "mark_schedule",
    "plot_angle_histories",
    "plot_cosine_heatmaps",
]

#: The spread every seaborn figure of this module draws: one standard deviation over seeds.
ERRORBAR = "sd"


def plot_per_class_accuracy(
    ax: mpl.axes.Axes,
    per_class: Mapping[str, Sequence[float]],
    train_counts: Sequence[int],
    *,
    title: str | None = None,
) -> None:
    """Grouped bars of per-class test accuracy, one group per class, classes ordered by
    training count (most frequent left); the counts label the x axis."""
    order = count_order(ax, train_counts)
    names = list(per_class)
    width = 0.8 / max(len(names), 1)
    x = np.arange(len(order))
    for i, name in enumerate(names):
        acc = np.asarray(per_class[name], dtype=float)[order]
        ax.bar(x + (i - (len(names) - 1) / 2) * width, 100 * acc, width, label=name)
    ax.set(ylabel="test accuracy (%)", ylim=(0, 100), title=title)
    ax.legend(ncols=min(len(names), 4))


def plot_lines(
    ax: mpl.axes.Axes,
    curves: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    xlabel: str,
    ylabel: str,
    title: str | None = None,
    logx: bool = False,
    percent: bool = False,
    marker: str = "o",
) -> None:
    """One line per entry of ``curves`` (``{label: (x, y)}``), with markers at the measured
    points (a curve is only a guide between them); ``percent`` multiplies y by 100."""
    for label, (x, y) in curves.items():
        y = np.asarray(y, dtype=float) * (100 if percent else 1)
        ax.plot(np.asarray(x, dtype=float), y, marker=marker, ms=4, label=label)
    if logx:
        log_ticks(ax, [v for x, _ in curves.values() for v in np.asarray(x, dtype=float)])
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    if curves:
        ax.legend()


def plot_embedding(
    ax: mpl.axes.Axes,
    embedding: np.ndarray,
    labels: np.ndarray,
    train_counts: Sequence[int] | None = None,
    *,
    title: str | None = None,
) -> None:
    """Scatter a 2-D embedding coloured by class; with ``train_counts``, the legend names each
    class with its training count and minority classes are drawn on top, larger."""
    labels = np.asarray(labels)
    num_classes = int(labels.max()) + 1 if train_counts is None else len(train_counts)
    colors = class_colors(num_classes)
    order = range(num_classes)
    if train_counts is not None:
        order = np.argsort(-np.asarray(train_counts), kind="stable")  # minority drawn last
    for rank, c in enumerate(order):
        pts = embedding[labels == c]
        size = 4 + 10 * rank / max(num_classes - 1, 1)
        label = f"{c}" if train_counts is None else f"{c} (n={train_counts[c]})"
        ax.scatter(pts[:, 0], pts[:, 1], s=size, color=colors[c], label=label, alpha=0.8, lw=0)
    ax.set(xticks=[], yticks=[], title=title)
    ax.grid(False)


def plot_per_class(
    ax: mpl.axes.Axes,
    per_class: pd.DataFrame,
    *,
    ylabel: str,
    percent: bool = False,
    ylim: tuple[float, float] | None = None,
    title: str | None = None,
    legend: str | None = "outside",
) -> None:
    """Per-class values of several methods side by side (seaborn), classes ordered by training
    count (most frequent left; class and count label the x axis).

    ``per_class`` is the long frame of :func:`palviz.experiments.tables.per_class_frame` (columns
    ``label``, ``seed``, ``class``, ``train_count``, ``value``): a bar is the mean over the
    seeds of a method and its error bar one standard deviation over seeds (none for one
    seed). With more than 20 classes, one line per method (the mean, a band for the standard
    deviation) replaces the bars. ``percent`` multiplies by 100. ``legend``: ``"outside"``
    (right of the axes), ``"inside"`` or ``None``."""
    data = per_class.assign(value=per_class["value"] * (100.0 if percent else 1.0))
    classes = data.drop_duplicates("class").sort_values(
        "train_count", ascending=False, kind="stable"
    )
    k = len(classes)
    seeds = data.groupby("label", sort=False)["seed"].nunique()
    names = {m: m if n == 1 else f"{m} ({n} seeds)" for m, n in seeds.items()}
    data = data.assign(label=data["label"].map(names))
    if k > 20:
        rank = dict(zip(classes["class"], range(k), strict=True))
        data = data.assign(rank=data["class"].map(rank))
        sns.lineplot(data, x="rank", y="value", hue="label", errorbar=ERRORBAR, lw=1.2, ax=ax)
        ticks = np.arange(0, k, max(1, k // 10))
        ax.set_xticks(ticks, [f"{classes['train_count'].iloc[t]}" for t in ticks], fontsize=7)
        ax.set_xlabel("classes by training count (tick: the count), most frequent first")
    else:
        tick = {
            c: f"{c}\nn={n}" for c, n in zip(classes["class"], classes["train_count"], strict=True)
        }
        data = data.assign(tick=data["class"].map(tick))
        sns.barplot(
            data,
            x="tick",
            y="value",
            hue="label",
            order=list(tick.values()),
            errorbar=ERRORBAR,
            capsize=0.15,
            err_kws={"linewidth": 0.8},
            ax=ax,
        )
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel("class, and its training count (most frequent first)")
    ax.set(ylabel=ylabel, ylim=ylim, title=title)
    spread = "mean over seeds, error bar ± 1 sd" if seeds.max() > 1 else "one seed"
    if legend is None:
        ax.get_legend().remove()
    elif legend == "outside":
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0), title=f"method ({spread})")
    else:
        sns.move_legend(ax, "best", ncols=min(len(names), 3), title=f"method ({spread})")


def plot_embeddings(
    embeddings: Mapping[str, tuple[np.ndarray, np.ndarray]],
    train_counts: Sequence[int],
    titles: Mapping[str, str],
    *,
    suptitle: str,
) -> mpl.figure.Figure:
    """One :func:`plot_embedding` panel per entry of ``embeddings`` (``{label: (points [N, 2],
    classes [N])}``), two panels a row, titled by ``titles[label]``, with one legend of the
    classes and their training counts."""
    rows = -(-len(embeddings) // 2)
    fig, axes = plt.subplots(rows, 2, figsize=(9, 4 * rows), squeeze=False)
    for ax in axes.flat[len(embeddings) :]:
        ax.axis("off")
    for ax, (label, (points, classes)) in zip(axes.flat, embeddings.items(), strict=False):
        plot_embedding(ax, points, classes, train_counts, title=titles[label])
    handles, texts = axes.flat[0].get_legend_handles_labels()
    fig.legend(
        handles, texts, loc="outside right center", title="class (training count)", markerscale=2.5
    )
    fig.suptitle(suptitle, fontsize=11)
    return fig


def plot_transition_matrix(
    ax: mpl.axes.Axes,
    transition: np.ndarray,
    *,
    title: str | None = None,
    annotate: bool = True,
):
    r"""Heatmap (seaborn) of a realised noise transition matrix
    $T_{ij} = P(\tilde y = j \mid y = i)$ (rows: clean class, columns: noisy label) on a fixed
    [0, 1] colour scale; with ``annotate`` (up to 20 classes), every non-zero entry is written
    in percent. Returns the mesh (for a colour bar)."""
    T = np.asarray(transition, dtype=float)
    if T.ndim != 2 or T.shape[0] != T.shape[1]:
        raise ValueError(f"transition must be a square matrix, got shape {T.shape}")
    k = len(T)
    show = annotate and k <= 20
    cells = np.where(T > 0, np.char.mod("%.0f", 100 * T), "") if show else False
    ticks = 1 if k <= 20 else max(1, k // 10)
    heatmap(
        ax,
        T,
        cmap="Blues",
        vmin=0,
        vmax=1,
        annot=cells,
        fmt="",
        xticklabels=ticks,
        yticklabels=ticks,
    )
    ax.set(xlabel=r"noisy training label $j$", ylabel=r"clean class $i$", title=title)
    return ax.collections[0]


def plot_accuracy_vs_noise(
    ax: mpl.axes.Axes,
    frame: pd.DataFrame,
    kind: str,
    *,
    value: str = "last_acc",
    title: str | None = None,
    legend: bool = True,
) -> None:
    """Test accuracy (%) against the noise rate (seaborn), one line per method of ``frame``
    (a :func:`palviz.experiments.tables.results_frame` of noisy runs) at noise ``kind``: the mean
    over seeds with an error bar of one standard deviation. A ``"<base>+FNPAL"`` method is drawn
    dashed with square markers in the colour of ``<base>``."""
    data = frame[frame["noise_kind"] == kind]
    # seaborn's hue is the method without "+FNPAL" (a method and its FNPAL variant share a
    # colour), its style the head
    data = data.assign(
        method=data["label"].str.removesuffix("+FNPAL"),
        variant=np.where(data["label"].str.endswith("+FNPAL"), "FNPAL head", "own head"),
        accuracy=100 * data[value],
    )
    sns.lineplot(
        data,
        x="noise_rate",
        y="accuracy",
        hue="method",
        style="variant",
        style_order=["own head", "FNPAL head"],
        markers=["o", "s"],
        errorbar=ERRORBAR,
        err_style="bars",
        err_kws={"capsize": 2},
        ms=5,
        legend=legend,
        ax=ax,
    )
    etas = sorted(data["noise_rate"].unique())
    ax.set_xticks(etas, [f"{eta:g}" for eta in etas])
    epoch = "last" if value == "last_acc" else "best"
    ax.set(
        xlabel=rf"{kind} noise rate $\eta$", ylabel=f"test accuracy (%), {epoch} epoch", title=title
    )
    if legend:
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0))


def plot_accuracy_vs_scale(
    ax: mpl.axes.Axes,
    frame: pd.DataFrame,
    hue: str,
    *,
    marked: Mapping[object, tuple[float, float]] | None = None,
    baseline: Mapping[object, float] | None = None,
    title: str | None = None,
) -> None:
    r"""Last-epoch test accuracy (%) against the head's scale $s$ on a log axis (seaborn), one
    line per value of column ``hue`` of ``frame`` (a :func:`palviz.experiments.tables.results_frame`
    of scale sweeps; mean over seeds, error bar one standard deviation). ``marked``
    (``{hue value: (s, accuracy)}``) adds a star in the line's colour (the noise-aware
    scale), ``baseline`` (``{hue value: accuracy}``) a dotted line (CE with a linear head)."""
    levels = list(dict.fromkeys(frame[hue]))
    names = {v: rf"$\eta$ = {v:g}" if hue == "noise_rate" else str(v) for v in levels}
    palette = dict(zip(names.values(), sns.color_palette(n_colors=len(levels)), strict=True))
    data = frame.assign(curve=frame[hue].map(names), accuracy=100 * frame["last_acc"])
    sns.lineplot(
        data,
        x="scale",
        y="accuracy",
        hue="curve",
        palette=palette,
        marker="o",
        ms=5,
        errorbar=ERRORBAR,
        err_style="bars",
        ax=ax,
    )
    for level, (s, acc) in (marked or {}).items():
        ax.plot(s, 100 * acc, "*", ms=13, color=palette[names[level]], mec="k")
    for level, acc in (baseline or {}).items():
        ax.axhline(100 * acc, color=palette[names[level]], ls=":", lw=1)
    if marked:
        ax.plot([], [], "k*", ms=10, label=r"noise-aware $s = 0.25/(0.05+\eta)$")
    if baseline:
        ax.plot([], [], "k:", lw=1, label="CE, linear head (same $\\eta$)")
    log_ticks(ax, data["scale"])
    ax.set(xlabel="scale $s$ (log axis)", ylabel="test accuracy (%), last epoch", title=title)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))


def plot_training_counts(
    ax: mpl.axes.Axes, counts: Mapping[float, Sequence[int]], *, title: str
) -> None:
    """Training samples per class (log scale) for each imbalance ratio of ``counts``
    (``{rho: counts}``), with the many-shot (> 100) and few-shot (< 20) thresholds dotted."""
    for rho, n in counts.items():
        ax.plot(range(len(n)), n, "o-", ms=3, label=f"rho = {rho} ({sum(n):,})")
    for threshold in (100, 20):
        ax.axhline(threshold, color="0.4", ls=":", lw=1)
    ax.text(0, 105, "many-shot above 100", fontsize=7, va="bottom")
    ax.text(0, 19, "few-shot below 20", fontsize=7, va="top")
    ax.set_yscale("log")
    ax.set_xlabel("class index i (training count falls with i)")
    ax.set_ylabel("training samples n_i (log scale)")
    ax.set_title(title)
    ax.legend(title="imbalance ratio (total)")


def mark_schedule(ax: mpl.axes.Axes, schedule: Mapping) -> None:
    """Dashed vertical lines on a curve over epochs where the training ``schedule`` (a
    ``TrainConfig`` as a dict) switches DRW on and decays the learning rate; schedule epochs
    are 0-based, the curves' 1-based, so a line sits between the two epochs."""
    events = [(schedule["drw_epoch"], "DRW on (-DRW methods)")]
    events += [
        (m, f"lr x{f:g}")
        for m, f in zip(schedule["milestones"], schedule["lr_factors"], strict=True)
    ]
    marks: dict[int, list[str]] = {}
    for epoch, text in events:
        if epoch is not None and epoch < schedule["epochs"]:  # a short run may not get there
            marks.setdefault(epoch, []).append(text)
    for epoch, texts in marks.items():
        ax.axvline(epoch + 0.5, color="0.3", ls="--", lw=1)
        ax.text(epoch + 0.5, 2, " " + ", ".join(texts), fontsize=7, va="bottom", rotation=90)


def plot_angle_histories(
    ax: mpl.axes.Axes,
    histories: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    simplex_angle: float,
    reference: str,
) -> None:
    """The smallest angle between two prototypes over the epochs, one line per entry of
    ``histories`` (``{label: (epochs, degrees)}``, epoch 0 the initialisation), coloured along
    viridis, against the simplex angle dashed (labelled ``reference``)."""
    colours = plt.get_cmap("viridis")(np.linspace(0, 0.9, len(histories)))
    for (label, (epochs, angles)), c in zip(histories.items(), colours, strict=True):
        ax.plot(epochs, angles, color=c, marker=".", label=label)
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.axhline(simplex_angle, color="k", ls="--", label=f"{reference}: {simplex_angle:.2f}°")
    ax.set_xlabel("epoch (0: at initialisation)")
    ax.set_ylabel("smallest angle between two prototypes (degrees)")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))


def plot_cosine_heatmaps(
    geometry: Mapping[str, Mapping[str, np.ndarray]], *, suptitle: str
) -> mpl.figure.Figure:
    """Two rows of cosine heatmaps, one column per entry of ``geometry`` (``{label:
    palviz.experiments.inspection.feature_geometry(run)}``): the class vectors' pairwise
    cosines on top, the centred feature class means' below, each titled with its smallest
    angle."""
    from palviz.plots.theory import plot_cosine_heatmap

    fig, axes = plt.subplots(2, len(geometry), figsize=(3.1 * len(geometry), 7), squeeze=False)
    # (the key of a row in feature_geometry's names, what its panel titles call it)
    rows = (
        ("prototype", "class vectors\nmin angle"),
        ("class_mean", "centred feature class\nmeans, min angle"),
    )
    for j, (label, geo) in enumerate(geometry.items()):
        for i, (key, what) in enumerate(rows):
            title = f"{label}: {what} {geo[f'min_{key}_angle']:.1f} deg"
            image = plot_cosine_heatmap(axes[i, j], geo[f"{key}_cosines"], title=title)
    fig.colorbar(image, ax=axes, shrink=0.6, label="cosine")
    fig.suptitle(suptitle)
    return fig
