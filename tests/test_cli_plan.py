"""``palviz plan`` names exactly the runs the notebooks ask for: the notebooks' own cells are
executed up to their ``run_many`` / ``run_grouped`` call, which records the specs instead of
training, and the keys are compared with :func:`palviz.experiments.plan.planned_specs`."""

import json
import math
from pathlib import Path

import pytest

from palviz import cli
from palviz import experiments as ex
from palviz.cli import sweep as cli_sweep
from palviz.experiments import estimate, plan, recipes
from palviz.experiments.profiles import PAPER_PREVIOUS

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
    assert f"paper plan: {n:,} run(s), " in text and "the previous plan (seeds (0,)" in text
    specs = cli_sweep.read_specs(out)
    assert len(specs) == n and {s.dataset for s in specs} == {"cifar10", "cifar100"}
    assert [s.key() for s in specs] == [s.key() for s in plan.planned_specs("06", "paper")]
    assert not (tmp_path / "no-data").exists()


def lt_steps(dataset: str, rho: int) -> int:
    """200 epochs x ceil(n / 128) of CIFAR-LT's exponential profile, from its formula:
    n_i = floor(n_max rho^(-i / (k - 1)))."""
    n_max, k = {"cifar10": (5000, 10), "cifar100": (500, 100)}[dataset]
    n = sum(math.floor(n_max * rho ** (-i / (k - 1))) for i in range(k))
    return 200 * math.ceil(n / 128)


def test_paper_plan_of_06_against_its_one_seed_two_ratio_predecessor():
    setup = recipes.long_tailed_setup("paper")
    now = len(setup["methods"]) + len(setup["pal_methods"])
    before = now - len(PAPER_PREVIOUS["added_methods"])  # added since, all without PAL
    assert set(PAPER_PREVIOUS["added_methods"]) <= set(setup["methods"])
    g = estimate.paper_plan_growth(["06"])
    datasets = ("cifar10", "cifar100")
    assert g["runs"] == 2 * 3 * 3 * now and g["previous_runs"] == 2 * 2 * before
    assert g["steps"] == 3 * now * sum(lt_steps(d, r) for d in datasets for r in (100, 50, 10))
    assert g["previous_steps"] == before * sum(lt_steps(d, r) for d in datasets for r in (100, 10))
    assert g["runs_ratio"] == pytest.approx(g["runs"] / g["previous_runs"])
    assert g["steps_ratio"] == pytest.approx(g["steps"] / g["previous_steps"])
    text = estimate.describe_paper_growth(["06"])
    assert f"{g['runs']:,} run(s), {g['steps']:,} SGD steps" in text
    assert f"x{g['steps_ratio']:.2f} the steps" in text


def test_paper_plan_of_07_trains_three_seeds_where_it_trained_one():
    g = estimate.paper_plan_growth(["07"])
    groups = plan.experiment("07", "paper")
    specs = [s for group in groups.values() for s in group]
    for group in [g for name, g in groups.items() if name != "sweep"]:
        assert {s.seed for s in group} == {0, 1, 2}
    assert {s.seed for s in groups["sweep"]} == {0}
    # the previous plan was this one at seed 0 (the sweep's only seed then and now)
    assert g["runs"] == len({s.key() for s in specs})
    assert g["previous_runs"] == len({s.key() for s in specs if s.seed == 0})


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
