"""Faults of the file system a user meets: a notebook that fails (its last good page and
figures stay, the front page marks it failed), a read-only run cache (rendering works, a
missing run is one clear error) and a full disk (one message naming the file, no temporary
file left, a rerun resumes).

A full disk is a 1 MB tmpfs and a read-only cache a read-only bind mount: both need root and
a machine that allows mounting; the tests that need them are skipped, with the reason, where
it does not."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import subprocess
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from palviz import book, cli, files, plots
from palviz import experiments as ex
from palviz.cli import figures as cli_figures
from palviz.cli import kernel as cli_kernel
from palviz.data import stratified_subset
from palviz.experiments import runcache
from palviz.files import DiskFullError, ReadOnlyError, StorageError

# ------------------------------------------------------------------ mounts


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


def _umount(folder: Path) -> None:
    subprocess.run(["umount", str(folder)], check=True, capture_output=True, text=True)


def _can_mount(folder: Path, *args: str) -> None:
    """Mount, or skip the test saying why not."""
    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs or a read-only bind mount needs root")
    try:
        _mount(*args, str(folder))
    except FileNotFoundError:
        pytest.skip("no mount command on this machine")
    except subprocess.CalledProcessError as err:
        pytest.skip(f"this machine does not allow mounting: {err.stderr.strip()}")


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MB tmpfs: a disk that is soon full."""
    folder = tmp_path / "disk"
    folder.mkdir()
    _can_mount(folder, "-t", "tmpfs", "-o", "size=1m", "tmpfs")
    try:
        yield folder
    finally:
        _umount(folder)


@pytest.fixture
def read_only(tmp_path):
    """``read_only(folder)``: a read-only view of ``folder`` (a read-only bind mount)."""
    mounted: list[Path] = []

    def view(source: Path) -> Path:
        target = tmp_path / f"read-only-{len(mounted)}"
        target.mkdir()
        _can_mount(target, "--bind", str(source))
        mounted.append(target)
        _mount("-o", "remount,bind,ro", str(target))
        return target

    try:
        yield view
    finally:
        for target in reversed(mounted):
            _umount(target)


def fill(disk: Path, leave: int) -> Path:
    """Fill ``disk`` until about ``leave`` bytes are free; returns the filler file."""
    filler = disk / "filler"
    stat = os.statvfs(disk)
    filler.write_bytes(b"\0" * max(0, stat.f_bavail * stat.f_frsize - leave))
    return filler


def temp_files(folder: Path) -> list[str]:
    """The temporary files of :func:`palviz.files.atomic_write` left under ``folder``."""
    return sorted(p.name for p in folder.rglob(".*.tmp"))


def one_line(message: str) -> str:
    assert "\n" not in message and "Traceback" not in message, message
    return message


# ------------------------------------------------------------------ pages that were built

LESSON = "# 07 · A lesson\n\n**What you will learn.** what a reader sees of a broken run"


def lesson(tmp_path: Path, version: int, *, fail: bool) -> Path:
    """Notebook ``07_lesson`` that writes a figure, a results table and its ``claims.csv``
    rows into ``figures_dir`` (as palviz's ``savefig``, ``save_markdown`` and
    ``write_claims`` do), and a figure under another profile (as one run with ``PROFILE =
    "paper"`` does), all telling ``version``; with ``fail`` a later cell raises."""
    cells = [
        new_markdown_cell(LESSON),
        new_code_cell(
            "from palviz.files import atomic_write, figures_dir\n"
            "folder = figures_dir('smoke')\n"
            "for path, text in ((folder / '07_lesson_line.png', 'figure {v}'),\n"
            "                   (folder / '07_lesson_results.md', 'table {v}'),\n"
            "                   (folder / 'claims.csv', {claims!r}),\n"
            "                   (figures_dir('paper') / '07_lesson_line.png', 'paper {v}')):\n"
            "    with atomic_write(path, 'w') as handle:\n"
            "        handle.write(text)\n"
            "print('written to', folder / '07_lesson_line.png')".format(
                v=version, claims=claims_csv("07", version)
            )
        ),
    ]
    if fail:
        cells.append(new_code_cell("raise ValueError('cell 3 broke\\nsecond line')"))
    path = tmp_path / "notebooks" / "07_lesson.ipynb"
    path.parent.mkdir(exist_ok=True)
    nbformat.write(new_notebook(cells=cells), path)
    return path


