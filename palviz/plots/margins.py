"""The figures of notebook 05, the margins of LDAM and ELM: LDAM's per-class margins, the
margins along the classes, the corners of the softplus hinges, a loss against the gap to the
strongest wrong class and ELM's effective margins per (true, wrong) pair. Each function draws
on axes it is given (or returns a figure) and leaves saving to :func:`palviz.plots.savefig`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch

from palviz import theory
from palviz.plots.style import class_colors, heatmap

__all__ = [
    "plot_class_margins",
    "plot_margin_lines",
    "plot_hinge_corners",
    "plot_loss_against_gap",
    "plot_effective_margins",
]


def _count_ticks(counts: Sequence[int]) -> list[str]:
    return [f"{j}\n{n}" for j, n in enumerate(counts)]


def plot_class_margins(
    ax: mpl.axes.Axes, delta: Sequence[float], counts: Sequence[int], *, title: str
) -> None:
    r"""LDAM's per-class margins $\Delta_j = C n_j^{-1/4}$ ($C = M n_{\min}^{1/4}$, so the rarest
    class gets $M$) as bars in class colours, each bar labelled with its value, the class and its
    training count under it."""
    k = len(counts)
    bars = ax.bar(range(k), delta, color=class_colors(k))
    ax.bar_label(bars, fmt="%.3f", fontsize=7)
    ax.set_xticks(range(k), _count_ticks(counts), fontsize=8)
    ax.set_xlabel("class j (top) and its training count $n_j$ (bottom)")
    ax.set_ylabel(r"margin $\Delta_j = C n_j^{-1/4}$ (cosine-logit units)")
    ax.set_title(title)


def plot_margin_lines(
    ax: mpl.axes.Axes,
    lines: Sequence[tuple[float, object]],
    title: str,
    arrows: Sequence[tuple[float, float, float, str]] = (),
    ldam: float | None = None,
) -> None:
    r"""The logit plane of the target logit $z_y$ against the strongest wrong one $z_{c^*}$
    (cosine units): the diagonal $z_y = z_{c^*}$, one shaded margin line $z_y = z_{c^*} + m$ per
    ``(m, colour)`` of ``lines``, LDAM's line dashed at ``ldam``, and ``arrows``
    ``(x, from offset, to offset, text)`` that measure margins vertically."""
    t = np.array([-1.0, 1.0])
    ax.plot(t, t, color="k", lw=1.8)
    for off, col in lines:
        ax.plot(t, t + off, color=col, lw=1.2)
        ax.fill_between(t, t, t + off, color=col, alpha=0.06, lw=0)
    if ldam is not None:
        ax.plot(t, t + ldam, "k--", lw=1.2, label=rf"LDAM's line, $\Delta_y$ = {ldam:.3f}")
        ax.legend(loc="upper left")
    for x, lo, hi, text in arrows:
        ax.annotate("", (x, x + hi), (x, x + lo), arrowprops={"arrowstyle": "->", "lw": 1.2})
        box = {"fc": "white", "ec": "none", "alpha": 0.85, "pad": 1}
        ax.text(x + 0.02, x + (lo + hi) / 2, text, fontsize=8, va="center", bbox=box)
    ax.set(xlim=(-0.6, 0.6), ylim=(-0.6, 0.6), aspect="equal", title=title)
    ax.set_xlabel(r"strongest wrong logit $z_{c^*}$ (cosine)")
    ax.set_ylabel(r"target logit $z_y$ (cosine)")


def plot_hinge_corners(
    counts: Sequence[int], max_m: float, lam: float, s: float, *, imbalance_ratio: float
) -> mpl.figure.Figure:
    r"""Notebook 05's four logit planes: (a) plain CE on $s z$ with its band $\log(C-1)/s$,
    (b) LDAM's line per true class, (c, d) ELM's lines $\Delta_y - \lambda\Delta_{c^*}$ for the
    rarest and the most frequent true class, LDAM's line dashed beside them."""
    C = len(counts)
    delta = theory.ldam_margins(counts, max_m)
    elm = theory.elm_effective_margins(counts, max_m, lam)
    colors = class_colors(C)
    rarest, commonest = int(np.argmin(counts)), int(np.argmax(counts))
    band = np.log(C - 1) / s
    fig, axes = plt.subplots(2, 2, figsize=(10, 9.2))
    plot_margin_lines(
        axes[0, 0],
        [(band, "tab:gray")],
        r"(a) plain CE on $s\mathbf{z}$ (LMSCE view): $\hat\rho/s$",
        [(-0.1, 0, band, rf"$\hat\rho/s \leq \log(C-1)/s$ = {band:.3f}")],
    )
    axes[0, 0].text(
        0.05,
        -0.45,
        "decision boundary\n$z_y = z_{c^*}$\n(= margin when one\nwrong logit dominates)",
        fontsize=8,
    )
    plot_margin_lines(
        axes[0, 1],
        [(delta[j], colors[j]) for j in range(C)],
        r"(b) LDAM: $\Delta_y$, one line per true class $y$",
        [
            (-0.45, 0, delta[rarest], rf"$\Delta_{rarest}$ = {delta[rarest]:.2f}"),
            (0.2, 0, delta[commonest], rf"$\Delta_{commonest}$ = {delta[commonest]:.2f}"),
        ],
    )
    for ax, yy, cc, tag in [
        (axes[1, 0], rarest, commonest, "c"),
        (axes[1, 1], commonest, rarest, "d"),
    ]:
        rival = (
            rf"$-\lambda\Delta_{cc}$ = {-lam * delta[cc]:.2f}"
            + f"\n(c* = {cc}: {elm[yy, cc]:+.3f})"
        )
        plot_margin_lines(
            ax,
            [(elm[yy, c], colors[c]) for c in range(C) if c != yy],
            rf"({tag}) ELM, true class {yy} (n = {counts[yy]}): $\Delta_y - \lambda\Delta_{{c^*}}$",
            [
                (-0.5, 0, delta[yy], rf"$\Delta_{yy}$ = {delta[yy]:.2f}"),
                (-0.15 if yy == rarest else 0.25, delta[yy], elm[yy, cc], rival),
            ],
            ldam=delta[yy],
        )
    handles = [
        plt.Line2D([], [], color=colors[j], label=f"class {j} (n = {counts[j]})") for j in range(C)
    ]
    fig.legend(
        handles=handles,
        loc="outside right center",
        title="line colour:\n(b) true class y\n(c, d) wrong class c*",
    )
    fig.suptitle(
        f"Hinge corners in the logit plane: CIFAR-10-LT rho = {imbalance_ratio}, M = {max_m}, "
        f"lambda = {lam}, s = {s}"
    )
    return fig


