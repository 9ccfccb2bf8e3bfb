"""Training many runs: :func:`run_many` and :func:`run_grouped` read the cached ones through
:mod:`palviz.experiments.runcache` and train the missing ones in this process, in local process
pools (optionally several workers per GPU) or through submitit (Slurm job arrays that requeue
themselves when preempted).

- :func:`run_many` / :func:`run_grouped` every spec's result, in order, with one progress bar;
- :func:`gpu_slots` where ``G * W`` local workers go on ``G`` GPUs (a pure function);
- :func:`local_pool` the default pool of :func:`run_many` (``spawn``), whose workers ignore
  Ctrl-C and die with their parent; :func:`stop_pool` cancels its queue and ends them now;
- :class:`TrainJob` one run as a picklable callable with submitit's ``checkpoint`` hook;
- :func:`train_with` submits missing runs to any executor and yields them as they finish;
- :func:`make_executor` the executors of ``palviz sweep`` (sbatch and submitit report their
  own errors: a refused job array is submitit's ``FailedJobError``, in sbatch's words);
- :func:`sbatch_script` a script submitting a ``palviz plan --jsonl`` file as a plain array.

Stopping: Ctrl-C (or, under the ``palviz`` command, SIGTERM) during :func:`run_many` cancels
the queued runs, ends the local workers at once (a run in flight stops mid-epoch; it resumes
from its last checkpoint next time) and raises :class:`RunsInterrupted`, a
``KeyboardInterrupt`` whose message says how many of the runs asked for are cached. The
workers ignore SIGINT (a terminal sends Ctrl-C to the whole process group; only the parent
acts on it) and exit when their parent is gone, however it died: on Linux through a
parent-death signal, elsewhere through a thread that watches the parent's pid.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import io
import multiprocessing
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from palviz.experiments.cachedir import check_cache_writable
from palviz.experiments.runcache import RunResult, is_cached, read_cached, run
from palviz.experiments.runspec import RunSpec
from palviz.experiments.workers import init_worker, starting_workers
from palviz.files import data_dir, runs_dir


def gpu_slots(num_gpus: int, workers_per_gpu: int) -> list[str]:
    """The devices of ``num_gpus * workers_per_gpu`` local workers, round-robin over the GPUs:
    ``gpu_slots(2, 2) == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]``; ``[]`` without GPUs or
    with ``workers_per_gpu == 0``."""
    if num_gpus < 0 or workers_per_gpu < 0:
        raise ValueError(f"need num_gpus, workers_per_gpu >= 0, got {num_gpus}, {workers_per_gpu}")
    return [f"cuda:{i % num_gpus}" for i in range(num_gpus * workers_per_gpu)]


def local_pool(workers: int, slots: list[str] | None = None) -> cf.ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes; with ``slots`` (from :func:`gpu_slots`), one
    process per slot, each pinned to its GPU by ``CUDA_VISIBLE_DEVICES``.

    The start method is ``spawn`` (``fork`` is unsafe once torch has started threads, and CUDA
    cannot be used in a forked child): each worker imports the calling script again, so a
    script must call :func:`run_many` under ``if __name__ == "__main__":``.

    The workers ignore SIGINT and end when this process ends, however it ends
    (:func:`palviz.experiments.workers.init_worker`); :func:`stop_pool` ends them at once.
    """
    context = multiprocessing.get_context("spawn")
    queue = context.Queue() if slots else None
    for slot in slots or ():
        queue.put(slot)
    return cf.ProcessPoolExecutor(
        max_workers=len(slots) if slots else workers,
        mp_context=context,
        initializer=init_worker,
        initargs=(os.getpid(), queue),
    )


def stop_pool(pool: cf.ProcessPoolExecutor, grace: float = 5.0) -> None:
    """Cancel the runs queued in ``pool`` and end its workers now, without waiting for the
    runs in flight: SIGTERM, then SIGKILL for a worker still alive after ``grace`` seconds.
    A run stopped mid-epoch resumes from its last checkpoint when it is asked for again."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            process.terminate()
    deadline = time.monotonic() + grace
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join(1.0)


class RunsInterrupted(KeyboardInterrupt):
    """:func:`run_many` stopped by Ctrl-C (or SIGTERM under ``palviz``): the queued runs were
    cancelled and the local workers ended. The message is one line: how many of the runs
    asked for are cached, and that asking again resumes."""


class TrainJob:
    """``run(spec)`` as a picklable callable. Under submitit, a preempted or timed-out job
    requeues itself (:meth:`checkpoint`); the requeued job resumes from the run's
    ``checkpoint.pt`` (written every epoch) through the run cache."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec

    def __call__(self) -> RunResult:
        return run(self.spec)

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        import submitit

        return submitit.helpers.DelayedSubmission(TrainJob(self.spec))

    def __repr__(self) -> str:
        return f"TrainJob({self.spec.label or self.spec.loss}, key={self.spec.key()})"


