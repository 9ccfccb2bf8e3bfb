"""The course in a real browser (headless Chromium driven by Selenium).

1. JupyterLab, as ``make lab`` gives it (no ``MPLBACKEND``, so the inline backend; profile
   ``quick``): notebooks 01 and 05 run through the menu (Run > Run All Cells); every code cell
   runs once, in order, without errors; every figure cell shows its figure; the ipywidgets
   sliders render and moving one redraws the figure.
2. The book of ``palviz figures --profile quick --only 01 05``, opened from ``file://`` with
   the network cut: no request leaves the machine, the lessons in order in the navigation,
   the figures shown, MathJax typesets the maths, a folded solution opens on a click, the
   search finds lesson 02.

Everything is written below pytest's temporary folders (the notebooks run from copies, the
``PALVIZ_*`` folders are redirected), except the screenshots in ``build/browser/``.
Skipped without Chromium and chromedriver, unless ``PALVIZ_REQUIRE_BROWSER=1`` (then failed).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest
from browser_support import (
    MATHJAX_STATE_JS,
    NOTEBOOK_STATE_JS,
    PROSE_TEXT_JS,
    ROOT,
    LabServer,
    full_page_screenshot,
    kill_group,
    quit_chromium,
    require_browser,
    start_chromium,
    tail,
    wait_for,
)

STEMS = ("01_simplex_prototypes", "05_margins_lmsce_ldam_elm")
PROFILE = "quick"
SHOTS = ROOT / "build" / "browser"
RUN_TIMEOUT = 900  # seconds for Run All Cells of one notebook (about 30 s on a quiet laptop)
FIGURES_TIMEOUT = 300  # seconds from its start for palviz figures --only 01 05
FIGURE_CALL = re.compile(r"savefig\(|plt\.show\(\)")
SAVEFIG_NAME = re.compile(r"savefig\(\s*\w+\s*,\s*[\"'](\w+)[\"']")
ERROR_TEXT = re.compile(r"Traceback|\b\w*(Error|Exception)\b:|Error displaying widget")
RAW_TEX = re.compile(r"\$|\\[A-Za-z]+|\\\(|\\\[")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def _short(stem: str) -> str:
    return stem[:2]


def _figure_cells(nb) -> list[tuple[int, int]]:
    """(cell index, figures it must show at least) for the code cells that draw figures."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and FIGURE_CALL.search(cell.source):
            found.append((index, max(1, cell.source.count("plt.show()"))))
    return found


def _clean_env() -> dict[str, str]:
    """The caller's environment without MPLBACKEND (a user of ``make lab`` has none set)."""
    return {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}


def _palviz_folders(base: Path) -> dict[str, str]:
    folders = {
        "PALVIZ_BUILD": base / "build",
        "PALVIZ_FIGURES": base / "figures",
        "PALVIZ_RUNS": base / "runs",
        "PALVIZ_CACHE": base / "cache",
    }
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    env = {name: str(path) for name, path in folders.items()}
    env["NUMBA_CACHE_DIR"] = str(folders["PALVIZ_CACHE"] / "numba")
    env["PALVIZ_ROOT"] = str(ROOT)
    env["PALVIZ_PROFILE"] = PROFILE
    return env


# --- the state of the repository, before and after ------------------------------------------


