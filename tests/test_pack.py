"""``palviz runs pack`` / ``unpack``: a teacher's cached runs in one archive, checked whole
before anything enters a student's cache (CPU, no network, two smoke runs)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from palviz import cli
from palviz.cli import figures as cli_figures
from palviz.cli import sweep as cli_sweep
from palviz.experiments import pack, unpack
from palviz.experiments.cachedir import entry_problem
from palviz.experiments.runcache import CACHE_SCHEMA, RunSpec, read_cached, run
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


def teacher_keys(teacher: Path) -> list[str]:
    return sorted(p.name for p in teacher.iterdir() if not p.name.startswith("."))


# -- archives taken apart and put together again, for the refusals ----------------------


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
    assert members[0][0].name == "manifest.json"
    return json.loads(members[0][1])


def with_manifest(members, manifest: dict):
    return [(members[0][0], json.dumps(manifest).encode()), *members[1:]]


def regular(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def assert_refused(capsys, student: Path, path: Path, *named: str) -> str:
    """``unpack`` exits 2 naming ``named`` and nothing is in the student's cache."""
    assert unpack_cli(path) == 2
    err = capsys.readouterr().err
    for text in named:
        assert text in err, err
    assert "nothing was written" in err
    assert not student.exists() or list(student.iterdir()) == []
    return err


# -- the round trip ----------------------------------------------------------------------


def test_pack_then_unpack_gives_byte_identical_runs_the_cache_reads(
    teacher, archives, student, capsys
):
    assert unpack_cli(archives["checkpoints"]) == 0
    keys = teacher_keys(teacher)
    assert sorted(p.name for p in student.iterdir() if not p.name.startswith(".")) == keys
    for key in keys:
        names = sorted(p.name for p in (teacher / key).iterdir())
        assert sorted(p.name for p in (student / key).iterdir()) == names
        for name in names:
            assert (student / key / name).read_bytes() == (teacher / key / name).read_bytes()
        spec = RunSpec.from_dict(json.loads((student / key / "spec.json").read_text()))
        result = read_cached(spec)
        assert result is not None and result.path == student / key
        assert result.metrics == json.loads((teacher / key / "metrics.json").read_text())
    assert not [p for p in student.iterdir() if p.name.startswith(".unpack")]
    assert f"{len(keys)} run(s) added" in capsys.readouterr().out


def test_checkpoints_are_left_out_unless_asked_for(teacher, archives):
    default = [m.name for m, _ in read_members(archives["default"])]
    full = [m.name for m, _ in read_members(archives["checkpoints"])]
    assert default[0] == full[0] == "manifest.json"
    assert not [n for n in default if n.endswith("checkpoint.pt")]
    assert sorted(n for n in full if n.endswith("checkpoint.pt")) == [
        f"{key}/checkpoint.pt" for key in teacher_keys(teacher)
    ]
    assert set(default) == {n for n in full if not n.endswith("checkpoint.pt")}
    assert any(n.endswith("/umap_50_0.npz") for n in default)


def test_a_run_packed_without_its_checkpoint_is_read_by_the_cache(teacher, archives, student):
    assert unpack_cli(archives["default"]) == 0
    for key in teacher_keys(teacher):
        for name in ("spec.json", "metrics.json", "features.npz"):
            assert (student / key / name).read_bytes() == (teacher / key / name).read_bytes()
        assert not (student / key / "checkpoint.pt").exists()
        assert entry_problem(student / key) is None  # a finished run needs no checkpoint
        spec = RunSpec.from_dict(json.loads((student / key / "spec.json").read_text()))
        assert read_cached(spec) is not None


def test_the_manifest_names_versions_runs_files_and_the_missing_runs(teacher, archives, capsys):
    manifest = manifest_of(read_members(archives["default"]))
    assert manifest["format_version"] == unpack.FORMAT_VERSION
    assert manifest["cache_schema"] == CACHE_SCHEMA
    assert manifest["palviz"] == __import__("palviz").__version__
    assert (manifest["profile"], manifest["notebooks"]) == ("smoke", ["06"])
    keys = teacher_keys(teacher)
    assert sorted(r["key"] for r in manifest["runs"]) == keys
    for r in manifest["runs"]:
        assert r["spec"] == json.loads((teacher / r["key"] / "spec.json").read_text())
        for f in r["files"]:
            assert f["size"] == (teacher / f["path"]).stat().st_size
            assert f["sha256"] == unpack.sha256_of(teacher / f["path"])
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


