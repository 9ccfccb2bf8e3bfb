"""The course pages: figures in the executed copies, offline HTML, the front page."""

import base64
import html
import io
import json
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from PIL import Image

from palviz import course, syllabus
from palviz.cli import figures as cli_figures

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
    lesson_part = index[index.index('<section class="lesson"') :]
    assert re.findall(r'<a href="([^"#]+)"', lesson_part) == ["03_a_lesson.html"] * 2
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
    env = cli_figures.kernel_environment("smoke")
    assert env["MPLBACKEND"] == cli_figures.INLINE_BACKEND
    assert env["PALVIZ_WIDGETS"] == "0"  # the pages have no kernel: a note, not sliders
    assert env["PALVIZ_PROFILE"] == "smoke"


def test_no_global_agg_backend_in_makefile_or_cli():
    assert "MPLBACKEND" not in (ROOT / "Makefile").read_text()
    for path in (ROOT / "palviz" / "cli").glob("*.py"):
        assert '"Agg"' not in path.read_text(), path


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
    cli_figures.execute_notebook(source, "smoke", tmp_path / "out", timeout=120)
    executed = nbformat.read(tmp_path / "out" / "99_figures.ipynb", as_version=4)
    images = [
        sum("image/png" in o.get("data", {}) for o in cell.outputs) for cell in executed.cells
    ]
    assert images == [1, 1], images
    page = (tmp_path / "out" / "99_figures.html").read_text(encoding="utf-8")
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', page)) == 2


# ------------------------------------------------------------------ syllabus, glossary, banners

GLOSSARY_ANCHORS = (
    "drw ldam elm lmsce pal fnpal fnpn apl nce rce gce sce etf shot-groups imbalance-ratio "
    "layer-peeled-model minority-collapse symmetric-noise asymmetric-noise transition-matrix "
    "noise-aware-scale lipschitz-constant margin paired-seeds holm-correction umap"
).split()
STEMS = ("00_tour", "03_a_lesson", "07_noise")


