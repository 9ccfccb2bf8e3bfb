"""Where palviz keeps things, and how it writes them.

Notebooks run with the working directory in ``notebooks/`` and the CLI from the project
root, so every folder is resolved against the *project root*: the first directory, from the
working directory upwards, that holds both ``pyproject.toml`` and ``notebooks/``. Each folder
can be overridden by an environment variable:

=================  ====================  ==========================================
folder             variable              holds
=================  ====================  ==========================================
``data/``          ``PALVIZ_DATA``       datasets (generated or downloaded)
``runs/``          ``PALVIZ_RUNS``       the run cache
``figures/``       ``PALVIZ_FIGURES``    figures written by ``savefig``
``build/``         ``PALVIZ_BUILD``      executed notebooks (.ipynb, .html)
``.cache/``        ``PALVIZ_CACHE``      numba's compiled functions and other caches
=================  ====================  ==========================================

``PALVIZ_ROOT`` overrides the root itself. Writes that must never be seen half-done
(caches, checkpoints, JSON results) go through :func:`atomic_write`.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
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


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The project root: ``$PALVIZ_ROOT``, else the nearest folder upwards from ``start``
    (default: the working directory) holding ``pyproject.toml`` and ``notebooks/``, else
    the working directory itself."""
    env = os.environ.get("PALVIZ_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() and (folder / "notebooks").is_dir():
            return folder
    return here


def _folder(variable: str, name: str) -> Path:
    env = os.environ.get(variable)
    return Path(env).expanduser().resolve() if env else project_root() / name


def data_dir() -> Path:
    """Where datasets land (``data/``)."""
    return _folder("PALVIZ_DATA", "data")


def runs_dir() -> Path:
    """The run cache (``runs/``)."""
    return _folder("PALVIZ_RUNS", "runs")


def figures_dir(profile: str = "quick") -> Path:
    """Where figures go: ``figures/`` for ``quick``; ``smoke``, ``full`` and ``paper``
    figures go to ``figures/<profile>/``, so a test run never overwrites the figures a person
    looks at."""
    profile = resolve_profile(profile)
    base = _folder("PALVIZ_FIGURES", "figures")
    return base if profile == "quick" else base / profile


def build_dir() -> Path:
    """Executed copies of the notebooks (``build/``)."""
    return _folder("PALVIZ_BUILD", "build")


def cache_dir() -> Path:
    """Other caches, e.g. numba's compiled functions (``.cache/``)."""
    return _folder("PALVIZ_CACHE", ".cache")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb") -> Iterator[Any]:
    """Open a temporary file next to ``path`` for writing; on success rename it over
    ``path`` (atomic on POSIX), on error delete it. Nothing half-written is ever left at
    ``path``. Yields the open file object."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


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
