"""``palviz plan`` names exactly the runs the notebooks ask for: the notebooks' own cells are
executed up to their ``run_many`` / ``run_grouped`` call, which records the specs instead of
training, and the keys are compared with :func:`palviz.experiments.plan.planned_specs`."""

import json
from pathlib import Path

import pytest

from palviz import cli
from palviz import experiments as ex
from palviz.cli import sweep as cli_sweep
from palviz.experiments import plan, recipes

ROOT = Path(__file__).resolve().parents[1]


class _Asked(Exception):
    def __init__(self, specs):
        self.specs = specs


def _record_many(specs, **_):
    raise _Asked(list(specs))


def _record_grouped(groups, **_):
    raise _Asked([s for specs in groups.values() for s in specs])


def asked_by_notebook(number: str, **parameters) -> list:
    """The specs notebook ``number`` passes to the run cache, from its own cells, with
    ``parameters`` set after its parameters cell (as papermill sets them)."""
    (path,) = (ROOT / "notebooks").glob(f"{number}_*.ipynb")
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    namespace = {"__name__": "__notebook__"}
    for cell in cells:
        source = "".join(cell["source"])
        try:
            exec(compile(source, f"{path.name}", "exec"), namespace)  # noqa: S102
        except _Asked as asked:
            return asked.specs
        if "parameters" in cell["metadata"].get("tags", []):
            namespace.update(parameters)
    raise AssertionError(f"{path.name} never called run_many or run_grouped")


@pytest.fixture
def recording(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    monkeypatch.setattr(ex, "run_many", _record_many)
    monkeypatch.setattr(ex, "run_grouped", _record_grouped)


@pytest.mark.parametrize("profile", ["smoke", "quick"])
@pytest.mark.parametrize("number", sorted(plan.NOTEBOOKS_WITH_RUNS))
def test_plan_names_the_runs_the_notebook_asks_for(number, profile, recording, monkeypatch):
    monkeypatch.setenv("PALVIZ_PROFILE", profile)
    asked = asked_by_notebook(number)
    planned = plan.planned_specs(number, profile)
    assert [s.key() for s in planned] == [s.key() for s in asked]
    assert [s.label for s in planned] == [s.label for s in asked]


def test_notebooks_without_runs_plan_nothing():
    assert plan.planned_specs("01", "paper") == [] and plan.planned_specs("05", "quick") == []


def test_plan_command_lists_and_writes_the_paper_grid_without_data(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("PALVIZ_DATA", str(tmp_path / "no-data"))
    out = tmp_path / "plan.jsonl"
    assert cli.main(["plan", "--profile", "paper", "--only", "06", "--jsonl", str(out)]) == 0
    text = capsys.readouterr().out
    # 2 datasets x 3 ratios x 3 seeds x (the profile's methods + its PAL methods)
    setup = recipes.long_tailed_setup("paper")
    assert setup["ratios"] == (100, 50, 10) and setup["seeds"] == (0, 1, 2)
    n = 2 * 3 * 3 * (len(setup["methods"]) + len(setup["pal_methods"]))
    assert f"{n} run(s) (paper): 0 cached, {n} missing" in text
    specs = cli_sweep.read_specs(out)
    assert len(specs) == n and {s.dataset for s in specs} == {"cifar10", "cifar100"}
    assert [s.key() for s in specs] == [s.key() for s in plan.planned_specs("06", "paper")]
    assert not (tmp_path / "no-data").exists()


def test_paper_plan_of_07_trains_three_seeds_for_its_tables_and_one_for_its_sweep():
    groups = plan.experiment("07", "paper")
    for group in [g for name, g in groups.items() if name != "sweep"]:
        assert {s.seed for s in group} == {0, 1, 2}
    assert {s.seed for s in groups["sweep"]} == {0}


def test_paper_plan_of_notebook_07_covers_three_datasets():
    specs = plan.planned_specs("07", "paper")
    assert {s.dataset for s in specs} == {"mnist", "cifar10", "cifar100"}
    assert {s.arch for s in specs} == {"cnn_mnist", "cnn_cifar10", "resnet34"}


def test_notebook_07_keeps_the_noise_rates_it_is_given_in_its_tables_and_sweep():
    full = plan.experiment("07", "full")
    cut = plan.experiment("07", "full", rates=(0.2, 0.6))
    (dataset,) = recipes.noisy_setup("full")["datasets"]
    for kind, kept in (("symmetric", {0.2, 0.6}), ("asymmetric", {0.2})):
        assert {s.noise_rate for s in cut[dataset, kind]} == kept
        assert kept < {s.noise_rate for s in full[dataset, kind]}
    assert {s.noise_rate for s in cut["sweep"]} == {0.2, 0.6}
    assert {s.noise_rate for s in full["sweep"]} == {0.2, 0.4, 0.6, 0.8}
    with pytest.raises(ValueError, match=r"^rates \(0\.6,\): no asymmetric rate"):
        plan.experiment("07", "full", rates=(0.6,))


def test_notebook_06_trains_the_ratios_it_is_given_and_its_replication_its_own(
    recording, monkeypatch
):
    default = plan.experiment_specs("06", "smoke")
    cut = plan.experiment_specs("06", "smoke", ratios=(10,))
    assert {s.imbalance_ratio for s in default} == {100}
    assert {s.imbalance_ratio for s in cut} == {10}
    assert [(s.label, s.seed) for s in cut] == [(s.label, s.seed) for s in default]
    named = plan.experiment_specs("06", "smoke", ratios=(100,))
    assert [s.key() for s in named] == [s.key() for s in default]
    monkeypatch.setenv("PALVIZ_PROFILE", "smoke")
    assert [s.key() for s in asked_by_notebook("06", RATIOS=(10,))] == [s.key() for s in cut]
    full = plan.experiment("06", "full", ratios=(10, 1))
    for name in ("grid", "axis", "block"):
        assert {s.imbalance_ratio for s in full[name]} == {10, 1}
    quick = recipes.long_tailed_setup("quick")["ratios"]
    assert {s.imbalance_ratio for s in full["replication"]} == set(quick)
