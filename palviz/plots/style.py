"""The palviz figure style and class colours: the base the figure modules share.

:mod:`palviz.plots.theory`, :mod:`palviz.plots.margins`, :mod:`palviz.plots.experiments` and
:mod:`palviz.plots` import this module; it imports no figure module (and no other palviz module).
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

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
