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
    "CLAIM_COLUMNS",
    "CONSISTENT",
    "CONTRADICTED",
    "INCONCLUSIVE",
    "NOT_RUN",
    "Claim",
    "PairedDifference",
    "claims_markdown",
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

#: The columns of :func:`evaluate_claims` and of ``claims.csv``, in order.
CLAIM_COLUMNS = (
    "profile",
    "notebook",
    "claim",
    "comparison",
    "metric",
    "n_seeds",
    "mean_diff",
    "ci_low",
    "ci_high",
    "verdict",
    "steps_per_run",
    "paper_steps",
)

#: Metrics of :func:`palviz.tables.results_frame` that are accuracies (fractions), reported
#: by :func:`evaluate_claims` in percentage points.
_ACCURACY_METRICS = ("last_acc", "best_acc", "many", "medium", "few")

_NOTEBOOK = re.compile(r"^\d\d$")


# ------------------------------------------------------------------------ paired difference


@dataclass(frozen=True)
class PairedDifference:
    """Per-seed differences ``method - baseline`` summarised: ``n`` pairs, their ``mean`` and
    sample standard deviation ``sd`` (``ddof=1``), and the ``confidence`` interval
    ``[ci_low, ci_high]`` by ``method`` ("t": Student's t with n - 1 degrees of freedom).
    With one pair ``sd`` and the interval are NaN and ``note`` says why."""

    n: int
    mean: float
    sd: float
    ci_low: float
    ci_high: float
    method: str = "t"
    confidence: float = 0.95
    note: str = ""


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
    return PairedDifference(n, mean, sd, mean - half, mean + half, "t", confidence)


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
      :func:`palviz.tables.results_frame`);
    - ``where``: frame column -> value selecting the setting, e.g. ``{"imbalance_ratio": 100}``
      or ``{"noise_kind": "symmetric", "noise_rate": 0.4}`` (numbers compared with a
      tolerance of 1e-9);
    - ``metric``: the frame column compared (``"last_acc"``: test accuracy after the last
      epoch);
    - ``direction``: +1 if the paper says the method is higher, -1 if lower.
    """

    notebook: str
    claim: str
    source: str
    baseline: str
    method: str
    where: Mapping[str, Any] = field(default_factory=dict)
    metric: str = "last_acc"
    direction: int = +1

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
    :func:`palviz.plan.noisy_groups`) that claims read: every group but those in ``exclude``,
    each run once per cache key, under the label it has in the first group that holds it.

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
    """One row per claim, columns :data:`CLAIM_COLUMNS`:

    ``profile``; ``notebook``, ``claim`` (the paper's words); ``comparison``
    (``"<method> - <baseline> (<setting>)"``); ``metric``; ``n_seeds`` (seeds run by both
    methods in the setting, the pairs); ``mean_diff``, ``ci_low``, ``ci_high`` (the mean
    per-seed difference and its ``confidence`` Student-t interval, :func:`paired_difference`;
    accuracies in percentage points, other metrics in their own unit); ``verdict``
    (:func:`verdict`); ``steps_per_run`` (the SGD steps of the runs compared, from the frame's
    ``steps`` column; if the runs of a comparison differ, the largest); ``paper_steps`` (the
    paper's budget for the setting: ``paper_steps`` itself, or, if it is a function such as
    :func:`palviz.budget.paper_steps_for`, its value for the claim's ``where``).

    ``frame`` is :func:`palviz.tables.results_frame` of the runs. Runs pair by seed; a seed
    that only one of the two methods ran (or whose metric is NaN, e.g. an empty shot group)
    is left out. A claim with no pair (either method not
    run in the setting) gives ``n_seeds`` 0, NaN numbers and the verdict
    :data:`NOT_RUN` (``"not run in this profile"``); a claim with one pair gives a NaN
    interval and is inconclusive.
    """
    profile = resolve_profile(profile)
    if not callable(paper_steps):
        _check_paper_steps(paper_steps)  # before any work
    if not isinstance(frame, pd.DataFrame):
        raise invalid("frame", type(frame).__name__, "a pandas DataFrame (results_frame)")
    missing = [c for c in ("label", "seed") if c not in frame]
    if missing and len(frame):
        raise invalid("frame", list(frame.columns), f"a results_frame (no {missing} column)")
    rows = []
    for claim in claims:
        if not isinstance(claim, Claim):
            raise invalid("claims", claim, "Claim objects")
        if len(frame) and claim.metric not in frame:
            raise invalid(f"metric of claim {claim.claim!r}", claim.metric, "a frame column")
        steps = paper_steps(dict(claim.where)) if callable(paper_steps) else paper_steps
        steps = _check_paper_steps(steps)
        row = {
            "profile": profile,
            "notebook": claim.notebook,
            "claim": claim.claim,
            "comparison": claim.comparison(),
            "metric": claim.metric,
            "n_seeds": 0,
            "mean_diff": float("nan"),
            "ci_low": float("nan"),
            "ci_high": float("nan"),
            "verdict": NOT_RUN,
            "steps_per_run": pd.NA,
            "paper_steps": pd.NA if steps is None else steps,
        }
        if len(frame):
            base_runs = _select(frame, claim, claim.baseline)
            method_runs = _select(frame, claim, claim.method)
            a = _by_seed(base_runs, claim, claim.baseline, claim.metric)
            b = _by_seed(method_runs, claim, claim.method, claim.metric)
            common = [s for s in a.index if s in set(b.index)]
            if common:
                factor = 100.0 if _is_accuracy(claim.metric) else 1.0
                d = paired_difference(factor * a.loc[common], factor * b.loc[common], confidence)
                paired = pd.concat(
                    [
                        base_runs[base_runs["seed"].isin(common)],
                        method_runs[method_runs["seed"].isin(common)],
                    ]
                )
                row.update(
                    n_seeds=d.n,
                    mean_diff=d.mean,
                    ci_low=d.ci_low,
                    ci_high=d.ci_high,
                    verdict=verdict(d.ci_low, d.ci_high, claim.direction),
                    steps_per_run=_steps(paired),
                )
        rows.append(row)
    return _typed(pd.DataFrame(rows, columns=list(CLAIM_COLUMNS)))


def _is_accuracy(metric: str) -> bool:
    return metric in _ACCURACY_METRICS or metric.startswith("acc_class_")


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """The column types of a claims frame: text, ``int`` seeds, float numbers, nullable
    integer steps."""
    df = df.copy()
    for column in ("profile", "notebook", "claim", "comparison", "metric", "verdict"):
        df[column] = df[column].astype(object)
    df["n_seeds"] = df["n_seeds"].astype(int)
    for column in ("mean_diff", "ci_low", "ci_high"):
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
    text_columns = ("profile", "notebook", "claim", "comparison", "metric", "verdict")
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
    replaced, all others kept; the file is sorted by notebook, then claim (stably), and
    written atomically (:func:`palviz.files.atomic_write`): a reader sees the old file or
    the new one, never half of one. The merge holds a file lock (``.claims.csv.lock`` beside
    it), so two notebooks writing at once both keep their rows.

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
        old = read_claims(profile)
        replaced = set(zip(new["profile"], new["notebook"], strict=True))
        pairs = zip(old["profile"], old["notebook"], strict=True)
        keep = [(p, nb) not in replaced for p, nb in pairs]
        merged = pd.concat([old[keep], new], ignore_index=True) if len(old) else new
        merged = _typed(merged).sort_values(["notebook", "claim"], kind="stable")
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


def claims_markdown(df: pd.DataFrame) -> str:
    """``df`` (:func:`evaluate_claims` or :func:`read_claims`) as a markdown table: notebook,
    the claim (quoted), the comparison and metric, the seeds, the mean difference with its
    interval to one decimal (``"+2.3 [-0.4, +5.0]"``; percentage points for accuracies), the
    verdict, and the steps per run beside the paper's."""
    if list(df.columns) != list(CLAIM_COLUMNS):
        raise invalid("df", list(df.columns), f"a frame with columns {list(CLAIM_COLUMNS)}")
    table = pd.DataFrame(
        {
            "notebook": df["notebook"].astype(str),
            "claim": ['"' + str(c).strip('"').replace("|", "\\|") + '"' for c in df["claim"]],
            "comparison": df["comparison"].astype(str).str.replace("|", "\\|", regex=False),
            "metric": df["metric"].astype(str),
            "seeds": df["n_seeds"].astype(int),
            "mean difference [CI]": [_difference_text(r) for _, r in df.iterrows()],
            "verdict": df["verdict"].astype(str),
            "steps per run": [_steps_text(v) for v in df["steps_per_run"]],
            "paper's steps": [_steps_text(v) for v in df["paper_steps"]],
        }
    )
    numbers_right = ("seeds", "mean difference [CI]", "steps per run", "paper's steps")
    align = ["right" if c in numbers_right else "left" for c in table.columns]
    return (
        table.to_markdown(index=False, floatfmt=".1f", disable_numparse=True, colalign=align) + "\n"
    )


# ----------------------------------------------------------------- the claims the notebooks read

_PAL_LT = (
    "PAL can significantly boost the performance of the existing long-tailed classification methods"
)
_ELM_LT = "ELM loss with DRW was the highest accuracy in comparison with conventional approaches"
_ORIENT = "(palviz experiment, not a paper claim) the {o} orientation of PAL's simplex"
_CE_FNPAL = "CE+FNPAL performs much better than the original CE in all noisy cases"
_APL_FNPAL = (
    "we also add FNPAL to APLs (NCE+RCE and NFL+RCE), which surprisingly brings obvious "
    "positive gains"
)
_FNPN = "Under the same s, CE+FNPAL always shows better performance than CE+FNPN"


def long_tailed_claims(setup: Mapping[str, Any]) -> list[Claim]:
    """The claims notebook 06 reads, for ``palviz.recipes.long_tailed_setup(profile)``: PAL on
    each method the profile trains with PAL, ``pal_methods`` (PAL paper, Sec. 3 and 5.1),
    ELM-DRW against LDAM-DRW (ELM paper, Sec. IV, Table 1), and the prototype orientations
    against the default random one, on every dataset and imbalance ratio of the profile."""
    claims = []
    for dataset, rho in [(d, r) for d in setup["datasets"] for r in setup["ratios"]]:
        where = {"dataset": dataset, "imbalance_ratio": rho}
        for method in setup.get("pal_methods", setup["methods"]):
            claims.append(
                Claim(
                    "06",
                    _PAL_LT,
                    "PAL, Sec. 3 and 5.1 (Tables 1-2)",
                    method,
                    method + "+PAL",
                    where,
                )
            )
        if {"ELM-DRW", "LDAM-DRW"} <= set(setup["methods"]):
            claims.append(
                Claim("06", _ELM_LT, "ELM, Sec. IV (Table 1)", "LDAM-DRW", "ELM-DRW", where)
            )
        for o in setup["orientations"]:
            text = _ORIENT.format(o=o)
            claims.append(Claim("06", text, "palviz", "CE+PAL", f"CE+PAL ({o})", where))
    return claims


def noisy_claims(setup: Mapping[str, Any]) -> list[Claim]:
    """The claims notebook 07 reads, for ``palviz.recipes.noisy_setup(profile)`` (PAL paper,
    Sec. 5.2, Tables 3-4 and Fig. 5): CE+FNPAL against CE at every noise setting the profile
    trains; at the headline setting also NCE+RCE+FNPAL against NCE+RCE and CE+FNPAL against
    CE+FNPN under the same s."""
    source = "PAL, Sec. 5.2 (Tables 3-4)"
    settings = [("symmetric", eta) for eta in setup["symmetric"]]
    settings += [("asymmetric", eta) for eta in setup["asymmetric"]]
    claims = []
    for dataset in setup["datasets"]:
        for kind, eta in settings:
            where = {"dataset": dataset, "noise_kind": kind, "noise_rate": eta}
            claims.append(Claim("07", _CE_FNPAL, source, "CE", "CE+FNPAL", where))
        head = setup["headline"]
        where = {"dataset": dataset, "noise_kind": head["kind"], "noise_rate": head["eta"]}
        methods = set(head["methods"])
        if {"NCE+RCE", "NCE+RCE+FNPAL"} <= methods:
            claims.append(Claim("07", _APL_FNPAL, source, "NCE+RCE", "NCE+RCE+FNPAL", where))
        if {"CE+FNPN", "CE+FNPAL"} <= methods:
            claims.append(
                Claim("07", _FNPN, "PAL, Sec. 5.2 (Fig. 5a)", "CE+FNPN", "CE+FNPAL", where)
            )
    return claims