class WorkerStartError(RuntimeError):
    """A worker process of the local pool died before it returned a result."""


def _broken_pool_error(err: BaseException) -> WorkerStartError:
    """Why the local pool broke: a script that calls :func:`run_many` without an ``if __name__
    == "__main__":`` guard (an ``if`` line naming ``__name__``), else a killed worker."""
    script = getattr(sys.modules.get("__main__"), "__file__", None)  # None: a notebook, -c
    text = Path(script).read_text(errors="replace") if script and Path(script).is_file() else ""
    if text and not re.search(r"^\s*(el)?if\b.*\b__name__\b", text, re.MULTILINE):
        return WorkerStartError(
            f"the worker processes of run_many died: {script} calls run_many without "
            '`if __name__ == "__main__":`. palviz starts its workers with the "spawn" method '
            "(fork is unsafe once torch has started threads), which imports your script again "
            "in every worker; put the code that calls run_many (or the notebook helpers) "
            'under `if __name__ == "__main__":`, or pass workers=1 to train in this process.'
        )
    return WorkerStartError(
        f"a worker process of run_many died ({err}): killed (out of memory?) or crashed. "
        "Finished runs are cached; run again to continue (a killed run resumes from its "
        "checkpoint), or pass workers=1 to see the error in this process."
    )


def train_with(executor: Any, todo: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Submit :class:`TrainJob` of each ``key -> spec`` of ``todo`` to ``executor`` and yield
    ``(key, RunResult)`` as they finish.

    ``executor`` is a :class:`concurrent.futures.Executor` (e.g. a process pool) or a
    submitit executor, whose jobs are submitted as one job array (``executor.batch()``) and
    yielded as they finish too (:func:`_as_finished`)."""
    from concurrent.futures.process import BrokenProcessPool

    if type(executor).__module__.startswith("submitit"):
        # one job array; an array sbatch refuses raises submitit's FailedJobError with
        # sbatch's words, which submitit would print as well: here they are said once
        folder = Path(executor.folder)
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.redirect_stderr(io.StringIO()), executor.batch():
            jobs = {key: executor.submit(TrainJob(spec)) for key, spec in todo.items()}
        yield from _as_finished(jobs, folder / "submitit.log")
        return
    with starting_workers():  # a process pool starts its workers as runs are submitted
        futures = {executor.submit(TrainJob(spec)): key for key, spec in todo.items()}
    try:
        for future in cf.as_completed(futures):
            yield futures[future], future.result()
    except BrokenProcessPool as err:
        raise _broken_pool_error(err) from err
    except KeyboardInterrupt:
        for future in futures:  # the queued runs (a local pool's workers: stop_pool)
            future.cancel()
        raise


# --------------------------------------------------------------------------- Slurm


def sbatch_script(plan_file: str | os.PathLike, count: int, name: str = "SCRIPT") -> str:
    """A shell script that submits the ``count`` runs of ``plan_file`` (a ``palviz plan
    --jsonl`` file) as one Slurm job array, task ``i`` running ``palviz train plan_file
    --index i``; the script's arguments go to ``sbatch`` (the resources, e.g.
    ``--gres=gpu:1 --cpus-per-task=4 --time=12:00:00``). Each task's log is appended to on a
    requeue (``--open-mode=append``) and the run resumes from its checkpoint. With
    ``count == 0`` the script submits nothing and says so. The run cache and data folders
    are fixed to this process's; ``name`` is how the script's comment calls it."""
    plan = Path(plan_file).resolve()
    if count == 0:
        said = shlex.quote(f"nothing to do: {plan} holds no run to train; nothing submitted")
        return (
            "#!/bin/sh\n# Written by `palviz plan --sbatch`: the plan holds no run to train.\n"
            f"echo {said}\n"
        )
    env = {"PALVIZ_RUNS": str(runs_dir()), "PALVIZ_DATA": str(data_dir())}
    train = f"{shlex.quote(sys.executable)} -m palviz train {shlex.quote(str(plan))}"
    wrap = shlex.quote(f"{train} --index $SLURM_ARRAY_TASK_ID")  # expanded in the task
    lines = [
        "#!/bin/sh",
        f"# Written by `palviz plan --sbatch`: the {count} run(s) of {plan} as one Slurm job",
        "# array, task i training line i. Arguments go to sbatch, e.g.",
        f"#   sh {name} --gres=gpu:1 --cpus-per-task=4 --time=12:00:00   (a GPU each)",
        f"#   sh {name} --cpus-per-task=1 --time=02:00:00                 (CPU only)",
        *(f"{var}={shlex.quote(value)}; export {var}" for var, value in env.items()),
        f"exec sbatch --array=0-{count - 1} --job-name=palviz --requeue --open-mode=append \\",
        f'    "$@" --wrap={wrap}',
    ]
    return "\n".join(lines) + "\n"


#: What says that submitit could not ask Slurm's accounting for the jobs' states.
SACCT_NOTE = (
    "submitit cannot read job states with sacct (is Slurm accounting on?): a run counts as "
    "finished when its result file appears, and a task killed before it wrote one is not "
    "noticed; submitit's messages go to {log}"
)


def _as_finished(jobs: Mapping[str, Any], log_file: Path) -> Iterator[tuple[str, Any]]:
    """``(key, result)`` of each submitit job as it finishes (``job.done()``), whatever the
    order they were submitted in, polled every second. What a poll prints (submitit's log,
    which it shows on stdout and stderr, and ``sacct``'s errors, once per poll without Slurm
    accounting) goes to ``log_file``, not into the progress bar; the first time that mentions
    ``sacct``, one line (:data:`SACCT_NOTE`) says so."""
    from tqdm.auto import tqdm

    start = log_file.stat().st_size if log_file.exists() else 0
    told = False
    pending = dict(jobs)
    while pending:
        with _output_into(log_file):
            finished = [key for key, job in pending.items() if job.done()]
        if not told and b"sacct" in log_file.read_bytes()[start:]:
            told = True
            tqdm.write(SACCT_NOTE.format(log=log_file), file=sys.stderr)
        for key in finished:
            yield key, pending.pop(key).result()
        if pending and not finished:
            time.sleep(1.0)


@contextlib.contextmanager
def _output_into(log_file: Path) -> Iterator[None]:
    """File descriptors 1 and 2 of this process (stdout, stderr), and so those of the
    commands it starts, go to ``log_file`` (appended) while this lasts."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(log_file, "ab") as handle:
            for fd in (1, 2):
                os.dup2(handle.fileno(), fd)
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def default_log_dir() -> Path:
    """submitit's folder (job scripts, pickles, logs) when ``log_dir`` is not given:
    ``.submitit/`` in the run cache, which every job sees."""
    return runs_dir() / ".submitit"


