"""The papers' claims, each read against a confidence interval of our own runs, never asserted.

A claim ("PAL improves CE by ... at rho = 100") becomes a comparison of two methods in one
setting: for every seed, the difference ``method - baseline`` of one metric. The seeds pair
the runs: runs with the same seed share the data subset (long-tailed draw, training subset),
the label-noise draw and the initialisation, so the per-seed difference removes what the two
runs have in common and the spread left is the spread of the *difference*
(:func:`paired_difference`). The interval is Student's t,
``mean +- t_{(1+c)/2, n-1} * sd / sqrt(n)`` with ``sd`` the sample standard deviation
(``ddof=1``) of the n differences: with the 3 to 5 seeds a profile affords, the normal
quantile (1.96) would be far too narrow (t_{0.975, 4} = 2.78, t_{0.975, 2} = 4.30).

:func:`verdict` reads the interval: "consistent" when all of it lies on the side the paper
claims, "contradicted" when all of it lies on the other side, else "inconclusive at this
size" (a small profile often cannot tell; that is a finding about the profile, not about the
paper). :func:`evaluate_claims` makes one row per claim, :func:`write_claims` keeps them in
``figures/<profile>/claims.csv`` (one file per profile, notebooks merged into it) and
:func:`claims_markdown` prints them.
"""

from __future__ import annotations

import math
import numbers
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock
import numpy as np
import pandas as pd
from scipy import stats

from palviz.checks import check_range, invalid
from palviz.files import atomic_write, figures_dir, resolve_profile

__all__ = [
    "family_verdict",
    "READINGS",
    "holm",
    "sign_flip_p",
    "CLAIM_COLUMNS",
    "CONSISTENT",
    "CONTRADICTED",
    "INCONCLUSIVE",
    "NOT_RUN",
    "Claim",
    "QUOTES",
    "Quote",
    "PairedDifference",
    "claims_explanation",
    "claims_markdown",
    "claims_summary",
    "claim_runs",
    "claims_path",
    "evaluate_claims",
    "long_tailed_claims",
    "noisy_claims",
    "paired_difference",
    "read_claims",
    "read_claims_file",
    "verdict",
    "write_claims",
]

CONSISTENT = "consistent"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive at this size"
NOT_RUN = "not run in this profile"

#: The columns of :func:`evaluate_claims` and of ``claims.csv``, in order. A claim is a
#: family of comparisons: one ``level == "family"`` row (its verdict under its ``reading``,
#: with Holm's correction across its members) above one ``level == "member"`` row per
#: comparison.
CLAIM_COLUMNS = (
    "profile",
    "notebook",
    "family",
    "level",
    "reading",
    "claim",
    "source",
    "comparison",
    "metric",
    "seeds",
    "n_seeds",
    "mean_diff",
    "ci_low",
    "ci_high",
    "p_value",
    "p_signflip",
    "p_holm",
    "verdict",
    "steps_per_run",
    "paper_steps",
)

#: How a family of comparisons is read: ``"all"`` (the text says every setting: each member
#: must be consistent after Holm's correction), ``"any"`` (at least one), ``"single"`` (one
#: comparison).
READINGS = ("all", "any", "single")

_NUMBER_COLUMNS = (
    "n_seeds",
    "mean_diff",
    "ci_low",
    "ci_high",
    "p_value",
    "p_signflip",
    "p_holm",
    "steps_per_run",
    "paper_steps",
)
_TEXT_COLUMNS = tuple(c for c in CLAIM_COLUMNS if c not in _NUMBER_COLUMNS)

#: Metrics of :func:`palviz.experiments.tables.results_frame` that are accuracies (fractions),
#: reported by :func:`evaluate_claims` in percentage points.
_ACCURACY_METRICS = ("last_acc", "best_acc", "many", "medium", "few")

_NOTEBOOK = re.compile(r"^\d\d$")


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
    diff = (b - a).to_numpy(dtype=float)
    n = len(diff)
    mean = float(diff.mean())
    if n < 2:
        nan = float("nan")
        note = "one seed: no spread to estimate, no interval"
        return PairedDifference(n, mean, nan, nan, nan, "t", confidence, note)
    sd = float(diff.std(ddof=1))
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
    if sd > 0:
        p = float(2 * stats.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1))
    else:  # every pair differs by the same amount: no doubt about the sign unless it is 0
        p = 1.0 if mean == 0 else 0.0
    return PairedDifference(
        n, mean, sd, mean - half, mean + half, "t", confidence, "", p, sign_flip_p(diff)
    )


