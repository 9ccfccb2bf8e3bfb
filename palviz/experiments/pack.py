"""Cached runs as one archive, to hand out: :func:`pack` and :func:`unpack` (the commands
``palviz runs pack`` and ``palviz runs unpack``).

A teacher trains a profile once on a GPU and packs the runs its notebooks read; students
unpack the file into their own ``runs/`` and execute the notebooks without training.

The archive is a gzip-compressed tar. Its first member, ``manifest.json``, holds the format
version, palviz's version, :data:`palviz.experiments.runcache.CACHE_SCHEMA`, the profile, the
notebooks, and for every run its key, its spec (the content of its ``spec.json``; a toy run's
says so), the notebooks that ask for it and, for each of its files, the path
``<key>/<name>``, the size in bytes and the SHA-256. Planned runs that were not cached are
listed under ``missing``. The other members are those files, nothing else: ``spec.json``,
``metrics.json``, ``features.npz``, ``umap_*.npz`` and, only when asked, ``checkpoint.pt``.

:func:`unpack` trusts nothing in the archive. Every member is read into a staging folder
inside ``runs/`` (a dot folder, which the cache ignores) and checked before any run lands in
the cache: see :func:`unpack` for the list. Nothing is unpickled: JSON is parsed, ``.npz`` files
are opened with ``allow_pickle=False`` and a checkpoint is only checked as a zip archive (its
CRCs), never loaded. Each run then enters the cache by one rename of its folder.

Archives beyond :data:`~palviz.experiments.unpack.MAX_MEMBERS` members, a file beyond
:data:`~palviz.experiments.unpack.MAX_FILE_BYTES` or a total beyond
:data:`~palviz.experiments.unpack.MAX_TOTAL_BYTES` (uncompressed), or a manifest beyond
:data:`~palviz.experiments.unpack.MAX_MANIFEST_BYTES`, are refused by both :func:`pack` and
:func:`unpack`. The format (its constants, limits and :class:`PackError`) and the reading
are :mod:`palviz.experiments.unpack`; this module writes archives.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import palviz
from palviz.experiments.runcache import CACHE_SCHEMA, RunSpec
from palviz.experiments.unpack import (
    CHECKPOINT,
    FILE_NAME,
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST,
    REQUIRED_FILES,
    PackError,
    check_limits,
    sha256_of,
)
from palviz.files import atomic_write, runs_dir

#: The names of ``palviz runs pack`` and ``unpack``: this module's, and those of
#: :mod:`palviz.experiments.unpack` the command reaches here.


def default_name(profile: str) -> str:
    """The archive's file name when none is given: ``palviz-runs-<profile>.tar.gz``."""
    return f"palviz-runs-{profile}.tar.gz"


def run_files(folder: Path, *, with_checkpoints: bool = False) -> list[Path]:
    """The files of cache entry ``folder`` an archive carries, in a fixed order: spec,
    metrics, features, the UMAP embeddings and (``with_checkpoints``) the checkpoint."""
    names = [*REQUIRED_FILES, *sorted(p.name for p in folder.glob("umap_*.npz"))]
    if with_checkpoints and (folder / CHECKPOINT).is_file():
        names.append(CHECKPOINT)
    return [folder / n for n in names if FILE_NAME.fullmatch(n) and (folder / n).is_file()]


@dataclass
class Packed:
    """What :func:`pack` wrote: the archive, its manifest, and its size in bytes."""

    path: Path
    manifest: dict
    bytes: int

    @property
    def runs(self) -> list[dict]:
        return self.manifest["runs"]

    @property
    def missing(self) -> list[dict]:
        return self.manifest["missing"]


def pack(
    path: str | os.PathLike,
    rows: Iterable[dict],
    *,
    profile: str,
    notebooks: Sequence[str] = (),
    with_checkpoints: bool = False,
) -> Packed:
    """Write the cached runs of ``rows`` (rows of :func:`palviz.experiments.plan.plan`: ``spec``,
    ``notebooks`` and ``cached``, as ``palviz plan`` has them) into the archive ``path``,
    atomically (an interrupted pack leaves no file at ``path``). Rows not cached are listed
    in the manifest's ``missing``; :class:`PackError` when none is cached or the archive would
    exceed the limits."""
    from palviz.experiments.runcache import is_cached

    root = runs_dir()
    runs: list[dict] = []
    missing: list[dict] = []
    seen: set[str] = set()
    for row in rows:
        spec: RunSpec = row["spec"]
        key = spec.key()
        if key in seen:
            continue
        seen.add(key)
        about = {"key": key, "label": spec.label, "notebooks": list(row.get("notebooks", []))}
        cached = row["cached"] if "cached" in row else is_cached(spec)
        if not cached:
            missing.append(about)
            continue
        folder = root / key
        files = []
        for file in run_files(folder, with_checkpoints=with_checkpoints):
            size = file.stat().st_size
            files.append({"path": f"{key}/{file.name}", "size": size, "sha256": sha256_of(file)})
        stored = json.loads((folder / "spec.json").read_text())
        runs.append({**about, "spec": stored, "files": files})
    if not runs:
        raise PackError(
            f"no planned run of profile {profile!r} is cached in {root} "
            f"({len(missing)} planned); train them first, e.g. palviz sweep --profile {profile}"
        )
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "palviz": palviz.__version__,
        "cache_schema": CACHE_SCHEMA,
        "profile": profile,
        "notebooks": list(notebooks),
        "with_checkpoints": bool(with_checkpoints),
        "created_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "runs": runs,
        "missing": missing,
    }
    text = json.dumps(manifest, indent=1, sort_keys=True).encode()
    check_limits(manifest, len(text))
    path = Path(path)
    with atomic_write(path, "wb") as handle:
        with tarfile.open(
            fileobj=handle, mode="w:gz", compresslevel=6, format=tarfile.PAX_FORMAT
        ) as tar:
            tar.addfile(_member(MANIFEST, len(text)), _Reader(_bytes_io(text)))
            for run in runs:
                for entry in run["files"]:
                    _add_file(tar, root / entry["path"], entry)
    return Packed(path, manifest, path.stat().st_size)


def _member(name: str, size: int, mtime: float | None = None) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    info.mtime = int(mtime if mtime is not None else datetime.datetime.now().timestamp())
    info.uname = info.gname = ""
    return info


def _bytes_io(data: bytes) -> IO[bytes]:
    import io

    return io.BytesIO(data)


class _Reader:
    """A file's bytes on their way into the archive, hashed as they pass."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self.handle.read(n)
        self.digest.update(data)
        return data


def _add_file(tar: tarfile.TarFile, file: Path, entry: dict) -> None:
    """Add ``file`` as member ``entry["path"]``, checking that its bytes are still those the
    manifest names (a file rewritten while packing would otherwise make a refused archive)."""
    with open(file, "rb") as handle:
        reader = _Reader(handle)
        try:
            tar.addfile(_member(entry["path"], entry["size"], file.stat().st_mtime), reader)
        except OSError as err:
            raise PackError(f"changed while packing ({err})", entry["path"]) from None
    if reader.digest.hexdigest() != entry["sha256"]:
        raise PackError("changed while packing (its SHA-256 differs)", entry["path"])
