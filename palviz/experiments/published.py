"""The published numbers the tables stand beside, as data: one :class:`Source` per table (who,
where, what it measures) and one :class:`Published` record per number, transcribed from the
source's text as it prints it.

A record's ``method`` is palviz's table label where palviz trains that method (the LDAM-DRW
paper's "ERM" is palviz's ``"CE"``, Cui et al.'s "Softmax" too) and the source's own name
otherwise (``"CB Focal"``, ``"MiSLAS"``). ``value`` is the number as printed (an error where
the source reports errors), :attr:`Published.accuracy` the top-1 accuracy in percent.
Long-tailed records name an ``imbalance_ratio`` (the exponential profile, docs/reference.md 1),
noisy ones a ``noise_kind`` and ``noise_rate`` (docs/reference.md 4). docs/reference.md 6.4
lists the sources (:func:`sources_markdown`; a test compares).

Not found in any text that could be read: the APL paper's own noise tables (Ma et al., ICML
2020), the ETF+DR numbers of Yang et al. (NeurIPS 2022; their README has none), and the PAL and
ELM papers' tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """One published table: ``name`` (short, shown in the tables' cells), ``citation``,
    ``where`` (table or README section) and ``url``; what it reports: ``reports`` (``"error"``
    or ``"accuracy"``, top-1 in %), ``selection`` (which epoch) and ``spread`` (one run or
    mean +- std); ``setup`` (network and schedule, as the source states them)."""

    name: str
    citation: str
    where: str
    url: str
    reports: str
    selection: str
    spread: str
    setup: str


@dataclass(frozen=True)
class Published:
    """One published number: its ``source`` (a :class:`Source` name), ``dataset``, either
    ``imbalance_ratio`` or ``noise_kind`` and ``noise_rate``, ``method`` (palviz's label where
    palviz trains it), ``source_method`` (the source's own name), ``value`` (as printed, an
    error where the source reports errors) with ``std`` where given, ``digits`` (its printed
    decimals) and ``column`` (which of a source's columns, e.g. ``"reported"`` or
    ``"reproduced"``; empty where it has one)."""

    source: str
    dataset: str
    method: str
    source_method: str
    value: float
    digits: int
    imbalance_ratio: int | None = None
    noise_kind: str | None = None
    noise_rate: float | None = None
    std: float | None = None
    column: str = ""

    @property
    def accuracy(self) -> float:
        """Top-1 accuracy in percent: ``100 - value`` where the source reports an error."""
        error = SOURCES[self.source].reports == "error"
        return round(100 - self.value, self.digits) if error else self.value

    @property
    def text(self) -> str:
        """The accuracy as the source prints it: ``"77.03"``, ``"88.41 +- 0.24"``."""
        spread = "" if self.std is None else f" +- {self.std:.{self.digits}f}"
        return f"{self.accuracy:.{self.digits}f}{spread}"

    @property
    def label(self) -> str:
        """The source's short name, with the column where it has several."""
        return f"{self.source} {self.column}".strip()


LDAM = "LDAM-DRW paper"
CUI = "Cui et al."
MISLAS = "MiSLAS README"
OPENLT = "OpenLT README"
EPS_SOFTMAX = "eps-softmax paper"

SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source(
            LDAM,
            "Cao, Wei, Gaidon, Arechiga, Ma, NeurIPS 2019 (arXiv:1906.07413v2)",
            "Table 2, long-tailed columns",
            "https://arxiv.org/abs/1906.07413",
            "error",
            "best test epoch (kaidic/LDAM-DRW `cifar_train.py` keeps `best_acc1`)",
            "one number per cell",
            "ResNet-32, 200 epochs (docs/reference.md 6.1)",
        ),
        Source(
            CUI,
            "Cui, Jia, Lin, Song, Belongie, CVPR 2019 (arXiv:1901.05555)",
            "Table 2",
            "https://arxiv.org/abs/1901.05555",
            "error",
            "not stated",
            "one number per cell",
            "ResNet-32; Focal with gamma = 1.0; Class-Balanced: its best beta, gamma and loss",
        ),
        Source(
            MISLAS,
            "Zhong, Cui, Liu, Jia, CVPR 2021 (dvlab-research/MiSLAS, commit 0fc381e)",
            "README, Results and Models, 1) CIFAR-10-LT and CIFAR-100-LT",
            "https://github.com/dvlab-research/MiSLAS",
            "accuracy",
            "not stated",
            "one number per cell",
            "ResNet-32; stage 1 trains with mixup, stage 2 is MiSLAS",
        ),
        Source(
            OPENLT,
            "liming-ai/OpenLT (commit 33fa2a9)",
            "README, Reproduce Results, CIFAR100-LT (Imbalance Ratio 100)",
            "https://github.com/liming-ai/OpenLT",
            "accuracy",
            "not stated",
            "one number per cell; 'reported' (BalanceSoftmax's from LADE) and 'reproduced'",
            "not stated in the README",
        ),
        Source(
            EPS_SOFTMAX,
            "Wang, Zhou, Zhai, Jiang, Ji, Liu, eps-softmax, NeurIPS 2024 (cswjl/eps-softmax)",
            "Table 2 (the APL losses re-run; its Sec. 4.1 follows APL's set-up)",
            "https://github.com/cswjl/eps-softmax",
            "accuracy",
            "last epoch",
            "mean +- std over 3 runs",
            "as APL (docs/reference.md 6.2), per its Sec. 4.1; FL's gamma not stated in the table",
        ),
    )
}


