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
    ax.grid(False)
    if title:
        ax.set_title(title)
    return image


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