def make_executor(kind: str, **options: Any) -> Any:
    """The executor of ``palviz sweep --executor kind``.

    - ``"slurm"``: ``submitit.AutoExecutor(folder=log_dir, cluster="slurm")`` with
      ``slurm_partition``, ``timeout_min``, ``gpus_per_node``, ``cpus_per_task``,
      ``slurm_array_parallelism`` and any other ``slurm_*`` parameter (``None`` values are
      left out; ``gpus_per_node=0`` asks for no GPU at all). ``log_dir`` defaults to
      :func:`default_log_dir`. Each task's ``srun`` appends to its log
      (``--open-mode=append``), so a requeued task's log keeps the earlier attempts';
    - ``"submitit-local"``: the same through submitit's local executor (one machine, for
      trying the Slurm path; the Slurm-only parameters are dropped);
    - ``"local"``: ``None`` (:func:`run_many`'s own process pool).
    """
    if kind == "local":
        return None
    if kind not in ("slurm", "submitit-local"):
        raise ValueError(f"executor must be local, slurm or submitit-local, got {kind!r}")
    import submitit

    local = kind == "submitit-local"
    log_dir = options.pop("log_dir", None) or default_log_dir()
    executor = submitit.AutoExecutor(folder=log_dir, cluster="local" if local else "slurm")
    params = {
        k: v for k, v in options.items() if v is not None and not (local and k.startswith("slurm_"))
    }
    if local or not params.get("gpus_per_node"):
        params.pop("gpus_per_node", None)  # no --gpus-per-node=0 line: a CPU-only job
    if not local:
        params["slurm_srun_args"] = [*(params.get("slurm_srun_args") or []), "--open-mode=append"]
    executor.update_parameters(**params)
    return executor


