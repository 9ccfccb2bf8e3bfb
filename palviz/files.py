"""Where palviz keeps things, and how it writes them.

Notebooks run with the working directory in ``notebooks/`` and the CLI from the project
root, so every folder is resolved against the *project root*: ``$PALVIZ_ROOT``, else the first
directory, from the working directory upwards, that holds both ``pyproject.toml`` and
``notebooks/``, else the checkout the installed package lives in, so that a command behaves
the same from any folder (:func:`project_root`). Each folder can be overridden by an
environment variable:

=================  ====================  ==========================================
folder             variable              holds
=================  ====================  ==========================================
``data/``          ``PALVIZ_DATA``       datasets (generated or downloaded)
``runs/``          ``PALVIZ_RUNS``       the run cache
``figures/``       ``PALVIZ_FIGURES``    figures written by ``savefig``
``build/``         ``PALVIZ_BUILD``      executed notebooks (.ipynb, .html)
``.cache/``        ``PALVIZ_CACHE``      numba's compiled functions and other caches
                                         (``umap/<key>/``: the UMAP coordinates of
                                         a run whose folder is read-only)
=================  ====================  ==========================================

Writes that must never be seen half-done
(caches, checkpoints, JSON results) go through :func:`atomic_write`.

A write the file system refuses raises a :class:`StorageError` whose message is one line: the
path, what is wrong and what to do. :class:`DiskFullError` when the disk is full (``ENOSPC``,
a quota, or ``torch.save``'s ``RuntimeError`` from a full disk; the temporary file is removed,
what was there before stays), :class:`ReadOnlyError` when the folder is read-only or not
writable (:func:`require_writable` checks a folder before work starts).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from palviz.checks import check_choice

PROFILES = ("smoke", "quick", "full", "paper")
"""The sizes of every notebook: ``smoke`` (seconds, for tests), ``quick`` (a laptop CPU,
embedded data, the default: the headline comparisons), ``full`` (the same data and per-run
size as ``quick`` with the full method grids: an hour or two on two CPU cores) and ``paper``
(the published set-ups, for a GPU)."""


def size_of(profile: str) -> str:
    """The size a notebook without a method grid uses in ``profile``: ``full`` only widens the
    method grids of the experiment notebooks, so everything else runs at ``quick``'s size."""
    profile = resolve_profile(profile)
    return "quick" if profile == "full" else profile


def resolve_profile(profile: str | None = None, *, name: str = "profile") -> str:
    """``profile`` if given, else ``$PALVIZ_PROFILE``, else ``"quick"``; validated: a value
    that is not one of :data:`PROFILES` raises ``ValueError`` naming where it came from
    (``name``, e.g. ``"--profile"``, or ``PALVIZ_PROFILE``), the value and the profiles. The
    one place every command, notebook and function resolves a profile."""
    if profile is None:
        value = os.environ.get("PALVIZ_PROFILE")
        return check_choice("PALVIZ_PROFILE", value, PROFILES) if value else "quick"
    return check_choice(name, profile, PROFILES)


class ProjectNotFound(RuntimeError):
    """No project root: not in a checkout, the package not installed from one, and no
    ``$PALVIZ_ROOT``."""


def is_checkout(folder: Path) -> bool:
    """Whether ``folder`` is a palviz project: it holds ``pyproject.toml`` and ``notebooks/``."""
    return (folder / "pyproject.toml").is_file() and (folder / "notebooks").is_dir()


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The project root: ``$PALVIZ_ROOT``, else the nearest checkout upwards from ``start``
    (default: the working directory), else the checkout the installed package lives in (so
    every command behaves the same from any folder); else :class:`ProjectNotFound`, naming
    ``PALVIZ_ROOT``."""
    env = os.environ.get("PALVIZ_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    here = Path(start or os.getcwd()).resolve()
    installed = Path(__file__).resolve().parents[1]
    for folder in (here, *here.parents, installed):
        if is_checkout(folder):
            return folder
    raise ProjectNotFound(
        f"no palviz project in {here} or above it, and the installed package ({installed})"
        " is not in one: set PALVIZ_ROOT to the project folder (the one that holds"
        " pyproject.toml and notebooks/)"
    )


#: The folders of the table above: the variable that moves each, and its name in the root.
FOLDERS = {
    "PALVIZ_DATA": "data",
    "PALVIZ_RUNS": "runs",
    "PALVIZ_FIGURES": "figures",
    "PALVIZ_BUILD": "build",
    "PALVIZ_CACHE": ".cache",
}


def _folder(variable: str) -> Path:
    env = os.environ.get(variable)
    return Path(env).expanduser().resolve() if env else project_root() / FOLDERS[variable]


def data_dir() -> Path:
    """Where datasets land (``data/``)."""
    return _folder("PALVIZ_DATA")


def runs_dir() -> Path:
    """The run cache (``runs/``)."""
    return _folder("PALVIZ_RUNS")


def figures_base() -> Path:
    """The ``figures/`` folder itself, which holds every profile's figures."""
    return _folder("PALVIZ_FIGURES")


