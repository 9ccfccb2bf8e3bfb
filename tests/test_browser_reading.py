"""The smoke book as a learner reads it, in headless Chromium at 1400 x 1000 from ``file://``:
the front page and lessons 02, 06, 07, 08 and 09 fit their column (no table, figure or printed
block wider than it), lesson 06's claims table shows its verdicts without sideways scrolling,
no page shows NaN, a machine path or raw TeX, the search page's snippets are the pages' text
(no theme buttons, no TeX), the syllabus shows each lesson's goals as a list and lesson 00's
table, and no page logs a SEVERE entry in the browser's console.

The book is ``$PALVIZ_BOOK`` or one built now (``tests/book_support.py``). A screenshot of each
page is saved in ``<book folder>/screenshots/`` (``build/smoke/screenshots/`` for ``make
test``'s book). Skipped without Chromium and chromedriver, unless ``PALVIZ_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
from book_support import smoke_book
from browser_support import (
    MATHJAX_STATE_JS,
    full_page_screenshot,
    quit_chromium,
    require_browser,
    start_chromium,
    wait_for,
)

PAGES = ("index", "02", "06", "07", "08", "09")
SEARCH_TERM = "margin"  # found on pages with maths: their snippets would show raw TeX

#: What a page shows its reader, every fold opened: the main column's box, what sits in it
#: wider than it or scrolls sideways inside it (a table's container, a code block), the text
#: as shown (innerText) and as held (the article's textContent, scripts left out), the text
#: of the cells' outputs and tables, the sidebars' text.
LAYOUT_JS = """
document.querySelectorAll('article details').forEach(d => { d.open = true; });  // folded too
const column = document.querySelector('article.bd-article');
const box = column.getBoundingClientRect();
const wide = [];
// MathJax's own boxes (an accent may stick out of an inline formula) are left out; a display
// formula's box is not
const skip = '.MJX_Assistive_MathML, .MathJax, .MathJax_Display, .MathJax_Preview, span.math';
for (const el of column.querySelectorAll('*')) {
  if (!el.checkVisibility() || el.closest(skip)) continue;
  const r = el.getBoundingClientRect();
  const out = r.left < box.left - 1 || r.right > box.right + 1;
  const clips = getComputedStyle(el).overflowX !== 'visible';
  const scrolls = clips && el.scrollWidth > el.clientWidth + 1;
  if (out || scrolls)
    wide.push(`${el.tagName.toLowerCase()}.${el.getAttribute('class')}: ${Math.round(r.left)}..` +
      `${Math.round(r.right)}, scroll ${el.scrollWidth} > ${el.clientWidth}`);
}
const outputs = Array.from(column.querySelectorAll('div.cell_output, table'));
const sidebars = document.querySelectorAll('.bd-sidebar-primary, .bd-sidebar-secondary');
const held = column.cloneNode(true);
held.querySelectorAll('script, style').forEach(e => e.remove());
return {
  column: [Math.round(box.left), Math.round(box.right)],
  scrolls: document.documentElement.scrollWidth > window.innerWidth,
  wide: wide,
  shown: document.body.innerText,
  held: held.textContent,
  outputs: outputs.map(e => e.innerText).join('\\n'),
  sidebars: Array.from(sidebars).map(s => s.innerText).join('\\n'),
};
"""

#: Lesson 06's claims table (the one headed "verdict"): where its verdict column ends.
VERDICT_JS = """
const heads = Array.from(document.querySelectorAll('article.bd-article th'))
  .filter(th => th.innerText.trim().toLowerCase() === 'verdict');
