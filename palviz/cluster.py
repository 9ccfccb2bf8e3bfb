"""Training many runs: :func:`run_many` and :func:`run_grouped` read the cached ones through
:mod:`palviz.runcache` and train the missing ones in this process, in local process pools
(optionally several workers per GPU), through submitit (Slurm job arrays that requeue
themselves when preempted) or Dask.

- :func:`run_many` / :func:`run_grouped` every spec's result, in order, with one progress bar;
- :func:`gpu_slots` where ``G * W`` local workers go on ``G`` GPUs (a pure function);
- :func:`local_pool` the default pool of :func:`run_many` (``spawn``), whose workers ignore
  Ctrl-C and die with their parent; :func:`stop_pool` cancels its queue and ends them now;
- :class:`TrainJob` one run as a picklable callable with submitit's ``checkpoint`` hook;
- :func:`train_with` submits missing runs to any executor and yields them as they finish;
- :func:`make_executor` the executors of ``palviz sweep``;
- :func:`activation_bytes` what a training step of a network holds in memory.

Stopping: Ctrl-C (or, under the ``palviz`` command, SIGTERM) during :func:`run_many` cancels
the queued runs, ends the local workers at once (a run in flight stops mid-epoch; it resumes
from its last checkpoint next time) and raises :class:`RunsInterrupted`, a
``KeyboardInterrupt`` whose message says how many of the runs asked for are cached. The
workers ignore SIGINT (a terminal sends Ctrl-C to the whole process group; only the parent
acts on it) and exit when their parent is gone, however it died: on Linux through a
parent-death signal, elsewhere through a thread that watches the parent's pid.
"""

from __future__ import annotations

import ast
import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from palviz.runcache import (
    RunResult,
    RunSpec,
    check_cache_writable,
    is_cached,
    read_cached,
    run,
)
from palviz.workers import init_worker, starting_workers

__all__ = [
    "RunsInterrupted",
    "TrainJob",
    "activation_bytes",
    "gpu_slots",
    "local_pool",
    "make_executor",
    "run_grouped",
    "run_many",
    "stop_pool",
    "train_with",
]


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
    (:func:`palviz.workers.init_worker`); :func:`stop_pool` ends them at once.
    """
    context = multiprocessing.get_context("spawn")
    queue = None
    if slots:
        queue = context.Queue()
        for slot in slots:
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


def _interrupted_message(specs: Sequence[RunSpec]) -> str:
    keys = {spec.key(): spec for spec in specs}
    cached = sum(1 for spec in keys.values() if is_cached(spec))
    return (
        f"interrupted: {cached} of the {len(keys)} run(s) asked for are cached; running "
        "again resumes (cached runs are read, an unfinished one continues from its last "
        "checkpoint)"
    )


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


def _has_main_guard(path: str | None) -> bool | None:
    """Whether the script at ``path`` has an ``if __name__ == "__main__":`` (``None``: no
    script, e.g. a notebook or ``python -c``)."""
    if not path or not Path(path).is_file():
        return None
    try:
        tree = ast.parse(Path(path).read_text())
    except (SyntaxError, OSError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            return True
    return False


class WorkerStartError(RuntimeError):
    """A worker process of the local pool died before it returned a result."""


def _broken_pool_error(err: BaseException) -> WorkerStartError:
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if _has_main_guard(script) is False:
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

    ``executor`` is a :class:`concurrent.futures.Executor` (process pool, Dask's
    ``client.get_executor()``) or a submitit executor, whose jobs are submitted as one job
    array (``executor.batch()``) and collected in order."""
    from concurrent.futures.process import BrokenProcessPool

    batch = getattr(executor, "batch", None)
    if batch is not None and type(executor).__module__.startswith("submitit"):
        with batch():
            jobs = {key: executor.submit(TrainJob(spec)) for key, spec in todo.items()}
        for key, job in jobs.items():
            yield key, job.result()
        return
    local = isinstance(executor, cf.ProcessPoolExecutor)
    with starting_workers() if local else contextlib.nullcontext():
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


def make_executor(kind: str, **options: Any) -> Any:
    """The executor of ``palviz sweep --executor kind``.

    - ``"slurm"``: ``submitit.AutoExecutor(folder=log_dir, cluster="slurm")`` with
      ``slurm_partition``, ``timeout_min``, ``gpus_per_node``, ``cpus_per_task``,
      ``slurm_array_parallelism`` and any other ``slurm_*`` parameter;
    - ``"submitit-local"``: the same through submitit's local executor (one machine, for
      trying the Slurm path);
    - ``"dask"``: ``distributed.Client(scheduler).get_executor()``;
    - ``"local"``: ``None`` (:func:`run_many`'s own process pool).
    """
    if kind == "local":
        return None
    if kind in ("slurm", "submitit-local"):
        import submitit

        log_dir = options.pop("log_dir", None) or "runs/.submitit"
        cluster = "slurm" if kind == "slurm" else "local"
        executor = submitit.AutoExecutor(folder=log_dir, cluster=cluster)
        params = {k: v for k, v in options.items() if v is not None}
        if kind == "submitit-local":
            params = {k: v for k, v in params.items() if not k.startswith("slurm_")}
            params.pop("gpus_per_node", None)
        executor.update_parameters(**params)
        return executor
    if kind == "dask":
        from distributed import Client

        address = options.get("scheduler")
        client = Client(address) if address else Client(processes=True, threads_per_worker=1)
        return client.get_executor()
    raise ValueError(f"executor must be local, slurm, submitit-local or dask, got {kind!r}")


