"""Running the notebooks for ``palviz figures`` (:func:`cmd_figures`): the notebooks it
selects, the runs it trains first (:func:`train_missing`), the data it needs
(:func:`data_refusal`, ``palviz download``), each notebook's kernel and staging folder
(:func:`execute_notebook`), the notebooks run side by side (:func:`run_notebooks`) and the
timing record (:func:`timings_record`)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from palviz.cli.reuse import notebook_inputs, unchanged
from palviz.cli.sweep import plan_numbers, planned_runs
from palviz.files import (
    PROFILES,
    build_dir,
    cache_dir,
    figures_base,
    figures_dir,
    project_root,
    publish,
    storage_errors,
    write_json,
)

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


#: The kernel draws figures with the inline backend, so that they land in the executed copies
#: (``savefig`` still writes the files); an ``MPLBACKEND`` of the caller's is not passed on.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def kernel_environment(profile: str) -> dict[str, str]:
    """The environment of a notebook kernel started by ``palviz figures``: the profile, the
    inline backend, no widgets (:func:`palviz.plots.widgets_shown`; the pages have no kernel
    to move a slider) and the CPU pin (:func:`palviz.cpu.pin_environment`)."""
    from palviz.cpu import pin_environment

    env = {**os.environ, "PALVIZ_PROFILE": profile, "MPLBACKEND": INLINE_BACKEND}
    env["PALVIZ_WIDGETS"] = "0"
    env.setdefault("NUMBA_CACHE_DIR", str(cache_dir() / "numba"))
    return pin_environment(env)


#: The longest a cell of each profile may run before its notebook fails, in seconds. The runs
#: are trained before the notebooks start (:func:`train_missing`), so a cell only reads them;
#: ``$PALVIZ_CELL_TIMEOUT`` (seconds) sets another limit.
CELL_TIMEOUTS = {"smoke": 300, "quick": 600, "full": 1200, "paper": 3600}

#: How long, after its kernel said it is idle, a cell's reply may take to arrive (seconds;
#: ``$PALVIZ_REPLY_GRACE`` sets another). Past it the reply is taken as lost (seen with
#: ipykernel 7 and nbclient 0.11 after a widget was displayed: both sides idle, the client
#: waiting for ever) and the notebook runs again once, in a fresh kernel. The same hang is
#: jupyter/nbclient#312 (open, nbclient 0.10 and later) and jupyter/nbconvert#2003 and #2029;
#: no release fixes it, so no version bound in pyproject.toml would help: the widgets guard
#: (:func:`palviz.plots.widgets_shown`) avoids it and this watch ends it.
REPLY_GRACE = 60


def cell_timeout(profile: str) -> int:
    """The cell limit of ``profile`` (:data:`CELL_TIMEOUTS`, or ``$PALVIZ_CELL_TIMEOUT``)."""
    value = os.environ.get("PALVIZ_CELL_TIMEOUT", "")
    if not value:
        return CELL_TIMEOUTS[profile]
    if not value.isdigit() or int(value) < 1:
        raise SystemExit(
            f"$PALVIZ_CELL_TIMEOUT must be a whole number of seconds >= 1, got {value!r}"
        )
    return int(value)


class ReplyLost(RuntimeError):
    """A cell's kernel went idle, but its reply did not come within :data:`REPLY_GRACE`."""


def _client_class():
    """nbclient's ``NotebookClient`` with a watch on each cell's reply: once the kernel has said
    that it is idle (the cell's outputs are all in), its reply must follow within the grace
    period, else :class:`ReplyLost` (nbclient alone would wait out the whole cell limit)."""
    import asyncio

    from nbclient import NotebookClient

    class WatchedClient(NotebookClient):
        async def _async_poll_for_reply(self, msg_id, cell, timeout, outputs, alive):
            reply = asyncio.ensure_future(
                super()._async_poll_for_reply(msg_id, cell, timeout, outputs, alive)
            )
            await asyncio.wait({reply, outputs}, return_when=asyncio.FIRST_COMPLETED)
            if not reply.done():  # idle: the reply is due now
                grace = float(os.environ.get("PALVIZ_REPLY_GRACE", REPLY_GRACE))
                await asyncio.wait({reply}, timeout=grace)
                if not reply.done():
                    reply.cancel()
                    alive.cancel()
                    raise ReplyLost(
                        f"the kernel went idle but its reply did not come within {grace:g} s"
                    )
            return reply.result()

    return WatchedClient


