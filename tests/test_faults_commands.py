"""Every command checks before it works: the faults a user meets at the start of a command, one
test (or a few) per row of the project's table (smoke profile, seconds each).

1. one profile switch: ``PALVIZ_PROFILE`` reaches every command with a profile, and an unknown
   profile is refused before any work;
2. ``palviz train FILE`` names the file, the line and what is wrong, before training anything;
3. the data check of ``palviz figures`` covers every notebook that trains, and a run that cannot
   read its data leaves no entry (``palviz runs --check --fix`` clears old ones);
4. the notebooks' parameters are checked in the first cell after the parameters cell;
5. the test extra installs the cluster engine (submitit), and ``make test`` fails a cluster test
   that does not find it instead of skipping it.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from cluster_support import require_engine

from palviz import cli
from palviz import experiments as ex
from palviz.cli import figures as cli_figures
from palviz.experiments import plan, recipes
from palviz.experiments.cachedir import check_runs
from palviz.experiments.locks import RunLock
from palviz.files import PROFILES, save_torch
from palviz.parameters import TABLES, check_parameters, edges

ROOT = Path(__file__).resolve().parents[1]

#: Every command that has a profile, written out here (the test below finds them in the parser
#: too, so a new command with a profile that this list lacks fails it).
PROFILED = (
    ["figures"],
    ["plan"],
    ["sweep"],
    ["gallery"],
    ["report"],
    ["runs", "pack"],
)


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """Empty data, run, figure and build folders of this test."""
    for name in ("DATA", "RUNS", "FIGURES", "BUILD"):
        monkeypatch.setenv(f"PALVIZ_{name}", str(tmp_path / name.lower()))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    return tmp_path


def no_work(monkeypatch):
    """Make every command's function fail the test if it is reached."""
    for name in dir(cli):
        if name.startswith("cmd_"):
            monkeypatch.setattr(cli, name, lambda args, name=name: pytest.fail(f"{name} ran"))


def commands_with_a_profile(parser=None, prefix=()) -> list[list[str]]:
    """The command lines (``["runs", "pack"]``) of the parser whose options include --profile."""
    import argparse

    parser = parser or cli.build_parser()
    found = []
    if prefix and any("--profile" in a.option_strings for a in parser._actions):
        found.append(list(prefix))
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += commands_with_a_profile(sub, (*prefix, name))
    return found


# ----------------------------------------------------------------- 1. one profile switch


def test_the_commands_with_a_profile_are_the_ones_listed_here():
    assert sorted(commands_with_a_profile()) == sorted(PROFILED)


@pytest.mark.parametrize("command", PROFILED, ids=" ".join)
def test_every_command_with_a_profile_takes_palviz_profile(command, monkeypatch):
    monkeypatch.setenv("PALVIZ_PROFILE", "smoke")
    assert cli.parse_args(command).profile == "smoke"
    assert cli.parse_args([*command, "--profile", "full"]).profile == "full"  # the flag wins
    monkeypatch.delenv("PALVIZ_PROFILE")
    assert cli.parse_args(command).profile == "quick"
    monkeypatch.setenv("PALVIZ_PROFILE", "")
    assert cli.parse_args(command).profile == "quick"


@pytest.mark.parametrize("command", PROFILED, ids=" ".join)
@pytest.mark.parametrize("source", ["PALVIZ_PROFILE", "--profile"])
def test_an_unknown_profile_is_refused_in_one_line_before_any_work(
    command, source, monkeypatch, capsys
):
    no_work(monkeypatch)
    if source == "PALVIZ_PROFILE":
        monkeypatch.setenv("PALVIZ_PROFILE", "bogus")
        argv = command
    else:
        monkeypatch.setenv("PALVIZ_PROFILE", "smoke")
        argv = [*command, "--profile", "bogus"]
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"palviz {' '.join(command)}: {source} must be one of ")
    assert "'bogus'" in lines[0] and all(f"'{p}'" in lines[0] for p in PROFILES)