def run_many(
    specs: Iterable[RunSpec],
    *,
    desc: str = "runs",
    workers: int | None = None,
    executor: Any = None,
    workers_per_gpu: int | None = None,
) -> list[RunResult]:
    """:func:`palviz.runcache.run` each spec, with one progress bar; missing runs train
    ``workers`` at a time.

    Cached runs are read here (a warm cache starts no process). Each missing cache key is
    trained once: by default in ``workers`` fresh (spawned) processes; ``workers=None`` means
    one per core (at most 2) on a CPU and 1 (in this process) on CUDA. Since
    :func:`~palviz.runcache.run` trains CPU runs on one thread, two runs side by side use two
    cores fully.

    ``workers_per_gpu=W`` with ``G`` visible GPUs starts ``G * W`` worker processes, placed
    round-robin on the GPUs (:func:`gpu_slots`); each sees only its own GPU.

    ``executor``: any :class:`concurrent.futures.Executor` (or an object with the same
    ``submit``, such as a submitit executor, whose jobs then form one job array, or
    ``dask.distributed.Client(...).get_executor()``) trains the missing runs instead; its
    workers must see the same ``runs/`` folder (``$PALVIZ_RUNS``). Returns one
    :class:`RunResult` per spec, in order, each carrying its own spec (and label).

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
    missing: dict[str, list[int]] = {}
    try:
        for i, spec in enumerate(specs):
            cached = None if spec.key() in missing else _read_cached(spec)
            if cached is not None:
                results[i] = cached
            else:
                missing.setdefault(spec.key(), []).append(i)
        _train_missing(specs, missing, results, desc, workers, executor, workers_per_gpu)
    except KeyboardInterrupt as err:
        raise RunsInterrupted(_interrupted_message(specs)) from err
    return results  # type: ignore[return-value]


def _read_cached(spec: RunSpec) -> RunResult | None:
    """:func:`read_cached`, with an entry that another process moved aside meanwhile (a broken
    one it quarantined first) counted as missing, as :func:`palviz.runcache.run` does."""
    try:
        return read_cached(spec)
    except FileNotFoundError:
        return None


def _train_missing(
    specs: list[RunSpec],
    missing: dict[str, list[int]],
    results: list[RunResult | None],
    desc: str,
    workers: int,
    executor: Any,
    workers_per_gpu: int | None,
) -> None:
    """Train the first spec of each ``key -> indices`` of ``missing`` and put its result at
    those indices of ``results`` (:func:`run_many`'s second pass)."""
    from tqdm.auto import tqdm

    def store(key: str, result: RunResult) -> None:
        for i in missing[key]:
            results[i] = RunResult(specs[i], result.metrics, result.path)

    todo = {key: specs[idx[0]] for key, idx in missing.items()}
    if todo:
        check_cache_writable(list(todo.values()))  # a read-only cache: one error, before any run
    slots = gpu_slots(torch.cuda.device_count(), workers_per_gpu or 0)
    if slots and executor is None:
        workers = len(slots)
    if not todo:
        return
    if executor is not None:
        with tqdm(total=len(todo), desc=desc, unit="run") as bar:
            for key, result in train_with(executor, todo):
                store(key, result)
                bar.update()
    elif workers == 1 or len(todo) == 1:
        with tqdm(todo.items(), desc=desc, unit="run") as bar:
            for key, spec in bar:
                bar.set_postfix_str(spec.label or spec.loss)
                store(key, run(spec))
    else:
        with local_pool(min(workers, len(todo)), slots) as pool:
            try:
                with tqdm(total=len(todo), desc=desc, unit="run") as bar:
                    for key, result in train_with(pool, todo):
                        store(key, result)
                        bar.update()
            except KeyboardInterrupt:
                stop_pool(pool)
                raise


def run_grouped(
    groups: dict[Any, Sequence[RunSpec]], *, desc: str = "runs", workers: int | None = None
) -> dict[Any, list[RunResult]]:
    """:func:`run_many` over several named lists of specs at once (one pool of workers for
    all of them), returning the results under the same names, each list in order."""
    flat = [spec for specs in groups.values() for spec in specs]
    results = iter(run_many(flat, workers=workers, desc=desc))
    return {name: [next(results) for _ in specs] for name, specs in groups.items()}


# --------------------------------------------------------------------------- memory


def activation_bytes(model: Any, input_shape: tuple[int, ...], batch_size: int) -> dict:
    """What one training step of ``model`` on a batch of ``batch_size`` inputs of
    ``input_shape`` (without the batch axis) holds, in bytes, measured on the CPU in float32:

    - ``parameters``: the weights; ``gradients`` and ``momentum``: as many again each (SGD);
    - ``activations``: the outputs of every leaf module in one forward pass (forward hooks),
      which autograd keeps for the backward pass (an upper bound: in-place ReLUs share theirs);
    - ``total``: their sum. With AMP on a GPU the activations take about half as much; the
      CUDA context (about 300-500 MB per process) and the allocator's slack come on top.
    """
    seen = {"bytes": 0}

    def hook(_module, _inputs, output):
        outputs = output if isinstance(output, (tuple, list)) else (output,)
        for out in outputs:
            if torch.is_tensor(out):
                seen["bytes"] += out.numel() * out.element_size()

    handles = [m.register_forward_hook(hook) for m in model.modules() if not list(m.children())]
    try:
        with contextlib.ExitStack():
            model.train()
            x = torch.zeros(batch_size, *input_shape)
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    input_bytes = batch_size * int(torch.tensor(input_shape).prod()) * 4
    out = {
        "parameters": params,
        "gradients": params,
        "momentum": params,
        "activations": seen["bytes"] + input_bytes,
    }
    out["total"] = sum(out.values())
    return out