def execute_notebook(
    path: Path,
    profile: str,
    out_dir: Path,
    timeout: int | None = None,
    inputs: str | None = None,
) -> float:
    """Run one notebook top to bottom with ``PALVIZ_PROFILE=profile``, in its folder as
    JupyterLab would; returns the seconds it took.

    A cell may run ``timeout`` seconds (default :func:`cell_timeout`); a cell whose reply is
    lost (:class:`ReplyLost`) runs the notebook again once, in a fresh kernel. Only a notebook
    that runs to the end changes what a reader sees: the files it writes into
    ``figures/`` (figures, results tables, its rows of ``claims.csv``, under whatever profile
    it runs) go to a staging folder meanwhile and move into place afterwards, each file
    atomically (:func:`palviz.files.publish`), then its executed copy is written to
    ``out_dir`` (:func:`palviz.book.write_copy`), which the book is built from. A notebook
    that fails leaves the last good copy and figures as they were: the failed run's notebook
    and a record for the book are written beside them (:func:`palviz.book.write_failure`) and
    :class:`palviz.book.NotebookFailed` is raised, naming the cell, the error and the command
    that runs it again. An interrupt (Ctrl-C) writes nothing."""
    timeout = cell_timeout(profile) if timeout is None else timeout
    start = time.perf_counter()
    for attempt in (1, 2):
        try:
            _execute_once(path, profile, out_dir, timeout, inputs)
            break
        except ReplyLost as lost:
            if attempt == 2:
                raise lost.__cause__ from None
            print(f"{path.stem}: {lost}; running it again in a fresh kernel", file=sys.stderr)
    return time.perf_counter() - start


def _execute_once(
    path: Path, profile: str, out_dir: Path, timeout: int, inputs: str | None = None
) -> None:
    """One try of :func:`execute_notebook`; a lost reply is a :class:`ReplyLost` whose cause
    is the :class:`palviz.book.NotebookFailed` (the failure already recorded). ``inputs``
    (:func:`notebook_inputs`) is recorded beside the executed copy, with the files it wrote."""
    import nbformat

    from palviz import book

    nb = nbformat.read(path, as_version=4)
    where = {"cell": None}
    with figure_stage(path.stem) as stage:
        # What the kernel prints of its staging folder is shown as the folder it stands for,
        # by its name: a page shows no path of the machine that built it.
        shown = (str(stage), figures_base().name)
        try:
            with tempfile.TemporaryDirectory(prefix="palviz-kernel-") as sockets:
                client = _client_class()(
                    nb,
                    config=kernel_config(Path(sockets)),
                    timeout=timeout,
                    kernel_name="python3",
                    resources={"metadata": {"path": path.parent}},
                    on_cell_execute=lambda cell_index, **_: where.update(cell=cell_index),
                )
                client.execute(env={**kernel_environment(profile), "PALVIZ_FIGURES": str(stage)})
            replace_in_outputs(nb, *shown)
            files = sorted(f.relative_to(stage).as_posix() for f in stage.rglob("*") if f.is_file())
            publish(stage, figures_base(), CLAIMS_MERGE)
            book.write_copy(nb, out_dir, path.stem, profile)
            if inputs is not None:
                write_json(out_dir / f"{path.stem}.inputs.json", {"inputs": inputs, "files": files})
        except Exception as err:
            replace_in_outputs(nb, *shown)
            error = book.error_line(err, replace=shown)
            if where["cell"] is not None:
                error = f"cell {where['cell'] + 1}: {error}"
            failure = book.write_failure(nb, out_dir, path.stem, error, profile)
            failed = book.NotebookFailed(path.stem, failure, out_dir)
            if isinstance(err, ReplyLost):
                raise err from failed
            raise failed from err
    book.clear_failure(out_dir, path.stem)


