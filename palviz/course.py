"""The course pages: executed notebooks as HTML that reads offline, and a front page.

``palviz figures`` executes each notebook and calls :func:`write_page`, then
:func:`write_index`. What lands in ``build/<profile>/``:

==========================  ===============================================================
``NN_topic.ipynb``          the executed notebook (outputs, figures, widget state)
``NN_topic.html``           the same as a page: JupyterLab's look, figures embedded, maths
                            typeset by the MathJax copy next to it, nothing from the network
``index.html``              the front page: which profile's results it holds, the syllabus
                            table, then the lessons in order, each with its title, its "what
                            you will learn" and a thumbnail, linking to the pages
``syllabus.html``           the syllabus (:mod:`palviz.syllabus`): per lesson the prerequisites,
                            the goals, the study-time estimate and the measured run time
``glossary.html``           ``docs/glossary.md`` rendered, GitHub's anchors kept (``#drw``)
``reference.html``          ``docs/reference.md`` rendered the same way
``thumbs/NN_topic.png``     the thumbnails (the first figure of each executed notebook)
``NN_topic.failed.html``    only after a failed run of that notebook: the page of the failed
                            run, its traceback included (:func:`write_failure`)
``NN_topic.failed.json``    what the front page says of that failure: the error, when, the
                            command that runs it again
``mathjax/``                MathJax 2.7, copied from the ``jupyter-server-mathjax`` package
==========================  ===============================================================

Every page works from ``file://`` with no network: open ``build/quick/index.html`` in a
browser. Links of the notebooks and docs to ``docs/glossary.md#x``, ``docs/reference.md#x``
and ``NN_topic.ipynb`` are rewritten to the pages above. Every lesson page and the front page
say which profile's results they hold: the profile of the folder (``build/<profile>/``) or of
the executed notebook's metadata, and the date the notebook ran (its cells' timestamps) or,
failing that, the date of the timing record (:func:`palviz.syllabus.timing_record`).
Interactive controls (ipywidgets sliders) need a running kernel, so the pages show a note in
their place; the figure drawn for the default values is still on the page.

A page is written only for a notebook that ran to the end. When a notebook fails, its last
good page, executed copy and thumbnail stay as they were; :func:`write_failure` puts the
failed run's page beside them, and the front page marks the lesson as failed with the error
and the command to run it again, until a run succeeds (:func:`clear_failure`).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import html
import io
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from palviz.files import PROFILES, atomic_write, project_root, storage_errors, write_json
from palviz.plots import WIDGET_NOTE
from palviz.syllabus import (
    NOT_MEASURED,
    STUDY_TIME_NOTE,
    SYLLABUS,
    TimingRecord,
    record_paths,
    run_time_text,
    timing_record,
)

__all__ = [
    "Failure",
    "Lesson",
    "NotebookFailed",
    "clear_failure",
    "error_line",
    "read_failure",
    "retry_command",
    "write_failure",
    "lessons",
    "mathjax_source",
    "page_html",
    "render_executed",
    "slug",
    "write_index",
    "write_page",
    "write_thumbnail",
]

TEMPLATES = Path(__file__).with_name("templates")
MATHJAX_URL = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_LEARN = re.compile(r"^\*\*What you will (?:learn|see)\.?\*\*\.?\s*", re.MULTILINE)


def mathjax_source() -> Path:
    """The folder of MathJax 2.7 that the ``jupyter-server-mathjax`` package installs."""
    try:
        import jupyter_server_mathjax
    except ImportError as error:  # pragma: no cover - a core dependency
        raise ImportError(
            "the course pages typeset maths with the MathJax copy of the "
            "'jupyter-server-mathjax' package: pip install jupyter-server-mathjax"
        ) from error
    return Path(jupyter_server_mathjax.__file__).parent / "static"


def install_mathjax(out_dir: Path) -> Path:
    """Copy MathJax into ``out_dir/mathjax`` once (a marker file says it is complete). Safe when
    several processes call it at once: each copies into its own temporary folder and the first
    rename wins."""
    import tempfile

    target = Path(out_dir) / "mathjax"
    if (target / ".complete").exists():
        return target
    with storage_errors(target):
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=".mathjax.", dir=out_dir))
    try:
        with storage_errors(target):  # a full disk: one message, the partial copy removed
            shutil.copytree(mathjax_source(), partial, dirs_exist_ok=True)
        (partial / ".complete").write_text("MathJax copied from jupyter-server-mathjax\n")
        if not (target / ".complete").exists():
            shutil.rmtree(target, ignore_errors=True)  # an incomplete copy of an earlier run
            try:
                partial.rename(target)
            except OSError:  # another process renamed its copy first
                if not (target / ".complete").exists():
                    raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def _without_widgets(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose widget outputs are a short note (a page has no kernel)."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_MIME in data:
                output["data"] = {"text/html": WIDGET_NOTE}
    return nb


def page_html(
    nb: nbformat.NotebookNode,
    *,
    mathjax_url: str = MATHJAX_URL,
    title: str | None = None,
    profile: str | None = None,
    record: TimingRecord | None = None,
    stem: str | None = None,
    note: str = "",
) -> str:
    """``nb`` as one offline HTML page (JupyterLab's look, figures embedded), titled ``title``
    (default: the notebook's first heading), with a banner on top saying which profile's
    results it holds (``profile``, else the one in the notebook's metadata) and when it ran
    (the cells' timestamps; else ``record``'s date, if ``record`` times notebook ``stem``),
    then ``note`` (HTML), and links to the glossary, reference and other lessons rewritten to
    their pages."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        template_file="palviz_page.html.j2",
        extra_template_paths=[str(TEMPLATES)],
        mathjax_url=mathjax_url,
    )
    title = title or _intro(nb)[0] or "palviz notebook"
    body, _ = exporter.from_notebook_node(
        _without_widgets(nb), resources={"metadata": {"name": title}}
    )
    profile = profile or notebook_profile(nb)
    banner = _banner(profile, _page_date(nb, record, stem), lesson=True) + note
    body = re.sub(r"(<body[^>]*>\s*<main>)", lambda m: m.group(1) + banner, body, count=1)
    return rewrite_links(body.replace("</head>", f"<style>{_BANNER_CSS}</style>\n</head>", 1))


def notebook_profile(nb: nbformat.NotebookNode) -> str | None:
    """The profile an executed notebook ran in, as :func:`write_page` recorded it."""
    value = nb.metadata.get("palviz", {}).get("profile")
    return value if isinstance(value, str) and value else None


def _profile_of(out_dir: Path, nb: nbformat.NotebookNode, profile: str | None) -> str | None:
    """``profile``, else the notebook's own record, else the build folder's name."""
    if profile:
        return profile
    return notebook_profile(nb) or (out_dir.name if out_dir.name in PROFILES else None)


def executed_at(nb: nbformat.NotebookNode) -> str | None:
    """When ``nb`` started running (UTC, ``YYYY-MM-DD HH:MM``), from the timestamps nbclient
    leaves in its code cells' metadata; None if it has none."""
    stamps = [
        str(cell.metadata["execution"]["iopub.execute_input"])
        for cell in nb.cells
        if cell.cell_type == "code"
        and isinstance(cell.get("metadata", {}).get("execution"), dict)
        and cell.metadata["execution"].get("iopub.execute_input")
    ]
    found = [s for s in stamps if re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d", s)]
    return min(found)[:16].replace("T", " ") + " UTC" if found else None


def _page_date(nb, record: TimingRecord | None, stem: str | None) -> str | None:
    ran = executed_at(nb)
    if ran:
        return f"executed {ran}"
    if record is not None and stem is not None and record.seconds(stem) is not None:
        return f"timing record of {record.date} ({record.kind})"
    return None


def write_page(
    nb: nbformat.NotebookNode,
    out_dir: Path,
    stem: str,
    *,
    profile: str | None = None,
    record: TimingRecord | None = None,
) -> Path:
    """Write the executed notebook ``nb`` as ``stem.ipynb`` and ``stem.html`` (with the
    MathJax copy and its thumbnail) into ``out_dir``; returns the page's path. The profile
    (``profile``, else the notebook's metadata, else ``out_dir``'s name when it is a profile,
    as in ``build/<profile>/``) goes into the copy's metadata (``palviz.profile``), so a page
    rendered again from the copy, e.g. after unpacking results elsewhere, still names it."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    install_mathjax(out_dir)
    profile = _profile_of(out_dir, nb, profile)
    if profile:
        nb.metadata.setdefault("palviz", {})["profile"] = profile
    page = out_dir / f"{stem}.html"
    html_text = page_html(nb, profile=profile, record=record, stem=stem)  # before any write
    with atomic_write(out_dir / f"{stem}.ipynb") as handle:
        handle.write(nbformat.writes(nb).encode("utf-8"))
    _write(page, html_text)
    write_thumbnail(nb, out_dir / "thumbs" / f"{stem}.png")
    return page


# ------------------------------------------------------------------ failed runs


def retry_command(profile: str, number: str) -> str:
    """The command that runs lesson ``number`` again in ``profile``."""
    return f"palviz figures --profile {profile} --only {number}"


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


#: The longest error line the front page shows (a full disk's message, path and advice, fits).
ERROR_CHARACTERS = 600


@dataclass(frozen=True)
class Failure:
    """The last run of a lesson failed: ``error`` (one line), ``when`` (UTC), the ``command``
    that runs it again and the failed run's ``page`` (``None`` if none could be written)."""

    error: str
    when: str
    command: str
    page: Path | None


def _failure_paths(out_dir: Path, stem: str) -> tuple[Path, Path]:
    return Path(out_dir) / f"{stem}.failed.json", Path(out_dir) / f"{stem}.failed.html"


class NotebookFailed(RuntimeError):
    """A notebook run by ``palviz figures`` failed: its last good page was kept. ``str()``
    says which, the error, where to read the traceback and how to run it again."""

    def __init__(self, stem: str, failure: Failure, out_dir: Path) -> None:
        self.stem, self.failure = stem, failure
        good = Path(out_dir) / f"{stem}.html"
        kept = f"the last good page {good} is kept" if good.exists() else "it has no page yet"
        where = f"; its traceback: {failure.page}" if failure.page else ""
        super().__init__(
            f"notebook {stem} failed: {failure.error}; {kept}{where}; "
            f"run it again with: {failure.command}"
        )


def write_failure(
    nb: nbformat.NotebookNode, out_dir: Path, stem: str, error: str, profile: str
) -> Failure:
    """Record that notebook ``stem`` failed with ``error`` (one line, see :func:`error_line`)
    in ``profile``: ``stem.failed.html`` (the failed run's page, ``nb`` as it stopped, with its
    traceback) and ``stem.failed.json`` (what the front page says). The lesson's own page,
    copy and thumbnail are not touched. Best effort on a full disk: a page or record that
    cannot be written is left out. Returns the failure."""
    import datetime

    record_path, page = _failure_paths(out_dir, stem)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    failure = Failure(error, when, retry_command(profile, stem[:2]), page)
    if (Path(out_dir) / f"{stem}.html").exists():
        good = f'<a href="{stem}.html">the lesson\'s page</a> is the last run that reached the end'
    else:
        good = "no run of this lesson has reached the end yet"
    note = (
        f'<div class="palviz-failed">This run failed ({html.escape(when)}): '
        f"<code>{html.escape(failure.error)}</code>. The traceback is below; {good}. Run it "
        f"again with <code>{html.escape(failure.command)}</code>.</div>"
    )
    try:
        _write(page, page_html(nb, profile=profile, stem=stem, note=note))
    except Exception:  # noqa: BLE001 - the record matters more than the page
        failure = dataclasses.replace(failure, page=None)
        with contextlib.suppress(OSError):
            page.unlink()  # an earlier failure's page would tell of another run
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


def render_executed(out_dir: Path, profile: str | None = None, **where) -> list[Path]:
    """Render the pages again from the executed notebooks already in ``out_dir`` (e.g. results
    unpacked from another machine), without running anything, then the front page, syllabus,
    glossary and reference (:func:`write_index`; ``where`` passes its ``notebooks_dir``,
    ``docs_dir``, ``figures`` and ``results``). ``profile`` defaults to each notebook's
    metadata, else ``out_dir``'s name. Returns the lesson pages written."""
    out_dir = Path(out_dir)
    name = profile or (out_dir.name if out_dir.name in PROFILES else None)
    record = timing_record(name, where.get("figures"), where.get("results")) if name else None
    pages = []
    for path in sorted(out_dir.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        pages.append(write_page(nb, out_dir, path.stem, profile=profile, record=record))
    first = nbformat.read(pages[0].with_suffix(".ipynb"), as_version=4) if pages else None
    shown = name or (notebook_profile(first) if first is not None else None) or "unknown"
    write_index(out_dir, shown, **where)
    return pages


def first_figure(nb: nbformat.NotebookNode) -> bytes | None:
    """The PNG bytes of the first figure among ``nb``'s outputs, or None."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            png = output.get("data", {}).get("image/png")
            if png:
                return base64.b64decode(png if isinstance(png, str) else "".join(png))
    return None


def write_thumbnail(nb: nbformat.NotebookNode, path: Path, width: int = 360) -> Path | None:
    """Save ``nb``'s first figure, ``width`` pixels wide at most, as ``path``."""
    from PIL import Image

    png = first_figure(nb)
    if png is None:
        return None
    with Image.open(io.BytesIO(png)) as image:
        scale = min(1.0, width / image.width)
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        small = image.convert("RGB").resize(size, Image.LANCZOS)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as handle:
        small.save(handle, format="PNG", optimize=True)
    return path


@dataclass(frozen=True)
class Lesson:
    """One notebook as the front page lists it."""

    number: str
    stem: str
    title: str
    summary: str  # markdown: the "what you will learn" block
    page: Path | None  # the executed page, if built
    thumbnail: Path | None
    failure: Failure | None = None  # the last run failed (the page is an older one)


def _intro(nb: nbformat.NotebookNode) -> tuple[str, str]:
    """(title, what-you-will-learn markdown) from the notebook's first markdown cell."""
    text = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    heading = re.search(r"^#\s+(.+)$", text, re.MULTILINE)
    title = heading.group(1).strip() if heading else ""
    found = _LEARN.search(text)
    if not found:
        return title, ""
    block = text[found.end() :].lstrip("\n")
    return title, re.split(r"\n\s*\n", block, maxsplit=1)[0].strip()


def lessons(out_dir: Path, notebooks_dir: Path | None = None) -> list[Lesson]:
    """Every notebook of ``notebooks/`` in order, with its built page and thumbnail if any,
    and the failure of its last run if that failed."""
    notebooks_dir = Path(notebooks_dir or project_root() / "notebooks")
    found = []
    for path in sorted(notebooks_dir.glob("[0-9][0-9]_*.ipynb")):
        title, summary = _intro(nbformat.read(path, as_version=4))
        page = Path(out_dir) / f"{path.stem}.html"
        thumb = Path(out_dir) / "thumbs" / f"{path.stem}.png"
        found.append(
            Lesson(
                number=path.name[:2],
                stem=path.stem,
                title=title or path.stem,
                summary=summary,
                page=page if page.exists() else None,
                thumbnail=thumb if thumb.exists() else None,
                failure=read_failure(out_dir, path.stem),
            )
        )
    return found


_INDEX_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1100px;
       margin: 2rem auto; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2rem; } .lede { color: #555; margin-top: 0; }
.lesson { display: flex; gap: 1.2rem; border-top: 1px solid #ddd; padding: 1rem 0; }
.lesson img { width: 300px; height: auto; border: 1px solid #eee; flex: none; }
.lesson .noimg { width: 300px; flex: none; color: #888; font-style: italic; }
.lesson h2 { margin: 0 0 0.4rem 0; font-size: 1.15rem; }
.lesson .missing { color: #a33; font-size: 0.9rem; }
.failed { color: #a33; font-size: 0.9rem; } .failed code { white-space: pre-wrap; }
table.syllabus { border-collapse: collapse; width: 100%; font-size: 0.9rem; margin: 0.6rem 0; }
table.syllabus th, table.syllabus td { border: 1px solid #ddd; padding: 0.35rem 0.5rem;
       vertical-align: top; text-align: left; }
table.syllabus th { background: #f3f3f3; }
table.syllabus ul { margin: 0; padding-left: 1.1rem; } table.syllabus p { margin: 0; }
table.syllabus .num { white-space: nowrap; }
.note { color: #555; font-size: 0.9rem; }
.doc h1 .anchor-link, .doc h2 .anchor-link, .doc h3 .anchor-link { visibility: hidden;
       margin-left: 0.3rem; text-decoration: none; color: #999; }
.doc h2:hover .anchor-link, .doc h3:hover .anchor-link { visibility: visible; }
.doc h3 { margin-top: 1.6rem; border-top: 1px solid #eee; padding-top: 0.6rem; }
.doc :target { background: #fff7d6; }
.doc table { border-collapse: collapse; font-size: 0.9rem; }
.doc th, .doc td { border: 1px solid #ddd; padding: 0.25rem 0.45rem; }
.doc code { background: #f5f5f5; padding: 0 0.2rem; }
.doc pre { background: #f5f5f5; padding: 0.6rem; overflow-x: auto; }
"""

_BANNER_CSS = """
.palviz-banner { font-family: system-ui, -apple-system, "Segoe UI", sans-serif;
  font-size: 0.9rem; background: #eef4fb; border: 1px solid #c9dcf0; border-radius: 4px;
  padding: 0.45rem 0.8rem; margin: 0.6rem auto 1rem auto; max-width: 1100px; color: #223; }
.palviz-banner a { margin-right: 0.9rem; color: #0645ad; text-decoration: underline; }
.palviz-banner .results { float: right; }
.palviz-banner .profile { font-weight: 600; }
.palviz-failed { font-family: system-ui, -apple-system, "Segoe UI", sans-serif;
  background: #fdecea; border: 1px solid #f1b0a8; border-radius: 4px; color: #611;
  padding: 0.45rem 0.8rem; margin: 0 auto 1rem auto; max-width: 1100px; }
"""


def _markdown(text: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(text)


def slug(text: str) -> str:
    """GitHub's anchor of a heading: lowercased, spaces to ``-``, other punctuation dropped
    (``"Shot groups"`` -> ``"shot-groups"``, ``"5. Prototype-anchored learning (PAL)"`` ->
    ``"5-prototype-anchored-learning-pal"``)."""
    text = html.unescape(re.sub(r"<[^>]+>", "", text)).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


_HEADING = re.compile(r'<h([1-6]) id="[^"]*">(.*?)</h\1>', re.DOTALL)
_ANCHOR_LINK = re.compile(r'<a class="anchor-link" href="#[^"]*">&#182;</a>')


def _github_anchors(body: str) -> str:
    """Give the headings of rendered markdown GitHub's anchors (a repeated one gets ``-1``,
    ``-2``, ... as on GitHub), so that links written for GitHub work on the page."""
    seen: dict[str, int] = {}

    def heading(match: re.Match) -> str:
        level, inner = match.group(1), _ANCHOR_LINK.sub("", match.group(2))
        anchor = slug(inner)
        if anchor in seen:
            seen[anchor] += 1
            anchor = f"{anchor}-{seen[anchor]}"
        else:
            seen[anchor] = 0
        return (
            f'<h{level} id="{anchor}">{inner}'
            f'<a class="anchor-link" href="#{anchor}">&#182;</a></h{level}>'
        )

    return _HEADING.sub(heading, body)


def anchors(page: str) -> set[str]:
    """Every ``id`` of an HTML page (the targets of ``page.html#id``)."""
    return set(re.findall(r'\bid="([^"]+)"', page))


_DOC_LINK = re.compile(r'href="(?:(?:\.\./)?docs/)?(glossary|reference)\.md(#[^"]*)?"')
_LESSON_LINK = re.compile(r'href="(?:(?:\.\./)?notebooks/)?(\d\d_[\w.-]+?)\.ipynb(#[^"]*)?"')


def rewrite_links(page: str) -> str:
    """Links of the notebooks and docs made to work in ``build/<profile>/``:
    ``../docs/glossary.md#x`` -> ``glossary.html#x`` (the same for ``reference.md``) and
    ``[../notebooks/]NN_topic.ipynb`` -> ``NN_topic.html``."""
    page = _DOC_LINK.sub(lambda m: f'href="{m.group(1)}.html{m.group(2) or ""}"', page)
    return _LESSON_LINK.sub(lambda m: f'href="{m.group(1)}.html{m.group(2) or ""}"', page)


def _nav(current: str = "") -> str:
    links = [
        ("index.html", "the course"),
        ("syllabus.html", "syllabus"),
        ("glossary.html", "glossary"),
        ("reference.html", "reference"),
    ]
    return "".join(f'<a href="{href}">{name}</a>' for href, name in links if href != current)


def _banner(profile: str | None, date: str | None, *, lesson: bool, current: str = "") -> str:
    """The line on top of a page: links to the course pages and which profile's results the
    page holds (and since when, if known)."""
    if profile:
        holds = f'results of the <span class="profile">{html.escape(profile)}</span> profile'
    else:
        holds = "results of an unrecorded profile"
    if date:
        holds += f", {html.escape(date)}"
    what = "This page holds the " if lesson else "These pages hold the "
    return (
        f'<nav class="palviz-banner" data-profile="{html.escape(profile or "")}">'
        f'{_nav(current)}<span class="results">{what}{holds}</span></nav>'
    )


def _record_text(record: TimingRecord | None, profile: str, looked: tuple = ()) -> str:
    if record is None:
        where = " nor ".join(f"<code>{html.escape(_shown_path(p))}</code>" for p in looked)
        return (
            f"Measured run times: {NOT_MEASURED} (no timing record of the "
            f"{html.escape(profile)} profile{': neither ' + where if where else ''})."
        )
    where = _shown_path(record.source)
    trained = ""
    if record.cold and record.training_seconds:
        runs = f"{record.runs_trained} runs" if record.runs_trained else "the missing runs"
        trained = (
            f"; training {runs} took {record.training_seconds:.0f} s before the notebooks ran "
            "and is not counted in any lesson"
        )
    return (
        f"Measured run times: from the timing record of the {html.escape(record.profile)} "
        f"profile, {html.escape(record.date_utc)}, a {record.kind} run "
        f"(<code>{html.escape(where)}</code>): seconds to execute each notebook{trained}."
    )


def _shown_path(path: Path | None) -> str:
    if path is None:
        return "?"
    try:
        return path.resolve().relative_to(project_root()).as_posix()
    except ValueError:
        return path.as_posix()


def _head(title: str) -> str:
    mathjax = (
        '<script type="text/x-mathjax-config">MathJax.Hub.Config({tex2jax: {inlineMath: '
        '[["$", "$"], ["\\\\(", "\\\\)"]], processEscapes: true}, "HTML-CSS": {availableFonts: '
        '[], preferredFont: null, webFont: "STIX-Web", imageFont: null}, messageStyle: "none", '
        "showMathMenu: false});</script>\n"
        f'<script src="{MATHJAX_URL}"></script>'
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>{_INDEX_CSS}{_BANNER_CSS}</style>\n{mathjax}\n</head>\n<body>\n"
    )


_GOAL_END = re.compile(r"[.:;](?=\s|$)")
_ABBREVIATIONS = ("e.g", "i.e", "Eq", "Eqs", "Fig", "Figs", "Sec", "Thm", "Prop", "al", "vs")


def goals(summary: str) -> list[str]:
    """The items of a "what you will learn" block (its paragraph, if it has no list)."""
    bullet = re.compile(r"^\s*[-*]\s+")
    lines = summary.splitlines()
    if not any(bullet.match(line) for line in lines):
        text = " ".join(summary.split())
        return [text] if text else []
    items: list[str] = []
    for line in lines:
        if bullet.match(line):
            items.append(bullet.sub("", line).strip())
        elif items and line.strip():
            items[-1] += " " + line.strip()
    return items


def short_goal(goal: str, limit: int = 130) -> str:
    """The first clause of ``goal`` (up to its first ``.``, ``:`` or ``;`` outside maths,
    brackets and abbreviations), cut at a word near ``limit`` characters; maths is never cut."""
    inside, depth = False, 0
    end = len(goal)
    for index, char in enumerate(goal):
        if char == "$":
            inside = not inside
        elif not inside and char in "()":
            depth = max(0, depth + (1 if char == "(" else -1))
        elif not inside and not depth and _GOAL_END.match(goal, index):
            word = re.search(r"[\w.]*$", goal[:index]).group(0)
            if word.rstrip(".") in _ABBREVIATIONS or len(word) == 1:
                continue
            end = index
            break
    text = goal[:end].strip()
    if len(text) > limit:
        cut, inside = 0, False
        for index, char in enumerate(text):
            if char == "$":
                inside = not inside
            elif char == " " and not inside:
                if index > limit:
                    break
                cut = index
        text = text[: cut or len(text)].rstrip(",; ") + " …"
    return text


def _lesson_link(lesson: Lesson) -> str:
    title = html.escape(lesson.title)
    link = f'<a href="{lesson.page.name}">{title}</a>' if lesson.page is not None else title
    if lesson.failure is not None:
        link += ' <span class="failed">(last run failed)</span>'
    return link


def _failure_html(lesson: Lesson) -> str:
    """What a lesson's section says of its failed last run."""
    failure = lesson.failure
    if failure is None:
        return ""
    shown = (
        "The page linked here is the last run that reached the end"
        if lesson.page is not None
        else "No run has reached the end yet"
    )
    traceback = (
        f'; <a href="{failure.page.name}">the failed run\'s page</a> has the traceback'
        if failure.page is not None
        else ""
    )
    return (
        f'<p class="failed"><strong>The last run failed</strong> ({html.escape(failure.when)}): '
        f"<code>{html.escape(failure.error)}</code>. {shown}{traceback}. Run it again with "
        f"<code>{html.escape(failure.command)}</code>.</p>"
    )


def _prerequisites(number: str, anchor_prefix: str) -> str:
    plan = SYLLABUS.get(number)
    if plan is None:
        return '<span class="missing">not in palviz.syllabus</span>'
    if plan.lessons:
        earlier = ", ".join(f'<a href="{anchor_prefix}#lesson-{n}">{n}</a>' for n in plan.lessons)
        parts = [f"Lessons {earlier}" if len(plan.lessons) > 1 else f"Lesson {earlier}"]
    else:
        parts = ["no earlier lesson"]
    parts += [html.escape(b) for b in plan.background]
    return "<ul>" + "".join(f"<li>{p}</li>" for p in parts) + "</ul>"


def _run_time_cell(record: TimingRecord | None, stem: str) -> str:
    text = run_time_text(record, stem)
    if record is None or text == NOT_MEASURED:
        return html.escape(text)
    seconds = record.seconds(stem)
    return (
        f'<span title="{html.escape(text)}"><strong>{seconds:.1f} s</strong><br>'
        f'<span class="note">{html.escape(record.profile)}, {html.escape(record.date)}, '
        f"{html.escape(record.kind)}</span></span>"
    )


def syllabus_table(
    items: list[Lesson], record: TimingRecord | None, *, short: bool, anchor_prefix: str = ""
) -> str:
    """The syllabus as an HTML table: lesson, prerequisites, goals (``short``: their first
    clause), study-time estimate, measured run time (from ``record`` only)."""
    rows = []
    for lesson in items:
        plan = SYLLABUS.get(lesson.number)
        found = goals(lesson.summary)
        shown = [short_goal(g) for g in found] if short else found
        goal_html = _markdown("\n".join(f"- {g}" for g in shown)) if shown else "—"
        minutes = (
            f"≈ {plan.study_minutes_estimate} min<br><span class='note'>(estimate)</span>"
            if plan
            else NOT_MEASURED
        )
        rows.append(
            f'<tr id="syllabus-{lesson.number}"><td class="num">{lesson.number}</td>'
            f"<td>{_lesson_link(lesson)}</td>"
            f"<td>{_prerequisites(lesson.number, anchor_prefix)}</td><td>{goal_html}</td>"
            f'<td class="num">{minutes}</td>'
            f'<td class="runtime">{_run_time_cell(record, lesson.stem)}</td></tr>'
        )
    return (
        '<table class="syllabus"><colgroup><col style="width: 3%"><col style="width: 17%">'
        '<col style="width: 20%"><col style="width: 42%"><col style="width: 8%">'
        '<col style="width: 10%"></colgroup>'
        "<thead><tr><th>#</th><th>lesson</th><th>prerequisites</th>"
        "<th>goals</th><th>study time (estimate)</th>"
        "<th>measured run time (profile, date, cold/warm)</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _record_banner_date(record: TimingRecord | None) -> str | None:
    if record is None:
        return "run times not measured"
    return f"timing record of {record.date} ({record.kind})"


def index_html(
    items: list[Lesson],
    out_dir: Path,
    profile: str,
    record: TimingRecord | None = None,
    looked: tuple = (),
) -> str:
    """The front page for ``items`` (links relative to ``out_dir``): which profile's results
    it holds, the syllabus (run times from ``record`` only), then the lessons."""
    rows = []
    for lesson in items:
        title = html.escape(lesson.title)
        if lesson.page is not None:
            heading = f'<a href="{lesson.page.name}">{title}</a>'
        elif lesson.failure is not None:
            heading = f'{title} <span class="missing">(not built: its run failed)</span>'
        else:
            heading = (
                f'{title} <span class="missing">(not built: '
                f"<code>{retry_command(profile, lesson.number)}</code>)</span>"
            )
        if lesson.failure is not None:
            heading += ' <span class="failed">· last run failed</span>'
        if lesson.thumbnail is not None:
            src = lesson.thumbnail.relative_to(out_dir).as_posix()
            image = f'<img src="{src}" alt="first figure of {html.escape(lesson.stem)}">'
            if lesson.page is not None:
                image = f'<a href="{lesson.page.name}">{image}</a>'
        else:
            image = '<div class="noimg">no figure yet</div>'
        rows.append(
            f'<section class="lesson" id="lesson-{lesson.number}">{image}<div>'
            f"<h2>{heading}</h2>{_failure_html(lesson)}"
            "<p><strong>What you will learn</strong></p>"
            f"{_markdown(lesson.summary)}</div></section>"
        )
    failed = [lesson for lesson in items if lesson.failure is not None]
    failed_note = ""
    if failed:
        links = ", ".join(f'<a href="#lesson-{x.number}">{x.number}</a>' for x in failed)
        failed_note = (
            f'<p class="failed">The last run of lesson(s) {links} failed: see below for the '
            "error and the command that runs it again; their pages are from the last run that "
            "reached the end.</p>\n"
        )
    return (
        _head(f"palviz: the course ({profile} profile)")
        + _banner(profile, _record_banner_date(record), lesson=False, current="index.html")
        + "<h1>palviz: learning from imperfect labels</h1>\n"
        + failed_note
        + f'<p class="lede">The notebooks in order, executed in the <code>{profile}</code> '
        "profile. Each page shows the code, its printed checks and its figures; open the "
        "notebooks in JupyterLab (<code>make lab</code>) to change the parameters and move "
        'the sliders. The terms are defined in the <a href="glossary.html">glossary</a>, '
        'the formulas and sources in the <a href="reference.html">reference</a>.</p>\n'
        '<div class="syllabus" id="syllabus"><h2>Syllabus</h2>'
        f'<p class="note">Study times: {STUDY_TIME_NOTE}. '
        f"{_record_text(record, profile, looked)} "
        'The goals in full are below and on the <a href="syllabus.html">syllabus page</a>.</p>'
        + syllabus_table(items, record, short=True)
        + "</div>\n<h2>The lessons</h2>\n"
        + "\n".join(rows)
        + "\n</body>\n</html>\n"
    )


def syllabus_html(
    items: list[Lesson], profile: str, record: TimingRecord | None, looked: tuple = ()
) -> str:
    """The syllabus page: the table with every goal in full."""
    return (
        _head(f"palviz: syllabus ({profile} profile)")
        + _banner(profile, _record_banner_date(record), lesson=False, current="syllabus.html")
        + "<h1>Syllabus</h1>\n"
        '<p class="lede">The nine lessons in order: what each builds on, what it teaches (the '
        'notebook\'s own "What you will learn"), how long it takes to study and how long it '
        f'took to run.</p>\n<p class="note">Study times: {STUDY_TIME_NOTE}. '
        f"{_record_text(record, profile, looked)}</p>\n"
        + syllabus_table(items, record, short=False, anchor_prefix="index.html")
        + "\n</body>\n</html>\n"
    )


def document_html(markdown_text: str, title: str, current: str) -> str:
    """A markdown file of ``docs/`` as an offline page: GitHub's heading anchors, links to the
    other docs and to the lessons rewritten to their pages, maths left to MathJax."""
    body = rewrite_links(_github_anchors(_markdown(markdown_text)))
    return (
        _head(title)
        + _banner(None, None, lesson=False, current=current).replace(
            '<span class="results">These pages hold the results of an unrecorded profile</span>',
            "",
        )
        + f'<div class="doc">{body}</div>\n</body>\n</html>\n'
    )


def _write(path: Path, text: str) -> Path:
    with atomic_write(path) as handle:
        handle.write(text.encode("utf-8"))
    return path


def write_index(
    out_dir: Path,
    profile: str,
    notebooks_dir: Path | None = None,
    *,
    docs_dir: Path | None = None,
    figures: Path | None = None,
    results: Path | None = None,
) -> Path:
    """Write the course pages of ``out_dir``: ``index.html`` (every notebook, built or not),
    ``syllabus.html``, and ``glossary.html`` and ``reference.html`` from ``docs_dir`` (default
    ``docs/``). Run times come from :func:`palviz.syllabus.timing_record` (``figures`` and
    ``results`` override where it looks). Returns the front page's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    install_mathjax(out_dir)
    docs_dir = Path(docs_dir or project_root() / "docs")
    record = timing_record(profile, figures, results)
    items = lessons(out_dir, notebooks_dir)
    for name, title in (("glossary", "palviz: glossary"), ("reference", "palviz: reference")):
        source = docs_dir / f"{name}.md"
        if source.is_file():
            text = document_html(source.read_text(encoding="utf-8"), title, f"{name}.html")
        else:
            text = document_html(f"# {title}\n\n`docs/{name}.md` was not found.", title, "")
        _write(out_dir / f"{name}.html", text)
    looked = record_paths(profile, figures, results)
    _write(out_dir / "syllabus.html", syllabus_html(items, profile, record, looked))
    return _write(out_dir / "index.html", index_html(items, out_dir, profile, record, looked))
