"""What a worker process of :func:`palviz.experiments.cluster.local_pool` does before its first run,
and the parent's half of it. A spawned worker imports :mod:`palviz.experiments` (and with it
torch) before :func:`init_worker` runs, with SIGINT still blocked (:func:`starting_workers`);
a parent that died meanwhile is seen at once (:func:`die_with_parent`).

- :func:`init_worker` the pool's initializer: ignore SIGINT, die with the parent, take a GPU;
- :func:`die_with_parent` end this process when the process that started it is gone;
- :func:`pin_gpu` see only the GPU of one slot;
- :func:`starting_workers` the parent's side: start workers with SIGINT blocked.

Why ignore SIGINT: a terminal sends Ctrl-C to every process of its foreground group, and
Jupyter's interrupt to the kernel's whole group, so the workers get it too. A worker
interrupted inside an import keeps a half-initialized module (``partially initialized
module 'torch._dynamo'``) and fails every later run; a worker interrupted in a run returns the
interrupt as that run's result and takes the next queued run. Instead, only the parent acts
on Ctrl-C, and ends its workers (:func:`palviz.experiments.cluster.stop_pool`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

#: Seconds between two looks of a worker's watchdog at its parent's pid.
WATCHDOG_SECONDS = 0.5

#: The ``prctl`` option of Linux that asks for a signal when the parent thread ends.
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """End this process when ``parent_pid`` (the process that started it) is gone, even when
    it was killed with SIGKILL: on Linux the kernel sends this process SIGKILL at once
    (``PR_SET_PDEATHSIG``); everywhere a daemon thread looks at :func:`os.getppid` every
    :data:`WATCHDOG_SECONDS` (a dead parent's children are adopted by another process).

    Linux sends that signal when the *thread* that started this process ends, not the
    process: workers must be started from a thread that outlives them (the thread that
    submits to the pool; :func:`palviz.experiments.cluster.run_many` submits from the calling thread
    and
    returns only after its pool is shut down)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):  # no prctl: the watchdog acts
            libc = ctypes.CDLL(None, use_errno=True)
            args = (_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            libc.prctl(*(ctypes.c_ulong(arg) for arg in args))
    if os.getppid() != parent_pid:  # gone before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(WATCHDOG_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="palviz-watchdog", daemon=True).start()


def pin_gpu(slots: Any) -> None:
    """Take one slot (``"cuda:i"``) from the queue ``slots`` and see only GPU ``i``, so that
    ``device="auto"`` (cuda:0 inside the worker) is that GPU."""
    os.environ["CUDA_VISIBLE_DEVICES"] = slots.get().split(":", 1)[1]


def init_worker(parent_pid: int, slots: Any = None) -> None:
    """The initializer of every local pool worker: ignore SIGINT, die with the parent
    (:func:`die_with_parent`), draw progress bars under a thread lock and, given a queue of
    ``slots``, take a GPU (:func:`pin_gpu`).
    The worker started with SIGINT blocked (:func:`starting_workers`); a Ctrl-C that came
    meanwhile is discarded here."""
    from tqdm import tqdm

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    die_with_parent(parent_pid)
    # tqdm's default lock holds a multiprocessing semaphore (shared with no one here); a
    # worker ended mid-run would leave it to the resource tracker, which warns of a leak.
    tqdm.set_lock(threading.RLock())
    if slots is not None:
        pin_gpu(slots)


@contextlib.contextmanager
def starting_workers() -> Iterator[None]:
    """Around the calls that start worker processes (a process pool's ``submit``): SIGINT is
    blocked in this thread, so a worker starts with it blocked, and a Ctrl-C cannot interrupt
    it before :func:`init_worker` ignores it. In the main thread, a SIGINT or SIGTERM whose
    handler is Python's is held until the block ends and handled then, so that the pool has
    recorded every worker it started (one started unrecorded could not be ended)."""
    held: list[int] = []
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            handler = signal.getsignal(signum)
            if callable(handler):
                previous[signum] = handler
                signal.signal(signum, lambda received, _frame: held.append(received))
    masked = hasattr(signal, "pthread_sigmask")
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if masked else set()
    try:
        yield
    finally:
        if masked and signal.SIGINT not in blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(held):
            previous[signum](signum, None)
