"""The course pages: executed notebooks as HTML that reads offline, and a front page.

``palviz figures`` executes each notebook and calls :func:`write_page`, then
:func:`write_index`. What lands in ``build/<profile>/``:

==========================  ===============================================================
``NN_topic.ipynb``          the executed notebook (outputs, figures, widget state)
``NN_topic.html``           the same as a page: JupyterLab's look, figures embedded, maths
                            typeset by the MathJax copy next to it, nothing from the network
``index.html``              the front page: the lessons in order, each with its title, its
                            "what you will learn" and a thumbnail, linking to the pages
``thumbs/NN_topic.png``     the thumbnails (the first figure of each executed notebook)
``mathjax/``                MathJax 2.7, copied from the ``jupyter-server-mathjax`` package
==========================  ===============================================================

Every page works from ``file://`` with no network: open ``build/quick/index.html`` in a
browser. Interactive controls (ipywidgets sliders) need a running kernel, so the pages show
a note in their place; the figure drawn for the default values is still on the page.
"""

from __future__ import annotations

import base64
import copy
import html
import io
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from palviz.files import atomic_write, project_root
from palviz.viz import WIDGET_NOTE

__all__ = [
    "Lesson",
    "lessons",
    "mathjax_source",
    "page_html",
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
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=".mathjax.", dir=out_dir))
    try:
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
    nb: nbformat.NotebookNode, *, mathjax_url: str = MATHJAX_URL, title: str | None = None
) -> str:
    """``nb`` as one offline HTML page (JupyterLab's look, figures embedded), titled ``title``
    (default: the notebook's first heading)."""
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
    return body


def write_page(nb: nbformat.NotebookNode, out_dir: Path, stem: str) -> Path:
    """Write the executed notebook ``nb`` as ``stem.ipynb`` and ``stem.html`` (with the
    MathJax copy and its thumbnail) into ``out_dir``; returns the page's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    install_mathjax(out_dir)
    with atomic_write(out_dir / f"{stem}.ipynb") as handle:
        handle.write(nbformat.writes(nb).encode("utf-8"))
    page = out_dir / f"{stem}.html"
    with atomic_write(page) as handle:
        handle.write(page_html(nb).encode("utf-8"))
    write_thumbnail(nb, out_dir / "thumbs" / f"{stem}.png")
    return page


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
    """Every notebook of ``notebooks/`` in order, with its built page and thumbnail if any."""
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
"""


def _markdown(text: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(text)


def index_html(items: list[Lesson], out_dir: Path, profile: str) -> str:
    """The front page for ``items`` (links relative to ``out_dir``)."""
    rows = []
    for lesson in items:
        title = html.escape(lesson.title)
        if lesson.page is not None:
            heading = f'<a href="{lesson.page.name}">{title}</a>'
        else:
            heading = (
                f'{title} <span class="missing">(not built: '
                f"<code>palviz figures --profile {profile} --only {lesson.number}</code>)</span>"
            )
        if lesson.thumbnail is not None:
            src = lesson.thumbnail.relative_to(out_dir).as_posix()
            image = f'<img src="{src}" alt="first figure of {html.escape(lesson.stem)}">'
            if lesson.page is not None:
                image = f'<a href="{lesson.page.name}">{image}</a>'
        else:
            image = '<div class="noimg">no figure yet</div>'
        rows.append(
            f'<section class="lesson" id="lesson-{lesson.number}">{image}<div>'
            f"<h2>{heading}</h2><p><strong>What you will learn</strong></p>"
            f"{_markdown(lesson.summary)}</div></section>"
        )
    mathjax = (
        '<script type="text/x-mathjax-config">MathJax.Hub.Config({tex2jax: {inlineMath: '
        '[["$", "$"], ["\\\\(", "\\\\)"]], processEscapes: true}, "HTML-CSS": {availableFonts: '
        '[], preferredFont: null, webFont: "STIX-Web", imageFont: null}, messageStyle: "none", '
        "showMathMenu: false});</script>\n"
        f'<script src="{MATHJAX_URL}"></script>'
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>palviz: the course ({profile} profile)</title>\n"
        f"<style>{_INDEX_CSS}</style>\n{mathjax}\n</head>\n<body>\n"
        "<h1>palviz: learning from imperfect labels</h1>\n"
        f'<p class="lede">The notebooks in order, executed in the <code>{profile}</code> '
        "profile. Each page shows the code, its printed checks and its figures; open the "
        "notebooks in JupyterLab (<code>make lab</code>) to change the parameters and move "
        "the sliders.</p>\n" + "\n".join(rows) + "\n</body>\n</html>\n"
    )


def write_index(out_dir: Path, profile: str, notebooks_dir: Path | None = None) -> Path:
    """Write ``out_dir/index.html`` for every notebook (built or not); returns its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    install_mathjax(out_dir)
    path = out_dir / "index.html"
    with atomic_write(path) as handle:
        handle.write(index_html(lessons(out_dir, notebooks_dir), out_dir, profile).encode("utf-8"))
    return path
