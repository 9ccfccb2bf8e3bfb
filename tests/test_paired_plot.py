"""plot_paired_runs joins each seed's baseline dot to the same seed's method dot."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from palviz import plots  # noqa: E402
from palviz.plots.paired import PAIR_LINE_LABEL  # noqa: E402


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def _pair_lines(ax, method):
    """The joining lines of ``method``, ``{seed as text: ((x0, y0), (x1, y1))}``."""
    prefix = f"seed pair {method}: "
    lines = [line for line in ax.get_lines() if (line.get_gid() or "").startswith(prefix)]
    out = {}
    for line in lines:
        x, y = line.get_xdata(), line.get_ydata()
        assert len(x) == len(y) == 2  # one segment per line
        out[line.get_gid().removeprefix(prefix)] = ((x[0], y[0]), (x[1], y[1]))
    assert len(out) == len(lines)  # one line per seed
    return out


def _dots(ax, method_index):
    """The (x, y) of the baseline's and the method's dots of the ``method_index``-th method."""
    baseline, method = ax.collections[2 * method_index : 2 * method_index + 2]
    return baseline.get_offsets(), method.get_offsets()


def test_sequences_are_joined_by_position_one_line_per_seed(ax):
    pairs = {"CE": ([0.5, 0.6, 0.55], [0.7, 0.65, 0.8]), "LDAM": ([0.6], [0.62])}
    plots.plot_paired_runs(ax, pairs, ylabel="%", percent=False)
    for i, (method, (a, b)) in enumerate(pairs.items()):
        lines = _pair_lines(ax, method)
        assert len(lines) == len(a)
        dots_a, dots_b = _dots(ax, i)
        xa, xb = dots_a[0, 0], dots_b[0, 0]
        assert xa < i < xb  # the baseline left of the method's tick, the method right
        for seed, (va, vb) in enumerate(zip(a, b, strict=True)):
            assert lines[str(seed)] == ((xa, va), (xb, vb))
            # the endpoints are the dots themselves
            assert tuple(dots_a[seed]) == (xa, va) and tuple(dots_b[seed]) == (xb, vb)


def test_series_are_paired_by_seed_whatever_their_order(ax):
    baseline = pd.Series({0: 0.50, 1: 0.60, 2: 0.55, 7: 0.40})
    method = pd.Series({7: 0.45, 2: 0.70, 0: 0.65, 1: 0.58})  # shuffled index
    plots.plot_paired_runs(ax, {"CE": (baseline, method)}, ylabel="%")
    lines = _pair_lines(ax, "CE")
    assert len(lines) == 4
    dots_a, dots_b = _dots(ax, 0)
    xa, xb = dots_a[0, 0], dots_b[0, 0]
    for seed in baseline.index:
        (x0, y0), (x1, y1) = lines[str(seed)]
        assert (x0, x1) == (xa, xb)
        assert y0 == pytest.approx(100 * baseline[seed]) and y1 == pytest.approx(100 * method[seed])
    # the mean ticks stay: one per side, at the mean over seeds
    ticks = [line for line in ax.get_lines() if line.get_gid() is None]
    means = sorted(line.get_ydata()[0] for line in ticks if len(set(line.get_ydata())) == 1)
    assert means == pytest.approx(sorted([100 * baseline.mean(), 100 * method.mean()]))


def test_the_legend_says_what_a_line_is(ax):
    plots.plot_paired_runs(
        ax, {"CE": ([0.5, 0.6], [0.7, 0.8]), "LDAM": ([0.6], [0.65])}, ylabel="%"
    )
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["without PAL", "with PAL", PAIR_LINE_LABEL]
    assert PAIR_LINE_LABEL == "line: one seed's pair"
    assert "one seed's pair" in plots.plot_paired_runs.__doc__
    assert len(ax.collections) == 4  # the dots: two scatters per method, as before


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ([0.5, 0.6, 0.7], [0.7, 0.8], "3 seeds"),
        (pd.Series({0: 0.5, 1: 0.6}), pd.Series({0: 0.7, 2: 0.8}), "different seeds"),
        (pd.Series({0: 0.5, 1: 0.6}), pd.Series({0: 0.7, 1: 0.8, 2: 0.9}), "different seeds"),
        (pd.Series([0.5, 0.6], index=[0, 0]), pd.Series({0: 0.7, 1: 0.8}), "repeats"),
        (pd.Series({0: 0.5, 1: 0.6}), [0.7, 0.8], "Series"),
        ([], [], "non-empty"),
    ],
)
def test_mismatched_seeds_raise_naming_the_argument(ax, a, b, message):
    with pytest.raises(ValueError, match=r"pairs\['LDAM'\]") as error:
        plots.plot_paired_runs(ax, {"CE": ([0.5], [0.6]), "LDAM": (a, b)}, ylabel="%")
    assert message in str(error.value)


def test_custom_names_appear_in_the_error(ax):
    with pytest.raises(ValueError, match="'CE\\+FNPN'.*2 seeds.*'CE\\+FNPAL' 1"):
        plots.plot_paired_runs(
            ax,
            {"s = 1": (np.array([0.5, 0.6]), np.array([0.7]))},
            names=("CE+FNPN", "CE+FNPAL"),
            ylabel="%",
        )
