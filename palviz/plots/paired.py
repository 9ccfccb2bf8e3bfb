"""The paired-runs figure of notebooks 06 and 07: a dot per seed for a method without and with
PAL, each seed's two dots joined, so that the slope of a line is that seed's paired difference,
the difference the statistics of the notebooks rest on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib as mpl
import numpy as np
import pandas as pd

__all__ = ["plot_paired_runs"]


#: The legend entry of the grey lines of :func:`plot_paired_runs`.
PAIR_LINE_LABEL = "line: one seed's pair"


def _seed_pairs(
    method: object, runs_a: object, runs_b: object, names: tuple[str, str]
) -> tuple[list, np.ndarray, np.ndarray]:
    """``(seeds, values_a, values_b)`` of one entry of :func:`plot_paired_runs`, the two sides
    paired by seed: two pandas Series by their index (``seeds`` is the index of ``runs_a``,
    ``runs_b`` reordered to it), two sequences by position (``seeds`` is ``0, 1, ...``)."""
    where = f"pairs[{method!r}]"
    series = (isinstance(runs_a, pd.Series), isinstance(runs_b, pd.Series))
    if any(series) and not all(series):
        raise ValueError(
            f"{where}: {names[0]!r} is {'a Series' if series[0] else 'a sequence'} and "
            f"{names[1]!r} {'a Series' if series[1] else 'a sequence'}; give both as pandas "
            "Series indexed by seed or both as sequences in the same seed order"
        )
    if all(series):
        for name, side in zip(names, (runs_a, runs_b), strict=True):
            if side.index.has_duplicates:
                repeated = sorted(set(side.index[side.index.duplicated()]), key=str)
                raise ValueError(f"{where}: {name!r} repeats the seeds {repeated}")
        only_a = [s for s in runs_a.index if s not in runs_b.index]
        only_b = [s for s in runs_b.index if s not in runs_a.index]
        if only_a or only_b:
            raise ValueError(
                f"{where}: the two sides hold different seeds: only {names[0]!r} has "
                f"{only_a}, only {names[1]!r} has {only_b}"
            )
        seeds = list(runs_a.index)
        runs_b = runs_b.reindex(runs_a.index)
    a = np.asarray(runs_a, dtype=float)
    b = np.asarray(runs_b, dtype=float)
    for name, values in zip(names, (a, b), strict=True):
        if values.ndim != 1 or len(values) == 0:
            raise ValueError(
                f"{where}: {name!r} must be a non-empty 1-D sequence of values, one per seed, "
                f"got shape {values.shape}"
            )
    if len(a) != len(b):
        raise ValueError(
            f"{where}: {names[0]!r} has {len(a)} seeds and {names[1]!r} {len(b)}; each seed "
            "needs a value on both sides (sequences are paired by position)"
        )
    if not all(series):
        seeds = list(range(len(a)))
    return seeds, a, b


def plot_paired_runs(
    ax: mpl.axes.Axes,
    pairs: Mapping[str, tuple[Sequence[float] | pd.Series, Sequence[float] | pd.Series]],
    *,
    names: tuple[str, str] = ("without PAL", "with PAL"),
    ylabel: str,
    percent: bool = True,
    title: str | None = None,
) -> None:
    """Paired runs, per seed: for each entry ``{method: (runs_a, runs_b)}``, the runs of
    variant a (the baseline, ``names[0]``; open circles, left) and variant b (``names[1]``;
    filled, right) at the method's x position, a dot per run (seed), a thin grey line from
    each seed's a dot to the same seed's b dot (legend: "line: one seed's pair"), and a
    horizontal tick at each side's mean over seeds.

    The seeds of a and b share their data, label noise and initialisation, so the slope of a
    line is that seed's difference, the paired difference the statistics of the notebooks
    rest on. ``runs_a`` and ``runs_b`` are both pandas Series indexed by seed (paired by the
    index, in any order) or both sequences in the same seed order (paired by position);
    ``ValueError`` (naming ``pairs[method]``) if the two sides hold different seeds or a
    different number of values, or if only one side is a Series. ``percent`` multiplies the
    values by 100."""
    factor = 100.0 if percent else 1.0
    # (label, x offset, colour, dot style): open circles left, filled dots right
    sides = (
        (names[0], -0.15, "C0", {"facecolors": "white", "edgecolors": "C0"}),
        (names[1], 0.15, "C3", {"color": "C3"}),
    )
    for i, (method, (runs_a, runs_b)) in enumerate(pairs.items()):
        seeds, a, b = _seed_pairs(method, runs_a, runs_b, names)
        a, b = factor * a, factor * b
        for (name, offset, colour, dots), v in zip(sides, (a, b), strict=True):
            pos = i + offset
            label = name if i == 0 else None
            ax.scatter(np.full(len(v), pos), v, s=22, label=label, zorder=2, **dots)
            ax.plot([pos - 0.1, pos + 0.1], [v.mean()] * 2, color=colour, lw=1.5, zorder=3)
        # drawn after the dots (below them by zorder): the legend lists the two sides first
        for j, (seed, va, vb) in enumerate(zip(seeds, a, b, strict=True)):
            ax.plot(
                [i - 0.15, i + 0.15],
                [va, vb],
                color="0.6",
                lw=0.8,
                zorder=1,
                gid=f"seed pair {method}: {seed}",
                label=PAIR_LINE_LABEL if i == j == 0 else None,
            )
    ax.set_xticks(np.arange(len(pairs)), list(pairs), fontsize=8)
    ax.set(xlim=(-0.6, len(pairs) - 0.4), ylabel=ylabel, title=title)
    ax.legend()
