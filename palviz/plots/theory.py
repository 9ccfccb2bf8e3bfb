"""The figures of the theory notebooks 01-04: simplex prototypes and their angles, minority
collapse in the layer-peeled model, per-class norms and Lipschitz constants against the scale
(the margins of LDAM and ELM, notebook 05, are :mod:`palviz.plots.margins`). Each function
draws on axes it is given (or returns a figure) and leaves saving to
:func:`palviz.plots.savefig`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib as mpl
import numpy as np

from palviz.metrics import VANISHED_NORM
from palviz.plots.style import class_colors, count_order

__all__ = [
    "plot_cosine_heatmap",
    "plot_angle_histogram",
    "plot_pairwise_cosine_histograms",
    "plot_simplex_prototypes",
    "plot_min_angle_vs_dim",
    "plot_minority_collapse",
    "plot_gamma_min_vs_ratio",
    "plot_per_class_lines",
    "plot_lipschitz_vs_b",
    "plot_noise_aware_scale",
]


def plot_cosine_heatmap(ax: mpl.axes.Axes, cosines: np.ndarray, *, title: str | None = None):
    """Heatmap of a (k, k) matrix of prototype cosines on a fixed [-1, 1] colour scale."""
    image = ax.imshow(np.asarray(cosines), cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set(xlabel="class j", ylabel="class i", title=title)
    for axis in (ax.xaxis, ax.yaxis):  # class numbers, never 2.5
        axis.set_major_locator(mpl.ticker.MaxNLocator(integer=True, nbins=10))
    ax.grid(False)
    return image


def plot_angle_histogram(ax: mpl.axes.Axes, angles_deg: np.ndarray, num_classes: int) -> None:
    """Histogram of pairwise prototype angles with the simplex angle arccos(-1/(k-1)) dashed.

    The bins follow the data: when every angle sits within a degree of the simplex angle
    (as it does once the simplex is found), the axis zooms in so the bar is visible."""
    angles = np.asarray(angles_deg, dtype=float)
    simplex = float(np.degrees(np.arccos(-1.0 / (num_classes - 1))))
    lo, hi = min(angles.min(), simplex), max(angles.max(), simplex)
    pad = max(0.5, 0.1 * (hi - lo))
    bins = np.linspace(lo - pad, hi + pad, 41)
    ax.hist(angles, bins=bins, color="C0", label=f"{len(angles)} prototype pairs")
    ax.axvline(simplex, color="C3", ls="--", label=f"simplex angle {simplex:.2f}°")
    ax.set_xlim(bins[0], bins[-1])
    ax.set_xlabel("pairwise angle (degrees)")
    ax.set_ylabel("number of prototype pairs")
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.22), ncols=2, fontsize=8)


def plot_pairwise_cosine_histograms(
    ax_full: mpl.axes.Axes,
    ax_zoom: mpl.axes.Axes,
    cosines: Mapping[str, np.ndarray],
    *,
    num_classes: int,
    dim: int,
    zoom: Sequence[str],
    colors: Sequence[str] = ("0.6", "C0", "C3"),
) -> None:
    """Histograms of pairwise prototype cosines (notebook 01).

    ``cosines`` maps a label to the :math:`k(k-1)/2` off-diagonal cosines of one prototype set
    (drawn in ``colors`` order); ``ax_full`` shows them all on :math:`[-1, 1]` (log counts)
    with the simplex value :math:`-1/(k-1)` dashed, ``ax_zoom`` the distance from that value in
    millionths for the labels in ``zoom`` (values beyond :math:`\\pm 20` are piled at the
    edges)."""
    k = num_classes
    for (label, cos), color in zip(cosines.items(), colors, strict=True):
        cos = np.asarray(cos)
        ax_full.hist(cos, bins=np.linspace(-1, 1, 201), color=color, alpha=0.7, label=label)
        if label in zoom:
            error_in_millionths = np.clip(1e6 * (cos + 1 / (k - 1)), -20, 20)
            ax_zoom.hist(
                error_in_millionths, np.linspace(-20, 20, 81), color=color, alpha=0.6, label=label
            )
    for ax in (ax_full, ax_zoom):
        ax.set_ylabel("number of prototype pairs")
    ax_full.set_yscale("log")
    ax_full.axvline(-1 / (k - 1), color="k", ls="--", lw=1, label=f"-1/(k-1) = {-1 / (k - 1):.4f}")
    ax_full.set_xlabel(r"pairwise cosine $w_i^\top w_j$")
    ax_full.set_title(f"k = {k} prototypes in d = {dim}: all {k * (k - 1) // 2} pairs")
    ax_full.legend(loc="upper left")
    ax_zoom.axvline(0, color="k", ls="--", lw=1)
    ax_zoom.set_xlabel(r"$(w_i^\top w_j + 1/(k-1)) \times 10^{6}$")
    ax_zoom.set_title(
        "zoom: distance from $-1/(k-1)$ (the check allows $\\pm 1000 \\times 10^{-6}$)"
    )
    ax_zoom.legend()


def plot_simplex_prototypes(ax: mpl.axes.Axes, W: np.ndarray) -> None:
    """Unit prototypes ``W`` (``[k, d]``, ``d`` = 2 or 3) as arrows from the origin, vertices
    joined, on the unit circle (``d = 2``, equal aspect) or inside a wire-frame unit sphere
    (``d = 3``; ``ax`` must be a 3-D axes), as in notebook 01's triangle and tetrahedron.
    Axis labels are set; the title is the caller's."""
    import itertools

    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    W = np.asarray(W)
    k, d = W.shape
    colors = class_colors(k)
    t = np.linspace(0, 2 * np.pi, 60)
    if d == 2:
        ax.plot(np.cos(t), np.sin(t), color="0.8", lw=1)
        ax.fill(*W[[*range(k), 0]].T, color="C0", alpha=0.08)
    else:
        u, v = np.meshgrid(t, np.linspace(0, np.pi, 30))
        sphere = np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)
        ax.plot_wireframe(*sphere, color="0.75", lw=0.4, rstride=3, cstride=4)
        faces = [W[list(face)] for face in itertools.combinations(range(k), 3)]
        ax.add_collection3d(Poly3DCollection(faces, facecolor="C0", edgecolor="none", alpha=0.08))
        for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
            axis.set_ticks([-1, 0, 1])
            axis.set_pane_color((1, 1, 1, 0))
    for i in range(k):
        for j in range(i + 1, k):
            ax.plot(*W[[i, j]].T, color="0.3", lw=1)
        ax.plot(*np.stack([np.zeros(d), W[i]]).T, color=colors[i], lw=2.5)
        ax.scatter(*W[i], color=colors[i], s=40, zorder=5)
        ax.text(*(1.15 * W[i]), f"$w_{i + 1}$", ha="center", va="center")
    if d == 2:
        ax.set(aspect="equal", xlim=(-1.3, 1.3), ylim=(-1.3, 1.3))
    else:
        ax.set(box_aspect=(1, 1, 1), zlabel="$x_3$")
    ax.set(xlabel="$x_1$", ylabel="$x_2$")


