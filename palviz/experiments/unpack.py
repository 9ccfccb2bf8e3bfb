"""The runs archive's format and its reading: what :mod:`palviz.experiments.pack` writes and
:func:`unpack` (``palviz runs unpack``) verifies whole before a run enters the cache.

- the format: :data:`FORMAT_NAME` and :data:`FORMAT_VERSION`, the first member
  :data:`MANIFEST`, the files a run may hold (:data:`REQUIRED_FILES`, :data:`CHECKPOINT`,
  :data:`FILE_NAME`), the limits (:data:`MAX_MEMBERS`, :data:`MAX_FILE_BYTES`,
  :data:`MAX_TOTAL_BYTES`, :data:`MAX_MANIFEST_BYTES`, checked both ways by
  :func:`check_limits`) and :class:`PackError`, the one error of both commands;
- :func:`unpack`: every member read into a staging folder inside ``runs/`` and checked
  (nothing unpickled), then each run renamed into the cache under its lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import palviz
from palviz.experiments.cachedir import FEATURE_ARRAYS
from palviz.experiments.runcache import CACHE_SCHEMA, RunSpec
from palviz.files import runs_dir

#: The version of the archive layout (``manifest.json``'s ``format_version``).
FORMAT_VERSION = 1
FORMAT_NAME = "palviz-runs"
MANIFEST = "manifest.json"

#: Limits of an archive (both ways): members besides the manifest, bytes of one file, bytes
#: of all files (uncompressed) and bytes of the manifest. The paper profile's 370 runs are
#: about 1,900 files and a few GB with their checkpoints.
MAX_MEMBERS = 20_000
MAX_FILE_BYTES = 2 * 1024**3
MAX_TOTAL_BYTES = 32 * 1024**3
MAX_MANIFEST_BYTES = 64 * 1024**2

#: The files of a run: always, and only when asked.
REQUIRED_FILES = ("spec.json", "metrics.json", "features.npz")
CHECKPOINT = "checkpoint.pt"
#: A file name an archive may hold inside a run's folder (``umap_<points>_<seed>.npz``).
FILE_NAME = re.compile(
    r"(spec\.json|metrics\.json|features\.npz|checkpoint\.pt|umap_[0-9]+_[0-9]+\.npz)"
)
KEY = re.compile(r"[0-9a-f]{16}")
UMAP_ARRAYS = ("embedding", "labels")
_CHUNK = 1 << 20


class PackError(Exception):
    """An archive that is refused (or cannot be written); ``member`` names the archive member
    (or run) at fault, when there is one."""

    def __init__(self, problem: str, member: str | None = None) -> None:
        self.problem = problem
        self.member = member
        super().__init__(f"member {member!r}: {problem}" if member else problem)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_limits(manifest: dict, manifest_bytes: int) -> None:
    """:class:`PackError` when an archive with this manifest exceeds the limits."""
    if manifest_bytes > MAX_MANIFEST_BYTES:
        raise PackError(
            f"{manifest_bytes} bytes, more than the limit of {MAX_MANIFEST_BYTES}", MANIFEST
        )
    files = [f for run in manifest["runs"] for f in run["files"]]
    if len(files) > MAX_MEMBERS:
        raise PackError(
            f"the archive holds {len(files)} files, more than the limit of {MAX_MEMBERS} "
            "(palviz.experiments.unpack.MAX_MEMBERS)"
        )
    for f in files:
        if f["size"] > MAX_FILE_BYTES:
            raise PackError(
                f"{f['size']} bytes, more than the limit of {MAX_FILE_BYTES} per file "
                "(palviz.experiments.unpack.MAX_FILE_BYTES)",
                f["path"],
            )
    total = sum(f["size"] for f in files)
    if total > MAX_TOTAL_BYTES:
        raise PackError(
            f"the archive's files add up to {total} bytes, more than the limit of "
            f"{MAX_TOTAL_BYTES} (palviz.experiments.unpack.MAX_TOTAL_BYTES)"
        )


# -- unpack ------------------------------------------------------------------------------


@dataclass
class Unpacked:
    """What :func:`unpack` did: the keys it added, those already there (identical) and those
    it replaced (``force``), and the archive's manifest."""

    manifest: dict
    added: list[str] = field(default_factory=list)
    identical: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)


