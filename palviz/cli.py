"""The ``palviz`` command.

::

    palviz figures [--profile smoke|quick|full|paper] [--only 00 06 ...] [--jobs N] [--download]
    palviz runs [--clear] [--keys KEY ...] [--check [--fix]]
    palviz plan [--profile paper] [--only 06 07] [--missing] [--jsonl FILE [--sbatch SCRIPT]]
                [--estimate FILE]
    palviz train SPECFILE [--index I]
    palviz sweep [--profile paper] [--only 06] --executor local|slurm|submitit-local|dask [...]
    palviz download {mnist,cifar10,cifar100} [...]
    palviz gallery [--profile quick]
    palviz report [--profile quick] [--check]

A command with ``--profile`` reads ``$PALVIZ_PROFILE`` when it is not given (else ``quick``);
an unknown profile, from either, stops it before any work (:func:`parse_args`).

``figures`` trains the runs the notebooks will ask for that the cache lacks (one pool, before
any notebook starts), then executes the notebooks, started in order and two at a time on a
machine with two cores or more (``--jobs``), in ``notebooks/`` as JupyterLab would. It leaves
their figures in ``figures/`` and writes executed copies to ``build/<profile>/`` as ``.ipynb``
and offline ``.html`` pages, with a front page ``build/<profile>/index.html`` (see
:mod:`palviz.course`). Training results come from the run cache (``runs/``), so a second
``figures`` only re-renders. Before anything starts it checks the downloaded datasets that the
planned runs read (:func:`data_refusal`).

``plan`` lists the runs the selected notebooks will ask for (from :mod:`palviz.experiments.plan`,
without data, a GPU or the notebook files, from any folder) and writes them as JSON lines, and with
``--sbatch`` a script submitting them as one Slurm array; ``train`` trains one line of such a
file into the cache (a Slurm array task: ``--index $SLURM_ARRAY_TASK_ID``); ``sweep`` trains
every missing run of a plan through a local pool, submitit (Slurm) or Dask (see
docs/cluster.md).

A successful ``figures`` run also writes ``timings.json`` beside the figures (what trained,
seconds per notebook, the machine). ``report`` copies the profile's result files
(``claims.csv``, ``timings.json``, ``NN_*_results.md``) into ``docs/results/<profile>/`` and
rewrites the measured block of that profile in docs/results.md from them
(:mod:`palviz.experiments.report`); ``report --check`` only compares.

Ctrl-C (SIGINT) or SIGTERM stops any command at once: queued runs are cancelled, training
processes and notebook kernels are ended, one line says how many of the runs asked for are
cached, and the exit status is 130 (SIGINT) or 143 (SIGTERM), as a shell reports a command
killed by that signal. Running the same command again resumes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from palviz.files import (
    PROFILES,
    ProjectNotFound,
    StorageError,
    build_dir,
    cache_dir,
    figures_base,
    figures_dir,
    project_root,
    publish,
    resolve_profile,
    storage_errors,
    write_json,
)

#: The datasets that are downloaded (``palviz download``); the others are embedded.
DOWNLOADABLE = ("mnist", "cifar10", "cifar100")

#: README gallery: (figure file stem, image name in docs/img)
GALLERY = (
    ("01_simplex_prototypes_tetrahedron", "simplex_tetrahedron.png"),
    ("02_minority_collapse_cosine_vs_ratio", "minority_collapse.png"),
    ("04_lipschitz_bounds_vs_s_lambda_vs_b", "lipschitz.png"),
    ("05_margins_lmsce_ldam_elm_effective_margin", "elm_effective_margin.png"),
    ("06_long_tailed_per_class_accuracy", "long_tailed_per_class.png"),
    ("07_noisy_labels_accuracy_vs_s", "noisy_accuracy_vs_s.png"),
    ("08_feature_geometry_umap", "umap.png"),
)


def notebooks(only: list[str] | None = None) -> list[Path]:
    """The notebooks in order, or those whose two-digit number is in ``only``."""
    folder = project_root() / "notebooks"
    found = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if only:
        numbers = {n.zfill(2) for n in only}
        unknown = numbers - {p.name[:2] for p in found}
        if unknown:
            allowed = [p.name[:2] for p in found]
            raise SystemExit(f"--only: no notebook numbered {sorted(unknown)}; have {allowed}")
        found = [p for p in found if p.name[:2] in numbers]
    return found


def downloaded_datasets(rows: list[dict]) -> list[str]:
    """The downloadable datasets that the planned runs ``rows`` (:func:`planned_runs`) read."""
    return sorted({r["spec"].dataset for r in rows} & set(DOWNLOADABLE))


#: The kernel draws figures with the inline backend, so that they land in the executed copies
#: (``savefig`` still writes the files); an ``MPLBACKEND`` of the caller's is not passed on.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def kernel_environment(profile: str) -> dict[str, str]:
    """The environment of a notebook kernel started by ``palviz figures``."""
    env = dict(os.environ)
    env["PALVIZ_PROFILE"] = profile
    env["MPLBACKEND"] = INLINE_BACKEND
    # No ipywidgets in these kernels: the pages have no kernel to move a slider (they show a
    # note instead), and a cell that displays a widget sometimes leaves nbclient waiting for
    # a reply that never comes (seen with ipykernel 7 and nbclient 0.11).
    env["PALVIZ_WIDGETS"] = "0"
    env.setdefault("NUMBA_CACHE_DIR", str(cache_dir() / "numba"))
    return env


def execute_notebook(path: Path, profile: str, out_dir: Path, timeout: int = 3600) -> float:
    """Run one notebook top to bottom with ``PALVIZ_PROFILE=profile``, in its folder as
    JupyterLab would; returns the seconds it took.

    Only a notebook that runs to the end changes what a reader sees: the files it writes into
    ``figures/`` (figures, results tables, its rows of ``claims.csv``, under whatever profile
    it runs) go to a staging folder meanwhile and move into place afterwards, each file
    atomically (:func:`palviz.files.publish`), then its executed copy is written to
    ``out_dir`` as ``.ipynb`` and ``.html`` (:func:`palviz.course.write_page`). A notebook
    that fails leaves
    the last good page and figures as they were: the failed run's page and a record for the
    front page are written beside them (:func:`palviz.course.write_failure`) and
    :class:`palviz.course.NotebookFailed` is raised, naming the error and the command that
    runs it again. An interrupt (Ctrl-C) writes nothing."""
    import nbformat
    from nbclient import NotebookClient

    from palviz import course

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    with figure_stage(path.stem) as stage:
        # What the kernel prints of its staging folder is shown as the folder it stands for.
        shown = (str(stage), str(figures_base()))
        try:
            with tempfile.TemporaryDirectory(prefix="palviz-kernel-") as sockets:
                client = NotebookClient(
                    nb,
                    config=kernel_config(Path(sockets)),
                    timeout=timeout,
                    kernel_name="python3",
                    resources={"metadata": {"path": path.parent}},
                )
                client.execute(env={**kernel_environment(profile), "PALVIZ_FIGURES": str(stage)})
            replace_in_outputs(nb, *shown)
            publish(stage, figures_base(), CLAIMS_MERGE)
            course.write_page(nb, out_dir, path.stem)
        except Exception as err:
            replace_in_outputs(nb, *shown)
            error = course.error_line(err, replace=shown)
            failure = course.write_failure(nb, out_dir, path.stem, error, profile)
            raise course.NotebookFailed(path.stem, failure, out_dir) from err
    course.clear_failure(out_dir, path.stem)
    return time.perf_counter() - start


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


def run_notebooks(selected: list[Path], profile: str, out_dir: Path, jobs: int) -> dict:
    """Execute ``selected`` with ``jobs`` kernels at a time, started in the notebooks' order;
    return the seconds each took, in that order. The first error is raised once the
    notebooks already started have finished (the others are not started)."""
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
                running[pool.submit(execute_notebook, path, profile, out_dir)] = path
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
) -> dict:
    """What ``figures/<profile>/timings.json`` holds about one successful ``figures`` run
    (:mod:`palviz.experiments.report` renders it into docs/results.md). ``training`` is what
    :func:`train_missing` returned; its run counts are ``None`` when it is a plain number."""
    import datetime

    import torch

    trained = getattr(training, "trained", None)
    planned = getattr(training, "planned", None)
    return {
        "profile": profile,
        "date_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cold": bool(trained) if trained is not None else float(training) > 0,
        "runs_trained": trained,
        "runs_planned": planned,
        "training_seconds": round(float(training), 1),
        "notebook_seconds": {name: round(float(s), 1) for name, s in times.items()},
        "jobs": jobs,
        "total_seconds": round(float(total), 1),
        "cpu_count": os.cpu_count(),
        "torch_version": torch.__version__,
        "device": device_name(),
        "only": sorted(n.zfill(2) for n in only) if only else None,
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
    from palviz.course import NotebookFailed, install_mathjax, write_index

    jobs = figure_jobs(args.jobs, len(selected))
    out_dir = build_dir() / args.profile
    install_mathjax(out_dir)  # once, before the notebooks write their pages
    times: dict[str, float] = {}
    total = time.perf_counter()
    failed: NotebookFailed | None = None
    try:
        training = train_missing(selected, args.profile)
        times = run_notebooks(selected, args.profile, out_dir, jobs)
    except NotebookFailed as error:
        failed = error
    finally:
        index = write_index(out_dir, args.profile)  # a failed lesson is marked there
    if failed is not None:
        print(f"palviz figures: {failed}", file=sys.stderr)
        print(f"the course's front page: {index.as_uri()}", file=sys.stderr)
        return 1
    total = time.perf_counter() - total
    if training:
        print(f"{training:8.1f} s  training the missing runs")
    for name, seconds in times.items():
        print(f"{seconds:8.1f} s  {name}")
    print(f"{total:8.1f} s  total; figures in {figures_dir(args.profile)}")
    record = timings_record(args.profile, args.only, jobs, training, times, total)
    write_json(figures_dir(args.profile) / "timings.json", record)
    index = write_index(out_dir, args.profile)  # again: the syllabus shows this run's times
    print(f"executed notebooks (.ipynb, .html) in {out_dir}")
    print(f"the course's front page: {index.as_uri()}")
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


def cmd_runs(args: argparse.Namespace) -> int:
    from palviz.experiments import clear_runs, list_runs

    if getattr(args, "action", None) in ("pack", "unpack"):
        from palviz.experiments import pack

        try:
            if args.action == "unpack":
                done = pack.unpack(args.file, force=args.force)
            else:
                selected = notebooks(args.only)
                numbers = [p.name[:2] for p in selected]
                rows = planned_runs(selected, args.profile)
                target = args.output or pack.default_name(args.profile)
                done = pack.pack(
                    target,
                    rows,
                    profile=args.profile,
                    notebooks=numbers,
                    with_checkpoints=args.with_checkpoints,
                )
        except pack.PackError as err:
            if args.action == "unpack":
                print(
                    f"palviz runs unpack: {args.file}: {err}; refused, nothing was written "
                    "to the run cache",
                    file=sys.stderr,
                )
            else:
                print(f"palviz runs pack: {err}; no archive written", file=sys.stderr)
            return 2
        missing = done.manifest["missing"]
        if missing:
            shown = "\n".join(
                f"  {m['key']}  {m['label'][:22]:22} notebooks {' '.join(m['notebooks'])}"
                for m in missing[:20]
            )
            more = f"\n  ... and {len(missing) - 20} more" if len(missing) > 20 else ""
            print(
                f"warning: {len(missing)} planned run(s) of profile "
                f"{done.manifest['profile']!r} are not in the archive (not cached when it "
                f"was packed); `palviz figures` would train them:\n{shown}{more}",
                file=sys.stderr,
            )
        if args.action == "unpack":
            print(
                f"unpacked {args.file}: {len(done.added)} run(s) added, "
                f"{len(done.identical)} already cached (identical), {len(done.replaced)} "
                f"replaced; profile {done.manifest['profile']!r}"
            )
        else:
            what = "with checkpoints" if args.with_checkpoints else "checkpoints left out"
            print(
                f"packed {len(done.runs)} run(s) of profile {args.profile!r} ({what}) into "
                f"{done.path}, {done.bytes / 1e6:.1f} MB"
            )
        return 0
    if args.check:
        return cmd_check(args)
    if args.clear:
        n = clear_runs(args.keys or None)
        print(f"deleted {n} cached run(s)")
        return 0
    rows = list_runs()
    if not rows:
        print("no cached runs")
        return 0
    print(f"{'key':16}  {'label':18} {'dataset':9} {'loss':10} {'head':8} {'ep':>4} {'acc':>6}  MB")
    for r in rows:
        acc = f"{100 * r['last_acc']:.1f}" if r["last_acc"] is not None else "(part)"
        print(
            f"{r['key']:16}  {r['label'][:18]:18} {r['dataset']:9} {r['loss'][:10]:10} "
            f"{r['head']:8} {r['epochs'] or 0:>4} {acc:>6}  {r['bytes'] / 1e6:.1f}"
        )
    print(f"{len(rows)} run(s), {sum(r['bytes'] for r in rows) / 1e6:.1f} MB")
    return 0


NOTHING_TO_RESUME = "(nothing to resume: no checkpoint)"


def cmd_check(args: argparse.Namespace) -> int:
    from palviz.experiments.cachedir import check_runs

    rows = check_runs(fix=args.fix)
    if not rows:
        print("no cached runs")
        return 0
    for r in rows:
        if r["status"] != "ok":
            problem = r["problem"] or ("" if r.get("resumable", True) else NOTHING_TO_RESUME)
            where = f" -> moved to {r['moved_to']}" if "moved_to" in r else ""
            where += " -> removed" if r.get("removed") else ""
            print(f"{r['key']:16}  {r['label'][:18]:18} {r['status']:10} {problem}{where}")
    counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "unfinished", "broken")}
    print(", ".join(f"{n} {s}" for s, n in counts.items()))
    empty = [r for r in rows if r.get("resumable") is False and not r.get("removed")]
    if counts["broken"] and not args.fix:
        print("move the broken entries aside (to runs/.broken/) with: palviz runs --check --fix")
    if empty:
        print(
            f"{len(empty)} unfinished entr{'y' if len(empty) == 1 else 'ies'} "
            f"{NOTHING_TO_RESUME}"
            + (": being trained now" if args.fix else "; remove with: palviz runs --check --fix")
        )
    return 1 if counts["broken"] and not args.fix else 0


def plan_numbers(only: list[str] | None = None) -> list[str]:
    """The numbers of the notebooks that train
    (:data:`palviz.experiments.plan.NOTEBOOKS_WITH_RUNS`), or those of them in ``only``; ``only``
    may name any lesson of the course (:data:`palviz.syllabus.SYLLABUS`). Needs no notebook file, so
    ``palviz plan`` works
    from any folder."""
    from palviz.experiments.plan import NOTEBOOKS_WITH_RUNS
    from palviz.syllabus import SYLLABUS

    numbers = {n.zfill(2) for n in only or ()}
    unknown = numbers - set(SYLLABUS)
    if unknown:
        raise SystemExit(
            f"--only: no notebook numbered {sorted(unknown)}; have {' '.join(SYLLABUS)} "
            f"(those that train: {' '.join(NOTEBOOKS_WITH_RUNS)})"
        )
    return [n for n in NOTEBOOKS_WITH_RUNS if not only or n in numbers]


def _planned(args: argparse.Namespace) -> list[dict]:
    try:
        return planned_runs(plan_numbers(args.only), args.profile, args.datasets)
    except ValueError as err:  # a dataset not registered, a module that does not import
        print(f"palviz {args.command}: {err}", file=sys.stderr)
        raise SystemExit(2) from None


def planned_runs(selected: list[Path] | list[str], profile: str, datasets=None) -> list[dict]:
    """:func:`palviz.experiments.plan.plan` of the ``selected`` notebooks (paths, or their two-digit
    numbers), each row with ``cached`` too; ``datasets`` is the ``DATASETS`` of 06, 07 and 08
    (a name not registered is looked for in the modules ``$PALVIZ_DATASET_MODULES`` names)."""
    from palviz.experiments.plan import NOTEBOOKS_WITH_RUNS, plan
    from palviz.experiments.runcache import is_cached

    names = [p.name if isinstance(p, Path) else str(p) for p in selected]
    numbers = [n[:2] for n in names if n[:2] in NOTEBOOKS_WITH_RUNS]
    rows = plan(numbers, profile, datasets)
    for row in rows:
        row["cached"] = is_cached(row["spec"])
    return rows


def cmd_plan(args: argparse.Namespace) -> int:
    import json

    from palviz.checks import check_int
    from palviz.experiments import estimate

    if args.sbatch and not args.jsonl:
        print("palviz plan: --sbatch SCRIPT needs --jsonl FILE (the tasks' specs)", file=sys.stderr)
        return 2
    if args.gpus is not None and not args.estimate:
        print(f"palviz plan: --gpus {args.gpus} needs --estimate FILE", file=sys.stderr)
        return 2
    bench = None
    try:
        gpus = 1 if args.gpus is None else check_int("--gpus", args.gpus, 1)
        if args.estimate:
            bench = estimate.read_benchmark(args.estimate)
    except ValueError as err:
        print(f"palviz plan: {err}; no estimate made", file=sys.stderr)
        return 2
    rows = _planned(args)
    shown = [r for r in rows if not (args.missing and r["cached"])]
    if bench is None:
        print(f"{'key':16}  {'label':22} {'dataset':9} {'arch':11} {'ep':>4} {'state':7} notebooks")
        for r in shown:
            spec = r["spec"]
            print(
                f"{r['key']:16}  {spec.label[:22]:22} {spec.dataset:9} {spec.arch:11} "
                f"{spec.train.epochs:>4} {'cached' if r['cached'] else 'missing':7} "
                f"{' '.join(r['notebooks'])}"
            )
    missing = sum(not r["cached"] for r in rows)
    print(f"{len(rows)} run(s) ({args.profile}): {len(rows) - missing} cached, {missing} missing")
    if bench is not None:
        try:
            est = estimate.estimate([r["spec"] for r in shown], bench, gpus, args.estimate)
        except ValueError as err:
            print(f"palviz plan: {err}; no estimate made", file=sys.stderr)
            return 2
        what = "missing runs" if args.missing else "runs"
        print(f"GPU time of the {len(shown)} {what} above:")
        print(estimate.format_estimate(est, bench, args.estimate))
    if args.jsonl:
        path = Path(args.jsonl)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as handle:
            for r in shown:
                line = {"key": r["key"], "notebooks": r["notebooks"], "spec": r["spec"].to_dict()}
                handle.write(json.dumps(line, sort_keys=True) + "\n")
        print(f"{len(shown)} spec(s) written to {path} (one JSON object per line)")
    if args.sbatch:
        write_sbatch_script(Path(args.sbatch), path, len(shown))
    return 0


def write_sbatch_script(script: Path, plan_file: Path, count: int) -> None:
    """Write :func:`palviz.experiments.cluster.sbatch_script` of ``plan_file`` to ``script``
    (executable)
    and say what it does."""
    from palviz.experiments.cluster import sbatch_script
    from palviz.files import atomic_write

    with atomic_write(script, "w") as handle:
        handle.write(sbatch_script(plan_file, count, name=str(script)))
    script.chmod(script.stat().st_mode | 0o111)
    if count == 0:
        print(f"nothing to do: no run to train; {script} submits nothing")
    else:
        print(
            f"{script}: submits the {count} run(s) as one Slurm job array (tasks 0-{count - 1}); "
            f"run it with sbatch's resources, e.g. sh {script} --cpus-per-task=1 "
            "--time=02:00:00 (CPU), or --gres=gpu:1 --cpus-per-task=4 --time=12:00:00"
        )


def read_specs(path: str | os.PathLike) -> list:
    """The specs of a JSON-lines file of ``palviz plan --jsonl`` (a line is a spec's dict or
    an object with one under ``"spec"``; blank lines are skipped).

    Every line is read and checked before this returns: a line that is not JSON (the column
    where it stops being JSON), not an object, or whose spec is not a valid
    :class:`~palviz.experiments.runcache.RunSpec` (the field and its rule) raises ``ValueError``
    naming
    the file, the line number and what was expected."""
    import json

    from palviz.experiments.runcache import RunSpec

    expected = 'a JSON object of RunSpec fields, or one with them under "spec"'
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err}); expected JSON lines") from None
    specs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{where}: not JSON at column {err.colno} ({err.msg}); expected {expected}"
            ) from None
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: expected {expected}, got {line.strip()[:80]}")
        fields = obj["spec"] if "spec" in obj else obj
        if not isinstance(fields, dict):
            raise ValueError(
                f'{where}: "spec" must be a JSON object of RunSpec fields, got {fields!r}'
            )
        try:
            specs.append(RunSpec.from_dict(fields))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: {err}") from None
    return specs


def cmd_train(args: argparse.Namespace) -> int:
    from palviz.experiments.runcache import run

    try:
        specs = read_specs(args.specfile)
    except OSError as err:
        print(f"palviz train: cannot read {args.specfile}: {err}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"palviz train: {err}; nothing was trained", file=sys.stderr)
        return 2
    if not specs and args.index is None:
        print(f"{args.specfile} holds no spec (e.g. a plan of cached runs): nothing to train")
        return 0
    if args.index is None:
        chosen = list(enumerate(specs))
    else:
        if not 0 <= args.index < len(specs):
            print(
                f"--index {args.index}: {args.specfile} has {len(specs)} spec(s)", file=sys.stderr
            )
            return 2
        chosen = [(args.index, specs[args.index])]
    for i, spec in chosen:
        start = time.perf_counter()
        result = run(spec)
        print(
            f"[{i}] {spec.key()} {spec.label}: last_acc {result.metrics['last_acc']:.4f} "
            f"({time.perf_counter() - start:.1f} s) in {result.path}"
        )
    return 0


def _slurm_extras(extra: list[str]) -> dict:
    """``--slurm-KEY VALUE`` pairs (the options argparse does not know) as ``slurm_KEY``."""
    out, i = {}, 0
    while i < len(extra):
        flag = extra[i]
        if not flag.startswith("--slurm-") or i + 1 >= len(extra):
            raise SystemExit(f"unknown option {flag!r} (pass Slurm options as --slurm-KEY VALUE)")
        out["slurm_" + flag[len("--slurm-") :].replace("-", "_")] = extra[i + 1]
        i += 2
    return out


#: The executors of ``palviz sweep``; those that go through submitit.
EXECUTORS = ("local", "slurm", "submitit-local", "dask")
SUBMITIT = ("slurm", "submitit-local")

#: The sweep options that only some executors use (argparse's name -> those executors);
#: ``--slurm-KEY VALUE`` pairs count as ``slurm_extra``.
SWEEP_OPTIONS = {
    "workers": ("local",),
    "workers_per_gpu": ("local",),
    "slurm_partition": SUBMITIT,
    "slurm_time": SUBMITIT,
    "gpus_per_job": SUBMITIT,
    "cpus_per_job": SUBMITIT,
    "max_parallel": SUBMITIT,
    "log_dir": SUBMITIT,
    "slurm_extra": SUBMITIT,
    "dask_scheduler": ("dask",),
}
#: What submitit's local executor drops (it runs the jobs on this machine).
SLURM_ONLY = ("slurm_partition", "gpus_per_job", "max_parallel", "slurm_extra")
#: Minutes a Slurm job may run when ``--slurm-time`` is not given.
SLURM_MINUTES = 24 * 60


def _flags(args: argparse.Namespace, names) -> list[str]:
    """The command-line flags of the options ``names`` that were given."""
    out = []
    for name in names:
        value = getattr(args, name, None)
        if name == "slurm_extra":
            out += ["--" + k.replace("_", "-") for k in value or {}]
        elif value is not None:
            out.append("--" + name.replace("_", "-"))
    return out


def sweep_option_error(args: argparse.Namespace) -> str | None:
    """Why the options given do not fit ``--executor`` (one line), or ``None``."""
    alien = [
        f"{flag} (an option of --executor {'|'.join(kinds)})"
        for name, kinds in SWEEP_OPTIONS.items()
        if args.executor not in kinds
        for flag in _flags(args, [name])
    ]
    if not alien:
        return None
    return f"--executor {args.executor} does not use {', '.join(alien)}; nothing was trained"


def cmd_sweep(args: argparse.Namespace) -> int:
    from palviz.experiments import cluster

    problem = sweep_option_error(args)
    if problem:
        print(f"palviz sweep: {problem}", file=sys.stderr)
        return 2
    rows = _planned(args)
    todo = [r["spec"] for r in rows if not r["cached"]]
    print(f"{len(rows)} run(s) planned ({args.profile}), {len(todo)} missing")
    if not todo:
        return 0
    try:
        options: dict = {}
        if args.executor in SUBMITIT:
            options = _submitit_options(args)
        elif args.executor == "dask":
            options = {"scheduler": args.dask_scheduler}
        executor = cluster.make_executor(args.executor, **options)
        start = time.perf_counter()
        results = cluster.run_many(
            todo,
            desc=f"sweep ({args.executor})",
            workers=args.workers,
            executor=executor,
            workers_per_gpu=args.workers_per_gpu,
        )
    except cluster.SlurmRefused as err:
        print(f"palviz sweep: {err}", file=sys.stderr)
        return 2
    print(f"{len(results)} run(s) trained in {time.perf_counter() - start:.0f} s")
    return 0


def _submitit_options(args: argparse.Namespace) -> dict:
    """:func:`palviz.experiments.cluster.make_executor`'s options of a submitit sweep; for Slurm
    the CPUs and GPUs are checked against the partition
    (:func:`palviz.experiments.cluster.slurm_resources`)."""
    from palviz.experiments import cluster

    log_dir = Path(args.log_dir) if args.log_dir else cluster.default_log_dir()
    options = {
        "log_dir": log_dir,
        "timeout_min": args.slurm_time or SLURM_MINUTES,
        "cpus_per_task": args.cpus_per_job,
    }
    if args.executor == "submitit-local":
        dropped = _flags(args, SLURM_ONLY)
        if dropped:
            print(f"submitit-local runs the jobs on this machine: {', '.join(dropped)} unused")
    else:
        resources = cluster.slurm_resources(
            args.slurm_partition, args.gpus_per_job, args.cpus_per_job
        )
        print(resources)
        options.update(
            slurm_partition=args.slurm_partition,
            gpus_per_node=resources.gpus,
            cpus_per_task=resources.cpus,
            slurm_array_parallelism=args.max_parallel,
            **(args.slurm_extra or {}),
        )
    print(f"submitit's files and the jobs' logs: {log_dir}")
    return options


def cmd_gallery(args: argparse.Namespace) -> int:
    """Copy the README gallery figures into docs/img/, at most 900 px wide."""
    from PIL import Image

    source = figures_dir(args.profile)
    target = project_root() / "docs" / "img"
    missing = [stem for stem, _ in GALLERY if not (source / f"{stem}.png").exists()]
    if missing:
        print(f"missing figures (run `palviz figures` first): {missing}", file=sys.stderr)
        return 2
    target.mkdir(parents=True, exist_ok=True)
    for stem, name in GALLERY:
        with Image.open(source / f"{stem}.png") as image:
            scale = min(1.0, 900 / image.width)
            size = (round(image.width * scale), round(image.height * scale))
            image.convert("RGB").resize(size, Image.LANCZOS).save(target / name, optimize=True)
        print(f"docs/img/{name}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Copy the profile's result files into docs/results/<profile>/ and rewrite its block of
    docs/results.md from them (for ``quick`` also the gallery); ``--check``: only compare."""
    from palviz.experiments import report

    try:
        if args.check:
            diff = report.check_page(args.profile)
            if diff:
                print(diff, end="")
                print(
                    f"docs/results.md's measured block of {args.profile} differs from what "
                    f"docs/results/{args.profile}/ gives; rewrite it with: "
                    f"palviz report --profile {args.profile}",
                    file=sys.stderr,
                )
                return 1
            print(f"docs/results.md's measured block of {args.profile} is up to date")
            return 0
        report.require_markers(args.profile)  # before anything is copied
        copies = report.collect_results(args.profile)
        source = figures_dir(args.profile)
        if copies:
            for path in copies:
                print(f"{path.relative_to(project_root())}  (from {source})")
        else:
            print(
                f"no result files in {source} (run `palviz figures --profile {args.profile}` "
                f"first); writing the block from docs/results/{args.profile}/ as it is"
            )
        changed = report.write_page(args.profile)
    except report.ReportError as err:
        print(f"palviz report: {err}", file=sys.stderr)
        return 2
    print(
        f"docs/results.md: measured block of {args.profile}"
        f" {'rewritten' if changed else 'unchanged'}"
    )
    if args.profile == "quick" and copies:
        return cmd_gallery(args)
    return 0


