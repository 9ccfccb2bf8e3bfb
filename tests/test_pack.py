"""``palviz runs pack`` / ``unpack``: a teacher's cached runs in one .tar.gz, extracted with
tarfile's data filter into a student's cache and checked there (CPU, no network, two smoke
runs)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

import palviz
from palviz import cli
from palviz.cli import figures as cli_figures
from palviz.cli import sweep as cli_sweep
from palviz.experiments import pack
from palviz.experiments.cachedir import check_runs, entry_problem
from palviz.experiments.runcache import read_cached, run
from palviz.experiments.runspec import CACHE_SCHEMA, RunSpec
from palviz.files import save_npz

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    """A cache holding two of the smoke runs notebook 06 plans (not all of them), one with a
    UMAP embedding."""
    folder = tmp_path_factory.mktemp("teacher")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PALVIZ_RUNS", str(folder))
        mp.setenv("PALVIZ_ROOT", str(ROOT))
        mp.delenv("PALVIZ_TOY", raising=False)
        rows = cli_sweep.planned_runs(cli_figures.notebooks(["06"]), "smoke")
        assert len(rows) > 2
        results = [run(row["spec"]) for row in rows[:2]]
        rng = np.random.default_rng(0)
        labels = rng.integers(0, 10, 50)
        save_npz(
            results[0].path / "umap_50_0.npz", embedding=rng.normal(size=(50, 2)), labels=labels
        )
    return folder


def pack_cli(monkeypatch, cache: Path, out: Path, *options: str) -> int:
    monkeypatch.setenv("PALVIZ_RUNS", str(cache))
    return cli.main(
        ["runs", "pack", "--profile", "smoke", "--only", "06", "-o", str(out), *options]
    )


@pytest.fixture(scope="module")
def archives(teacher, tmp_path_factory):
    """The teacher's runs packed without and with checkpoints."""
    folder = tmp_path_factory.mktemp("archives")
    out = {"default": folder / "default.tar.gz", "checkpoints": folder / "checkpoints.tar.gz"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PALVIZ_ROOT", str(ROOT))
        mp.delenv("PALVIZ_TOY", raising=False)
        assert pack_cli(mp, teacher, out["default"]) == 0
        assert pack_cli(mp, teacher, out["checkpoints"], "--with-checkpoints") == 0
    return out


@pytest.fixture
def student(tmp_path, monkeypatch):
    """An empty run cache (not even its folder exists yet)."""
    folder = tmp_path / "student-runs"
    monkeypatch.setenv("PALVIZ_RUNS", str(folder))
    monkeypatch.setenv("PALVIZ_ROOT", str(ROOT))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    return folder


def unpack_cli(path: Path, *options: str) -> int:
    return cli.main(["runs", "unpack", str(path), *options])


def keys_in(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if not p.name.startswith("."))


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


# -- archives taken apart and put together again ----------------------------------------


def read_members(path: Path) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    with tarfile.open(path, "r:gz") as tar:
        return [(m, tar.extractfile(m).read() if m.isreg() else None) for m in tar.getmembers()]


def write_members(path: Path, members) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def manifest_of(members) -> dict:
    return json.loads(next(data for m, data in members if m.name == pack.MANIFEST))


def with_manifest(members, manifest: dict):
    text = json.dumps(manifest).encode()
    return [(m, text if m.name == pack.MANIFEST else data) for m, data in members]


def assert_refused(capsys, student: Path, path: Path, *named: str) -> str:
    """``unpack`` exits 2 naming FILE, its value and ``named``, and nothing is in the
    student's cache."""
    assert unpack_cli(path) == 2
    err = capsys.readouterr().err
    for text in ("FILE", repr(str(path)), "written by `palviz runs pack`", *named):
        assert text in err, err
    assert "nothing was added to the run cache" in err
    assert not student.exists() or list(student.iterdir()) == []
    return err


# -- the round trip ----------------------------------------------------------------------


def test_pack_then_unpack_gives_identical_run_folders_that_pass_the_check(
    teacher, archives, student, capsys
):
    assert unpack_cli(archives["checkpoints"]) == 0
    keys = keys_in(teacher)
    assert keys_in(student) == keys
    for key in keys:
        assert folder_bytes(student / key) == folder_bytes(teacher / key)
        spec = RunSpec.from_dict(json.loads((student / key / "spec.json").read_text()))
        result = read_cached(spec)
        assert result is not None and result.path == student / key
    assert not [p for p in student.iterdir() if p.name.startswith(".unpack")]
    out = capsys.readouterr().out
    assert f"{len(keys)} run(s) added" in out and f"{len(keys)} ok, 0 unfinished, 0 broken" in out
    assert [r["status"] for r in check_runs()] == ["ok"] * len(keys)
    assert cli.main(["runs", "--check"]) == 0


def test_checkpoints_are_left_out_unless_asked_for(teacher, archives):
    default = [m.name for m, _ in read_members(archives["default"])]
    full = [m.name for m, _ in read_members(archives["checkpoints"])]
    assert not [n for n in default if n.endswith("checkpoint.pt")]
    assert sorted(n for n in full if n.endswith("checkpoint.pt")) == [
        f"{key}/checkpoint.pt" for key in keys_in(teacher)
    ]
    assert set(default) == {n for n in full if not n.endswith("checkpoint.pt")}
    assert any(n.endswith("/umap_50_0.npz") for n in default)


def test_a_run_packed_without_its_checkpoint_is_read_by_the_cache(teacher, archives, student):
    assert unpack_cli(archives["default"]) == 0
    for key in keys_in(teacher):
        mine = folder_bytes(student / key)
        assert mine == {
            n: b for n, b in folder_bytes(teacher / key).items() if n != "checkpoint.pt"
        }
        assert entry_problem(student / key) is None  # a finished run needs no checkpoint
        spec = RunSpec.from_dict(json.loads((student / key / "spec.json").read_text()))
        assert read_cached(spec) is not None


def test_the_manifest_names_versions_profile_runs_and_the_missing_runs(teacher, archives):
    manifest = manifest_of(read_members(archives["default"]))
    assert (manifest["palviz"], manifest["cache_schema"]) == (palviz.__version__, CACHE_SCHEMA)
    assert (manifest["profile"], manifest["notebooks"]) == ("smoke", ["06"])
    keys = keys_in(teacher)
    assert sorted(manifest["runs"]) == keys
    planned = cli_sweep.planned_runs(cli_figures.notebooks(["06"]), "smoke")
    missing = sorted(r["key"] for r in planned if r["key"] not in keys)
    assert missing and sorted(m["key"] for m in manifest["missing"]) == missing


def test_pack_warns_of_planned_runs_it_lacks(teacher, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PALVIZ_ROOT", str(ROOT))
    assert pack_cli(monkeypatch, teacher, tmp_path / "a.tar.gz") == 0
    captured = capsys.readouterr()
    planned = cli_sweep.planned_runs(cli_figures.notebooks(["06"]), "smoke")
    assert f"warning: {len(planned) - 2} planned run(s)" in captured.err
    assert "packed 2 run(s) of profile 'smoke'" in captured.out


def test_pack_refuses_when_nothing_is_cached(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PALVIZ_ROOT", str(ROOT))
    out = tmp_path / "nothing.tar.gz"
    assert pack_cli(monkeypatch, tmp_path / "empty", out) == 2
    assert "no planned run of profile 'smoke' is cached" in capsys.readouterr().err
    assert not out.exists()


def test_pack_refuses_an_output_that_is_a_folder(teacher, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PALVIZ_ROOT", str(ROOT))
    assert pack_cli(monkeypatch, teacher, tmp_path) == 2
    err = capsys.readouterr().err
    assert f"-o/--output {str(tmp_path)!r} is a folder" in err and "no archive written" in err


def test_an_interrupted_pack_leaves_no_archive(teacher, tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_ROOT", str(ROOT))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tarfile.TarFile, "add", interrupted)
    assert pack_cli(monkeypatch, teacher, tmp_path / "half.tar.gz") == 130  # Ctrl-C's status
    assert list(tmp_path.iterdir()) == []


def test_the_default_archive_name_names_the_profile():
    assert pack.default_name("paper") == "palviz-runs-paper.tar.gz"


# -- a damaged run: added, then reported by the cache's check ----------------------------


def test_a_corrupt_run_is_reported_by_the_check(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])
    i = next(i for i, (m, _) in enumerate(members) if m.name.endswith("/features.npz"))
    info, data = members[i]
    members[i] = (info, data[: len(data) // 2])  # cut short
    bad = write_members(tmp_path / "bad.tar.gz", members)
    assert unpack_cli(bad) == 1
    out = capsys.readouterr().out
    key = info.name.partition("/")[0]
    assert f"{key}  " in out and "broken" in out and "features.npz is not readable" in out
    assert "1 ok, 0 unfinished, 1 broken" in out and "palviz runs --check --fix" in out
    assert entry_problem(student / key, thorough=True) is not None  # there, for --fix


# -- refusals: FILE and the problem named, nothing written -------------------------------


@pytest.mark.parametrize("name", ["../x", "{key}/../../x"])
def test_a_member_leaving_the_folder_is_refused_by_the_data_filter(
    archives, student, tmp_path, capsys, name
):
    members = read_members(archives["default"])
    name = name.format(key=manifest_of(members)["runs"][0])
    members.append((tarfile.TarInfo(name), b"x"))
    bad = write_members(tmp_path / "bad.tar.gz", members)
    assert_refused(capsys, student, bad, repr(name), "data filter refuses", "outside")


@pytest.mark.parametrize(
    "kind, said", [(tarfile.SYMTYPE, "absolute"), (tarfile.CHRTYPE, "special file")]
)
def test_a_link_out_of_the_folder_or_a_device_is_refused_by_the_data_filter(
    archives, student, tmp_path, capsys, kind, said
):
    members = read_members(archives["default"])
    i = next(i for i, (m, _) in enumerate(members) if m.name.endswith("/metrics.json"))
    link = tarfile.TarInfo(members[i][0].name)
    link.type, link.linkname = kind, "/etc/passwd"
    members[i] = (link, None)
    bad = write_members(tmp_path / "bad.tar.gz", members)
    assert_refused(capsys, student, bad, repr(link.name), "data filter refuses", said)


def test_a_member_outside_the_listed_runs_is_refused(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])
    members.append((tarfile.TarInfo("/tmp/x"), b"x"))  # the filter strips the leading /
    bad = write_members(tmp_path / "bad.tar.gz", members)
    keys = sorted([*manifest_of(members)["runs"], "tmp"])
    assert_refused(capsys, student, bad, f"holds {keys}, not the runs manifest.json lists")


def test_another_palviz_version_is_refused_naming_both(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])
    manifest = dict(manifest_of(members), palviz="0.0.0-other")
    bad = write_members(tmp_path / "bad.tar.gz", with_manifest(members, manifest))
    assert_refused(capsys, student, bad, "packed by palviz 0.0.0-other", palviz.__version__)


def test_an_archive_without_its_manifest_is_refused(archives, student, tmp_path, capsys):
    members = [(m, d) for m, d in read_members(archives["default"]) if m.name != pack.MANIFEST]
    bad = write_members(tmp_path / "bad.tar.gz", members)
    assert_refused(capsys, student, bad, "holds no manifest.json")


def test_a_truncated_archive_is_refused(archives, student, tmp_path, capsys):
    data = archives["default"].read_bytes()
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(data[: len(data) // 2])
    assert_refused(capsys, student, bad, "is not a complete gzip-compressed tar archive")


def test_a_file_that_is_not_an_archive_is_refused(student, tmp_path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("not an archive")
    assert_refused(capsys, student, bad, "is not a complete gzip-compressed tar archive")


def test_a_missing_file_is_refused(student, tmp_path, capsys):
    assert_refused(capsys, student, tmp_path / "absent.tar.gz", "does not exist")


# -- a cache that already has the runs ---------------------------------------------------


def test_a_cached_run_is_kept_unless_forced(teacher, archives, student, capsys):
    key = keys_in(teacher)[0]
    assert unpack_cli(archives["default"]) == 0
    metrics = student / key / "metrics.json"
    theirs = json.loads(metrics.read_text())
    metrics.write_text(json.dumps(dict(theirs, seconds=theirs["seconds"] + 1)))
    mine = folder_bytes(student / key)
    capsys.readouterr()
    assert unpack_cli(archives["default"]) == 0
    out = capsys.readouterr().out
    assert "0 run(s) added, 2 already cached and kept (--force replaces them)" in out
    assert folder_bytes(student / key) == mine
    assert unpack_cli(archives["default"], "--force") == 0
    out = capsys.readouterr().out
    assert "2 replaced" in out and "2 ok, 0 unfinished, 0 broken" in out
    assert metrics.read_bytes() == (teacher / key / "metrics.json").read_bytes()
    assert keys_in(student) == keys_in(teacher)
    assert not [p for p in student.iterdir() if p.name.startswith(".unpack")]