def _repo_state() -> dict[str, object]:
    """What this module must not change: the tracked notebooks (git status and contents), no
    checkpoints next to them, and the repository's own figures and quick build of 01 and 05."""
    state: dict[str, object] = {}
    git = shutil.which("git")
    if git and (ROOT / ".git").exists():
        status = subprocess.run(
            [git, "-C", str(ROOT), "status", "--porcelain", "--ignored", "--", "notebooks"],
            capture_output=True,
            text=True,
            check=False,
        )
        # only what this module could cause: changes to the two notebooks it opens, and new
        # untracked or ignored files in notebooks/ (others may edit other notebooks meanwhile)
        lines = [
            line
            for line in status.stdout.splitlines()
            if any(stem in line for stem in STEMS) or line.startswith(("??", "!!"))
        ]
        state["git status --porcelain --ignored notebooks (01, 05, new files)"] = lines
    for stem in STEMS:
        path = ROOT / "notebooks" / f"{stem}.ipynb"
        state[f"sha256 of notebooks/{path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    state["notebooks/.ipynb_checkpoints exists"] = (ROOT / "notebooks/.ipynb_checkpoints").exists()
    for folder in (ROOT / "figures", ROOT / "build" / PROFILE):
        for stem in STEMS:
            for path in sorted(folder.glob(f"{stem}*")):
                state[f"mtime of {path.relative_to(ROOT)}"] = path.stat().st_mtime_ns
    return state


@pytest.fixture(scope="module")
def browser():
    """(chromium, chromedriver), or skip."""
    return require_browser()


@pytest.fixture(scope="module")
def repo_before(browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    return _repo_state()


# --- palviz figures, in the background while JupyterLab runs --------------------------------


@dataclass
class FiguresBuild:
    process: subprocess.Popen
    log: Path
    out_dir: Path
    figures: Path
    started: float


@pytest.fixture(scope="module")
def figures_build(repo_before, tmp_path_factory):
    """``python -m palviz figures --profile quick --only 01 05`` started now (it runs while the
    JupyterLab tests run); :func:`course_pages` waits for it."""
    base = tmp_path_factory.mktemp("palviz-figures")
    env = _clean_env()
    env.update(_palviz_folders(base))
    log = base / "palviz-figures.log"
    command = [sys.executable, "-m", "palviz", "figures", "--profile", PROFILE, "--only"]
    command += [_short(s) for s in STEMS]
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    build = FiguresBuild(process, log, base / "build" / PROFILE, base / "figures", time.time())
    yield build
    kill_group(process)


@pytest.fixture(scope="module")
def course_pages(figures_build) -> Path:
    """The folder of the built pages, once ``palviz figures`` has finished."""
    left = figures_build.started + FIGURES_TIMEOUT - time.time()
    try:  # about 50 s alone, 2 min beside JupyterLab on two cores
        code = figures_build.process.wait(timeout=max(1.0, left))
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"palviz figures did not finish in {FIGURES_TIMEOUT} s (a cell that never gets its "
            f"execute_reply?); its output:\n{tail(figures_build.log)}"
        )
    assert code == 0, f"palviz figures exited with {code}:\n{tail(figures_build.log)}"
    seconds = time.time() - figures_build.started
    print(f"\n[browser] palviz figures finished after {seconds:.0f} s")
    return figures_build.out_dir


# --- JupyterLab -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab(browser, figures_build, tmp_path_factory):
    """A JupyterLab server on copies of notebooks 01 and 05 (its autosave must not write into
    the tracked notebooks), profile quick, every folder temporary, windowing off."""
    base = tmp_path_factory.mktemp("palviz-lab")
    root_dir = base / "notebooks"
    root_dir.mkdir()
    for stem in STEMS:
        shutil.copy2(ROOT / "notebooks" / f"{stem}.ipynb", root_dir / f"{stem}.ipynb")
    env = _clean_env()
    env.update(_palviz_folders(base / "palviz"))
    server = LabServer(root_dir, base / "jupyter", env)
    started = time.time()
    try:
        server.start()
        print(f"\n[browser] JupyterLab answered after {time.time() - started:.0f} s")
        # Lab 4 virtualises long notebooks; with windowing off every cell is in the DOM.
        tracker = server.put_settings(
            "@jupyterlab/notebook-extension:tracker", {"windowingMode": "none"}
        )
        assert tracker.get("windowingMode") == "none", f"windowing setting not applied: {tracker}"
        # no news or update checks (the machine may have no network)
        server.put_settings(
            "@jupyterlab/apputils-extension:notification",
            {"fetchNews": "false", "checkForUpdates": False},
        )
        server.figures = Path(env["PALVIZ_FIGURES"])
        yield server
    finally:
        server.stop()


@dataclass
class LabRun:
    stem: str
    driver: object
    source: nbformat.NotebookNode  # the notebook as stored (cell sources)
    state: dict  # NOTEBOOK_STATE_JS after Run All Cells
    seconds: float
    figures: Path


def _notebook_state(driver) -> dict:
    return driver.execute_script(NOTEBOOK_STATE_JS)


def _click_menu(driver, menu: str, item: str) -> None:
    """Click ``menu`` in the menu bar, then the entry ``item`` (by their visible text)."""
    from selenium.webdriver.common.by import By

    def find(selector, text):
        for element in driver.find_elements(By.CSS_SELECTOR, selector):
            if element.is_displayed() and element.text.strip() == text:
                return element
        return None

    bar = wait_for(lambda: find(".lm-MenuBar-item", menu), 60, f"no menu '{menu}' in the menu bar")
    bar.click()
    entry = wait_for(
        lambda: find(".lm-Menu-item .lm-Menu-itemLabel", item),
        30,
        lambda: (
            f"no entry '{item}' in the '{menu}' menu; it shows "
            + str([e.text for e in driver.find_elements(By.CSS_SELECTOR, ".lm-Menu-item")])
        ),
    )
    entry.click()


def _accept_kernel_dialog(driver) -> bool:
    """If Lab asks which kernel to use, take the one it proposes."""
    from selenium.webdriver.common.by import By

    for dialog in driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog"):
        if "kernel" in dialog.text.lower():
            buttons = dialog.find_elements(By.CSS_SELECTOR, ".jp-Dialog-button.jp-mod-accept")
            if buttons:
                buttons[0].click()
                return True
    return False


def _kernel_state(lab: LabServer, stem: str) -> str | None:
    session = lab.session(f"{stem}.ipynb")
    return session["kernel"].get("execution_state") if session else None


def _pending(state: dict, source) -> str:
    prompts = [
        (i, c["prompt"]) for i, c in enumerate(state.get("cells", [])) if c["kind"] == "code"
    ]
    waiting = [f"cell {i} {p}" for i, p in prompts if not re.fullmatch(r"\[\d+\]:", p)]
    return (
        f"{len(state.get('cells', []))}/{len(source.cells)} cells in the DOM, kernel "
        f"{state.get('status')}, not finished: {waiting[:12]}, dialogs: {state.get('dialogs')}"
    )


@pytest.fixture(scope="module", params=STEMS, ids=[_short(s) for s in STEMS])
def lab_run(request, lab, browser) -> LabRun:
    """One notebook opened in JupyterLab in a fresh browser and run with Run > Run All Cells."""
    stem = request.param
    source = nbformat.read(lab.root_dir / f"{stem}.ipynb", as_version=4)
    n_cells = len(source.cells)
    driver = start_chromium(*browser)
    try:
        # a workspace of its own, so that Lab restores no other tab
        driver.get(lab.url(f"lab/workspaces/palviz-{_short(stem)}/tree/{stem}.ipynb"))

        def opened():
            _accept_kernel_dialog(driver)
            state = _notebook_state(driver)
            return len(state["cells"]) == n_cells and state["status"] == "idle" and state

        wait_for(
            lambda: opened() and _kernel_state(lab, stem) == "idle",
            240,
            lambda: (
                f"{stem}: notebook not open with an idle kernel: "
                + _pending(_notebook_state(driver), source)
            ),
        )
        _click_menu(driver, "Run", "Run All Cells")
        started = time.time()

        def finished():
            accepted = _accept_kernel_dialog(driver)
            state = _notebook_state(driver)
            if state["dialogs"] and not accepted:
                raise AssertionError(f"{stem}: a dialog opened during the run: {state['dialogs']}")
            prompts = [c["prompt"] for c in state["cells"] if c["kind"] == "code"]
            done = (
                len(state["cells"]) == n_cells
                and all(re.fullmatch(r"\[\d+\]:", p) for p in prompts)
                and state["status"] == "idle"
            )
            return done and _kernel_state(lab, stem) == "idle" and state

        wait_for(
            finished,
            RUN_TIMEOUT,
            lambda: (
                f"{stem}: Run All Cells did not finish: "
                + _pending(_notebook_state(driver), source)
            ),
            2,
        )
        seconds = time.time() - started
        print(f"\n[browser] Lab: {stem} ran in {seconds:.0f} s")

        # Outputs of widgets arrive through their own messages: give them a moment to show.
        def figures_shown():
            state = _notebook_state(driver)
            ok = all(state["cells"][i]["imgs"] >= n for i, n in _figure_cells(source))
            return ok and state

        try:
            state = wait_for(figures_shown, 60, "figures")
        except AssertionError:
            state = _notebook_state(driver)  # the tests say what is missing
        driver.execute_script(
            "const w = document.querySelector('.jp-NotebookPanel .widget-interact');"
            "if (w) w.scrollIntoView({block: 'center'});"
        )
        time.sleep(1)
        driver.save_screenshot(str(SHOTS / f"lab_{stem}.png"))
        yield LabRun(stem, driver, source, state, seconds, lab.figures)
    finally:
        quit_chromium(driver)
        if lab.process.poll() is None:
            with contextlib.suppress(OSError, ValueError, TypeError):
                session = lab.session(f"{stem}.ipynb")
                if session:
                    lab.api("DELETE", f"api/sessions/{session['id']}")


def _code_cells(run: LabRun):
    for index, cell in enumerate(run.source.cells):
        if cell.cell_type == "code" and cell.source.strip():
            yield index, cell, run.state["cells"][index]


def test_lab_run_all_executes_every_code_cell_once_in_order(lab_run):
    kinds = [c["kind"] for c in lab_run.state["cells"]]
    expected_kinds = [
        "code" if c.cell_type == "code" else c.cell_type for c in lab_run.source.cells
    ]
    assert kinds == expected_kinds, f"{lab_run.stem}: the DOM's cells differ from the notebook's"
    prompts = [(index, shown["prompt"]) for index, _, shown in _code_cells(lab_run)]
    expected = [(index, f"[{n}]:") for n, (index, _) in enumerate(prompts, start=1)]
    assert prompts == expected, (
        f"{lab_run.stem}: execution counts after Run All Cells in a fresh kernel "
        f"(cell index, prompt) should be 1, 2, 3, ... in order"
    )


def test_lab_outputs_show_no_error(lab_run):
    errors, other = [], []
    for index, _, shown in _code_cells(lab_run):
        for output in shown["outputs"]:
            text = output["text"]
            if "error" in output["mime"] or ERROR_TEXT.search(text):
                errors.append(f"cell {index} ({output['mime']}): {text[-800:]}")
            elif "stderr" in output["mime"] and text.strip():
                other.append(f"cell {index}: {text[:300]}")
    assert not errors, f"{lab_run.stem}: error output in JupyterLab:\n" + "\n".join(errors)
    if other:
        warnings.warn(f"{lab_run.stem}: stderr output in JupyterLab: {other}", stacklevel=1)


def test_lab_figure_cells_show_their_figures_inline(lab_run):
    missing = []
    for index, wanted in _figure_cells(lab_run.source):
        shown = lab_run.state["cells"][index]
        if shown["imgs"] < wanted:
            kinds = [o["mime"] for o in shown["outputs"]]
            missing.append(f"cell {index}: {shown['imgs']} image(s) of {wanted}; outputs {kinds}")
    assert _figure_cells(lab_run.source), f"{lab_run.stem}: no figure cells found"
    assert not missing, f"{lab_run.stem}: figure cells without their figure:\n" + "\n".join(missing)


def test_lab_kernel_runs_profile_quick_and_writes_figures_to_the_given_folder(lab_run):
    text = " ".join(o["text"] for c in lab_run.state["cells"] for o in c["outputs"])
    assert f"profile: {PROFILE}" in text, (
        f"{lab_run.stem}: the setup cell did not print the profile"
    )
    names = {
        name
        for cell in lab_run.source.cells
        if cell.cell_type == "code"
        for name in SAVEFIG_NAME.findall(cell.source)
    }
    assert names, f"{lab_run.stem}: no savefig(fig, 'name') calls found"
    absent = [
        n for n in sorted(names) if not (lab_run.figures / f"{lab_run.stem}_{n}.png").is_file()
    ]
    assert not absent, (
        f"{lab_run.stem}: savefig wrote no {absent} into PALVIZ_FIGURES={lab_run.figures}; has "
        f"{sorted(p.name for p in lab_run.figures.glob('*.png'))}"
    )


def test_lab_each_cell_shows_its_sliders_once(lab_run):
    """A cell that ends with an expression returning the displayed panel shows it twice."""

    def panels():
        found = [
            (i, c["interacts"]) for i, c in enumerate(_notebook_state(lab_run.driver)["cells"])
        ]
        return [(i, n) for i, n in found if n]

    found = wait_for(panels, 60, f"{lab_run.stem}: no ipywidgets.interactive panel rendered")
    assert all(n == 1 for _, n in found), (
        f"{lab_run.stem}: a cell shows its sliders more than once (cell index, number of "
        f"ipywidgets.interactive panels): {found}"
    )


def test_lab_sliders_render_and_moving_one_redraws_the_figure(lab_run):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver, stem = lab_run.driver, lab_run.stem

    def interact():
        for element in driver.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .widget-interact"):
            sliders = element.find_elements(By.CSS_SELECTOR, ".widget-slider")
            images = element.find_elements(By.CSS_SELECTOR, ".widget-output img")
            if len(sliders) >= 2 and images and len(images[0].get_attribute("src") or "") > 100:
                return element
        return None

    def described():
        state = _notebook_state(driver)
        widgets = [
            (i, c["widgets"], c["sliders"], c["imgs"])
            for i, c in enumerate(state["cells"])
            if c["widgets"]
        ]
        texts = [
            o["text"][:200]
            for c in state["cells"]
            for o in c["outputs"]
            if "interactive" in o["text"]
        ]
        return (
            f"{stem}: no ipywidgets.interactive with 2 sliders and a figure; cells with widgets "
            f"(index, widgets, sliders, images): {widgets}; text outputs naming widgets: {texts}"
        )

    box = wait_for(interact, 60, described)
    slider = box.find_elements(By.CSS_SELECTOR, ".widget-slider")[0]
    label = slider.find_element(By.CSS_SELECTOR, ".widget-label").text
    handle = slider.find_element(By.CSS_SELECTOR, ".noUi-handle")
    readout = slider.find_element(By.CSS_SELECTOR, ".widget-readout")
    image = box.find_element(By.CSS_SELECTOR, ".widget-output img")
    before = image.get_attribute("src")
    old_value = float(handle.get_attribute("aria-valuenow"))
    low = float(handle.get_attribute("aria-valuemin"))
    high = float(handle.get_attribute("aria-valuemax"))
    target = (low + old_value) / 2 if old_value > low else (old_value + high) / 2
    typed = f"{target:.2f}" if "." in readout.text else str(round(target))

    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
    readout.click()
    driver.execute_script(
        "const range = document.createRange(); range.selectNodeContents(arguments[0]);"
        "const s = window.getSelection(); s.removeAllRanges(); s.addRange(range);",
        readout,
    )
    readout.send_keys(typed)
    readout.send_keys(Keys.ENTER)

    def redrawn():
        value = float(handle.get_attribute("aria-valuenow"))
        images = box.find_elements(By.CSS_SELECTOR, ".widget-output img")
        src = images[0].get_attribute("src") if images else ""
        state = _notebook_state(driver)
        return value != old_value and len(src) > 100 and src != before and state["status"] == "idle"

    wait_for(
        redrawn,
        90,
        lambda: (
            f"{stem}: slider '{label}' set from {old_value} to {typed} (now "
            f"{handle.get_attribute('aria-valuenow')}); the figure below it did not change"
        ),
    )
    assert abs(float(handle.get_attribute("aria-valuenow")) - float(typed)) < 1e-6, (
        f"{stem}: slider '{label}' shows {handle.get_attribute('aria-valuenow')}, typed {typed}"
    )
    time.sleep(1)
    driver.save_screenshot(str(SHOTS / f"lab_{_short(stem)}_after_slider.png"))
    state = _notebook_state(driver)
    errors = [
        o["text"][-500:]
        for c in state["cells"]
        for o in c["outputs"]
        if "stderr" in o["mime"] or ERROR_TEXT.search(o["text"])
    ]
    assert not errors, f"{stem}: error output after moving slider '{label}': {errors}"


# --- the offline pages ------------------------------------------------------------------------


class _Hits(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - the name http.server calls
        type(self).hits.append(self.path)
        body = b"<title>reached</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def offline_driver(browser):
    """A browser with the network cut (DevTools' offline mode) that logs every request;
    checked against a local HTTP server: reachable online, not offline."""
    driver = start_chromium(*browser, performance_log=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hits)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    probe = f"http://127.0.0.1:{server.server_address[1]}/probe"
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.get(probe)
        probes = lambda: [h for h in _Hits.hits if h.startswith("/probe")]  # noqa: E731
        assert probes() == ["/probe"], f"the probe server was not reached online: {_Hits.hits}"
        driver.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )
        from selenium.common.exceptions import WebDriverException

        with contextlib.suppress(WebDriverException):  # net::ERR_INTERNET_DISCONNECTED
            driver.get(probe + "2")
        assert probes() == ["/probe"], f"offline mode let a request through: {_Hits.hits}"
        driver.get_log("performance")
        yield driver
    finally:
        server.shutdown()
        quit_chromium(driver)


def _open_offline(driver, path: Path, wait_mathjax: bool = True) -> list[str]:
    """Open ``path`` from file://, wait until MathJax is done; the http(s)/ws URLs requested."""
    driver.get_log("performance")
    driver.get(path.as_uri())
    if wait_mathjax:
        wait_for(
            lambda: (s := driver.execute_script(MATHJAX_STATE_JS))["idle"] and s["typeset"] > 0,
            60,
            lambda: (
                f"{path.name}: MathJax did not typeset: {driver.execute_script(MATHJAX_STATE_JS)}"
            ),
            0.5,
        )
    requested = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requested.append(message["params"]["request"]["url"])
    return [u for u in requested if urlparse(u).scheme in ("http", "https", "ws", "wss")]


def _check_maths(driver, name: str, prose_selector: str) -> None:
    state = driver.execute_script(MATHJAX_STATE_JS)
    assert state["typeset"] > 0 and state["errors"] == 0, f"{name}: MathJax state {state}"
    # the page as a reader reads it, without the code cells' source (code may hold TeX in a
    # string that a computed Markdown output typesets)
    text = driver.execute_script(
        "const code = Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputArea'));"
        "const shown = code.map(e => e.style.display);"
        "code.forEach(e => { e.style.display = 'none'; });"
        "const text = document.body.innerText;"
        "code.forEach((e, i) => { e.style.display = shown[i]; });"
        "return text"
    )
    for raw in ("$$", "\\frac", "Math Processing Error"):
        assert raw not in text, f"{name}: the page shows {raw!r}: ...{_around(text, raw)}..."
    leftovers = []
    for index, prose in enumerate(driver.execute_script(PROSE_TEXT_JS, prose_selector)):
        for found in RAW_TEX.finditer(prose):
            leftovers.append(f"#{index}: {prose[max(0, found.start() - 40) : found.end() + 40]!r}")
    assert not leftovers, f"{name}: TeX left untypeset in {prose_selector}: {leftovers[:10]}"


def _around(text: str, part: str, width: int = 80) -> str:
    at = text.find(part)
    return text[max(0, at - width) : at + width]


BOOK_PAGE_JS = """
const article = document.querySelector('article') || document.body;
return {
  imgs: Array.from(article.querySelectorAll('img'))
    .map(i => ({complete: i.complete, width: i.naturalWidth})),
  notes: article.querySelectorAll('.palviz-widget-note').length,
  nav: Array.from(document.querySelectorAll('.bd-sidebar-primary a.reference'))
    .map(a => a.getAttribute('href')),
};
"""


def _image_outputs(nb) -> int:
    return sum(
        any(k.startswith("image/") for k in o.get("data", {}))
        for c in nb.cells
        for o in c.get("outputs", [])
    )


@pytest.mark.parametrize("stem", STEMS, ids=[_short(s) for s in STEMS])
def test_book_lesson_reads_offline_with_navigation_figures_and_typeset_maths(
    course_pages, offline_driver, stem
):
    driver = offline_driver
    page = course_pages / "book" / "notebooks" / f"{stem}.html"
    assert page.is_file(), f"palviz figures built no {page}: {os.listdir(course_pages)}"
    remote = _open_offline(driver, page)
    assert not remote, f"{page.name} requested from the network: {remote}"
    state = driver.execute_script(MATHJAX_STATE_JS)
    assert state["typeset"] > 0 and state["errors"] == 0, f"{page.name}: MathJax {state}"
    text = driver.execute_script("return document.querySelector('article').innerText")
    for raw in ("$$", "Math Processing Error"):
        assert raw not in text, f"{page.name} shows {raw!r}: ...{_around(text, raw)}..."
    shown = wait_for(
        lambda: (
            (s := driver.execute_script(BOOK_PAGE_JS))
            and all(i["complete"] for i in s["imgs"])
            and s
        ),
        30,
        f"{page.name}: images still loading",
    )
    executed = nbformat.read(course_pages / f"{stem}.ipynb", as_version=4)
    figures = [i for i in shown["imgs"] if i["width"] > 0]
    assert len(figures) == _image_outputs(executed) > 0, (page.name, shown["imgs"])
    nav = [f"{stem}.html" if h == "#" else h for h in shown["nav"]]  # "#": this page
    lessons = [h for h in nav if re.search(r"\d\d_\w+\.html$", h)]
    numbers = [re.search(r"(\d\d)_", h).group(1) for h in lessons]
    expected = [p.name[:2] for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
    assert numbers == expected, f"{page.name}: the lessons in the navigation: {lessons}"
    full_page_screenshot(driver, SHOTS / f"book_{_short(stem)}.png")


def test_book_folded_solution_opens_on_a_click(course_pages, offline_driver):
    from selenium.webdriver.common.by import By

    driver = offline_driver
    page = course_pages / "book" / "notebooks" / f"{STEMS[0]}.html"
    _open_offline(driver, page)
    solutions = [
        a
        for a in driver.find_elements(By.CSS_SELECTOR, ".admonition.dropdown")
        if a.find_element(By.CSS_SELECTOR, ".admonition-title").text.strip() == "Solution"
    ]
    assert solutions, f"{page.name}: no folded solution"
    code = solutions[0].find_element(By.CSS_SELECTOR, "pre")
    assert not code.is_displayed(), "the solution is not folded"
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", solutions[0])
    solutions[0].find_element(By.CSS_SELECTOR, ".admonition-title").click()
    wait_for(code.is_displayed, 10, "a click on the solution's title did not open it")
    assert code.text.strip(), "the opened solution is empty"
    driver.save_screenshot(str(SHOTS / "book_solution_open.png"))


def test_book_search_finds_the_lesson_offline(course_pages, offline_driver):
    from selenium.webdriver.common.by import By

    driver = offline_driver
    search = course_pages / "book" / "search.html"
    driver.get_log("performance")
    driver.get(search.as_uri() + "?q=minority+collapse")
    found = wait_for(
        lambda: [
            a.get_attribute("href")
            for a in driver.find_elements(By.CSS_SELECTOR, "#search-results li a")
        ],
        60,
        "search.html: no results for 'minority collapse'",
    )
    assert any("02_minority_collapse" in h for h in found), found
    full_page_screenshot(driver, SHOTS / "book_search.png")
    index = course_pages / "book" / "index.html"
    remote = _open_offline(driver, index, wait_mathjax=False)
    assert not remote, f"index.html requested from the network: {remote}"
    text = driver.execute_script("return document.body.innerText")
    assert "These pages hold the results of the" in text and PROFILE in text
    full_page_screenshot(driver, SHOTS / "book_index.png")


def _exercise_source(answer: str) -> list[str]:
    """The lines of lesson 01's first exercise cell with ``answer`` in place of the blank."""
    return ["from palviz.exercises import ex01", "", f"answer = {answer}", "ex01.q1.check(answer)"]


def test_lab_exercise_cell_says_not_yet_then_right(lab, browser):
    """Lesson 01's first exercise typed into JupyterLab: a wrong answer run with Shift+Enter
    shows "Not yet.", the right one "Right." (the check runs in the kernel; no Run All)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    stem = STEMS[0]
    source = nbformat.read(lab.root_dir / f"{stem}.ipynb", as_version=4)
    index = next(
        i
        for i, cell in enumerate(source.cells)
        if cell.cell_type == "code" and "ex01.q1.check(" in cell.source
    )
    driver = start_chromium(*browser)
    try:
        driver.get(lab.url(f"lab/workspaces/palviz-exercise/tree/{stem}.ipynb"))

        def opened():
            _accept_kernel_dialog(driver)
            state = _notebook_state(driver)
            return len(state["cells"]) == len(source.cells) and state["status"] == "idle"

        wait_for(
            lambda: opened() and _kernel_state(lab, stem) == "idle",
            240,
            lambda: (
                f"{stem}: not open with an idle kernel: "
                + _pending(_notebook_state(driver), source)
            ),
        )

        def run_with(answer: str, wanted: str) -> str:
            cell = driver.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Cell")[index]
            editor = cell.find_element(By.CSS_SELECTOR, ".cm-content")
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", editor)
            editor.click()
            keys = ActionChains(driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL)
            for n, line in enumerate(_exercise_source(answer)):
                keys = keys.send_keys(*([Keys.ENTER] if n else []), *([line] if line else []))
            keys.key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
            typed = lambda: editor.text  # noqa: E731

            def shown():
                state = _notebook_state(driver)
                out = state["cells"][index]
                text = " ".join(o["text"] for o in out["outputs"])
                done = re.fullmatch(r"\[\d+\]:", out["prompt"]) and state["status"] == "idle"
                return done and wanted in text and text

            return wait_for(
                shown,
                180,
                lambda: (
                    f"{stem}: cell {index} with {typed()!r} run: no {wanted!r}; it shows "
                    f"{_notebook_state(driver)['cells'][index]}"
                ),
            )

        wrong = run_with("0.25", "Not yet.")
        assert "wrong sign" in wrong, f"{stem}: the wrong answer's message: {wrong}"
        right = run_with("-1 / (5 - 1)", "Right.")
        assert "Not yet." not in right, f"{stem}: the old feedback is still shown: {right}"
        driver.save_screenshot(str(SHOTS / f"lab_{_short(stem)}_exercise.png"))
    finally:
        quit_chromium(driver)
        if lab.process.poll() is None:
            with contextlib.suppress(OSError, ValueError, TypeError):
                session = lab.session(f"{stem}.ipynb")
                if session:
                    lab.api("DELETE", f"api/sessions/{session['id']}")


def test_repository_notebooks_and_outputs_untouched(repo_before, lab, figures_build):
    """Runs last: JupyterLab's autosave and the kernels wrote only to temporary folders."""
    lab.stop()  # nothing may be written after the check: stop the kernels and the server first
    kill_group(figures_build.process)  # finished by now, unless it hung (see course_pages)
    after = _repo_state()
    changed = {k: (repo_before.get(k), after.get(k)) for k in repo_before.keys() | after.keys()}
    changed = {k: v for k, v in changed.items() if v[0] != v[1]}
    assert not changed, f"the browser tests changed the repository: {changed}"