def plot_loss_against_gap(
    ax: mpl.axes.Axes,
    curves: Sequence[tuple[str, Callable, np.ndarray, object]],
    true_class: int,
    rival: int,
    counts: Sequence[int],
    *,
    s: float,
    others_below: float,
    gaps: np.ndarray,
) -> float:
    r"""The loss of one sample against the gap $z_y - z_{c^*}$ (notebook 05), one line per
    ``(label, loss(logits, target), margin matrix [y, c*], colour)`` of ``curves``, with the
    hinge corner each margin predicts (loss $\log 2$ at gap $m + \hat\rho/s$) as a dot and
    arrows for LDAM's $+\Delta_y$ and ELM's $-\lambda\Delta_{c^*}$ (``curves[1]`` and
    ``curves[2]``). Returns the largest $|$loss at a predicted corner $- \log 2|$."""
    C = len(counts)
    rho_s = np.log(1 + (C - 2) * np.exp(-s * others_below))  # rho_hat of these logits
    zz = theory.logits_along_gap(gaps, true_class, rival, C, others_below)
    target = torch.tensor([true_class])
    worst = 0.0
    for label, loss, margin, col in curves:
        values = [loss(zz[g : g + 1], target).item() for g in range(len(gaps))]
        corner = margin[true_class, rival] + rho_s / s  # loss = softplus(0) = log 2 here
        at = loss(theory.logits_along_gap([corner], true_class, rival, C, others_below), target)
        worst = max(worst, abs(at.item() - np.log(2)))
        ax.plot(gaps, values, color=col, label=f"{label} = {margin[true_class, rival]:+.3f}")
        ax.plot([corner], [np.log(2)], "o", color=col, ms=5)
    ax.axhline(np.log(2), color="k", lw=0.8, ls=":")
    ax.axvline(0, color="k", lw=0.8)
    c_ce, c_ldam, c_elm = (curves[i][2][true_class, rival] + rho_s / s for i in range(3))
    for start, end, height, text in [
        (c_ce, c_ldam, 2.6, rf"$+\Delta_{true_class}$"),
        (c_ldam, c_elm, 1.6, rf"$-\lambda\Delta_{rival}$"),
    ]:
        ax.annotate("", (end, height), (start, height), arrowprops={"arrowstyle": "->"})
        ax.text((start + end) / 2, height + 0.3, text, ha="center", fontsize=9)
    ax.set(
        title=f"true class {true_class} (n = {counts[true_class]}), strongest wrong class "
        f"{rival} (n = {counts[rival]})",
        ylim=(0, 12),
        xlabel=r"gap $z_y - z_{c^*}$ (cosine-logit units; right of 0 = correct)",
    )
    ax.legend(title=r"margin asked by the loss (plus $\hat\rho/s$)", loc="upper right")
    return worst


