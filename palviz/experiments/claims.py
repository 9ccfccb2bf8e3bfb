"""The papers' claims, each read against a confidence interval of our own runs, never asserted.

A claim ("PAL improves CE by ... at rho = 100") becomes a comparison of two methods in one
setting (:class:`Claim`): for every seed, the difference ``method - baseline`` of one metric,
paired by seed (runs with the same seed share the data subset, the label-noise draw and the
initialisation). This module holds the claims: the papers' sentences (:data:`QUOTES`), the
comparisons each notebook reads (:func:`long_tailed_claims`, :func:`noisy_claims`) and the
runs they read (:func:`claim_runs`), and ``figures/<profile>/claims.csv``, the table of
their readings (:data:`CLAIM_COLUMNS`; one file per profile, notebooks merged into it by
:func:`write_claims`).

The statistics are :mod:`palviz.stats`: the per-seed differences and their Student-t
interval, the paired t and sign-flip p-values, Holm's correction where a family needs it and
the verdicts, "consistent" when the comparison lies measurably on the side the paper claims,
"contradicted" when it lies measurably on the other side, else "inconclusive at this size" (a
small profile often cannot tell; that is a finding about the profile, not about the paper).
Each comparison is read twice, side by side: at the last epoch and at the best one
(:data:`BEST_EPOCH`), beside the epoch the paper reads (:data:`PAPER_READS`).
:mod:`palviz.experiments.claims_table` reads the claims against the runs with them
(:func:`~palviz.experiments.claims_table.evaluate_claims`) and prints the table.
"""

from __future__ import annotations

import numbers
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock
import pandas as pd

from palviz.checks import invalid
from palviz.files import atomic_write, figures_dir, resolve_profile
from palviz.stats import READINGS, check_direction

#: Which epoch a paper's numbers are read at, as its text says (:class:`Claim`
#: ``paper_reads``): the ``"best"`` epoch (the highest test accuracy over the epochs, what
#: LDAM-DRW's reference code reports as ``best_acc1``), the ``"last"`` one, or ``"not
#: stated"``.
PAPER_READS = ("best", "last", "not stated")

#: The best-epoch twin of a metric read at the last epoch: each claim on ``"last_acc"`` is also
#: read on ``"best_acc"``, side by side (the ``best_`` columns of :data:`CLAIM_COLUMNS`).
BEST_EPOCH = {"last_acc": "best_acc"}

#: What one reading of a comparison gives: the mean difference and its interval, the p-values,
#: Holm's adjustment and the verdict. :data:`CLAIM_COLUMNS` holds them once for the claim's
#: ``metric`` (the last epoch) and once, prefixed ``best_``, for its :data:`BEST_EPOCH` twin.
READING_COLUMNS = ("mean_diff", "ci_low", "ci_high", "p_value", "p_signflip", "p_holm", "verdict")

#: The columns of :func:`~palviz.experiments.claims_table.evaluate_claims` and of
#: ``claims.csv``, in order. A claim is a family of comparisons: one ``level == "family"`` row
#: (its verdict under its ``reading``) above one ``level == "member"`` row per comparison;
#: ``paper_reads`` says which epoch the paper used, the :data:`READING_COLUMNS` read the last
#: epoch and the ``best_`` ones the best epoch.
CLAIM_COLUMNS = (
    "profile",
    "notebook",
    "family",
    "level",
    "reading",
    "claim",
    "source",
    "paper_reads",
    "comparison",
    "metric",
    "seeds",
    "n_seeds",
    *READING_COLUMNS,
    *(f"best_{c}" for c in READING_COLUMNS),
    "steps_per_run",
    "paper_steps",
)

#: The number columns: from ``n_seeds`` on, all but the verdicts.
_NUMBER_COLUMNS = tuple(
    c
    for c in CLAIM_COLUMNS[CLAIM_COLUMNS.index("n_seeds") :]
    if c not in ("verdict", "best_verdict")
)
_TEXT_COLUMNS = tuple(c for c in CLAIM_COLUMNS if c not in _NUMBER_COLUMNS)

