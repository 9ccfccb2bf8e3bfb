"""The published numbers the tables stand beside, as data: one :class:`Source` per table (who,
where, what it measures) and one :class:`Published` record per number, transcribed from the
source's text as it prints it into the package's ``published.toml``, read here.

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

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources


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
_DATA = tomllib.loads((resources.files(__package__) / "published.toml").read_text(encoding="utf-8"))
#: Every source, by name, in the order of the package's ``published.toml``.
SOURCES: dict[str, Source] = {s["name"]: Source(**s) for s in _DATA["source"]}


def _records(table: dict) -> list[Published]:
    """Records of one printed table of ``published.toml``: its ``columns`` are ``[dataset,
    imbalance ratio]`` or ``[dataset, noise kind, noise rate]``, its ``rows`` the printed
    cells by the source's method name (``-`` where it has none; ``91.03+-0.28`` for a mean and
    std), ``methods`` palviz's labels of the source's names, ``column`` the source's column
    where it has several."""
    records = []
    for name, row in table["rows"].items():
        cells, columns = row.split(), table["columns"]
        if len(cells) != len(columns):
            raise ValueError(
                f"{table['source']}, {name}: {len(cells)} cells for {len(columns)} columns"
            )
        for (dataset, *setting), cell in zip(columns, cells, strict=True):
            if cell == "-":
                continue
            value, _, std = cell.partition("+-")
            keys = ("imbalance_ratio",) if len(setting) == 1 else ("noise_kind", "noise_rate")
            records.append(
                Published(
                    source=table["source"],
                    dataset=dataset,
                    method=table.get("methods", {}).get(name, name),
                    source_method=name,
                    value=float(value),
                    digits=len(value.partition(".")[2]),
                    std=float(std) if std else None,
                    column=table.get("column", ""),
                    **dict(zip(keys, setting, strict=True)),
                )
            )
    return records


#: Every published number, in the order of :data:`SOURCES`.
PUBLISHED: tuple[Published, ...] = tuple(r for table in _DATA["table"] for r in _records(table))

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
