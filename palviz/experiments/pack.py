"""Cached runs as one archive, to hand out: :func:`pack` and :func:`unpack` (the commands
``palviz runs pack`` and ``palviz runs unpack``).

A teacher trains a profile once on a GPU and packs the runs its notebooks read; students
unpack the file into their own ``runs/`` and execute the notebooks without training.

The archive is a gzip-compressed tar of run folders, ``<key>/spec.json``, ``metrics.json``,
``features.npz``, ``umap_*.npz`` and, only when asked, ``checkpoint.pt``, beside one small
member :data:`MANIFEST`: palviz's version and
:data:`~palviz.experiments.runspec.CACHE_SCHEMA` (a run's key hashes both, so another
version's runs would never be read), the profile, the notebooks, the keys of the runs it
holds, and the planned runs that were not cached (``missing``).

:func:`unpack` extracts with ``tarfile``'s ``"data"`` filter (no absolute path, no member
leaving the folder, no link out of it, no device), into a dot folder inside ``runs/`` that the
cache ignores; only then does each run enter the cache, by one rename of its folder under the
run's lock. The runs it added are then checked as ``palviz runs --check`` checks the cache
(:func:`~palviz.experiments.cachedir.check_runs`).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import tarfile
import tempfile
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import palviz
from palviz.experiments.runspec import CACHE_SCHEMA
from palviz.files import atomic_write, require_writable, runs_dir, storage_errors

MANIFEST = "manifest.json"
CHECKPOINT = "checkpoint.pt"
KEY = re.compile(r"[0-9a-f]{16}")


class PackError(Exception):
    """An archive that cannot be written, or is refused (nothing entered the cache)."""


def default_name(profile: str) -> str:
    """The archive's file name when none is given: ``palviz-runs-<profile>.tar.gz``."""
    return f"palviz-runs-{profile}.tar.gz"


def pack(
    path: str | os.PathLike,
    rows: Iterable[dict],
    *,
    profile: str,
    notebooks: Sequence[str] = (),
    with_checkpoints: bool = False,
) -> dict:
    """Write the cached runs of ``rows`` (the distinct runs of
    :func:`palviz.experiments.plan.plan`: ``key``, ``spec``, ``notebooks``, and ``cached`` as
    :func:`palviz.cli.sweep.planned_runs` adds it) into the archive ``path``,
    atomically (an interrupted pack leaves no file at ``path``). Rows not cached are listed
    in the manifest's ``missing``; returns the manifest. :class:`PackError` when none is
    cached."""
    path, root = Path(path), runs_dir()
    if path.is_dir():
        raise PackError(f"-o/--output {str(path)!r} is a folder; give the archive's file name")
    rows = list(rows)
    runs = [row["key"] for row in rows if row["cached"]]
    missing = [
        {"key": row["key"], "label": row["spec"].label, "notebooks": row["notebooks"]}
        for row in rows
        if not row["cached"]
    ]
    if not runs:
        raise PackError(
            f"no planned run of profile {profile!r} is cached in {root} "
            f"({len(missing)} planned); train them first, e.g. palviz sweep --profile {profile}"
        )
    manifest = {
        "palviz": palviz.__version__,
        "cache_schema": CACHE_SCHEMA,
        "profile": profile,
        "notebooks": list(notebooks),
        "runs": runs,
        "missing": missing,
    }
    text = json.dumps(manifest, indent=1).encode()
    info = tarfile.TarInfo(MANIFEST)
    info.size, info.mtime = len(text), int(time.time())

    def carried(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
        name = Path(member.name).name  # a half-written ``.*.tmp`` file stays behind
        if name.startswith(".") or (name == CHECKPOINT and not with_checkpoints):
            return None
        member.uid, member.gid, member.uname, member.gname = 0, 0, "", ""
        return member

    with atomic_write(path, "wb") as handle, tarfile.open(fileobj=handle, mode="w:gz") as tar:
        tar.addfile(info, io.BytesIO(text))
        for key in runs:
            tar.add(root / key, arcname=key, filter=carried)
    return manifest


@dataclass
class Unpacked:
    """What :func:`unpack` did: the keys it added, those already cached and kept as they
    were, and those it replaced (``force``); the manifest; the rows of
    :func:`~palviz.experiments.cachedir.check_runs` for the runs it added or replaced."""

    manifest: dict
    added: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    check: list[dict] = field(default_factory=list)


def unpack(path: str | os.PathLike, *, force: bool = False) -> Unpacked:
    """Add the runs of the archive ``path`` (one of :func:`pack`) to the run cache. A run
    already cached is kept as it is, unless ``force`` replaces it. :class:`PackError`, with
    nothing written to the cache, when ``path`` is not such an archive."""
    from palviz.experiments.cachedir import check_runs
    from palviz.experiments.locks import RunLock

    def refused(problem: str) -> PackError:
        return PackError(
            f"FILE {str(path)!r} {problem}; FILE must be a .tar.gz written by `palviz runs "
            f"pack` of palviz {palviz.__version__} (cache schema {CACHE_SCHEMA})"
        )

    root = runs_dir()
    if not Path(path).is_file():
        raise refused("does not exist" if not Path(path).exists() else "is not a file")
    try:
        with tarfile.open(path, "r:gz") as tar:
            manifest = None
            with contextlib.suppress(KeyError, AttributeError, ValueError):  # absent, not a file
                manifest = json.loads(tar.extractfile(MANIFEST).read())
            runs = manifest.get("runs") if isinstance(manifest, dict) else None
            if not isinstance(runs, list) or not all(KEY.fullmatch(str(k)) for k in runs):
                raise refused(f"holds no {MANIFEST} listing its runs' keys")
            made = (manifest.get("palviz"), manifest.get("cache_schema"))
            if made != (palviz.__version__, CACHE_SCHEMA):
                raise refused(f"was packed by palviz {made[0]} (cache schema {made[1]})")
            require_writable(root)  # a read-only cache: one clear error
            with tempfile.TemporaryDirectory(prefix=".unpack-", dir=root) as staging:
                try:
                    with storage_errors(root):  # a full disk: one clear error
                        tar.extractall(staging, filter="data")
                except tarfile.FilterError as err:
                    raise refused(
                        f"holds {err.tarinfo.name!r}, which tarfile's data filter refuses: {err}"
                    ) from None
                found = {p.name for p in Path(staging).iterdir()} - {MANIFEST}
                if found != set(runs) or len(runs) != len(found):  # each run once
                    raise refused(f"holds {sorted(found)}, not the runs {MANIFEST} lists {runs}")
                done = Unpacked(manifest)
                for key in runs:
                    with RunLock(root, key):
                        target = root / key
                        there = target.exists()
                        if there and not force:
                            done.kept.append(key)
                            continue
                        if there:  # the old folder goes with the staging folder
                            os.replace(target, Path(staging) / f".replaced-{key}")
                        os.replace(Path(staging) / key, target)
                        (done.replaced if there else done.added).append(key)
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise refused(f"is not a complete gzip-compressed tar archive ({err})") from None
    done.check = check_runs(keys=[*done.added, *done.replaced])
    return done
