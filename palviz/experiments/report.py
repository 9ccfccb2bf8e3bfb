"""The measured results of ``docs/results.md``, written from result files, never typed.

``palviz figures --profile P`` leaves its result files in ``figures_dir(P)``: the claims
table ``claims.csv`` (notebooks 06 and 07, :mod:`palviz.experiments.claims`), the timing record
``timings.json`` (:func:`palviz.cli.figures.cmd_figures`) and the notebooks' result tables
``NN_<notebook>_results.md``. ``palviz report --profile P`` copies them into
``docs/results/P/`` (committed with the page), then rewrites the block of that profile in
:data:`PAGE`, ``docs/results.md``, from those copies only, between the two marker lines

::

    <!-- measured: P (palviz report --profile P) -->
    <!-- end measured: P -->

``palviz report --profile P --check`` writes nothing and fails, printing a unified diff,
when the block differs from what the copies give; a test runs it on the committed files, so
a hand edit of a block, or a result file committed without its block, fails the tests.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from palviz.files import PROFILES, atomic_write, figures_dir, project_root

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
RESULTS_GLOB = "[0-9][0-9]_*_results.md"
#: The page that holds the measured blocks, relative to the project root.
PAGE = "docs/results.md"

#: The keys of ``timings.json`` that :func:`render_timings` reads.
TIMING_KEYS = (
    "profile",
    "date_utc",
    "cold",
    "runs_trained",
    "runs_planned",
    "training_seconds",
    "notebook_seconds",
    "jobs",
    "total_seconds",
    "cpu_count",
    "torch_version",
    "device",
    "only",
)


class ReportError(ValueError):
    """Bad input to ``palviz report``: an unknown profile, a :data:`PAGE` without the
    block's markers, an unreadable result file. The message says what to do."""


def _profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ReportError(f"unknown profile {profile!r}; the profiles are {', '.join(PROFILES)}")
    return profile


def _root(root: str | os.PathLike | None) -> Path:
    return Path(root) if root is not None else project_root()


def block_markers(profile: str) -> tuple[str, str]:
    """The first and last line of the measured block of ``profile``."""
    _profile(profile)
    return (
        f"<!-- measured: {profile} (palviz report --profile {profile}) -->",
        f"<!-- end measured: {profile} -->",
    )


def results_dir(profile: str, root: str | os.PathLike | None = None) -> Path:
    """``docs/results/<profile>/`` under the project root (``root``, default
    :func:`palviz.files.project_root`)."""
    return _root(root) / "docs" / "results" / _profile(profile)


def _figures_text(profile: str) -> str:
    """Where ``palviz figures`` writes the profile's files, as the block names it."""
    return "figures/" if profile == "quick" else f"figures/{profile}/"


def result_files(folder: str | os.PathLike) -> list[Path]:
    """The result files in ``folder``: ``claims.csv``, ``timings.json``, ``runs.csv`` and every
    ``NN_*_results.md``, those that exist, in that order (the tables by name)."""
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
    source = Path(source) if source is not None else figures_dir(_profile(profile))
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
    ``NN_*_results.md`` byte for byte. Returns ``(equal, report)``; the report names each run
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


# ------------------------------------------------------------------------------- rendering


def _seconds(value: float) -> str:
    value = float(value)
    if value < 100:
        return f"{value:.1f} s"
    return f"{value:,.0f} s ({value / 60:.1f} min)"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _read_timings(path: Path, profile: str) -> dict[str, Any]:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ReportError(f"{path}: not a readable timing record ({err})") from None
    if not isinstance(record, dict):
        raise ReportError(f"{path}: expected a JSON object, got {type(record).__name__}")
    missing = [k for k in TIMING_KEYS if k not in record]
    if missing:
        raise ReportError(
            f"{path}: no {missing} in the timing record; run `palviz figures --profile "
            f"{profile}` again to write a complete one"
        )
    if record["profile"] != profile:
        raise ReportError(f"{path} records profile {record['profile']!r}, not {profile!r}")
    if not isinstance(record["notebook_seconds"], dict):
        raise ReportError(f"{path}: notebook_seconds must be an object of notebook -> seconds")
    return record


