"""docs/contributing.md's "Adding a dataset", run as it stands: the user's module (its first
code block) written into a folder on PYTHONPATH, and its papermill call (the second) run from a
project root, at smoke size; a 64-d vector dataset trains the MLP built 64 wide, and notebook
06's tables name it."""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest
import torch
from notebook_support import ROOT, smoke_environment, trained

from palviz import data as pdata
from palviz.data import registry
from palviz.experiments import plan
from palviz.experiments.runcache import prepare_data

SECTION = "## Adding a dataset"


def doc_blocks() -> list[str]:
    """The python code blocks of docs/contributing.md's section "Adding a dataset", in order."""
    text = (ROOT / "docs" / "contributing.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


@pytest.fixture
def registry_copy(monkeypatch):
    """The registry as it is, restored after the test (whatever it registers)."""
    for name in ("_INFOS", "_LOADERS", "FINGERPRINTS"):
        monkeypatch.setattr(registry, name, type(getattr(registry, name))(getattr(registry, name)))
    monkeypatch.setenv(pdata.DATASET_MODULES_ENV, "")  # restored after, whatever sets it
    monkeypatch.delenv(pdata.DATASET_MODULES_ENV)


def test_the_section_holds_the_users_module_and_the_papermill_call():
    module, call = doc_blocks()
    assert module.startswith("# my_datasets.py") and "register_dataset(" in module
    assert call.startswith("# run_06.py") and "papermill.execute_notebook(" in call
    assert '"DATASETS": ["digits64"]' in call and '"RATIOS": [10]' in call


def test_the_users_module_registers_a_vector_dataset_that_trains_the_mlp(
    tmp_path, monkeypatch, registry_copy
):
    module, _ = doc_blocks()
    (tmp_path / "my_datasets.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_datasets", raising=False)
    pdata.import_dataset_modules(("my_datasets",))
    info = pdata.dataset_info("digits64")
    assert (info.kind, info.shape, info.num_classes) == ("vector", (64,), 10)
    assert dict(info.networks) == {"long_tailed": "mlp1d", "noisy": "mlp1d"}
    x, y = pdata.load_dataset("digits64", "train")
    assert x.shape == (1437, 64) and x.dtype == torch.float32 and 0 <= x.min() <= x.max() <= 1
    # quick sets 50 a class aside: too few are left to cut at rho = 100, hence RATIOS = (10,)
    n_max = min(np.bincount(y.numpy())) - 50
    (spec, *_) = plan.experiment_specs("06", "quick", datasets=("digits64",))
    assert (spec.held_out, spec.imbalance_ratio) == (50, 100)
    with pytest.raises(ValueError, match=rf"^imbalance_ratio=100.0 with n_max={n_max} rounds"):
        prepare_data(spec)


def test_the_docs_papermill_call_runs_notebook_06_on_the_users_dataset(
    tmp_path, monkeypatch, registry_copy
):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    runs = smoke_environment(tmp_path, monkeypatch)
    module, call = doc_blocks()
    folder = tmp_path / "mine"  # the user's folder, on PYTHONPATH as the section says
    folder.mkdir()
    (folder / "my_datasets.py").write_text(module)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), os.environ["PYTHONPATH"]]))
    project = tmp_path / "project"  # a project root: its notebooks are this checkout's
    project.mkdir()
    (project / "notebooks").symlink_to(ROOT / "notebooks")
    monkeypatch.chdir(project)
    exec(compile(call, "docs/contributing.md", "exec"), {})
    assert (project / "06_long_tailed_digits64.ipynb").exists()
    # the runs the kernel trained: digits64 at rho = 10, each an MLP with 64 inputs
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "my_datasets", raising=False)
    pdata.import_dataset_modules(("my_datasets",))
    specs = plan.experiment_specs("06", "smoke", datasets=("digits64",), ratios=(10,))
    assert specs and {(s.dataset, s.arch, s.imbalance_ratio) for s in specs} == {
        ("digits64", "mlp1d", 10)
    }
    for spec in trained(runs, specs):
        assert spec["dataset"] == "digits64"
    state = torch.load(runs / specs[0].key() / "checkpoint.pt", weights_only=True)
    assert state["model"]["backbone.1.weight"].shape == (256, 64)
    (results,) = (tmp_path / "figures").rglob("06_*results.md")
    assert "Digits-64-LT, rho = 10" in results.read_text()
