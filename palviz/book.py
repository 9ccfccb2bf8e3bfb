"""The course as a book: the executed notebooks of a profile, the syllabus, the glossary, the
reference and the docs, built by Sphinx with MyST-NB and sphinx-book-theme (``docs/conf.py``).

``palviz figures`` executes each notebook and writes its executed copy with
:func:`write_copy`, then calls :func:`build_book`. What lands in ``build/<profile>/``:

==========================  ===============================================================
``NN_topic.ipynb``          the executed notebook (outputs, figures), the profile in its
                            metadata (``palviz.profile``)
``NN_topic.failed.ipynb``   only after a failed run: the notebook as it stopped, traceback
``NN_topic.failed.json``    what the book says of that failure (:func:`write_failure`)
``book-src/``               the book's sources, written afresh by :func:`prepare_sources`
``book/index.html``         the book: front page, syllabus, the lessons in order, the docs
``jupyter_execute/``,       what MyST-NB and Sphinx keep between builds (the figures taken
``.doctrees/``              out of the copies, the parsed pages)
==========================  ===============================================================

The book is built from the executed copies only (``nb_execution_mode = "off"``): results
unpacked from another machine render without running anything (:func:`build_book` alone).
What the sources get on top of the copies: a note on each lesson page and on the front page
naming the profile and when it ran; a failed lesson's note with the error and the command that
runs it again (its last good page stays); each exercise's hint and solution, folded, after its
``check`` cell; widget outputs as a note (the figure for the default values stays); links to
``docs/glossary.md#x`` turned into glossary ``{term}`` links. The syllabus page
(:mod:`palviz.book_syllabus`) comes from ``docs/syllabus.toml`` (prerequisites, study-time
estimates) plus each notebook's "What you will learn" and the timing record
(:mod:`palviz.timings`).
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat

from palviz.book_syllabus import course_length, intro, syllabus_page
from palviz.files import PROFILES, atomic_write, project_root, write_json
from palviz.plots import WIDGET_NOTE
from palviz.timings import timing_record

__all__ = [
    "ERROR_CHARACTERS",
    "Failure",
    "NotebookFailed",
    "build_book",
    "clear_failure",
    "error_line",
    "executed_at",
    "prepare_sources",
    "read_failure",
    "retry_command",
    "write_copy",
    "write_failure",
]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_CHECK = re.compile(r"\bex(\d\d)\.(q\d+)\.check\(")
_GLOSSARY_LINK = re.compile(r"\[([^\]]+)\]\((?:(?:\.\./)?docs/|\.\./)?(?:glossary\.md)?#([\w-]+)\)")


# ------------------------------------------------------------------ executed copies, failures


def notebook_profile(nb: nbformat.NotebookNode) -> str | None:
    """The profile an executed notebook ran in, as :func:`write_copy` recorded it."""
    value = nb.metadata.get("palviz", {}).get("profile")
    return value if isinstance(value, str) and value else None


def write_copy(nb: nbformat.NotebookNode, out_dir: Path, stem: str, profile: str) -> Path:
    """Write the executed notebook ``nb`` as ``out_dir/stem.ipynb``, atomically, with
    ``profile`` in its metadata, so that a book built again from the copy names it."""
    nb.metadata.setdefault("palviz", {})["profile"] = profile
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    with atomic_write(Path(out_dir) / f"{stem}.ipynb") as handle:
        handle.write(nbformat.writes(nb).encode("utf-8"))
    return Path(out_dir) / f"{stem}.ipynb"


def retry_command(profile: str, number: str) -> str:
    """The command that runs lesson ``number`` again in ``profile``."""
    return f"palviz figures --profile {profile} --only {number}"


#: The longest error line the book shows (a full disk's message, path and advice, fits).
ERROR_CHARACTERS = 600


def error_line(error: BaseException, replace: tuple[str, str] = ("", "")) -> str:
    """``error`` as one line: ``Name: message`` (a failed cell's exception name and value, as
    nbclient reports them) with ``replace[0]`` replaced by ``replace[1]``, at most
    :data:`ERROR_CHARACTERS` characters."""
    name = getattr(error, "ename", None) or type(error).__name__
    value = getattr(error, "evalue", None)
    text = str(value if value is not None else error).strip()
    first = text.splitlines()[0] if text else ""
    if replace[0]:
        first = first.replace(*replace)
    line = f"{name}: {first}" if first else name
    return line if len(line) <= ERROR_CHARACTERS else line[: ERROR_CHARACTERS - 1] + "…"


@dataclass(frozen=True)
class Failure:
    """The last run of a lesson failed: ``error`` (one line), ``when`` (UTC), the ``command``
    that runs it again and the failed run's notebook ``page`` (``None`` if none was written)."""

    error: str
    when: str
    command: str
    page: Path | None


