"""Figures of prototype geometry that need no trained network (notebook 01)."""

from __future__ import annotations

from collections.abc import Mapping

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