def test_an_interrupted_pack_leaves_no_archive(teacher, tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_ROOT", str(ROOT))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pack, "_add_file", interrupted)
    assert pack_cli(monkeypatch, teacher, tmp_path / "half.tar.gz") == 130  # Ctrl-C's status
    assert list(tmp_path.iterdir()) == []


def test_the_default_archive_name_names_the_profile():
    assert pack.default_name("paper") == "palviz-runs-paper.tar.gz"


# -- refusals: the problem named, nothing written ----------------------------------------


def first_file(members, name: str) -> int:
    return next(i for i, (m, _) in enumerate(members) if m.name.endswith("/" + name))


def test_a_changed_file_is_refused_by_its_checksum(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])
    i = first_file(members, "features.npz")
    info, data = members[i]
    members[i] = (info, data[:-10] + bytes(b ^ 0xFF for b in data[-10:]))  # same size
    bad = write_members(tmp_path / "bad.tar.gz", members)
    assert_refused(capsys, student, bad, info.name, "SHA-256")


@pytest.mark.parametrize("name", ["../x", "/tmp/x", "{key}/../../x"])
def test_a_path_leaving_the_cache_is_refused(archives, student, tmp_path, capsys, name):
    members = read_members(archives["default"])
    key = manifest_of(members)["runs"][0]["key"]
    name = name.format(key=key)
    members.append(regular(name, b"x"))
    bad = write_members(tmp_path / "bad.tar.gz", members)
    err = assert_refused(capsys, student, bad, repr(name))
    assert ("absolute" in err) if name.startswith("/") else ("'..'" in err)


@pytest.mark.parametrize(
    "kind, said",
    [
        (tarfile.SYMTYPE, "symbolic link"),
        (tarfile.LNKTYPE, "hard link"),
        (tarfile.CHRTYPE, "device"),
        (tarfile.FIFOTYPE, "FIFO"),
    ],
)
def test_a_member_that_is_not_a_regular_file_is_refused(
    archives, student, tmp_path, capsys, kind, said
):
    members = read_members(archives["default"])
    i = first_file(members, "metrics.json")
    link = tarfile.TarInfo(members[i][0].name)
    link.type = kind
    link.linkname = "/etc/passwd"
    members[i] = (link, None)
    bad = write_members(tmp_path / "bad.tar.gz", members)
    assert_refused(capsys, student, bad, repr(link.name), "not a regular file", said)


def test_an_unknown_file_name_is_refused(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])
    key = manifest_of(members)["runs"][0]["key"]
    members.append(regular(f"{key}/notes.py", b"print('hi')"))
    bad = write_members(tmp_path / "bad.tar.gz", members)
    assert_refused(capsys, student, bad, f"'{key}/notes.py'", "is not a file of a run")


def test_a_key_the_manifest_does_not_list_is_refused(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])
    members.append(regular("0123456789abcdef/spec.json", b"{}"))
    bad = write_members(tmp_path / "bad.tar.gz", members)
    assert_refused(capsys, student, bad, "0123456789abcdef/spec.json", "not one of the manifest")


def test_another_cache_schema_is_refused_naming_both(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])
    manifest = manifest_of(members)
    manifest["cache_schema"] = CACHE_SCHEMA + 1
    bad = write_members(tmp_path / "bad.tar.gz", with_manifest(members, manifest))
    assert_refused(
        capsys, student, bad, "manifest.json", f"is {CACHE_SCHEMA + 1}", f"is {CACHE_SCHEMA}"
    )


def test_another_palviz_version_is_refused_naming_both(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])
    manifest = manifest_of(members)
    manifest["palviz"] = "0.0.0-other"
    bad = write_members(tmp_path / "bad.tar.gz", with_manifest(members, manifest))
    assert_refused(capsys, student, bad, "palviz '0.0.0-other'", "this is palviz")


def test_an_archive_without_its_manifest_is_refused(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])[1:]
    bad = write_members(tmp_path / "bad.tar.gz", members)
    assert_refused(capsys, student, bad, "no manifest.json first", members[0][0].name)


def test_a_manifest_that_is_not_json_is_refused(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])
    members[0] = (members[0][0], b'{"format": ')
    bad = write_members(tmp_path / "bad.tar.gz", members)
    assert_refused(capsys, student, bad, "'manifest.json'", "not readable JSON")