_NOTEBOOK = re.compile(r"^\d\d$")


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
      epoch); its :data:`BEST_EPOCH` twin (``"best_acc"``) is read beside it;
    - ``direction``: +1 if the paper says the method is higher, -1 if lower;
    - ``family``: the short name of the claim this comparison belongs to (default: the
      ``claim`` text); the comparisons of one family are read together;
    - ``reading``: how the family is read, one of :data:`~palviz.stats.READINGS`
      (``"all"``: the text says every setting; ``"any"``; ``"single"``: one comparison);
    - ``seeds``: the seeds read (``None``: every seed both methods ran), e.g. a
      replication on seeds another profile never used;
    - ``paper_reads``: which epoch the paper's numbers are read at, one of
      :data:`PAPER_READS` (a paper's claim: its :class:`Quote`'s), or ``""`` for a question
      of palviz's own, not a paper's.
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
    paper_reads: str = "not stated"

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
        object.__setattr__(self, "direction", check_direction(self.direction))
        if not isinstance(self.family, str):
            raise invalid("family", self.family, "a string (empty: the claim's text)")
        object.__setattr__(self, "family", self.family.strip() or self.claim)
        if self.reading not in READINGS:
            raise invalid("reading", self.reading, f"one of {READINGS}")
        if self.paper_reads not in (*PAPER_READS, ""):
            rule = f"one of {PAPER_READS}, or '' for a question that is not a paper's"
            raise invalid("paper_reads", self.paper_reads, rule)
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


def seeds_text(seeds: Iterable[Any]) -> str:
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


# ------------------------------------------------------------------------------ claims.csv


def typed_claims(df: pd.DataFrame) -> pd.DataFrame:
    """The column types of a claims frame: text, ``int`` seeds, float numbers, nullable
    integer steps."""
    df = df.copy()
    for column in _TEXT_COLUMNS:
        df[column] = df[column].fillna("").astype(str).astype(object)
    df["n_seeds"] = df["n_seeds"].astype(int)
    for column in _NUMBER_COLUMNS:
        if column not in ("n_seeds", "steps_per_run", "paper_steps"):
            df[column] = df[column].astype(float)
    for column in ("steps_per_run", "paper_steps"):
        df[column] = pd.to_numeric(df[column], errors="coerce").astype("Int64")
    return df.reset_index(drop=True)


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
        return typed_claims(pd.DataFrame(columns=list(CLAIM_COLUMNS)))
    text_columns = _TEXT_COLUMNS
    df = pd.read_csv(
        path,
        dtype={c: str for c in text_columns},
        keep_default_na=False,
        na_values={c: ["", "NaN", "nan"] for c in CLAIM_COLUMNS if c not in text_columns},
    )
    if list(df.columns) != list(CLAIM_COLUMNS):
        raise ValueError(f"{path} has columns {list(df.columns)}, not {list(CLAIM_COLUMNS)}")
    return typed_claims(df)