def _course(tmp_path, profile="quick", record=None, committed=None, built=("03_a_lesson",)):
    """Synthetic notebooks 00, 03, 07 in tmp_path/notebooks, ``built`` ones executed into
    tmp_path/build/<profile>, timing records in tmp_path/figures and tmp_path/results."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir(exist_ok=True)
    for stem in STEMS:
        nb = _notebook()
        nb.cells[0].source = nb.cells[0].source.replace("03 · A lesson", f"{stem[:2]} · {stem}")
        nbformat.write(nb, notebooks / f"{stem}.ipynb")
    figures, results = tmp_path / "figures", tmp_path / "results"
    figures.mkdir(exist_ok=True)
    if record is not None:
        (figures / "timings.json").write_text(json.dumps(record))
    if committed is not None:
        (results / profile).mkdir(parents=True, exist_ok=True)
        (results / profile / "timings.json").write_text(json.dumps(committed))
    out = tmp_path / "build" / profile
    for stem in built:
        course.write_page(_notebook(), out, stem)
    course.write_index(out, profile, notebooks, figures=figures, results=results)
    return out


def _record(date="2026-01-02T03:04:05Z", cold=True, **seconds):
    return {"profile": "quick", "date_utc": date, "cold": cold, "notebook_seconds": seconds}


def _row(page: str, number: str) -> str:
    found = re.search(rf'<tr id="syllabus-{number}">(.*?)</tr>', page, re.DOTALL)
    assert found, f"no syllabus row for lesson {number}"
    return found.group(1)


def test_syllabus_table_covers_every_lesson_of_the_course():
    numbers = [p.name[:2] for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
    assert sorted(syllabus.SYLLABUS) == numbers
    for number, plan in syllabus.SYLLABUS.items():
        assert plan.lessons or plan.background, f"{number}: no prerequisites at all"
        assert all(n < number for n in plan.lessons), f"{number}: a later lesson as prerequisite"
        assert plan.background, f"{number}: no background knowledge named"
        assert 10 <= plan.study_minutes_estimate <= 240


def test_syllabus_lists_every_lesson_with_prerequisites_and_goals(tmp_path):
    out = _course(tmp_path)
    for name in ("syllabus.html", "index.html"):
        page = (out / name).read_text(encoding="utf-8")
        for stem in STEMS:
            row = _row(page, stem[:2])
            assert f"{stem[:2]} · {stem}" in row
            plan = syllabus.SYLLABUS[stem[:2]]
            assert all(html.escape(b) in row for b in plan.background), (name, stem)
            for earlier in plan.lessons:
                assert f'#lesson-{earlier}">{earlier}</a>' in row
            # the goals are the notebook's own "what you will learn" items, not retyped
            assert "<li>why $w_i^\\top w_j = -\\frac{1}{k-1}$</li>" in row
            assert "a second point" in row
            assert f"≈ {plan.study_minutes_estimate} min" in row and "(estimate)" in row
        assert "estimate, not measured" in page
    assert 'href="syllabus.html"' in (out / "index.html").read_text(encoding="utf-8")


def test_run_time_comes_from_the_timing_record(tmp_path):
    record = _record(**{"03_a_lesson": 12.34, "07_noise": 5.0})
    committed = _record(date="2025-05-05T00:00:00Z", cold=False, **{"00_tour": 99.0})
    out = _course(tmp_path, record=record, committed=committed)
    page = (out / "syllabus.html").read_text(encoding="utf-8")
    assert "12.3 s" in _row(page, "03") and "2026-01-02" in _row(page, "03")
    assert "cold" in _row(page, "03") and "5.0 s" in _row(page, "07")
    assert "not measured" in _row(page, "00")  # the record does not time it; no fallback
    assert "99.0" not in page  # the committed copy is read only without a local record
    assert "2026-01-02T03:04:05Z" in page and "figures/timings.json" in page


def test_run_time_falls_back_to_the_committed_record(tmp_path):
    committed = _record(date="2025-05-05T00:00:00Z", cold=False, **{"00_tour": 99.0})
    out = _course(tmp_path, committed=committed)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "99.0 s" in _row(page, "00") and "2025-05-05" in _row(page, "00")
    assert "warm" in _row(page, "00") and "not measured" in _row(page, "03")
    record = syllabus.timing_record("quick", tmp_path / "figures", tmp_path / "results")
    assert record.source == tmp_path / "results" / "quick" / "timings.json"
    assert syllabus.run_time_text(record, "00_tour") == "99.0 s (quick, 2025-05-05, warm)"


def test_run_time_is_not_measured_without_a_record(tmp_path):
    out = _course(tmp_path, profile="smoke")
    for name in ("index.html", "syllabus.html"):
        page = (out / name).read_text(encoding="utf-8")
        for stem in STEMS:
            assert re.search(r'class="runtime">not measured<', _row(page, stem[:2]))
        assert not re.search(r"\d+\.\d s\b", page)
        assert "figures/timings.json" in page and "results/smoke/timings.json" in page
    assert syllabus.timing_record("smoke", tmp_path / "figures", tmp_path / "results") is None
    assert syllabus.run_time_text(None, "00_tour") == "not measured"


def test_glossary_headings_make_the_anchors_the_notebooks_link_to():
    text = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    headings = re.findall(r"^### (.+)$", text, re.MULTILINE)
    slugs = [course.slug(h) for h in headings]
    assert not set(GLOSSARY_ANCHORS) - set(slugs), set(GLOSSARY_ANCHORS) - set(slugs)
    assert len(slugs) == len(set(slugs)), "a term is defined twice"
    bodies = re.split(r"^### .+$", text, flags=re.MULTILINE)[1:]
    for heading, body in zip(headings, bodies, strict=True):
        assert "](../notebooks/" in body, f"{heading}: names no lesson"
    assert sum("](reference.md#" in body for body in bodies) >= len(GLOSSARY_ANCHORS) - 1
    assert course.slug("5. Prototype-anchored learning (PAL)") == (
        "5-prototype-anchored-learning-pal"
    )


def test_glossary_page_has_every_anchor_and_its_links_resolve(tmp_path):
    out = _course(tmp_path)
    glossary = (out / "glossary.html").read_text(encoding="utf-8")
    reference = (out / "reference.html").read_text(encoding="utf-8")
    ids = course.anchors(glossary)
    assert not set(GLOSSARY_ANCHORS) - ids, f"glossary.html lacks {set(GLOSSARY_ANCHORS) - ids}"
    links = re.findall(r'href="([^"]+)"', glossary)
    assert not [h for h in links if ".md" in h or ".ipynb" in h], "links left to the sources"
    for href in links:
        page, _, anchor = href.partition("#")
        if page == "reference.html" and anchor:
            assert anchor in course.anchors(reference), href
        elif page == "":
            assert anchor in ids, href
    assert 'id="5-prototype-anchored-learning-pal"' in reference  # GitHub's anchors
    assert "$$" in reference or "$" in glossary  # maths left for MathJax


def test_lesson_page_links_to_the_glossary_are_rewritten_and_resolve(tmp_path):
    nb = _notebook()
    nb.cells.insert(
        1,
        new_markdown_cell(
            "With [DRW](../docs/glossary.md#drw) and [Holm](../docs/glossary.md#holm-correction); "
            "formulas in [4](../docs/reference.md#4-synthetic-label-noise); next: "
            "[07](07_noise.ipynb)."
        ),
    )
    out = _course(tmp_path, built=())
    page = course.write_page(nb, out, "03_a_lesson").read_text(encoding="utf-8")
    assert "glossary.md" not in page and "reference.md" not in page
    assert 'href="07_noise.html"' in page
    glossary = course.anchors((out / "glossary.html").read_text(encoding="utf-8"))
    reference = course.anchors((out / "reference.html").read_text(encoding="utf-8"))
    found = re.findall(r'href="(glossary|reference)\.html#([^"]+)"', page)
    assert ("glossary", "drw") in found and ("glossary", "holm-correction") in found
    for name, anchor in found:
        assert anchor in (glossary if name == "glossary" else reference), (name, anchor)


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebook_links_to_the_glossary_name_an_existing_term(path):
    text = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    terms = {course.slug(h) for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}
    nb = nbformat.read(path, as_version=4)
    cells = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    wanted = set(re.findall(r"glossary\.md#([\w-]+)", cells))
    assert not wanted - terms, f"{path.name} links to glossary terms it lacks: {wanted - terms}"


def test_profile_banner_on_the_front_page_and_every_lesson_page(tmp_path):
    nb = _notebook()
    nb.cells[1].metadata["execution"] = {"iopub.execute_input": "2026-03-04T05:06:07.1Z"}
    out = _course(tmp_path, profile="smoke", built=())
    page = course.write_page(nb, out, "03_a_lesson").read_text(encoding="utf-8")
    banner = re.search(r'<nav class="palviz-banner"[^>]*>.*?</nav>', page, re.DOTALL).group(0)
    assert 'data-profile="smoke"' in banner and "executed 2026-03-04 05:06 UTC" in banner
    assert page.index("palviz-banner") < page.index("<h1")  # on top
    assert page.count("<h1") == 1 and page.count('class="jp-Cell ') == len(nb.cells)
    executed = nbformat.read(out / "03_a_lesson.ipynb", as_version=4)
    assert executed.metadata["palviz"]["profile"] == "smoke"
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'data-profile="smoke"' in index and "run times not measured" in index


def test_pages_rendered_from_unpacked_paper_results_say_paper(tmp_path):
    nb = _notebook()
    nb.metadata["palviz"] = {"profile": "paper"}
    unpacked = tmp_path / "unpacked"  # not named after a profile
    unpacked.mkdir()
    nbformat.write(nb, unpacked / "03_a_lesson.ipynb")
    results = tmp_path / "results" / "paper"
    results.mkdir(parents=True)
    (results / "timings.json").write_text(
        json.dumps(_record(date="2026-07-08T00:00:00Z", **{"03_a_lesson": 3600.0}))
    )
    _course(tmp_path, built=())  # the synthetic notebooks
    pages = course.render_executed(
        unpacked,
        "paper",
        notebooks_dir=tmp_path / "notebooks",
        figures=tmp_path / "figures",
        results=tmp_path / "results",
    )
    page = pages[0].read_text(encoding="utf-8")
    assert 'data-profile="paper"' in page and "timing record of 2026-07-08" in page
    index = (unpacked / "index.html").read_text(encoding="utf-8")
    assert 'data-profile="paper"' in index and ">paper</span> profile" in index
    assert "3600.0 s" in _row(index, "03")


def test_course_pages_load_nothing_from_the_network(tmp_path):
    out = _course(tmp_path, record=_record(**{"03_a_lesson": 1.0}))
    pages = sorted(out.glob("*.html"))
    assert {p.name for p in pages} >= {
        "index.html",
        "syllabus.html",
        "glossary.html",
        "reference.html",
        "03_a_lesson.html",
    }
    for page in pages:
        text = page.read_text(encoding="utf-8")
        loads = re.findall(r'<(?:script|img|iframe|source|video|audio)\b[^>]*\bsrc="([^"]+)"', text)
        loads += re.findall(r'<link\b[^>]*\bhref="([^"]+)"', text)
        loads += re.findall(r"url\(\s*['\"]?([^'\")]+)", text)
        loads += re.findall(r"@import\s+['\"]([^'\"]+)", text)
        remote = [u for u in loads if re.match(r"\s*(https?:)?//", u)]
        assert not remote, f"{page.name} would fetch {remote}"
        for src in re.findall(r'<script\b[^>]*\bsrc="([^"]+)"', text):
            assert (out / src.split("?")[0]).is_file(), f"{page.name}: {src} is not in the build"


def test_a_record_of_some_notebooks_only_gives_way_to_a_complete_one(tmp_path):
    """`palviz figures --only 02` after a full run must not blank the other lessons' times."""
    partial = {**_record(**{"02_minority": 20.3}), "only": ["02"]}
    committed = _record(date="2025-05-05T00:00:00Z", cold=True, **{"00_tour": 99.0})
    out = _course(tmp_path, record=partial, committed=committed)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "99.0 s" in _row(page, "00")
    record = syllabus.timing_record("quick", tmp_path / "figures", tmp_path / "results")
    assert record.source == tmp_path / "results" / "quick" / "timings.json"
    alone = syllabus.timing_record("quick", tmp_path / "figures", tmp_path / "nothing")
    assert alone.partial and alone.seconds("02_minority") == 20.3  # used when it is all there is