def cmd_methods(args: argparse.Namespace) -> int:
    """Print the method tables of the loss registry, or write them (and the departures from
    the reference code, :data:`palviz.experiments.recipes.DEPARTURES`) into docs/reference.md
    and docs/departures.md."""
    from palviz.experiments import methods, recipes

    if args.write_docs:
        path = project_root() / "docs" / "reference.md"
        up_to_date = methods.write_method_tables(path, check=True)
        methods.write_method_tables(path)
        print(f"{path}: {'already up to date' if up_to_date else 'method tables rewritten'}")
        current = recipes.write_departures(check=True)
        recipes.write_departures()
        state = "already up to date" if current else "rewritten"
        print(f"departures: {state} in {path}, {path.with_name('departures.md')}")
        return 0
    for task in (args.task,) if args.task else methods.TASKS:
        print(f"{task} methods (palviz.experiments.methods):\n")
        print(methods.method_table(task))
        print()
    return 0


def add_profile_option(parser: argparse.ArgumentParser) -> None:
    """``--profile``, whose default is ``$PALVIZ_PROFILE`` (else ``quick``): :func:`parse_args`
    resolves and checks it with :func:`palviz.files.resolve_profile`."""
    parser.add_argument(
        "--profile",
        metavar="{" + ",".join(PROFILES) + "}",
        help="the size of everything (default: $PALVIZ_PROFILE, else quick)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="palviz", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("figures", help="execute the notebooks and regenerate every figure")
    add_profile_option(p)
    p.add_argument("--only", nargs="+", metavar="NN", help="notebook numbers, e.g. 06 07")
    p.add_argument(
        "--download", action="store_true", help="fetch the datasets the runs read (paper)"
    )
    p.add_argument(
        "--jobs", type=int, help="notebooks executed at once (default: 2, or 1 on one core)"
    )
    p.set_defaults(func=cmd_figures)
    p = sub.add_parser("runs", help="list, --clear, --check, pack or unpack the cached runs")
    p.add_argument("--clear", action="store_true")
    p.add_argument("--keys", nargs="+", metavar="KEY", help="with --clear: only these runs")
    p.add_argument("--check", action="store_true", help="verify every entry of the cache")
    p.add_argument("--fix", action="store_true", help="with --check: move broken entries aside")
    p.set_defaults(func=cmd_runs, action=None)
    actions = p.add_subparsers(dest="action", metavar="{pack,unpack}")
    a = actions.add_parser("pack", help="the profile's cached runs into one archive, to hand out")
    add_profile_option(a)
    a.add_argument("--only", nargs="+", metavar="NN", help="notebook numbers, e.g. 06 07")
    a.add_argument("--with-checkpoints", action="store_true", help="also pack checkpoint.pt")
    a.add_argument("-o", "--output", metavar="FILE", help="default palviz-runs-<profile>.tar.gz")
    a = actions.add_parser("unpack", help="verify an archive of `runs pack`, add it to the cache")
    a.add_argument("file", metavar="FILE")
    a.add_argument("--force", action="store_true", help="replace cached runs that differ")
    p = sub.add_parser("plan", help="list the runs the notebooks will ask for (no data needed)")
    add_profile_option(p)
    p.add_argument("--only", nargs="+", metavar="NN", help="notebook numbers, e.g. 06 07")
    p.add_argument("--datasets", nargs="+", metavar="NAME", help="DATASETS of 06, 07, 08")
    p.add_argument("--missing", action="store_true", help="only the runs not in the cache")
    p.add_argument("--jsonl", metavar="FILE", help="also write the specs, one JSON per line")
    p.add_argument(
        "--estimate", metavar="FILE", help="GPU-hours of the runs from a bench_gpu.py JSON"
    )
    p.add_argument("--gpus", type=int, metavar="N", help="with --estimate: GPUs (default 1)")
    p.add_argument("--sbatch", metavar="SCRIPT", help="with --jsonl: a script submitting them")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser("train", help="train specs of a `plan --jsonl` file into the cache")
    p.add_argument("specfile")
    p.add_argument("--index", type=int, help="only line I (0-based), e.g. $SLURM_ARRAY_TASK_ID")
    p.set_defaults(func=cmd_train)
    p = sub.add_parser("sweep", help="train every missing run of a plan (local, Slurm, Dask)")
    add_profile_option(p)
    p.add_argument("--only", nargs="+", metavar="NN", help="notebook numbers, e.g. 06 07")
    p.add_argument("--datasets", nargs="+", metavar="NAME", help="DATASETS of 06, 07, 08")
    p.add_argument("--executor", choices=EXECUTORS, default="local")
    p.add_argument("--workers", type=int, help="local: processes (default: 2 on a CPU)")
    p.add_argument("--workers-per-gpu", type=int, help="local: processes per visible GPU")
    p.add_argument("--slurm-partition", help="Slurm: the partition (default: Slurm's)")
    p.add_argument("--slurm-time", type=int, help=f"Slurm: minutes per job ({SLURM_MINUTES})")
    p.add_argument(
        "--gpus-per-job", type=int, help="Slurm: default 1 if the partition has GPUs, else 0"
    )
    p.add_argument("--cpus-per-job", type=int, help="Slurm: default 1 (CPU job), 4 (GPU job)")
    p.add_argument("--max-parallel", type=int, help="Slurm: array tasks running at once")
    p.add_argument("--log-dir", help="submitit's folder (default: .submitit/ in the run cache)")
    p.add_argument("--dask-scheduler", metavar="ADDRESS", help="e.g. tcp://host:8786")
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("methods", help="the registered losses' table methods, as markdown")
    p.add_argument("--task", choices=("long_tailed", "noisy"))
    p.add_argument("--write-docs", action="store_true", help="rewrite docs/reference.md's tables")
    p.set_defaults(func=cmd_methods)
    p = sub.add_parser("download", help="fetch datasets for the paper profile")
    p.add_argument("names", nargs="+", choices=DOWNLOADABLE)
    p.set_defaults(func=cmd_download)
    p = sub.add_parser("gallery", help="refresh the README images in docs/img/")
    add_profile_option(p)
    p.set_defaults(func=cmd_gallery)
    p = sub.add_parser("report", help="write docs/results.md's measured results from result files")
    add_profile_option(p)
    p.add_argument("--check", action="store_true", help="write nothing; fail if out of date")
    p.set_defaults(func=cmd_report)
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line as a namespace, checked before any work: a command with a profile has
    ``args.profile`` resolved (``--profile``, else ``$PALVIZ_PROFILE``, else ``quick``); an
    unknown one exits with status 2 and one line naming where it came from, the value and the
    profiles."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "sweep":
        args.slurm_extra = _slurm_extras(extra) or None
    elif extra:
        parser.parse_args(argv)  # the usual error for an unknown option
    if hasattr(args, "profile"):
        try:
            args.profile = resolve_profile(args.profile, name="--profile")
        except ValueError as err:
            command = " ".join(filter(None, (args.command, getattr(args, "action", None))))
            parser.exit(2, f"palviz {command}: {err}\n")
    return args


#: The signals that stop a command (Ctrl-C and a polite kill, e.g. by a scheduler or timeout).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _session_children() -> list[int]:
    """The children of this process that lead a session of their own: the notebook kernels
    (jupyter_client starts each in a new session, so a terminal's Ctrl-C misses them). Read
    from ``/proc``; none where there is no ``/proc``."""
    me, found = os.getpid(), []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me and int(fields[3]) == int(entry.name):  # ppid, session
            found.append(int(entry.name))
    return found


class _Stop:
    """The signal that stopped a command (SIGINT unless one came) and how many came."""

    signum: int = signal.SIGINT
    count: int = 0


@contextlib.contextmanager
def _stop_on_signals():
    """While a command runs in the main thread, SIGINT and SIGTERM raise
    ``KeyboardInterrupt`` (so :func:`palviz.experiments.cluster.run_many` cancels its queue and
    ends its workers) and are passed on to the process groups of the notebook kernels; a second one
    kills those. Yields the :class:`_Stop` record."""
    stop = _Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum, _frame):
        stop.signum, stop.count = signum, stop.count + 1
        for pid in _session_children():
            with contextlib.suppress(OSError):
                os.killpg(pid, signum if stop.count == 1 else signal.SIGKILL)
        raise KeyboardInterrupt

    previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    try:
        yield stop
    finally:
        for signum, old in previous.items():
            if old is not None:
                signal.signal(signum, old)


def _stopped_line(command: str, err: KeyboardInterrupt, signum: int) -> str:
    """The one line a stopped command prints: a stopped :func:`~palviz.experiments.cluster.run_many`
    says how many runs are cached."""
    cluster = sys.modules.get("palviz.experiments.cluster")  # not imported: nothing trained here
    if cluster is not None and isinstance(err, cluster.RunsInterrupted):
        return f"palviz {command}: {err}"
    name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    return f"palviz {command}: interrupted ({name}); finished runs stay cached, run it again"


def main(argv: list[str] | None = None) -> int:
    """The ``palviz`` command; returns its exit status (128 + the signal's number when
    SIGINT or SIGTERM stopped it, with one line and no traceback)."""
    args = parse_args(argv)
    with _stop_on_signals() as stop:
        try:
            return args.func(args)
        except StorageError as err:  # a full or read-only disk: its one line says what to do
            print(f"palviz {args.command}: {err}", file=sys.stderr)
            return 1
        except ProjectNotFound as err:
            print(f"palviz {args.command}: {err}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as err:
            print(_stopped_line(args.command, err, stop.signum), file=sys.stderr)
            return 128 + stop.signum