def plot_min_angle_vs_dim(
    ax: mpl.axes.Axes,
    min_angles: Mapping[int, float],
    *,
    simplex_angle: float,
    num_classes: int,
    seed: int,
) -> None:
    """Minimum pairwise prototype angle (degrees) reached for each feature dimension ``d``
    (``min_angles = {d: angle}``, notebook 01), against the simplex angle ``simplex_angle``
    (dashed; it needs ``d >= k - 1``) and the regular ``k``-gon's :math:`360°/k` at ``d = 2``
    (star)."""
    k = num_classes
    dims = list(min_angles)
    ax.plot(
        dims, [min_angles[d] for d in dims], "o-", label="min angle reached by minimising $L_0$"
    )
    ax.axhline(
        simplex_angle,
        color="C3",
        ls="--",
        label=f"simplex angle arccos(-1/(k-1)) = {simplex_angle:.2f}° (needs d ≥ {k - 1})",
    )
    ax.plot([2], [360 / k], "k*", ms=12, label=f"regular {k}-gon on the circle: 360°/k")
    for d in dims:
        ax.annotate(
            f"{min_angles[d]:.1f}°",
            (d, min_angles[d]),
            textcoords="offset points",
            xytext=(0, -14),
            ha="center",
            fontsize=8,
        )
    ax.set_xticks(dims)
    ax.set_xlabel("feature dimension d")
    ax.set_ylabel("minimum pairwise angle (degrees)")
    ax.set_title(f"k = {k} prototypes in d < k - 1 dimensions (seed {seed})")
    ax.set_ylim(0, simplex_angle + 15)
    ax.legend(loc="lower right")


