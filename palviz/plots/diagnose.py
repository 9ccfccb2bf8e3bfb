"""The figure of :func:`palviz.diagnose`, readable on its own: the headline numbers (NC1-NC4,
ECE, accuracy by shot group, train and test), the classifier's cosine matrix against the simplex
value, per class (or, above :data:`PER_CLASS_MAX` classes, per shot group) the accuracy, the
classifier-row norm $\\|w_c\\|$, the centred class-mean norm $\\|\\mu_c - \\mu_G\\|$ and the mean
margin, and a reliability diagram per split with its bin counts and ECE.
:func:`plot_diagnosis` returns the figure and leaves saving to :func:`palviz.plots.savefig`.
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from palviz.metrics import SHOT_GROUPS
from palviz.plots.theory import plot_cosine_heatmap

__all__ = ["PER_CLASS_MAX", "plot_diagnosis"]

#: Above this many classes the per-class panels show each shot group's spread instead.
PER_CLASS_MAX = 50

_GROUP_COLORS = {"many": "C0", "medium": "C1", "few": "C3"}
_SPLIT_COLORS = {"train": "C0", "test": "C2"}
#: The headline rows: (label, metric, definition).
_HEADLINE = (
    ("NC1  Tr(Sw Sb+)/K", "NC1", "Papyan"),
    ("NC2  equiangularity, means", "NC2 equiangularity (means)", "Papyan"),
    ("NC2  equinorm, means", "NC2 equinorm (means)", "Papyan"),
    ("NC2  ETF distance, means", "NC2 ETF distance (means)", "ETF distance"),
    ("NC3  ||W/|W| - M/|M|||", "NC3", "Papyan"),
    ("NC4  classifier vs nearest mean", "NC4", "Papyan"),
    ("ECE  (15 bins)", "ECE", "Guo"),
    ("accuracy", "accuracy", "palviz"),
)


def _numbers(frame: Any) -> dict[tuple[str, str, str, str], str]:
    """Each value of ``frame`` at 3 decimals, by (split, group, metric, definition)."""
    keys = zip(frame.split, frame.group, frame.metric, frame.definition, strict=True)
    return {key: f"{value:.3f}" for key, value in zip(keys, frame.value, strict=True)}


def _headline(ax: mpl.axes.Axes, d: Any) -> None:
    """The headline numbers as a table: a column per split, a row per measure and group."""
    splits = list(dict.fromkeys(d.frame.split))
    train = d.per_class[d.per_class.split == "train"]
    rows = [(label, "all", metric, form) for label, metric, form in _HEADLINE]
    for group in SHOT_GROUPS:
        n = int((train.group == group).sum())
        if n:
            name = f"accuracy, {group}-shot ({n} class{'es' if n > 1 else ''})"
            rows.append((name, group, "accuracy", "palviz"))
    numbers = _numbers(d.frame)
    cells = [[numbers.get((s, g, m, f), "n/a") for s in splits] for _, g, m, f in rows]
    table = ax.table(
        cellText=cells,
        rowLabels=[r[0] for r in rows],
        colLabels=splits,
        loc="center right",
        colWidths=[0.16] * len(splits),
        cellLoc="center",
    )
    table.auto_set_font_size(False)
    table.set_fontsize(9)
    table.scale(1.0, 1.25)
    ax.set_axis_off()
    ax.set_title("headline numbers (0 = collapse for NC1-NC4; test NC4 against train means)")


def _cosines(ax: mpl.axes.Axes, cos: np.ndarray | None) -> None:
    if cos is None:
        ax.text(0.5, 0.5, "no classifier layer found", ha="center", va="center")
        ax.set_axis_off()
        return
    k = cos.shape[0]
    simplex = -1.0 / (k - 1)
    image = plot_cosine_heatmap(ax, cos, title="classifier cosines $\\hat w_i^\\top \\hat w_j$")
    for axis in (ax.xaxis, ax.yaxis):  # a narrow panel: every class up to 10, else 6 numbers
        axis.set_major_locator(mpl.ticker.MaxNLocator(integer=True, nbins=10 if k <= 10 else 6))
    bar = ax.figure.colorbar(image, ax=ax, shrink=0.8)
    bar.ax.axhline(simplex, color="k", lw=2)
    bar.set_label(f"cosine; black line: -1/(K-1) = {simplex:.3f}")


def _per_class(ax, per_class, column, ylabel, title, splits=("train",)) -> None:
    """``column`` per class (bars coloured by shot group, a line per further split)."""
    for i, split in enumerate(splits):
        rows = per_class[per_class.split == split]
        x = rows["class"].to_numpy()
        if i == 0:
            colors = [_GROUP_COLORS[g] for g in rows["group"]]
            ax.bar(x, rows[column], color=colors, alpha=0.8)
        else:
            ax.plot(x, rows[column], "k.", ms=6, label=f"{split} split")
    k = int(per_class["class"].max()) + 1
    counts = per_class[per_class.split == splits[0]]["count"].to_numpy()
    ticks = np.arange(k) if k <= 20 else np.linspace(0, k - 1, 10).round().astype(int)
    ax.set_xticks(ticks, [f"{c}\n{int(counts[c])}" for c in ticks], fontsize=8)
    ax.set(xlabel="class (below: its training count)", ylabel=ylabel, title=title)
    handles = [
        mpl.patches.Patch(color=color, alpha=0.8, label=f"{group}-shot")
        for group, color in _GROUP_COLORS.items()
        if (per_class.group == group).any()
    ]
    ax.legend(  # below the axis: the bars fill it
        handles=handles + ax.get_legend_handles_labels()[0],
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.2),
        ncols=4,
    )


def _by_group(ax, per_class, column, ylabel, title, splits=("train",)) -> None:
    """``column``'s spread over the classes of each shot group (box per group and split)."""
    groups = [g for g in SHOT_GROUPS if (per_class.group == g).any()]
    width = 0.8 / len(splits)
    for i, split in enumerate(splits):
        rows = per_class[per_class.split == split]
        values = [rows[rows.group == g][column].dropna().to_numpy() for g in groups]
        positions = np.arange(len(groups)) + (i - (len(splits) - 1) / 2) * width
        box = ax.boxplot(
            values, positions=positions, widths=width * 0.9, patch_artist=True, showfliers=False
        )
        for patch in box["boxes"]:
            patch.set(facecolor=_SPLIT_COLORS.get(split, "C4"), alpha=0.6)
        ax.plot([], [], "s", color=_SPLIT_COLORS.get(split, "C4"), alpha=0.6, label=split)
    train = per_class[per_class.split == splits[0]]
    ax.set_xticks(
        np.arange(len(groups)),
        [f"{g}-shot\n{int((train.group == g).sum())} classes" for g in groups],
    )
    ax.set(ylabel=ylabel, title=title + ", by shot group")
    ax.legend(fontsize=8, loc="best")