def write_claims(rows: pd.DataFrame | Iterable[pd.DataFrame], profile: str) -> Path:
    """Merge ``rows`` (:func:`~palviz.experiments.claims_table.evaluate_claims`, or several
    such frames) into ``figures_dir(profile) / "claims.csv"`` and return its path.

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
    new = typed_claims(rows)
    path = claims_path(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Two notebooks run at once (palviz figures --jobs 2) may both merge their claims: the
    # read-merge-write below holds a file lock, so neither loses the other's rows.
    with filelock.FileLock(str(path.with_name(f".{path.name}.lock"))):
        try:
            old = read_claims(profile)
        except ValueError as error:  # written by another version of palviz: start afresh
            warnings.warn(f"{error}; its rows are dropped, the file is rewritten", stacklevel=2)
            old = typed_claims(pd.DataFrame(columns=list(CLAIM_COLUMNS)))
        replaced = set(zip(new["profile"], new["notebook"], strict=True))
        pairs = zip(old["profile"], old["notebook"], strict=True)
        keep = [(p, nb) not in replaced for p, nb in pairs]
        merged = pd.concat([old[keep], new], ignore_index=True) if len(old) else new
        merged = typed_claims(merged).sort_values(["notebook"], kind="stable")
        with atomic_write(path, "w") as handle:
            merged.to_csv(handle, index=False)
    return path


# ----------------------------------------------------------------- the claims the notebooks read


@dataclass(frozen=True)
class Quote:
    """A sentence of a paper, verbatim (a typo kept and marked ``[sic]``), and where it stands.
    ``docs/reference.md`` ("Quoted sentences") holds the paper's passage around it; a test
    checks that each quote is in it word for word. ``paper_reads``: the epoch at which the
    paper reports the numbers the sentence is about, one of :data:`PAPER_READS`, as its text
    says (the claims built from the quote carry it)."""

    paper: str
    location: str
    text: str
    paper_reads: str = "not stated"

    def __post_init__(self) -> None:
        if self.paper_reads not in PAPER_READS:
            raise invalid("paper_reads", self.paper_reads, f"one of {PAPER_READS}")


#: The sentences the claims quote, by key.
QUOTES: dict[str, Quote] = {
    "pal_lt": Quote(
        "PAL",
        "Sec. 4 (after the weight-decay theorem that follows Thm. 4.1), "
        "on the experiments of Sec. 5.1 (Tables 1-2)",
        "PAL can significantly boost the performance of the existing long-tailed "
        "classification methods",
        paper_reads="not stated",  # Sec. 5.1 reports accuracies, not at which epoch
    ),
    "elm_lt": Quote(
        "ELM",
        "Sec. IV, on Table 1 (imbalanced CIFAR)",
        "ELM loss with DRW was the highest accuracy in all ratios",
        paper_reads="not stated",  # Sec. IV: "conducted one time", no epoch named
    ),
    "ce_fnpal": Quote(
        "PAL",
        "Sec. 5.2, Results (Tables 3-4)",
        "CE+FNPAL performs much better than the original CE in all noisy cases",
        paper_reads="not stated",  # Tables 3-4: "validation accuracy", no epoch named
    ),
    "apl_fnpal": Quote(
        "PAL",
        "Sec. 5.2, Results (Tables 3-4)",
        "we also add FNPAL to APLs (NCE+RCE and NFL+RCE), which surprisingly brings obvious "
        "positive gains",
        paper_reads="not stated",  # Tables 3-4, as above
    ),
    "fnpn": Quote(
        "PAL",
        "Sec. 5.2 (Fig. 5a: CIFAR-10, symmetric 0.6)",
        "Under the same $s$, CE+FNPAL always shows better performance than CE+FNPN",
        paper_reads="not stated",  # Fig. 5a plots accuracies, no epoch named
    ),
}

_ORIENT = "(palviz question, not a paper claim) does the {o} orientation of PAL's simplex help?"

RIVAL_FAMILY = "fixed ETF + DR against CE+PAL and against a learnable classifier"
_RIVAL = (
    f"(palviz question, not a paper claim) {RIVAL_FAMILY}: does ETF+DR (Yang et al., NeurIPS "
    "2022, a fixed ETF classifier like PAL's) beat both?"
)
#: The methods of ELM's CIFAR-LT table (Kato & Hotta, Table 1: CE, Focal, EQL v2, IB-Focal,
#: LMSCE, LDAM, MM-LDAM, their DRW forms, ELM) that palviz trains: "ELM loss with DRW was the
#: highest accuracy in all ratios" is read against these only, never LA-CE or ETF+DR.
ELM_TABLE = (
    "CE",
    "CE-DRW",
    "Focal",
    "EQLv2",
    "IB-Focal",
    "LMSCE",
    "LDAM-DRW",
    "MM-LDAM-DRW",
    "ELM",
)


def _source(key: str) -> str:
    q = QUOTES[key]
    return f"{q.paper}, {q.location}"


def _quoted(key: str) -> dict[str, str]:
    """The fields of a :class:`Claim` that come from ``QUOTES[key]``: its text, its source and
    the epoch the paper reads."""
    q = QUOTES[key]
    return {"claim": q.text, "source": _source(key), "paper_reads": q.paper_reads}


def _paper_claim(
    notebook: str, key: str, family: str, baseline: str, method: str, where: dict, seeds: Any
) -> Claim:
    """The claim ``QUOTES[key]`` read as ``method - baseline`` at ``where``, one of the
    comparisons of ``family`` that must all hold (``reading="all"``)."""
    return Claim(notebook, **_quoted(key), baseline=baseline, method=method, where=where,
                 family=family, reading="all", seeds=seeds)  # fmt: skip


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
    - "ELM-DRW highest" (``elm_lt``, ``all``): ``ELM-DRW - M`` for every method of
      :data:`ELM_TABLE` the profile trains without PAL, at every ratio (so not LA-CE or ETF+DR);
    - with ETF+DR, a palviz question (:data:`RIVAL_FAMILY`, ``all``): ``ETF+DR - CE+PAL``
      and ``ETF+DR - CE`` (where trained) at every setting;
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
            family = "PAL boosts long-tailed methods" + suffix
            claims.append(_paper_claim("06", "pal_lt", family, m, m + "+PAL", where, seeds))
    if "ELM-DRW" in methods:
        for dataset, rho in settings:
            where = {"dataset": dataset, "imbalance_ratio": rho}
            for m in (m for m in methods if m in ELM_TABLE):
                family = "ELM-DRW highest in all ratios" + suffix
                claims.append(_paper_claim("06", "elm_lt", family, m, "ELM-DRW", where, seeds))
    if "ETF+DR" in methods:  # the rival against PAL (CE+PAL) and a learnable classifier (CE)
        bases = ["CE+PAL"] * ("CE" in pal) + ["CE"] * ("CE" in methods)
        reading = "all" if len(bases) * len(settings) > 1 else "single"
        for (dataset, rho), base in ((s, b) for s in settings for b in bases):
            where = {"dataset": dataset, "imbalance_ratio": rho}
            kw = {"paper_reads": "", "family": RIVAL_FAMILY + suffix, "reading": reading}
            claims.append(Claim("06", _RIVAL, "palviz", base, "ETF+DR", where, **kw, **common))
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
                        paper_reads="",  # palviz's question: no paper to read it at an epoch
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
    return f"(replication, seeds {seeds_text(seeds)})"


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
                family = "CE+FNPAL beats CE in all noisy cases" + suffix
                claims.append(
                    _paper_claim("07", "ce_fnpal", family, "CE", "CE+FNPAL", where, seeds)
                )
        where = {"dataset": dataset, "noise_kind": head["kind"], "noise_rate": head["eta"]}
        for apl in ("NCE+RCE", "NFL+RCE"):
            if seeds is not None and not {apl, apl + "+FNPAL"} <= head_methods:
                continue  # a replication reads only what the replicated profile trains
            family = "FNPAL gains on APLs" + suffix
            claims.append(
                _paper_claim("07", "apl_fnpal", family, apl, apl + "+FNPAL", where, seeds)
            )
        if {"CE+FNPN", "CE+FNPAL"} <= head_methods:
            labels = [("CE+FNPN", "CE+FNPAL")]
            labels += [(f"CE+FNPN s={x:g}", f"CE+FNPAL s={x:g}") for x in setup["fnpn_scales"]]
            for base, method in labels:
                family = "FNPAL beats FNPN under the same s" + suffix
                claims.append(_paper_claim("07", "fnpn", family, base, method, where, seeds))
    rep = _replication(setup) if seeds is None else None
    if rep:
        from palviz.experiments.recipes import noisy_setup

        fresh, of = rep
        claims += noisy_claims(noisy_setup(of, [*setup["datasets"]]), seeds=fresh, tag=_tag(fresh))
    return claims