def test_plan_counts_the_runs_of_the_profile_palviz_profile_names(folders, monkeypatch, capsys):
    # notebook 03 plans 2 runs in smoke and 3 in quick (its weight decay grid)
    sizes = {p: len(plan.planned_specs("03", p)) for p in ("smoke", "quick")}
    assert sizes["smoke"] != sizes["quick"]
    monkeypatch.setenv("PALVIZ_PROFILE", "smoke")
    assert cli.main(["plan", "--only", "03"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    n = sizes["smoke"]
    assert last == f"{n} run(s) (smoke): 0 cached, {n} missing"


def test_figures_trains_and_renders_the_profile_palviz_profile_names(folders, monkeypatch):
    seen = []
    monkeypatch.setattr(
        cli_figures,
        "train_missing",
        lambda sel, profile: seen.append(profile) or cli_figures.TrainingTime(0.0, 0, 0),
    )
    monkeypatch.setattr(
        cli_figures, "execute_notebook", lambda path, profile, out, *_: seen.append(profile) or 0.1
    )
    monkeypatch.setenv("PALVIZ_PROFILE", "smoke")
    assert cli.main(["figures", "--only", "01", "--jobs", "1"]) == 0
    assert seen == ["smoke", "smoke"]
    assert (folders / "figures" / "smoke" / "timings.json").is_file()
    assert not (folders / "figures" / "timings.json").exists()  # not quick's


def test_the_palviz_command_refuses_an_unknown_palviz_profile_with_status_2(tmp_path):
    env = {**os.environ, "PALVIZ_PROFILE": "bogus", "PALVIZ_RUNS": str(tmp_path / "runs")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "palviz", "plan"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    expected = "palviz plan: PALVIZ_PROFILE must be one of ['smoke', 'quick', 'full', 'paper']"
    assert done.stderr == f"{expected}, got 'bogus'\n"
    assert not (tmp_path / "runs").exists()


def test_a_notebook_refuses_an_unknown_palviz_profile_in_its_check(monkeypatch):
    monkeypatch.setenv("PALVIZ_PROFILE", "bogus")
    values = {name: edges(p)[0] for name, p in TABLES["01"].items()}
    values["PROFILE"] = None  # the cell's default: read $PALVIZ_PROFILE
    with pytest.raises(ValueError, match=r"^PALVIZ_PROFILE must be one of .*, got 'bogus'$"):
        check_parameters("01", values)
    check_parameters("01", {**values, "PROFILE": "smoke"})  # the cell's own PROFILE wins


# ----------------------------------------------------------------- 2. palviz train FILE


def spec_line(**train) -> dict:
    spec = ex.lt_spec("CE", profile="smoke")
    line = {"key": spec.key(), "notebooks": ["06"], "spec": spec.to_dict()}
    line["spec"]["train"].update(train)
    return line


def bad_lines() -> list[tuple[str, str]]:
    """(a bad line, what the error must say about it)."""
    cut = json.dumps(spec_line())[:40]
    head = '{"spec": '
    return [
        (head + "}", f"not JSON at column {len(head) + 1} (Expecting value)"),  # at the brace
        (cut, "not JSON at column "),
        ('{"spec": 3}', '"spec" must be a JSON object of RunSpec fields, got 3'),
        ("[1, 2]", "expected a JSON object of RunSpec fields"),
        (json.dumps(spec_line(epochs="5")), "TrainConfig.epochs must be an integer, got '5'"),
        (json.dumps(spec_line(epochs=0)), "TrainConfig.epochs must be >= 1, got 0"),
        (json.dumps(spec_line(lr="fast")), "TrainConfig.lr must be a real number, got 'fast'"),
    ]


@pytest.mark.parametrize(("line", "expected"), bad_lines())
def test_palviz_train_names_the_file_line_and_fault_and_trains_nothing(
    line, expected, folders, monkeypatch, capsys
):
    from palviz.experiments import runcache

    monkeypatch.setattr(runcache, "run", lambda spec: pytest.fail("a run was trained"))
    path = folders / "runs.jsonl"
    good = json.dumps(spec_line())
    path.write_text("\n".join([good, "", line, good]) + "\n")  # the bad line is line 3
    assert cli.main(["train", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"palviz train: {path}, line 3: "), err
    assert expected in err and err.rstrip().endswith("nothing was trained")
    assert len(err.splitlines()) == 1
    assert not (folders / "runs").exists()


def test_palviz_train_of_a_file_without_specs_trains_nothing(folders, capsys):
    path = folders / "empty.jsonl"
    path.write_text("\n\n")
    assert cli.main(["train", str(path)]) == 0
    assert "holds no spec" in capsys.readouterr().out


# ----------------------------------------------------------------- 3. the data a run reads


@pytest.mark.parametrize("number", sorted(plan.EXPERIMENTS))
def test_paper_figures_refuses_up_front_for_every_notebook_that_trains(
    number, folders, monkeypatch, capsys
):
    def started(*args):
        pytest.fail("training or a notebook started")

    monkeypatch.setattr(cli_figures, "train_missing", started)
    monkeypatch.setattr(cli_figures, "execute_notebook", started)
    assert cli.main(["figures", "--profile", "paper", "--only", number]) == 2
    err = capsys.readouterr().err
    datasets = sorted({s.dataset for s in plan.planned_specs(number, "paper")})
    assert datasets and set(datasets) <= {"mnist", "cifar10", "cifar100"}
    assert f"palviz download {' '.join(datasets)}\n" in err
    assert f"palviz figures --profile paper --only {number} --download" in err
    assert not (folders / "runs").exists() and not (folders / "build").exists()


def test_paper_figures_refuses_a_damaged_dataset_up_front_naming_the_file(
    folders, monkeypatch, capsys
):
    from test_paper_profile import write_cifar10

    monkeypatch.setattr(cli_figures, "train_missing", lambda *a: pytest.fail("training started"))
    write_cifar10(folders / "data")
    batch = folders / "data" / "cifar-10-batches-py" / "test_batch"
    batch.write_bytes(batch.read_bytes()[:100])  # truncated
    assert cli.main(["figures", "--profile", "paper", "--only", "00"]) == 2
    err = capsys.readouterr().err
    assert str(batch) in err and "palviz download cifar10" in err
    assert not (folders / "runs").exists()


def test_the_tour_in_the_paper_profile_needs_cifar10(folders, capsys):
    assert cli.main(["figures", "--profile", "paper", "--only", "00"]) == 2
    assert "Fetch them with:  palviz download cifar10\n" in capsys.readouterr().err


def test_a_run_whose_data_is_missing_leaves_no_entry(folders):
    spec = plan.planned_specs("00", "paper")[0]
    with pytest.raises(FileNotFoundError, match=f"palviz download {spec.dataset}"):
        ex.run(spec)
    assert [p.name for p in (folders / "runs").iterdir()] == [".locks"]
    assert check_runs() == []


def test_runs_check_fix_removes_unfinished_entries_with_nothing_to_resume(folders, capsys):
    runs = folders / "runs"
    empty, training, resumable = (runs / key for key in ("0" * 16, "1" * 16, "2" * 16))
    for folder in (empty, training, resumable):
        folder.mkdir(parents=True)
        (folder / "spec.json").write_text(json.dumps({"label": folder.name[:1]}))
    save_torch(resumable / "checkpoint.pt", {"model": {}})
    held = RunLock(runs, training.name)
    held.acquire()  # a run being trained, before its first checkpoint
    try:
        assert cli.main(["runs", "--check"]) == 0
        out = capsys.readouterr().out
        assert "0 ok, 3 unfinished, 0 broken" in out
        assert "2 unfinished entries (nothing to resume: no checkpoint)" in out
        assert "palviz runs --check --fix" in out
        assert cli.main(["runs", "--check", "--fix"]) == 0
        out = capsys.readouterr().out
        assert f"{empty.name}  0" in out and "-> removed" in out
    finally:
        held.release()
    assert not empty.exists() and training.exists() and resumable.exists()
    rows = {r["key"]: r for r in check_runs()}
    assert rows[training.name]["resumable"] is False and rows[resumable.name]["resumable"]


# ----------------------------------------------------------------- 4. notebook parameters


def test_notebook_01_refuses_one_class_naming_num_classes():
    values = {name: edges(p)[0] for name, p in TABLES["01"].items()}
    with pytest.raises(ValueError) as error:
        check_parameters("01", {**values, "NUM_CLASSES": 1})
    assert str(error.value) == "NUM_CLASSES must be an integer in [2, 100], got 1"


@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
def test_notebook_07_refuses_a_transition_it_does_not_train_naming_the_allowed_pairs(profile):
    setup = recipes.noisy_setup(profile)
    pairs = [(k, eta) for k in ("symmetric", "asymmetric") for eta in setup[k]]
    values = {name: edges(p)[0] for name, p in TABLES["07"].items()}
    values.update(PROFILE=profile, NOISE_KINDS=None, RATES=None)  # every kind and rate
    for wrong in (("symmetric", 0.33), ("uniform", 0.4)):
        shown = (pairs[0], wrong)
        with pytest.raises(ValueError) as error:
            check_parameters("07", {**values, "TRANSITION_SHOWN": shown})
        message = str(error.value)
        assert message.startswith("TRANSITION_SHOWN must be ")
        listed = ", ".join(f"({k!r}, {eta})" for k, eta in pairs)
        assert f"the pairs of profile {profile!r} are {listed}; {wrong!r} is not one" in message
    check_parameters("07", {**values, "TRANSITION_SHOWN": (pairs[-1], pairs[0])})


def _cells(number: str) -> list[tuple[str, list[str], str]]:
    """``(cell type, tags, source)`` of every cell of notebook ``number``."""
    path = next((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(c["cell_type"], c["metadata"].get("tags", []), "".join(c["source"])) for c in cells]


@pytest.mark.parametrize("number", sorted(TABLES))
def test_the_cell_after_the_parameters_checks_them_before_anything_else(number):
    cells = [(tags, src) for kind, tags, src in _cells(number) if kind == "code"]
    first = next(i for i, (tags, _) in enumerate(cells) if "parameters" in tags)
    body = ast.parse(cells[first + 1][1]).body
    assert len(body) >= 2, f"{number}: the cell after the parameters does not check them"
    imported, called = body[:2]
    assert isinstance(imported, ast.ImportFrom) and imported.module == "palviz.parameters"
    assert [a.name for a in imported.names] == ["check_parameters"]
    assert isinstance(called, ast.Expr) and isinstance(called.value, ast.Call)
    assert getattr(called.value.func, "id", None) == "check_parameters"


# ----------------------------------------------------------------- 5. the cluster tests in CI


def _requirements(extra: str, project: dict) -> dict[str, set[str]]:
    """The packages an extra installs, each with its extras, following ``palviz[...]``."""
    from packaging.requirements import Requirement

    found: dict[str, set[str]] = {}
    for line in project["optional-dependencies"][extra]:
        req = Requirement(line)
        if req.name == project["name"]:
            for sub in req.extras:
                for name, extras in _requirements(sub, project).items():
                    found.setdefault(name, set()).update(extras)
        else:
            found.setdefault(req.name.lower(), set()).update(req.extras)
    return found


def test_the_test_extra_installs_the_cluster_engines():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    test = _requirements("test", project)
    assert "submitit" in test


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_fails_a_cluster_test_that_finds_no_engine():
    done = subprocess.run(
        ["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    commands = done.stdout.replace("\\\n", " ").splitlines()  # continued lines joined
    runs = [c for c in commands if " -m pytest tests" in c]
    assert len(runs) == 1 and "PALVIZ_REQUIRE_CLUSTER=1 " in runs[0].split(" -m pytest")[0]
    assert any("pip install" in c and ".[test]" in c for c in commands)  # submitit too


def test_a_missing_engine_skips_or_under_palviz_require_cluster_fails(monkeypatch):
    missing = "palviz_no_such_engine"
    monkeypatch.delenv("PALVIZ_REQUIRE_CLUSTER", raising=False)
    with pytest.raises(pytest.skip.Exception, match=missing):
        require_engine(missing)
    monkeypatch.setenv("PALVIZ_REQUIRE_CLUSTER", "1")
    with pytest.raises(pytest.fail.Exception, match=f"PALVIZ_REQUIRE_CLUSTER=1 but .*{missing}"):
        require_engine(missing)


def test_the_cluster_tests_reach_an_engine_only_through_require_engine():
    tree = ast.parse((ROOT / "tests" / "test_runcache_cluster.py").read_text())
    skips = [
        ast.unparse(n)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("importorskip", "skip", "skipif")
    ]
    assert skips == []
    engines = {
        n.args[0].value
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "require_engine"
    }
    assert engines == {"submitit"}