def unpack(path: str | os.PathLike, *, force: bool = False) -> Unpacked:
    """Verify the archive ``path`` whole, then add its runs to the run cache.

    Checked before anything enters the cache (the first problem raises :class:`PackError`
    naming the member and the problem, and nothing is written):

    - the archive is a gzip tar whose first member is ``manifest.json``, which parses, names
      this format version, this palviz's version and
      :data:`~palviz.experiments.runcache.CACHE_SCHEMA` (else both are named), and lists valid
      keys, specs, paths, sizes and digests within the limits (:data:`MAX_MEMBERS`,
      :data:`MAX_FILE_BYTES`, :data:`MAX_TOTAL_BYTES`);
    - each run's key is the key palviz computes of its spec
      (``RunSpec.from_dict(spec).key()``), and the run has spec, metrics and features;
    - every other member is a regular file (no link, device, FIFO or folder) named
      ``<key>/<name>``: not absolute, no ``..``, a key of the manifest, a name from
      :data:`FILE_NAME`, listed in the manifest, not twice; its size and SHA-256 are the
      manifest's; and every file of the manifest is present;
    - ``spec.json`` equals the manifest's spec, ``metrics.json`` parses and names its key,
      ``features.npz`` and ``umap_*.npz`` hold their arrays (read with ``allow_pickle=False``),
      ``checkpoint.pt`` is a sound zip archive (not loaded);
    - a key already in the cache holds the same files (then it is skipped) or, unless
      ``force``, the archive is refused; with ``force`` it is replaced.

    Then each run enters the cache by renaming its verified folder into place (atomic per
    run), under the run's lock.
    """
    path = Path(path)
    root = runs_dir()
    created_root = not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=root))
    try:
        manifest = _read_archive(path, staging)
        for run in manifest["runs"]:
            key = run["key"]
            if _existing_state(root / key, run) == "different" and not force:
                raise PackError(
                    f"run {key} ({run['label'] or 'no label'}) is already in {root} with "
                    "different content; pass --force to replace it",
                    key,
                )
        result = Unpacked(manifest)
        for run in manifest["runs"]:
            done = _install(root, staging, run["key"], run, force=force)
            getattr(result, done).append(run["key"])
        return result
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if created_root:
            with contextlib.suppress(OSError):
                root.rmdir()  # only when still empty: a refused archive leaves no runs/


def _read_archive(path: Path, staging: Path) -> dict:
    """Read archive ``path`` into ``staging/<key>/``, checking every member; the manifest."""
    try:
        tar = tarfile.open(path, mode="r|gz")
    except FileNotFoundError:
        raise PackError("no such file") from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise PackError(f"not a gzip-compressed tar archive ({err})") from None
    where = None
    try:
        with tar:
            members = iter(tar)
            first = next(members, None)
            if first is None or first.name != MANIFEST:
                named = "it is empty" if first is None else f"its first member is {first.name!r}"
                raise PackError(f"no {MANIFEST} first in the archive ({named})", MANIFEST)
            manifest = _read_manifest(tar, first)
            _check_free_space(staging, manifest)
            expected = {f["path"]: f for run in manifest["runs"] for f in run["files"]}
            found: set[str] = set()
            for count, member in enumerate(members, start=1):
                where = member.name
                if count > MAX_MEMBERS:
                    raise PackError(
                        f"the archive has more than {MAX_MEMBERS} members"
                        " (palviz.experiments.unpack.MAX_MEMBERS)"
                    )
                entry = _check_member(member, expected, found)
                if entry is None:
                    continue
                _stage(tar, member, entry, staging)
                found.add(member.name)
            where = None
    except PackError:
        raise
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise PackError(f"the archive is truncated or corrupt ({err})", where) from None
    absent = sorted(set(expected) - found)
    if absent:
        raise PackError(
            f"listed in {MANIFEST} but not in the archive"
            + (f" (and {len(absent) - 1} more)" if len(absent) > 1 else ""),
            absent[0],
        )
    for run in manifest["runs"]:
        _check_run(staging / run["key"], run)
    return manifest


def _check_free_space(folder: Path, manifest: dict) -> None:
    total = sum(f["size"] for run in manifest["runs"] for f in run["files"])
    free = shutil.disk_usage(folder).free
    if total > free:
        raise PackError(
            f"its runs take {total / 1e6:.1f} MB, {folder.parent} has {free / 1e6:.1f} MB free"
        )


