"""Which notebooks ``palviz figures`` need not run again: :func:`notebook_inputs` hashes what a
notebook's run depends on, :func:`unchanged` compares it with what its last good run recorded
(``build/<profile>/NN_*.inputs.json``, written by :func:`palviz.cli.kernel.execute_notebook`
with the files the run wrote); :func:`palviz.cli.figures.timings_record` gives a kept
notebook the time of that run."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from palviz.files import figures_base, runs_dir

#: What a notebook's run may read beside its own file and the package: the environment
#: variables of these prefixes (``PALVIZ_FIGURES`` and ``PALVIZ_PROFILE`` are set per kernel).
_INPUT_ENV = ("PALVIZ_", "PYTHONPATH")


def notebook_inputs(path: Path, profile: str, planned: list[dict]) -> str:
    """What a run of notebook ``path`` in ``profile`` depends on, as one SHA-256: the notebook,
    every file of the palviz package, the profile, the ``PALVIZ_*`` and ``PYTHONPATH``
    variables, the installed distributions and their versions, and the ``metrics.json`` of
    each run of ``planned`` (:func:`palviz.cli.sweep.planned_runs`) that it reads, so a run
    trained again (and every retrained run has new timings) runs it again."""
    import hashlib
    from importlib import metadata

    import palviz

    digest = hashlib.sha256()
    for part in _input_parts(path, profile, planned, Path(palviz.__file__).parent, metadata):
        digest.update(part if isinstance(part, bytes) else part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _input_parts(path, profile, planned, package, metadata) -> Iterator[bytes | str]:
    yield from (path.read_bytes(), profile)
    for file in sorted(package.rglob("*")):
        if file.is_file() and "__pycache__" not in file.parts:
            yield from (file.relative_to(package).as_posix(), file.read_bytes())
    skip = ("PALVIZ_FIGURES", "PALVIZ_PROFILE")
    env = (f"{k}={v}" for k, v in os.environ.items() if k.startswith(_INPUT_ENV) and k not in skip)
    yield from sorted(env)
    yield from sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())
    for row in planned:
        if path.stem[:2] in row["notebooks"]:
            metrics = runs_dir() / row["key"] / "metrics.json"
            yield from (row["key"], metrics.read_bytes() if metrics.exists() else "not trained")


def unchanged(path: Path, out_dir: Path, inputs: str) -> bool:
    """Whether notebook ``path``'s last good run in ``out_dir`` had these ``inputs``
    (:func:`notebook_inputs`) and every file it wrote into ``figures/`` is still there: then
    running it again would give the same pages and files, and ``palviz figures`` keeps them."""
    from palviz.book import read_failure

    record = out_dir / f"{path.stem}.inputs.json"
    ran = (out_dir / path.name).exists() and record.exists()
    if not ran or read_failure(out_dir, path.stem):
        return False
    try:
        last = json.loads(record.read_text(encoding="utf-8"))
    except ValueError:
        return False
    base = figures_base()
    return last.get("inputs") == inputs and all((base / f).exists() for f in last["files"])
