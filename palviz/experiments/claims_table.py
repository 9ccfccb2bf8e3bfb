"""The claims table: each :class:`~palviz.experiments.claims.Claim` read against the runs,
and the table as markdown.

:func:`evaluate_claims` selects the runs of a claim's two methods in its setting from a
:func:`palviz.experiments.tables.results_frame`, pairs them by seed and reads them with
:mod:`palviz.stats` (the paired difference, its interval and p-values, Holm's correction
across a family, the verdicts): one row per comparison below one row per family, columns
:data:`~palviz.experiments.claims.CLAIM_COLUMNS` (the columns of ``claims.csv``, which
:func:`palviz.experiments.claims.write_claims` keeps). :func:`claims_markdown` prints the
rows and :func:`claims_summary` counts the verdicts; docs/results.md says how to read them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from palviz.checks import check_range, invalid
from palviz.experiments.claims import (
    BEST_EPOCH,
    CLAIM_COLUMNS,
    Claim,
    seeds_text,
    typed_claims,
)
from palviz.experiments.tables import markdown_table
from palviz.files import resolve_profile
from palviz.stats import (
    CONSISTENT,
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_RUN,
    family_verdict,
    holm,
    paired_difference,
)

#: The p-value columns of a reading, by the name the table shows.
P_NAMES = {"p_value": "p (t)", "p_signflip": "p (sign-flip)"}

#: The p-value every verdict rests on (a key of :data:`P_NAMES`): the member verdicts, Holm's
#: correction and the family verdicts all read this column (docs/results.md says why). The
#: paired t-test: the sign-flip p cannot fall below 0.05 with fewer than 6 pairs
#: (:func:`palviz.stats.sign_flip_floor`), so a verdict on it could never be anything but
#: inconclusive at the sizes the CPU profiles run.
VERDICT_P = "p_value"

#: The two readings of a comparison: the prefix of their columns and what the table calls them.
_EPOCHS = (("", "last epoch"), ("best_", "best epoch"))

#: Metrics of :func:`palviz.experiments.tables.results_frame` that are accuracies (fractions),
#: reported by :func:`evaluate_claims` in percentage points.
_ACCURACY_METRICS = ("last_acc", "best_acc", "many", "medium", "few")


# ------------------------------------------------------------------------- evaluate_claims


def _select(frame: pd.DataFrame, claim: Claim, label: str) -> pd.DataFrame:
    """The runs of ``label`` in the claim's setting (``where``) and seeds, indexed by seed."""
    keep = frame["label"] == label
    if claim.seeds is not None:
        keep &= frame["seed"].isin(claim.seeds)
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
    seeds = frame.loc[keep, "seed"]
    if seeds.duplicated().any():
        twice = sorted(seeds[seeds.duplicated()].unique().tolist())
        raise ValueError(
            f"claim {claim.claim!r} selects several runs of {label!r} for seeds {twice}: "
            f"narrow its where ({claim.where!r})"
        )
    return frame[keep].set_index("seed")


