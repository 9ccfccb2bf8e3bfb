"""One figure style, one ``savefig``, and the plots that recur across notebooks.

Every figure a notebook shows is written by :func:`savefig` as
``figures/NN_<notebook-slug>_<what>.png`` (``figures/smoke/...`` in the ``smoke`` profile,
``figures/paper/...`` in the ``paper`` profile), so a figure can always be traced to the
notebook that made it. A notebook starts with :func:`setup_notebook`, which remembers its
name, sets the style and prints the profile, versions and device.

UMAP's numba functions compile once (about 40 s) and are cached in ``.cache/numba``
(``NUMBA_CACHE_DIR``); embeddings are cached by the caller (see ``palviz.experiments``).
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from palviz.files import atomic_write, cache_dir, figures_dir, resolve_profile

_NOTEBOOK_NAME = re.compile(r"^\d\d_[a-z0-9_]+$")
_current_notebook: str | None = None

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


def setup_notebook(notebook: str, profile: str | None = None) -> str:
    """Start a notebook: remember its name for :func:`savefig`, set the figure style,
    point numba's cache at ``.cache/numba`` and print profile, versions and device.

    ``notebook`` is the file name without extension, e.g. ``"01_simplex_prototypes"``.
    Returns the resolved profile (``profile``, else ``$PALVIZ_PROFILE``, else ``"quick"``).
    """
    global _current_notebook
    if not isinstance(notebook, str) or not _NOTEBOOK_NAME.match(notebook):
        raise ValueError(f"notebook must look like '01_simplex_prototypes', got {notebook!r}")
    profile = resolve_profile(profile)
    _current_notebook = notebook
    os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir() / "numba"))
    set_style()
    import torch

    import palviz

    device = "cuda (" + torch.cuda.get_device_name(0) + ")" if torch.cuda.is_available() else "cpu"
    print(
        f"{notebook} | profile: {profile} | palviz {palviz.__version__} | torch {torch.__version__}"
        f" | python {platform.python_version()} | device: {device}"
    )
    return profile


def figure_path(what: str, notebook: str | None = None, profile: str | None = None) -> Path:
    """Where :func:`savefig` writes figure ``what`` of ``notebook``."""
    notebook = notebook or _current_notebook
    if notebook is None:
        raise ValueError("notebook is not set: call setup_notebook('NN_name') first or pass it")
    if not re.match(r"^[a-z0-9_]+$", what):
        raise ValueError(f"what must be lower-case letters, digits and '_', got {what!r}")
    return figures_dir(resolve_profile(profile)) / f"{notebook}_{what}.png"


def savefig(
    fig: mpl.figure.Figure,
    what: str,
    *,
    notebook: str | None = None,
    profile: str | None = None,
    pdf: bool = False,
) -> Path:
    """Write ``fig`` as ``figures/NN_<slug>_<what>.png`` (and ``.pdf`` when ``pdf``),
    atomically, and return the PNG's path."""
    path = figure_path(what, notebook, profile)
    with atomic_write(path, "wb") as handle:
        fig.savefig(handle, format="png")
    if pdf:
        with atomic_write(path.with_suffix(".pdf"), "wb") as handle:
            fig.savefig(handle, format="pdf")
    return path


def class_colors(num_classes: int) -> np.ndarray:
    """``num_classes`` distinguishable RGBA colours (tab10 up to 10 classes, then turbo)."""
    if num_classes <= 10:
        return plt.get_cmap("tab10")(np.arange(num_classes))
    return plt.get_cmap("turbo")(np.linspace(0, 1, num_classes))


def format_accuracy(mean: float | None, std: float | None = None) -> str:
    """``"77.0 +- 0.4"`` in percent, or ``"n/a"`` for a missing value (an empty shot group)."""
    if mean is None or (isinstance(mean, float) and np.isnan(mean)):
        return "n/a"
    if std is None or np.isnan(std):
        return f"{100 * mean:.1f}"
    return f"{100 * mean:.1f} +- {100 * std:.1f}"


def plot_per_class_accuracy(
    ax: mpl.axes.Axes,
    per_class: Mapping[str, Sequence[float]],
    train_counts: Sequence[int],
    *,
    title: str | None = None,
) -> None:
    """Grouped bars of per-class test accuracy, one group per class, classes ordered by
    training count (most frequent left); the counts label the x axis."""
    counts = np.asarray(train_counts)
    order = np.argsort(-counts, kind="stable")
    names = list(per_class)
    width = 0.8 / max(len(names), 1)
    x = np.arange(len(counts))
    for i, name in enumerate(names):
        acc = np.asarray(per_class[name], dtype=float)[order]
        ax.bar(x + (i - (len(names) - 1) / 2) * width, 100 * acc, width, label=name)
    ax.set_xticks(x, [f"{c}\n(n={counts[c]})" for c in order], fontsize=7)
    ax.set_xlabel("class (training count), most frequent first")
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(0, 100)
    ax.legend(ncols=min(len(names), 4))
    if title:
        ax.set_title(title)


