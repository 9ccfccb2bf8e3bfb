"""Training the missing runs elsewhere: local process pools (optionally several workers per
GPU), submitit (Slurm job arrays that requeue themselves when preempted) and Dask.

- :func:`gpu_slots` where ``G * W`` local workers go on ``G`` GPUs (a pure function);
- :func:`local_pool` the default pool of :func:`palviz.runcache.run_many` (``spawn``);
- :class:`TrainJob` one run as a picklable callable with submitit's ``checkpoint`` hook;
- :func:`train_with` submits missing runs to any executor and yields them as they finish;
- :func:`make_executor` the executors of ``palviz sweep``;
- :func:`activation_bytes` what a training step of a network holds in memory.
"""

from __future__ import annotations

import ast
import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "TrainJob",
    "activation_bytes",
    "gpu_slots",
    "local_pool",
    "make_executor",
    "train_with",
]


def gpu_slots(num_gpus: int, workers_per_gpu: int) -> list[str]:
    """The devices of ``num_gpus * workers_per_gpu`` local workers, round-robin over the GPUs:
    ``gpu_slots(2, 2) == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]``; ``[]`` without GPUs or
    with ``workers_per_gpu == 0``."""
    if num_gpus < 0 or workers_per_gpu < 0:
        raise ValueError(f"need num_gpus, workers_per_gpu >= 0, got {num_gpus}, {workers_per_gpu}")
    return [f"cuda:{i % num_gpus}" for i in range(num_gpus * workers_per_gpu)]


def _pin_worker(slots: Any) -> None:
    """Worker initializer: take one slot (``"cuda:i"``) and see only GPU ``i``, so that
    ``device="auto"`` (cuda:0 inside the worker) is that GPU."""
    slot = slots.get()
    os.environ["CUDA_VISIBLE_DEVICES"] = slot.split(":", 1)[1]
    os.environ["PALVIZ_WORKER_SLOT"] = slot


def local_pool(workers: int, slots: list[str] | None = None) -> cf.ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes; with ``slots`` (from :func:`gpu_slots`), one
    process per slot, each pinned to its GPU by ``CUDA_VISIBLE_DEVICES``.

    The start method is ``spawn`` (``fork`` is unsafe once torch has started threads, and CUDA
    cannot be used in a forked child): each worker imports the calling script again, so a
    script must call :func:`palviz.runcache.run_many` under ``if __name__ == "__main__":``.
    """
    context = multiprocessing.get_context("spawn")
    if not slots:
        return cf.ProcessPoolExecutor(max_workers=workers, mp_context=context)
    queue = context.Queue()
    for slot in slots:
        queue.put(slot)
    return cf.ProcessPoolExecutor(
        max_workers=len(slots), mp_context=context, initializer=_pin_worker, initargs=(queue,)
    )


class TrainJob:
    """``run(spec)`` as a picklable callable. Under submitit, a preempted or timed-out job
    requeues itself (:meth:`checkpoint`); the requeued job resumes from the run's
    ``checkpoint.pt`` (written every epoch) through the run cache."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    def __call__(self) -> Any:
        from palviz.runcache import run

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
    futures = {executor.submit(TrainJob(spec)): key for key, spec in todo.items()}
    try:
        for future in cf.as_completed(futures):
            yield futures[future], future.result()
    except BrokenProcessPool as err:
        raise _broken_pool_error(err) from err


def make_executor(kind: str, **options: Any) -> Any:
    """The executor of ``palviz sweep --executor kind``.

    - ``"slurm"``: ``submitit.AutoExecutor(folder=log_dir, cluster="slurm")`` with
      ``slurm_partition``, ``timeout_min``, ``gpus_per_node``, ``cpus_per_task``,
      ``slurm_array_parallelism`` and any other ``slurm_*`` parameter;
    - ``"submitit-local"``: the same through submitit's local executor (one machine, for
      trying the Slurm path);
    - ``"dask"``: ``distributed.Client(scheduler).get_executor()``;
    - ``"local"``: ``None`` (:func:`palviz.runcache.run_many`'s own process pool).
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
    import torch

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
