"""The timing record of ``palviz figures``: how long each notebook took to run.

Measured run times are never typed. They come only from a timing record that ``palviz
figures`` wrote (:func:`palviz.cli.figures.timings_record`): ``figures_dir(profile)/
timings.json`` if it exists, else the committed copy ``docs/results/<profile>/timings.json``
(:func:`timing_record`). A lesson the record does not time is "not measured". The book's
syllabus page (:mod:`palviz.book_syllabus`) shows them beside the study-time estimates of
``docs/syllabus.toml``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from palviz.files import figures_dir, project_root

__all__ = ["NOT_MEASURED", "TimingRecord", "record_paths", "run_time_text", "timing_record"]

NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class TimingRecord:
    """The parts of a ``timings.json`` the book's syllabus shows, and where it was read from."""

    profile: str
    date_utc: str  # "2026-12-02T02:28:19Z" as the record has it
    cold: bool | None  # the run trained runs first (cold) or only read the cache (warm)
    notebook_seconds: dict[str, float] = field(default_factory=dict)
    training_seconds: float | None = None
    runs_trained: int | None = None
    source: Path | None = None
    partial: bool = False  # the record of `palviz figures --only ...`: some notebooks only

    @property
    def date(self) -> str:
        """The record's day, ``YYYY-MM-DD`` (or the date as written if it is not ISO)."""
        return self.date_utc[:10] if len(self.date_utc) >= 10 else self.date_utc

    @property
    def kind(self) -> str:
        """``"cold"``, ``"warm"`` or ``"cold or warm not recorded"``."""
        return {True: "cold", False: "warm"}.get(self.cold, "cold or warm not recorded")

    def seconds(self, stem: str) -> float | None:
        """The measured seconds of notebook ``stem`` (``"01_simplex_prototypes"``), or None."""
        value = self.notebook_seconds.get(stem)
        return float(value) if isinstance(value, int | float) else None


def _read(path: Path, profile: str) -> TimingRecord | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("notebook_seconds"), dict):
        return None
    cold = raw.get("cold")
    return TimingRecord(
        profile=str(raw.get("profile") or profile),
        date_utc=str(raw.get("date_utc") or "date not recorded"),
        cold=cold if isinstance(cold, bool) else None,
        notebook_seconds=dict(raw["notebook_seconds"]),
        training_seconds=raw.get("training_seconds"),
        runs_trained=raw.get("runs_trained"),
        source=path,
        partial=bool(raw.get("only")),
    )


def record_paths(
    profile: str, figures: Path | None = None, results: Path | None = None
) -> tuple[Path, Path]:
    """Where :func:`timing_record` looks, in order: ``figures/timings.json`` (default
    ``figures_dir(profile)``), then ``results/<profile>/timings.json`` (default
    ``docs/results/``)."""
    figures = Path(figures) if figures is not None else figures_dir(profile)
    results = Path(results) if results is not None else project_root() / "docs" / "results"
    return figures / "timings.json", results / profile / "timings.json"


def timing_record(
    profile: str, figures: Path | None = None, results: Path | None = None
) -> TimingRecord | None:
    """The timing record of ``profile``: ``figures/timings.json`` (default
    ``figures_dir(profile)``) if present and readable, else ``results/<profile>/timings.json``
    (default ``docs/results/``, the committed copies); a record of some notebooks only
    (``--only``) is used only when no record of all of them exists; None if neither
    exists."""
    found = [_read(path, profile) for path in record_paths(profile, figures, results)]
    found = [r for r in found if r is not None]
    # a run of some notebooks only (`palviz figures --only 02`) gives way to a record that
    # times every lesson, so the syllabus does not lose the other lessons' times
    complete = [r for r in found if not r.partial]
    return (complete or found or [None])[0]


def run_time_text(record: TimingRecord | None, stem: str) -> str:
    """``"22.2 s (quick, 2026-12-02, cold)"``, or ``"not measured"``."""
    seconds = record.seconds(stem) if record is not None else None
    if seconds is None:
        return NOT_MEASURED
    return f"{seconds:.1f} s ({record.profile}, {record.date}, {record.kind})"
