"""The project's own housekeeping: packaging, environment file, notebooks, paths."""

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from palviz import files

ROOT = Path(__file__).resolve().parents[1]
# conda-forge names that differ from PyPI's
CONDA_TO_PYPI = {"pytorch": "torch"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[]", requirement.strip(), maxsplit=1)[0].lower()


def test_environment_yml_names_the_same_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        wanted |= {_name(r) for r in extra}
    wanted.discard(project["name"])  # an extra that includes another (palviz[cluster])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "conda-forge" in env["channels"]
    named = set()
    pip_section = []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip_section = dep["pip"]
            named |= {_name(r) for r in pip_section if not r.startswith("-e")}
        else:
            named.add(CONDA_TO_PYPI.get(_name(dep), _name(dep)))
    named -= {"python", "pip"}
    assert named == wanted
    assert "-e ." in pip_section, "the pip section must install the package itself"


def test_pyproject_declares_python_console_script_and_ranges_not_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"].startswith(">=")
    assert project["scripts"]["palviz"] == "palviz.cli:main"
    for requirement in project["dependencies"]:
        assert "==" not in requirement, f"pin a range, not a version: {requirement}"


def _notebooks():
    return sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_notebooks_are_numbered_in_order():
    names = [p.stem for p in _notebooks()]
    assert names, "no notebooks found"
    numbers = [int(n[:2]) for n in names]
    assert numbers == list(range(len(names))), names


def _strip(text: str) -> str:
    """What nbstripout (the git filter of .gitattributes) makes of a notebook."""
    done = subprocess.run(
        [sys.executable, "-m", "nbstripout"], input=text, capture_output=True, text=True, check=True
    )
    return done.stdout


def _filter_registered() -> bool:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "config", "--get", "filter.nbstripout.clean"],
        capture_output=True,
        text=True,
    )
    return done.returncode == 0 and "nbstripout" in done.stdout


def _as_committed(path: Path) -> str:
    """The notebook as a commit would store it: stripped by the git filter when `make lab`
    (or `make strip-filter`) registered it, else the file as it is."""
    text = path.read_text(encoding="utf-8")
    return _strip(text) if _filter_registered() else text


def test_gitattributes_sends_notebooks_through_nbstripout():
    rules = (ROOT / ".gitattributes").read_text().splitlines()
    assert "*.ipynb filter=nbstripout" in rules
    assert "strip-filter" in (ROOT / "Makefile").read_text().split("\nlab:")[1]


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.stem)
def test_notebook_is_what_nbstripout_makes_of_it(path):
    """So the filter never turns a checkout into a modified tree."""
    committed = _as_committed(path)
    assert json.loads(_strip(committed)) == json.loads(committed), (
        f"{path.name}: run `python -m nbstripout {path.relative_to(ROOT)}`"
    )


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs_and_starts_with_parameters(path):
    nb = json.loads(_as_committed(path))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for cell in code:
        assert not cell.get("outputs"), f"{path.name}: strip outputs"
        assert cell.get("execution_count") is None, f"{path.name}: strip execution counts"
    assert "parameters" in code[0].get("metadata", {}).get("tags", []), (
        f"{path.name}: the first code cell must be tagged 'parameters'"
    )
    source = "".join(
        cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        for cell in code
    )
    assert f'setup_notebook("{path.stem}"' in source, (
        f"{path.name}: call setup_notebook with its name"
    )


#: A notebook code cell is a call into palviz and a plot; past this many lines, the code
#: belongs in palviz (the aim is 30).
MAX_CELL_LINES = 40


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: p.stem)
def test_no_notebook_code_cell_is_longer_than_40_lines(path):
    nb = json.loads(path.read_text())
    long_cells = {}
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        lines = len(source.splitlines())
        if lines > MAX_CELL_LINES:
            long_cells[index] = lines
    assert not long_cells, (
        f"{path.name}: code cells longer than {MAX_CELL_LINES} lines (cell index: lines): "
        f"{long_cells}; move the code into palviz"
    )