def _failure_paths(out_dir: Path, stem: str) -> tuple[Path, Path]:
    return Path(out_dir) / f"{stem}.failed.json", Path(out_dir) / f"{stem}.failed.ipynb"


class NotebookFailed(RuntimeError):
    """A notebook run by ``palviz figures`` failed: its last good copy was kept. ``str()``
    says which, the error, where to read the traceback and how to run it again."""

    def __init__(self, stem: str, failure: Failure, out_dir: Path) -> None:
        self.stem, self.failure = stem, failure
        good = Path(out_dir) / f"{stem}.ipynb"
        kept = f"the last good run {good} is kept" if good.exists() else "it has no page yet"
        where = f"; its traceback: {failure.page}" if failure.page else ""
        super().__init__(
            f"notebook {stem} failed: {failure.error}; {kept}{where}; "
            f"run it again with: {failure.command}"
        )


def write_failure(
    nb: nbformat.NotebookNode, out_dir: Path, stem: str, error: str, profile: str
) -> Failure:
    """Record that notebook ``stem`` failed with ``error`` (one line, see :func:`error_line`)
    in ``profile``: ``stem.failed.ipynb`` (``nb`` as it stopped, with its traceback) and
    ``stem.failed.json`` (what the book says). The lesson's own copy is not touched. Best
    effort on a full disk: what cannot be written is left out. Returns the failure."""
    record_path, page = _failure_paths(out_dir, stem)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    failure = Failure(error, when, retry_command(profile, stem[:2]), page)
    try:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        with atomic_write(page) as handle:
            handle.write(nbformat.writes(nb).encode("utf-8"))
    except Exception:  # noqa: BLE001 - the record matters more than the traceback
        failure = replace(failure, page=None)
        with contextlib.suppress(OSError):
            page.unlink()  # an earlier failure's notebook would tell of another run
    record = {"error": failure.error, "when": when, "command": failure.command}
    record["page"] = page.name if failure.page else None
    with contextlib.suppress(OSError):
        write_json(record_path, record)
    return failure


def read_failure(out_dir: Path, stem: str) -> Failure | None:
    """The failure :func:`write_failure` recorded for ``stem`` in ``out_dir``, if any."""
    record_path, page = _failure_paths(out_dir, stem)
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        record = {}
    if not isinstance(record, dict):
        record = {}
    return Failure(
        error=str(record.get("error") or f"unknown (unreadable {record_path.name})"),
        when=str(record.get("when") or "?"),
        command=str(record.get("command") or ""),
        page=page if record.get("page") and page.exists() else None,
    )


def clear_failure(out_dir: Path, stem: str) -> None:
    """Forget a recorded failure of ``stem`` (after a run that succeeded)."""
    for path in _failure_paths(out_dir, stem):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def executed_at(nb: nbformat.NotebookNode) -> str | None:
    """When ``nb`` started running (UTC, ``YYYY-MM-DD HH:MM UTC``), from the timestamps
    nbclient leaves in its code cells' metadata; None if it has none."""
    stamps = [
        str(cell.metadata["execution"]["iopub.execute_input"])
        for cell in nb.cells
        if cell.cell_type == "code"
        and isinstance(cell.get("metadata", {}).get("execution"), dict)
        and cell.metadata["execution"].get("iopub.execute_input")
    ]
    found = [s for s in stamps if re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d", s)]
    return min(found)[:16].replace("T", " ") + " UTC" if found else None


# ------------------------------------------------------------------ the book's sources


def glossary_terms(glossary: Path) -> dict[str, str]:
    """GitHub's anchor of each term of ``docs/glossary.md``'s ``{glossary}`` blocks -> the
    term (``"lipschitz-constant"`` -> ``"Lipschitz constant"``)."""
    terms, inside = {}, False
    for line in glossary.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```{glossary}"
        elif inside and line.strip() and not line[0].isspace():
            terms[re.sub(r"[^\w\- ]", "", line.strip().lower()).replace(" ", "-")] = line.strip()
    return terms


def term_links(markdown: str, terms: dict[str, str]) -> str:
    """Links to ``glossary.md#anchor`` (or ``#anchor`` inside the glossary) as ``{term}``
    links; other links are left as they are."""

    def term(match: re.Match) -> str:
        name = terms.get(match.group(2))
        if name is None:
            return match.group(0)
        text = match.group(1)
        return f"{{term}}`{name}`" if text == name else f"{{term}}`{text} <{name}>`"

    return _GLOSSARY_LINK.sub(term, markdown)


def _exercise_cell(match: re.Match) -> nbformat.NotebookNode | None:
    """The folded hint and solution of the exercise a ``check`` cell answers."""
    import importlib

    try:
        exercise = getattr(
            importlib.import_module(f"palviz.exercises.ex{match.group(1)}"), match.group(2)
        )
    except (ImportError, AttributeError):
        return None
    return nbformat.v4.new_markdown_cell(
        f"````{{admonition}} Hint\n:class: dropdown tip\n\n{exercise.hint_text}\n````\n\n"
        f"````{{admonition}} Solution\n:class: dropdown\n\n```python\n"
        f"{exercise.solution_text.strip()}\n```\n````"
    )