def render_timings(record: dict[str, Any]) -> str:
    """The timing record of one ``palviz figures`` run (``timings.json``) as sentences."""
    profile = record["profile"]
    date = str(record["date_utc"]).split("T")[0]
    notebooks = record["notebook_seconds"]
    jobs = record["jobs"]
    trained, planned = record["runs_trained"], record["runs_planned"]
    command = f"palviz figures --profile {profile}"
    if record["only"]:
        command += " --only " + " ".join(record["only"])
    if record["cold"]:
        state = "cold"
        if trained is not None and planned is not None:
            runs = (
                f"{trained} of the {_count(planned, 'run', 'runs')} the notebooks ask for "
                f"{'was' if trained == 1 else 'were'} missing from the run cache and trained "
                f"first, in one pool, in {_seconds(record['training_seconds'])}"
            )
        else:
            runs = f"the missing runs trained first, in {_seconds(record['training_seconds'])}"
    else:
        state = "warm"
        if planned:
            runs = (
                f"all {_count(planned, 'run', 'runs')} the notebooks ask for "
                "were in the run cache, so nothing trained"
            )
        elif planned == 0:
            runs = "the notebooks selected train nothing"
        else:
            runs = "nothing trained"
    at_once = "one at a time" if jobs == 1 else f"{jobs} at a time"
    text = (
        f"One run of `{command}` on {date} (UTC), {state}: {runs}; then the "
        f"{_count(len(notebooks), 'notebook', 'notebooks')} ran {at_once}. "
        f"**{_seconds(record['total_seconds'])}** in all, on a machine with "
        f"{_count(record['cpu_count'], 'CPU core', 'CPU cores')}, device `{record['device']}`, "
        f"torch {record['torch_version']}."
    )
    if record.get("matmul_gflops"):  # older records have no rate
        before, after = record["matmul_gflops"]
        text += (
            f" The machine's one-thread float32 matmul rate (`palviz.threads.matmul_rate`): "
            f"{before:.1f} GFLOP/s before the run, {after:.1f} GFLOP/s after it."
        )
    cpu = record.get("cpu")  # older records have none
    if cpu:
        pinned = (
            "pinned to AVX2 (`palviz.cpu`)" if cpu["pin"] == "avx2" else f"unpinned ({cpu['pin']})"
        )
        text += (
            f" CPU: {cpu['cpu_model']} ({cpu['machine']}), its kernels {pinned}; "
            f"NumPy {cpu['numpy']}."
        )
    if notebooks:
        each = ", ".join(f"`{name}` {float(s):.1f} s" for name, s in notebooks.items())
        text += f" Each notebook (it starts its own kernel and imports torch): {each}."
    if record["only"]:
        text += (
            f" Only notebooks {', '.join(record['only'])} were executed (`--only`); rows and "
            "tables of other notebooks below come from earlier runs."
        )
    return text + "\n"


