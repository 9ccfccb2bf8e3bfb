"""Helpers for ``tests/test_browser.py``: a headless Chromium, a JupyterLab server that lives
in temporary folders, and polling.

Nothing here touches the repository: the server's configuration, data, runtime, workspaces
and user settings go to folders the caller passes, and the caller chooses the notebook folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
INSTALL_HINT = "apt-get install chromium chromium-driver"
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)
WINDOW = (1400, 1000)


def browser_binaries() -> tuple[str | None, str | None]:
    """(chromium, chromedriver) paths, None where missing."""
    chromium = "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None
    chromium = chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    return chromium, shutil.which("chromedriver")


def require_browser() -> tuple[str, str]:
    """The browser binaries, or skip (fail when ``PALVIZ_REQUIRE_BROWSER=1``, as in CI)."""
    import pytest

    chromium, driver = browser_binaries()
    missing = [
        name for name, path in (("chromium", chromium), ("chromedriver", driver)) if not path
    ]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install selenium)")
    if missing:
        message = (
            f"browser tests need {', '.join(missing)}: {INSTALL_HINT} (and pip install selenium)"
        )
        if os.environ.get("PALVIZ_REQUIRE_BROWSER") == "1":
            pytest.fail(f"PALVIZ_REQUIRE_BROWSER=1 but {message}", pytrace=False)
        pytest.skip(message)
    return chromium, driver


def start_chromium(chromium: str, chromedriver: str, *, performance_log: bool = False):
    """A headless Chromium with a fresh profile; ``driver.profile_dir`` is removed by
    :func:`quit_chromium`."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="palviz-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    if performance_log:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(chromedriver))
    driver.set_page_load_timeout(180)
    driver.set_script_timeout(120)
    driver.profile_dir = profile
    return driver


def quit_chromium(driver) -> None:
    with contextlib.suppress(Exception):
        driver.quit()
    shutil.rmtree(getattr(driver, "profile_dir", ""), ignore_errors=True)


def wait_for(
    predicate: Callable[[], Any],
    timeout: float,
    describe: Callable[[], str] | str,
    interval: float = 1.0,
) -> Any:
    """Call ``predicate`` until it returns something truthy (returned) or ``timeout`` seconds
    pass (AssertionError with ``describe``). Exceptions of a DOM that is changing under the
    predicate (stale elements, scripts run during a reload) count as "not yet"."""
    from selenium.common.exceptions import (
        JavascriptException,
        NoSuchElementException,
        StaleElementReferenceException,
    )

    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except (
            StaleElementReferenceException,
            NoSuchElementException,
            JavascriptException,
        ) as error:
            last_error = error
        if time.monotonic() > deadline:
            text = describe() if callable(describe) else describe
            if last_error is not None:
                text += f" (last error: {type(last_error).__name__}: {last_error})"
            raise AssertionError(f"after {timeout:.0f} s: {text}")
        time.sleep(interval)