def lesson_source(
    nb: nbformat.NotebookNode, stem: str, note: str, terms: dict[str, str]
) -> nbformat.NotebookNode:
    """The book's copy of executed notebook ``nb``: ``note`` (MyST) under its title, each
    exercise's hint and solution folded after its check cell (whose output, the blank's
    "not answered yet", is left out), widget outputs as a note, glossary links as terms, and
    the code of a cell that writes Markdown (a summary, a reading of a figure) folded."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type == "markdown":
            cell.source = term_links(cell.source, terms)
            continue
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_MIME in data:
                output["data"] = {"text/html": WIDGET_NOTE}
            elif isinstance(data.get("text/markdown"), str):
                data["text/markdown"] = term_links(data["text/markdown"], terms)
                _fold_input(cell)  # code that writes prose: the reader reads the prose
        found = _CHECK.search(cell.source)
        extra = _exercise_cell(found) if found else None
        if extra is not None:
            tags = cell.metadata.setdefault("tags", [])
            tags.append("remove-output")
            extra.id = f"solution-{len(cells)}"  # not random: an unchanged page stays unchanged
            cells.append(extra)
    first = next((c for c in cells if c.cell_type == "markdown"), None)
    if first is not None and note:
        head, _, rest = first.source.partition("\n")
        titled = head.startswith("# ")
        first.source = f"{head}\n\n{note}\n{rest}" if titled else f"{note}\n\n{first.source}"
    nb.cells = cells
    return nb


def _fold_input(cell: nbformat.NotebookNode) -> None:
    """Fold a code cell's source on its page (MyST-NB's ``hide-input``; a click shows it)."""
    tags = cell.metadata.setdefault("tags", [])
    if "hide-input" not in tags and "remove-input" not in tags:
        tags.append("hide-input")


def _admonition(kind: str, text: str) -> str:
    return f"```{{{kind}}}\n{text}\n```\n"


def _holds(profile: str | None, date: str | None) -> str:
    shown = f"**{profile}**" if profile else "an unrecorded"
    return f"This page holds the results of the {shown} profile" + (f", {date}." if date else ".")


def failure_note(failure: Failure, built: bool) -> str:
    """What a lesson's page and the front page say of its failed last run."""
    shown = (
        "This page is the last run that reached the end"
        if built
        else ("No run of this lesson has reached the end yet")
    )
    where = f" The failed run, with its traceback: `{failure.page.name}`." if failure.page else ""
    return _admonition(
        "error",
        f"The last run of this lesson failed ({failure.when}): `{failure.error}`. {shown}."
        f"{where} Run it again with `{failure.command}`.",
    )


