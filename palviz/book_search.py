"""The book's search page shows a snippet of each page it finds, read from ``file://``.

Sphinx's search page fetches each found page to cut a snippet from it; a browser refuses that
fetch from ``file://``, and over HTTP the snippet starts with the theme's buttons and shows
the TeX source of the maths. With Sphinx's fetch turned off (``html_show_search_summary =
False`` in ``docs/conf.py``), this Sphinx extension gives the search page, alone, the text
of each page's article (``_static/palviz_search_text.js``: no code cell's source, no theme
buttons, the maths as plain text, :func:`readable_tex`), which ``_static/palviz_search.js``
cuts the snippets from. Section titles with maths are shown as plain text there too.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

#: The script that holds every page's text, written into the book's ``_static/``.
TEXT_FILE = "palviz_search_text.js"
#: The script that cuts the snippets (``docs/_static/``).
SNIPPET_FILE = "palviz_search.js"

_SYMBOLS = {
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "neq": "≠",
    "ne": "≠",
    "approx": "≈",
    "sim": "~",
    "cdot": "·",
    "times": "×",
    "infty": "∞",
    "sum": "Σ",
    "prod": "Π",
    "in": "∈",
    "to": "→",
    "rightarrow": "→",
    "leftarrow": "←",
    "pm": "±",
    "sqrt": "√",
    "lVert": "‖",
    "rVert": "‖",
    "Vert": "‖",
    "|": "‖",
    "langle": "⟨",
    "rangle": "⟩",
    "ldots": "…",
    "dots": "…",
    "cdots": "…",
    "propto": "∝",
    "partial": "∂",
    "nabla": "∇",
    "forall": "∀",
    "top": "ᵀ",
    "lfloor": "⌊",
    "rfloor": "⌋",
    "lceil": "⌈",
    "rceil": "⌉",
    "{": "{",
    "}": "}",
    "%": "%",
    "_": "_",
    "&": "&",
}
_GREEK = (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu "
    "xi pi rho sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma "
    "Upsilon Phi Psi Omega"
).split()
_GREEK_LETTERS = "αβγδεεζηθθικλμνξπρστυφφχψωΓΔΘΛΞΠΣΥΦΨΩ"
_SYMBOLS.update(zip(_GREEK, _GREEK_LETTERS, strict=True))
_SPACES = {",", ";", ":", "!", " ", "quad", "qquad"}
#: Commands that only style their argument or size a delimiter: the argument stays.
_STYLE = set(
    "mathcal mathbb mathbf mathrm mathit mathsf mathtt boldsymbol bm text textbf textit "
    "operatorname hat bar tilde vec widehat widetilde overline left right big Big bigl bigr "
    "Bigl Bigr displaystyle textstyle mathop limits".split()
)
_DELIMITERS = re.compile(r"^\s*(\\\(|\\\[|\$\$?)|(\\\)|\\\]|\$\$?)\s*$")
_FRAC = re.compile(r"\\[dt]?frac\s*(?=\{)")
_COMMAND = re.compile(r"\\([A-Za-z]+|.)")
_SIMPLE = re.compile(r"^[\w.·ᵀ]*$")


def readable_tex(tex: str) -> str:
    """TeX maths as plain text for a snippet: no delimiters, ``\\frac{a}{b}`` as ``a/b``,
    Greek letters and common symbols as their characters, other commands by their name,
    no braces (``\\(\\gamma_{\\min} \\le \\frac{k}{k-1}\\)`` -> ``γ_min ≤ k/(k-1)``)."""
    text = _DELIMITERS.sub("", tex.strip())
    while (found := _FRAC.search(text)) is not None:
        top, after_top = _group(text, found.end())
        bottom, end = _group(text, after_top)
        top, bottom = (readable_tex(p) for p in (top, bottom))
        top, bottom = (p if _SIMPLE.match(p) else f"({p})" for p in (top, bottom))
        gap = " " if text[end : end + 1].isalnum() or text.startswith("\\", end) else ""
        text = text[: found.start()] + f"{top}/{bottom}{gap}" + text[end:]

    def command(match: re.Match) -> str:
        name = match.group(1)
        if name in _SPACES:
            return " "
        if name in _STYLE:
            return ""
        return _SYMBOLS.get(name, name if name.isalpha() else "")

    text = _COMMAND.sub(command, text)
    text = re.sub(r"\^\s*\{?ᵀ\}?", "ᵀ", text)  # w^\top -> wᵀ
    text = text.replace("{", "").replace("}", "")
    return re.sub(r"\s+", " ", text).strip()


def _group(text: str, start: int) -> tuple[str, int]:
    """The ``{...}`` group at ``text[start:]`` (spaces before it skipped): its inside, nested
    groups kept, and where it ends; a group never closed runs to the end."""
    start = len(text) - len(text[start:].lstrip())
    if not text.startswith("{", start):
        return "", start
    depth = 0
    for at in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[at], 0)
        if depth == 0:
            return text[start + 1 : at], at + 1
    return text[start + 1 :], len(text)


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
_BLOCK = {"p", "div", "li", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "dd"}


class _ArticleText(HTMLParser):
    """The text of a page's ``<article>``, without scripts, styles, heading anchors, the
    page's title (the search result shows it) and code cells' source; maths as
    :func:`readable_tex`."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.stack: list[tuple[str, str]] = []  # (tag, role): role "skip", "math" or ""
        self.inside = 0  # depth of <article> elements open
        self.maths: list[str] | None = None

    def _role(self, tag: str, attrs: dict) -> str:
        classes = (attrs.get("class") or "").split()
        if tag in ("script", "style", "h1") or {"headerlink", "cell_input"} & set(classes):
            return "skip"
        if tag in ("span", "div") and "math" in classes:
            return "math"
        return ""

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            self.parts.append(" " if tag == "br" else "")
            return
        role = self._role(tag, dict(attrs))
        self.stack.append((tag, role))
        self.inside += tag == "article"
        if role == "math" and self.maths is None:
            self.maths = []
        if tag in _BLOCK:
            self.parts.append(" ")

    def handle_endtag(self, tag):
        while self.stack:
            opened, role = self.stack.pop()
            self.inside -= opened == "article"
            if role == "math" and not any(r == "math" for _, r in self.stack):
                if self._reading():
                    self.parts.append(f" {readable_tex(''.join(self.maths or []))} ")
                self.maths = None
            if opened == tag:
                break

    def _reading(self) -> bool:
        return self.inside > 0 and not any(role == "skip" for _, role in self.stack)

    def handle_data(self, data):
        if not self._reading():
            return
        (self.maths if self.maths is not None else self.parts).append(data)

    def text(self) -> str:
        return re.sub(r"\s+", " ", "".join(self.parts)).strip()