def plot_cosine_heatmap(ax: mpl.axes.Axes, cosines: np.ndarray, *, title: str | None = None):
    """Heatmap of a (k, k) matrix of prototype cosines on a fixed [-1, 1] colour scale."""
    image = ax.imshow(np.asarray(cosines), cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xlabel("class j")
    ax.set_ylabel("class i")
    for axis in (ax.xaxis, ax.yaxis):  # class numbers, never 2.5
        axis.set_major_locator(mpl.ticker.MaxNLocator(integer=True, nbins=10))
    ax.grid(False)
    if title:
        ax.set_title(title)
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


def umap_embedding(features: np.ndarray, *, seed: int = 0, n_neighbors: int = 15) -> np.ndarray:
    """2-D UMAP embedding of ``features`` (N, d) -> (N, 2), seeded.

    numba compiles UMAP's functions on first use; ``NUMBA_CACHE_DIR`` (set to
    ``.cache/numba`` here unless already set) keeps them for the next run.
    """
    features = np.asarray(features, dtype=np.float32)
    if features.ndim != 2 or len(features) < 3:
        raise ValueError(f"features must be (N >= 3, d), got shape {features.shape}")
    os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir() / "numba"))
    import umap

    reducer = umap.UMAP(
        n_components=2,
        n_neighbors=min(n_neighbors, len(features) - 1),
        random_state=seed,
        n_jobs=1,
    )
    return reducer.fit_transform(features)


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
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    if title:
        ax.set_title(title)


# ---- noisy-label plots (notebook 07) ----