def _table(
    source: str,
    columns: Sequence[tuple[str, dict]],
    rows: dict[str, Sequence[str | None]],
    methods: dict[str, str],
    column: str = "",
) -> list[Published]:
    """Records of one printed table: ``columns`` are ``(dataset, setting)``, ``rows`` the
    printed cells by the source's method name (``None`` for a ``-``; ``"91.03+-0.28"`` for a
    mean and std), ``methods`` palviz's labels of the source's names, ``column`` the source's
    column where it has several."""
    records = []
    for name, cells in rows.items():
        if len(cells) != len(columns):
            raise ValueError(f"{source}, {name}: {len(cells)} cells for {len(columns)} columns")
        for (dataset, setting), cell in zip(columns, cells, strict=True):
            if cell is None:
                continue
            value, _, std = cell.partition("+-")
            records.append(
                Published(
                    source=source,
                    dataset=dataset,
                    method=methods.get(name, name),
                    source_method=name,
                    value=float(value),
                    digits=len(value.partition(".")[2]),
                    std=float(std) if std else None,
                    column=column,
                    **setting,
                )
            )
    return records


def _lt(dataset: str, rho: int) -> tuple[str, dict]:
    return dataset, {"imbalance_ratio": rho}


# Cao et al. Table 2, top-1 error (%), long-tailed columns (its step-imbalance ones left out).
_LDAM_COLUMNS = [_lt("cifar10", 100), _lt("cifar10", 10), _lt("cifar100", 100), _lt("cifar100", 10)]
_LDAM_ROWS = {
    "ERM": ("29.64", "13.61", "61.68", "44.30"),
    "Focal [Lin et al., 2017]": ("29.62", "13.34", "61.59", "44.22"),
    "LDAM": ("26.65", "13.04", "60.40", "43.09"),
    "CB RS": ("29.45", "13.21", "66.56", "44.94"),
    "CB RW [Cui et al., 2019]": ("27.63", "13.46", "66.01", "42.88"),
    "CB Focal [Cui et al., 2019]": ("25.43", "12.90", "63.98", "42.01"),
    "HG-DRS": ("27.16", "14.03", None, None),
    "LDAM-HG-DRS": ("24.42", "12.72", None, None),
    "M-DRW": ("24.94", "13.57", "59.49", "43.78"),
    "LDAM-DRW": ("22.97", "11.84", "57.96", "41.29"),
}
# Cui et al. Table 2, classification error (%), imbalance 100, 50, 10 (its 200, 20, 1 left out).
_CUI_COLUMNS = [_lt(d, rho) for d in ("cifar10", "cifar100") for rho in (100, 50, 10)]
_CUI_ROWS = {
    "Softmax": ("29.64", "25.19", "13.61", "61.68", "56.15", "44.29"),
    "Focal (gamma = 1.0)": ("29.62", "23.29", "13.34", "61.59", "55.68", "44.22"),
    "Class-Balanced": ("25.43", "20.73", "12.51", "60.40", "54.68", "42.01"),
}
# MiSLAS README, top-1 accuracy (%), IF = 10, 50, 100.
_MISLAS_COLUMNS = [_lt(d, rho) for d in ("cifar10", "cifar100") for rho in (10, 50, 100)]
_MISLAS_ROWS = {
    "mixup (MiSLAS stage 1)": ("87.6", "78.1", "72.8", "59.1", "45.4", "39.5"),
    "MiSLAS": ("90.0", "85.7", "82.5", "63.2", "52.3", "47.0"),
}
# OpenLT README, CIFAR100-LT rho = 100: Reported Result, Our Implementation.
_OPENLT_COLUMN = [_lt("cifar100", 100)]
_LA = {"LogitAdjust": "LA-CE"}
_OPENLT_ROWS = {
    "CE": ("39.1", "40.3"),
    "LDAM-DRW": ("42.04", "42.9"),
    "LogitAdjust": ("43.89", "45.3"),
    "BalanceSoftmax": ("45.1", "46.47"),
}
# eps-softmax Table 2, last-epoch test accuracy (%), mean+-std over 3 runs: symmetric 0.2-0.8,
# asymmetric 0.1-0.4 (its clean column and the methods palviz does not train left out).
_NOISE_COLUMNS = [
    (d, {"noise_kind": kind, "noise_rate": eta})
    for d in ("cifar10", "cifar100")
    for kind, rates in (("symmetric", (0.2, 0.4, 0.6, 0.8)), ("asymmetric", (0.1, 0.2, 0.3, 0.4)))
    for eta in rates
]
_EPS_ROWS = {
    "CE": "75.47+-0.27 58.46+-0.21 39.16+-0.50 18.95+-0.38 86.98+-0.31 83.82+-0.04 79.35+-0.66 "
    "75.28+-0.58 56.21+-2.04 39.31+-0.74 22.38+-0.74 7.33+-0.10 65.10+-0.74 58.26+-0.31 "
    "49.99+-0.54 41.15+-1.04",
    "FL": "74.50+-0.18 58.23+-0.40 38.69+-0.06 19.47+-0.74 86.64+-0.12 83.08+-0.07 79.34+-0.30 "
    "74.68+-0.31 56.32+-1.43 40.83+-0.52 22.44+-0.54 7.68+-0.37 65.00+-0.46 58.12+-0.44 "
    "51.16+-1.32 41.46+-0.38",
    "GCE": "86.87+-0.06 82.24+-0.25 68.43+-0.26 25.82+-1.03 88.43+-0.20 86.17+-0.29 80.72+-0.42 "
    "74.01+-0.53 64.55+-0.36 56.60+-1.61 45.19+-0.92 19.85+-0.88 63.94+-2.08 60.89+-0.06 "
    "53.36+-1.58 40.82+-0.85",
    "SCE": "87.58+-0.05 79.47+-0.48 59.14+-0.07 25.88+-0.49 89.87+-0.27 86.48+-0.25 81.30+-0.18 "
    "74.99+-0.16 55.23+-0.76 40.23+-0.29 21.44+-0.52 7.63+-0.24 64.54+-0.30 57.62+-0.70 "
    "50.17+-0.19 41.01+-0.74",
    "NCE+MAE": "86.79+-0.28 83.60+-0.14 75.93+-0.41 46.96+-0.67 88.03+-0.27 85.53+-0.08 "
    "81.10+-0.52 74.98+-0.48 63.21+-0.44 57.91+-0.45 45.26+-0.44 23.72+-0.99 65.70+-1.04 "
    "62.87+-0.42 55.82+-0.19 41.86+-0.27",
    "NCE+RCE": "88.41+-0.24 85.13+-0.56 79.20+-0.06 55.28+-1.26 90.25+-0.08 88.11+-0.23 "
    "85.35+-0.18 79.43+-0.21 64.60+-0.92 58.64+-0.19 45.25+-0.50 24.87+-0.52 66.20+-0.28 "
    "63.18+-0.37 55.05+-0.32 41.21+-0.66",
    "NFL+RCE": "89.00+-0.23 85.90+-0.19 79.79+-0.52 55.47+-2.73 89.99+-0.35 88.33+-0.26 "
    "85.27+-0.13 79.05+-0.35 64.57+-0.52 57.64+-0.74 45.47+-0.59 24.35+-0.32 66.18+-0.38 "
    "63.63+-0.30 55.33+-0.25 40.82+-0.67",
}