def test_folders_resolve_against_the_project_root_from_notebooks(monkeypatch):
    for var in ("PALVIZ_ROOT", "PALVIZ_DATA", "PALVIZ_RUNS", "PALVIZ_FIGURES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(ROOT / "notebooks")
    assert files.project_root() == ROOT
    assert files.data_dir() == ROOT / "data"
    assert files.figures_dir("quick") == ROOT / "figures"
    assert files.figures_dir("smoke") == ROOT / "figures" / "smoke"
    monkeypatch.setenv("PALVIZ_RUNS", "/tmp/elsewhere")
    assert files.runs_dir() == Path("/tmp/elsewhere")


def test_unknown_profile_is_refused_with_the_allowed_names(monkeypatch):
    monkeypatch.setenv("PALVIZ_PROFILE", "huge")
    with pytest.raises(ValueError, match=r"^PALVIZ_PROFILE must be one of .*got 'huge'$"):
        files.resolve_profile()
    with pytest.raises(ValueError, match=r"^--profile must be one of .*'paper'\], got 'tiny'$"):
        files.resolve_profile("tiny", name="--profile")


def test_atomic_write_leaves_nothing_behind_on_error(tmp_path):
    target = tmp_path / "result.json"
    files.write_json(target, {"a": 1})
    with pytest.raises(RuntimeError):
        with files.atomic_write(target, "w") as handle:
            handle.write("half")
            raise RuntimeError("interrupted")
    assert json.loads(target.read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_citations_point_at_the_projects_own_reference_page():
    """Code, notebooks and docs cite docs/reference.md by section; every cited section exists
    and no citation points at a file outside the repository."""
    page = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^## (\d+)\. ", page, re.MULTILINE))
    outside = "REFERENCE" + ".md"
    cited = set()
    for path in [*ROOT.glob("palviz/**/*.py"), *ROOT.glob("tests/*.py"), *_notebooks()]:
        text = path.read_text(encoding="utf-8")
        assert outside not in text, f"{path.name} cites a file that is not in the repository"
        for match in re.finditer(r"docs/reference\.md,? (?:sections? )?([\d, and]+)", text):
            cited |= set(re.findall(r"\d+", match.group(1)))
    assert cited, "no citation of docs/reference.md found"
    assert cited <= sections, f"cited sections {sorted(cited - sections)} do not exist"


#: The README is what a newcomer reads in five minutes; the rest lives one link away in docs/.
MAX_README_LINES = 200


def test_readme_is_at_most_200_lines():
    lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_README_LINES, (
        f"README.md has {lines} lines (at most {MAX_README_LINES}): move a section to a page "
        "under docs/ and link it"
    )


def _doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _slug(heading: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation but ``-`` and ``_``
    dropped, spaces made ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _without_code(page.read_text(encoding="utf-8"), keep_headings=True)
    slugs = [_slug(h) for h in re.findall(r"^#{1,6} (.+?)#*\s*$", text, re.MULTILINE)]
    seen: dict[str, int] = {}
    anchors = set()
    for slug in slugs:  # GitHub numbers repeated headings: x, x-1, x-2, ...
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors | set(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text))


def _without_code(text: str, keep_headings: bool = False) -> str:
    """``text`` without fenced code blocks and (unless ``keep_headings``) inline code."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.MULTILINE | re.DOTALL)
    return text if keep_headings else re.sub(r"`[^`\n]*`", "", text)


def _relative_links(page: Path) -> list[str]:
    text = _without_code(page.read_text(encoding="utf-8"))
    targets = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]  # no http:, mailto:


def _broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for link in _relative_links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if target.is_relative_to(root / "build"):
            continue  # what `make figures` writes (the book), not a file of the repository
        if not target.exists():
            broken.append(f"{link} (no {os.path.relpath(target, root)})")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{link} (no heading #{anchor} in {target.name})")
    return broken


@pytest.mark.parametrize("page", _doc_pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_of_the_docs_points_at_a_file_that_exists(page):
    """Every relative link of README.md and docs/*.md names a file (or folder) of the
    repository (or, under build/, what `make figures` writes), and an anchor into a markdown
    page names one of its headings."""
    broken = _broken_links(page)
    assert not broken, f"{page.relative_to(ROOT)}: broken links: {broken}"


def test_the_link_check_finds_broken_links_and_anchors(tmp_path):
    (tmp_path / "b.md").write_text("# B\n\n## Two words: `code`\n\n## Two words: `code`\n")
    page = tmp_path / "a.md"
    page.write_text(
        "# Title\n\n[ok](b.md#two-words-code-1) [top](#title) [web](https://example.com)\n"
        "[gone](c.md) [bad anchor](b.md#three) `[in code](d.md)`\n\n```\n[fenced](e.md)\n```\n"
        "[built](build/quick/book/index.html)\n"
    )
    assert _broken_links(page, tmp_path) == [
        "c.md (no c.md)",
        "b.md#three (no heading #three in b.md)",
    ]
    assert _slug("6.2 Noisy labels (APL tables, which PAL extends with FNPAL)") == (
        "62-noisy-labels-apl-tables-which-pal-extends-with-fnpal"
    )


# ---------------------------------------------------------------- markdown tables (GitHub's rules)

#: A GitHub Markdown delimiter row: cells of dashes, each optionally colon-aligned.
_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def _table_cells(row: str) -> list[str]:
    """The cells of a table row as GitHub splits them: on every pipe not escaped as ``\\|``
    (inline code and maths included), the leading and trailing pipe dropped."""
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return re.split(r"(?<!\\)\|", row)


def _tables(text: str) -> list[tuple[str, str, list[str]]]:
    """Every (header, delimiter, body rows) of ``text`` outside fenced code."""
    lines = _without_code(text, keep_headings=True).splitlines()
    found = []
    for i in range(1, len(lines)):
        header, delimiter = lines[i - 1], lines[i]
        if "|" in delimiter and _DELIMITER.match(delimiter) and "|" in header:
            body = []
            for row in lines[i + 1 :]:
                if not row.strip() or "|" not in row:
                    break
                body.append(row)
            found.append((header, delimiter, body))
    return found


def _table_faults(text: str) -> list[str]:
    """Each table whose delimiter row, or one of whose body rows, has another number of cells
    than its header (GitHub then renders no table, or drops the extra cells)."""
    faults = []
    for header, delimiter, body in _tables(text):
        n = len(_table_cells(header))
        counts = [len(_table_cells(row)) for row in [delimiter, *body]]
        if any(c != n for c in counts):
            faults.append(f"{header.strip()[:60]!r}: header {n} cells, rows {counts}")
    return faults


def _markdown_sources() -> list[tuple[str, str]]:
    sources = [
        (p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in _doc_pages()
    ]
    for path in _notebooks():
        for k, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "markdown":
                sources.append((f"{path.name}, cell {k}", "".join(cell["source"])))
    return sources


def test_every_markdown_table_of_the_notebooks_and_docs_parses_as_a_table():
    sources = _markdown_sources()
    assert sum(len(_tables(text)) for _, text in sources) >= 10, "the table finder found none"
    faults = [f"{where}: {fault}" for where, text in sources for fault in _table_faults(text)]
    assert not faults, faults


def test_the_table_check_finds_a_delimiter_row_of_another_width():
    three_by_four = "| loss | formula | head |\n|---|---|---|---|\n| CE | $x$ | linear |\n"
    assert len(_table_faults(three_by_four)) == 1
    fine = "a | b `c\\|d`\n:-- | --:\n1 | 2\n\n```\n| in | code |\n|---|\n```\n"
    assert _table_faults(fine) == [] and len(_tables(fine)) == 1
    assert len(_table_faults("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n")) == 1


# ---------------------------------------------------------------- the papers' authors and venues

#: How the project cites the papers it teaches (docs/reference.md's list), and the slips it
#: once made: PAL's first author is Xiong Zhou, ELM's Sota Kato; Kobayashi's LMSCE is BMVC 2019.
CITED_RIGHT = (
    "X. Zhou, X. Liu, D. Zhai, J. Jiang, X. Gao, X. Ji. *Prototype-Anchored Learning",
    "S. Kato, K. Hotta. *Enlarged Large Margin Loss",
    "T. Kobayashi. *Large Margin In Softmax Cross-Entropy Loss.* BMVC 2019.",
)
CITED_WRONG = ("S. Zhou", "T. Kato", "ICIP 2019", "Zhou, S.", "Kato, T.")


def _cited_sources() -> list[tuple[str, str]]:
    code = [
        (p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8"))
        for p in ROOT.glob("palviz/**/*.py")
    ]
    return _markdown_sources() + code


def test_the_papers_authors_and_venues_are_cited_right_everywhere():
    sources = _cited_sources()
    wrong = [
        f"{where}: {slip!r}" for where, text in sources for slip in CITED_WRONG if slip in text
    ]
    assert not wrong, wrong
    reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    for form in CITED_RIGHT:
        assert form in reference, form
    for path in _notebooks():
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        refs = "".join(
            "".join(c["source"]) for c in cells if "## References" in "".join(c["source"])
        )
        if "Prototype-Anchored Learning" in refs:
            assert re.search(r"X\. Zhou(, X\. Liu| et al\.)", refs), path.name
        if "Enlarged Large Margin Loss" in refs:
            assert "S. Kato, K. Hotta" in refs, path.name
        if "Large Margin In Softmax" in refs:
            assert "BMVC 2019" in refs, path.name
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "Zhou, Xiong" in readme and "Kato, Sota" in readme