def plot_transition_matrix(
    ax: mpl.axes.Axes,
    transition: np.ndarray,
    *,
    title: str | None = None,
    annotate: bool = True,
):
    r"""Heatmap of a realised noise transition matrix $T_{ij} = P(\tilde y = j \mid y = i)$
    (rows: clean class, columns: noisy label) on a fixed [0, 1] colour scale; with
    ``annotate``, every non-zero entry is written in percent. Returns the image (for a
    colour bar)."""
    T = np.asarray(transition, dtype=float)
    if T.ndim != 2 or T.shape[0] != T.shape[1]:
        raise ValueError(f"transition must be a square matrix, got shape {T.shape}")
    image = ax.imshow(T, cmap="Blues", vmin=0, vmax=1)
    k = len(T)
    if annotate and k <= 20:
        for i in range(k):
            for j in range(k):
                if T[i, j] > 0:
                    dark = T[i, j] > 0.55
                    ax.text(
                        j,
                        i,
                        f"{100 * T[i, j]:.0f}",
                        ha="center",
                        va="center",
                        fontsize=6.5,
                        color="white" if dark else "black",
                    )
    ticks = np.arange(k) if k <= 20 else np.arange(0, k, max(1, k // 10))
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.set_xlabel(r"noisy training label $j$")
    ax.set_ylabel(r"clean class $i$")
    ax.grid(False)
    if title:
        ax.set_title(title)
    return image


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
        # tick the measured x values themselves, written plainly (0.3, 1, 30)
        ticks = sorted({float(v) for x, _ in curves.values() for v in np.asarray(x, dtype=float)})
        ax.set_xscale("log")
        ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
        ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if curves:
        ax.legend()


def plot_accuracy_vs_noise(
    ax: mpl.axes.Axes,
    table: Mapping[str, Mapping[tuple[str, float], tuple[float, float, int]]],
    kind: str,
    *,
    title: str | None = None,
) -> None:
    """Test accuracy (%) against the noise rate, one line per method of ``table`` (as made by
    ``palviz.experiments.noisy_accuracy_table``) at noise ``kind``. A ``"<base>+FNPAL"`` method
    is drawn dashed in the colour of ``<base>``, so each pair reads at a glance; error bars
    show the standard deviation over seeds where there are several."""
    colours: dict[str, str] = {}
    cycle = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"] * 3)
    for label in table:
        base = label.removesuffix("+FNPAL")
        if base not in colours:
            colours[base] = next(cycle)
    for label, row in table.items():
        cells = sorted((eta, v) for (k, eta), v in row.items() if k == kind)
        if not cells:
            continue
        eta = np.array([c[0] for c in cells])
        mean = 100 * np.array([c[1][0] for c in cells])
        std = 100 * np.array([c[1][1] for c in cells])
        fnpal = label.endswith("+FNPAL")
        ax.errorbar(
            eta,
            mean,
            yerr=None if np.all(np.isnan(std)) else std,
            color=colours[label.removesuffix("+FNPAL")],
            ls="--" if fnpal else "-",
            marker="s" if fnpal else "o",
            ms=4,
            capsize=2,
            label=label,
        )
    etas = sorted({eta for row in table.values() for (k, eta) in row if k == kind})
    ax.set_xticks(etas, [f"{eta:g}" for eta in etas])
    ax.set_xlabel(rf"{kind} noise rate $\eta$")
    ax.set_ylabel("test accuracy (%)")
    if title:
        ax.set_title(title)


# ---- long-tailed plots (notebooks 06, 08) ----


def plot_per_class_bars(
    ax: mpl.axes.Axes,
    values: Mapping[str, Sequence[float] | np.ndarray],
    train_counts: Sequence[int],
    *,
    ylabel: str,
    percent: bool = False,
    ylim: tuple[float, float] | None = None,
    title: str | None = None,
    colors: Mapping[str, object] | None = None,
    legend: str | None = "outside",
) -> None:
    """Per-class values of several methods side by side, classes ordered by training count
    (most frequent left; class and count label the x axis).

    ``values[label]`` is ``[k]`` (one run) or ``[n_runs, k]`` (e.g. seeds): a bar shows the
    mean over runs and, with several runs, a black dot marks each run. With more than 20
    classes, one line per method (the mean) replaces the bars. ``percent`` multiplies by 100.
    ``legend``: ``"outside"`` (right of the axes), ``"inside"`` (matplotlib's best place) or
    ``None``.
    """
    counts = np.asarray(train_counts)
    k = len(counts)
    order = np.argsort(-counts, kind="stable")
    names = list(values)
    factor = 100.0 if percent else 1.0
    x = np.arange(k)
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        runs = np.atleast_2d(np.asarray(values[name], dtype=float))
        if runs.shape[1] != k:
            raise ValueError(f"values[{name!r}] must have {k} classes, got shape {runs.shape}")
        runs = factor * runs[:, order]
        mean = np.nanmean(runs, axis=0)
        color = None if colors is None else colors.get(name)
        n = len(runs)
        label = name if n == 1 else f"{name} (mean of {n})"
        if k > 20:
            ax.plot(x, mean, lw=1.2, label=label, color=color)
            continue
        pos = x + (i - (len(names) - 1) / 2) * width
        ax.bar(pos, mean, width, label=label, color=color)
        if n > 1:
            for run in runs:
                ax.plot(pos, run, "o", ms=2.2, color="black", alpha=0.7, lw=0)
    if k <= 20:
        ax.set_xticks(x, [f"{c}\nn={counts[c]}" for c in order], fontsize=7)
        ax.set_xlabel("class, and its training count (most frequent first)")
    else:
        ticks = np.arange(0, k, max(1, k // 10))
        ax.set_xticks(ticks, [f"{counts[order[t]]}" for t in ticks], fontsize=7)
        ax.set_xlabel("classes by training count (tick: the count), most frequent first")
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if legend == "outside":
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    elif legend == "inside":
        ax.legend(ncols=min(len(names), 3))
    if title:
        ax.set_title(title)


def plot_paired_runs(
    ax: mpl.axes.Axes,
    pairs: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    names: tuple[str, str] = ("without PAL", "with PAL"),
    ylabel: str,
    percent: bool = True,
    title: str | None = None,
) -> None:
    """For each entry ``{method: (runs_a, runs_b)}``: the runs of variant a (open circles,
    left) and variant b (filled, right) at the method's x position, a dot per run (seed) and a
    horizontal tick at each mean, joined by a thin line from mean a to mean b."""
    factor = 100.0 if percent else 1.0
    x = np.arange(len(pairs))
    for i, (a, b) in enumerate(pairs.values()):
        a = factor * np.asarray(a, dtype=float)
        b = factor * np.asarray(b, dtype=float)
        ax.plot([i - 0.15, i + 0.15], [a.mean(), b.mean()], color="0.6", lw=0.8, zorder=1)
        ax.scatter(
            np.full(len(a), i - 0.15),
            a,
            s=22,
            facecolors="white",
            edgecolors="C0",
            label=names[0] if i == 0 else None,
            zorder=2,
        )
        ax.scatter(
            np.full(len(b), i + 0.15),
            b,
            s=22,
            color="C3",
            label=names[1] if i == 0 else None,
            zorder=2,
        )
        for pos, v, c in ((i - 0.15, a, "C0"), (i + 0.15, b, "C3")):
            ax.plot([pos - 0.1, pos + 0.1], [v.mean()] * 2, color=c, lw=1.5, zorder=3)
    ax.set_xticks(x, list(pairs), fontsize=8)
    ax.set_xlim(-0.6, len(pairs) - 0.4)
    ax.set_ylabel(ylabel)
    ax.legend()
    if title:
        ax.set_title(title)


def save_markdown(
    text: str, what: str, *, notebook: str | None = None, profile: str | None = None
) -> Path:
    """Write ``text`` (e.g. a results table) as ``figures/NN_<slug>_<what>.md``, next to the
    figures and under the same profile folders as :func:`savefig`, atomically; returns the
    path."""
    path = figure_path(what, notebook, profile).with_suffix(".md")
    with atomic_write(path, "w") as handle:
        handle.write(text)
    return path


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
        ax.set_xscale("log")
        ax.set_xlabel("scale $s$ = feature norm $B$ (log scale)")
        ax.legend(loc="lower right")


def plot_minority_collapse(
    ax: mpl.axes.Axes,
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
    """Minority collapse in the layer-peeled model (notebook 02): the average pairwise cosine
    of the minority (and majority) classifiers over the imbalance ratio ``ratios`` (log ``x``).

    ``learned``, ``learned_unit`` (budget 1) and ``anchored`` are sweeps from
    :func:`palviz.theory.minority_collapse_sweep` (keys ``minority_cosine`` and
    ``majority_cosine``, one value per ratio); ``simplex_cosine`` is :math:`-1/(K-1)` and
    ``energy`` the budget :math:`E_W = E_H` of ``learned`` and ``anchored``."""
    curves = (
        (
            learned,
            "minority_cosine",
            dict(fmt="o-", ms=3, color="C3"),
            f"learned minority classifiers, $E_W = E_H = {energy:g}$",
        ),
        (
            learned_unit,
            "minority_cosine",
            dict(fmt="s:", ms=3, color="C1"),
            "learned minority classifiers, $E_W = E_H = 1$",
        ),
        (
            learned,
            "majority_cosine",
            dict(fmt="-", lw=1, color="C3", alpha=0.5),
            f"learned majority classifiers, $E_W = E_H = {energy:g}$",
        ),
        (
            anchored,
            "minority_cosine",
            dict(fmt="-", lw=2.5, color="C0"),
            "anchored prototypes (PAL), any budget",
        ),
    )
    for sweep, key, style, label in curves:
        style = dict(style)
        ax.semilogx(ratios, sweep[key], style.pop("fmt"), label=label, **style)
    ax.axhline(simplex_cosine, color="k", ls="--", lw=1)
    ax.annotate(
        f"simplex: $-1/(K-1) = {simplex_cosine:.3f}$",
        (1.1, simplex_cosine),
        xytext=(0, -14),
        textcoords="offset points",
        fontsize=8,
    )
    ax.axhline(1, color="0.5", ls=":", lw=1)
    ax.annotate(
        "collapse: cosine 1",
        (1.1, 1),
        xytext=(0, -12),
        textcoords="offset points",
        fontsize=8,
    )
    ax.set_xlabel("imbalance ratio $R = n_A / n_B$ (log scale)")
    ax.set_ylabel("average pairwise cosine")
    ax.set_ylim(-0.3, 1.1)
    ax.set_title(
        f"Layer-peeled model, $k_A = {k_major}$ majority and $k_B = {k_minor}$ minority classes"
    )
    ax.legend(loc="center left", bbox_to_anchor=(0.2, 0.62))


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
        ax.set_aspect("equal")
        ax.set_xlim(-1.3, 1.3)
        ax.set_ylim(-1.3, 1.3)
    else:
        ax.set_box_aspect((1, 1, 1))
        ax.set_zlabel("$x_3$")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")


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
    counts = np.asarray(counts)
    order = np.argsort(-counts, kind="stable")
    colors = [None] * len(values) if colors is None else list(colors)
    for (label, v), color in zip(values.items(), colors, strict=True):
        ax.plot(np.asarray(v)[order], "o-", ms=4, color=color, label=label)
    if reference is not None:
        ax.axhline(reference, color="k", lw=0.8)
    ax.set_xticks(range(len(order)), [f"{c}\n(n={counts[c]})" for c in order], fontsize=7)
    ax.set_xlabel("class (training count), most frequent first")
    ax.set_ylabel(ylabel)
    ax.legend()