def article_text(html: str) -> str:
    """The plain text of the ``<article>`` of a built page ``html`` (see :class:`_ArticleText`)."""
    parser = _ArticleText()
    parser.feed(html)
    parser.close()
    return parser.text()


def maths_titles(index: dict) -> dict[str, str]:
    """Each page or section title of the search ``index`` (``searchindex.js``'s object) that
    holds maths (its TeX, as Sphinx indexes it) -> the title as plain text."""
    titles = list(index.get("titles", [])) + list(index.get("alltitles", {}))
    return {t: readable_tex(t) for t in titles if "\\" in t}


def _page_context(app, pagename, templatename, context, doctree) -> None:
    if pagename == "search":
        app.add_js_file(TEXT_FILE)
        app.add_js_file(SNIPPET_FILE)


def _write_texts(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    pages = {}
    for doc in sorted(app.env.found_docs):
        page = out / f"{doc}{app.builder.out_suffix}"
        if page.is_file():
            pages[doc] = article_text(page.read_text(encoding="utf-8"))
    index = (out / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(index[index.index("(") + 1 : index.rindex(")")])
    data = {"pages": pages, "titles": maths_titles(index)}
    text = f"window.PALVIZ_SEARCH = {json.dumps(data, ensure_ascii=False)};\n"
    (out / "_static" / TEXT_FILE).write_text(text, encoding="utf-8")


def setup(app):
    app.connect("html-page-context", _page_context)
    app.connect("build-finished", _write_texts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