def _reliability(ax: mpl.axes.Axes, r: Any, split: str, ece: str) -> None:
    ax.plot([0, 1], [0, 1], color="0.5", ls="--", label="perfect calibration")
    full = r["count"] > 0
    width = float((r["upper"] - r["lower"]).iloc[0])
    color = _SPLIT_COLORS.get(split, "C4")
    centres = r["lower"][full] + width / 2
    ax.bar(centres, r["accuracy"][full], width=width * 0.9, alpha=0.45, color=color)
    ax.plot(r["confidence"][full], r["accuracy"][full], "o", color=color, ms=3)
    for x, n in zip(centres, r["count"][full], strict=True):  # the bin counts
        ax.text(x, 0.02, f"{n}", rotation=90, ha="center", va="bottom", fontsize=7)
    ax.set(xlim=(0, 1), ylim=(0, 1.02))
    ax.set_xlabel("top-1 confidence (bin; dots: its mean confidence)")
    ax.set_ylabel("accuracy in the bin")
    ax.set_title(f"reliability, {split} split: ECE {ece}, N = {int(r['count'].sum())}")
    ax.legend(loc="upper left", fontsize=8)


def plot_diagnosis(diagnosis: Any) -> mpl.figure.Figure:
    """The figure of a :class:`palviz.diagnosis.Diagnosis`, in three rows: (1) the headline
    numbers and the classifier's cosine matrix, the simplex value $-1/(K-1)$ on the colour
    bar; (2) per class the accuracy (train bars, test dots), $\\|w_c\\|$ and
    $\\|\\mu_c - \\mu_G\\|$, coloured by shot group (above :data:`PER_CLASS_MAX` classes: a box
    per shot group); (3) the reliability diagram of each split (its bin counts at the foot of
    the bars, its ECE in the title) and the mean margin per class."""
    d = diagnosis
    pc = d.per_class
    splits = tuple(dict.fromkeys(pc.split))
    k = int(pc["class"].max()) + 1
    fig = plt.figure(figsize=(16, 13), layout="none")  # whatever rcParams ask
    # fixed margins (no layout engine: it would cost most of the drawing time); room below
    # each row for its legends and tick labels, on the left for the table's row labels
    grid = fig.add_gridspec(
        3, 3, left=0.05, right=0.95, bottom=0.07, top=0.94, hspace=0.5, wspace=0.28
    )
    _headline(fig.add_subplot(grid[0, :2]), d)
    _cosines(fig.add_subplot(grid[0, 2]), d.cosines)
    draw = _per_class if k <= PER_CLASS_MAX else _by_group
    # (column, y label, title, splits) of the per-class row: the norms are the train split's
    row = (
        ("accuracy", "accuracy", "accuracy", splits),
        ("classifier_norm", r"$\|w_c\|$", r"classifier-row norm $\|w_c\|$", ("train",)),
        (
            "feature_mean_norm",
            r"$\|\mu_c - \mu_G\|$",
            r"centred class-mean norm $\|\mu_c - \mu_G\|$, train",
            ("train",),
        ),
    )
    for i, panel in enumerate(row):
        draw(fig.add_subplot(grid[1, i]), pc, *panel)
    numbers = _numbers(d.frame)
    for i, split in enumerate(splits[:2]):
        r = d.reliability[d.reliability.split == split]
        ece = numbers.get((split, "all", "ECE", "Guo"), "n/a")
        _reliability(fig.add_subplot(grid[2, i]), r, split, ece)
    if len(splits) == 1:
        ax = fig.add_subplot(grid[2, 1])
        ax.text(0.5, 0.5, "no test split: pass test=(x, y)", ha="center", va="center")
        ax.set_axis_off()
    ax = fig.add_subplot(grid[2, 2])
    draw(ax, pc, "mean_margin", r"mean margin $z_y - \max_{j \neq y} z_j$", "mean margin", splits)
    ax.axhline(0.0, color="k", lw=0.8)
    mean = "mean of the class means" if d.center == "class_means" else "sample mean"
    fig.suptitle(
        f"diagnose: K = {k} classes, layer {d.layer!r}; logits x {d.logit_scale:g}; "
        f"global mean mu_G = {mean}"
    )
    return fig