def _merge_claims(profile: str):
    """How a notebook's rows of ``profile``'s ``claims.csv``, staged while it ran, join the
    shared file (:func:`palviz.experiments.claims.write_claims` merges them under its lock)."""

    def merge(staged: Path, target: Path) -> None:
        from palviz.experiments.claims import read_claims_file, write_claims

        write_claims(read_claims_file(staged), profile)

    return merge


#: :func:`palviz.files.publish`'s merges of a staged ``figures/``: every profile's claims.csv.
CLAIMS_MERGE = {
    (figures_dir(p, base=Path(".")) / "claims.csv").as_posix(): _merge_claims(p) for p in PROFILES
}


@contextlib.contextmanager
def figure_stage(stem: str) -> Iterator[Path]:
    """A fresh folder that stands in for ``figures/`` while notebook ``stem`` runs (the
    kernel's ``PALVIZ_FIGURES``), inside ``figures/.staging/`` so that its files move into
    place with a rename; removed afterwards, with the folders it needed. Folders left by a
    killed ``palviz figures`` on this machine (a dead pid) are removed first."""
    import shutil
    import socket

    from palviz.experiments.locks import pid_alive

    root = figures_base() / ".staging"
    made = [d for d in (root, *root.parents) if not d.exists()]
    host = socket.gethostname()
    for left in root.glob(f"{host}-*"):
        pid = left.name[len(host) + 1 :].split("-")  # <host>-<pid>-<stem>-<random>
        if len(pid) == 3 and pid[0].isdigit() and not pid_alive(int(pid[0])):
            shutil.rmtree(left, ignore_errors=True)
    with storage_errors(root):
        root.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f"{host}-{os.getpid()}-{stem}-", dir=root))
    try:
        yield stage.resolve()
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        for folder in [root, *made]:  # the staging root, then what this call created
            with contextlib.suppress(OSError):
                folder.rmdir()


def replace_in_outputs(nb, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in the text of every output of ``nb`` (printed lines,
    tracebacks, rich text; not images)."""

    def replaced(value):
        if isinstance(value, str):
            return value.replace(old, new)
        if isinstance(value, list):
            return [replaced(v) for v in value]
        if isinstance(value, dict):
            return {k: v if k.startswith("image/") else replaced(v) for k, v in value.items()}
        return value

    if old == new:
        return
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            for key in ("text", "data", "traceback", "evalue"):
                if key in output:
                    output[key] = replaced(output[key])


def kernel_config(sockets: Path):
    """The configuration of a notebook's kernel manager: on POSIX its kernel talks over Unix
    sockets in the private folder ``sockets``. Two kernels started at once over TCP can pick
    the same free port (each binds port 0, releases it, and the kernel binds it again later):
    one then dies with "Address already in use". Sockets in a folder of their own cannot
    collide. (nbclient makes the manager from this, so it also shuts the kernel down.)"""
    from traitlets.config import Config

    if os.name != "posix":
        return Config()
    return Config({"KernelManager": {"transport": "ipc", "ip": str(sockets / "kernel")}})


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


class TrainingTime(float):
    """The seconds :func:`train_missing` took (a ``float``), with how many runs it
    ``trained`` of the ``planned`` ones the notebooks ask for."""

    trained: int
    planned: int

    def __new__(cls, seconds: float, trained: int, planned: int) -> TrainingTime:
        value = super().__new__(cls, seconds)
        value.trained, value.planned = trained, planned
        return value


def train_missing(selected: list[Path], profile: str) -> TrainingTime:
    """Train the runs that the ``selected`` notebooks will ask for
    (:func:`palviz.experiments.plan.plan`, with the notebooks' default parameters) and the cache
    lacks, in one pool (:func:`palviz.experiments.cluster.run_many`: two processes on a 2-core CPU,
    one per GPU), before any notebook starts; the notebooks then read the cache. Two notebooks that
    each trained their own runs side by side would put four training processes on two cores, which
    was measured slower than one after the other. Returns the seconds it took (0 if nothing was
    missing) as a :class:`TrainingTime`, which also tells how many runs it trained of how
    many planned."""
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
    training: float,
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
        "training_seconds": round(float(training), 1),
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
    if training:
        print(f"{training:8.1f} s  training the missing runs")
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
