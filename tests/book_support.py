"""The built course book that ``tests/test_book.py`` and ``tests/test_browser.py`` read:
``$PALVIZ_BOOK`` (a ``build/smoke/`` folder that ``make test`` fills before the tests, so the
notebooks run once), else ``palviz figures --profile smoke`` run now, with the network cut,
into temporary folders (a few minutes on two cores)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A socket guard for the processes of ``palviz figures`` where ``unshare -n`` is refused:
#: every connection but a Unix socket's (the kernels' channels) raises.
GUARD = """import socket
_connect = socket.socket.connect
def _refuse(self, address):
    if self.family != socket.AF_UNIX:
        raise OSError("network cut by the book test: " + repr(address))
    return _connect(self, address)
socket.socket.connect = _refuse
"""


def _network_cut() -> list[str]:
    for command in (["unshare", "-n"], ["unshare", "-rn"]):
        if shutil.which("unshare") and subprocess.run([*command, "true"]).returncode == 0:
            return command
    return []


def smoke_book(base: Path) -> Path:
    """``build/smoke/`` with its book: ``$PALVIZ_BOOK``, else ``palviz figures --profile
    smoke`` run now into ``base`` (an empty temporary folder) with the network cut."""
    given = os.environ.get("PALVIZ_BOOK")
    if given:
        assert (Path(given) / "book" / "index.html").is_file(), f"no book in {given}"
        return Path(given)
    env = {**os.environ, "PALVIZ_BUILD": str(base / "build"), "PALVIZ_FIGURES": str(base / "f")}
    env["PALVIZ_RUNS"] = os.environ.get("PALVIZ_RUNS") or str(base / "runs")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    cut = _network_cut()
    if not cut:
        (base / "guard").mkdir()
        (base / "guard" / "sitecustomize.py").write_text(GUARD)
        env["PYTHONPATH"] = os.pathsep.join([str(base / "guard"), env["PYTHONPATH"]])
    command = [*cut, sys.executable, "-m", "palviz", "figures", "--profile", "smoke"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, (
        f"palviz figures failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    )
    return base / "build" / "smoke"