def plot_minority_collapse(
    ax: mpl.axes.Axes,
    ax_norm: mpl.axes.Axes,
    ratios: Sequence[float],
    learned: Mapping[str, np.ndarray],
    learned_unit: Mapping[str, np.ndarray],
    anchored: Mapping[str, np.ndarray],
    *,
    simplex_cosine: float,
    energy: float,
    k_major: int,
    k_minor: int,
) -> None:
    """Minority collapse in the layer-peeled model (notebook 02) over the imbalance ratio
    ``ratios`` (log ``x``): on ``ax`` the average pairwise cosine of the minority (and
    majority) classifiers, on ``ax_norm`` the minority classifiers' mean norm beside it.

    ``learned``, ``learned_unit`` (budget 1) and ``anchored`` are sweeps from
    :func:`palviz.theory.minority_collapse_sweep` (keys ``minority_cosine``,
    ``majority_cosine``, ``minority_norm`` and ``minority_vanished``, one value per ratio);
    ``simplex_cosine`` is :math:`-1/(K-1)` and ``energy`` the budget :math:`E_W = E_H` of
    ``learned`` and ``anchored``. Where the minority classifiers vanished the cosine is
    undefined (NaN, a gap in the curve): those ratios are marked with crosses at the top of
    ``ax``, and ``ax_norm`` shows the tolerance :data:`palviz.metrics.VANISHED_NORM` below
    which a norm counts as vanished (relative to :math:`\\sqrt{E_W}`)."""
    ratios = np.asarray(ratios)
    sweeps = (
        (learned, energy, dict(fmt="o-", ms=3, color="C3"), f"$E_W = E_H = {energy:g}$"),
        (learned_unit, 1.0, dict(fmt="s:", ms=3, color="C1"), "$E_W = E_H = 1$"),
    )
    for sweep, E, style, budget in sweeps:
        style = dict(style)
        fmt = style.pop("fmt")
        ax.semilogx(
            ratios, sweep["minority_cosine"], fmt, label=f"learned minority, {budget}", **style
        )
        relative = np.asarray(sweep["minority_norm"]) / np.sqrt(E)  # ||w_k|| / sqrt(E_W)
        ax_norm.loglog(ratios, relative, fmt, label=f"learned minority, {budget}", **style)
        gone = np.asarray(sweep["minority_vanished"], dtype=bool)
        if gone.any():
            ax.semilogx(
                ratios[gone],
                np.full(gone.sum(), 1.05),
                "x",
                color=style["color"],
                label=f"{budget}: minority classifiers vanished, cosine undefined",
            )
    ax.semilogx(
        ratios,
        learned["majority_cosine"],
        "-",
        lw=1,
        color="C3",
        alpha=0.5,
        label=f"learned majority, $E_W = E_H = {energy:g}$",
    )
    ax.semilogx(
        ratios, anchored["minority_cosine"], "-", lw=2.5, color="C0", label="anchored (PAL)"
    )
    ax_norm.loglog(
        ratios,
        np.asarray(anchored["minority_norm"]) / np.sqrt(energy),
        "-",
        lw=2.5,
        color="C0",
        label="anchored (PAL)",
    )
    # (cosine, colour, line style, text written below the line at R = 1.1, its drop in points)
    levels = (
        (simplex_cosine, "k", "--", f"simplex: $-1/(K-1) = {simplex_cosine:.3f}$", -14),
        (1, "0.5", ":", "cosine 1: same direction", -12),
    )
    for y, colour, ls, text, drop in levels:
        ax.axhline(y, color=colour, ls=ls, lw=1)
        ax.annotate(text, (1.1, y), xytext=(0, drop), textcoords="offset points", fontsize=8)
    ax.set_xlabel("imbalance ratio $R = n_A / n_B$ (log scale)")
    ax.set_ylabel("average pairwise cosine")
    ax.set_ylim(-0.3, 1.1)
    ax.set_title(f"Layer-peeled model, $k_A = {k_major}$ majority, $k_B = {k_minor}$ minority")
    ax.legend(loc="center left", fontsize=7)
    ax_norm.axhline(VANISHED_NORM, color="k", ls="--", lw=1, label="vanished below this")
    ax_norm.set_xlabel("imbalance ratio $R$ (log scale)")
    ax_norm.set_ylabel(r"mean minority $\|w_k\| / \sqrt{E_W}$")
    ax_norm.set_title("the minority classifiers' length")
    ax_norm.legend(loc="lower left", fontsize=7)