def _demote(markdown: str, levels: int = 2) -> str:
    """Every heading ``#...`` outside code fences ``levels`` deeper (at most ``######``), so
    that a file's headings sit under the page's section."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6}\s", line):
            hashes = len(line) - len(line.lstrip("#"))
            line = "#" * min(6, hashes + levels) + line[hashes:]
        out.append(line)
    return "\n".join(out)


def render_block(profile: str, root: str | os.PathLike | None = None) -> str:
    """The measured block of ``profile`` (its two marker lines included), from the files in
    :func:`results_dir` only."""
    from palviz.experiments.claims import read_claims_file
    from palviz.experiments.claims_table import claims_explanation, claims_markdown

    start, end = block_markers(profile)
    folder = results_dir(profile, root)
    where = f"docs/results/{profile}/"
    rerun = (
        f"`palviz figures --profile {profile}` (writes the result files into "
        f"`{_figures_text(profile)}`), then `palviz report --profile {profile}` (copies them "
        f"into `{where}` and rewrites this block)"
    )
    parts = [
        start,
        f"<!-- Written by `palviz report --profile {profile}` from {where}; "
        "edits here are overwritten, and tests/test_report.py fails on them. -->",
    ]
    files = result_files(folder)
    if not files:
        parts.append(
            f"**Not measured in this checkout.** `{where}` holds no result files of the "
            f"`{profile}` profile, so there is nothing to report here yet. To measure it, run "
            f"{rerun}."
        )
        return "\n\n".join(parts) + "\n\n" + end + "\n"
    parts.append(
        f"Measured by {rerun}; the files are in `{where}`. These are measurements on this "
        "profile's data and sizes, reported as such; they are not the papers' numbers."
    )
    timings = folder / TIMINGS
    if timings.is_file():
        parts.append("**How long it took.** " + render_timings(_read_timings(timings, profile)))
    else:
        parts.append(f"**How long it took:** not recorded (no `{TIMINGS}` in `{where}`).")
    claims = folder / CLAIMS
    if claims.is_file():
        try:
            frame = read_claims_file(claims)
        except (OSError, ValueError) as err:
            raise ReportError(f"{claims}: not a claims table ({err})") from None
        if len(frame):
            parts.append(f"**The papers' claims** (`{where}{CLAIMS}`):")
            parts.append(claims_markdown(frame).rstrip("\n"))
            parts.append(claims_explanation(frame).rstrip("\n"))
        else:
            parts.append(f"**The papers' claims:** `{where}{CLAIMS}` has no rows.")
    else:
        parts.append(f"**The papers' claims:** not recorded (no `{CLAIMS}` in `{where}`).")
    tables = sorted(folder.glob(RESULTS_GLOB))
    if not tables:
        parts.append(f"**Result tables:** none (no `NN_*_results.md` in `{where}`).")
    for path in tables:
        parts.append(f"**Result tables of notebook {path.name[:2]}** (`{where}{path.name}`):")
        text = _demote(path.read_text(encoding="utf-8")).strip()
        parts.append(text or "(the file is empty)")
    return "\n\n".join(parts) + "\n\n" + end + "\n"


# ------------------------------------------------------------------------------ the page


def page_path(root: str | os.PathLike | None = None) -> Path:
    """:data:`PAGE` under the project root (``root``, default
    :func:`palviz.files.project_root`)."""
    return _root(root) / PAGE


def replace_block(text: str, profile: str, block: str, name: str = PAGE) -> str:
    """``text`` with the lines from the block's start marker to its end marker (both
    included) replaced by ``block``."""
    start, end = block_markers(profile)
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == start]
    ends = [i for i, line in enumerate(lines) if line.strip() == end]
    if not starts or not ends:
        raise ReportError(
            f"{name} has no measured block for the {profile} profile; add these two lines, "
            f"on their own, where its results go:\n{start}\n{end}"
        )
    if len(starts) > 1 or len(ends) > 1 or ends[0] < starts[0]:
        raise ReportError(
            f"{name} must hold the line {start!r} once and, after it, the line {end!r} once; "
            f"found them at lines {[i + 1 for i in starts]} and {[i + 1 for i in ends]}"
        )
    return "".join(lines[: starts[0]]) + block + "".join(lines[ends[0] + 1 :])


def require_markers(profile: str, root: str | os.PathLike | None = None) -> None:
    """Raise :class:`ReportError`, saying which lines to add, unless :data:`PAGE` holds the
    block's two marker lines once each, in order."""
    path = page_path(root)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ReportError(f"cannot read {path}: {err}") from None
    replace_block(text, profile, "", PAGE)


def _expected(profile: str, root: str | os.PathLike | None) -> tuple[Path, str, str]:
    path = page_path(root)
    try:
        old = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ReportError(f"cannot read {path}: {err}") from None
    return path, old, replace_block(old, profile, render_block(profile, root), PAGE)


def check_page(profile: str, root: str | os.PathLike | None = None) -> str:
    """``""`` when the block of ``profile`` in :data:`PAGE` is what :func:`render_block`
    writes, else a unified diff from the page to that. Writes nothing."""
    _, old, new = _expected(profile, root)
    if old == new:
        return ""
    diff = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"{PAGE} (as it is)",
        tofile=f"{PAGE} (palviz report --profile {profile})",
    )
    return "".join(diff)


def write_page(profile: str, root: str | os.PathLike | None = None) -> bool:
    """Rewrite the block of ``profile`` in :data:`PAGE` from :func:`results_dir`,
    atomically; ``True`` if it changed."""
    path, old, new = _expected(profile, root)
    if old == new:
        return False
    with atomic_write(path, "wb") as handle:
        handle.write(new.encode("utf-8"))
    return True