def figures_dir(profile: str = "quick", base: str | os.PathLike | None = None) -> Path:
    """Where figures go: ``figures/`` for ``quick``; ``smoke``, ``full`` and ``paper``
    figures go to ``figures/<profile>/``, so a test run never overwrites the figures a person
    looks at. ``base`` stands in for ``figures/`` (e.g. a staging folder)."""
    profile = resolve_profile(profile)
    base = figures_base() if base is None else Path(base)
    return base if profile == "quick" else base / profile


def build_dir() -> Path:
    """Executed copies of the notebooks (``build/``)."""
    return _folder("PALVIZ_BUILD")


def cache_dir() -> Path:
    """Other caches, e.g. numba's compiled functions (``.cache/``)."""
    return _folder("PALVIZ_CACHE")


def folder_of(path: str | os.PathLike) -> tuple[str, Path] | None:
    """The palviz folder holding ``path``: its variable (``"PALVIZ_RUNS"``, ...) and where it
    is now; ``None`` for a path outside all of them."""
    path = Path(os.path.abspath(path))
    found = []
    for variable in FOLDERS:
        base = _folder(variable)
        if path == base or base in path.parents:
            found.append((len(base.parts), variable, base))
    if not found:
        return None
    _, variable, base = max(found)
    return variable, base


# ------------------------------------------------------------------ refused writes


class StorageError(OSError):
    """A write the file system refused. ``str()`` is one line: the path, what is wrong and
    what to do (``filename`` is the path, ``errno`` the system's code)."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


class DiskFullError(StorageError):
    """No space left on the disk of a file palviz writes (``ENOSPC`` or a disk quota)."""


class ReadOnlyError(StorageError):
    """A folder palviz writes into is read-only, or not writable by this user."""


_FULL = (errno.ENOSPC, errno.EDQUOT)
_NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)
#: Less free space than this after a failed ``torch.save`` counts as a full disk (the temp
#: file still holds what fitted, so a full disk shows as full).
NEARLY_FULL_BYTES = 1 << 20


def _errno_of(err: BaseException) -> int | None:
    """The ``errno`` of ``err`` or of the exceptions it was raised from (torch's writer raises
    a ``RuntimeError`` while handling the ``OSError`` of a failed write)."""
    seen = 0
    while err is not None and seen < 8:
        if isinstance(err, OSError) and err.errno is not None:
            return err.errno
        err = err.__cause__ or err.__context__
        seen += 1
    return None


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_bytes(path: str | os.PathLike) -> int | None:
    """Bytes free for this user on the disk of ``path`` (or of its nearest existing folder)."""
    try:
        return shutil.disk_usage(_existing(Path(os.path.abspath(path)))).free
    except OSError:
        return None


def _size(n: int | None) -> str:
    if n is None:
        return "unknown space"
    if n < 1024:
        return f"{n} bytes"
    exponent = min(3, (n.bit_length() - 1) // 10)
    return f"{n / 1024**exponent:.1f} {('KB', 'MB', 'GB')[exponent - 1]}"


def _move_hint(path: Path) -> str:
    """What to do elsewhere: set the variable of the palviz folder holding ``path``."""
    found = folder_of(path)
    if found is None:
        return "write to another folder"
    variable, base = found
    return f"set {variable} to another folder (now {base})"


def disk_full_message(path: str | os.PathLike, detail: str = "") -> str:
    """The one line of a :class:`DiskFullError` of ``path``."""
    path = Path(path)
    found = folder_of(path)
    resume = ""
    if found is not None and found[0] == "PALVIZ_RUNS":
        resume = " (the run cache keeps every finished run and checkpoint: the run resumes)"
    return (
        f"the disk is full: could not write {path} ({_size(free_bytes(path.parent))} free "
        f"there){detail}. Free some space on that disk, or {_move_hint(path)}, and run the "
        f"command again{resume}"
    )


def not_writable_reason(code: int | None) -> str:
    """Why a folder refused a write, after its name: "is read-only (...)" by ``errno``."""
    if code == errno.EROFS:
        return "is read-only (a read-only file system)"
    return "is read-only for this user (permission denied)"


def read_only_message(path: str | os.PathLike, code: int = errno.EROFS) -> str:
    """The one line of a :class:`ReadOnlyError` of ``path``."""
    path = Path(path)
    return (
        f"cannot write {path}: its folder {not_writable_reason(code)}. Make it writable, or "
        f"{_move_hint(path)} on a writable disk, and run the command again"
    )


def storage_error(err: BaseException, path: str | os.PathLike) -> StorageError | None:
    """``err`` (raised while writing ``path``) as a :class:`StorageError` when the file system
    caused it, else ``None``. A ``RuntimeError`` or ``shutil.Error`` without an ``errno``
    (``torch.save``'s ``inline_container`` errors, ``shutil.copytree``'s list of errors)
    counts as a full disk when less than :data:`NEARLY_FULL_BYTES` are free there."""
    if isinstance(err, StorageError):
        return None
    code = _errno_of(err)
    if code in _FULL:
        return DiskFullError(errno.ENOSPC, disk_full_message(path), str(path))
    if code is None and isinstance(err, (RuntimeError, shutil.Error)):
        free = free_bytes(Path(path).parent)
        if free is not None and free < NEARLY_FULL_BYTES:
            detail = f" ({type(err).__name__}: {str(err).splitlines()[0][:120]})"
            return DiskFullError(errno.ENOSPC, disk_full_message(path, detail), str(path))
    if code in _NOT_WRITABLE:
        return ReadOnlyError(code, read_only_message(path, code), str(path))
    return None


@contextlib.contextmanager
def storage_errors(path: str | os.PathLike) -> Iterator[None]:
    """Raise what the block raises, but a refused write of ``path`` as a
    :class:`StorageError` (:func:`storage_error`)."""
    try:
        yield
    except BaseException as err:
        mapped = storage_error(err, path)
        if mapped is None:
            raise
        raise mapped from None


def require_writable(folder: str | os.PathLike) -> Path:
    """Make ``folder`` (and its parents) if needed and check that a file can be created in it
    (a probe file, removed at once); a :class:`StorageError` if not. Returns the folder."""
    folder = Path(folder)
    with storage_errors(folder):
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".palviz-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    return folder


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb") -> Iterator[Any]:
    """Open a temporary file next to ``path`` for writing; on success rename it over
    ``path`` (atomic on POSIX), on error delete it. Nothing half-written is ever left at
    ``path``. Yields the open file object. A full or read-only disk raises a
    :class:`StorageError` naming ``path`` (see :func:`storage_error`)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    with storage_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; give the usual permissions
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        mapped = storage_error(err, path)  # before the temp file goes: a full disk shows full
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if mapped is None:
            raise
        raise mapped from None


