"""``palviz report``: the measured blocks of docs/results.md are written from docs/results/,
never typed; ``palviz figures`` leaves a timing record. No notebook runs here, nothing is
trained."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from palviz import cli
from palviz.cli import figures as cli_figures
from palviz.cpu import pin_label
from palviz.experiments import report

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ("quick", "full")  # the profiles docs/results.md has a measured block for


def _page(root: Path) -> Path:
    """docs/results.md under ``root``, where the measured blocks live."""
    return report.page_path(root)


def _page_with_markers(root: Path, profiles=MEASURED) -> Path:
    lines = ["# a project", "", "prose before", ""]
    for profile in profiles:
        start, end = report.block_markers(profile)
        lines += [f"## {profile}", "", "words outside the block", "", start, end, ""]
    lines += ["## after", "", "prose after", ""]
    path = _page(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    return path


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
    """A tmp project root: docs/results.md with both blocks, figures/full/ with every kind of
    result."""
    monkeypatch.delenv("PALVIZ_ROOT", raising=False)
    _page_with_markers(tmp_path)
    figures = tmp_path / "figures"
    _claims_csv(figures, monkeypatch)
    source = figures / "full"
    (source / "timings.json").write_text(json.dumps(_timings()))
    (source / "06_long_tailed_results.md").write_text(RESULTS_MD)
    (source / "06_long_tailed_per_class.png").write_bytes(b"not a result file")
    return tmp_path


def _block(text: str, profile: str) -> str:
    start, end = report.block_markers(profile)
    return text[text.index(start) : text.index(end) + len(end)]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.tmp"))


# --------------------------------------------------------------- the committed results page


@pytest.mark.parametrize("profile", MEASURED)
def test_block_is_what_report_writes_from_the_committed_results(profile):
    assert report.PAGE == "docs/results.md"
    diff = report.check_page(profile, root=ROOT)
    assert diff == "", (
        f"docs/results.md's block of {profile} is not what docs/results/{profile}/ gives; "
        f"run `palviz report --profile {profile}` (do not edit it by hand):\n{diff}"
    )


@pytest.mark.parametrize("profile", MEASURED)
def test_a_hand_edit_of_a_block_is_caught(profile, tmp_path, monkeypatch, capsys):
    page = _page(tmp_path)
    page.parent.mkdir(parents=True)
    shutil.copy(_page(ROOT), page)
    if (ROOT / "docs" / "results").is_dir():
        shutil.copytree(ROOT / "docs" / "results", tmp_path / "docs" / "results")
    assert report.check_page(profile, root=tmp_path) == ""
    text = page.read_text()
    _, end = report.block_markers(profile)
    page.write_text(text.replace(end, "| CE | 99.9 |  (typed by hand)\n" + end))
    diff = report.check_page(profile, root=tmp_path)
    assert "-| CE | 99.9 |  (typed by hand)" in diff
    monkeypatch.setenv("PALVIZ_ROOT", str(tmp_path))
    assert cli.main(["report", "--profile", profile, "--check"]) == 1
    out, err = capsys.readouterr()
    assert "(typed by hand)" in out and f"palviz report --profile {profile}" in err
    assert "(typed by hand)" in page.read_text()  # --check wrote nothing


def test_prose_outside_the_blocks_types_no_measurement():
    text = _page(ROOT).read_text()
    for profile in MEASURED:  # what the blocks hold is generated; the prose around them is not
        text = text.replace(_block(text, profile), "")
    readme = (ROOT / "README.md").read_text()
    for profile in MEASURED:  # the README links to the page and holds no block of its own
        assert not any(marker in readme for marker in report.block_markers(profile))
    for phrase in ("Two fresh clones reproduced", "99.3-100 %", "79.7 %", "69.8 %", "637 s"):
        assert phrase not in text and phrase not in readme


# ------------------------------------------------------------------- rendering, copying


def test_report_copies_the_results_and_writes_the_block_from_the_copies(project):
    copies = report.collect_results("full", root=project)
    target = project / "docs" / "results" / "full"
    assert [p.name for p in copies] == [
        "claims.csv",
        "timings.json",
        "06_long_tailed_results.md",
    ]
    assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in copies)
    assert report.write_page("full", root=project) is True
    assert report.write_page("full", root=project) is False
    text = _page(project).read_text()
    block = _block(text, "full")

    from palviz.experiments.claims import read_claims_file
    from palviz.experiments.claims_table import claims_explanation, claims_markdown

    rows = read_claims_file(target / "claims.csv")
    table = claims_markdown(rows).rstrip("\n")
    assert table in block
    assert claims_explanation(rows).rstrip("\n") in block  # how to read it, generated
    for epoch in ("last", "best"):  # both epochs, both p-values (in the folded table)
        for name in ("p (t)", "p (sign-flip)"):
            assert f"{epoch}: {name}" in block
    assert "difference [95 % CI], last epoch" in block and "best: verdict" in block
    assert "The verdicts rest on p (t)" in block and "0.25 for 3 pairs here" in block
    assert "| CE | 75.4 +- 1.7 |" in block and "\n### A heading\n" in block
    for words in (
        "`palviz figures --profile full` on 2030-01-02 (UTC), cold",
        "3 of the 10 runs the notebooks ask for were missing",
        "in one pool, in 123 s (2.1 min)",
        "**180 s (3.0 min)** in all",
        "2 CPU cores, device `cpu`, torch 9.9.9",
        "`00_tour` 5.2 s, `06_long_tailed` 42.0 s",
        "2 at a time",
    ):
        assert words in block, words
    assert "words outside the block" in text and "prose after" in text
    assert _block(text, "quick") == "\n".join(report.block_markers("quick"))  # left alone
    assert report.check_page("full", root=project) == ""
    assert _leftovers(project) == []


def test_the_block_reads_docs_results_only_never_figures(project):
    report.collect_results("full", root=project)
    report.write_page("full", root=project)
    source = project / "figures" / "full"
    (source / "06_long_tailed_results.md").write_text("| CE | 12.3 |\n")
    (source / "timings.json").unlink()
    assert report.check_page("full", root=project) == ""  # figures/ changed; docs/ did not
    (project / "docs" / "results" / "full" / "06_long_tailed_results.md").write_text("| x |\n")
    assert "+| x |" in report.check_page("full", root=project)


def test_unmeasured_profile_says_so_and_names_the_two_commands(tmp_path):
    _page_with_markers(tmp_path)
    block = report.render_block("full", root=tmp_path)
    assert "Not measured in this checkout" in block
    assert "`palviz figures --profile full`" in block
    assert "`palviz report --profile full`" in block
    assert "`figures/full/`" in block
    assert not any(ch.isdigit() for ch in block)
    assert "`figures/`" in report.render_block("quick", root=tmp_path)


def test_missing_files_are_named_and_the_rest_rendered(project):
    report.collect_results("full", root=project)
    target = project / "docs" / "results" / "full"
    (target / "timings.json").unlink()
    (target / "06_long_tailed_results.md").unlink()
    block = report.render_block("full", root=project)
    assert "not recorded (no `timings.json` in `docs/results/full/`)" in block
    assert "none (no `NN_*_results.md`" in block
    assert "The papers' claims" in block and "PAL improves CE" in block
    (target / "claims.csv").unlink()
    (target / "07_noisy_labels_results.md").write_text("| sym 0.4 |\n")
    block = report.render_block("full", root=project)
    assert "not recorded (no `claims.csv`" in block
    assert "Result tables of notebook 07" in block and "| sym 0.4 |" in block


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


def test_timings_sentences_warm_and_only():
    text = report.render_timings(
        _timings(cold=False, runs_trained=0, training_seconds=0.0, jobs=1, only=["06", "07"])
    )
    assert "warm: all 10 runs the notebooks ask for were in the run cache" in text
    assert "ran one at a time" in text
    assert "--only 06 07" in text and "Only notebooks 06, 07 were executed" in text
    text = report.render_timings(_timings(cold=False, runs_trained=0, runs_planned=0))
    assert "the notebooks selected train nothing" in text
    text = report.render_timings(_timings(runs_trained=1, runs_planned=1))
    assert "1 of the 1 run the notebooks ask for was missing" in text


# ------------------------------------------------------------------------------- errors


def test_unknown_profile_is_refused_with_the_profiles():
    with pytest.raises(report.ReportError, match="unknown profile 'huge'.*smoke, quick, full"):
        report.render_block("huge")
    with pytest.raises(SystemExit):
        cli.main(["report", "--profile", "huge"])


def test_page_without_markers_names_the_lines_to_add(tmp_path, monkeypatch, capsys):
    _page(tmp_path).parent.mkdir(parents=True)
    _page(tmp_path).write_text("# a page without blocks\n")
    with pytest.raises(report.ReportError) as err:
        report.check_page("full", root=tmp_path)
    start, end = report.block_markers("full")
    assert start in str(err.value) and end in str(err.value)
    assert start == "<!-- measured: full (palviz report --profile full) -->"
    assert end == "<!-- end measured: full -->"
    monkeypatch.setenv("PALVIZ_ROOT", str(tmp_path))
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path / "figures"))
    (tmp_path / "figures" / "full").mkdir(parents=True)
    (tmp_path / "figures" / "full" / "timings.json").write_text(json.dumps(_timings()))
    assert cli.main(["report", "--profile", "full"]) == 2
    assert start in capsys.readouterr().err
    assert not (tmp_path / "docs" / "results").exists()  # nothing copied before the check


def test_markers_twice_or_reversed_are_refused(tmp_path):
    start, end = report.block_markers("full")
    _page(tmp_path).parent.mkdir(parents=True)
    for text in (f"{start}\n{end}\n{start}\n{end}\n", f"{end}\n{start}\n"):
        _page(tmp_path).write_text(text)
        with pytest.raises(report.ReportError, match="once"):
            report.check_page("full", root=tmp_path)


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not a readable timing record"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"profile": "full"}), "no \\['date_utc'"),
        (json.dumps(_timings(profile="quick")), "records profile 'quick', not 'full'"),
    ],
)
def test_bad_timing_records_are_refused_naming_the_file(tmp_path, content, message):
    _page_with_markers(tmp_path)
    target = tmp_path / "docs" / "results" / "full"
    target.mkdir(parents=True)
    (target / "timings.json").write_text(content)
    with pytest.raises(report.ReportError, match=message) as err:
        report.render_block("full", root=tmp_path)
    assert "timings.json" in str(err.value)


# ------------------------------------------------------------------------------ atomicity


def test_a_failed_page_write_leaves_the_old_page_and_no_temp_file(project, monkeypatch):
    from palviz import files

    report.collect_results("full", root=project)
    before = _page(project).read_text()

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        report.write_page("full", root=project)
    assert _page(project).read_text() == before
    assert _leftovers(project) == []


# ------------------------------------------------------------------ the palviz command


def test_report_command_copies_writes_checks_and_refreshes_the_gallery(
    project, monkeypatch, capsys
):
    monkeypatch.setenv("PALVIZ_ROOT", str(project))
    monkeypatch.delenv("PALVIZ_FIGURES")
    galleries = []
    monkeypatch.setattr(cli, "cmd_gallery", lambda args: galleries.append(args.profile) or 0)
    assert cli.main(["report", "--profile", "full", "--check"]) == 1  # not written yet
    assert not (project / "docs" / "results").exists()
    assert cli.main(["report", "--profile", "full"]) == 0
    assert (project / "docs" / "results" / "full" / "claims.csv").exists()
    assert galleries == []  # the gallery shows quick's figures only
    assert cli.main(["report", "--profile", "full", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out

    quick = project / "figures"
    (quick / "timings.json").write_text(json.dumps(_timings(profile="quick")))
    assert cli.main(["report", "--profile", "quick"]) == 0
    assert galleries == ["quick"]
    assert "2030-01-02" in _block(_page(project).read_text(), "quick")
    assert cli.main(["report", "--profile", "quick", "--check"]) == 0


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

    def run(selected, profile, out_dir, jobs):
        seen["jobs"] = jobs
        return {p.stem: 1.25 * (i + 1) for i, p in enumerate(selected)}

    _fake_figures(monkeypatch, tmp_path, cli_figures.TrainingTime(12.34, 3, 10), run)
    assert cli.main(["figures", "--profile", "smoke", "--only", "6", "00", "--jobs", "1"]) == 0
    folder = tmp_path / "figures" / "smoke"
    # no temp file left; runs.csv lists the planned runs that are cached (none here)
    assert sorted(p.name for p in folder.iterdir()) == ["runs.csv", "timings.json"]
    record = json.loads((folder / "timings.json").read_text())
    assert set(record) == set(report.TIMING_KEYS) | {"matmul_gflops", "cpu"}
    assert record["cpu"]["pin"] == pin_label() and record["cpu"]["numpy"] == np.__version__
    assert f"CPU: {record['cpu']['cpu_model']}" in report.render_timings(record)
    before, after = record["matmul_gflops"]  # measured around the run, one thread
    assert before > 0 and after > 0
    assert f"{before:.1f} GFLOP/s before the run, {after:.1f} GFLOP/s after it" in (
        report.render_timings(record)
    )
    assert record["profile"] == "smoke" and record["only"] == ["00", "06"]
    assert record["cold"] is True
    assert (record["runs_trained"], record["runs_planned"]) == (3, 10)
    assert record["training_seconds"] == 12.3
    assert list(record["notebook_seconds"]) == ["00_tour", "06_long_tailed"]
    assert record["jobs"] == seen["jobs"] == 1
    assert record["total_seconds"] >= 0 and record["cpu_count"] == os.cpu_count()
    assert record["device"] == cli_figures.device_name() and record["torch_version"]
    assert record["date_utc"].endswith("Z")
    assert "warm" not in report.render_timings({**record, "profile": "smoke"})


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
    assert (spent.trained, spent.planned) == (1, 2) and spent >= 0
    rows[1]["cached"] = True
    spent = cli_figures.train_missing([Path("06_long_tailed.ipynb")], "quick")
    assert spent == 0.0 and (spent.trained, spent.planned) == (0, 2)


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
