"""The palviz figure style and class colours: the base the figure modules share, with the axis
set-ups several of them draw (class ticks by training count, measured log ticks, heatmaps).

:mod:`palviz.plots.theory`, :mod:`palviz.plots.margins`, :mod:`palviz.plots.experiments` and
:mod:`palviz.plots` import this module; it imports no figure module (and no other palviz module).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

#: What :mod:`palviz.plots` shows of this module; the axis set-ups are the plot modules' own.
__all__ = ["STYLE", "class_colors", "set_style"]

#: The palviz figure style (matplotlib rcParams), applied by :func:`set_style`.
STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 120,
    "savefig.bbox": "tight",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "figure.constrained_layout.use": True,
}


def set_style() -> None:
    """Apply the palviz figure style to matplotlib."""
    mpl.rcParams.update(STYLE)


def class_colors(num_classes: int) -> np.ndarray:
    """``num_classes`` distinguishable RGBA colours (tab10 up to 10 classes, then turbo)."""
    if num_classes <= 10:
        return plt.get_cmap("tab10")(np.arange(num_classes))
    return plt.get_cmap("turbo")(np.linspace(0, 1, num_classes))


def count_order(ax: mpl.axes.Axes, counts: Sequence[int]) -> np.ndarray:
    """The classes ordered by training ``counts``, most frequent first (ties by class); the x
    axis of ``ax`` gets one tick per class, naming the class and its count."""
    counts = np.asarray(counts)
    order = np.argsort(-counts, kind="stable")
    ax.set_xticks(range(len(order)), [f"{c}\n(n={counts[c]})" for c in order], fontsize=7)
    ax.set_xlabel("class (training count), most frequent first")
    return order


def log_ticks(ax: mpl.axes.Axes, values: Iterable[float]) -> None:
    """A log x axis ticked at the measured ``values`` themselves, written plainly (0.3, 1, 30)."""
    ticks = sorted({float(v) for v in values})
    ax.set_xscale("log")
    ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
    ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())


def heatmap(ax: mpl.axes.Axes, data: np.ndarray, **kwargs) -> None:
    """A seaborn heatmap of ``data`` in the palviz form: square cells, annotations (if any) at
    6.5 pt, no colour bar (the caller adds one for several panels), upright y tick labels and no
    grid; ``kwargs`` go to :func:`seaborn.heatmap`."""
    sns.heatmap(data, ax=ax, annot_kws={"fontsize": 6.5}, cbar=False, square=True, **kwargs)
    ax.tick_params(axis="y", rotation=0)
    ax.grid(False)
