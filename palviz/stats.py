r"""
# Paired comparisons over seeds: intervals, p-values, Holm, verdicts

Two methods run on the same $n$ seeds give one result each per seed: $a_i$ for the baseline,
$b_i$ for the method. Runs with the same seed share the data subset, the label-noise draw and
the initialisation, so the per-seed difference removes what the two runs have in common and
the spread left is the spread of the *difference*. Every equation below is named by the
comment beside the line that computes it.

**The paired difference** (:func:`paired_difference`)

$$d_i = b_i - a_i, \qquad i = 1, \dots, n \tag{1}$$

$$\bar d = \frac{1}{n} \sum_{i=1}^{n} d_i \tag{2}$$

$$s = \sqrt{\frac{1}{n - 1} \sum_{i=1}^{n} (d_i - \bar d)^2} \tag{3}$$

the sample standard deviation (``ddof=1``). Its Student-t interval at confidence $c$ is

$$\bar d \pm t_{(1+c)/2,\, n-1} \, \frac{s}{\sqrt{n}} \tag{4}$$

with the t quantile of $n - 1$ degrees of freedom: with the 3 to 5 seeds a profile affords,
the normal quantile (1.96) would be far too narrow ($t_{0.975, 4} = 2.78$,
$t_{0.975, 2} = 4.30$). One pair has no spread: no $s$, no interval, no p-value.

**The paired t-test** of "mean difference 0", two-sided, with $F_{n-1}$ the distribution
function of Student's t with $n - 1$ degrees of freedom:

$$T = \frac{\bar d}{s / \sqrt{n}}, \qquad p = 2 \bigl(1 - F_{n-1}(|T|)\bigr) \tag{5}$$

and, when every pair differs by the same amount ($s = 0$), $p = 1$ if $\bar d = 0$, else
$p = 0$. The interval (4) excludes 0 exactly when $p < 1 - c$ (the same quantile).

**The exact sign-flip p-value** (:func:`sign_flip_p`): under "no difference" each pair's
sign is a fair coin, so among the $2^n$ sign patterns $\varepsilon \in \{-1, +1\}^n$

$$p_{\text{flip}} = \frac{1}{2^n} \, \#\Bigl\{\varepsilon : \Bigl|\frac{1}{n} \sum_{i}
\varepsilon_i d_i\Bigr| \ge |\bar d| \Bigr\} \ \ge\ \frac{2}{2^n} \tag{6}$$

It assumes only that, under "no difference", each $d_i$ is as likely as $-d_i$ (differences
symmetric about 0) and is exact, but coarse: its smallest attainable value
(:func:`sign_flip_floor`) is

$$p_{\text{flip}, \min} = \frac{2}{2^n} \ \text{(two-sided)}, \qquad \frac{1}{2^n} \
\text{(one-sided)} \tag{6a}$$

so with fewer than 6 pairs it cannot fall below 0.05 (two-sided). The t-test (5) assumes
normal paired differences and has no such floor.

**Holm's step-down correction** (:func:`holm`) of $m$ p-values sorted
$p_{(1)} \le \dots \le p_{(m)}$:

$$\tilde p_{(i)} = \max_{j \le i} \, \min\bigl(1, (m - j + 1) \, p_{(j)}\bigr) \tag{7}$$

Rejecting where $\tilde p < \alpha$ keeps the chance of any false verdict in the family at
most $\alpha$, whatever the dependence between the comparisons.

**The verdict on one interval** (:func:`verdict`) of a claim of direction $\delta = \pm 1$
(+1: the method is claimed better):

$$\text{consistent} \iff \delta \, [\ell, h] \subset (0, \infty), \qquad
\text{contradicted} \iff \delta \, [\ell, h] \subset (-\infty, 0) \tag{8}$$

else (0 inside or on the edge, or no interval) inconclusive.

**The verdict on a family** (:func:`family_verdict`) of $K$ comparisons with means
$\bar d_k$, p-values $p_k$, their Holm-adjusted $\tilde p_k$ and directions $\delta_k$. A
member is *on the claimed side* at level $\alpha$ when

$$\text{for}_k(q) = q_k < \alpha \,\wedge\, \operatorname{sign} \bar d_k = \delta_k,
\qquad \text{against}_k(q) = q_k < \alpha \,\wedge\, \operatorname{sign} \bar d_k =
-\delta_k \tag{9}$$

read with $q = p$ (no correction) or $q = \tilde p$ (Holm). A conclusion that needs *every*
member is an intersection-union test: the family's null hypothesis is the union of the
members' ("some member does not hold"), and rejecting it when each member's own test at
level $\alpha$ rejects is already a level-$\alpha$ test, so it reads the unadjusted $p_k$.
A conclusion that *one* member suffices for reads Holm's $\tilde p_k$, because any of $K$
chances would do. So, as one of :data:`READINGS`:

$$\text{"all"}: \ \text{consistent} \iff \forall k\ \text{for}_k(p), \quad
\text{contradicted} \iff \exists k\ \text{against}_k(\tilde p) \tag{10}$$

$$\text{"any"}: \ \text{consistent} \iff \exists k\ \text{for}_k(\tilde p), \quad
\text{contradicted} \iff \forall k\ \text{against}_k(p) \tag{11}$$

(``"single"`` is "all" of one member, where $\tilde p = p$); else inconclusive, and not run
when no member has runs.

:mod:`palviz.experiments.claims` reads the papers' claims with these.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from palviz.checks import check_range, invalid

__all__ = [
    "CONSISTENT",
    "CONTRADICTED",
    "INCONCLUSIVE",
    "NOT_RUN",
    "READINGS",
    "PairedDifference",
    "check_direction",
    "family_verdict",
    "holm",
    "paired_difference",
    "sign_flip_floor",
    "sign_flip_p",
    "verdict",
]

CONSISTENT = "consistent"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive at this size"
NOT_RUN = "not run in this profile"

#: How a family of comparisons is read: ``"all"`` (the text says every setting: each member
#: must hold, each at its own p-value), ``"any"`` (at least one, after Holm's correction),
#: ``"single"`` (one comparison); :func:`family_verdict` says which reading corrects what.
READINGS = ("all", "any", "single")


# ------------------------------------------------------------------------ paired difference


@dataclass(frozen=True)
class PairedDifference:
    """Per-seed differences ``method - baseline`` summarised: ``n`` pairs, their ``mean`` and
    sample standard deviation ``sd`` (``ddof=1``), and the ``confidence`` interval
    ``[ci_low, ci_high]`` by ``method`` ("t": Student's t with n - 1 degrees of freedom),
    the two-sided paired t-test's ``p_value`` for "mean difference 0" and the exact
    sign-flip permutation ``p_signflip`` (:func:`sign_flip_p`). With one pair ``sd``, the
    interval and the p-values are NaN and ``note`` says why."""

    n: int
    mean: float
    sd: float
    ci_low: float
    ci_high: float
    method: str = "t"
    confidence: float = 0.95
    note: str = ""
    p_value: float = float("nan")
    p_signflip: float = float("nan")


def _as_series(name: str, values: Any) -> pd.Series:
    """``values`` as a float Series; a Series keeps its index (the seeds), anything else is
    indexed 0, 1, ... (paired by position)."""
    if isinstance(values, pd.Series):
        series = values
    elif isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise invalid(name, values, "a sequence of numbers or a pandas Series indexed by seed")
    else:
        series = pd.Series(list(values), dtype=object)
    try:
        series = series.astype(float)
    except (TypeError, ValueError):
        raise invalid(name, values, "numbers") from None
    if series.index.has_duplicates:
        seeds = series.index[series.index.duplicated()].unique().tolist()
        raise invalid(name, values, f"one value per seed (seeds {seeds} appear twice)")
    if series.isna().any():
        raise invalid(name, values, "free of NaN (a missing run is left out, not NaN)")
    return series


def paired_difference(
    baseline: Sequence[float] | pd.Series,
    method: Sequence[float] | pd.Series,
    confidence: float = 0.95,
) -> PairedDifference:
    """The per-seed differences ``method - baseline`` and their Student-t interval.

    Two pandas Series are paired by their index (the seed) and must hold the same seeds; two
    sequences (or a sequence and a Series) are paired by position and must have the same
    length. The interval is ``mean +- t_{(1+c)/2, n-1} * sd / sqrt(n)`` (``c`` =
    ``confidence``, ``sd`` with ``ddof=1``). Pairing by seed is what makes this a paired
    interval: both runs of a seed saw the same data subset, noise draw and initialisation.

    With a single pair there is no spread to estimate: ``sd``, ``ci_low`` and ``ci_high`` are
    NaN and ``note`` says so (and :func:`verdict` calls that inconclusive).

    Raises:
        ValueError: naming the argument: no values, NaN values, different seeds (Series),
            different lengths (sequences), or ``confidence`` outside ``(0, 1)``.
    """
    confidence = check_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    a = _as_series("baseline", baseline)
    b = _as_series("method", method)
    if isinstance(baseline, pd.Series) and isinstance(method, pd.Series):
        if set(a.index) != set(b.index):
            raise invalid(
                "method",
                sorted(b.index.tolist()),
                f"runs of the same seeds as baseline ({sorted(a.index.tolist())})",
            )
        b = b.loc[a.index]
    elif len(a) != len(b):
        raise invalid("method", list(b), f"as long as baseline ({len(a)} values)")
    else:
        b = pd.Series(b.to_numpy(), index=a.index)
    if len(a) == 0:
        raise invalid("baseline", list(a), "at least one value")
    diff = (b - a).to_numpy(dtype=float)  # (1) d_i = b_i - a_i
    n = len(diff)
    mean = float(diff.mean())  # (2) the mean difference
    if n < 2:
        nan = float("nan")
        note = "one seed: no spread to estimate, no interval"
        return PairedDifference(n, mean, nan, nan, nan, "t", confidence, note)
    sd = float(diff.std(ddof=1))  # (3) s, with n - 1 in the denominator
    # (4) the half-width t_{(1+c)/2, n-1} s / sqrt(n)
    half = float(scipy_stats.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
    if sd > 0:  # (5) p = 2 (1 - F_{n-1}(|T|)), T = mean / (s / sqrt(n))
        p = float(2 * scipy_stats.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1))
    else:  # every pair differs by the same amount: no doubt about the sign unless it is 0
        p = 1.0 if mean == 0 else 0.0
    return PairedDifference(
        n, mean, sd, mean - half, mean + half, "t", confidence, "", p, sign_flip_p(diff)
    )


def sign_flip_p(differences: Sequence[float]) -> float:
    """The exact two-sided sign-flip permutation p-value of paired ``differences``: under
    "no difference" each pair's sign is a fair coin, so the p-value is the share of the
    ``2**n`` sign patterns whose mean is at least as far from 0 as the observed one. It
    assumes only differences symmetric about 0 under "no difference", and is exact, but coarse:
    with n pairs it is never below :func:`sign_flip_floor` ``(n)`` = ``2 / 2**n``, so it
    cannot fall below 0.05 with fewer than 6 pairs. NaN for fewer than 2 pairs; up to 16
    pairs (65,536 patterns)."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n < 2:
        return float("nan")
    if n > 16:
        raise invalid("differences", f"{n} values", "at most 16 pairs (2**n sign patterns)")
    # (6) every pattern eps in {-1, +1}^n, one row each: bit k of the row number flips pair k
    signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
    means = np.abs(signs @ d) / n  # (6) |1/n sum_i eps_i d_i| per pattern
    # (6) the share of patterns at least as far from 0 as |mean d| (a rounding margin kept)
    return float(np.mean(means >= abs(d.mean()) * (1 - 1e-12)))


def sign_flip_floor(n: int, two_sided: bool = True) -> float:
    """The smallest p-value the exact sign-flip test (:func:`sign_flip_p`) can reach with ``n``
    pairs: only the observed pattern and (two-sided) its mirror image are as extreme when
    every difference has the same sign, so ``2 / 2**n`` two-sided, ``1 / 2**n`` one-sided.

    Raises:
        ValueError: ``n`` not an integer >= 1.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise invalid("n", n, "an integer >= 1 (the number of pairs)")
    patterns = 2 ** int(n)  # (6) the 2^n sign patterns, each of probability 1 / 2^n
    return (2 if two_sided else 1) / patterns  # (6a) 2 / 2^n two-sided, 1 / 2^n one-sided


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (NaN entries, comparisons that could not
    be tested, are left NaN and not counted): with the m tested p-values sorted,
    ``p_(1) <= ... <= p_(m)``, the adjusted ``p_(i)`` is ``max_{j <= i} min(1, (m - j + 1)
    p_(j))``. Rejecting where the adjusted value is below alpha keeps the chance of any false
    verdict in the family at most alpha, whatever the dependence between the comparisons."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    m = len(tested)  # (7) m counts the tested p-values only
    running = 0.0
    # (7) in increasing order of p; rank = j - 1, so m - rank = m - j + 1
    for rank, i in enumerate(tested[np.argsort(p[tested], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[i]))  # (7) max_{j<=i} min(1, ...)
        out[i] = running
    return out.tolist()


# ----------------------------------------------------------------------------- verdicts


def check_direction(value: Any, name: str = "direction") -> int:
    """``value`` as the direction of a claim, +1 (the method is claimed better) or -1 (worse);
    anything else raises ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value not in (1, -1):
        raise invalid(name, value, "+1 (the method is claimed better) or -1 (worse)")
    return int(value)


def verdict(ci_low: float, ci_high: float, direction: int = +1) -> str:
    """How an interval of ``method - baseline`` reads against a claim of ``direction``:

    - :data:`CONSISTENT` (``"consistent"``) when the whole interval lies on the claimed side
      of 0 (``direction=+1``, the method better: ``ci_low > 0``; ``-1``: ``ci_high < 0``);
    - :data:`CONTRADICTED` (``"contradicted"``) when it lies wholly on the other side;
    - :data:`INCONCLUSIVE` (``"inconclusive at this size"``) when it contains 0 (or touches
      it), or is NaN (a single seed).
    """
    direction = check_direction(direction)
    lo, hi = float(ci_low), float(ci_high)
    if math.isnan(lo) or math.isnan(hi):
        return INCONCLUSIVE
    if lo > hi:
        raise invalid("ci_low", ci_low, f"<= ci_high ({ci_high!r})")
    if lo > 0:  # (8) the whole interval above 0
        return CONSISTENT if direction > 0 else CONTRADICTED
    if hi < 0:  # (8) the whole interval below 0
        return CONSISTENT if direction < 0 else CONTRADICTED
    return INCONCLUSIVE


def family_verdict(
    reading: str,
    means: Sequence[float],
    p_values: Sequence[float],
    directions: Sequence[int],
    alpha: float = 0.05,
    run: Sequence[bool] | None = None,
) -> str:
    """The verdict on a family of comparisons from its members' mean differences, their
    unadjusted two-sided ``p_values`` and the claimed ``directions``. A member is *for* the
    claim at a p-value below ``alpha`` with its mean on the claimed side, *against* it below
    ``alpha`` on the other side.

    A conclusion about *every* member is an intersection-union test: each member's own test
    at level ``alpha`` is already a level-``alpha`` test of the family, so it reads the
    unadjusted ``p_values``. A conclusion that *one* member suffices for reads them after
    Holm's correction (:func:`holm`) across the family:

    - ``"all"`` (and ``"single"``): :data:`CONSISTENT` when every member is for the claim
      (unadjusted), :data:`CONTRADICTED` when some member is against it after Holm (one
      setting where the method is measurably worse refutes "in all cases"), else
      :data:`INCONCLUSIVE`;
    - ``"any"``: consistent when some member is for it after Holm, contradicted when every
      member is against it (unadjusted), else inconclusive;
    - :data:`NOT_RUN` when no member was run (``run``: which members have runs; default: those
      with a finite mean).
    """
    if reading not in READINGS:
        raise invalid("reading", reading, f"one of {READINGS}")
    means, p = np.asarray(means, dtype=float), np.asarray(p_values, dtype=float)
    dirs = np.asarray([check_direction(x) for x in directions])
    if not (len(means) == len(p) == len(dirs)) or len(means) == 0:
        raise invalid("means", list(means), "one value per member, as many as p_values, >= 1")
    ran = ~np.isnan(means) if run is None else np.asarray(run, dtype=bool)
    if not ran.any():
        return NOT_RUN
    adjusted = np.asarray(holm(p), dtype=float)  # (7) Holm across the family

    def side(q: np.ndarray, sign: int) -> np.ndarray:
        # (9) q_k < alpha and sign d_k = sign * delta_k (NaN: not tested, never significant)
        return ~np.isnan(q) & (q < alpha) & (np.sign(means) == sign * dirs)

    if reading == "any":
        if side(adjusted, +1).any():  # (11) some member for the claim, after Holm
            return CONSISTENT
        return CONTRADICTED if side(p, -1).all() else INCONCLUSIVE  # (11) every one against
    if side(adjusted, -1).any():  # (10) some member against the claim, after Holm
        return CONTRADICTED
    return CONSISTENT if side(p, +1).all() else INCONCLUSIVE  # (10) every one for, unadjusted
