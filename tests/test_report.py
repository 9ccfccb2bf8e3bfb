"""``palviz report``: the result files of a profile are copied into docs/results/<profile>/,
which docs/results.md includes as they are, and a fresh run is compared with them run by run;
``palviz figures`` leaves a timing record. No notebook runs here, nothing is trained."""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from palviz import cli
from palviz.cli import figures as cli_figures
from palviz.cpu import pin_label
from palviz.experiments import report

ROOT = Path(__file__).resolve().parents[1]


def _claims_csv(figures: Path, monkeypatch) -> Path:
    """A claims.csv of one paired claim over three seeds, written by palviz.experiments.claims."""
    from palviz.experiments import claims, claims_table

    monkeypatch.setenv("PALVIZ_FIGURES", str(figures))
    frame = pd.DataFrame(
        {
            "label": ["CE"] * 3 + ["CE+PAL"] * 3,
            "seed": [0, 1, 2] * 2,
            "last_acc": [0.70, 0.72, 0.71, 0.74, 0.75, 0.73],
            "best_acc": [0.72, 0.73, 0.72, 0.75, 0.75, 0.74],
            "steps": [100] * 6,
            "imbalance_ratio": [100] * 6,
        }
    )
    claim = claims.Claim(
        notebook="06",
        claim="PAL improves CE",
        source="a test",
        baseline="CE",
        method="CE+PAL",
        where={"imbalance_ratio": 100},
    )
    rows = claims_table.evaluate_claims(frame, [claim], profile="full", paper_steps=1000)
    return claims.write_claims(rows, "full")


def _timings(profile="full", **changes) -> dict:
    record = {
        "profile": profile,
        "date_utc": "2030-01-02T03:04:05Z",
        "cold": True,
        "runs_trained": 3,
        "runs_planned": 10,
        "training_seconds": 123.4,
        "notebook_seconds": {"00_tour": 5.25, "06_long_tailed": 42.0},
        "jobs": 2,
        "total_seconds": 180.0,
        "cpu_count": 2,
        "torch_version": "9.9.9",
        "device": "cpu",
        "only": None,
    }
    record.update(changes)
    return record