def prepare_sources(
    out_dir: Path,
    profile: str,
    src: Path | None = None,
    *,
    notebooks_dir: Path | None = None,
    figures: Path | None = None,
    results: Path | None = None,
) -> Path:
    """Write the book's sources for the executed copies in ``out_dir`` into ``src`` (default
    ``out_dir/book-src``, emptied first): ``index.md``, ``syllabus.md``, ``notebooks/`` and
    ``docs/``. Every notebook of ``notebooks_dir`` (default ``notebooks/``) gets a page, a
    placeholder if it has no executed copy. The run times come from
    :func:`palviz.timings.timing_record` (``figures`` and ``results`` say where it looks).
    Returns ``src``. A file whose content is unchanged keeps its time, so that Sphinx
    rebuilds only the pages that changed (:func:`_sync`)."""
    out_dir, root = Path(out_dir), project_root()
    final = Path(src or out_dir / "book-src")
    src = final.with_name(final.name + ".next")
    shutil.rmtree(src, ignore_errors=True)
    (src / "notebooks").mkdir(parents=True)
    (src / "_generated").mkdir()
    terms = glossary_terms(root / "docs" / "glossary.md")
    record = timing_record(profile, figures, results)
    lessons, status = [], []
    for path in sorted(Path(notebooks_dir or root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        stem, executed = path.stem, out_dir / f"{path.stem}.ipynb"
        failure = read_failure(out_dir, stem)
        nb = nbformat.read(executed if executed.exists() else path, as_version=4)
        title, summary = intro(nb)
        lessons.append((stem, title or stem, term_links(summary, terms)))
        ran = executed_at(nb) if executed.exists() else None
        if not executed.exists():
            note = _admonition("warning", f"Not built yet: `{retry_command(profile, stem[:2])}`.")
            note += failure_note(failure, False) if failure else ""
            body = f"# {title or stem}\n\n{note}\n**What you will learn.**\n{summary}\n"
            (src / "notebooks" / f"{stem}.md").write_text(body, encoding="utf-8")
        else:
            note = _admonition(
                "note", _holds(notebook_profile(nb) or profile, f"executed {ran}" if ran else None)
            )
            note += failure_note(failure, True) if failure else ""
            nbformat.write(lesson_source(nb, stem, note, terms), src / "notebooks" / path.name)
        if failure:
            status.append(
                f"- [{title or stem}](notebooks/{path.name}): the last run failed "
                f"({failure.when}), `{failure.error}`; run it again with "
                f"`{failure.command}`."
            )
    copies = sorted(out_dir.glob("[0-9][0-9]_*.ipynb"))
    dates = sorted(d for p in copies if (d := executed_at(nbformat.read(p, as_version=4))))
    when = f"executed {dates[0]} to {dates[-1]}" if dates else None
    front = _holds(profile, when).replace("This page holds", "These pages hold")
    if status:
        front += "\n\n" + "\n".join(status)
    (src / "_generated" / "status.md").write_text(_admonition("note", front), encoding="utf-8")
    (src / "_generated" / "course.md").write_text(course_length() + "\n", encoding="utf-8")
    (src / "syllabus.md").write_text(syllabus_page(lessons, record), encoding="utf-8")
    shutil.copy2(root / "docs" / "index.md", src / "index.md")
    (src / "docs").mkdir()
    for doc in sorted((root / "docs").glob("*.md")):
        if doc.name != "index.md":
            text = term_links(doc.read_text(encoding="utf-8"), terms)
            (src / "docs" / doc.name).write_text(text, encoding="utf-8")
    for folder in ("img", "results"):
        if (root / "docs" / folder).is_dir():
            shutil.copytree(root / "docs" / folder, src / "docs" / folder)
    _sync(src, final)
    return final


def _sync(new: Path, target: Path) -> None:
    """Make ``target`` hold what ``new`` holds, then remove ``new``: a changed or new file
    moves in, an unchanged one is left as it is (its time too), one ``new`` lacks is removed."""
    target.mkdir(parents=True, exist_ok=True)
    for old in sorted(target.rglob("*"), reverse=True):  # files before their folders
        if not (new / old.relative_to(target)).exists():
            old.unlink() if old.is_file() or old.is_symlink() else old.rmdir()
    for file in sorted(new.rglob("*")):
        dest = target / file.relative_to(new)
        if file.is_dir():
            dest.mkdir(exist_ok=True)
        elif not dest.is_file() or dest.read_bytes() != file.read_bytes():
            os.replace(file, dest)
    shutil.rmtree(new)


def build_book(out_dir: Path, profile: str | None = None) -> Path:
    """Build the book of the executed copies in ``out_dir`` (``build/<profile>/``) into
    ``out_dir/book/`` with Sphinx (``docs/conf.py``), executing nothing; returns the path of
    its front page. ``profile`` defaults to ``out_dir``'s name."""
    out_dir = Path(out_dir)
    profile = profile or (out_dir.name if out_dir.name in PROFILES else "unknown")
    src = prepare_sources(out_dir, profile)
    book = out_dir / "book"
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-b",
        "html",
        "-q",
        "-c",
        str(project_root() / "docs"),
        str(src),
        str(book),
        "-d",
        str(out_dir / ".doctrees"),
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"sphinx-build failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return book / "index.html"