def _largest(values: Iterable[Any]) -> Any:
    """The largest of ``values`` that is a number (as an ``int``: steps), ``pd.NA`` if none."""
    steps = pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce").dropna()
    return int(steps.max()) if len(steps) else pd.NA


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
    """The claims read against ``frame``, columns
    :data:`~palviz.experiments.claims.CLAIM_COLUMNS`: per family (the claims with the same
    ``notebook`` and ``family``, in the order given), one ``level="family"`` row with the
    family's verdict (:func:`~palviz.stats.family_verdict`) above one ``level="member"`` row
    per comparison.

    Each comparison is read twice, side by side: on the claim's ``metric`` (the last epoch,
    the :data:`~palviz.experiments.claims.READING_COLUMNS`) and on its best-epoch twin
    (:data:`~palviz.experiments.claims.BEST_EPOCH`, the same columns prefixed ``best_``;
    NaN, with an empty ``best_verdict``, for a metric that has none). ``paper_reads`` is the
    claim's: the epoch the paper used.

    A member row: ``comparison`` (``"<method> - <baseline> (<setting>)"``), ``metric``,
    ``seeds`` and ``n_seeds`` (the seeds both methods ran in the setting, the pairs); per
    reading ``mean_diff``, ``ci_low``, ``ci_high`` (the mean per-seed difference and its
    ``confidence`` Student-t interval, :func:`~palviz.stats.paired_difference`; accuracies
    in percentage points, other metrics in their own unit); ``p_value`` (two-sided paired
    t), ``p_signflip`` (exact sign-flip permutation, :func:`~palviz.stats.sign_flip_p`),
    ``p_holm`` (the :data:`VERDICT_P` column adjusted by :func:`~palviz.stats.holm` across
    the family's members); ``verdict`` (the comparison on its own:
    :func:`~palviz.stats.family_verdict` of one member on :data:`VERDICT_P` at level
    ``1 - confidence``; for the t p-value the same as its interval lying wholly on one side
    of 0); ``steps_per_run`` (the SGD steps of the runs compared, the largest if they
    differ); ``paper_steps`` (``paper_steps`` itself, or its value for the claim's ``where``,
    e.g. :func:`palviz.experiments.budget.paper_steps_for`).

    A family row: the claim's words, source, ``paper_reads`` and ``reading``;
    ``comparison`` says how many comparisons it reads; ``n_seeds`` is the fewest pairs of
    any member; per reading, the p-values of the two conclusions that decide the verdict
    (:func:`~palviz.stats.family_verdict`): ``p_value`` and ``p_signflip`` that of the one
    about *every* member (an intersection-union test: the largest of the members' p-values,
    a member on the wrong side counting as 1), ``p_holm`` that of the one about *some*
    member (the smallest Holm-adjusted p of the members on the side it needs, 1 if none).
    Under ``"all"`` "every" is every member for the claim and "some" is some member
    against it; under ``"any"`` "some" is some member for it and "every" every member
    against it. So the family is decided at ``p_value`` (or :data:`VERDICT_P`'s column)
    below ``1 - confidence`` or at ``p_holm`` below it. The interval columns are empty.

    ``frame`` is :func:`palviz.experiments.tables.results_frame` of the runs. Runs pair by seed; a
    seed that only one of the two methods ran (or whose metric is NaN) is left out. A comparison
    with no pair gives ``n_seeds`` 0 and :data:`~palviz.stats.NOT_RUN`; one pair gives no
    interval and no p-value (inconclusive).
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
    texts: dict[tuple[str, str], tuple[str, str, str]] = {}  # a family's text, reading, epoch
    for claim in claims:
        if not isinstance(claim, Claim):
            raise invalid("claims", claim, "Claim objects")
        best = BEST_EPOCH.get(claim.metric)
        if len(frame) and claim.metric not in frame:
            raise invalid(f"metric of claim {claim.claim!r}", claim.metric, "a frame column")
        if len(frame) and best is not None and best not in frame:
            rule = f"a metric whose best-epoch twin {best!r} is a frame column"
            raise invalid(f"metric of claim {claim.claim!r}", claim.metric, rule)
        shared = (claim.claim, claim.reading, claim.paper_reads)
        first = texts.setdefault((claim.notebook, claim.family), shared)
        if first != shared:
            raise invalid(
                f"claims of family {claim.family!r}",
                shared,
                "the same claim text, reading and paper_reads as its first member "
                f"({', '.join(map(repr, first))})",
            )
        member = _member_row(frame, claim, profile, paper_steps, confidence)
        families.setdefault((claim.notebook, claim.family), []).append(member)
    rows = []
    for members in families.values():
        if members[0]["reading"] == "single" and len(members) > 1:
            raise invalid(
                f"reading of family {members[0]['family']!r}",
                "single",
                f"'all' or 'any' for {len(members)} comparisons",
            )
        rows += [_family_row(members, 1 - confidence), *members]
    return typed_claims(pd.DataFrame(rows, columns=list(CLAIM_COLUMNS)))


def _reading(a: pd.Series, b: pd.Series, metric: str, direction: int, confidence: float) -> dict:
    """One reading of a comparison, its :data:`READING_COLUMNS` but ``p_holm``, from the
    per-seed values ``a`` (baseline) and ``b`` (method) of the seeds both have."""
    factor = 100.0 if metric in _ACCURACY_METRICS or metric.startswith("acc_class_") else 1.0
    d = paired_difference(factor * a, factor * b, confidence)
    values = {"mean_diff": d.mean, "ci_low": d.ci_low, "ci_high": d.ci_high}
    values |= {"p_value": d.p_value, "p_signflip": d.p_signflip}
    alpha = 1 - confidence
    values["verdict"] = family_verdict("single", [d.mean], [values[VERDICT_P]], [direction], alpha)
    return values


#: The columns a comparison's row takes from its :class:`~palviz.experiments.claims.Claim`.
_CLAIM_FIELDS = ("notebook", "family", "reading", "claim", "source", "paper_reads", "metric")


def _member_row(
    frame: pd.DataFrame, claim: Claim, profile: str, paper_steps: Any, confidence: float
) -> dict:
    steps = paper_steps(dict(claim.where)) if callable(paper_steps) else paper_steps
    best = BEST_EPOCH.get(claim.metric)
    row = dict.fromkeys(CLAIM_COLUMNS, float("nan"))  # a text column's NaN reads ""
    row.update(
        {c: getattr(claim, c) for c in _CLAIM_FIELDS},
        profile=profile,
        level="member",
        comparison=claim.comparison(),
        n_seeds=0,
        verdict=NOT_RUN,
        best_verdict=NOT_RUN if best is not None else "",
        paper_steps=_check_paper_steps(steps),
        _direction=claim.direction,
        _seeds=[],
    )
    if not len(frame):
        return row
    runs = {label: _select(frame, claim, label) for label in (claim.baseline, claim.method)}
    for (prefix, _), metric in zip(_EPOCHS, (claim.metric, best), strict=True):
        if metric is None:
            continue
        a, b = (runs[m][metric].astype(float).dropna() for m in (claim.baseline, claim.method))
        common = [s for s in a.index if s in set(b.index)]
        if not common:
            continue
        values = _reading(a.loc[common], b.loc[common], metric, claim.direction, confidence)
        row.update({prefix + k: v for k, v in values.items()})
        if not prefix:  # the pairs of the claim's own metric
            paired = pd.concat(runs.values())
            row.update(seeds=seeds_text(common), n_seeds=len(common), _seeds=common)
            row["steps_per_run"] = _largest(paired[paired.index.isin(common)].get("steps", []))
    return row


def _family_row(members: list[dict], alpha: float) -> dict:
    """The row of a family above its ``members``, whose ``p_holm`` it sets (Holm's correction
    across the family)."""
    first, reading = members[0], members[0]["reading"]
    directions = [m.pop("_direction") for m in members]
    what = {"all": "all of", "any": "any of"}.get(reading)
    row = dict.fromkeys(CLAIM_COLUMNS, float("nan"))
    row.update(
        {c: first[c] for c in ("profile", *_CLAIM_FIELDS)},
        level="family",
        comparison=f"{what} the {len(members)} comparisons below" if what else first["comparison"],
        seeds=seeds_text(s for m in members for s in m.pop("_seeds")),
        n_seeds=min(m["n_seeds"] for m in members),
        steps_per_run=_largest(m["steps_per_run"] for m in members),
        paper_steps=_largest(m["paper_steps"] for m in members),
    )
    # "all": every member for the claim (consistent), some member against it (contradicted);
    # "any": some member for it (consistent), every member against it (contradicted)
    every = +1 if reading != "any" else -1
    for prefix, _ in _EPOCHS:
        p = [m[prefix + VERDICT_P] for m in members]
        adjusted = holm(p)  # (7) across the family
        for member, q in zip(members, adjusted, strict=True):
            member[prefix + "p_holm"] = q
        if not first[prefix + "verdict"]:  # a metric without a best-epoch twin
            continue
        means = [m[prefix + "mean_diff"] for m in members]
        sides = [np.sign(x) * d for x, d in zip(means, directions, strict=True)]  # +1: claimed
        for column in P_NAMES:  # (10, 11) "every member": the largest p, 1 on the other side
            values = [m[prefix + column] for m in members]
            if not all(math.isnan(x) for x in values):
                row[prefix + column] = max(
                    x if side == every and not math.isnan(x) else 1.0
                    for x, side in zip(values, sides, strict=True)
                )
        if not all(math.isnan(x) for x in adjusted):  # (10, 11) "some member": smallest Holm p
            row[prefix + "p_holm"] = min(
                [x for x, side in zip(adjusted, sides, strict=True) if side == -every] or [1.0]
            )
        row[prefix + "verdict"] = family_verdict(reading, means, p, directions, alpha)
    return row


# -------------------------------------------------------------------------------- markdown


def _difference_text(row: pd.Series, prefix: str) -> str:
    mean, low, high = (row[prefix + c] for c in ("mean_diff", "ci_low", "ci_high"))
    if row["n_seeds"] == 0 or pd.isna(mean):
        return "n/a"
    if pd.isna(low) or pd.isna(high):
        return f"{mean:+.1f} [no interval: one seed]"
    return f"{mean:+.1f} [{low:+.1f}, {high:+.1f}]"


def _p_text(value: Any) -> str:
    if pd.isna(value):
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _check_claims(df: pd.DataFrame) -> None:
    if list(df.columns) != list(CLAIM_COLUMNS):
        raise invalid("df", list(df.columns), f"a frame with columns {list(CLAIM_COLUMNS)}")


#: How the narrow claims table says a family is read.
_READS = {"all": "all must hold", "any": "one must hold", "single": "one comparison"}


def claims_markdown(df: pd.DataFrame) -> str:
    """``df`` (:func:`evaluate_claims` or :func:`palviz.experiments.claims.read_claims`) as two
    markdown tables, family by family (a family row in bold, then one row per comparison).

    The first is narrow, read at a glance: the claim quoted with its source and how it is
    read, each comparison, its mean difference at the last epoch with its interval to one
    decimal (``"+2.3 [-0.4, +5.0]"``, percentage points for accuracies) and the verdict. The
    second, folded under it (an HTML ``<details>``): per comparison the seeds and their
    number, the epoch the paper reads, the paired-t, sign-flip and Holm-adjusted p-values at
    the last epoch, the same reading at the best epoch (difference, p-values, verdict) and the
    steps per run beside the paper's."""
    _check_claims(df)
    family = df["level"] == "family"

    def bold(texts: Iterable[str]) -> pd.Series:  # a family's cells in bold
        texts = pd.Series(list(texts), index=df.index, dtype=object)
        return texts.mask(family, "**" + texts + "**")

    def members(texts: Iterable[str]) -> pd.Series:  # a family's cells empty
        return pd.Series(list(texts), index=df.index, dtype=object).mask(family, "")

    def difference(prefix: str) -> pd.Series:
        return members(_difference_text(r, prefix) for _, r in df.iterrows())

    def steps(column: str) -> pd.Series:
        return members(df[column].map(lambda v: "-" if pd.isna(v) else f"{int(v):,}"))

    what = df["comparison"].mask(family, df["reading"].map(_READS))
    quote = '**"' + df["claim"].str.strip('"') + '"** (' + df["source"] + ")"
    main = {
        "claim": quote.where(family, ""),
        "comparison": what,
        "difference [95 % CI], last epoch": difference(""),
        "verdict": bold(df["verdict"].replace("", "-")),
    }
    seeds = members(df["seeds"] + " (" + df["n_seeds"].astype(str) + ")")
    p_names = {**P_NAMES, "p_holm": "p (Holm)"}
    detail = {
        "comparison": bold(what),
        "seeds (n)": seeds.where(df["n_seeds"] > 0, ""),
        "paper reads": df["paper_reads"].replace("", "-").where(family, ""),
        **{f"last: {name}": bold(df[c].map(_p_text)) for c, name in p_names.items()},
        "best: difference [CI]": difference("best_"),
        **{f"best: {name}": bold(df["best_" + c].map(_p_text)) for c, name in p_names.items()},
        "best: verdict": bold(df["best_verdict"].replace("", "-")),
        "steps per run": steps("steps_per_run"),
        "paper's steps": steps("paper_steps"),
    }
    main_left, detail_left = ("claim", "comparison", "verdict"), ("comparison", "paper reads")
    return (
        markdown_table(pd.DataFrame(main), index=False, left=main_left)
        + "\n\n<details><summary>p-values, the best epoch and the steps of each comparison"
        + "</summary>\n\n"
        + markdown_table(pd.DataFrame(detail), index=False, left=(*detail_left, "best: verdict"))
        + "\n\n</details>\n"
    )


def claims_summary(df: pd.DataFrame) -> str:
    """One sentence counting the family verdicts of ``df`` at each epoch, e.g. ``"4 claims,
    at the last epoch: 1 consistent, 0 contradicted, 2 inconclusive at this size, 1 not run
    in this profile; at the best epoch: ... (12 comparisons)."``"""
    _check_claims(df)
    families = df[df["level"] == "family"]
    verdicts = (CONSISTENT, CONTRADICTED, INCONCLUSIVE, NOT_RUN)
    counts = "; ".join(
        f"at the {epoch}: "
        + ", ".join(f"{(families[prefix + 'verdict'] == v).sum()} {v}" for v in verdicts)
        for prefix, epoch in _EPOCHS
    )
    members = int((df["level"] == "member").sum())
    claims = "claim" if len(families) == 1 else "claims"
    return f"{len(families)} {claims}, {counts} ({members} comparisons)."