def test_a_file_of_the_manifest_missing_from_the_archive_is_refused(
    archives, student, tmp_path, capsys
):
    members = read_members(archives["default"])
    i = first_file(members, "umap_50_0.npz")
    name = members.pop(i)[0].name
    bad = write_members(tmp_path / "bad.tar.gz", members)
    assert_refused(capsys, student, bad, repr(name), "listed in manifest.json but not in")


def test_a_spec_whose_key_is_not_its_folder_is_refused(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])
    manifest = manifest_of(members)
    run0 = manifest["runs"][0]
    key = run0["key"]
    run0["spec"]["seed"] += 7  # another run's spec under this run's key
    changed = (json.dumps(run0["spec"], indent=2, sort_keys=True)).encode()
    i = next(i for i, (m, _) in enumerate(members) if m.name == f"{key}/spec.json")
    members[i] = (members[i][0], changed)
    entry = next(f for f in run0["files"] if f["path"] == f"{key}/spec.json")
    entry["size"], entry["sha256"] = len(changed), __import__("hashlib").sha256(changed).hexdigest()
    bad = write_members(tmp_path / "bad.tar.gz", with_manifest(members, manifest))
    computed = RunSpec.from_dict(run0["spec"]).key()
    assert_refused(capsys, student, bad, f"run {key}: its spec has key {computed}, not {key}")


def test_a_spec_file_unlike_the_manifests_spec_is_refused(archives, student, tmp_path, capsys):
    members = read_members(archives["default"])
    manifest = manifest_of(members)
    run0 = manifest["runs"][0]
    key = run0["key"]
    spec = dict(run0["spec"], seed=run0["spec"]["seed"] + 7)
    changed = json.dumps(spec).encode()
    i = next(i for i, (m, _) in enumerate(members) if m.name == f"{key}/spec.json")
    members[i] = (members[i][0], changed)
    entry = next(f for f in run0["files"] if f["path"] == f"{key}/spec.json")
    entry["size"], entry["sha256"] = len(changed), __import__("hashlib").sha256(changed).hexdigest()
    bad = write_members(tmp_path / "bad.tar.gz", with_manifest(members, manifest))
    assert_refused(capsys, student, bad, f"'{key}/spec.json'", "differs from the spec")


def test_an_archive_beyond_the_member_limit_is_refused(archives, student, monkeypatch, capsys):
    monkeypatch.setattr(unpack, "MAX_MEMBERS", 2)
    assert_refused(capsys, student, archives["default"], "more than the limit of 2")


def test_a_truncated_archive_is_refused(archives, student, tmp_path, capsys):
    data = archives["default"].read_bytes()
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(data[: len(data) // 2])
    assert_refused(capsys, student, bad, "truncated or corrupt")


def test_a_file_that_is_not_an_archive_is_refused(student, tmp_path, capsys):
    bad = tmp_path / "bad.tar.gz"
    bad.write_text("not an archive")
    assert_refused(capsys, student, bad, "not a gzip-compressed tar archive")


# -- a cache that already has the runs ---------------------------------------------------


def test_an_identical_cached_run_is_skipped(archives, student, capsys):
    assert unpack_cli(archives["default"]) == 0
    capsys.readouterr()
    assert unpack_cli(archives["default"]) == 0
    assert "0 run(s) added, 2 already cached (identical)" in capsys.readouterr().out


def test_a_different_cached_run_is_refused_unless_forced(teacher, archives, student, capsys):
    key = teacher_keys(teacher)[0]
    assert unpack_cli(archives["default"]) == 0
    metrics = student / key / "metrics.json"
    theirs = json.loads(metrics.read_text())
    mine = dict(theirs, seconds=theirs["seconds"] + 1)
    metrics.write_text(json.dumps(mine))
    others = {p.name: p.read_bytes() for p in (student / key).iterdir()}
    capsys.readouterr()
    assert unpack_cli(archives["default"]) == 2
    err = capsys.readouterr().err
    assert key in err and "different content" in err and "--force" in err
    assert {p.name: p.read_bytes() for p in (student / key).iterdir()} == others
    assert unpack_cli(archives["default"], "--force") == 0
    assert "1 replaced" in capsys.readouterr().out
    assert metrics.read_bytes() == (teacher / key / "metrics.json").read_bytes()
    assert not [p for p in student.iterdir() if p.name.startswith(".unpack")]
