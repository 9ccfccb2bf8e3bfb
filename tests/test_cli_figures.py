"""``palviz figures`` runs notebooks two at a time: order, concurrency, errors, ``--jobs``."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from palviz import cli
from palviz.cli import figures as cli_figures
from palviz.cli import kernel as cli_kernel
from palviz.cli import reuse


def _paths(n):
    return [Path(f"/nowhere/{i:02d}_lesson.ipynb") for i in range(n)]


def test_figure_jobs_defaults_to_two_and_never_exceeds_the_notebooks(monkeypatch):
    monkeypatch.setattr(cli_figures.os, "cpu_count", lambda: 8)
    assert cli_figures.figure_jobs(None, 9) == 2
    assert cli_figures.figure_jobs(None, 1) == 1
    assert cli_figures.figure_jobs(4, 9) == 4
    monkeypatch.setattr(cli_figures.os, "cpu_count", lambda: 1)
    assert cli_figures.figure_jobs(None, 9) == 1
    for bad in (0, -1, 1.5, True):
        with pytest.raises(SystemExit, match=rf"--jobs must be a positive integer, got {bad!r}"):
            cli_figures.figure_jobs(bad, 9)


def test_run_notebooks_runs_two_kernels_at_once_in_the_notebooks_order(monkeypatch):
    barrier = threading.Barrier(2, timeout=10)  # breaks unless two notebooks run together
    started, lock = [], threading.Lock()
    running = [0, 0]  # now, most at once

    third_started = threading.Event()

    def fake(path, profile, out_dir, *_):
        with lock:
            started.append(path.stem)
            running[0] += 1
            running[1] = max(running[1], running[0])
        if path.stem[:2] in ("00", "01"):
            barrier.wait()
        if path.stem.startswith("02"):
            third_started.set()
        if path.stem.startswith("00"):  # a long notebook: 01's slot goes to 02 meanwhile
            assert third_started.wait(timeout=10), "02 waited for 00 although a slot was free"
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return float(path.stem[:2])

    monkeypatch.setattr(cli_figures, "execute_notebook", fake)
    times = cli_figures.run_notebooks(_paths(5), "smoke", Path("/out"), jobs=2)
    assert list(times) == [f"{i:02d}_lesson" for i in range(5)]
    assert list(times.values()) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert started[:2] == ["00_lesson", "01_lesson"] or started[:2] == ["01_lesson", "00_lesson"]
    assert running[1] == 2


def test_run_notebooks_raises_the_first_error_and_starts_no_more(monkeypatch):
    started = []

    def fake(path, profile, out_dir, *_):
        started.append(path.stem)
        if path.stem.startswith("01"):
            raise RuntimeError("cell 3 failed in 01")
        return 1.0

    monkeypatch.setattr(cli_figures, "execute_notebook", fake)
    with pytest.raises(RuntimeError, match="cell 3 failed in 01"):
        cli_figures.run_notebooks(_paths(6), "smoke", Path("/out"), jobs=1)
    assert started == ["00_lesson", "01_lesson"]


def test_figures_command_rejects_bad_jobs_before_running_anything(monkeypatch, tmp_path):
    monkeypatch.setenv("PALVIZ_BUILD", str(tmp_path))
    monkeypatch.setattr(cli_figures, "execute_notebook", lambda *a: pytest.fail("ran a notebook"))
    with pytest.raises(SystemExit, match="--jobs must be a positive integer, got 0"):
        cli.main(["figures", "--profile", "smoke", "--only", "00", "--jobs", "0"])


def test_train_missing_trains_only_the_missing_runs_of_the_selected_notebooks(monkeypatch):
    from palviz.experiments import cluster, plan, runcache

    rows = [
        {"key": "a", "spec": "spec-a", "notebooks": ["06"]},
        {"key": "b", "spec": "spec-b", "notebooks": ["06", "08"]},
        {"key": "c", "spec": "spec-c", "notebooks": ["07"]},
    ]
    asked, trained = [], []
    monkeypatch.setattr(plan, "plan", lambda numbers, *_: asked.append(numbers) or rows)
    monkeypatch.setattr(runcache, "is_cached", lambda spec: spec == "spec-b")
    monkeypatch.setattr(cluster, "run_many", lambda specs, desc: trained.append(specs))
    paths = [Path(f"/nb/{n}_x.ipynb") for n in ("01", "06", "07", "08")]
    assert cli_figures.train_missing(paths, "quick").seconds >= 0
    assert asked == [["06", "07", "08"]]  # 01 trains nothing
    assert trained == [["spec-a", "spec-c"]]

    monkeypatch.setattr(runcache, "is_cached", lambda spec: True)
    trained.clear()
    assert cli_figures.train_missing(paths, "quick").seconds == 0.0
    assert trained == []


def test_figures_trains_the_missing_runs_before_any_notebook_starts(monkeypatch, tmp_path):
    monkeypatch.setenv("PALVIZ_BUILD", str(tmp_path))
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path / "figures"))
    events = []
    monkeypatch.setattr(
        cli_figures,
        "train_missing",
        lambda sel, prof: events.append("train") or cli_figures.TrainingTime(1.0, 1, 1),
    )
    monkeypatch.setattr(
        cli_figures,
        "execute_notebook",
        lambda path, prof, out, *_: events.append(path.stem[:2]) or 0.1,
    )
    assert cli.main(["figures", "--profile", "smoke", "--only", "06", "00", "--jobs", "1"]) == 0
    assert events == ["train", "00", "06"]


@pytest.mark.skipif(os.name != "posix", reason="Unix sockets")
def test_kernels_started_at_once_talk_over_their_own_sockets_and_are_shut_down(tmp_path):
    """Two kernels started together over TCP once picked the same port and one died with
    "Address already in use"; each now gets Unix sockets in a folder of its own."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    import nbformat

    cell = (
        "import json, ipykernel.connect as c\n"
        "info = c.get_connection_info(unpack=True)\n"
        "print(json.dumps({'transport': info['transport'], 'ip': info['ip']}))"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    paths = [tmp_path / f"n{i}.ipynb" for i in range(3)]
    for path in paths:
        nbformat.write(nb, path)
    out = tmp_path / "out"
    with ThreadPoolExecutor(len(paths)) as pool:
        list(pool.map(lambda p: cli_kernel.execute_notebook(p, "smoke", out, timeout=120), paths))
    infos = []
    for path in paths:
        executed = nbformat.read(out / path.name, as_version=4)
        infos.append(json.loads(executed.cells[0].outputs[0]["text"]))
    assert [i["transport"] for i in infos] == ["ipc"] * len(paths)
    folders = {Path(i["ip"]).parent for i in infos}
    assert len(folders) == len(paths), infos
    assert not any(f.exists() for f in folders)  # removed with the kernel
    children = subprocess.run(
        ["ps", "--ppid", str(os.getpid()), "-o", "cmd="], capture_output=True, text=True
    ).stdout
    assert "ipykernel" not in children, children


def _lesson(tmp_path: Path) -> Path:
    path = tmp_path / "notebooks" / "06_lesson.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"cells": []}', encoding="utf-8")
    return path


def test_notebook_inputs_change_with_the_notebook_the_environment_and_the_runs_read(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    path = _lesson(tmp_path)
    metrics = tmp_path / "runs" / "k1" / "metrics.json"
    metrics.parent.mkdir(parents=True)
    metrics.write_text('{"acc": 0.5}')
    planned = [{"key": "k1", "notebooks": ["06"]}, {"key": "k2", "notebooks": ["07"]}]
    first = reuse.notebook_inputs(path, "smoke", planned)
    assert reuse.notebook_inputs(path, "smoke", planned) == first  # the same inputs
    assert reuse.notebook_inputs(path, "quick", planned) != first
    metrics.write_text('{"acc": 0.6}')  # the run it reads, trained again
    second = reuse.notebook_inputs(path, "smoke", planned)
    assert second != first
    (tmp_path / "runs" / "k2").mkdir()
    (tmp_path / "runs" / "k2" / "metrics.json").write_text("{}")  # a run of another notebook
    assert reuse.notebook_inputs(path, "smoke", planned) == second
    monkeypatch.setenv("PALVIZ_DATASET_MODULES", "my_sets")
    third = reuse.notebook_inputs(path, "smoke", planned)
    assert third != second
    path.write_text('{"cells": [1]}', encoding="utf-8")
    assert reuse.notebook_inputs(path, "smoke", planned) != third


def test_a_notebook_is_kept_only_after_a_good_run_with_the_same_inputs_and_its_files(
    monkeypatch, tmp_path
):
    from palviz import book

    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path / "figures"))
    path, out = _lesson(tmp_path), tmp_path / "build"
    out.mkdir()
    assert not reuse.unchanged(path, out, "h1")  # never ran
    (out / path.name).write_text("{}")
    figure = tmp_path / "figures" / "smoke" / "06_a.png"
    figure.parent.mkdir(parents=True)
    figure.write_bytes(b"png")
    record = {"inputs": "h1", "files": ["smoke/06_a.png"]}
    (out / "06_lesson.inputs.json").write_text(json.dumps(record))
    assert reuse.unchanged(path, out, "h1")
    assert not reuse.unchanged(path, out, "h2")  # an input changed
    figure.unlink()
    assert not reuse.unchanged(path, out, "h1")  # a file it wrote is gone
    figure.write_bytes(b"png")
    nb = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    import nbformat

    book.write_failure(nbformat.from_dict(nb), out, "06_lesson", "cell 2: boom", "smoke")
    assert not reuse.unchanged(path, out, "h1")  # its last run failed