def run_many(
    specs: Iterable[RunSpec],
    *,
    desc: str = "runs",
    workers: int | None = None,
    executor: Any = None,
    workers_per_gpu: int | None = None,
) -> list[RunResult]:
    """:func:`palviz.experiments.runcache.run` each spec, with one progress bar; missing runs train
    ``workers`` at a time.

    Cached runs are read here (a warm cache starts no process). Each missing cache key is
    trained once: by default in ``workers`` fresh (spawned) processes; ``workers=None`` means
    one per core (at most 2) on a CPU and 1 (in this process) on CUDA. Since
    :func:`~palviz.experiments.runcache.run` trains CPU runs on one thread, two runs side by side
    use two cores fully.

    ``workers_per_gpu=W`` with ``G`` visible GPUs starts ``G * W`` worker processes, placed
    round-robin on the GPUs (:func:`gpu_slots`); each sees only its own GPU.

    ``executor``: any :class:`concurrent.futures.Executor` (or an object with the same
    ``submit``, such as a submitit executor, whose jobs then form one job array) trains the
    missing runs instead; its workers must see the same ``runs/`` folder (``$PALVIZ_RUNS``).
    Returns one :class:`RunResult` per spec, in order, each carrying its own spec (and label).

    Ctrl-C cancels the queued runs, ends the local workers without waiting for the runs in
    flight and raises :class:`RunsInterrupted` (a ``KeyboardInterrupt``) saying how many of
    the runs asked for are cached; calling again resumes.
    """
    specs = list(specs)
    if workers is None:
        workers = 1 if torch.cuda.is_available() else max(1, min(2, os.cpu_count() or 1))
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be None or an integer >= 1, got {workers!r}")
    results: list[RunResult | None] = [None] * len(specs)
    missing: dict[str, list[int]] = {}  # key -> the indices of its specs

    def store(key: str, result: RunResult) -> None:
        for i in missing[key]:
            results[i] = RunResult(specs[i], result.metrics, result.path)

    try:
        for i, spec in enumerate(specs):
            if spec.key() not in missing:
                # an entry another process moved aside meanwhile (a broken one it quarantined)
                # is missing, as runcache.run counts it
                with contextlib.suppress(FileNotFoundError):
                    results[i] = read_cached(spec)
            if results[i] is None:
                missing.setdefault(spec.key(), []).append(i)
        todo = {key: specs[indices[0]] for key, indices in missing.items()}
        _train_missing(todo, store, desc, workers, executor, workers_per_gpu)
    except KeyboardInterrupt as err:
        keys = {spec.key(): spec for spec in specs}
        cached = sum(1 for spec in keys.values() if is_cached(spec))
        raise RunsInterrupted(
            f"interrupted: {cached} of the {len(keys)} run(s) asked for are cached; running "
            "again resumes (cached runs are read, an unfinished one continues from its last "
            "checkpoint)"
        ) from err
    return results  # type: ignore[return-value]


def _train_missing(
    todo: dict[str, RunSpec],
    store: Callable[[str, RunResult], Any],
    desc: str,
    workers: int,
    executor: Any,
    workers_per_gpu: int | None,
) -> None:
    """Train each ``key -> spec`` of ``todo`` under one progress bar and give each result to
    ``store(key, result)`` as it comes (:func:`run_many`'s second pass)."""
    from tqdm.auto import tqdm

    slots = gpu_slots(torch.cuda.device_count(), workers_per_gpu or 0)
    if not todo:
        return
    check_cache_writable(list(todo.values()))  # a read-only cache: one error, before any run
    workers = len(slots) if slots else workers
    pool = None
    with tqdm(total=len(todo), desc=desc, unit="run") as bar, contextlib.ExitStack() as stack:
        if executor is not None:
            finished = train_with(executor, todo)
        elif workers == 1 or len(todo) == 1:
            finished = _in_process(todo, bar)
        else:
            pool = stack.enter_context(local_pool(min(workers, len(todo)), slots))
            finished = train_with(pool, longest_first(todo))
        try:
            for key, result in finished:
                store(key, result)
                bar.update()
        except KeyboardInterrupt:
            if pool is not None:
                stop_pool(pool)
            raise


def _in_process(todo: Mapping[str, RunSpec], bar: Any) -> Iterator[tuple[str, RunResult]]:
    """``(key, run(spec))`` of each ``key -> spec`` of ``todo``, trained in this process, one
    after the other, with the run's label beside the progress ``bar``."""
    for key, spec in todo.items():
        bar.set_postfix_str(spec.label or spec.loss)
        yield key, run(spec)


def longest_first(todo: Mapping[str, RunSpec]) -> dict[str, RunSpec]:
    """``todo`` ordered by SGD steps, most first (ties in their order), so that the workers of a
    pool, which take the runs in this order, end together: a long run started last would keep
    one worker busy while the others wait (the longest-processing-time rule)."""
    from palviz.experiments.budget import steps_per_run

    return dict(sorted(todo.items(), key=lambda item: -steps_per_run(item[1])))


def run_grouped(
    groups: dict[Any, Sequence[RunSpec]], *, desc: str = "runs", workers: int | None = None
) -> dict[Any, list[RunResult]]:
    """:func:`run_many` over several named lists of specs at once (one pool of workers for
    all of them), returning the results under the same names, each list in order."""
    flat = [spec for specs in groups.values() for spec in specs]
    results = iter(run_many(flat, workers=workers, desc=desc))
    return {name: [next(results) for _ in specs] for name, specs in groups.items()}