const box = document.querySelector('article.bd-article').getBoundingClientRect();
return heads.map(th => {
  th.scrollIntoView({block: 'center'});
  const r = th.getBoundingClientRect();
  return {right: r.right, width: r.width, limit: Math.min(box.right, window.innerWidth)};
});
"""


@pytest.fixture(scope="module")
def book_dir(tmp_path_factory) -> Path:
    require_browser()
    return smoke_book(tmp_path_factory.mktemp("book")) / "book"


@pytest.fixture(scope="module")
def driver(book_dir):
    driver = start_chromium(*require_browser())
    yield driver
    quit_chromium(driver)


def _page(book_dir: Path, name: str) -> Path:
    if name == "index":
        return book_dir / "index.html"
    return next((book_dir / "notebooks").glob(f"{name}_*.html"))


def _open(driver, path: Path, query: str = "") -> list[str]:
    """Open ``path`` (file://), wait until MathJax, where the page loads it, is done; the
    SEVERE entries the browser's console logged meanwhile."""
    driver.get_log("browser")
    driver.get(path.as_uri() + query)
    wait_for(
        lambda: driver.execute_script("return document.readyState") == "complete",
        60,
        f"{path.name} did not load",
    )
    if driver.execute_script("return !!document.querySelector('script[src*=\"MathJax.js\"]')"):
        wait_for(
            lambda: (s := driver.execute_script(MATHJAX_STATE_JS))["idle"] and s["typeset"] > 0,
            90,
            lambda: (
                f"{path.name}: MathJax did not finish: {driver.execute_script(MATHJAX_STATE_JS)}"
            ),
            0.5,
        )
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _machine_paths(book_dir: Path) -> list[str]:
    """Folders no page may show: the build folder, the temporary folder, the run cache."""
    paths = [str(book_dir.parent.parent.resolve()), "/tmp/", tempfile.gettempdir() + "/"]
    if os.environ.get("PALVIZ_RUNS"):
        paths.append(str(Path(os.environ["PALVIZ_RUNS"]).resolve()))
    return paths


def _around(text: str, part: str, width: int = 70) -> str:
    at = text.find(part)
    return text[max(0, at - width) : at + width].replace("\n", " ")


@pytest.mark.parametrize("name", PAGES)
def test_a_page_reads_within_its_column_with_no_nan_path_raw_tex_or_console_error(
    book_dir, driver, name
):
    path = _page(book_dir, name)
    severe = _open(driver, path)
    assert not severe, f"{path.name} logged: {severe}"
    full_page_screenshot(driver, book_dir.parent / "screenshots" / f"{path.stem}.png")
    page = driver.execute_script(LAYOUT_JS)
    assert not page["wide"], f"{path.name}: wider than the column {page['column']}: {page['wide']}"
    assert not page["scrolls"], f"{path.name} scrolls sideways"
    found = re.search(r"\bNaN\b", page["outputs"])  # prose may explain what NaN means
    assert not found, f"{path.name} prints NaN: ...{_around(page['outputs'], 'NaN')}..."
    for kind in ("shown", "held", "sidebars"):
        text = page[kind]
        for folder in _machine_paths(book_dir):
            assert folder not in text, (
                f"{path.name} ({kind}) shows {folder}: {_around(text, folder)}"
            )
        for raw in ("\\(", "\\[", "$$") if kind != "held" else ():  # held: TeX in scripts
            assert raw not in text, f"{path.name} ({kind}) shows {raw}: ...{_around(text, raw)}..."


def test_lesson_06_shows_the_claims_verdicts_without_sideways_scrolling(book_dir, driver):
    path = _page(book_dir, "06")
    _open(driver, path)
    heads = driver.execute_script(VERDICT_JS)
    assert heads, f"{path.name}: no table with a verdict column"
    for head in heads:
        assert head["width"] > 0 and head["right"] <= head["limit"] + 1, (path.name, head)
    assert driver.execute_script("return window.scrollX") == 0


def test_search_snippets_are_the_pages_text_without_theme_buttons_or_tex(book_dir, driver):
    _open(driver, book_dir / "index.html")
    chrome = driver.execute_script(
        "const b = document.querySelector('.article-header-buttons');"
        "return b ? b.textContent.replace(/\\s+/g, ' ').trim() : ''"
    )
    severe = _open(driver, book_dir / "search.html", f"?q={SEARCH_TERM}")
    snippets = wait_for(
        lambda: driver.execute_script(
            "const r = Array.from(document.querySelectorAll('#search-results li'));"
            "const s = r.map(li => li.querySelector('p.context'));"
            "const over = document.querySelector('#search-results .search-summary');"
            "return r.length && over && over.innerText.trim() && s.every(Boolean) &&"
            " s.map(p => p.innerText)"  # the search is over (its summary says so), all cut
        ),
        60,
        f"search.html?q={SEARCH_TERM}: no results with snippets",
    )
    severe += [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not severe, f"search.html logged: {severe}"
    assert len(snippets) >= 3, snippets
    page = driver.execute_script("return document.body.innerText")
    for raw in ("\\(", "\\[", "$$"):
        assert raw not in page, f"the search page shows {raw}: ...{_around(page, raw)}..."
    for snippet in snippets:
        assert not re.search(r"\\[A-Za-z]+", snippet), f"a snippet shows TeX: {snippet}"
        if chrome:
            assert chrome not in snippet, f"a snippet shows the theme's buttons: {snippet}"
    assert any(SEARCH_TERM in s.lower() for s in snippets), snippets
    full_page_screenshot(driver, book_dir.parent / "screenshots" / "search.png")


def test_the_syllabus_shows_each_lessons_goals_as_a_list_and_lesson_00s_table(book_dir, driver):
    severe = _open(driver, book_dir / "syllabus.html")
    assert not severe, f"syllabus.html logged: {severe}"
    goals = driver.execute_script(
        """
        return Array.from(document.querySelectorAll('article section')).map(s => {
          const link = s.querySelector(':scope > h2 a[href*="notebooks/"]');
          const start = Array.from(s.querySelectorAll('p'))
            .find(p => p.innerText.startsWith('Goals.'));
          const after = [];
          for (let e = start && start.nextElementSibling; e; e = e.nextElementSibling)
            after.push(e);
          return {
            lesson: link ? link.getAttribute('href').match(/(\\d\\d)_/)[1] : null,
            items: after.flatMap(e => Array.from(e.querySelectorAll('li'))).length,
            tables: after.filter(e => e.querySelector('table') || e.tagName === 'TABLE').length,
          };
        }).filter(g => g.lesson);
        """
    )
    numbers = [p.name[:2] for p in sorted((book_dir / "notebooks").glob("[0-9][0-9]_*.html"))]
    assert [g["lesson"] for g in goals] == numbers, goals
    assert goals[0]["tables"] == 1, goals[0]
    for lesson in goals[1:]:
        assert lesson["items"] >= 3, f"lesson {lesson['lesson']}'s goals are not a list: {lesson}"
    full_page_screenshot(driver, book_dir.parent / "screenshots" / "syllabus.png")