def claims_csv(notebook: str, version: int) -> str:
    """``claims.csv`` text with one row of ``notebook`` whose ``claim`` tells ``version``."""
    import pandas as pd

    from palviz.experiments.claims import CLAIM_COLUMNS

    row = {c: "" for c in CLAIM_COLUMNS}
    row.update(profile="smoke", notebook=notebook, claim=f"claim {version}", n_seeds=1)
    buffer = io.StringIO()
    pd.DataFrame([row], columns=list(CLAIM_COLUMNS)).to_csv(buffer, index=False)
    return buffer.getvalue()


def test_a_failed_notebook_keeps_the_last_good_page_and_figures_and_the_index_marks_it(
    tmp_path, monkeypatch
):
    from palviz.experiments.claims import read_claims

    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path / "figures"))
    out = tmp_path / "build" / "smoke"
    shared = tmp_path / "figures" / "smoke"
    shared.mkdir(parents=True)
    # what a good run 1 left: its page, copy, thumbnail, figures and claims (06's row too)
    earlier = new_notebook(cells=[new_markdown_cell(LESSON), new_code_cell("1")])
    book.write_copy(earlier, out, "07_lesson", "smoke")
    (shared / "07_lesson_line.png").write_text("figure 1")
    (shared / "07_lesson_results.md").write_text("table 1")
    (shared / "claims.csv").write_text(claims_csv("06", 1) + claims_csv("07", 1).split("\n")[1])
    kept = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    before = {name: (tmp_path / name).read_bytes() for name in kept}

    with pytest.raises(book.NotebookFailed) as caught:
        cli_kernel.execute_notebook(lesson(tmp_path, 2, fail=True), "smoke", out, timeout=120)
    message = one_line(str(caught.value))
    assert "07_lesson failed: cell 3: ValueError: cell 3 broke;" in message
    assert f"the last good run {out / '07_lesson.ipynb'} is kept" in message
    assert "run it again with: palviz figures --profile smoke --only 07" in message
    # nothing a reader sees changed: page, copy, thumbnail, figure, table and claims
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    assert not (tmp_path / "figures" / ".staging").exists()
    assert not (tmp_path / "figures" / "paper").exists()
    assert "cell 3 broke" in (out / "07_lesson.failed.ipynb").read_text(encoding="utf-8")
    src = book.prepare_sources(out, "smoke", notebooks_dir=tmp_path / "notebooks")
    page = nbformat.read(src / "notebooks" / "07_lesson.ipynb", as_version=4).cells[0].source
    assert "The last run of this lesson failed" in page and "ValueError: cell 3 broke" in page
    assert "This page is the last run that reached the end" in page  # the last good copy
    assert "`palviz figures --profile smoke --only 07`" in page
    assert "`07_lesson.failed.ipynb`" in page

    cli_kernel.execute_notebook(lesson(tmp_path, 3, fail=False), "smoke", out, timeout=120)
    assert (shared / "07_lesson_line.png").read_text() == "figure 3"
    assert (shared / "07_lesson_results.md").read_text() == "table 3"
    claims = read_claims("smoke")
    assert sorted(zip(claims["notebook"], claims["claim"], strict=True)) == [
        ("06", "claim 1"),  # another notebook's row is kept
        ("07", "claim 3"),
    ]
    assert (tmp_path / "figures" / "paper" / "07_lesson_line.png").read_text() == "paper 3"
    assert not (tmp_path / "figures" / ".staging").exists()
    executed = nbformat.read(out / "07_lesson.ipynb", as_version=4)
    assert executed.cells[1].outputs[0]["text"] == "written to figures/smoke/07_lesson_line.png\n"
    assert book.read_failure(out, "07_lesson") is None
    assert not (out / "07_lesson.failed.ipynb").exists()
    src = book.prepare_sources(out, "smoke", notebooks_dir=tmp_path / "notebooks")
    text = (src / "notebooks" / "07_lesson.ipynb").read_text(encoding="utf-8")
    assert "The last run of this lesson failed" not in text


