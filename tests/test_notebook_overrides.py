"""A training field changed in a notebook's parameters cell reaches every run it trains: notebook
06 with another epoch count and notebook 07 with another learning rate, each executed through
papermill at smoke size; the runs on disk carry the new value (and new cache keys)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from palviz.experiments import plan

papermill = pytest.importorskip("papermill")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def smoke_env(tmp_path, monkeypatch):
    runs = Path(os.environ.get("PALVIZ_RUNS") or tmp_path / "runs")
    for name, value in {
        "PALVIZ_PROFILE": "smoke",
        "PALVIZ_RUNS": str(runs),
        "PALVIZ_FIGURES": str(tmp_path / "figures"),
        "PALVIZ_ROOT": str(ROOT),
        "MPLBACKEND": "Agg",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    return runs


def _execute(notebook: str, out: Path, parameters: dict) -> None:
    (path,) = (ROOT / "notebooks").glob(f"{notebook}_*.ipynb")
    papermill.execute_notebook(
        str(path),
        str(out),
        parameters=parameters,
        kernel_name="python3",
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
    )


def _trained(runs: Path, specs) -> list[dict]:
    out = []
    for spec in specs:
        folder = runs / spec.key()
        assert (folder / "metrics.json").exists(), f"{spec.label} was not trained into {folder}"
        out.append(json.loads((folder / "spec.json").read_text()))
    return out


def test_notebook_06_trains_with_the_epochs_of_its_parameters_cell(smoke_env, tmp_path):
    parameters = {"EPOCHS": 3, "METHODS": ["CE", "LDAM-DRW"], "PAL_METHODS": ["CE"]}
    _execute("06", tmp_path / "06.ipynb", parameters)
    specs = plan.experiment_specs(
        "06", "smoke", methods=("CE", "LDAM-DRW"), pal_methods=("CE",), epochs=3
    )
    default = {s.key() for s in plan.planned_specs("06", "smoke")}
    assert specs and not {s.key() for s in specs} & default  # the change made new keys
    for spec in _trained(smoke_env, specs):
        assert spec["train"]["epochs"] == 3
    # the LDAM-DRW schedule is re-scaled with the epochs: DRW at 80 % of 3 epochs
    ldam = [s for s in specs if s.label == "LDAM-DRW"]
    assert ldam and all(s.train.drw_epoch == 2 and s.train.milestones == (2, 3) for s in ldam)


def test_notebook_07_trains_with_the_learning_rate_of_its_parameters_cell(smoke_env, tmp_path):
    parameters = {"LR": 0.02, "METHODS": ["CE"]}
    _execute("07", tmp_path / "07.ipynb", parameters)
    specs = plan.experiment_specs("07", "smoke", methods=("CE",), lr=0.02)
    assert specs and all(s.label == "CE" for s in specs)
    for spec in _trained(smoke_env, specs):
        assert spec["train"]["lr"] == 0.02
