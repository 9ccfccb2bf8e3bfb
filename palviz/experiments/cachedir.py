"""The run cache's folders (``runs/<key>/``, see :mod:`palviz.experiments.runcache`): what a
sound entry is (:func:`entry_problem`), moving a broken one aside to ``runs/.broken/``
(:func:`quarantine`), listing, clearing and checking the entries (:func:`list_runs`,
:func:`clear_runs`, :func:`check_runs`; the command ``palviz runs``) and whether the cache can
take new ones (:func:`check_cache_writable`). Nothing here trains.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from palviz.files import (
    ReadOnlyError,
    not_writable_reason,
    require_writable,
    runs_dir,
    storage_errors,
)

#: The arrays of ``features.npz``.
FEATURE_ARRAYS = ("features", "logits", "targets", "prototypes")


def entry_problem(folder: Path, *, thorough: bool = False) -> str | None:
    """What is wrong with the cache entry ``folder`` (``None``: nothing; a folder without
    ``metrics.json`` is an unfinished run, not a broken one, unless its checkpoint is
    unreadable).

    Checked: ``metrics.json`` parses and names the folder's key; ``features.npz`` holds its
    arrays (read with ``allow_pickle=False``); ``checkpoint.pt``, if there is one, is a
    complete archive (``thorough``: loads with ``torch.load(weights_only=True)``). A finished
    run needs no checkpoint (only resuming a run reads it; ``palviz runs pack`` leaves it out
    by default). Nothing is unpickled.
    """
    done = folder / "metrics.json"
    checkpoint = folder / "checkpoint.pt"
    if not done.exists():
        if checkpoint.exists():
            return checkpoint_problem(checkpoint, thorough=True)
        return None
    try:
        metrics = json.loads(done.read_text())
    except (ValueError, OSError) as err:
        return f"metrics.json is not readable JSON (truncated?): {err}"
    if not isinstance(metrics, dict):
        return "metrics.json does not hold a JSON object"
    if metrics.get("key") != folder.name:
        return f"metrics.json names key {metrics.get('key')!r}, its folder is {folder.name!r}"
    features = folder / "features.npz"
    if not features.exists():
        return "features.npz is missing"
    try:
        with np.load(features, allow_pickle=False) as arrays:
            missing = [name for name in FEATURE_ARRAYS if name not in arrays.files]
            if missing:
                return f"features.npz lacks {missing}"
            if thorough:
                for name in arrays.files:
                    arrays[name]  # reads every array (and checks its CRC)
    except Exception as err:  # noqa: BLE001 - any failure to read is the finding
        return f"features.npz is not readable: {type(err).__name__}: {err}"
    if not checkpoint.exists():  # a finished run is read without it (e.g. unpacked results)
        return None
    return checkpoint_problem(checkpoint, thorough=thorough)


def checkpoint_problem(path: Path, *, thorough: bool) -> str | None:
    try:
        if thorough:
            state = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(state, dict) or "model" not in state:
                return "checkpoint.pt does not hold a training checkpoint"
        else:
            with zipfile.ZipFile(path) as archive:  # a truncated archive has no directory
                archive.namelist()
    except Exception as err:  # noqa: BLE001 - any failure to read is the finding
        return f"checkpoint.pt is not readable (truncated?): {type(err).__name__}: {err}"
    return None


def _read_json(path: Path) -> dict:
    """The JSON object in ``path``; ``{}`` when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def quarantine(folder: Path, problem: str, label: str = "") -> Path:
    """Move a broken cache entry aside to ``runs/.broken/<key>-<UTC time>/`` with a warning
    naming its key, its label and what was wrong; returns where it went."""
    broken = folder.parent / ".broken"
    try:
        with storage_errors(broken):
            broken.mkdir(parents=True, exist_ok=True)
            stamp = f"{folder.name}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
            target, n = broken / stamp, 1
            while target.exists():
                n += 1
                target = broken / f"{stamp}-{n}"
            os.replace(folder, target)
    except ReadOnlyError as err:
        raise ReadOnlyError(
            err.errno,
            f"run cache entry {folder} ({label or 'no label'}) is broken: {problem}; the run "
            f"cache {folder.parent} {not_writable_reason(err.errno)}, so it cannot be moved "
            "aside and trained again. Repair the cache where it is writable (palviz runs "
            "--check --fix, then train), or set PALVIZ_RUNS to a writable copy of it",
            str(folder),
        ) from None
    label = label or _read_json(target / "spec.json").get("label", "")
    warnings.warn(
        f"run cache: entry {folder.name} ({label or 'no label'}) is broken: {problem}; "
        f"moved to {target}; it will be trained again",
        RuntimeWarning,
        stacklevel=3,
    )
    return target


