"""Running the notebooks for ``palviz figures`` (:func:`cmd_figures`): the notebooks it
selects, the runs it trains first (:func:`train_missing`), the data it needs
(:func:`data_refusal`, ``palviz download``), the notebooks run side by side
(:func:`run_notebooks`; each one by :func:`palviz.cli.kernel.execute_notebook`) and the timing
record (:func:`timings_record`)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

from palviz.cli.kernel import execute_notebook
from palviz.cli.reuse import notebook_inputs, unchanged
from palviz.cli.sweep import plan_numbers, planned_runs
from palviz.files import build_dir, figures_dir, project_root, write_json

#: The datasets that are downloaded (``palviz download``); the others are embedded.
DOWNLOADABLE = ("mnist", "cifar10", "cifar100")


def notebooks(only: list[str] | None = None) -> list[Path]:
    """The notebooks in order, or those whose two-digit number is in ``only`` (each one a lesson
    of the course, else :func:`palviz.cli.sweep.plan_numbers` refuses it)."""
    plan_numbers(only)
    numbers = {n.zfill(2) for n in only or ()}
    found = sorted((project_root() / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    return [p for p in found if not only or p.name[:2] in numbers]


def downloaded_datasets(rows: list[dict]) -> list[str]:
    """The downloadable datasets that the planned runs ``rows`` (:func:`planned_runs`) read."""
    return sorted({r["spec"].dataset for r in rows} & set(DOWNLOADABLE))


def figure_jobs(jobs: int | None, n_notebooks: int) -> int:
    """How many notebooks ``figures`` runs at once: ``jobs``, or by default one per CPU core
    up to 2 (the run cache's locks keep two notebooks that ask for the same run from training
    it twice; :func:`palviz.experiments.claims.write_claims` locks ``claims.csv``)."""
    if jobs is None:
        jobs = min(2, os.cpu_count() or 1)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise SystemExit(f"--jobs must be a positive integer, got {jobs!r}")
    return max(1, min(jobs, n_notebooks))


def run_notebooks(
    selected: list[Path], profile: str, out_dir: Path, jobs: int, inputs: dict | None = None
) -> dict:
    """Execute ``selected`` with ``jobs`` kernels at a time, started in the notebooks' order;
    return the seconds each took, in that order. ``inputs`` (stem -> :func:`notebook_inputs`)
    is recorded beside each executed copy. The first error is raised once the notebooks
    already started have finished (the others are not started)."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    from tqdm.auto import tqdm

    times: dict[str, float] = {}
    queue = list(selected)
    desc = f"notebooks ({profile}, {jobs} at a time)"
    with (
        tqdm(total=len(selected), desc=desc, unit="nb") as bar,
        ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="palviz-nb") as pool,
    ):
        running: dict = {}
        while queue or running:
            while queue and len(running) < jobs:  # start the next ones, in order
                path = queue.pop(0)
                stamp = (inputs or {}).get(path.stem)
                running[pool.submit(execute_notebook, path, profile, out_dir, None, stamp)] = path
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            failed = [f for f in finished if f.exception() is not None]
            if failed:
                queue.clear()
                wait(running)  # let the kernels already started finish
                raise failed[0].exception()
            for future in finished:
                path = running.pop(future)
                times[path.stem] = future.result()
                bar.set_postfix_str(path.stem)
                bar.update()
    return {p.stem: times[p.stem] for p in selected if p.stem in times}


class TrainingTime(NamedTuple):
    """The ``seconds`` :func:`train_missing` took, and how many runs it ``trained`` of the
    ``planned`` ones the notebooks ask for."""

    seconds: float
    trained: int
    planned: int


def train_missing(selected: list[Path], profile: str) -> TrainingTime:
    """Train the runs that the ``selected`` notebooks will ask for
    (:func:`palviz.experiments.plan.plan`, with the notebooks' default parameters) and the cache
    lacks, in one pool (:func:`palviz.experiments.cluster.run_many`: two processes on a 2-core CPU,
    one per GPU), before any notebook starts; the notebooks then read the cache. Two notebooks that
    each trained their own runs side by side would put four training processes on two cores, which
    was measured slower than one after the other. Returns the seconds it took (0 if nothing was
    missing) and how many runs it trained of how many planned, a :class:`TrainingTime`."""
    from palviz.experiments.cluster import run_many

    planned = planned_runs(selected, profile)
    rows = [r for r in planned if not r["cached"]]
    if not rows:
        return TrainingTime(0.0, 0, len(planned))
    asked = sorted({n for r in rows for n in r["notebooks"]})
    print(f"training {len(rows)} missing run(s) of notebooks {' '.join(asked)} first")
    start = time.perf_counter()
    run_many([r["spec"] for r in rows], desc=f"runs ({profile})")
    return TrainingTime(time.perf_counter() - start, len(rows), len(planned))


