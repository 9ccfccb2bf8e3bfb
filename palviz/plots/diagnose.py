"""The figure of :func:`palviz.diagnose`: the classifier's cosine matrix against the simplex
value, the per-class norms by shot group, the reliability diagram and the margins per class.
:func:`plot_diagnosis` returns the figure and leaves saving to :func:`palviz.plots.savefig`.
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from palviz.plots.theory import plot_cosine_heatmap

__all__ = ["plot_diagnosis"]

_GROUP_COLORS = {"many": "C0", "medium": "C1", "few": "C3"}


def _cosines(ax: mpl.axes.Axes, cos: np.ndarray | None) -> None:
    if cos is None:
        ax.text(0.5, 0.5, "no classifier layer found", ha="center", va="center")
        ax.set_axis_off()
        return
    k = cos.shape[0]
    simplex = -1.0 / (k - 1)
    image = plot_cosine_heatmap(ax, cos, title="classifier cosines $\\hat w_i^\\top \\hat w_j$")
    bar = ax.figure.colorbar(image, ax=ax, shrink=0.8)
    bar.ax.axhline(simplex, color="k", lw=2)
    bar.set_label(f"cosine; black line: -1/(K-1) = {simplex:.3f}")


def _norms(ax: mpl.axes.Axes, per_class: Any) -> None:
    train = per_class[per_class.split == "train"]
    x = train["class"].to_numpy()
    colors = [_GROUP_COLORS[g] for g in train["group"]]
    ax.bar(x, train["classifier_norm"], color=colors, alpha=0.8)
    (dots,) = ax.plot(x, train["feature_mean_norm"], "k.", label=r"$\|\mu_c - \mu_G\|$")
    handles = [
        mpl.patches.Patch(color=color, alpha=0.8, label=rf"$\|w_c\|$, {group}-shot")
        for group, color in _GROUP_COLORS.items()
        if (train["group"] == group).any()
    ]
    ax.set_xlabel("class c (training split)")
    ax.set_ylabel(r"classifier-row norm $\|w_c\|$ / centred class-mean norm")
    ax.set_title("norms per class, coloured by shot group")
    ax.xaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
    ax.legend(handles=[*handles, dots], loc="best")


def _reliability(ax: mpl.axes.Axes, reliability: Any) -> None:
    ax.plot([0, 1], [0, 1], color="0.5", ls="--", label="perfect calibration")
    for i, (split, r) in enumerate(reliability.groupby("split", sort=False)):
        full = r["count"] > 0
        width = (r["upper"] - r["lower"]).to_numpy()[0]
        ax.bar(
            r["lower"][full] + width / 2,
            r["accuracy"][full],
            width=width * 0.9,
            alpha=0.45,
            color=f"C{i}",
            label=f"{split}: accuracy per bin",
        )
        ax.plot(r["confidence"][full], r["accuracy"][full], "o-", color=f"C{i}", ms=3)
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.set_xlabel("top-1 confidence (bin)")
    ax.set_ylabel("accuracy in the bin")
    ax.set_title("reliability diagram (dots: mean confidence of the bin)")
    ax.legend(loc="upper left")


def _margins(ax: mpl.axes.Axes, per_class: Any) -> None:
    for i, (split, r) in enumerate(per_class.groupby("split", sort=False)):
        ax.plot(r["class"], r["mean_margin"], "o-", ms=3, color=f"C{i}", label=split)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xlabel("class c")
    ax.set_ylabel(r"mean sample margin $z_y - \max_{j \neq y} z_j$")
    ax.set_title("mean sample margin per class (0: the decision boundary)")
    ax.xaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
    ax.legend(loc="best")


def plot_diagnosis(diagnosis: Any) -> mpl.figure.Figure:
    """Four panels of a :class:`palviz.diagnosis.Diagnosis`: (a) the classifier's cosine
    matrix, the simplex value $-1/(K-1)$ marked on the colour bar; (b) per class, the
    classifier-row norm coloured by shot group and the centred class-mean norm; (c) the
    reliability diagram with the diagonal; (d) the mean sample margin per class."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5), layout="constrained")
    _cosines(axes[0, 0], diagnosis.cosines)
    _norms(axes[0, 1], diagnosis.per_class)
    _reliability(axes[1, 0], diagnosis.reliability)
    _margins(axes[1, 1], diagnosis.per_class)
    fig.suptitle(
        f"diagnosis: logits x {diagnosis.logit_scale:g}, global mean = "
        + ("mean of the class means" if diagnosis.center == "class_means" else "sample mean")
    )
    return fig
