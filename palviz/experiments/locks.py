"""A lock per run key, shared by every worker that uses the same ``runs/`` folder (processes on
one machine, or jobs on several nodes of a shared file system): :class:`RunLock`.

Two workers asked for the same key: one takes the lock and trains, the other waits, sees the
finished ``metrics.json`` and reads it. The lock is ``runs/.locks/<key>.lock``, held with
:class:`filelock.FileLock` (``flock``): the operating system releases it when its owner dies,
even by SIGKILL, and an NFSv4 server when the owner's node stops renewing its lease.
``PALVIZ_LOCK=soft`` uses :class:`filelock.SoftFileLock` instead (the lock is the file's
existence) for a file system without ``flock``. A lock that outlives its owner (a frozen node,
or a soft lock of a killed process) is cleared by deleting its file once no job runs
(docs/cluster.md, "The shared cache").
"""

import os
from collections.abc import Callable
from pathlib import Path

import filelock

from palviz.files import storage_errors


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this machine."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


class RunLock:
    """The lock of run ``key`` under ``root`` (see the module's docstring).

    ``acquire(done)`` blocks until this process holds the lock, trying every ``poll`` seconds,
    or returns ``False`` early (without the lock) once ``done()`` is true, e.g. when another
    worker finished the run. Also a context manager (``with RunLock(root, key): ...``).
    """

    def __init__(self, root: str | os.PathLike, key: str, *, poll: float = 0.5) -> None:
        folder = Path(root) / ".locks"
        with storage_errors(folder):  # a read-only or full run cache: one clear error
            folder.mkdir(parents=True, exist_ok=True)
        soft = os.environ.get("PALVIZ_LOCK", "").lower() == "soft"
        kind = filelock.SoftFileLock if soft else filelock.FileLock
        self._lock = kind(str(folder / f"{key}.lock"), timeout=poll)

    def acquire(self, done: Callable[[], bool] | None = None) -> bool:
        while True:
            try:
                with storage_errors(self._lock.lock_file):
                    self._lock.acquire()
                return True
            except filelock.Timeout:
                if done is not None and done():
                    return False

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