def device_name() -> str:
    """The device the runs train on: the CUDA device's name, or ``"cpu"``."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


def timings_record(
    profile: str,
    only: list[str] | None,
    jobs: int,
    training: TrainingTime,
    times: dict[str, float],
    total: float,
    matmul: tuple[float, float] | None = None,
    kept: list[str] = (),
) -> dict:
    """What ``figures/<profile>/timings.json`` holds about one successful ``figures`` run
    (``palviz report`` copies it into docs/results/<profile>/, which docs/results.md and the
    book's syllabus read). ``training`` is what :func:`train_missing` returned. ``matmul`` is
    the one-thread matmul rate (:func:`palviz.threads.matmul_rate`, GFLOP/s) measured before
    the run and after it, so its times can be read against the machine's speed. The notebooks
    ``kept`` (not run again: :func:`palviz.cli.reuse.unchanged`) are named, with the seconds
    of their last run, from the timing record it left (:func:`palviz.timings.timing_record`)."""
    import datetime

    import torch

    from palviz.cpu import pin_state
    from palviz.timings import timing_record

    last = timing_record(profile)
    seconds = {s: last.seconds(s) for s in kept if last and last.seconds(s) is not None}
    seconds.update((name, round(float(s), 1)) for name, s in times.items())
    return {
        "profile": profile,
        "date_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cold": training.trained > 0,
        "runs_trained": training.trained,
        "runs_planned": training.planned,
        "training_seconds": round(training.seconds, 1),
        "notebook_seconds": seconds,
        "jobs": jobs,
        "total_seconds": round(float(total), 1),
        "cpu_count": os.cpu_count(),
        "torch_version": torch.__version__,
        "device": device_name(),
        "only": sorted(n.zfill(2) for n in only) if only else None,
        "matmul_gflops": [round(r, 1) for r in matmul] if matmul else None,
        "cpu": pin_state(),
        "kept": sorted(kept),
    }


def data_refusal(
    selected: list[Path], profile: str, *, download: bool = False, only: list[str] | None = None
) -> str | None:
    """Why ``figures`` cannot start for want of data, or ``None``: the datasets are those the
    planned runs of the ``selected`` notebooks read (:func:`palviz.experiments.plan.plan`, so every
    notebook that trains is covered); a missing one refuses when a run that reads it is not
    cached, and so does a damaged one (:class:`palviz.data.DatasetFileError`, naming the file).
    ``download`` fetches them first; ``only`` (``--only``) goes into the hint."""
    from palviz.data import DatasetFileError, missing_datasets

    rows = planned_runs(selected, profile)
    needed = downloaded_datasets(rows)
    if download:
        for name in needed:
            _download(name)
    uncached = [r for r in rows if not r["cached"]]
    for_training = downloaded_datasets(uncached)
    try:
        blocking = missing_datasets(for_training)
    except DatasetFileError as err:  # there, but damaged: it names the file and the fetch
        return f"{err}\n({len(uncached)} planned run(s) are not in the run cache)"
    if blocking:
        again = f"palviz figures --profile {profile}" + (
            f" --only {' '.join(only)}" if only else ""
        )
        return (
            f"The {profile} profile needs datasets that are not in data/: "
            + ", ".join(blocking)
            + f" ({len(uncached)} planned run(s) are not in the run cache)"
            + f"\nFetch them with:  palviz download {' '.join(blocking)}"
            + f"\nor run:           {again} --download"
            + "\nor, to render results trained elsewhere without the data: "
            + f"palviz runs unpack FILE (an archive of `palviz runs pack --profile {profile}`)"
        )
    try:
        missing = missing_datasets([d for d in needed if d not in for_training])
    except DatasetFileError:
        missing = []  # only cached runs read it: the notebooks do not open it
    if missing:
        print(
            f"datasets {', '.join(missing)} are not in data/, but every run the notebooks "
            "ask for that reads them is cached: rendering from the run cache"
        )
    return None


def cmd_figures(args: argparse.Namespace) -> int:
    selected = notebooks(args.only)
    refusal = data_refusal(selected, args.profile, download=args.download, only=args.only)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    from palviz.book import NotebookFailed, build_book
    from palviz.threads import matmul_rate

    jobs = figure_jobs(args.jobs, len(selected))
    out_dir = build_dir() / args.profile
    rate_before = matmul_rate()
    total = time.perf_counter()
    try:
        training = train_missing(selected, args.profile)
        planned = planned_runs(selected, args.profile)
        inputs = {p.stem: notebook_inputs(p, args.profile, planned) for p in selected}
        kept = [] if args.rerun else [p for p in selected if unchanged(p, out_dir, inputs[p.stem])]
        if kept:
            names = " ".join(p.stem[:2] for p in kept)
            print(f"notebooks {names}: unchanged since their last run, kept (--rerun runs them)")
        todo = [p for p in selected if p not in kept]
        times = run_notebooks(todo, args.profile, out_dir, jobs, inputs)
    except NotebookFailed as failed:
        index = build_book(out_dir, args.profile)  # the failed lesson is marked there
        print(f"palviz figures: {failed}", file=sys.stderr)
        print(f"the course book: {index.as_uri()}", file=sys.stderr)
        return 1
    total = time.perf_counter() - total
    if training.trained:
        print(f"{training.seconds:8.1f} s  training the missing runs")
    for name, seconds in times.items():
        print(f"{seconds:8.1f} s  {name}")
    print(f"{total:8.1f} s  total; figures in {figures_dir(args.profile)}")
    matmul = (rate_before, matmul_rate())
    stems = [p.stem for p in kept]
    record = timings_record(args.profile, args.only, jobs, training, times, total, matmul, stems)
    write_json(figures_dir(args.profile) / "timings.json", record)
    from palviz.experiments.report import write_runs

    write_runs(planned, args.profile)  # run by run
    index = build_book(out_dir, args.profile)  # after the record: the syllabus shows its times
    print(f"executed notebooks in {out_dir}")
    print(f"the course book: {index.as_uri()}")
    return 0


def _download(name: str) -> None:
    from palviz.data import load_dataset

    print(f"downloading {name} into data/ ...")
    for split in ("train", "test"):
        load_dataset(name, split, download=True)


def cmd_download(args: argparse.Namespace) -> int:
    from palviz.data import DatasetFileError

    for name in args.names:
        try:
            _download(name)
        except DatasetFileError as err:  # a damaged file stops the fetch: it says what to do
            print(f"palviz download: {err}", file=sys.stderr)
            return 1
    return 0