#: Every published number, in the order of :data:`SOURCES`.
PUBLISHED: tuple[Published, ...] = tuple(
    _table(LDAM, _LDAM_COLUMNS, _LDAM_ROWS, {"ERM": "CE", "Focal [Lin et al., 2017]": "Focal"})
    + _table(CUI, _CUI_COLUMNS, _CUI_ROWS, {"Softmax": "CE", "Focal (gamma = 1.0)": "Focal"})
    + _table(MISLAS, _MISLAS_COLUMNS, _MISLAS_ROWS, {})
    + _table(OPENLT, _OPENLT_COLUMN, {k: v[:1] for k, v in _OPENLT_ROWS.items()}, _LA, "reported")
    + _table(OPENLT, _OPENLT_COLUMN, {k: v[1:] for k, v in _OPENLT_ROWS.items()}, _LA, "reproduced")
    + _table(
        EPS_SOFTMAX, _NOISE_COLUMNS, {k: v.split() for k, v in _EPS_ROWS.items()}, {"FL": "Focal"}
    )
)

#: The LDAM-DRW paper's top-1 accuracy as a fraction, keyed by ``(dataset, imbalance ratio,
#: method)`` (a view of :data:`PUBLISHED`). "CE" is the paper's ERM row. The reference code
#: keeps the best test-set epoch, so these stand beside palviz's *best-epoch* column.
PUBLISHED_LT_ACCURACY: dict[tuple[str, int, str], float] = {
    (r.dataset, r.imbalance_ratio, r.method): round(r.accuracy / 100, r.digits + 2)
    for r in PUBLISHED
    if r.source == LDAM
}