def sign_flip_p(differences: Sequence[float]) -> float:
    """The exact two-sided sign-flip permutation p-value of paired ``differences``: under
    "no difference" each pair's sign is a fair coin, so the p-value is the share of the
    ``2**n`` sign patterns whose mean is at least as far from 0 as the observed one. It
    assumes no distribution, but it is coarse: with n pairs it is never below
    ``2 / 2**n`` (1/16 for 5 seeds, 1/4 for 3), so it cannot fall below 0.05 with fewer than
    6 pairs. NaN for fewer than 2 pairs; up to 16 pairs (65,536 patterns)."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n < 2:
        return float("nan")
    if n > 16:
        raise invalid("differences", f"{n} values", "at most 16 pairs (2**n sign patterns)")
    signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
    means = np.abs(signs @ d) / n
    return float(np.mean(means >= abs(d.mean()) * (1 - 1e-12)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (NaN entries, comparisons that could not
    be tested, are left NaN and not counted): with the m tested p-values sorted,
    ``p_(1) <= ... <= p_(m)``, the adjusted ``p_(i)`` is ``max_{j <= i} min(1, (m - j + 1)
    p_(j))``. Rejecting where the adjusted value is below alpha keeps the chance of any false
    verdict in the family at most alpha, whatever the dependence between the comparisons."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    m = len(tested)
    running = 0.0
    for rank, i in enumerate(tested[np.argsort(p[tested], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out.tolist()


def _direction(value: Any, name: str = "direction") -> int:
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
    direction = _direction(direction)
    lo, hi = float(ci_low), float(ci_high)
    if math.isnan(lo) or math.isnan(hi):
        return INCONCLUSIVE
    if lo > hi:
        raise invalid("ci_low", ci_low, f"<= ci_high ({ci_high!r})")
    if lo > 0:
        return CONSISTENT if direction > 0 else CONTRADICTED
    if hi < 0:
        return CONSISTENT if direction < 0 else CONTRADICTED
    return INCONCLUSIVE


# ------------------------------------------------------------------------------------ claims


@dataclass(frozen=True)
class Claim:
    """One sentence of a paper, as a comparison our runs can test.

    - ``notebook``: the notebook that checks it, two digits (``"06"``);
    - ``claim``: the paper's words, quoted;
    - ``source``: where they stand (paper and section or table);
    - ``baseline``, ``method``: run labels (the ``label`` column of
      :func:`palviz.experiments.tables.results_frame`);
    - ``where``: frame column -> value selecting the setting, e.g. ``{"imbalance_ratio": 100}``
      or ``{"noise_kind": "symmetric", "noise_rate": 0.4}`` (numbers compared with a
      tolerance of 1e-9);
    - ``metric``: the frame column compared (``"last_acc"``: test accuracy after the last
      epoch);
    - ``direction``: +1 if the paper says the method is higher, -1 if lower;
    - ``family``: the short name of the claim this comparison belongs to (default: the
      ``claim`` text); the comparisons of one family are read together;
    - ``reading``: how the family is read, one of :data:`READINGS` (``"all"``: the text
      says every setting; ``"any"``; ``"single"``: one comparison);
    - ``seeds``: the seeds read (``None``: every seed both methods ran), e.g. a
      replication on seeds another profile never used.
    """

    notebook: str
    claim: str
    source: str
    baseline: str
    method: str
    where: Mapping[str, Any] = field(default_factory=dict)
    metric: str = "last_acc"
    direction: int = +1
    family: str = ""
    reading: str = "single"
    seeds: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.notebook, str) or not _NOTEBOOK.match(self.notebook):
            raise invalid("notebook", self.notebook, "two digits, e.g. '06'")
        for name in ("claim", "source", "baseline", "method", "metric"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise invalid(name, value, "a non-empty string")
        if not isinstance(self.where, Mapping):
            raise invalid("where", self.where, "a dict of frame column -> value")
        object.__setattr__(self, "where", dict(self.where))
        object.__setattr__(self, "direction", _direction(self.direction))
        if not isinstance(self.family, str):
            raise invalid("family", self.family, "a string (empty: the claim's text)")
        object.__setattr__(self, "family", self.family.strip() or self.claim)
        if self.reading not in READINGS:
            raise invalid("reading", self.reading, f"one of {READINGS}")
        if self.seeds is not None:
            seeds = self.seeds
            ok = isinstance(seeds, tuple | list) and len(seeds) > 0
            ok = ok and all(isinstance(x, int) and not isinstance(x, bool) for x in seeds)
            if not ok or len(set(seeds)) != len(seeds):
                raise invalid("seeds", seeds, "None or a non-empty tuple of distinct integers")
            object.__setattr__(self, "seeds", tuple(seeds))

    def setting(self) -> str:
        """``where`` as text: ``"noise_kind = symmetric, noise_rate = 0.4"``."""
        return ", ".join(f"{k} = {_value_text(v)}" for k, v in self.where.items())

    def comparison(self) -> str:
        """``"<method> - <baseline> (<setting>)"`` (without the brackets for an empty
        ``where``)."""
        text = f"{self.method} - {self.baseline}"
        return f"{text} ({self.setting()})" if self.where else text


def _value_text(value: Any) -> str:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return f"{float(value):g}"
    return str(value)


def _select(frame: pd.DataFrame, claim: Claim, label: str) -> pd.DataFrame:
    keep = frame["label"] == label
    for column, wanted in claim.where.items():
        if column not in frame:
            rule = f"frame columns ({column!r} is not one)"
            raise invalid(f"where of claim {claim.claim!r}", claim.where, rule)
        values = frame[column]
        if isinstance(wanted, numbers.Real) and not isinstance(wanted, bool):
            numeric = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
            keep &= np.isclose(numeric, float(wanted), rtol=0.0, atol=1e-9)
        else:
            keep &= values == wanted
    return frame[keep]


def _by_seed(runs: pd.DataFrame, claim: Claim, label: str, metric: str) -> pd.Series:
    if claim.seeds is not None:
        runs = runs[runs["seed"].isin(claim.seeds)]
    seeds = runs["seed"]
    if seeds.duplicated().any():
        twice = sorted(seeds[seeds.duplicated()].unique().tolist())
        raise ValueError(
            f"claim {claim.claim!r} selects several runs of {label!r} for seeds {twice}: "
            f"narrow its where ({claim.where!r})"
        )
    values = pd.Series(runs[metric].to_numpy(dtype=float), index=seeds.to_numpy(), name=label)
    return values.dropna()


def _steps(runs: pd.DataFrame) -> Any:
    steps = pd.to_numeric(runs["steps"], errors="coerce").dropna() if "steps" in runs else []
    return int(max(steps)) if len(steps) else pd.NA


def claim_runs(groups: Mapping[Any, Sequence[Any]], exclude: Iterable[Any] = ()) -> list:
    """The runs of ``groups`` (group -> runs, e.g. notebook 07's results by
    :func:`palviz.experiments.plan.noisy_groups`) that claims read: every group but those in
    ``exclude``, each run once per cache key, under the label it has in the first group that holds
    it.

    The claims select runs by label. The same run can sit in two groups under two labels: in
    ``full`` the s-sweep's "CE+FNPAL s=1" at symmetric 0.2 *is* the tables' "CE+FNPAL" (the
    noise-aware s there is 1), so a later label must not replace the first one; pass
    ``exclude=("sweep",)`` to leave out a group whose labels no claim uses.
    """
    excluded = set(exclude)
    unknown = excluded - set(groups)
    if unknown:
        raise invalid("exclude", sorted(map(str, unknown)), f"names of groups {list(groups)}")
    unique: dict[str, Any] = {}
    for name, runs in groups.items():
        if name not in excluded:
            for r in runs:
                unique.setdefault(r.spec.key(), r)
    return list(unique.values())


def _check_paper_steps(value: Any) -> int | None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1
    ):
        raise invalid("paper_steps", value, "an integer >= 1, None, or a function giving one")
    return None if value is None else int(value)


def evaluate_claims(
    frame: pd.DataFrame,
    claims: Iterable[Claim],
    *,
    profile: str,
    paper_steps: int | None | Callable[[Mapping[str, Any]], int | None],
    confidence: float = 0.95,
) -> pd.DataFrame:
    """The claims read against ``frame``, columns :data:`CLAIM_COLUMNS`: per family (the
    claims with the same ``notebook`` and ``family``, in the order given), one
    ``level="family"`` row with the family's verdict (:func:`family_verdict`) above one
    ``level="member"`` row per comparison.

    A member row: ``comparison`` (``"<method> - <baseline> (<setting>)"``), ``metric``,
    ``seeds`` and ``n_seeds`` (the seeds both methods ran in the setting, the pairs);
    ``mean_diff``, ``ci_low``, ``ci_high`` (the mean per-seed difference and its
    ``confidence`` Student-t interval, :func:`paired_difference`; accuracies in percentage
    points, other metrics in their own unit); ``p_value`` (two-sided paired t),
    ``p_signflip`` (exact sign-flip permutation, :func:`sign_flip_p`), ``p_holm`` (``p_value``
    adjusted by :func:`holm` across the family's members); ``verdict`` (:func:`verdict` of
    the unadjusted interval: the comparison on its own); ``steps_per_run`` (the SGD steps of
    the runs compared, the largest if they differ); ``paper_steps`` (``paper_steps`` itself,
    or its value for the claim's ``where``, e.g. :func:`palviz.experiments.budget.paper_steps_for`).

    A family row: the claim's words, source and ``reading``; ``comparison`` says how many
    comparisons it reads; ``n_seeds`` is the fewest pairs of any member; ``p_holm`` is the
    adjusted p that decides it (the largest of the members for ``all``, the smallest for
    ``any``); the interval columns are empty.

    ``frame`` is :func:`palviz.experiments.tables.results_frame` of the runs. Runs pair by seed; a
    seed that only one of the two methods ran (or whose metric is NaN) is left out. A comparison
    with no pair gives ``n_seeds`` 0 and :data:`NOT_RUN`; one pair gives no interval and no
    p-value (inconclusive).
    """
    profile = resolve_profile(profile)
    confidence = check_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    if not callable(paper_steps):
        _check_paper_steps(paper_steps)  # before any work
    if not isinstance(frame, pd.DataFrame):
        raise invalid("frame", type(frame).__name__, "a pandas DataFrame (results_frame)")
    missing = [c for c in ("label", "seed") if c not in frame]
    if missing and len(frame):
        raise invalid("frame", list(frame.columns), f"a results_frame (no {missing} column)")
    families: dict[tuple[str, str], list[dict]] = {}
    for claim in claims:
        if not isinstance(claim, Claim):
            raise invalid("claims", claim, "Claim objects")
        if len(frame) and claim.metric not in frame:
            raise invalid(f"metric of claim {claim.claim!r}", claim.metric, "a frame column")
        members = families.setdefault((claim.notebook, claim.family), [])
        if members and (members[0]["claim"], members[0]["reading"]) != (
            claim.claim,
            claim.reading,
        ):
            raise invalid(
                f"claims of family {claim.family!r}",
                (claim.claim, claim.reading),
                f"the same claim text and reading as its first member "
                f"({members[0]['claim']!r}, {members[0]['reading']!r})",
            )
        members.append(_member_row(frame, claim, profile, paper_steps, confidence))
    rows = []
    for members in families.values():
        if members[0]["reading"] == "single" and len(members) > 1:
            raise invalid(
                f"reading of family {members[0]['family']!r}",
                "single",
                f"'all' or 'any' for {len(members)} comparisons",
            )
        for member, adjusted in zip(members, holm([m["p_value"] for m in members]), strict=True):
            member["p_holm"] = adjusted
        rows.append(_family_row(members, 1 - confidence))
        rows.extend(members)
    return _typed(pd.DataFrame(rows, columns=list(CLAIM_COLUMNS)))


def _seeds_text(seeds: Iterable[Any]) -> str:
    """``[0, 1, 2, 3, 4]`` as ``"0-4"``, ``[0, 2, 5, 6]`` as ``"0, 2, 5-6"``; ``""`` if none."""
    values = sorted({int(x) for x in seeds})
    parts, i = [], 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(f"{values[i]}" if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ", ".join(parts)


def _member_row(
    frame: pd.DataFrame, claim: Claim, profile: str, paper_steps: Any, confidence: float
) -> dict:
    steps = paper_steps(dict(claim.where)) if callable(paper_steps) else paper_steps
    steps = _check_paper_steps(steps)
    nan = float("nan")
    row = {
        "profile": profile,
        "notebook": claim.notebook,
        "family": claim.family,
        "level": "member",
        "reading": claim.reading,
        "claim": claim.claim,
        "source": claim.source,
        "comparison": claim.comparison(),
        "metric": claim.metric,
        "seeds": "",
        "n_seeds": 0,
        "mean_diff": nan,
        "ci_low": nan,
        "ci_high": nan,
        "p_value": nan,
        "p_signflip": nan,
        "p_holm": nan,
        "verdict": NOT_RUN,
        "steps_per_run": pd.NA,
        "paper_steps": pd.NA if steps is None else steps,
        "_direction": claim.direction,
    }
    if not len(frame):
        return row
    base_runs = _select(frame, claim, claim.baseline)
    method_runs = _select(frame, claim, claim.method)
    a = _by_seed(base_runs, claim, claim.baseline, claim.metric)
    b = _by_seed(method_runs, claim, claim.method, claim.metric)
    common = [s for s in a.index if s in set(b.index)]
    if not common:
        return row
    factor = 100.0 if _is_accuracy(claim.metric) else 1.0
    d = paired_difference(factor * a.loc[common], factor * b.loc[common], confidence)
    paired = pd.concat(
        [base_runs[base_runs["seed"].isin(common)], method_runs[method_runs["seed"].isin(common)]]
    )
    row.update(
        seeds=_seeds_text(common),
        n_seeds=d.n,
        mean_diff=d.mean,
        ci_low=d.ci_low,
        ci_high=d.ci_high,
        p_value=d.p_value,
        p_signflip=d.p_signflip,
        verdict=verdict(d.ci_low, d.ci_high, claim.direction),
        steps_per_run=_steps(paired),
    )
    return row


def family_verdict(
    reading: str,
    means: Sequence[float],
    p_holm: Sequence[float],
    directions: Sequence[int],
    alpha: float = 0.05,
    run: Sequence[bool] | None = None,
) -> str:
    """The verdict on a family of comparisons from its members' mean differences, their
    Holm-adjusted p-values and the claimed ``directions``. A member *supports* the claim when
    its adjusted p is below ``alpha`` and its mean lies on the claimed side, *opposes* it when
    below ``alpha`` on the other side.

    - ``"all"`` (and ``"single"``): :data:`CONSISTENT` when every member supports the claim,
      :data:`CONTRADICTED` when any member opposes it (one setting where the method is
      measurably worse refutes "in all cases"), else :data:`INCONCLUSIVE`;
    - ``"any"``: consistent when some member supports it, contradicted when every member
      opposes it, else inconclusive;
    - :data:`NOT_RUN` when no member was run (``run``: which members have runs; default: those
      with a finite mean).
    """
    if reading not in READINGS:
        raise invalid("reading", reading, f"one of {READINGS}")
    means, p_holm = np.asarray(means, dtype=float), np.asarray(p_holm, dtype=float)
    dirs = np.asarray([_direction(x) for x in directions])
    if not (len(means) == len(p_holm) == len(dirs)) or len(means) == 0:
        raise invalid("means", list(means), "one value per member, as many as p_holm, >= 1")
    ran = ~np.isnan(means) if run is None else np.asarray(run, dtype=bool)
    if not ran.any():
        return NOT_RUN
    significant = ~np.isnan(p_holm) & (p_holm < alpha)
    supports = significant & (np.sign(means) == dirs)
    opposes = significant & (np.sign(means) == -dirs)
    if reading == "any":
        if supports.any():
            return CONSISTENT
        return CONTRADICTED if opposes.all() else INCONCLUSIVE
    if opposes.any():
        return CONTRADICTED
    return CONSISTENT if supports.all() else INCONCLUSIVE


def _family_row(members: list[dict], alpha: float) -> dict:
    first = members[0]
    reading = first["reading"]
    ran = [m["n_seeds"] > 0 for m in members]
    adjusted = [m["p_holm"] for m in members]
    decided = [p for p in adjusted if not math.isnan(p)]
    deciding = float("nan")
    if decided:
        deciding = min(decided) if reading == "any" else max(decided)
    what = {"all": "all of", "any": "any of", "single": ""}[reading]
    n = len(members)
    comparison = first["comparison"] if reading == "single" else f"{what} the {n} comparisons below"
    steps = [m["steps_per_run"] for m in members if not pd.isna(m["steps_per_run"])]
    papers = [m["paper_steps"] for m in members if not pd.isna(m["paper_steps"])]
    seeds = sorted({x for m in members for x in _parse_seeds(m["seeds"])})
    verdict_ = family_verdict(
        reading,
        [m["mean_diff"] for m in members],
        adjusted,
        [m.pop("_direction") for m in members],
        alpha,
        run=ran,
    )
    return {
        **{c: first[c] for c in ("profile", "notebook", "family", "reading", "claim", "source")},
        "level": "family",
        "comparison": comparison,
        "metric": first["metric"],
        "seeds": _seeds_text(seeds),
        "n_seeds": min(m["n_seeds"] for m in members),
        "mean_diff": float("nan"),
        "ci_low": float("nan"),
        "ci_high": float("nan"),
        "p_value": float("nan"),
        "p_signflip": float("nan"),
        "p_holm": deciding,
        "verdict": verdict_,
        "steps_per_run": max(steps) if steps else pd.NA,
        "paper_steps": max(papers) if papers else pd.NA,
    }


def _parse_seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _is_accuracy(metric: str) -> bool:
    return metric in _ACCURACY_METRICS or metric.startswith("acc_class_")


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """The column types of a claims frame: text, ``int`` seeds, float numbers, nullable
    integer steps."""
    df = df.copy()
    for column in _TEXT_COLUMNS:
        df[column] = df[column].fillna("").astype(str).astype(object)
    df["n_seeds"] = df["n_seeds"].astype(int)
    for column in ("mean_diff", "ci_low", "ci_high", "p_value", "p_signflip", "p_holm"):
        df[column] = df[column].astype(float)
    for column in ("steps_per_run", "paper_steps"):
        df[column] = pd.to_numeric(df[column], errors="coerce").astype("Int64")
    return df.reset_index(drop=True)


# ------------------------------------------------------------------------------ claims.csv


def claims_path(profile: str) -> Path:
    """``figures_dir(profile) / "claims.csv"``."""
    return figures_dir(resolve_profile(profile)) / "claims.csv"


def read_claims(profile: str) -> pd.DataFrame:
    """The rows of ``claims.csv`` of ``profile`` (columns :data:`CLAIM_COLUMNS`; an empty
    frame when no notebook has written any)."""
    return read_claims_file(claims_path(profile))


def read_claims_file(path: str | Path) -> pd.DataFrame:
    """The rows of a ``claims.csv`` at ``path`` (columns :data:`CLAIM_COLUMNS`; an empty frame
    when the file does not exist), e.g. a copy in ``docs/results/<profile>/``."""
    path = Path(path)
    if not path.exists():
        return _typed(pd.DataFrame(columns=list(CLAIM_COLUMNS)))
    text_columns = _TEXT_COLUMNS
    df = pd.read_csv(
        path,
        dtype={c: str for c in text_columns},
        keep_default_na=False,
        na_values={c: ["", "NaN", "nan"] for c in CLAIM_COLUMNS if c not in text_columns},
    )
    if list(df.columns) != list(CLAIM_COLUMNS):
        raise ValueError(f"{path} has columns {list(df.columns)}, not {list(CLAIM_COLUMNS)}")
    return _typed(df)


def write_claims(rows: pd.DataFrame | Iterable[pd.DataFrame], profile: str) -> Path:
    """Merge ``rows`` (:func:`evaluate_claims`, or several such frames) into
    ``figures_dir(profile) / "claims.csv"`` and return its path.

    The rows already there for the same ``(profile, notebook)`` pairs as ``rows`` are
    replaced, all others kept; the file is sorted by notebook (stably: a family row stays
    above its members), and written atomically (:func:`palviz.files.atomic_write`): a
    reader sees the old file or the new one, never half of one. The merge holds a file lock
    (``.claims.csv.lock`` beside it), so two notebooks writing at once both keep their rows.

    A ``claims.csv`` with other columns (written by another version of palviz) is replaced,
    with a warning that names it.

    Raises:
        ValueError: ``rows`` without the columns :data:`CLAIM_COLUMNS`, or with rows of
            another profile.
    """
    profile = resolve_profile(profile)
    if not isinstance(rows, pd.DataFrame):
        frames = list(rows)
        if not all(isinstance(f, pd.DataFrame) for f in frames):
            raise invalid("rows", rows, "a DataFrame of evaluate_claims or a list of them")
        rows = (
            pd.concat(frames, ignore_index=True)
            if frames
            else pd.DataFrame(columns=list(CLAIM_COLUMNS))
        )
    if list(rows.columns) != list(CLAIM_COLUMNS):
        raise invalid("rows", list(rows.columns), f"a frame with columns {list(CLAIM_COLUMNS)}")
    others = sorted(set(rows["profile"]) - {profile})
    if others:
        raise invalid("rows", others, f"rows of profile {profile!r} only (profile column)")
    new = _typed(rows)
    path = claims_path(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Two notebooks run at once (palviz figures --jobs 2) may both merge their claims: the
    # read-merge-write below holds a file lock, so neither loses the other's rows.
    with filelock.FileLock(str(path.with_name(f".{path.name}.lock"))):
        try:
            old = read_claims(profile)
        except ValueError as error:  # written by another version of palviz: start afresh
            warnings.warn(f"{error}; its rows are dropped, the file is rewritten", stacklevel=2)
            old = _typed(pd.DataFrame(columns=list(CLAIM_COLUMNS)))
        replaced = set(zip(new["profile"], new["notebook"], strict=True))
        pairs = zip(old["profile"], old["notebook"], strict=True)
        keep = [(p, nb) not in replaced for p, nb in pairs]
        merged = pd.concat([old[keep], new], ignore_index=True) if len(old) else new
        merged = _typed(merged).sort_values(["notebook"], kind="stable")
        with atomic_write(path, "w") as handle:
            merged.to_csv(handle, index=False)
    return path


# -------------------------------------------------------------------------------- markdown


def _signed(x: float) -> str:
    return f"{x:+.1f}"


def _difference_text(row: pd.Series) -> str:
    if row["n_seeds"] == 0 or pd.isna(row["mean_diff"]):
        return "n/a"
    if pd.isna(row["ci_low"]) or pd.isna(row["ci_high"]):
        return f"{_signed(row['mean_diff'])} [no interval: one seed]"
    return f"{_signed(row['mean_diff'])} [{_signed(row['ci_low'])}, {_signed(row['ci_high'])}]"


def _steps_text(value: Any) -> str:
    return "-" if pd.isna(value) else f"{int(value):,}"


def _p_text(value: Any) -> str:
    if pd.isna(value):
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def claims_markdown(df: pd.DataFrame) -> str:
    """``df`` (:func:`evaluate_claims` or :func:`read_claims`) as a markdown table, family by
    family: a family row in bold (notebook, the claim quoted with its source, how it is
    read, the Holm-adjusted p that decides it, its verdict), then one row per comparison
    (the seeds and their number, the mean difference with its interval to one decimal,
    ``"+2.3 [-0.4, +5.0]"``, percentage points for accuracies; the paired-t p, the sign-flip
    p, the Holm-adjusted p, the comparison's own verdict; the steps per run beside the
    paper's)."""
    if list(df.columns) != list(CLAIM_COLUMNS):
        raise invalid("df", list(df.columns), f"a frame with columns {list(CLAIM_COLUMNS)}")
    rows = []
    for _, r in df.iterrows():
        family = r["level"] == "family"
        quote = '"' + str(r["claim"]).strip('"') + '"'
        reading = {"all": "all must hold", "any": "one must hold", "single": "one comparison"}
        cells = {
            "nb": str(r["notebook"]) if family else "",
            "claim": f"**{quote}** ({r['source']})" if family else "",
            "comparison": (reading[str(r["reading"])] if family else str(r["comparison"])),
            "seeds (n)": "" if family or not r["n_seeds"] else f"{r['seeds']} ({r['n_seeds']})",
            "mean difference [CI]": "" if family else _difference_text(r),
            "p (t)": "" if family else _p_text(r["p_value"]),
            "p (sign-flip)": "" if family else _p_text(r["p_signflip"]),
            "p (Holm)": f"**{_p_text(r['p_holm'])}**" if family else _p_text(r["p_holm"]),
            "verdict": f"**{r['verdict']}**" if family else str(r["verdict"]),
            "steps per run": "" if family else _steps_text(r["steps_per_run"]),
            "paper's steps": "" if family else _steps_text(r["paper_steps"]),
        }
        rows.append({k: v.replace("|", "\\|") for k, v in cells.items()})
    columns = list(rows[0]) if rows else ["nb", "claim", "comparison", "verdict"]
    table = pd.DataFrame(rows, columns=columns)
    numbers_right = {"seeds (n)", "mean difference [CI]", "steps per run", "paper's steps"}
    numbers_right |= {"p (t)", "p (sign-flip)", "p (Holm)"}
    align = ["right" if c in numbers_right else "left" for c in table.columns]
    return table.to_markdown(index=False, disable_numparse=True, colalign=align) + "\n"


def claims_summary(df: pd.DataFrame) -> str:
    """One sentence counting the family verdicts of ``df``, e.g. ``"4 claims: 1 consistent,
    0 contradicted, 2 inconclusive at this size, 1 not run in this profile (12
    comparisons)."``"""
    if list(df.columns) != list(CLAIM_COLUMNS):
        raise invalid("df", list(df.columns), f"a frame with columns {list(CLAIM_COLUMNS)}")
    families = df[df["level"] == "family"]
    counts = [f"{(families['verdict'] == v).sum()} {v}" for v in (CONSISTENT, CONTRADICTED)]
    counts += [f"{(families['verdict'] == v).sum()} {v}" for v in (INCONCLUSIVE, NOT_RUN)]
    members = int((df["level"] == "member").sum())
    return f"{len(families)} claims: {', '.join(counts)} ({members} comparisons)."


def claims_explanation(df: pd.DataFrame, confidence: float = 0.95) -> str:
    """How to read the claims table ``df`` (:func:`evaluate_claims`), as markdown whose
    numbers come from ``df``: the tests, the sign-flip floor for the pairs present, Holm's
    correction, the verdict words, and which claims this profile could not read."""
    if list(df.columns) != list(CLAIM_COLUMNS):
        raise invalid("df", list(df.columns), f"a frame with columns {list(CLAIM_COLUMNS)}")
    members = df[df["level"] == "member"]
    pairs = sorted({int(n) for n in members["n_seeds"] if n > 1})
    alpha = 1 - confidence
    level = f"{100 * confidence:g} %"
    lines = [
        f"**How to read this table.** {claims_summary(df)}",
        "",
        "- *Paired runs.* Each comparison is read per seed: the two runs of a seed share the "
        "data subset, the noise draw and the initialisation, so the difference removes what they "
        "share. *mean difference [CI]* is the mean over seeds (points of last-epoch test "
        f"accuracy) with its {level} Student-t interval (n - 1 degrees of freedom).",
        '- *p (t)* is the two-sided paired t-test of "no difference" (the interval excludes 0 '
        f"exactly when p (t) < {alpha:g}). *p (sign-flip)* assumes no distribution: under no "
        "difference each seed's sign is a coin toss, and p counts the sign patterns at least as "
        "extreme. With n pairs it cannot go below 2/2^n",
    ]
    if pairs:
        floors = ", ".join(f"{2 / 2**n:.3g} for {n} pairs" for n in pairs)
        lines[-1] += f" ({floors} here)"
        if max(pairs) < 6:
            lines[-1] += f", so at these sizes it can never reach {alpha:g} and serves as a check"
    lines[-1] += "."
    lines += [
        "- *A claim is a family.* The paper's sentence is read at the strength it states: "
        '"all" (every comparison must hold), "any" (one must), or a single comparison. '
        f"Reading several comparisons at once at the {100 * alpha:g} % level each would give "
        "false verdicts by chance, so *p (Holm)* adjusts p (t) across the comparisons of its "
        "family (Holm's step-down: the smallest p times m, the next times m - 1, ..., never "
        "decreasing), "
        f"which keeps the chance of any false verdict in the family at most {alpha:g}.",
        f"- *Verdicts.* A comparison on its own (its row): **{CONSISTENT}** when its whole "
        f"interval lies on the claimed side of 0, **{CONTRADICTED}** when it lies on the other "
        f"side, **{INCONCLUSIVE}** when it contains 0 - or only touches it: an interval ending "
        f"at 0 means p (t) = {alpha:g} exactly, not below it, so the data cannot tell the "
        'difference from none. A family (bold row): under "all" consistent when every member '
        f"has p (Holm) < {alpha:g} on the claimed side, contradicted when any member has it on "
        'the other side; under "any" consistent when one member has it on the claimed side.',
    ]
    families = df[df["level"] == "family"]
    counts = members.groupby(["notebook", "family"], sort=False).size()
    thin = [
        f for (nb, f), n in counts.items() if n == 1 and (families["family"] == f).any()
        and families[families["family"] == f]["reading"].iloc[0] == "all"
    ]  # fmt: skip
    if thin:
        names = "; ".join(f"*{f}*" for f in thin)
        lines.append(
            f"- *Read from one comparison here:* {names}: the sentence covers more settings "
            "than this profile trains (the `full` profile reads more of them)."
        )
    not_run = df[(df["level"] == "family") & (df["verdict"] == NOT_RUN)]
    if len(not_run):
        names = "; ".join(f"*{f}*" for f in not_run["family"])
        lines.append(
            f"- *Not read here:* {names}: this profile does not train the methods they compare "
            "(the `full` profile does)."
        )
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------- the claims the notebooks read


@dataclass(frozen=True)
class Quote:
    """A sentence of a paper, verbatim (a typo kept and marked ``[sic]``), and where it stands.
    ``docs/reference.md`` ("Quoted sentences") holds the paper's passage around it; a test
    checks that each quote is in it word for word."""

    paper: str
    location: str
    text: str


#: The sentences the claims quote, by key.
QUOTES: dict[str, Quote] = {
    "pal_lt": Quote(
        "PAL",
        "Sec. 4 (after Thm. 4.1), on the experiments of Sec. 5.1 (Tables 1-2)",
        "PAL can significantly boost the performance of the existing long-tailed "
        "classification methods",
    ),
    "elm_lt": Quote(
        "ELM",
        "Sec. IV, on Table 1 (imbalanced CIFAR)",
        "ELM loss with DRW was the highest accuracy in all ratios",
    ),
    "ce_fnpal": Quote(
        "PAL",
        "Sec. 5.2, Results (Tables 3-4)",
        "CE+FNPAL performs much better than the original CE in all noisy cases",
    ),
    "apl_fnpal": Quote(
        "PAL",
        "Sec. 5.2, Results (Tables 3-4)",
        "we also add FNPAL to APLs (NCE+RCE and NFL+RCE), which surprisingly brings obvious "
        "positive gains",
    ),
    "fnpn": Quote(
        "PAL",
        "Sec. 5.2 (Fig. 5a: CIFAR-10, symmetric 0.6)",
        "Under the same $s$, CE+FNPAL always shows better performance than CE+FNPN",
    ),
}

_ORIENT = "(palviz question, not a paper claim) does the {o} orientation of PAL's simplex help?"


def _source(key: str) -> str:
    q = QUOTES[key]
    return f"{q.paper}, {q.location}"


def _replication(setup: Mapping[str, Any]) -> tuple[tuple[int, ...], str] | None:
    rep = setup.get("replication")
    return None if not rep else (tuple(rep["seeds"]), rep["of"])


def long_tailed_claims(
    setup: Mapping[str, Any], *, seeds: tuple[int, ...] | None = None, tag: str = ""
) -> list[Claim]:
    """The claims notebook 06 reads, for ``palviz.experiments.recipes.long_tailed_setup(profile)``,
    as families (:class:`Claim` ``family``):

    - "PAL boosts long-tailed methods" (:data:`QUOTES` ``pal_lt``, read as ``all``):
      ``M+PAL - M`` for every method M the profile trains with and without PAL, at every
      dataset and ratio;
    - "ELM-DRW highest" (``elm_lt``, ``all``): ``ELM-DRW - M`` for every other method the
      profile trains without PAL, at every ratio;
    - per prototype orientation, a palviz question (``single``): ``CE+PAL (o) - CE+PAL``.

    ``seeds`` restricts every comparison to those seeds and ``tag`` is appended to the family
    names. A setup with ``replication`` (``full``: ``{"seeds": (5, ..., 9), "of": "quick"}``)
    also gets the families of that profile's setup read on the fresh seeds, tagged
    ``"(replication, seeds 5-9)"``."""
    settings = [(d, r) for d in setup["datasets"] for r in setup["ratios"]]
    methods = tuple(setup["methods"])
    pal = [m for m in setup.get("pal_methods", methods) if m in methods]
    suffix = f" {tag}" if tag else ""
    common = {"seeds": seeds}
    claims = []
    for dataset, rho in settings:
        where = {"dataset": dataset, "imbalance_ratio": rho}
        for m in pal:
            claims.append(
                Claim(
                    "06",
                    QUOTES["pal_lt"].text,
                    _source("pal_lt"),
                    m,
                    m + "+PAL",
                    where,
                    family="PAL boosts long-tailed methods" + suffix,
                    reading="all",
                    **common,
                )
            )
    if "ELM-DRW" in methods:
        for dataset, rho in settings:
            where = {"dataset": dataset, "imbalance_ratio": rho}
            for m in (m for m in methods if m != "ELM-DRW"):
                claims.append(
                    Claim(
                        "06",
                        QUOTES["elm_lt"].text,
                        _source("elm_lt"),
                        m,
                        "ELM-DRW",
                        where,
                        family="ELM-DRW highest in all ratios" + suffix,
                        reading="all",
                        **common,
                    )
                )
    if "CE" in pal:
        for o in setup["orientations"]:
            for dataset, rho in settings:
                where = {"dataset": dataset, "imbalance_ratio": rho}
                claims.append(
                    Claim(
                        "06",
                        _ORIENT.format(o=o),
                        "palviz",
                        "CE+PAL",
                        f"CE+PAL ({o})",
                        where,
                        family=f"{o} orientation" + suffix,
                        reading="all" if len(settings) > 1 else "single",
                        **common,
                    )
                )
    rep = _replication(setup) if seeds is None else None
    if rep:
        from palviz.experiments.recipes import long_tailed_setup

        fresh, of = rep
        first = long_tailed_setup(of, setup["datasets"])  # the datasets trained here
        first = {**first, "orientations": ()}
        claims += long_tailed_claims(first, seeds=fresh, tag=_tag(fresh))
    return claims


def _tag(seeds: Sequence[int]) -> str:
    return f"(replication, seeds {_seeds_text(seeds)})"


def noisy_claims(
    setup: Mapping[str, Any], *, seeds: tuple[int, ...] | None = None, tag: str = ""
) -> list[Claim]:
    """The claims notebook 07 reads, for ``palviz.experiments.recipes.noisy_setup(profile)`` (PAL
    Sec. 5.2), as families:

    - "CE+FNPAL beats CE in all noisy cases" (``ce_fnpal``, ``all``): ``CE+FNPAL - CE`` at
      every noise setting of the tables;
    - "FNPAL gains on APLs" (``apl_fnpal``, ``all``): ``X+FNPAL - X`` for NCE+RCE and NFL+RCE
      where the headline trains them;
    - "FNPAL beats FNPN under the same s" (``fnpn``, ``all``): ``CE+FNPAL - CE+FNPN`` at the
      headline setting, at the noise-aware s of the headline and at every s of ``fnpn_scales``
      (both methods at the same s).

    The APL family is declared in every profile, so a profile that does not train it says
    so ("not run in this profile"); a replication leaves out what it does not train.
    ``seeds`` and ``tag`` as for :func:`long_tailed_claims`; ``replication`` likewise."""
    source = _source("ce_fnpal")
    suffix = f" {tag}" if tag else ""
    settings = [("symmetric", eta) for eta in setup["symmetric"]]
    settings += [("asymmetric", eta) for eta in setup["asymmetric"]]
    pair = {"CE", "CE+FNPAL"}
    table = set(setup["methods"]) & set(setup["asymmetric_methods"])
    head = setup["headline"]
    head_methods = set(head["methods"])
    claims = []
    for dataset in setup["datasets"]:
        if pair <= table | head_methods:
            for kind, eta in settings:
                where = {"dataset": dataset, "noise_kind": kind, "noise_rate": eta}
                claims.append(
                    Claim(
                        "07",
                        QUOTES["ce_fnpal"].text,
                        source,
                        "CE",
                        "CE+FNPAL",
                        where,
                        family="CE+FNPAL beats CE in all noisy cases" + suffix,
                        reading="all",
                        seeds=seeds,
                    )
                )
        where = {"dataset": dataset, "noise_kind": head["kind"], "noise_rate": head["eta"]}
        for apl in ("NCE+RCE", "NFL+RCE"):
            if seeds is not None and not {apl, apl + "+FNPAL"} <= head_methods:
                continue  # a replication reads only what the replicated profile trains
            claims.append(
                Claim(
                    "07",
                    QUOTES["apl_fnpal"].text,
                    _source("apl_fnpal"),
                    apl,
                    apl + "+FNPAL",
                    where,
                    family="FNPAL gains on APLs" + suffix,
                    reading="all",
                    seeds=seeds,
                )
            )
        if {"CE+FNPN", "CE+FNPAL"} <= head_methods:
            labels = [("CE+FNPN", "CE+FNPAL")]
            labels += [(f"CE+FNPN s={x:g}", f"CE+FNPAL s={x:g}") for x in setup["fnpn_scales"]]
            for base, method in labels:
                claims.append(
                    Claim(
                        "07",
                        QUOTES["fnpn"].text,
                        _source("fnpn"),
                        base,
                        method,
                        where,
                        family="FNPAL beats FNPN under the same s" + suffix,
                        reading="all",
                        seeds=seeds,
                    )
                )
    rep = _replication(setup) if seeds is None else None
    if rep:
        from palviz.experiments.recipes import noisy_setup

        fresh, of = rep
        claims += noisy_claims(noisy_setup(of, [*setup["datasets"]]), seeds=fresh, tag=_tag(fresh))
    return claims
