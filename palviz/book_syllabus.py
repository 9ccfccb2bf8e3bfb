"""The book's syllabus page: ``docs/syllabus.toml`` (each lesson's prerequisites and
study-time estimate), each notebook's "What you will learn" and the measured run times of the
timing record (:mod:`palviz.timings`). :func:`palviz.book.prepare_sources` writes the page.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from pathlib import Path

import nbformat

from palviz.files import project_root
from palviz.timings import NOT_MEASURED, TimingRecord, run_time_text

__all__ = ["course_length", "intro", "syllabus", "syllabus_page"]

_LEARN = re.compile(r"^\*\*What you will (?:learn|see)\.?\*\*\.?\s*", re.MULTILINE)


def intro(nb: nbformat.NotebookNode) -> tuple[str, str]:
    """(title, what-you-will-learn markdown) from the notebook's first markdown cell."""
    text = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    heading = re.search(r"^#\s+(.+)$", text, re.MULTILINE)
    title = heading.group(1).strip() if heading else ""
    found = _LEARN.search(text)
    if not found:
        return title, ""
    first, *rest = re.split(r"\n\s*\n", text[found.end() :].lstrip("\n"))
    # the goals' paragraph, with a table or list that follows it (lesson 00's methods)
    kept = [first] + list(itertools.takewhile(lambda p: p.lstrip()[:2] in ("| ", "- "), rest))
    return title, "\n\n".join(kept).strip()


def syllabus() -> dict[str, dict]:
    """``docs/syllabus.toml``: per lesson number its earlier lessons (``after``), its
    ``background`` and its ``study_minutes_estimate``; plus the ``study_time_note``."""
    with open(project_root() / "docs" / "syllabus.toml", "rb") as handle:
        return tomllib.load(handle)


def course_length() -> str:
    """The front page's words on the course's length: the lessons and the sum of the
    syllabus's per-lesson study estimates, in hours."""
    plans = syllabus()["lessons"]
    hours = sum(p["study_minutes_estimate"] for p in plans.values()) / 60
    return (
        f"The course has {len(plans)} lessons and takes about {hours:.0f} hours of study in all "
        "(the sum of the syllabus's per-lesson estimates), to be read in order from lesson 00."
    )


def _shown_path(path: Path | None) -> str:
    if path is None:
        return "?"
    try:
        return path.resolve().relative_to(project_root()).as_posix()
    except ValueError:
        return path.as_posix()


def syllabus_page(lessons: list[tuple[str, str, str]], record: TimingRecord | None) -> str:
    """The syllabus page (MyST) for ``lessons`` (stem, title, what-you-will-learn)."""
    data = syllabus()
    if record is None:
        measured = f"Measured run times: {NOT_MEASURED} (no timing record of this profile)."
    else:
        where = _shown_path(record.source)
        measured = (
            f"Measured run times: from the timing record of the {record.profile} profile, "
            f"{record.date_utc}, a {record.kind} run (`{where}`): seconds to execute each "
            "notebook."
        )
        if record.cold and record.training_seconds:
            measured += (
                f" Training the missing runs took {record.training_seconds:.0f} s "
                "before the notebooks ran and is not counted in any lesson."
            )
    parts = [
        "# Syllabus\n",
        "The lessons in order: what each builds on, what it teaches (the "
        'notebook\'s own "What you will learn"), how long it takes to study and how long '
        "it took to run.\n",
        f"Study times: {data['study_time_note']}. {measured}\n",
    ]
    for stem, title, summary in lessons:
        plan = data["lessons"].get(stem[:2])
        if plan is None:
            parts.append(f"({stem[:2]}-syllabus)=\n## {title}\n\nNot in `docs/syllabus.toml`.\n")
            continue
        earlier = ", ".join(f"[{n}](#{n}-syllabus)" for n in plan["after"])
        earlier = f"lessons {earlier}" if earlier else "no earlier lesson"
        parts.append(
            f"({stem[:2]}-syllabus)=\n## [{title}](notebooks/{stem}.ipynb)\n\n"
            f"Prerequisites\n: {earlier}; " + "; ".join(plan["background"]) + "\n\n"
            f"Study time (estimate)\n: ≈ {plan['study_minutes_estimate']} min\n\n"
            f"Measured run time\n: {run_time_text(record, stem)}\n\n"
            f"**Goals.** {summary or '—'}\n"  # the lesson's own list or table, as it wrote it
        )
    return "\n".join(parts)