RESULTS_MD = (
    "Long-tailed results of notebook 06.\n\n# A heading\n\n"
    "| method | last epoch |\n|:---|---:|\n| CE | 75.4 +- 1.7 |\n"
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A tmp project root with figures/full/ holding every kind of result file."""
    monkeypatch.delenv("PALVIZ_ROOT", raising=False)
    (tmp_path / "docs").mkdir()
    figures = tmp_path / "figures"
    _claims_csv(figures, monkeypatch)
    source = figures / "full"
    (source / "timings.json").write_text(json.dumps(_timings()))
    (source / "06_long_tailed_results.md").write_text(RESULTS_MD)
    (source / "06_long_tailed_claims.md").write_text("| claim | verdict |\n")
    (source / "06_long_tailed_per_class.png").write_bytes(b"not a result file")
    return tmp_path


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.tmp"))


# --------------------------------------------------------------- the committed results page


def _included(page: Path) -> list[Path]:
    """The files ``page`` includes with MyST's ``{include}`` and ``{literalinclude}``."""
    found = re.findall(r"^```+\{(?:literal)?include\} (\S+)$", page.read_text(), re.MULTILINE)
    return [page.parent / name for name in found]


def test_the_results_page_includes_each_committed_table_and_each_path_resolves():
    page = ROOT / "docs" / "results.md"
    included = _included(page)
    assert included, "docs/results.md includes no result file"
    missing = [str(p.relative_to(ROOT)) for p in included if not p.is_file()]
    assert not missing, f"docs/results.md includes files that do not exist: {missing}"
    for folder in sorted((ROOT / "docs" / "results").iterdir()):
        if folder.is_dir():  # every table a notebook wrote, shown as it is
            tables = sorted(folder.glob(report.RESULTS_GLOB))
            assert set(tables) <= set(included), f"{folder.name}: {tables} not all included"


def test_the_results_page_and_the_readme_type_no_measurement():
    text = (ROOT / "docs" / "results.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for phrase in ("Two fresh clones reproduced", "99.3-100 %", "79.7 %", "69.8 %", "637 s"):
        assert phrase not in text and phrase not in readme


# ------------------------------------------------------------------------------ copying


def test_report_copies_the_result_files_and_nothing_else(project):
    copies = report.collect_results("full", root=project)
    target = project / "docs" / "results" / "full"
    assert target == report.results_dir("full", root=project)
    assert [p.name for p in copies] == [
        "claims.csv",
        "timings.json",
        "06_long_tailed_claims.md",
        "06_long_tailed_results.md",
    ]
    assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in copies)
    for path in copies:
        assert path.read_bytes() == (project / "figures" / "full" / path.name).read_bytes()
    assert _leftovers(project) == []


def test_collect_mirrors_the_last_run_and_keeps_docs_when_figures_are_empty(project):
    target = project / "docs" / "results" / "full"
    target.mkdir(parents=True)
    (target / "07_noisy_labels_results.md").write_text("from an older run\n")
    (target / "notes.txt").write_text("not a result file\n")
    report.collect_results("full", root=project)
    assert not (target / "07_noisy_labels_results.md").exists()
    assert (target / "notes.txt").exists()
    empty = project / "nothing"
    empty.mkdir()
    assert report.collect_results("full", root=project, source=empty) == []
    assert (target / "claims.csv").exists()


# ------------------------------------------------------------------ the palviz command


def test_unknown_profile_is_refused_with_the_profiles(capsys):
    with pytest.raises(SystemExit):
        cli.main(["report", "--profile", "huge"])
    assert "--profile must be one of ['smoke', 'quick', 'full', 'paper'], got 'huge'" in (
        capsys.readouterr().err
    )


def test_report_command_copies_and_refreshes_the_gallery_of_quick_only(
    project, monkeypatch, capsys
):
    monkeypatch.setenv("PALVIZ_ROOT", str(project))
    monkeypatch.delenv("PALVIZ_FIGURES")
    galleries = []
    monkeypatch.setattr(cli, "cmd_gallery", lambda args: galleries.append(args.profile) or 0)
    assert cli.main(["report", "--profile", "full"]) == 0
    assert (project / "docs" / "results" / "full" / "claims.csv").exists()
    assert "docs/results/full/timings.json" in capsys.readouterr().out
    assert galleries == []  # the gallery shows quick's figures only
    assert cli.main(["report", "--profile", "quick"]) == 2  # figures/ holds no file of quick
    assert "run `palviz figures --profile quick` first" in capsys.readouterr().err
    assert not (project / "docs" / "results" / "quick").exists() and galleries == []
    quick = project / "figures"
    (quick / "timings.json").write_text(json.dumps(_timings(profile="quick")))
    assert cli.main(["report", "--profile", "quick"]) == 0
    assert galleries == ["quick"]
    assert (project / "docs" / "results" / "quick" / "timings.json").exists()


# ------------------------------------------------------------- figures' timing record


def _fake_figures(monkeypatch, tmp_path, training, times):
    from palviz import book

    monkeypatch.setenv("PALVIZ_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setattr(book, "build_book", lambda out_dir, profile: tmp_path / "index.html")
    monkeypatch.setattr(cli_figures, "train_missing", lambda selected, profile: training)
    monkeypatch.setattr(cli_figures, "run_notebooks", times)


def test_figures_writes_its_timing_record_atomically(monkeypatch, tmp_path):
    seen = {}

    def run(selected, profile, out_dir, jobs, *_):
        seen["jobs"] = jobs
        return {p.stem: 1.25 * (i + 1) for i, p in enumerate(selected)}

    _fake_figures(monkeypatch, tmp_path, cli_figures.TrainingTime(12.34, 3, 10), run)
    assert cli.main(["figures", "--profile", "smoke", "--only", "6", "00", "--jobs", "1"]) == 0
    folder = tmp_path / "figures" / "smoke"
    # no temp file left; runs.csv lists the planned runs that are cached (none here)
    assert sorted(p.name for p in folder.iterdir()) == ["runs.csv", "timings.json"]
    record = json.loads((folder / "timings.json").read_text())
    assert set(record) == set(_timings()) | {"matmul_gflops", "cpu", "kept"}
    assert record["kept"] == []  # nothing ran before: every notebook ran
    assert record["cpu"]["pin"] == pin_label() and record["cpu"]["numpy"] == np.__version__
    before, after = record["matmul_gflops"]  # measured around the run, one thread
    assert before > 0 and after > 0
    assert record["profile"] == "smoke" and record["only"] == ["00", "06"]
    assert record["cold"] is True
    assert (record["runs_trained"], record["runs_planned"]) == (3, 10)
    assert record["training_seconds"] == 12.3
    assert list(record["notebook_seconds"]) == ["00_tour", "06_long_tailed"]
    assert record["jobs"] == seen["jobs"] == 1
    assert record["total_seconds"] >= 0 and record["cpu_count"] == os.cpu_count()
    assert record["device"] == cli_figures.device_name() and record["torch_version"]
    assert record["date_utc"].endswith("Z")


def test_a_warm_run_is_recorded_as_warm_and_a_failed_run_writes_no_record(monkeypatch, tmp_path):
    _fake_figures(
        monkeypatch, tmp_path, cli_figures.TrainingTime(0.0, 0, 10), lambda *a: {"00_tour": 1}
    )
    assert cli.main(["figures", "--profile", "smoke", "--only", "00"]) == 0
    path = tmp_path / "figures" / "smoke" / "timings.json"
    record = json.loads(path.read_text())
    assert record["cold"] is False and record["only"] == ["00"]
    before = path.read_text()

    def failing(*args):
        raise RuntimeError("cell 3 failed")

    monkeypatch.setattr(cli_figures, "run_notebooks", failing)
    with pytest.raises(RuntimeError, match="cell 3 failed"):
        cli.main(["figures", "--profile", "smoke", "--only", "00"])
    assert path.read_text() == before  # the last successful run's record stays
    assert _leftovers(tmp_path) == []


def test_train_missing_counts_what_it_trained_of_what_was_planned(monkeypatch):
    from palviz.experiments import cluster

    rows = [{"spec": "a", "cached": True, "notebooks": ["06"]}]
    rows.append({"spec": "b", "cached": False, "notebooks": ["06"]})
    monkeypatch.setattr(cli_figures, "planned_runs", lambda selected, profile: rows)
    monkeypatch.setattr(cluster, "run_many", lambda specs, desc: None)
    spent = cli_figures.train_missing([Path("06_long_tailed.ipynb")], "quick")
    assert (spent.trained, spent.planned) == (1, 2) and spent.seconds >= 0
    rows[1]["cached"] = True
    spent = cli_figures.train_missing([Path("06_long_tailed.ipynb")], "quick")
    assert spent == (0.0, 0, 2)


def test_matmul_rate_is_one_thread_and_restores_the_thread_count():
    import torch

    from palviz.threads import matmul_rate

    threads = torch.get_num_threads()
    rate = matmul_rate(n=128, repeats=3)
    assert 0 < rate < 1e5 and torch.get_num_threads() == threads  # GFLOP/s of one core


def test_runs_csv_holds_every_digit_and_compare_names_the_run_that_moved(tmp_path, monkeypatch):
    from palviz import experiments as ex

    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path / "figures"))
    spec = ex.lt_spec("CE", imbalance_ratio=10, profile="smoke", epochs=1).replace(train_size=200)
    result = ex.run(spec)
    other = spec.replace(seed=1)  # planned, not trained: no row
    rows = [{"spec": spec, "notebooks": ["06", "08"]}, {"spec": other, "notebooks": ["06"]}]
    path = report.write_runs(rows, "smoke")
    (row,) = list(csv.DictReader(path.open()))
    assert row["key"] == spec.key() and row["notebooks"] == "06 08" and row["seed"] == "0"
    assert float(row["last_acc"]) == result.metrics["last_acc"]  # repr: every digit back
    per_class, values = row["per_class_acc"].split(), result.metrics["per_class_acc"]
    assert len(per_class) == len(values)
    assert all(float(a) == b for a, b in zip(per_class, values, strict=True) if b is not None)
    assert row["pin"] == result.metrics["cpu"]["pin"] == pin_label()

    fresh, kept = tmp_path / "figures" / "smoke", tmp_path / "kept"
    kept.mkdir()
    for name in ("runs.csv", "claims.csv"):
        (fresh / "claims.csv").write_text("claim\n")
        (kept / name).write_bytes((fresh / name).read_bytes())
    equal, text = report.compare_runs(fresh, kept)
    assert equal and "1 of 1 committed runs equal to every digit" in text
    moved = (kept / "runs.csv").read_text().replace(row["last_acc"], "0.123456789")
    (kept / "runs.csv").write_text(moved)
    machine = {"cpu_model": "Other CPU", "pin": "avx2", "aten_level": "AVX2"}
    (kept / "timings.json").write_text(json.dumps({"cpu": {**machine, "torch": "0", "numpy": "0"}}))
    equal, text = report.compare_runs(fresh, kept)
    assert not equal
    assert f"run {spec.key()} (CE, mnist1d, rho 10.0, seed 0): last_acc {row['last_acc']}" in text
    assert "(committed 0.123456789)" in text and "0 of 1 committed runs" in text
    assert "the machines differ: cpu_model None (committed Other CPU)" in text