def test_figures_runs_again_only_the_notebooks_whose_inputs_changed(monkeypatch, tmp_path):
    monkeypatch.setenv("PALVIZ_BUILD", str(tmp_path))
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setattr(
        cli_figures, "train_missing", lambda sel, prof: cli_figures.TrainingTime(0.0, 0, 0)
    )
    monkeypatch.setattr(
        cli_figures, "build_book", lambda *a: tmp_path / "index.html", raising=False
    )
    ran = []

    def fake(path, profile, out_dir, timeout, inputs):
        ran.append(path.stem[:2])
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / path.name).write_text("{}")
        record = {"inputs": inputs, "files": []}
        (out_dir / f"{path.stem}.inputs.json").write_text(json.dumps(record))
        return 0.5

    import palviz.book

    monkeypatch.setattr(palviz.book, "build_book", lambda *a: tmp_path / "index.html")
    monkeypatch.setattr(cli_figures, "execute_notebook", fake)
    args = ["figures", "--profile", "smoke", "--only", "01", "04", "--jobs", "1"]
    assert cli.main(args) == 0
    assert ran == ["01", "04"]
    assert cli.main(args) == 0
    assert ran == ["01", "04"]  # nothing changed: both kept
    record = json.loads((tmp_path / "figures" / "smoke" / "timings.json").read_text())
    assert record["kept"] == ["01_simplex_prototypes", "04_lipschitz_bounds_vs_s"]
    assert record["notebook_seconds"] == {
        "01_simplex_prototypes": 0.5,
        "04_lipschitz_bounds_vs_s": 0.5,
    }
    monkeypatch.setenv("PALVIZ_SOMETHING", "new")  # an input of every notebook
    assert cli.main(args) == 0 and ran[2:] == ["01", "04"]
    assert cli.main([*args, "--rerun"]) == 0 and ran[4:] == ["01", "04"]
