"""One figure style, one ``savefig``, class colours, the sliders of the notebooks and UMAP.

Every figure a notebook shows is written by :func:`savefig` as
``figures/NN_<notebook-slug>_<what>.png`` (``figures/smoke/...`` in the ``smoke`` profile,
``figures/paper/...`` in the ``paper`` profile), so a figure can always be traced to the
notebook that made it. A notebook starts with :func:`setup_notebook`, which remembers its
name, sets the style and prints the profile, versions and device.

UMAP's numba functions compile once (about 40 s) and are cached in ``.cache/numba``
(``NUMBA_CACHE_DIR``); embeddings are cached by the caller (see ``palviz.experiments``).

The recurring plots live beside this module: :mod:`palviz.plots.theory` (the figures of the
theory notebooks 01-04), :mod:`palviz.plots.margins` (the margins of LDAM and ELM, notebook
05), :mod:`palviz.plots.experiments` (the experiment figures of 06-08,
seaborn on the tidy frame of :func:`palviz.experiments.tables.results_frame`),
:mod:`palviz.plots.paired` (paired runs per seed, notebooks 06 and 07) and
:mod:`palviz.plots.budget` (accuracy against SGD steps, notebooks 06 and 07). Their public names
are also importable from here (``from palviz.plots import plot_lines``), as are the style and the
class colours of :mod:`palviz.plots.style`, which the plot modules share with its axis set-ups.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from palviz.files import atomic_write, cache_dir, figures_dir, resolve_profile
from palviz.plots import budget, experiments, margins, paired, style, theory
from palviz.plots.budget import *  # noqa: F403
from palviz.plots.experiments import *  # noqa: F403
from palviz.plots.geometry import plot_collapse_over_training
from palviz.plots.margins import *  # noqa: F403
from palviz.plots.paired import *  # noqa: F403
from palviz.plots.style import *  # noqa: F403
from palviz.plots.theory import *  # noqa: F403

#: This module's own names and the public names of the plot modules and the style (each
#: module's ``__all__``).
__all__ = [
    "figure_path",
    "format_accuracy",
    "plot_collapse_over_training",
    "save_markdown",
    "savefig",
    "setup_notebook",
    "sliders",
    "umap_embedding",
    "WIDGET_NOTE",
    "widgets_shown",
    *budget.__all__,
    *experiments.__all__,
    *margins.__all__,
    *paired.__all__,
    *style.__all__,
    *theory.__all__,
]

_NOTEBOOK_NAME = re.compile(r"^\d\d_[a-z0-9_]+$")
_current_notebook: str | None = None
_current_profile: str | None = None


def setup_notebook(notebook: str, profile: str | None = None) -> str:
    """Start a notebook: remember its name and profile for :func:`savefig` (a notebook run with
    ``PROFILE = "paper"`` writes into the paper profile's figures), set the figure style,
    point numba's cache at ``.cache/numba`` and print profile, versions and device, and where
    its numbers hold (:func:`palviz.cpu.exactness`).

    ``notebook`` is the file name without extension, e.g. ``"01_simplex_prototypes"``.
    Returns the resolved profile (``profile``, else ``$PALVIZ_PROFILE``, else ``"quick"``).
    """
    global _current_notebook, _current_profile
    if not isinstance(notebook, str) or not _NOTEBOOK_NAME.match(notebook):
        raise ValueError(f"notebook must look like '01_simplex_prototypes', got {notebook!r}")
    profile = resolve_profile(profile)
    _current_notebook, _current_profile = notebook, profile
    os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir() / "numba"))
    style.set_style()
    import torch

    import palviz
    from palviz.cpu import exactness

    device = "cuda (" + torch.cuda.get_device_name(0) + ")" if torch.cuda.is_available() else "cpu"
    print(
        f"{notebook} | profile: {profile} | palviz {palviz.__version__} | torch {torch.__version__}"
        f" | python {platform.python_version()} | device: {device}\n"
        f"{exactness('cpu' if device == 'cpu' else 'cuda')} (docs/results.md)"
    )
    return profile


def figure_path(what: str, notebook: str | None = None, profile: str | None = None) -> Path:
    """Where :func:`savefig` writes figure ``what`` of ``notebook`` (default: the notebook and
    profile :func:`setup_notebook` was given)."""
    notebook = notebook or _current_notebook
    profile = profile or _current_profile
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


def format_accuracy(mean: float | None, std: float | None = None) -> str:
    """``"77.0 ± 0.4"`` in percent, or ``"n/a"`` for a missing value (an empty shot group)."""
    if mean is None or (isinstance(mean, float) and np.isnan(mean)):
        return "n/a"
    if std is None or np.isnan(std):
        return f"{100 * mean:.1f}"
    return f"{100 * mean:.1f} ± {100 * std:.1f}"


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


def _slider(name: str, spec: Any):
    """An ipywidgets control from ``spec``: a widget is used as it is; a tuple
    ``(value, min, max[, step][, description])`` becomes an ``IntSlider`` when value, min and
    max are integers, else a ``FloatSlider``; ``(value, choices[, description])``, ``choices``
    a list of values or of ``(label, value)`` pairs, a ``Dropdown``. The description
    defaults to ``name``."""
    import ipywidgets as widgets

    if isinstance(spec, widgets.Widget):
        return spec
    parts = list(spec)
    description = parts.pop() if parts and isinstance(parts[-1], str) else name
    if len(parts) == 2 and isinstance(parts[1], list):
        value, choices = parts
        return widgets.Dropdown(options=choices, value=value, description=description)
    if len(parts) not in (3, 4):
        raise ValueError(
            f"slider {name!r} must be a widget, (value, min, max[, step][, description]) or "
            f"(value, [choices][, description]), got {spec!r}"
        )
    value, low, high, *step = parts
    integer = all(isinstance(v, int) for v in (value, low, high, *step))
    cls = widgets.IntSlider if integer else widgets.FloatSlider
    kw = {"step": step[0]} if step else {}
    return cls(
        value=value, min=low, max=high, description=description, continuous_update=False, **kw
    )


#: What stands in for the sliders where no kernel can move them (the course pages, a kernel
#: that a program runs).
WIDGET_NOTE = (
    '<div class="palviz-widget-note"><em>Interactive controls (sliders) appear here when the '
    "notebook runs in JupyterLab (<code>make lab</code>); this page shows the figure for the "
    "default values above.</em></div>"
)


def widgets_shown() -> bool:
    """Whether :func:`sliders` shows its controls in this kernel: ``$PALVIZ_WIDGETS`` ``"1"``
    shows them, ``"0"`` never; unset, only in a kernel a person drives: one that JupyterLab
    (or another Jupyter Server front end, which sets ``$JPY_SESSION_NAME``) or VS Code
    (``$VSCODE_PID``) started. A kernel that a program runs (``palviz figures``, papermill,
    nbmake) shows the note instead: no one can move a slider there, and a displayed widget
    can leave the program waiting for a reply that never comes."""
    chosen = os.environ.get("PALVIZ_WIDGETS")
    if chosen in ("0", "1"):
        return chosen == "1"
    return bool(os.environ.get("JPY_SESSION_NAME") or os.environ.get("VSCODE_PID"))


def sliders(draw: Callable[..., Any], *, enabled: bool = True, **controls: Any) -> None:
    """Show ipywidgets controls that redraw ``draw(**values)`` whenever one moves: the one
    way a lesson shows a widget.

    ``controls`` maps each keyword argument of ``draw`` to a widget or a tuple (see
    :func:`_slider`), e.g. ``sliders(draw, num_classes=(10, 2, 30, "k"), dim=(16, 2, 40, "d"))``.
    ``draw`` makes a figure (returning it or leaving it current); it is shown with ``plt.show``
    and closed. Nothing is shown when not ``enabled`` (e.g. in the ``smoke`` profile) or
    without ipywidgets; :data:`WIDGET_NOTE` stands in for the controls where
    :func:`widgets_shown` says no. Returns ``None``: a cell that ends with the call must not
    show the controls a second time as its value."""
    if not enabled:
        return None
    if not widgets_shown():
        from IPython.display import HTML, display

        display(HTML(WIDGET_NOTE))
        return None
    try:
        import ipywidgets as widgets
        from IPython.display import display
    except ImportError:
        return None

    def show(**values: Any) -> None:
        fig = draw(**values)
        fig = fig if isinstance(fig, mpl.figure.Figure) else plt.gcf()
        plt.show()
        plt.close(fig)

    display(widgets.interactive(show, **{k: _slider(k, v) for k, v in controls.items()}))
