"""The "budget lesson" figure of notebooks 06 and 07: test accuracy (and the training accuracy
on the possibly noisy labels, a running mean over each epoch) against SGD steps, with the
profile's stop and the paper's budget marked. Its curves come from
:func:`palviz.experiments.budget.budget_frame`."""

from __future__ import annotations

import matplotlib as mpl
import pandas as pd

from palviz.checks import check_bool, check_choice, check_int

__all__ = ["plot_budget"]


def _curves(frame: pd.DataFrame, label: str, key: str) -> pd.DataFrame:
    """``key`` in % of each run of ``label`` (one column a run) against the step, only the
    steps every run has."""
    part = frame[frame["label"] == label]
    table = part.pivot(index="step", columns="run", values=key)
    return 100 * table.dropna().sort_index()


def plot_budget(
    ax: mpl.axes.Axes,
    frame: pd.DataFrame,
    *,
    quick_steps: int | None,
    paper_steps: int | None = None,
    show_train: bool = True,
    band: str = "minmax",
    title: str | None = None,
) -> mpl.axes.Axes:
    """Test accuracy (%) against SGD steps for each label of ``frame``
    (:func:`palviz.experiments.budget.budget_frame`: a label's runs, one per seed): the mean
    over seeds as a solid line and a band across seeds (``band="minmax"``: from the lowest to
    the highest seed; ``"sd"``: mean +- one sample standard deviation; no band for one seed),
    the legend saying which. The step of an evaluation is the end of its epoch,
    ``(epoch + 1) * steps_per_epoch``; only steps every seed evaluated are drawn.

    With ``show_train``, the training accuracy (on the noisy labels in a noisy run), the mean
    over seeds of ``train_acc`` of the history, is a dashed line of the same colour, labelled
    ``"<label>: training accuracy (running mean over each epoch)"`` (``"<label>: training
    accuracy on the noisy labels (running mean over each epoch)"`` in a noisy run), and the y
    axis reads ``"accuracy (%)"`` over ``"(dashed: training, running mean over each epoch)"``
    (``"test accuracy (%)"`` without ``show_train``). ``train_acc`` is accumulated over the
    batches of the epoch while the weights change (in training mode, with any augmentation),
    not the accuracy of the end-of-epoch model on the training set, so it is not the fit at
    the end of training; while the fit improves, it trails it.

    A dotted vertical line marks ``quick_steps``, where the profile stops. The paper's budget
    ``paper_steps`` is a dash-dotted vertical line when it lies within the axis (up to 1.25
    times the longest run or ``quick_steps``, the axis then extended to it), else a legend
    entry with an arrow, ``"paper: 19,400 steps"`` with its multiple of ``quick_steps``.
    Returns ``ax``."""
    band = check_choice("band", band, ("minmax", "sd"))
    show_train = check_bool("show_train", show_train)
    for name, value in (("quick_steps", quick_steps), ("paper_steps", paper_steps)):
        if value is not None:
            check_int(name, value, 1)
    band_text = "min-max" if band == "minmax" else "+-1 sd"
    longest = 0
    for i, label in enumerate(frame["label"].unique()):
        color = f"C{i % 10}"
        test = _curves(frame, label, "test_acc")
        n = test.shape[1]
        mean = test.mean(axis=1)
        what = f"mean of {n} seeds, {band_text} band" if n > 1 else "1 seed"
        ax.plot(mean.index, mean.to_numpy(), color=color, lw=1.6, label=f"{label}: test ({what})")
        if n > 1:
            if band == "minmax":
                low, high = test.min(axis=1), test.max(axis=1)
            else:
                sd = test.std(axis=1, ddof=1)
                low, high = mean - sd, mean + sd
            ax.fill_between(
                mean.index, low.to_numpy(), high.to_numpy(), color=color, alpha=0.18, lw=0
            )
        longest = max(longest, int(test.index.max()) if len(test) else 0)
        if show_train:
            train = _curves(frame, label, "train_acc")
            on = " on the noisy labels" if frame.loc[frame["label"] == label, "noisy"].any() else ""
            what = f"{label}: training accuracy{on} (running mean over each epoch)"
            curve = train.mean(axis=1).to_numpy()
            ax.plot(train.index, curve, color=color, lw=1.1, ls="--", label=what)
            longest = max(longest, int(train.index.max()) if len(train) else 0)
    right = max(longest, quick_steps or 0)
    if quick_steps is not None:
        stops = f"this profile stops: {quick_steps:,} steps"
        ax.axvline(quick_steps, color="0.3", ls=":", lw=1.2, label=stops)
    if paper_steps is not None:
        text = f"paper: {paper_steps:,} steps"
        if paper_steps <= 1.25 * right:
            ax.axvline(paper_steps, color="0.1", ls="-.", lw=1.2, label=text)
            right = max(right, paper_steps)
        else:
            if quick_steps:
                text += f" ({paper_steps / quick_steps:.0f}x this profile)"
            # an entry of the legend, so it never covers a curve or another label
            text += ", off the axis to the right"
            ax.plot([], [], ls="none", marker=r"$\rightarrow$", ms=10, color="0.1", label=text)
    ax.set_xlim(0, 1.03 * right if right else None)
    ax.set_xlabel("SGD steps (epochs x batches per epoch)")
    dashed = "accuracy (%)\n(dashed: training, running mean over each epoch)"
    ax.set_ylabel(dashed if show_train else "test accuracy (%)")
    ax.legend(loc="best")
    if title:
        ax.set_title(title)
    return ax
