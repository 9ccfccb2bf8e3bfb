"""Where the time of ``palviz figures`` goes: inside one run, and in a warm ``figures``.

Usage::

    python benchmarks/bench_time.py              # one quick run of each kind, then a warm figures
    python benchmarks/bench_time.py --runs-only  # the two runs only
    python benchmarks/bench_time.py --runs-only --readings 90  # readings at every epoch
    python benchmarks/bench_time.py --figures-only --profile quick

**Runs.** It trains, into a temporary run cache and in this process (one thread, as a pool's
worker trains), the first long-tailed and the first noisy run that ``palviz plan --profile
quick`` lists (``--profile``), and splits each run's seconds into

- *training step*: the training passes of :func:`palviz.train.fit` (forward, loss, backward,
  SGD step, the on-device sums) without the batches' own making;
- *evaluation*: the test rows (:func:`palviz.evaluation.evaluate_batches`, the prototypes'
  minimum angle) without the readings;
- *collapse/ECE readings*: :func:`palviz.evaluation.collapse_readings`, at the epochs of
  :func:`palviz.train.reading_epochs` (``--readings N``: at N evaluated epochs);
- *data*: :func:`palviz.experiments.runcache.prepare_data` and the batches of every epoch
  (:meth:`palviz.data.BatchIterator.epoch`);
- *checkpoints*: the checkpoint written after each epoch;
- *bookkeeping*: the rest (building the model and loss, the features and metrics written).

**Warm figures.** With every run of the profile cached, it runs ``palviz figures --rerun`` (every
notebook executes) and splits its wall time, from the executed notebooks' cell times
(nbclient's ``execution`` metadata), into kernel start-up (a notebook's time outside its
cells), imports (the set-up cells, at least half of whose statements import), the notebooks'
other cells (each notebook apart), and the command's own work (planning, the
book build). Then it runs ``palviz figures`` again, which keeps every unchanged notebook, and
prints that wall time too. The notebooks run two at a time, so the shares are of the summed
kernel time, and the wall times are printed beside them.

Each share is measured in this one run, beside the one-thread float32 matmul rate
(:func:`palviz.threads.matmul_rate`) and the CPU model, so other machines read it as ratios.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import palviz  # noqa: F401  (the CPU pin, before torch)
from palviz.cpu import pin_state
from palviz.threads import matmul_rate, single_thread

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def timed(owner, name: str, into: dict, bucket: str):
    """Replace ``owner.name`` by a wrapper adding its seconds to ``into[bucket]``."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            into[bucket] += time.perf_counter() - start

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def timed_batches(into: dict):
    """Time the making of every batch of a :class:`BatchIterator` (its epoch's draws and each
    batch of its generator) while a training pass runs (``into["in_pass"]`` set), into
    ``into["batches"]``."""
    from palviz.data import BatchIterator

    epoch, batches = BatchIterator.epoch, BatchIterator._batches

    def add(start: float) -> None:
        if into["in_pass"]:
            into["batches"] += time.perf_counter() - start

    def timed_epoch(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return epoch(self, *args, **kwargs)
        finally:
            add(start)

    def timed_generator(self, *args, **kwargs):
        made = batches(self, *args, **kwargs)
        while True:
            start = time.perf_counter()
            item = next(made, None)
            add(start)
            if item is None:
                return
            yield item

    BatchIterator.epoch, BatchIterator._batches = timed_epoch, timed_generator
    try:
        yield
    finally:
        BatchIterator.epoch, BatchIterator._batches = epoch, batches


def one_run(spec) -> dict[str, float]:
    """The seconds of ``spec``'s run by part (see the module's docstring)."""
    from palviz import train
    from palviz.experiments import runcache

    t: dict[str, float] = defaultdict(float)
    train_pass = train._train_pass

    def flagged(*args, **kwargs):
        t["in_pass"] = 1
        try:
            return train_pass(*args, **kwargs)
        finally:
            t["in_pass"] = 0

    with contextlib.ExitStack() as stack:
        train._train_pass = flagged
        stack.callback(setattr, train, "_train_pass", train_pass)
        stack.enter_context(timed(runcache, "prepare_data", t, "prepare"))
        stack.enter_context(timed(train, "_train_pass", t, "passes"))
        stack.enter_context(timed(train, "_test_row", t, "test_rows"))
        stack.enter_context(timed(train, "collapse_readings", t, "readings"))
        stack.enter_context(timed(train, "save_torch", t, "checkpoints"))
        stack.enter_context(timed_batches(t))
        start = time.perf_counter()
        runcache.run(spec)
        total = time.perf_counter() - start
    shares = {
        "training step": t["passes"] - t["batches"],
        "evaluation": t["test_rows"] - t["readings"],
        "collapse/ECE readings": t["readings"],
        "data": t["prepare"] + t["batches"],
        "checkpoints": t["checkpoints"],
    }
    shares["bookkeeping"] = total - sum(shares.values())
    shares["total"] = total
    return shares


def bench_runs(profile: str, readings: int | None = None) -> dict[str, dict[str, float]]:
    """The parts of the first long-tailed and the first noisy run of ``profile``'s plan;
    ``readings``: take the collapse/ECE readings at that many evaluated epochs instead."""
    from palviz.experiments.plan import plan

    rows = plan(["06", "07", "08"], profile)
    first = {}
    for row in rows:
        kind = "noisy" if row["spec"].noise_rate > 0 else "long-tailed"
        first.setdefault(kind, row["spec"])
    parts = {}
    with tempfile.TemporaryDirectory(prefix="palviz-bench-runs-") as runs, single_thread():
        os.environ["PALVIZ_RUNS"] = runs
        for kind in ("long-tailed", "noisy"):
            spec = first[kind]
            name = spec.label or spec.loss
            print(f"{kind}: {name} on {spec.dataset}, {spec.train.epochs} epochs")
            train = {"progress": False, **({} if readings is None else {"readings": readings})}
            parts[kind] = one_run(spec.replace(train=train))
    names = [n for n in parts["long-tailed"] if n != "total"]
    print(f"\n{'part of a run':24}" + "".join(f"{k:>22}" for k in parts))
    for name in names:
        cells = [f"{p[name]:8.2f} s {p[name] / p['total']:6.1%}     " for p in parts.values()]
        print(f"{name:24}" + "".join(f"{c:>22}" for c in cells))
    print(f"{'total':24}" + "".join(f"{p['total']:8.2f} s {'':12}" for p in parts.values()))
    return parts


def _seconds(a: str, b: str) -> float:
    return (dt.datetime.fromisoformat(b) - dt.datetime.fromisoformat(a)).total_seconds()


def _imports_only(source: str) -> bool:
    """Whether a cell is mostly imports (at least half its statements: the set-up cells, which
    also check the parameters and call ``setup_notebook``)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    imports = sum(isinstance(n, (ast.Import, ast.ImportFrom)) for n in body)
    return bool(body) and 2 * imports >= len(body)


def notebook_parts(path: Path) -> tuple[float, float]:
    """(imports, other cells) of an executed notebook, in seconds, from nbclient's metadata:
    the set-up cells (:func:`_imports_only`) apart from the others."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    imports = cells = 0.0
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" not in meta or "shell.execute_reply" not in meta:
            continue
        took = _seconds(meta["iopub.execute_input"], meta["shell.execute_reply"])
        if _imports_only("".join(cell["source"])):
            imports += took
        else:
            cells += took
    return imports, cells


def figures(profile: str, rerun: bool) -> float:
    command = [sys.executable, "-m", "palviz", "figures", "--profile", profile]
    start = time.perf_counter()
    subprocess.run([*command, *(["--rerun"] if rerun else [])], check=True, cwd=ROOT)
    return time.perf_counter() - start


def bench_figures(profile: str) -> None:
    from palviz.files import build_dir, figures_dir

    print(f"\nwarm `palviz figures --profile {profile} --rerun` (every notebook runs):")
    wall = figures(profile, rerun=True)
    record = json.loads((figures_dir(profile) / "timings.json").read_text())
    if record["runs_trained"]:
        print(f"note: {record['runs_trained']} runs were missing and trained: not a warm run")
    rows, start_up, imports, cells = [], 0.0, 0.0, 0.0
    for stem, took in record["notebook_seconds"].items():
        i, c = notebook_parts(build_dir() / profile / f"{stem}.ipynb")
        rows.append((stem, took, i, c))
        start_up, imports, cells = start_up + took - i - c, imports + i, cells + c
    kernels = start_up + imports + cells
    print(f"{'notebook':28}{'kernel s':>10}{'start-up':>10}{'imports':>10}{'cells':>10}")
    for stem, took, i, c in rows:
        print(f"{stem:28}{took:10.1f}{took - i - c:10.1f}{i:10.1f}{c:10.1f}")
    print(
        f"summed kernel time {kernels:.1f} s: start-up {start_up / kernels:.0%}, imports "
        f"{imports / kernels:.0%}, cells {cells / kernels:.0%}"
    )
    notebooks_wall = record["total_seconds"] - record["training_seconds"]
    print(
        f"wall {wall:.1f} s: notebooks ({record['jobs']} at a time) {notebooks_wall:.1f} s "
        f"({notebooks_wall / wall:.0%}), planning and the book {wall - notebooks_wall:.1f} s "
        f"({(wall - notebooks_wall) / wall:.0%})"
    )
    kept = figures(profile, rerun=False)
    print(f"\nwarm `palviz figures --profile {profile}` (unchanged notebooks kept): {kept:.1f} s")
    print(f"kept / every notebook run: {kept / wall:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="quick", help="of the runs and figures (default quick)")
    ap.add_argument(
        "--readings", type=int, help="collapse/ECE readings at this many evaluated epochs"
    )
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--runs-only", action="store_true")
    group.add_argument("--figures-only", action="store_true")
    args = ap.parse_args()
    state = pin_state()
    rate = matmul_rate()
    print(f"CPU {state['cpu_model']} (pin {state['pin']}), matmul {rate:.1f} GFLOP/s one thread")
    if not args.figures_only:
        bench_runs(args.profile, args.readings)
    if not args.runs_only:
        bench_figures(args.profile)
    print(f"matmul at the end {matmul_rate():.1f} GFLOP/s one thread")


if __name__ == "__main__":
    main()
