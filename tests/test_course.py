"""The course pages: figures in the executed copies, offline HTML, the front page."""

import base64
import io
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from PIL import Image

from palviz import cli, course

ROOT = Path(__file__).resolve().parents[1]


def _png(width=40, height=20, color=(200, 30, 30)) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _notebook() -> nbformat.NotebookNode:
    widget = new_output(
        "display_data",
        data={
            "text/plain": "interactive(children=(IntSlider(value=10),))",
            course.WIDGET_MIME: {"model_id": "abc", "version_major": 2, "version_minor": 0},
        },
    )
    figure = new_output("display_data", data={"image/png": _png(), "text/plain": "<Figure>"})
    nb = new_notebook(
        cells=[
            new_markdown_cell(
                "# 03 · A lesson\n\n**What you will learn.**\n"
                "- why $w_i^\\top w_j = -\\frac{1}{k-1}$\n- a second point\n\n"
                "## The claim\n$$L = 1$$"
            ),
            new_code_cell("plt.show()", outputs=[figure], execution_count=1),
            new_code_cell("display(widget)", outputs=[widget], execution_count=2),
        ]
    )
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    return nb


def test_page_is_offline_embeds_figures_and_replaces_widgets():
    page = course.page_html(_notebook())
    urls = re.findall(r'(?:src|href)="([^"]+)"', page)
    remote = [u for u in urls if re.match(r"(https?:)?//", u)]
    assert not remote, f"the page would fetch {remote}"
    assert f'src="{course.MATHJAX_URL}"' in page
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', page)) == 1
    assert "Interactive controls" in page and "IntSlider" not in page
    assert "require.js" not in page and "embed-amd" not in page and "mermaid" not in page
    assert r"-\frac{1}{k-1}" in page  # left for MathJax to typeset in the browser
    assert "<title>03 · A lesson</title>" in page


def test_write_page_writes_notebook_html_thumbnail_and_mathjax(tmp_path):
    nb = _notebook()
    page = course.write_page(nb, tmp_path, "03_a_lesson")
    assert page == tmp_path / "03_a_lesson.html"
    assert nbformat.read(tmp_path / "03_a_lesson.ipynb", as_version=4).cells[1].outputs
    assert (tmp_path / "mathjax" / "MathJax.js").is_file()
    assert (tmp_path / "mathjax" / "config" / "TeX-AMS-MML_HTMLorMML-full.js").is_file()
    with Image.open(tmp_path / "thumbs" / "03_a_lesson.png") as thumb:
        assert thumb.size == (40, 20)  # smaller than the thumbnail width: kept as it is
    assert not list(tmp_path.glob(".*.tmp")), "atomic writes leave no temporary files"


def test_thumbnail_is_at_most_the_requested_width(tmp_path):
    nb = _notebook()
    nb.cells[1].outputs[0]["data"]["image/png"] = _png(900, 300)
    path = course.write_thumbnail(nb, tmp_path / "t.png", width=360)
    with Image.open(path) as thumb:
        assert thumb.size == (360, 120)
    assert course.write_thumbnail(new_notebook(), tmp_path / "none.png") is None


def test_index_lists_every_lesson_in_order_and_links_only_built_pages(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for stem in ("00_tour", "03_a_lesson", "07_noise"):
        nb = _notebook()
        nb.cells[0].source = nb.cells[0].source.replace("03 · A lesson", f"{stem[:2]} · {stem}")
        nbformat.write(nb, notebooks / f"{stem}.ipynb")
    out = tmp_path / "build" / "quick"
    course.write_page(_notebook(), out, "03_a_lesson")
    index = course.write_index(out, "quick", notebooks).read_text(encoding="utf-8")
    sections = re.findall(r'<section class="lesson" id="lesson-(\d\d)">', index)
    assert sections == ["00", "03", "07"]
    assert re.findall(r'<a href="([^"#]+)"', index) == ["03_a_lesson.html"] * 2
    assert index.count('src="thumbs/03_a_lesson.png"') == 1
    assert "palviz figures --profile quick --only 07" in index
    assert "<li>why $w_i^\\top w_j = -\\frac{1}{k-1}$</li>" in index
    assert "The claim" not in index  # only the "what you will learn" block


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_notebook_has_a_title_and_what_you_will_learn(path):
    title, summary = course._intro(nbformat.read(path, as_version=4))
    assert title.startswith(path.name[:2] + " · "), title
    assert len(summary) > 80, f"{path.name}: no 'What you will learn' block for the front page"


def test_kernel_draws_inline_whatever_the_callers_backend(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    env = cli.kernel_environment("smoke")
    assert env["MPLBACKEND"] == cli.INLINE_BACKEND
    assert env["PALVIZ_WIDGETS"] == "0"  # the pages have no kernel: a note, not sliders
    assert env["PALVIZ_PROFILE"] == "smoke"


def test_no_global_agg_backend_in_makefile_or_cli():
    assert "MPLBACKEND" not in (ROOT / "Makefile").read_text()
    assert '"Agg"' not in (ROOT / "palviz" / "cli.py").read_text()


def test_executed_copy_holds_the_figures(tmp_path, monkeypatch):
    """A notebook run by `palviz figures` keeps its figures, even when the caller's
    environment asks for Agg (which draws nothing in a kernel)."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    source = tmp_path / "99_figures.ipynb"
    nbformat.write(
        new_notebook(
            cells=[
                new_code_cell(
                    "import matplotlib.pyplot as plt\n"
                    "fig, ax = plt.subplots()\nax.plot([0, 1], [1, 0])\nplt.show()"
                ),
                new_code_cell("fig, ax = plt.subplots()\nax.bar([0, 1], [2, 3])"),
            ]
        ),
        source,
    )
    cli.execute_notebook(source, "smoke", tmp_path / "out", timeout=120)
    executed = nbformat.read(tmp_path / "out" / "99_figures.ipynb", as_version=4)
    images = [
        sum("image/png" in o.get("data", {}) for o in cell.outputs) for cell in executed.cells
    ]
    assert images == [1, 1], images
    page = (tmp_path / "out" / "99_figures.html").read_text(encoding="utf-8")
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', page)) == 2