def plot_gamma_min_vs_ratio(
    ax_unit: mpl.axes.Axes,
    ax_raw: mpl.axes.Axes,
    ratios: Sequence[float],
    learned: Mapping[str, np.ndarray],
    anchored: Mapping[str, np.ndarray],
    *,
    gamma_max: float,
    energy: float,
) -> None:
    """The minimal margin :math:`\\gamma_{\\min}` of the layer-peeled model over the imbalance
    ratio (notebook 02): PAL's normalised margin (keys ``gamma_min_normalized``) on
    ``ax_unit``, with its largest possible value ``gamma_max`` = :math:`1 + 1/(K-1)` dashed,
    and the margin as solved (``gamma_min``) on ``ax_raw``, for the ``learned`` and
    ``anchored`` sweeps."""
    for ax, key in [(ax_unit, "gamma_min_normalized"), (ax_raw, "gamma_min")]:
        ax.semilogx(ratios, learned[key], "o-", ms=3, color="C3", label="learned classifiers")
        ax.semilogx(
            ratios,
            anchored[key],
            "-",
            lw=2.5,
            color="C0",
            label="anchored prototypes (PAL)",
        )
        ax.set_xlabel("imbalance ratio $R$ (log scale)")
        ax.axhline(0, color="0.5", lw=0.8)
        ax.legend()
    ax_unit.axhline(
        gamma_max,
        color="k",
        ls="--",
        lw=1,
        label=f"largest possible: $1 + 1/(K-1) = {gamma_max:.3f}$",
    )
    ax_unit.legend()
    ax_unit.set_ylabel(r"$\gamma_{\min}$ (unit $w$ and $h$)")
    ax_unit.set_title("normalised margin (PAL's definition)")
    ax_raw.set_ylabel(r"$\gamma_{\min}$ (as solved, $E_W = E_H = " + f"{energy:g}$)")
    ax_raw.set_title("unnormalised margin in the layer-peeled model")


def plot_per_class_lines(
    ax: mpl.axes.Axes,
    values: Mapping[str, Sequence[float]],
    counts: Sequence[int],
    *,
    ylabel: str,
    colors: Sequence | None = None,
    reference: float | None = None,
) -> None:
    """One line per entry of ``values`` (``{label: per-class values}``, indexed by class),
    classes ordered by training ``counts``, most frequent first, each tick naming the class and
    its count (notebook 03's norms and confidences). ``colors`` gives one colour per line;
    ``reference`` draws a thin black horizontal line at that value (e.g. 0)."""
    order = count_order(ax, counts)
    colors = [None] * len(values) if colors is None else list(colors)
    for (label, v), color in zip(values.items(), colors, strict=True):
        ax.plot(np.asarray(v)[order], "o-", ms=4, color=color, label=label)
    if reference is not None:
        ax.axhline(reference, color="k", lw=0.8)
    ax.set_ylabel(ylabel)
    ax.legend()