def _read_manifest(tar: tarfile.TarFile, member: tarfile.TarInfo) -> dict:
    if not member.isreg():
        raise PackError(f"not a regular file ({_kind(member)})", MANIFEST)
    if member.size > MAX_MANIFEST_BYTES:
        raise PackError(
            f"{member.size} bytes, more than the limit of {MAX_MANIFEST_BYTES}", MANIFEST
        )
    handle = tar.extractfile(member)
    assert handle is not None  # a regular file
    try:
        manifest = json.loads(handle.read().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise PackError(f"not readable JSON ({err})", MANIFEST) from None
    _check_manifest(manifest)
    check_limits(manifest, member.size)
    return manifest


def _check_manifest(m: Any) -> None:
    """The manifest's own checks: its fields, this palviz's format, version and schema, and
    the keys of the specs it lists."""

    def bad(problem: str) -> PackError:
        return PackError(problem, MANIFEST)

    if not isinstance(m, dict) or m.get("format") != FORMAT_NAME:
        raise bad(f'not a palviz runs manifest (no "format": {FORMAT_NAME!r})')
    if m.get("format_version") != FORMAT_VERSION:
        raise bad(
            f"archive format version {m.get('format_version')!r}; this palviz reads "
            f"version {FORMAT_VERSION}"
        )
    if m.get("cache_schema") != CACHE_SCHEMA:
        raise bad(
            f"the archive's cache schema is {m.get('cache_schema')!r}, this palviz's "
            f"CACHE_SCHEMA is {CACHE_SCHEMA}: its runs are not results this palviz reads"
        )
    if m.get("palviz") != palviz.__version__:
        raise bad(
            f"the archive was packed by palviz {m.get('palviz')!r}, this is palviz "
            f"{palviz.__version__}: the cache keys hash the version, so none of its runs "
            "would be read"
        )
    if not isinstance(m.get("profile"), str) or not _strings(m.get("notebooks")):
        raise bad('"profile" must be a string and "notebooks" a list of strings')
    runs, missing = m.get("runs"), m.get("missing")
    if not isinstance(runs, list) or not isinstance(missing, list):
        raise bad('"runs" and "missing" must be lists')
    for i, about in enumerate([*runs, *missing]):
        if not (
            isinstance(about, dict)
            and isinstance(about.get("key"), str)
            and KEY.fullmatch(about["key"])
            and isinstance(about.get("label"), str)
            and _strings(about.get("notebooks"))
        ):
            where = f"runs[{i}]" if i < len(runs) else f"missing[{i - len(runs)}]"
            raise bad(f"{where} is not an object with a 16-hex key, a label and notebooks")
    keys: set[str] = set()
    paths: set[str] = set()
    for run in runs:
        key = run["key"]
        if key in keys:
            raise bad(f"key {key} is listed twice")
        keys.add(key)
        spec = run.get("spec")
        try:
            computed = RunSpec.from_dict(spec).key()
        except (TypeError, ValueError) as err:
            raise bad(f"run {key}: its spec is not a valid RunSpec ({err})") from None
        if computed != key:
            raise bad(f"run {key}: its spec has key {computed}, not {key}")
        files = run.get("files")
        if not isinstance(files, list):
            raise bad(f'run {key}: "files" must be a list')
        names = set()
        for f in files:
            if not (
                isinstance(f, dict)
                and isinstance(f.get("path"), str)
                and isinstance(f.get("size"), int)
                and not isinstance(f.get("size"), bool)
                and f["size"] >= 0
                and isinstance(f.get("sha256"), str)
                and re.fullmatch(r"[0-9a-f]{64}", f["sha256"])
            ):
                raise bad(f"run {key}: a file entry is not {{path, size >= 0, sha256}}: {f!r}")
            folder, _, name = f["path"].partition("/")
            if folder != key or not FILE_NAME.fullmatch(name):
                raise bad(f"run {key}: file {f['path']!r} is not {key}/<a run's file name>")
            if f["path"] in paths:
                raise bad(f"file {f['path']!r} is listed twice")
            paths.add(f["path"])
            names.add(name)
        lacking = [n for n in REQUIRED_FILES if n not in names]
        if lacking:
            raise bad(f"run {key} lacks {lacking}")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return f"a symbolic link to {member.linkname!r}"
    if member.islnk():
        return f"a hard link to {member.linkname!r}"
    if member.isdir():
        return "a folder"
    if member.ischr() or member.isblk():
        return "a device"
    if member.isfifo():
        return "a FIFO"
    if member.issparse():
        return "a sparse file"
    return f"tar type {member.type!r}"


def _check_member(member: tarfile.TarInfo, expected: dict, found: set[str]) -> dict | None:
    """The manifest entry of archive member ``member`` after checking its path and type
    (``None``: a plain folder ``<key>`` some tar tools add, skipped)."""
    name = member.name
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name):
        raise PackError("an absolute path", name)
    if ".." in parts:
        raise PackError("a path that leaves its folder ('..')", name)
    keys = {p.partition("/")[0] for p in expected}
    if member.isdir() and name.rstrip("/") in keys:
        return None
    if not member.isreg() or member.issparse():
        raise PackError(f"not a regular file ({_kind(member)})", name)
    if len(parts) != 2 or not KEY.fullmatch(parts[0]) or "\\" in name:
        raise PackError("not <key>/<file> (a run's folder and one of its files)", name)
    if parts[0] not in keys:
        raise PackError(f"key {parts[0]} is not one of the manifest's runs", name)
    if not FILE_NAME.fullmatch(parts[1]):
        raise PackError(
            f"{parts[1]!r} is not a file of a run (spec.json, metrics.json, features.npz, "
            "umap_<points>_<seed>.npz, checkpoint.pt)",
            name,
        )
    if name in found:
        raise PackError("appears twice in the archive", name)
    entry = expected.get(name)
    if entry is None:
        raise PackError(f"not listed in {MANIFEST}", name)
    if member.size != entry["size"]:
        raise PackError(f"{member.size} bytes, the manifest says {entry['size']}", name)
    return entry


