"""The result files of a profile, committed in ``docs/results/<profile>/``, and the check that
a fresh run reproduces them.

``palviz figures --profile P`` leaves its result files in ``figures_dir(P)``: the claims table
``claims.csv`` (notebooks 06 and 07, :mod:`palviz.experiments.claims`), the timing record
``timings.json`` (:func:`palviz.cli.figures.cmd_figures`), one row per run ``runs.csv``
(:func:`write_runs`) and the notebooks' Markdown files ``NN_<notebook>_<what>.md`` (their
result tables and claims tables). ``palviz report --profile P`` copies them into
``docs/results/P/`` (:func:`collect_results`), where docs/results.md includes them as they
are; ``palviz report --profile P --compare`` compares a fresh run's files with the committed
ones, run by run (:func:`compare_runs`, ``make check-quick``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from palviz.files import atomic_write, figures_dir, project_root

CLAIMS = "claims.csv"
TIMINGS = "timings.json"
#: One row per run the notebooks ask for (:func:`write_runs`).
RUNS = "runs.csv"
RUN_COLUMNS = (
    "key",
    "notebooks",
    "label",
    "dataset",
    "imbalance_ratio",
    "noise_kind",
    "noise_rate",
    "seed",
    "pin",
    "last_acc",
    "per_class_acc",
)
#: The Markdown files a notebook writes (:func:`palviz.plots.save_markdown`).
RESULTS_GLOB = "[0-9][0-9]_*.md"


def results_dir(profile: str, root: str | os.PathLike | None = None) -> Path:
    """``docs/results/<profile>/`` under the project root (``root``, default
    :func:`palviz.files.project_root`)."""
    return (Path(root) if root is not None else project_root()) / "docs" / "results" / profile


def result_files(folder: str | os.PathLike) -> list[Path]:
    """The result files in ``folder``: ``claims.csv``, ``timings.json``, ``runs.csv`` and every
    ``NN_*.md``, those that exist, in that order (the tables by name)."""
    folder = Path(folder)
    named = [folder / CLAIMS, folder / TIMINGS, folder / RUNS]
    return [p for p in named if p.is_file()] + sorted(
        p for p in folder.glob(RESULTS_GLOB) if p.is_file()
    )


def collect_results(
    profile: str,
    root: str | os.PathLike | None = None,
    source: str | os.PathLike | None = None,
) -> list[Path]:
    """Copy the result files of ``profile`` from ``source`` (default
    ``figures_dir(profile)``) into :func:`results_dir`, each atomically, and return the copies.

    The folder then mirrors the last run: a result file it holds that ``source`` lacks is
    removed. When ``source`` has no result file at all nothing is copied or removed (and
    ``[]`` is returned): the folder keeps what an earlier report put there."""
    source = Path(source) if source is not None else figures_dir(profile)
    found = result_files(source)
    if not found:
        return []
    target = results_dir(profile, root)
    target.mkdir(parents=True, exist_ok=True)
    names = {p.name for p in found}
    for stale in result_files(target):
        if stale.name not in names:
            stale.unlink()
    copies = []
    for path in found:
        with atomic_write(target / path.name, "wb") as handle, open(path, "rb") as src:
            shutil.copyfileobj(src, handle)
        copies.append(target / path.name)
    return copies


# ------------------------------------------------------------------------------- run by run


def write_runs(rows: list[dict], profile: str) -> Path:
    """Write ``runs.csv`` into ``figures_dir(profile)``: one row per planned run ``rows``
    (:func:`palviz.cli.sweep.planned_runs`) that is cached, :data:`RUN_COLUMNS`: its cache
    key, the notebooks that ask for it, what identifies it, the CPU pin it trained under and
    its final test accuracy and per-class accuracies as ``repr`` of the floats (every digit),
    so that two runs of a profile compare run by run (:func:`compare_runs`)."""
    import csv
    import io

    from palviz.experiments.runcache import read_cached

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(RUN_COLUMNS)
    for row in sorted(rows, key=lambda r: r["spec"].key()):
        spec, result = row["spec"], read_cached(row["spec"])
        if result is None:
            continue
        metrics = result.metrics
        accs = [repr(a) if a is not None else "nan" for a in metrics["per_class_acc"]]
        noise = (spec.noise_kind, repr(spec.noise_rate)) if spec.noise_rate else ("", "0")
        writer.writerow(
            [spec.key(), " ".join(row["notebooks"]), spec.label, spec.dataset]
            + [repr(spec.imbalance_ratio), *noise, spec.seed, metrics["cpu"]["pin"]]
            + [repr(metrics["last_acc"]), " ".join(accs)]
        )
    path = figures_dir(profile) / RUNS
    with atomic_write(path, "w") as handle:
        handle.write(buffer.getvalue())
    return path


def _read_csv(path: Path) -> dict[str, dict[str, str]]:
    import csv

    with open(path, newline="") as handle:
        return {row["key"]: row for row in csv.DictReader(handle)}


def _machine(folder: Path) -> dict[str, Any]:
    """The CPU, pin and versions a folder's ``timings.json`` records (``{}`` without one)."""
    try:
        return json.loads((folder / TIMINGS).read_text()).get("cpu") or {}
    except (OSError, ValueError):
        return {}