def full_page_screenshot(driver, path: Path, max_height: int = 20000) -> Path:
    """Screenshot of the whole page: the window is made as tall as the document."""
    path.parent.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script(
        "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"
    )
    driver.set_window_size(WINDOW[0], min(max(int(height) + 40, WINDOW[1]), max_height))
    try:
        time.sleep(0.5)
        driver.save_screenshot(str(path))
    finally:
        driver.set_window_size(*WINDOW)
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kill_group(process: subprocess.Popen, grace: float = 20.0) -> None:
    """SIGTERM the process group that ``process`` leads, then SIGKILL what is left."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except FileNotFoundError:
        return "(no log)"


class LabServer:
    """``python -m jupyter lab`` on a free port of 127.0.0.1 with a random token; every
    folder it writes to is below ``home`` (a temporary directory)."""

    def __init__(self, root_dir: Path, home: Path, env: dict[str, str]):
        self.root_dir = Path(root_dir)
        self.home = Path(home)
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}/"
        self.log = self.home / "jupyterlab.log"
        folders = {
            name: self.home / name
            for name in ("config", "data", "runtime", "workspaces", "settings", "ipython")
        }
        for folder in folders.values():
            folder.mkdir(parents=True, exist_ok=True)
        self.env = dict(env)
        self.env.update(
            JUPYTER_CONFIG_DIR=str(folders["config"]),
            JUPYTER_DATA_DIR=str(folders["data"]),  # lab extensions come from sys.prefix
            JUPYTER_RUNTIME_DIR=str(folders["runtime"]),
            IPYTHONDIR=str(folders["ipython"]),
        )
        self.command = [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root_dir}",
            f"--LabApp.workspaces_dir={folders['workspaces']}",
            f"--LabApp.user_settings_dir={folders['settings']}",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            self.command.append("--ServerApp.allow_root=True")
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 180) -> LabServer:
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                self.command,
                cwd=self.root_dir,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

        def ready():
            if self.process.poll() is not None:
                raise AssertionError(
                    f"JupyterLab exited with code {self.process.returncode}:\n{tail(self.log)}"
                )
            with contextlib.suppress(OSError, ValueError):
                return self.api("GET", "api/status")
            return None

        wait_for(ready, timeout, lambda: f"JupyterLab did not answer:\n{tail(self.log)}", 0.5)
        return self

    def url(self, path: str) -> str:
        return f"{self.base}{path}?token={self.token}"

    def api(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"token {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode()
        return json.loads(text) if text.strip() else {}

    def put_settings(self, plugin: str, values: dict[str, Any]) -> dict[str, Any]:
        """Store user settings of ``plugin`` and return the settings Lab now reports."""
        self.api("PUT", f"lab/api/settings/{plugin}", {"raw": json.dumps(values)})
        return self.api("GET", f"lab/api/settings/{plugin}")["settings"]

    def session(self, path: str) -> dict[str, Any] | None:
        for session in self.api("GET", "api/sessions"):
            if session.get("path") == path:
                return session
        return None

    def shutdown_kernels(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            for session in self.api("GET", "api/sessions"):
                with contextlib.suppress(OSError, urllib.error.HTTPError):
                    self.api("DELETE", f"api/sessions/{session['id']}")
            for kernel in self.api("GET", "api/kernels"):
                with contextlib.suppress(OSError, urllib.error.HTTPError):
                    self.api("DELETE", f"api/kernels/{kernel['id']}")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.shutdown_kernels()
        kill_group(self.process)


# --- JavaScript run in the pages -------------------------------------------------------------

#: The state of the open notebook: one entry per cell, in order, with what a reader sees.
NOTEBOOK_STATE_JS = """
const panels = Array.from(document.querySelectorAll('.jp-NotebookPanel'))
  .filter(p => !p.classList.contains('lm-mod-hidden'));
if (panels.length !== 1) return {panels: panels.length, cells: []};
const panel = panels[0];
const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator')
  || document.querySelector('.jp-Notebook-ExecutionIndicator');
const cells = Array.from(panel.querySelectorAll('.jp-Cell')).map(cell => {
  const prompt = cell.querySelector('.jp-InputArea-prompt');
  const area = cell.querySelector('.jp-OutputArea');
  return {
    kind: cell.classList.contains('jp-CodeCell') ? 'code'
      : cell.classList.contains('jp-MarkdownCell') ? 'markdown' : 'raw',
    prompt: prompt ? prompt.textContent.replace(/\\s/g, '') : '',
    outputs: area ? Array.from(area.querySelectorAll('.jp-OutputArea-output')).map(o => ({
      mime: o.getAttribute('data-mime-type') || '',
      text: o.textContent.slice(0, 3000),
      imgs: o.querySelectorAll('img').length,
    })) : [],
    imgs: area ? Array.from(area.querySelectorAll('img'))
      .filter(i => (i.getAttribute('src') || '').length > 100).length : 0,
    sliders: cell.querySelectorAll('.widget-slider').length,
    widgets: cell.querySelectorAll('.jupyter-widgets').length,
    interacts: cell.querySelectorAll('.widget-interact').length,
  };
});
const dialogs = Array.from(document.querySelectorAll('.jp-Dialog'))
  .map(d => d.innerText.slice(0, 500));
return {panels: 1, status: indicator ? indicator.getAttribute('data-status') : null,
        cells: cells, dialogs: dialogs};
"""

#: Visible text of the elements matching arguments[0], without code, scripts and typeset maths:
#: what is left must contain no TeX.
PROSE_TEXT_JS = """
return Array.from(document.querySelectorAll(arguments[0])).map(el => {
  const copy = el.cloneNode(true);
  copy.querySelectorAll('code, pre, script, style, .MathJax, .MathJax_Display, '
    + '.MathJax_Preview, .MathJax_SVG, .MathJax_CHTML, mjx-container').forEach(e => e.remove());
  return copy.textContent;
});
"""

#: MathJax 2.7 is loaded, has typeset something and has nothing left in its queue.
MATHJAX_STATE_JS = """
const hub = window.MathJax && window.MathJax.Hub;
return {
  loaded: !!hub,
  ready: !!(hub && window.MathJax.isReady),
  idle: !!(hub && hub.queue && hub.queue.pending === 0 && !hub.queue.running),
  typeset: document.querySelectorAll('span.MathJax, div.MathJax_Display').length,
  errors: document.querySelectorAll('.MathJax_Error, merror, .merror').length,
  scripts: document.querySelectorAll('script[type^="math/tex"]').length,
};
"""