def plot_effective_margins(
    counts: Sequence[int], max_m: float, lam: float, *, imbalance_ratio: float
) -> mpl.figure.Figure:
    r"""Side-by-side heatmaps (seaborn) of the margin each loss asks of a pair (true class $y$,
    strongest wrong class $c^*$): LDAM's $\Delta_y$, ELM's $\Delta_y - \lambda\Delta_{c^*}$
    and ELM's without $\Delta_y$, on one diverging scale $[-M, M]$, each cell annotated (up to
    12 classes); the diagonal (no pair) is grey."""
    C = len(counts)
    d = theory.ldam_margins(counts, max_m)
    maps = {
        r"LDAM: $\Delta_y$": np.where(np.eye(C, dtype=bool), np.nan, np.tile(d[:, None], C)),
        r"ELM: $\Delta_y - \lambda\Delta_{c^*}$": theory.elm_effective_margins(counts, max_m, lam),
        r"ELM w/o $\Delta_y$: $-\lambda\Delta_{c^*}$": theory.elm_effective_margins(
            counts, max_m, lam, False
        ),
    }
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.2))
    for ax, (title, m) in zip(axes, maps.items(), strict=True):
        heatmap(
            ax,
            m,
            cmap="RdBu_r",
            vmin=-max_m,
            vmax=max_m,
            center=0,
            annot=C <= 12,
            fmt=".2f",
            xticklabels=_count_ticks(counts),
            yticklabels=[f"{j} ({n})" for j, n in enumerate(counts)],
        )
        ax.set_facecolor("0.85")  # the diagonal: NaN, no pair
        ax.tick_params(labelsize=7)
        ax.set(
            xlabel=r"strongest wrong class $c^*$ (count)",
            ylabel=r"true class $y$ (count)",
            title=title,
        )
    fig.colorbar(
        axes[0].collections[0],
        ax=axes,
        shrink=0.8,
        label=r"required lead $z_y - z_{c^*}$ (cosine logits, $+\hat\rho/s$)",
    )
    off = ~np.eye(C, dtype=bool)
    ldam_m, elm_m = list(maps.values())[:2]
    smaller = np.mean(elm_m[off] < ldam_m[off])
    fig.suptitle(
        f"CIFAR-10-LT rho = {imbalance_ratio}, M = {max_m:.2f}, lambda = {lam:.2f}: ELM's margin "
        f"is below LDAM's in {smaller:.0%} of the {off.sum()} pairs (ELM range "
        f"[{np.nanmin(elm_m):.3f}, {np.nanmax(elm_m):.3f}])"
    )
    return fig
