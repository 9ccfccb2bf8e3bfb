"""The claims table: each :class:`~palviz.experiments.claims.Claim` read against the runs,
and the table as markdown with how to read it.

:func:`evaluate_claims` selects the runs of a claim's two methods in its setting from a
:func:`palviz.experiments.tables.results_frame`, pairs them by seed and reads them with
:mod:`palviz.stats` (the paired difference, its interval and p-values, Holm's correction
across a family, the verdicts): one row per comparison below one row per family, columns
:data:`~palviz.experiments.claims.CLAIM_COLUMNS` (the columns of ``claims.csv``, which
:func:`palviz.experiments.claims.write_claims` keeps). :func:`claims_markdown` prints the
rows, :func:`claims_summary` counts the verdicts and :func:`claims_explanation` says how to
read them, with the numbers of the table.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from palviz.checks import check_range, invalid
from palviz.experiments.claims import CLAIM_COLUMNS, Claim, seeds_text, typed_claims
from palviz.files import resolve_profile
from palviz.stats import (
    CONSISTENT,
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_RUN,
    family_verdict,
    holm,
    paired_difference,
    verdict,
)

__all__ = ["claims_explanation", "claims_markdown", "claims_summary", "evaluate_claims"]

#: Metrics of :func:`palviz.experiments.tables.results_frame` that are accuracies (fractions),
#: reported by :func:`evaluate_claims` in percentage points.
_ACCURACY_METRICS = ("last_acc", "best_acc", "many", "medium", "few")


# ------------------------------------------------------------------------- evaluate_claims


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

    A member row: ``comparison`` (``"<method> - <baseline> (<setting>)"``), ``metric``,
    ``seeds`` and ``n_seeds`` (the seeds both methods ran in the setting, the pairs);
    ``mean_diff``, ``ci_low``, ``ci_high`` (the mean per-seed difference and its
    ``confidence`` Student-t interval, :func:`~palviz.stats.paired_difference`; accuracies
    in percentage points, other metrics in their own unit); ``p_value`` (two-sided paired
    t), ``p_signflip`` (exact sign-flip permutation, :func:`~palviz.stats.sign_flip_p`),
    ``p_holm`` (``p_value`` adjusted by :func:`~palviz.stats.holm` across the family's
    members); ``verdict`` (:func:`~palviz.stats.verdict` of the unadjusted interval: the
    comparison on its own); ``steps_per_run`` (the SGD steps of the runs compared, the
    largest if they differ); ``paper_steps`` (``paper_steps`` itself, or its value for the
    claim's ``where``, e.g. :func:`palviz.experiments.budget.paper_steps_for`).

    A family row: the claim's words, source and ``reading``; ``comparison`` says how many
    comparisons it reads; ``n_seeds`` is the fewest pairs of any member; ``p_holm`` is the
    adjusted p that decides it (the largest of the members for ``all``, the smallest for
    ``any``); the interval columns are empty.

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
    return typed_claims(pd.DataFrame(rows, columns=list(CLAIM_COLUMNS)))


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
        seeds=seeds_text(common),
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
        "seeds": seeds_text(seeds),
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
    """``df`` (:func:`evaluate_claims` or :func:`palviz.experiments.claims.read_claims`) as a
    markdown table, family by family: a family row in bold (notebook, the claim quoted with
    its source, how it is read, the Holm-adjusted p that decides it, its verdict), then one
    row per comparison (the seeds and their number, the mean difference with its interval to
    one decimal, ``"+2.3 [-0.4, +5.0]"``, percentage points for accuracies; the paired-t p,
    the sign-flip p, the Holm-adjusted p, the comparison's own verdict; the steps per run
    beside the paper's)."""
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
