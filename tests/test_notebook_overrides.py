"""A training field changed in a notebook's parameters cell reaches every run it trains: notebook
06 with another epoch count and notebook 07 with another learning rate, each executed through
papermill at smoke size; the runs on disk carry the new value (and new cache keys)."""

from __future__ import annotations

import pytest
from notebook_support import execute as _execute
from notebook_support import smoke_environment
from notebook_support import trained as _trained

from palviz.experiments import plan

papermill = pytest.importorskip("papermill")


@pytest.fixture
def smoke_env(tmp_path, monkeypatch):
    return smoke_environment(tmp_path, monkeypatch)


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