def _stage(tar: tarfile.TarFile, member: tarfile.TarInfo, entry: dict, staging: Path) -> None:
    """Copy the member into ``staging``, checking its SHA-256 on the way."""
    target = staging / member.name
    target.parent.mkdir(exist_ok=True)
    source = tar.extractfile(member)
    assert source is not None
    digest = hashlib.sha256()
    size = 0
    with open(target, "xb") as out:
        for chunk in iter(lambda: source.read(_CHUNK), b""):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    if size != entry["size"]:
        raise PackError(f"{size} bytes read, the manifest says {entry['size']}", member.name)
    if digest.hexdigest() != entry["sha256"]:
        raise PackError("its SHA-256 differs from the manifest's (changed or damaged)", member.name)
    os.utime(target, (member.mtime, member.mtime))


def _check_run(folder: Path, run: dict) -> None:
    """The content checks of one staged run (nothing unpickled)."""
    key = run["key"]
    where = f"{key}/spec.json"
    try:
        spec = json.loads((folder / "spec.json").read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise PackError(f"not readable JSON ({err})", where) from None
    if spec != run["spec"]:
        raise PackError(f"differs from the spec {MANIFEST} lists for {key}", where)
    where = f"{key}/metrics.json"
    try:
        metrics = json.loads((folder / "metrics.json").read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise PackError(f"not readable JSON ({err})", where) from None
    if not isinstance(metrics, dict) or metrics.get("key") != key:
        named = metrics.get("key") if isinstance(metrics, dict) else None
        raise PackError(f"names key {named!r}, its folder is {key}", where)
    for file in sorted(folder.iterdir()):
        where = f"{key}/{file.name}"
        if file.suffix == ".npz":
            wanted = FEATURE_ARRAYS if file.name == "features.npz" else UMAP_ARRAYS
            try:
                with np.load(file, allow_pickle=False) as arrays:
                    lacking = [n for n in wanted if n not in arrays.files]
                    for name in arrays.files:
                        arrays[name]  # reads every array (and checks its CRC)
            except Exception as err:  # noqa: BLE001 - any failure to read is the finding
                raise PackError(
                    f"not a readable array file: {type(err).__name__}: {err}", where
                ) from None
            if lacking:
                raise PackError(f"lacks the arrays {lacking}", where)
        elif file.name == CHECKPOINT:
            try:
                with zipfile.ZipFile(file) as archive:
                    bad = archive.testzip()
            except (zipfile.BadZipFile, OSError) as err:
                raise PackError(f"not a torch checkpoint archive ({err})", where) from None
            if bad is not None:
                raise PackError(f"its entry {bad!r} is damaged (CRC)", where)


def _existing_state(existing: Path, run: dict) -> str:
    """``"absent"``, ``"identical"`` (every file of the archive's run is there, byte for byte)
    or ``"different"``: the cache's entry of a run against the archive's."""
    if not existing.exists() and not existing.is_symlink():
        return "absent"
    if existing.is_symlink() or not existing.is_dir():
        return "different"
    for entry in run["files"]:
        name = entry["path"].partition("/")[2]
        mine = existing / name
        if not mine.is_file() or mine.stat().st_size != entry["size"]:
            return "different"
        if sha256_of(mine) != entry["sha256"]:
            return "different"
    return "identical"


def _install(root: Path, staging: Path, key: str, run: dict, *, force: bool) -> str:
    """Move the staged run ``key`` into the cache under its lock; what was done."""
    from palviz.experiments.locks import RunLock

    with RunLock(root, key):
        target = root / key
        state = _existing_state(target, run)  # again, under the lock
        if state == "identical":
            return "identical"
        if state == "different":
            if not force:
                raise PackError(
                    f"run {key} entered {root} with different content while unpacking; "
                    "the runs before it were added",
                    key,
                )
            old = staging / f".replaced-{key}"
            os.replace(target, old)
            os.replace(staging / key, target)
            return "replaced"
        os.replace(staging / key, target)
        return "added"
