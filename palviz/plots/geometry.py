"""Figures of prototype geometry: what a simplex reaches (notebook 01) and neural collapse
over training (notebook 08)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib as mpl
import numpy as np


def plot_reachable_cosine(
    ax: mpl.axes.Axes, reachable: Mapping[str, np.ndarray], *, bound: float | None = None
) -> None:
    r"""Grouped bars of the per-class reachable cosine $\|w_i^+\| / \|w_i\|$, one group per
    class and one colour per orientation (`reachable` maps a label to a `[num_classes]` array);
    `bound` draws a dashed line (e.g. $\sqrt{(k-1)/k}$)."""
    labels = list(reachable)
    num_classes = len(next(iter(reachable.values())))
    width = 0.8 / len(labels)
    x = np.arange(num_classes)
    for i, label in enumerate(labels):
        ax.bar(x + (i - (len(labels) - 1) / 2) * width, reachable[label], width, label=label)
    if bound is not None:
        ax.axhline(bound, color="k", ls="--", lw=1, label=rf"$\sqrt{{(k-1)/k}}$ = {bound:.3f}")
    ax.set_xticks(x)
    ax.set_xlabel("class i")
    ax.set_ylabel(r"reachable cosine $\|w_i^+\| / \|w_i\|$")
    ax.set_ylim(0, 1.2)
    ax.legend(fontsize=8, loc="upper center", ncol=len(labels) + 1)


#: The panels of :func:`plot_collapse_over_training`: a history key, its title and whether its
#: axis is logarithmic (NC1 falls by orders of magnitude as the classes collapse).
COLLAPSE_PANELS = (
    ("nc1", r"NC1  $\mathrm{Tr}(\Sigma_W\Sigma_B^{+})/K$", True),
    ("nc2_angles_means", "NC2  std of the class means' cosines (0: equiangular)", False),
    ("nc3", r"NC3  $\|W/\|W\|_F - M/\|M\|_F\|_F$", False),
    ("nc4", "NC4  classifier vs nearest class mean", False),
    ("ece", "ECE (15 bins)", False),
)


def plot_collapse_over_training(
    axes: Sequence[mpl.axes.Axes],
    series: Mapping[str, Mapping[str, tuple[np.ndarray, np.ndarray]]],
    *,
    panels: Sequence[tuple[str, str, bool]] = COLLAPSE_PANELS,
    marks: Mapping[str, float] | None = None,
) -> None:
    """One panel per entry of ``panels`` (key, title, log axis), one line per method:
    ``series`` maps a label to ``{key: (epochs, values)}`` (e.g. from
    ``palviz.experiments.history_series``: the epochs read, each drawn as a marker on the
    line); ``marks`` draws a dotted vertical line per named epoch (e.g. ``{"DRW": 72}``). 0 is
    neural collapse on every panel."""
    for ax, (key, title, log) in zip(axes, panels, strict=True):
        for label, by_key in series.items():
            epochs, values = by_key[key]
            ax.plot(epochs, values, lw=1.4, marker="o", ms=3, label=label)  # a marker a reading
        for name, epoch in (marks or {}).items():
            ax.axvline(epoch, color="0.5", ls=":", lw=1)
            ax.annotate(name, (epoch, 1), xycoords=("data", "axes fraction"), fontsize=7,
                        ha="right", va="top", rotation=90, color="0.4")  # fmt: skip
        if log:
            ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("epoch")
    axes[0].set_ylabel("value (0: collapsed / calibrated)")
    axes[-1].legend(fontsize=7, loc="best")