def setting_key(setting: Any, default: Callable[[Any], Any] | None = None) -> str:
    """16 hex digits naming ``setting`` (JSON data; ``default`` as ``json.dumps``'s) in a
    cache: the start of the SHA-256 of its JSON text, keys sorted, so equal settings share it."""
    text = json.dumps(setting, sort_keys=True, default=default)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    with atomic_write(path, "w") as handle:
        json.dump(obj, handle, indent=2, sort_keys=True)


def save_torch(path: str | os.PathLike, obj: Any) -> None:
    """``torch.save`` atomically. Load with ``torch.load(path, weights_only=True)``, so the
    object must hold only tensors, numbers, strings, lists and dicts."""
    import torch

    with atomic_write(path, "wb") as handle:
        torch.save(obj, handle)


def save_npz(path: str | os.PathLike, **arrays: Any) -> None:
    """``numpy.savez_compressed`` atomically."""
    import numpy as np

    with atomic_write(path, "wb") as handle:
        np.savez_compressed(handle, **arrays)


def publish(
    stage: str | os.PathLike,
    final: str | os.PathLike,
    merge: dict[str, Callable[[Path, Path], Any]] | None = None,
) -> list[Path]:
    """Move every file under ``stage`` to the same place under ``final``, each with one
    ``os.replace`` (a reader sees the old file or the new one, never half of one), and return
    where they went. ``stage`` must be on ``final``'s file system. A file whose path relative
    to ``stage`` is a key of ``merge`` is handed to ``merge[key](staged, target)`` instead
    (e.g. rows merged into a table that other writers share). Dot files and dot folders
    (locks, temporary files) are left behind."""
    stage, final, merge = Path(stage), Path(final), merge or {}
    moved = []
    for source in sorted(p for p in stage.rglob("*") if p.is_file()):
        relative = source.relative_to(stage)
        if any(part.startswith(".") for part in relative.parts):
            continue
        target = final / relative
        if relative.as_posix() in merge:
            merge[relative.as_posix()](source, target)
        else:
            with storage_errors(target):
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(source, target)
        moved.append(target)
    return moved