def check_cache_writable(specs: Sequence[Any]) -> None:
    """Before training ``specs`` (runs the cache lacks): a
    :class:`~palviz.files.ReadOnlyError` naming the run cache and what to do when it cannot
    take new entries (a read-only mount, another user's folder), so nothing starts; a full
    disk there raises :class:`~palviz.files.DiskFullError`."""
    root = runs_dir()
    try:
        require_writable(root / ".locks")
    except ReadOnlyError as err:
        labels = ", ".join(f"{s.label or s.loss} {s.key()}" for s in specs[:3])
        more = f" and {len(specs) - 3} more" if len(specs) > 3 else ""
        raise ReadOnlyError(
            err.errno,
            f"the run cache {root} {not_writable_reason(err.errno)}, and {len(specs)} run(s) "
            f"asked for are not in it ({labels}{more}): nothing was trained. Set PALVIZ_RUNS to "
            "a writable folder (a copy of this cache, or one filled with palviz runs unpack "
            "FILE) and run the command again, or train the runs where the cache is writable",
            str(root),
        ) from None


def _entries(keys: Sequence[str] | None = None) -> list[Path]:
    """The run folders of the run cache (not ``.locks``, ``.broken`` or other dot folders),
    those of ``keys`` only when given."""
    root = runs_dir()
    if not root.exists():
        return []
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and not p.name.startswith(".") and (keys is None or p.name in keys)
    )


def list_runs() -> list[dict]:
    """Every cached run: key, label, dataset, loss, head, finished or not, size on disk."""
    rows = []
    for folder in _entries():
        spec = _read_json(folder / "spec.json")
        rows.append(
            {
                "key": folder.name,
                "label": spec.get("label", ""),
                "dataset": spec.get("dataset", "?"),
                "loss": spec.get("loss", "?"),
                "head": spec.get("head", "?"),
                "epochs": spec.get("train", {}).get("epochs"),
                "finished": (folder / "metrics.json").exists(),
                "last_acc": _read_json(folder / "metrics.json").get("last_acc"),
                "bytes": sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()),
            }
        )
    return rows


def clear_runs(keys: Sequence[str] | None = None) -> int:
    """Delete the cached runs with these keys (all when ``None``); returns how many."""
    targets = _entries(keys)
    for folder in targets:
        shutil.rmtree(folder)
    return len(targets)


def check_runs(*, fix: bool = False, keys: Sequence[str] | None = None) -> list[dict]:
    """Verify every cache entry, or those of ``keys`` (files present and readable, the
    checkpoint loaded with ``weights_only=True``, the key in ``metrics.json`` equal to the
    folder's name). Returns one row per entry: ``key``, ``label``, ``status`` (``"ok"``,
    ``"unfinished"`` or ``"broken"``), ``problem``, and for an unfinished one ``resumable`` (it
    has a checkpoint).
    ``fix=True`` moves broken entries to ``runs/.broken/`` and removes the unfinished entries
    with nothing to resume (a run that failed before its first checkpoint) that no process is
    training (their lock is free); such a row gets ``removed=True``."""
    from palviz.experiments.locks import RunLock

    rows = []
    for folder in _entries(keys):
        label = _read_json(folder / "spec.json").get("label", "")
        problem = entry_problem(folder, thorough=True)
        finished = (folder / "metrics.json").exists()
        status = "broken" if problem else ("ok" if finished else "unfinished")
        row = {"key": folder.name, "label": label, "status": status, "problem": problem}
        if problem and fix:
            with warnings.catch_warnings(action="ignore"):
                row["moved_to"] = str(quarantine(folder, problem, label))
        if status == "unfinished":
            row["resumable"] = (folder / "checkpoint.pt").exists()
            if fix and not row["resumable"]:
                lock = RunLock(folder.parent, folder.name, poll=0)
                if lock.acquire(done=lambda: True):  # False at once while a process trains it
                    try:
                        if not (folder / "checkpoint.pt").exists():
                            shutil.rmtree(folder)
                            row["removed"] = True
                    finally:
                        lock.release()
        rows.append(row)
    return rows