def published_lt_accuracy(dataset: str, imbalance_ratio: float, method: str) -> float | None:
    """The LDAM-DRW paper's accuracy (a fraction) of ``method`` on ``dataset``-LT at
    ``imbalance_ratio`` (:data:`PUBLISHED_LT_ACCURACY`), or ``None`` where it has none."""
    return PUBLISHED_LT_ACCURACY.get((dataset, int(imbalance_ratio), method))


def published_for(
    dataset: str,
    method: str,
    *,
    imbalance_ratio: float | None = None,
    noise_kind: str | None = None,
    noise_rate: float | None = None,
) -> list[Published]:
    """Every record of ``method`` on ``dataset`` at one imbalance ratio or noise setting
    (``noise_rate`` None: every rate of ``noise_kind``)."""
    if (imbalance_ratio is None) == (noise_kind is None):
        raise ValueError(
            "published_for needs exactly one of imbalance_ratio and noise_kind, got "
            f"imbalance_ratio={imbalance_ratio!r}, noise_kind={noise_kind!r}"
        )
    return [
        r
        for r in PUBLISHED
        if (r.dataset, r.method) == (dataset, method)
        and (r.imbalance_ratio, r.noise_kind) == (imbalance_ratio, noise_kind)
        and (noise_rate is None or r.noise_rate == noise_rate)
    ]


def published_text(records: Iterable[Published]) -> str:
    """Records as one table cell: ``"77.03 (LDAM-DRW paper); 42.9 (OpenLT README reproduced)"``
    (accuracy in %, as many decimals as the source prints), ``"-"`` for none."""
    return "; ".join(f"{r.text} ({r.label})" for r in records) or "-"


def sources_markdown() -> str:
    """:data:`SOURCES` as a markdown table, with how many numbers each gives
    (docs/reference.md 6.4 holds this table; a test compares)."""
    lines = [
        "| source | citation | where | reports | epoch | spread | numbers |",
        "|---|---|---|---|---|---|---:|",
    ]
    for s in SOURCES.values():
        n = sum(r.source == s.name for r in PUBLISHED)
        cells = (s.name, s.citation, f"[{s.where}]({s.url})", s.reports, s.selection, s.spread)
        lines.append("| " + " | ".join(cells) + f" | {n} |")
    return "\n".join(lines) + "\n"
