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
(:data:`BEST_EPOCH`), beside the epoch the paper reads (:class:`Quote` ``paper_reads``).
:mod:`palviz.experiments.claims_table` reads the claims against the runs with them
(:func:`~palviz.experiments.claims_table.evaluate_claims`) and prints the table.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

import filelock
import pandas as pd

from palviz.checks import invalid
from palviz.files import atomic_write, figures_dir, resolve_profile

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

#: The type of each number column (from ``n_seeds`` on, all but the verdicts): ``int`` seed
#: counts, nullable integer steps, float numbers.
_DTYPES = {
    c: {"n_seeds": int, "steps_per_run": "Int64", "paper_steps": "Int64"}.get(c, float)
    for c in CLAIM_COLUMNS[CLAIM_COLUMNS.index("n_seeds") :]
    if c not in ("verdict", "best_verdict")
}
_TEXT_COLUMNS = [c for c in CLAIM_COLUMNS if c not in _DTYPES]


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
    - ``paper_reads``: which epoch the paper's numbers are read at (a paper's claim: its
      :class:`Quote`'s), or ``""`` for a question of palviz's own, not a paper's.
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
        object.__setattr__(self, "family", self.family or self.claim)

    def comparison(self) -> str:
        """``"<method> - <baseline> (<setting>)"``, the setting ``where`` as text
        (``"noise_kind = symmetric, noise_rate = 0.4"``; no brackets for an empty ``where``)."""
        setting = ", ".join(f"{k} = {_value_text(v)}" for k, v in self.where.items())
        text = f"{self.method} - {self.baseline}"
        return f"{text} ({setting})" if self.where else text


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
    for r in (r for name, runs in groups.items() if name not in excluded for r in runs):
        unique.setdefault(r.spec.key(), r)
    return list(unique.values())