def plot_lipschitz_vs_b(
    ax: mpl.axes.Axes,
    b: Sequence[float],
    lambda_pal: Sequence[float],
    case3: Sequence[float],
    k_bound: float,
    *,
    num_classes: int,
    numeric: Mapping[str, Mapping[float, float]] | None = None,
) -> None:
    """PAL's Proposition 4.5 against Section A.7.2 (notebook 04): the Lipschitz constant of
    CE summed over labels versus the feature norm ``b`` on a log ``y`` axis.

    ``lambda_pal`` and ``case3`` are the closed forms evaluated at ``b`` (anchored simplex and
    the unit-learnable-prototype lower bound), ``k_bound`` the case-2 bound ``k``; ``numeric``
    (``{"anchored": {B: estimate}, "unanchored": {B: estimate}}``, either optional) adds the
    gradient-ascent estimates as open markers."""
    ax.semilogy(
        b,
        case3,
        color="C3",
        label="case 3: unit learnable $w$, $\\|z\\| = B$ (lower bound)",
    )
    ax.axhline(
        k_bound,
        color="C1",
        ls="--",
        label="case 2: unit learnable $w$, free $z$: $\\geq k$",
    )
    ax.semilogy(
        b,
        lambda_pal,
        color="C0",
        lw=2,
        label="$\\lambda_{PAL}$: anchored simplex, $\\|z\\| = B$",
    )
    if numeric:
        markers = (
            ("anchored", "o", "C0", 8, "gradient ascent, anchored $W$"),
            ("unanchored", "s", "C3", 7, "gradient ascent, free unit $W$"),
        )
        for key, marker, color, size, label in markers:
            xs = sorted(numeric.get(key, {}))
            if xs:
                ax.plot(
                    xs,
                    [numeric[key][v] for v in xs],
                    marker,
                    mfc="none",
                    color=color,
                    ms=size,
                    label=label,
                )
    ax.set_xlabel("feature norm $B = \\|z\\|$ (= scale $s$ in FNPAL)")
    ax.set_ylabel("Lipschitz constant of $L_W(z)$")
    ax.set_title(f"k = {num_classes}: CE summed over labels")
    ax.legend(loc="lower right")


def plot_noise_aware_scale(
    ax_lambda: mpl.axes.Axes,
    ax_confidence: mpl.axes.Axes,
    s: Sequence[float],
    lambda_pal: Sequence[float],
    max_confidence: Sequence[float],
    chosen: Sequence[tuple[float, float, float, float]],
    *,
    num_classes: int,
) -> None:
    """The trade-off of FNPAL's scale (notebook 04): ``lambda_pal`` (robustness, log scale) on
    ``ax_lambda`` and the largest confidence ``max_confidence`` (fitting ability) on
    ``ax_confidence``, both over the scales ``s`` (log ``x`` axis). ``chosen`` rows
    ``(eta, s, lambda, p_max)`` mark the noise-aware scale picked for each noise rate."""
    k = num_classes
    ax_lambda.plot(s, lambda_pal, color="C0", label="$\\lambda_{PAL}(s)$")
    ax_confidence.plot(s, max_confidence, color="C2", label="$p_{\\max}(s)$")
    for i, (eta, s_eta, lam, p) in enumerate(chosen):
        # label beside the point: left for the first, then alternately above-left and below-right
        offset, align = (
            [((-6, 8), "right"), ((6, -14), "left")][i % 2] if i else ((-10, -3), "right")
        )
        for ax, value in ((ax_lambda, lam), (ax_confidence, p)):
            ax.plot(s_eta, value, "o", color="k", ms=6)
            ax.annotate(
                f"η = {eta:g}",
                (s_eta, value),
                textcoords="offset points",
                xytext=offset,
                ha=align,
                fontsize=8,
            )
    ax_lambda.axhline(k, color="0.5", ls=":", lw=1, label="$k$ (limit as $s \\to \\infty$)")
    ax_confidence.axhline(1 / k, color="0.5", ls=":", lw=1, label="$1/k$ (uniform, $s \\to 0$)")
    ax_lambda.set_ylabel("Lipschitz constant $\\lambda_{PAL}$\n(lower: tighter noise bound)")
    ax_confidence.set_ylabel("largest confidence $p_{\\max}$\n(higher: more fitting ability)")
    ax_lambda.set_title("Robustness side: $\\lambda_{PAL}(s)$")
    ax_confidence.set_title("Fitting side: $p_{\\max}(s)$")
    ax_lambda.set_yscale("log")
    ax_confidence.set_ylim(0, 1.05)
    for ax in (ax_lambda, ax_confidence):
        ax.set(xscale="log", xlabel="scale $s$ = feature norm $B$ (log scale)")
        ax.legend(loc="lower right")
