"""Sphinx configuration of the course book (Sphinx + MyST-NB + sphinx-book-theme).

``palviz figures`` builds the book with this file (:func:`palviz.book.build_book`): the
source folder is ``build/<profile>/book-src/`` (the executed notebooks of that profile, copies
of these docs, the front page and the syllabus page), the output ``build/<profile>/book/``.
Nothing is executed again (``nb_execution_mode = "off"``) and nothing is fetched from the
network, at build time or when reading: the maths is typeset by MathJax 2.7 copied from the
``jupyter-server-mathjax`` package into ``_static/mathjax/``, the theme's assets are local and
Sphinx's search works from ``file://``, its snippets cut from the pages' text that
:mod:`palviz.book_search` gives the search page.
"""

from __future__ import annotations

import shutil
from pathlib import Path

project = "palviz"
author = "palviz developers"
copyright = "palviz developers"

extensions = ["myst_nb", "sphinx_togglebutton", "palviz.book_search"]
root_doc = "index"
exclude_patterns = [
    "_build",
    "_generated/**",
    "**.ipynb_checkpoints",
    "docs/results/**",
    "docs/img/**",
]
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header"]

# --- notebooks: rendered as executed by `palviz figures`, never run again
nb_execution_mode = "off"
nb_output_stderr = "remove"
nb_merge_streams = True
nb_render_markdown_format = "myst"  # Markdown(...) outputs with $maths$ typeset like the prose
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3  # GitHub's anchors: docs/reference.md#2-losses-for-class-imbalance
myst_dmath_double_inline = True

# --- maths: a local MathJax 2.7 (copied at the end of the build, see setup below)
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
mathjax2_config = {
    "tex2jax": {
        "inlineMath": [["\\(", "\\)"]],
        "displayMath": [["\\[", "\\]"]],
        "processEscapes": True,
        "processClass": "math|output_area|output",
        "ignoreClass": "document",
    },
    "HTML-CSS": {
        "availableFonts": [],
        "preferredFont": None,
        "webFont": "STIX-Web",
        "linebreaks": {"automatic": True},  # a long display equation breaks at the column
        "styles": {"@font-face": {"font-family": "MathJax_Blank", "src": "local('MathJax_Blank')"}},
    },
    "messageStyle": "none",
    "showMathMenu": False,
}

# --- the theme, with nothing that links or loads from the network
html_theme = "sphinx_book_theme"
html_title = "palviz: learning from imperfect labels"
html_show_sphinx = False
html_context = {"default_mode": "auto"}  # the theme's documented default, stated
# palviz.css: printed output wraps at the column and figures shrink to it (no sideways scrolling)
html_static_path = ["_static"]
html_css_files = ["palviz.css"]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
# the search page cuts its snippets from the pages' text (palviz.book_search), not by fetching
# each page, which a browser refuses from file://
html_show_search_summary = False
html_theme_options = {
    "repository_url": "",
    "use_repository_button": False,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": [],
    "footer_center": [],
    "footer_end": [],
    "extra_footer": "",
    "article_footer_items": [],
    "content_footer_items": [],
    "icon_links": [],
}


def _mathjax_source() -> Path:
    import jupyter_server_mathjax

    return Path(jupyter_server_mathjax.__file__).parent / "static"


def _copy_mathjax(app, exception) -> None:
    """Put MathJax into the book's ``_static/mathjax/`` once (a marker says it is complete)."""
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    if not (target / ".complete").exists():
        shutil.copytree(_mathjax_source(), target, dirs_exist_ok=True)
        (target / ".complete").write_text("MathJax copied from jupyter-server-mathjax\n")


def setup(app):
    app.connect("build-finished", _copy_mathjax)