def compare_runs(new: str | os.PathLike, old: str | os.PathLike) -> tuple[bool, str]:
    """Compare the result files of folder ``new`` (a fresh run) with those of ``old`` (the
    committed ``docs/results/<profile>/``): ``runs.csv`` run by run (a run missing, added, or
    whose final or per-class accuracies differ in any digit), then ``claims.csv`` and every
    ``NN_*.md`` byte for byte. Returns ``(equal, report)``; the report names each run
    that moved and, where the machines' records differ, the CPU, pin, torch and NumPy of both
    (exactness holds only between runs pinned alike on x86-64, CPU, same torch and MKL)."""
    new, old = Path(new), Path(old)
    lines, equal = [], True
    if not (new / RUNS).is_file() or not (old / RUNS).is_file():
        return False, f"no {RUNS} in {new if not (new / RUNS).is_file() else old}\n"
    fresh, kept = _read_csv(new / RUNS), _read_csv(old / RUNS)
    for key in sorted(kept.keys() - fresh.keys()):
        lines.append(f"run {key} ({kept[key]['label']}) is committed but was not planned now")
    for key in sorted(fresh.keys() - kept.keys()):
        lines.append(f"run {key} ({fresh[key]['label']}) is new (its spec or key changed)")
    moved = 0
    for key in sorted(fresh.keys() & kept.keys()):
        a, b = fresh[key], kept[key]
        if (a["last_acc"], a["per_class_acc"]) != (b["last_acc"], b["per_class_acc"]):
            moved += 1
            who = f"{b['label']}, {b['dataset']}, rho {b['imbalance_ratio']}"
            who += f", noise {b['noise_kind']} {b['noise_rate']}" if b["noise_kind"] else ""
            lines.append(
                f"run {key} ({who}, seed {b['seed']}): last_acc {a['last_acc']} "
                f"(committed {b['last_acc']})"
            )
    equal = not lines
    shared = len(fresh.keys() & kept.keys())
    lines.append(f"{RUNS}: {shared - moved} of {len(kept)} committed runs equal to every digit")
    for name in [CLAIMS, *sorted(p.name for p in old.glob(RESULTS_GLOB))]:
        same = (new / name).is_file() and (new / name).read_bytes() == (old / name).read_bytes()
        equal &= same
        lines.append(f"{name}: {'equal' if same else 'DIFFERS'}")
    here, there = _machine(new), _machine(old)
    fields = ("cpu_model", "pin", "aten_level", "torch", "numpy")
    if any(here.get(f) != there.get(f) for f in fields):
        lines.append(
            "the machines differ: "
            + "; ".join(f"{f} {here.get(f)} (committed {there.get(f)})" for f in fields)
        )
    return equal, "\n".join(lines) + "\n"
