"""Notebooks executed through papermill at smoke size, for the tests that change a parameter and
look at the runs it trained: the environment (:func:`smoke_environment`, for a test's fixture)
and :func:`execute`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def smoke_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The smoke profile, the run cache (``$PALVIZ_RUNS`` when set, else one of the test) and
    figures of the test; the kernels import this checkout's palviz. Returns the run cache."""
    runs = Path(os.environ.get("PALVIZ_RUNS") or tmp_path / "runs")
    for name, value in {
        "PALVIZ_PROFILE": "smoke",
        "PALVIZ_RUNS": str(runs),
        "PALVIZ_FIGURES": str(tmp_path / "figures"),
        "PALVIZ_ROOT": str(ROOT),
        "MPLBACKEND": "Agg",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    return runs


def execute(notebook: str, out: Path, parameters: dict) -> None:
    """Run notebook ``notebook`` (its two-digit number) with ``parameters`` into ``out``."""
    papermill = pytest.importorskip("papermill")
    (path,) = (ROOT / "notebooks").glob(f"{notebook}_*.ipynb")
    papermill.execute_notebook(
        str(path),
        str(out),
        parameters=parameters,
        kernel_name="python3",
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
    )


def trained(runs: Path, specs) -> list[dict]:
    """The ``spec.json`` of each of ``specs``, asserting that each run finished in ``runs``."""
    out = []
    for spec in specs:
        folder = runs / spec.key()
        assert (folder / "metrics.json").exists(), f"{spec.label} was not trained into {folder}"
        out.append(json.loads((folder / "spec.json").read_text()))
    return out