def seeds_text(seeds: Iterable[Any]) -> str:
    """``[0, 1, 2, 3, 4]`` as ``"0-4"``, ``[0, 2, 5, 6]`` as ``"0, 2, 5-6"``; ``""`` if none."""
    values = sorted({int(x) for x in seeds})
    # the values of a run of consecutive ones share their value minus their position
    runs = [[v for _, v in run] for _, run in groupby(enumerate(values), lambda iv: iv[1] - iv[0])]
    return ", ".join(f"{r[0]}" if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


# ------------------------------------------------------------------------------ claims.csv


def typed_claims(df: pd.DataFrame) -> pd.DataFrame:
    """The column types of a claims frame (:data:`_DTYPES`), text columns as ``str`` objects."""
    df = df.astype(_DTYPES)
    df[_TEXT_COLUMNS] = df[_TEXT_COLUMNS].fillna("").astype(str).astype(object)
    return df.reset_index(drop=True)


def read_claims(profile: str) -> pd.DataFrame:
    """The rows of ``claims.csv`` of ``profile`` (columns :data:`CLAIM_COLUMNS`; an empty
    frame when no notebook has written any)."""
    return read_claims_file(figures_dir(resolve_profile(profile)) / "claims.csv")


def read_claims_file(path: str | Path) -> pd.DataFrame:
    """The rows of a ``claims.csv`` at ``path`` (columns :data:`CLAIM_COLUMNS`; an empty frame
    when the file does not exist), e.g. a copy in ``docs/results/<profile>/``."""
    path = Path(path)
    if not path.exists():
        return typed_claims(pd.DataFrame(columns=list(CLAIM_COLUMNS)))
    df = pd.read_csv(
        path,
        dtype={c: str for c in _TEXT_COLUMNS},
        keep_default_na=False,
        na_values={c: ["", "NaN", "nan"] for c in _DTYPES},
    )
    if list(df.columns) != list(CLAIM_COLUMNS):
        raise ValueError(f"{path} has columns {list(df.columns)}, not {list(CLAIM_COLUMNS)}")
    return typed_claims(df)


def write_claims(rows: pd.DataFrame, profile: str) -> Path:
    """Merge ``rows`` (:func:`~palviz.experiments.claims_table.evaluate_claims`) into
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
    columns = list(rows.columns) if isinstance(rows, pd.DataFrame) else rows
    if not isinstance(rows, pd.DataFrame) or columns != list(CLAIM_COLUMNS):
        raise invalid("rows", columns, f"a frame with columns {list(CLAIM_COLUMNS)}")
    others = sorted(set(rows["profile"]) - {profile})
    if others:
        raise invalid("rows", others, f"rows of profile {profile!r} only (profile column)")
    new = typed_claims(rows)
    path = figures_dir(profile) / "claims.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    # Two notebooks run at once (palviz figures --jobs 2) may both merge their claims: the
    # read-merge-write below holds a file lock, so neither loses the other's rows.
    with filelock.FileLock(str(path.with_name(f".{path.name}.lock"))):
        try:
            old = read_claims_file(path)
        except ValueError as error:  # written by another version of palviz: start afresh
            warnings.warn(f"{error}; its rows are dropped, the file is rewritten", stacklevel=2)
            old = typed_claims(pd.DataFrame(columns=list(CLAIM_COLUMNS)))
        keep = ~(old["profile"].eq(profile) & old["notebook"].isin(new["notebook"]))
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
    paper reports the numbers the sentence is about, as its text says (the claims built from
    the quote carry it): the ``"best"`` epoch (the highest test accuracy over the epochs, what
    LDAM-DRW's reference code reports as ``best_acc1``), the ``"last"`` one, or ``"not
    stated"``."""

    paper: str
    location: str
    text: str
    paper_reads: str = "not stated"


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


def _quoted(key: str) -> dict[str, str]:
    """The fields of a :class:`Claim` that come from ``QUOTES[key]``: its text, its source and
    the epoch the paper reads; a paper's sentence holds in every setting (``reading="all"``)."""
    q = QUOTES[key]
    source = f"{q.paper}, {q.location}"
    return {"claim": q.text, "source": source, "paper_reads": q.paper_reads, "reading": "all"}


def _question(text: str, comparisons: int) -> dict[str, str]:
    """The fields of a :class:`Claim` that asks palviz's own question ``text`` (no paper to read
    it at an epoch), over ``comparisons`` comparisons (``"all"`` of them, or a ``"single"`` one)."""
    reading = "all" if comparisons > 1 else "single"
    return {"claim": text, "source": "palviz", "paper_reads": "", "reading": reading}


def _claims(notebook: str, families: list, seeds: Any, tag: str) -> list[Claim]:
    """The claims of ``notebook``, family by family: of each ``(name, fields, pairs, wheres)``
    of ``families``, ``method - baseline`` for each ``(baseline, method)`` of ``pairs`` at each
    setting of ``wheres``, setting by setting, on ``seeds``, ``tag`` appended to the name."""
    suffix = f" {tag}" if tag else ""
    return [
        Claim(notebook, baseline=b, method=m, where=w, family=name + suffix, seeds=seeds, **fields)
        for name, fields, pairs, wheres in families
        for w in wheres
        for b, m in pairs
    ]


def _replicated(
    claims_of: Any, setup: Mapping[str, Any], seeds: Any, recipe: Any, **changes: Any
) -> list[Claim]:
    """``claims_of`` the setup (``recipe(profile, datasets)``, with ``changes``) of the profile
    that ``setup``'s ``replication`` (``{"seeds": fresh, "of": profile}``) replicates, at the
    datasets ``setup`` trains, read on the fresh seeds and tagged ``"(replication, seeds
    5-9)"``; none without a replication or within one (``seeds`` given)."""
    rep = setup.get("replication")
    if seeds is not None or not rep:
        return []
    fresh = tuple(rep["seeds"])
    first = {**recipe(rep["of"], [*setup["datasets"]]), **changes}
    return claims_of(first, seeds=fresh, tag=f"(replication, seeds {seeds_text(fresh)})")


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
    from palviz.experiments.recipes import long_tailed_setup

    wheres = [
        {"dataset": d, "imbalance_ratio": r} for d in setup["datasets"] for r in setup["ratios"]
    ]
    methods = tuple(setup["methods"])
    pal = [m for m in setup.get("pal_methods", methods) if m in methods]
    pal_pairs = [(m, m + "+PAL") for m in pal]
    families = [("PAL boosts long-tailed methods", _quoted("pal_lt"), pal_pairs, wheres)]
    if "ELM-DRW" in methods:
        elm = [(m, "ELM-DRW") for m in methods if m in ELM_TABLE]
        families.append(("ELM-DRW highest in all ratios", _quoted("elm_lt"), elm, wheres))
    if "ETF+DR" in methods:  # the rival against PAL (CE+PAL) and a learnable classifier (CE)
        rival = [(b, "ETF+DR") for b in ["CE+PAL"] * ("CE" in pal) + ["CE"] * ("CE" in methods)]
        question = _question(_RIVAL, len(rival) * len(wheres))
        families.append((RIVAL_FAMILY, question, rival, wheres))
    for o in setup["orientations"] if "CE" in pal else ():
        question = _question(_ORIENT.format(o=o), len(wheres))
        families.append((f"{o} orientation", question, [("CE+PAL", f"CE+PAL ({o})")], wheres))
    # the replication reads no orientation
    again = _replicated(long_tailed_claims, setup, seeds, long_tailed_setup, orientations=())
    return _claims("06", families, seeds, tag) + again


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
    from palviz.experiments.recipes import noisy_setup

    settings = [(kind, eta) for kind in ("symmetric", "asymmetric") for eta in setup[kind]]
    table = set(setup["methods"]) & set(setup["asymmetric_methods"])
    head = setup["headline"]
    head_methods = set(head["methods"])
    # a replication reads only the APLs that the replicated profile trains
    apls = [x for x in ("NCE+RCE", "NFL+RCE") if seeds is None or {x, x + "+FNPAL"} <= head_methods]
    same_s = [("CE+FNPN", "CE+FNPAL")]
    same_s += [(f"CE+FNPN s={x:g}", f"CE+FNPAL s={x:g}") for x in setup["fnpn_scales"]]
    ce = ("CE+FNPAL beats CE in all noisy cases", _quoted("ce_fnpal"))
    apl = ("FNPAL gains on APLs", _quoted("apl_fnpal"))
    fnpn = ("FNPAL beats FNPN under the same s", _quoted("fnpn"))
    families = []
    for dataset in setup["datasets"]:
        noisy = [{"dataset": dataset, "noise_kind": k, "noise_rate": eta} for k, eta in settings]
        headline = [{"dataset": dataset, "noise_kind": head["kind"], "noise_rate": head["eta"]}]
        if {"CE", "CE+FNPAL"} <= table | head_methods:
            families.append((*ce, [("CE", "CE+FNPAL")], noisy))
        families.append((*apl, [(x, x + "+FNPAL") for x in apls], headline))
        if {"CE+FNPN", "CE+FNPAL"} <= head_methods:
            families.append((*fnpn, same_s, headline))
    again = _replicated(noisy_claims, setup, seeds, noisy_setup)
    return _claims("07", families, seeds, tag) + again
