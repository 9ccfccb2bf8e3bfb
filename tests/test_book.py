"""The course book: its sources from the executed copies (notes, syllabus, exercises, glossary
links), then the book itself as ``palviz figures --profile smoke`` builds it with the network
cut: the lessons in order in the navigation, search, glossary links, figures, typeset maths,
nothing loaded from the network.

The built book is the one of ``$PALVIZ_BOOK`` (a ``build/smoke/`` folder that ``make test``
fills before the tests, so the notebooks run once), else this module runs ``palviz figures
--profile smoke`` itself into temporary folders (a few minutes on two cores; see
``tests/book_support.py``)."""

from __future__ import annotations

import ast
import base64
import io
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from book_support import smoke_book
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from PIL import Image

from palviz import book, book_search, book_syllabus, timings
from palviz.cli import kernel as cli_kernel

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = [p.name[:2] for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
STEMS = ("00_tour", "03_a_lesson", "07_noise")


def _png(width=40, height=20) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _notebook(title="03 · A lesson") -> nbformat.NotebookNode:
    widget = new_output(
        "display_data",
        data={"text/plain": "interactive()", book.WIDGET_MIME: {"model_id": "abc"}},
    )
    figure = new_output("display_data", data={"image/png": _png(), "text/plain": "<Figure>"})
    return new_notebook(
        cells=[
            new_markdown_cell(
                f"# {title}\n\n**What you will learn.**\n"
                "- why $w_i^\\top w_j = -\\frac{1}{k-1}$\n- a second point\n\n"
                "## The claim\nSee the [ETF](../docs/glossary.md#etf) and "
                "[minority collapse](../docs/glossary.md#minority-collapse)."
            ),
            new_code_cell("plt.show()", outputs=[figure], execution_count=1),
            new_code_cell("display(widget)", outputs=[widget], execution_count=2),
            new_code_cell(
                "from palviz.exercises import ex01\n\nanswer = ...\nex01.q1.check(answer)"
            ),
        ]
    )


def _record(date="2026-01-02T03:04:05Z", cold=True, **seconds):
    return {"profile": "quick", "date_utc": date, "cold": cold, "notebook_seconds": seconds}


def _sources(tmp_path, profile="quick", record=None, committed=None, built=("03_a_lesson",)):
    """Synthetic notebooks 00, 03, 07, the ``built`` ones executed into
    tmp_path/build/<profile>; timing records in tmp_path/figures and tmp_path/results."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir(exist_ok=True)
    for stem in STEMS:
        nbformat.write(_notebook(f"{stem[:2]} · {stem}"), notebooks / f"{stem}.ipynb")
    figures, results = tmp_path / "figures", tmp_path / "results"
    figures.mkdir(exist_ok=True)
    if record is not None:
        (figures / "timings.json").write_text(json.dumps(record))
    if committed is not None:
        (results / profile).mkdir(parents=True, exist_ok=True)
        (results / profile / "timings.json").write_text(json.dumps(committed))
    out = tmp_path / "build" / profile
    for stem in built:
        book.write_copy(_notebook(f"{stem[:2]} · {stem}"), out, stem, profile)
    where = {"notebooks_dir": notebooks, "figures": figures, "results": results}
    return book.prepare_sources(out, profile, tmp_path / "src", **where)


def _section(page: str, number: str) -> str:
    found = re.search(rf"\({number}-syllabus\)=\n(.*?)(?=\n\(\d\d-syllabus\)=|\Z)", page, re.S)
    assert found, f"no syllabus section for lesson {number}"
    return found.group(1)


# ------------------------------------------------------------------ the sources


def test_syllabus_data_covers_every_lesson_of_the_course():
    data = book_syllabus.syllabus()
    assert sorted(data["lessons"]) == NUMBERS
    assert "estimate" in data["study_time_note"]
    for number, plan in data["lessons"].items():
        assert all(n < number for n in plan["after"]), f"{number}: a later lesson first"
        assert plan["background"], f"{number}: no background knowledge named"
        assert 10 <= plan["study_minutes_estimate"] <= 240


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_notebook_has_a_title_and_what_you_will_learn(path):
    title, summary = book_syllabus.intro(nbformat.read(path, as_version=4))
    assert title.startswith(path.name[:2] + " · "), title
    assert len(summary) > 80, f"{path.name}: no 'What you will learn' block for the syllabus"


def test_syllabus_page_gives_prerequisites_goals_estimate_and_run_time(tmp_path):
    record = _record(**{"03_a_lesson": 12.34})
    src = _sources(tmp_path, record=record)
    page = (src / "syllabus.md").read_text(encoding="utf-8")
    plans = book_syllabus.syllabus()["lessons"]
    for stem in STEMS:
        section = _section(page, stem[:2])
        plan = plans[stem[:2]]
        assert f"[{stem[:2]} · {stem}](notebooks/{stem}.ipynb)" in section
        assert all(b in section for b in plan["background"])
        assert all(f"[{n}](#{n}-syllabus)" in section for n in plan["after"])
        assert "why $w_i^\\top w_j = -\\frac{1}{k-1}$" in section  # the notebook's own goals
        assert f"Study time (estimate)\n: ≈ {plan['study_minutes_estimate']} min" in section
    assert "12.3 s (quick, 2026-01-02, cold)" in _section(page, "03")
    assert "not measured" in _section(page, "00")  # the record does not time it
    assert "estimate, not measured" in page and "2026-01-02T03:04:05Z" in page


def test_the_syllabus_keeps_each_lessons_goals_as_a_list_and_lesson_00s_table():
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    lessons = [(p.stem, *book_syllabus.intro(nbformat.read(p, as_version=4))) for p in paths]
    page = book_syllabus.syllabus_page(lessons, None)
    assert "| method | loss | classifier head |" in _section(page, "00")  # the tour's table
    for stem, _, goals in lessons[1:]:
        section = _section(page, stem[:2])
        assert f"**Goals.** {goals}" in section
        assert goals.startswith("By the end you can:\n- "), stem
        assert section.count("\n- ") >= 3, stem  # a list, not one run-on line


def test_the_front_page_gives_the_course_length_computed_from_the_syllabus(tmp_path):
    plans = book_syllabus.syllabus()["lessons"]
    hours = sum(p["study_minutes_estimate"] for p in plans.values()) / 60
    text = book_syllabus.course_length()
    assert f"{len(plans)} lessons and takes about {hours:.0f} hours of study" in text
    src = _sources(tmp_path)
    assert (src / "_generated" / "course.md").read_text().strip() == text
    assert "{include} _generated/course.md" in (src / "index.md").read_text()


def test_run_time_falls_back_to_the_committed_record_and_else_is_not_measured(tmp_path):
    committed = _record(date="2025-05-05T00:00:00Z", cold=False, **{"00_tour": 99.0})
    page = (_sources(tmp_path, committed=committed) / "syllabus.md").read_text()
    assert "99.0 s (quick, 2025-05-05, warm)" in _section(page, "00")
    record = timings.timing_record("quick", tmp_path / "figures", tmp_path / "results")
    assert record.source == tmp_path / "results" / "quick" / "timings.json"
    shutil.rmtree(tmp_path / "results")
    page = (_sources(tmp_path) / "syllabus.md").read_text()
    assert page.count("Measured run time\n: not measured") == len(STEMS)
    assert not re.search(r"\d+\.\d s\b", page)


def test_a_record_of_some_notebooks_only_gives_way_to_a_complete_one(tmp_path):
    partial = {**_record(**{"02_minority": 20.3}), "only": ["02"]}
    committed = _record(date="2025-05-05T00:00:00Z", **{"00_tour": 99.0})
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "timings.json").write_text(json.dumps(partial))
    (tmp_path / "results" / "quick").mkdir(parents=True)
    (tmp_path / "results" / "quick" / "timings.json").write_text(json.dumps(committed))
    record = timings.timing_record("quick", tmp_path / "figures", tmp_path / "results")
    assert record.seconds("00_tour") == 99.0
    alone = timings.timing_record("quick", tmp_path / "figures", tmp_path / "nothing")
    assert alone.partial and alone.seconds("02_minority") == 20.3


def test_lesson_source_notes_profile_folds_exercises_and_links_terms(tmp_path):
    src = _sources(tmp_path)
    nb = nbformat.read(src / "notebooks" / "03_a_lesson.ipynb", as_version=4)
    first = nb.cells[0].source
    assert first.startswith("# 03 · 03_a_lesson\n\n```{note}\nThis page holds the results of")
    assert "**quick** profile" in first
    assert "{term}`ETF`" in first and "{term}`minority collapse <Minority collapse>`" in first
    assert nb.cells[2].outputs[0]["data"] == {"text/html": book.WIDGET_NOTE}
    check, folded = nb.cells[3], nb.cells[4]
    assert "remove-output" in check.metadata["tags"]  # the blank's hint is in the fold
    from palviz.exercises import ex01

    assert folded.source.count(":class: dropdown") == 2
    assert ex01.q1.hint_text in folded.source and ex01.q1.solution_text.strip() in folded.source
    # the lessons without an executed copy get a page that says how to build them
    placeholder = (src / "notebooks" / "07_noise.md").read_text()
    assert "palviz figures --profile quick --only 07" in placeholder
    status = (src / "_generated" / "status.md").read_text()
    assert "These pages hold the results of the **quick** profile" in status


def test_copies_of_unpacked_paper_results_say_paper(tmp_path):
    out = tmp_path / "build" / "elsewhere"
    book.write_copy(_notebook(), out, "03_a_lesson", "paper")
    nbformat.write(_notebook(), tmp_path / "03_a_lesson.ipynb")
    src = book.prepare_sources(out, "smoke", tmp_path / "src", notebooks_dir=tmp_path)
    first = nbformat.read(src / "notebooks" / "03_a_lesson.ipynb", as_version=4).cells[0]
    assert "**paper** profile" in first.source


def test_a_failed_lesson_is_marked_with_its_error_and_command_while_its_page_stays(tmp_path):
    out = tmp_path / "build" / "quick"
    book.write_copy(_notebook(), out, "03_a_lesson", "quick")
    failure = book.write_failure(_notebook(), out, "03_a_lesson", "KeyError: 'x'", "quick")
    assert book.read_failure(out, "03_a_lesson") == failure
    nbformat.write(_notebook(), tmp_path / "03_a_lesson.ipynb")
    src = book.prepare_sources(out, "quick", tmp_path / "src", notebooks_dir=tmp_path)
    page = nbformat.read(src / "notebooks" / "03_a_lesson.ipynb", as_version=4).cells[0].source
    assert "```{error}\nThe last run of this lesson failed" in page
    assert "`KeyError: 'x'`" in page and "palviz figures --profile quick --only 03" in page
    assert "last run that reached the end" in page
    assert "palviz figures --profile quick --only 03" in (src / "_generated/status.md").read_text()
    book.clear_failure(out, "03_a_lesson")
    assert book.read_failure(out, "03_a_lesson") is None


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebook_links_to_the_glossary_name_an_existing_term(path):
    terms = book.glossary_terms(ROOT / "docs" / "glossary.md")
    assert len(terms) >= 25
    text = path.read_text(encoding="utf-8")
    for anchor in re.findall(r"glossary\.md#([\w-]+)", text):
        assert anchor in terms, f"{path.name} links to glossary.md#{anchor}: no such term"


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_set_up_cells_are_folded_and_echo_nothing(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    first = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    for cell in code[first : first + 2]:  # the parameters and their check
        assert "hide-input" in cell.metadata.get("tags", []), cell.source[:80]
    check = code[first + 1].source.rstrip()
    last = ast.parse(check).body[-1]
    echoes = isinstance(last, ast.Expr) and getattr(last.value, "func", None) is not None
    if echoes and getattr(last.value.func, "id", "") == "check_parameters":
        assert check.endswith(";"), "the parameters check would echo its dict"
    for cell in code:  # a folded cell prints nothing but setup_notebook's header line
        if "hide-input" not in cell.metadata.get("tags", []) or "parameters" in cell.metadata.tags:
            continue
        calls = [
            n.func.id
            for n in ast.walk(ast.parse(cell.source))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        ]
        assert not {"print", "display"} & set(calls), f"a folded cell prints: {cell.source[:80]}"
        body = ast.parse(cell.source).body
        bare = body and isinstance(body[-1], ast.Expr) and not cell.source.rstrip().endswith(";")
        named = bare and getattr(getattr(body[-1].value, "func", None), "id", "")
        assert not bare or named == "setup_notebook", f"a folded cell echoes: {cell.source[-80:]}"


def test_kernel_draws_inline_whatever_the_callers_backend(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    env = cli_kernel.kernel_environment("smoke")
    assert env["MPLBACKEND"] == cli_kernel.INLINE_BACKEND
    assert env["PALVIZ_WIDGETS"] == "0"  # the book has no kernel: a note, not sliders
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
    cells = [
        new_code_cell(
            "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([0, 1])\nplt.show()"
        ),
        new_code_cell("fig, ax = plt.subplots()\nax.bar([0, 1], [2, 3])"),
    ]
    nbformat.write(new_notebook(cells=cells), source)
    cli_kernel.execute_notebook(source, "smoke", tmp_path / "out", timeout=120)
    executed = nbformat.read(tmp_path / "out" / "99_figures.ipynb", as_version=4)
    images = [sum("image/png" in o.get("data", {}) for o in c.outputs) for c in executed.cells]
    assert images == [1, 1], images
    assert executed.metadata["palviz"]["profile"] == "smoke"


# ------------------------------------------------------------------ the built book


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """``build/smoke/`` with its book (:func:`book_support.smoke_book`)."""
    return smoke_book(tmp_path_factory.mktemp("book"))


def _pages(built: Path) -> list[Path]:
    return sorted((built / "book").rglob("*.html"))


def _lesson_pages(built: Path) -> dict[str, Path]:
    return {p.stem[:2]: p for p in (built / "book" / "notebooks").glob("[0-9][0-9]_*.html")}


def test_every_lesson_in_order_in_the_navigation(built):
    index = (built / "book" / "index.html").read_text(encoding="utf-8")
    nav = index[index.index('class="bd-sidebar-primary') :]
    found = re.findall(r'href="notebooks/(\d\d)_[\w]+\.html"', nav)
    assert list(dict.fromkeys(found)) == NUMBERS, found
    assert "These pages hold the results of the" in index and "smoke" in index
    syllabus = (built / "book" / "syllabus.html").read_text(encoding="utf-8")
    assert "Study time (estimate)" in syllabus and "Measured run time" in syllabus
    assert "seconds to execute each notebook" in syllabus  # this run's timing record


def test_search_for_minority_collapse_lists_lesson_02(built):
    text = (built / "book" / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    docs = index["docnames"]

    def having(stem):  # the pages whose text or titles hold the word
        found = set()
        for kind in ("terms", "titleterms"):
            docs_of = index[kind].get(stem, [])
            found |= {docs_of} if isinstance(docs_of, int) else set(docs_of)
        return found

    both = having("minor") & having("collaps")
    assert "notebooks/02_minority_collapse" in {docs[i] for i in both}


def test_glossary_terms_in_a_lesson_link_to_the_glossary(built):
    page = _lesson_pages(built)["02"].read_text(encoding="utf-8")
    links = re.findall(
        r'<a class="reference internal" href="([^"]+)"><span class="xref std std-term">', page
    )
    assert any(h.startswith("../docs/glossary.html#term-") for h in links), links
    glossary = (built / "book" / "docs" / "glossary.html").read_text(encoding="utf-8")
    for href in links:
        assert f'id="{href.split("#")[1]}"' in glossary, href


def test_each_lesson_page_holds_every_figure_of_its_executed_notebook(built):
    pages = _lesson_pages(built)
    assert sorted(pages) == NUMBERS
    for number, page in pages.items():
        nb = nbformat.read(next(built.glob(f"{number}_*.ipynb")), as_version=4)
        images = sum(
            any(k.startswith("image/") for k in o.get("data", {}))
            for c in nb.cells
            for o in c.get("outputs", [])
        )
        html = page.read_text(encoding="utf-8")
        shown = re.findall(r'<img [^>]*src="(\.\./_images/[^"]+)"', html)
        assert len(shown) == images, f"{page.name}: {len(shown)} figures, {images} image outputs"
        assert all((page.parent / s).is_file() for s in shown)


def test_no_raw_display_maths_remains(built):
    for page in _pages(built):
        text = re.sub(r"<(code|pre)\b.*?</\1>", "", page.read_text(encoding="utf-8"), flags=re.S)
        assert "$$" not in text, f"{page.relative_to(built)} shows raw $$"


def test_nothing_in_the_book_refers_to_a_remote_url(built):
    remote = re.compile(r"\s*(https?:|wss?:)?//")
    for path in sorted((built / "book").rglob("*")):
        if path.suffix not in (".html", ".css", ".js"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        loads = re.findall(r'<(?:script|img|iframe|source|video|audio)\b[^>]*\bsrc="([^"]+)"', text)
        loads += re.findall(r'<link\b[^>]*\bhref="([^"]+)"', text)
        loads += re.findall(r"url\(\s*['\"]?([^'\")]+)", text)
        loads += re.findall(r"@import\s+(?:url\()?['\"]?([^'\")\s;]+)", text)
        found = [u for u in loads if remote.match(u)]
        assert not found, f"{path.relative_to(built)} refers to {found}"
    lesson = next((built / "book" / "notebooks").glob("01_*.html")).read_text(encoding="utf-8")
    assert "_static/mathjax/MathJax.js?config=" in lesson  # a page with maths loads MathJax
    assert (built / "book" / "_static" / "mathjax" / "MathJax.js").is_file()
    # no lesson title holds maths, so the navigation of a page without MathJax shows no raw \(
    index = (built / "book" / "index.html").read_text(encoding="utf-8")
    assert "\\(" not in index


def test_a_cell_that_writes_prose_has_its_code_folded_on_the_page():
    prose = nbformat.v4.new_code_cell("display(Markdown(f'**Summary.** {x}'))")
    prose.outputs = [
        nbformat.v4.new_output("display_data", data={"text/markdown": "**Summary.** 3"})
    ]
    plain = nbformat.v4.new_code_cell("x = 3")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 01 · A"), plain, prose])
    page = book.lesson_source(nb, "01_a", "", {})
    assert page.cells[2].metadata["tags"] == ["hide-input"]
    assert "tags" not in page.cells[1].metadata


# ------------------------------------------------------------------ the search page's snippets


@pytest.mark.parametrize(
    ("tex", "plain"),
    [
        ("\\(k = 10\\)", "k = 10"),
        ("\\(\\gamma_{\\min} \\le \\frac{k}{k-1}\\)", "γ_min ≤ k/(k-1)"),
        ("\\(w_i^\\top w_j = -\\frac{1}{k-1}\\)", "w_iᵀ w_j = -1/(k-1)"),
        ("\\(\\rho = \\frac{n_{\\max}}{n_{\\min}}\\)", "ρ = n_max/n_min"),
        ("\\[\\frac{1}{K}\\sum_k \\lVert w_k \\rVert^2\\]", "1/K Σ_k ‖ w_k ‖^2"),
        ("\\(\\mathcal{L}_{\\text{CE}}\\)", "L_CE"),
        ("3. The per-class margins \\Delta_j", "3. The per-class margins Δ_j"),
    ],
)
def test_maths_reads_as_plain_text_in_a_snippet(tex, plain):
    assert book_search.readable_tex(tex) == plain


def test_a_pages_search_text_is_its_article_without_chrome_title_or_code():
    html = (
        '<html><body><div class="article-header-buttons">Light Dark</div>'
        '<nav class="bd-toc"><span class="math">\\(s\\)</span></nav>'
        '<article class="bd-article"><h1>02 · Title<a class="headerlink">#</a></h1>'
        '<p>With <span class="math notranslate">\\(k = 10\\)</span> classes<br>and'
        " &amp; more.</p>"
        '<div class="cell_input"><pre>print("code")</pre></div>'
        '<div class="cell_output"><pre>printed 0.5</pre></div>'
        "<script>var x = 1;</script></article>"
        "<footer>next page</footer></body></html>"
    )
    assert book_search.article_text(html) == "With k = 10 classes and & more. printed 0.5"


def test_maths_titles_of_the_search_index_read_as_plain_text():
    index = {"titles": ["02 · A lesson"], "alltitles": {"9. Move \\lambda yourself": []}}
    assert book_search.maths_titles(index) == {"9. Move \\lambda yourself": "9. Move λ yourself"}


def test_search_page_alone_gets_every_pages_text_without_tex(built):
    book_dir = built / "book"
    data = (book_dir / "_static" / book_search.TEXT_FILE).read_text(encoding="utf-8")
    data = json.loads(data[data.index("{") : data.rindex("}") + 1])
    pages = {p.relative_to(book_dir).with_suffix("").as_posix() for p in _pages(built)}
    pages = {p for p in pages if not p.startswith("_static/")} - {"search", "genindex"}
    assert set(data["pages"]) == pages
    for doc, text in data["pages"].items():
        assert "\\(" not in text and "\\[" not in text, (doc, _around(text, "\\("))
    assert "minority collapse" in data["pages"]["notebooks/02_minority_collapse"].lower()
    search = (book_dir / "search.html").read_text(encoding="utf-8")
    assert book_search.TEXT_FILE in search and book_search.SNIPPET_FILE in search
    lesson = _lesson_pages(built)["02"].read_text(encoding="utf-8")
    assert book_search.TEXT_FILE not in lesson  # only the search page loads the texts


def _around(text: str, part: str, width: int = 60) -> str:
    at = text.find(part)
    return text[max(0, at - width) : at + width]


def test_the_built_syllabus_shows_each_lessons_goals_as_a_list_and_lesson_00s_table(built):
    html = (built / "book" / "syllabus.html").read_text(encoding="utf-8")
    sections = re.split(r'<section id="[^"]+">', html[html.index("<article") :])[1:]
    found = {re.search(r'href="notebooks/(\d\d)_', s).group(1): s for s in sections}
    assert sorted(found) == NUMBERS
    assert "<table" in found["00"].split("<strong>Goals.</strong>")[1]
    for number in NUMBERS[1:]:
        goals = found[number].split("<strong>Goals.</strong>")[1]
        assert goals.count("<li>") >= 3, f"lesson {number}'s goals are not a list"
        assert 'href="#../' not in goals, f"lesson {number}: a link the syllabus cannot follow"
    front = (built / "book" / "index.html").read_text(encoding="utf-8").replace("’", "'")
    assert re.sub(r"\s+", " ", book_syllabus.course_length()) in re.sub(r"\s+", " ", front)