def test_a_lesson_that_never_succeeded_shows_its_failure_not_a_page(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    nbformat.write(new_notebook(cells=[new_markdown_cell(LESSON)]), notebooks / "07_lesson.ipynb")
    out = tmp_path / "build" / "quick"
    failure = book.write_failure(new_notebook(), out, "07_lesson", "KeyError: 'x'", "quick")
    assert failure.command == "palviz figures --profile quick --only 07"
    assert book.read_failure(out, "07_lesson") == failure
    src = book.prepare_sources(out, "quick", notebooks_dir=notebooks)
    assert not (src / "notebooks" / "07_lesson.ipynb").exists()
    page = (src / "notebooks" / "07_lesson.md").read_text(encoding="utf-8")
    assert "No run of this lesson has reached the end yet" in page
    assert "`KeyError: 'x'`" in page


def test_figures_reports_a_failed_notebook_in_one_message_and_exits_1(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("PALVIZ_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path / "figures"))
    built = []
    monkeypatch.setattr(
        book, "build_book", lambda out_dir, profile: built.append(profile) or out_dir / "i.html"
    )
    monkeypatch.setattr(
        cli_figures, "train_missing", lambda selected, profile: cli_figures.TrainingTime(0, 0, 0)
    )

    def fails(path, profile, out_dir, *_):
        failure = book.write_failure(new_notebook(), out_dir, path.stem, "OSError: x", profile)
        raise book.NotebookFailed(path.stem, failure, out_dir)

    monkeypatch.setattr(cli_figures, "execute_notebook", fails)
    assert cli.main(["figures", "--profile", "smoke", "--only", "02"]) == 1
    err = capsys.readouterr().err
    assert "02_minority_collapse failed: OSError: x" in err
    assert "run it again with: palviz figures --profile smoke --only 02" in err
    assert "Traceback" not in err
    assert not (tmp_path / "figures" / "smoke" / "timings.json").exists()  # a failed run
    assert built == ["smoke"]  # the book is built, the failed lesson marked there
    assert book.read_failure(tmp_path / "build" / "smoke", "02_minority_collapse") is not None


def test_error_line_is_the_failed_cells_exception_on_one_line():
    from nbclient.exceptions import CellExecutionError

    err = CellExecutionError("Traceback ...\nmany lines", "DiskFullError", "the disk is full")
    assert book.error_line(err) == "DiskFullError: the disk is full"
    assert book.error_line(RuntimeError("first\nsecond")) == "RuntimeError: first"
    assert len(book.error_line(ValueError("x" * 1000))) == book.ERROR_CHARACTERS
    # a path cut by the length limit is still replaced: replaced first, cut after
    cut = len("OSError: ") + 587  # "/stage" straddles the limit
    line = book.error_line(OSError("y" * 587 + "/stage/x.png"), replace=("/stage", "/fig"))
    assert line == "OSError: " + "y" * 587 + "/fig"[: book.ERROR_CHARACTERS - 1 - cut] + "…"


# ------------------------------------------------------------------ full disk


def _writers():
    import torch

    return {
        "write_json": lambda path, n: files.write_json(path, {"values": list(range(n))}),
        "save_npz": lambda path, n: files.save_npz(path, a=np.random.default_rng(0).random(n)),
        "save_torch": lambda path, n: files.save_torch(path, {"w": torch.rand(n)}),
    }


@pytest.mark.parametrize("writer", ["write_json", "save_npz", "save_torch"])
def test_a_write_on_a_full_disk_names_the_file_keeps_the_old_one_and_leaves_no_temp_file(
    writer, full_disk
):
    write = _writers()[writer]
    path = full_disk / "entry" / f"result.{writer}"
    write(path, 10)
    before = path.read_bytes()
    fill(full_disk, 64 * 1024)
    with pytest.raises(DiskFullError) as caught:
        write(path, 200_000)  # about 1.5 MB in every format
    err = caught.value
    assert isinstance(err, OSError) and err.errno == errno.ENOSPC
    assert err.filename == str(path)
    message = one_line(str(err))
    assert message.startswith(f"the disk is full: could not write {path} (")
    assert "Free some space" in message
    assert path.read_bytes() == before
    assert temp_files(full_disk) == []


def test_torch_saves_runtime_error_counts_as_a_full_disk_only_when_the_disk_is_full(
    tmp_path, full_disk
):
    """``torch.save`` may fail on a full disk with a ``RuntimeError`` from
    ``inline_container.cc`` and no errno; it is a full disk only when the disk is (the real
    ``torch.save`` on a full disk is the writers' test above)."""

    def torch_fails(path):
        with files.atomic_write(path):
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos")

    fill(full_disk, 0)
    with pytest.raises(DiskFullError, match="inline_container"):
        torch_fails(full_disk / "checkpoint.pt")
    assert files.free_bytes(tmp_path) > files.NEARLY_FULL_BYTES  # not full: passed on as it is
    with pytest.raises(RuntimeError, match="unexpected pos") as caught:
        torch_fails(tmp_path / "checkpoint.pt")
    assert not isinstance(caught.value, StorageError)
    assert temp_files(full_disk) == [] and temp_files(tmp_path) == []


def test_pages_on_a_full_disk_are_one_message_and_leave_nothing_half_written(
    full_disk, monkeypatch
):
    out = full_disk / "build" / "smoke"
    nb = new_notebook(cells=[new_markdown_cell(LESSON)])
    book.write_copy(nb, out, "07_lesson", "smoke")
    before = (out / "07_lesson.ipynb").read_bytes()
    fill(full_disk, 0)
    nb.cells.append(new_markdown_cell("more " * 5000))
    with pytest.raises(DiskFullError, match=re.escape(f"could not write {out / '07_lesson'}")):
        book.write_copy(nb, out, "07_lesson", "smoke")
    assert (out / "07_lesson.ipynb").read_bytes() == before
    assert temp_files(full_disk) == []


def test_waiting_for_a_run_lock_on_a_full_disk_is_still_waiting(full_disk):
    """filelock's Timeout is an OSError without an errno: not a full disk."""
    from palviz.experiments.locks import RunLock

    owner = RunLock(full_disk, "w" * 16)
    owner.acquire()
    try:
        fill(full_disk, 0)
        waiter = RunLock(full_disk, "w" * 16, poll=0.05)
        assert waiter.acquire(done=lambda: True) is False  # gave up waiting, as asked
    finally:
        owner.release()


def test_a_training_run_on_a_full_disk_stops_with_one_message_and_resumes_once_there_is_room(
    full_disk, monkeypatch
):
    import torch

    monkeypatch.setenv("PALVIZ_RUNS", str(full_disk))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    spec = ex.lt_spec("CE", profile="smoke", epochs=2)
    folder = full_disk / spec.key()
    # room for the spec and one checkpoint, not for the second checkpoint's temporary file
    # beside the first; measured: a checkpoint of this run is about 155 KB
    filler = fill(full_disk, 250 * 1024)
    with pytest.raises(DiskFullError) as caught:
        ex.run(spec)
    message = one_line(str(caught.value))
    assert f"could not write {folder / 'checkpoint.pt'}" in message
    assert "PALVIZ_RUNS" in message and "resumes" in message
    assert temp_files(full_disk) == []
    assert not (folder / "metrics.json").exists()  # the entry is left, unfinished
    first = torch.load(folder / "checkpoint.pt", weights_only=True)
    assert first["epoch"] == 0
    filler.unlink()
    result = ex.run(spec)  # the lock was given back: this does not wait
    assert [row["epoch"] for row in result.metrics["history"]] == [0, 1]
    assert result.metrics["history"][0] == first["history"][0]  # epoch 0 was not trained again


def test_a_command_prints_a_storage_error_as_one_line(tmp_path, monkeypatch, capsys):
    path = tmp_path / "x.json"

    def full(args):
        raise DiskFullError(errno.ENOSPC, files.disk_full_message(path), str(path))

    monkeypatch.setattr(cli, "cmd_plan", full)
    assert cli.main(["plan", "--profile", "smoke"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"palviz plan: the disk is full: could not write {path} (")
    assert err.count("\n") == 1 and "Traceback" not in err


# ------------------------------------------------------------------ read-only cache


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    """A run cache holding one finished smoke run (2 epochs), and its spec."""
    folder = tmp_path_factory.mktemp("cached") / "runs"
    old = {v: os.environ.get(v) for v in ("PALVIZ_RUNS", "PALVIZ_TOY")}
    os.environ["PALVIZ_RUNS"] = str(folder)
    os.environ.pop("PALVIZ_TOY", None)
    try:
        spec = ex.lt_spec("CE", profile="smoke", epochs=2)
        ex.run(spec)
    finally:
        for variable, value in old.items():
            if value is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = value
    return folder, spec


def cheap_umap(features, *, seed=0, n_neighbors=15):
    """Stands in for UMAP (whose numba functions take seconds to load): these tests are about
    where the coordinates go; notebook 08 runs the real one."""
    return np.asarray(features, dtype=np.float32)[:, :2] + seed


def test_a_read_only_cache_with_every_run_cached_renders_the_umap_step(
    cached, read_only, tmp_path, monkeypatch
):

    source, spec = cached
    runs = read_only(source)
    monkeypatch.setenv("PALVIZ_RUNS", str(runs))
    monkeypatch.setenv("PALVIZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(plots, "umap_embedding", cheap_umap)
    [result] = ex.run_many([spec], desc="08 runs")  # as notebook 08 asks for its runs
    beside, fallback = result.embedding_paths(max_points=300, seed=1)
    assert beside.parent == runs / spec.key()
    assert fallback == tmp_path / "cache" / "umap" / spec.key() / "umap_300_1.npz"
    embedding, labels = result.embedding(max_points=300, seed=1)
    arrays = result.features()
    keep = stratified_subset(arrays["targets"], 300, 1)  # what the notebook's panels show
    np.testing.assert_array_equal(embedding, cheap_umap(arrays["features"][keep], seed=1))
    np.testing.assert_array_equal(labels, arrays["targets"][keep])
    assert not beside.exists() and fallback.exists()
    monkeypatch.setattr(plots, "umap_embedding", lambda *a, **k: pytest.fail("computed again"))
    again, again_labels = result.embedding(max_points=300, seed=1)
    np.testing.assert_array_equal(again, embedding)
    np.testing.assert_array_equal(again_labels, labels)


def test_with_nothing_writable_the_umap_coordinates_are_computed_in_memory_with_a_note(
    cached, read_only, tmp_path, monkeypatch, capsys
):

    source, spec = cached
    (tmp_path / "cache").mkdir()
    runs, cache = read_only(source), read_only(tmp_path / "cache")
    monkeypatch.setenv("PALVIZ_RUNS", str(runs))
    monkeypatch.setenv("PALVIZ_CACHE", str(cache))
    monkeypatch.setattr(plots, "umap_embedding", cheap_umap)
    result = runcache.run(spec)
    embedding, labels = result.embedding(max_points=100, seed=0)
    assert embedding.shape == (len(labels), 2)
    note = capsys.readouterr().out
    assert note.startswith(f"note: the UMAP coordinates of run {spec.key()} (CE) are computed")
    assert str(runs / spec.key()) in note and str(cache / "umap" / spec.key()) in note
    assert "PALVIZ_CACHE" in note
    assert list(cache.iterdir()) == []


def test_a_missing_run_on_a_read_only_cache_is_one_error_naming_it_before_training(
    read_only, tmp_path, monkeypatch, capsys
):
    from palviz.experiments import cluster

    (tmp_path / "empty").mkdir()
    runs = read_only(tmp_path / "empty")
    monkeypatch.setenv("PALVIZ_RUNS", str(runs))
    monkeypatch.setattr(runcache, "prepare_data", lambda spec: pytest.fail("training started"))
    monkeypatch.setattr(cluster, "local_pool", lambda *a, **k: pytest.fail("a pool started"))
    spec = ex.lt_spec("CE", profile="smoke", epochs=2)
    for attempt in (lambda: runcache.run(spec), lambda: ex.run_many([spec, spec.replace(seed=1)])):
        with pytest.raises(ReadOnlyError) as caught:
            attempt()
        message = one_line(str(caught.value))
        assert message.startswith(f"the run cache {runs} is read-only (a read-only file system)")
        assert f"CE {spec.key()}" in message and "Set PALVIZ_RUNS to a writable folder" in message
        assert caught.value.errno == errno.EROFS and caught.value.filename == str(runs)
    assert list(runs.iterdir()) == []

    specfile = tmp_path / "runs.jsonl"
    specfile.write_text(json.dumps(spec.to_dict()) + "\n")
    assert cli.main(["train", str(specfile)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"palviz train: the run cache {runs} is read-only")
    assert err.count("\n") == 1


def test_a_broken_entry_on_a_read_only_cache_is_one_error_naming_it(
    cached, read_only, tmp_path, monkeypatch
):
    import shutil

    source, spec = cached
    copy = tmp_path / "runs"
    shutil.copytree(source, copy)
    (copy / spec.key() / "metrics.json").write_text('{"truncated": ')
    runs = read_only(copy)
    monkeypatch.setenv("PALVIZ_RUNS", str(runs))
    with pytest.raises(ReadOnlyError) as caught:
        runcache.run(spec)
    message = one_line(str(caught.value))
    assert message.startswith(f"run cache entry {runs / spec.key()} (CE) is broken: metrics.json")
    assert "palviz runs --check --fix" in message and "PALVIZ_RUNS" in message


def test_require_writable_tells_read_only_from_writable(read_only, tmp_path):
    (tmp_path / "folder").mkdir()
    assert files.require_writable(tmp_path / "folder" / "new") == tmp_path / "folder" / "new"
    view = read_only(tmp_path / "folder")
    with pytest.raises(ReadOnlyError, match=re.escape(f"cannot write {view / 'sub'}: its folder")):
        files.require_writable(view / "sub")
    assert sorted(p.name for p in (tmp_path / "folder").iterdir()) == ["new"]  # no probe left
