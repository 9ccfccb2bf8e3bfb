"""A lock per run key, shared by every worker that uses the same ``runs/`` folder (processes on
one machine, or jobs on several nodes of a shared file system): :class:`RunLock`.

Two workers asked for the same key: one takes the lock and trains, the other waits, sees the
finished ``metrics.json`` and reads it. The rules:

- The lock is ``runs/.locks/<key>.lock``, held with :class:`filelock.FileLock` (``flock``):
  the operating system releases it when its owner dies on the same machine, even by SIGKILL,
  and an NFSv4 server when the owner's node stops renewing its lease.
  ``PALVIZ_LOCK=soft`` uses :class:`filelock.SoftFileLock` instead (the lock is the file's
  existence) for a file system without ``flock``.
- Next to it, ``runs/.locks/<key>.owner`` records the owner (``pid``, ``host``, ``time``) as
  JSON; its modification time is a heartbeat that a thread of the owner renews every
  :func:`heartbeat_seconds` (a tenth of the stale limit, at most 30 s) while it holds the lock.
- A waiter takes the lock over (with a warning naming the key and the reason) when the owner
  is *stale*: a dead process on the waiter's own host, or no heartbeat for
  ``PALVIZ_LOCK_STALE`` seconds (default 600), e.g. a crashed or frozen node. The take-over
  happens under a second lock, ``<key>.takeover``, and re-checks the rule there, so two
  waiters never both take over the same owner. A taken-over owner that comes back to life
  trains the same run again; both write identical files atomically, so nothing breaks.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import filelock

from palviz.files import storage_errors

DEFAULT_STALE_SECONDS = 600.0


def stale_after() -> float:
    """Seconds without a heartbeat after which an owner counts as gone (``PALVIZ_LOCK_STALE``,
    default 600)."""
    return float(os.environ.get("PALVIZ_LOCK_STALE") or DEFAULT_STALE_SECONDS)


def heartbeat_seconds(limit: float | None = None) -> float:
    """How often an owner renews its heartbeat: a tenth of the stale limit, at most 30 s."""
    limit = stale_after() if limit is None else limit
    return max(0.05, min(30.0, limit / 10))


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this machine."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def stale_reason(
    record: dict | None, age: float, *, host: str, limit: float, alive=pid_alive
) -> str | None:
    """Why an owner (its ``record`` and the ``age`` in seconds of its last heartbeat) counts as
    gone, seen from ``host``; ``None`` while it counts as alive. A pure rule (``alive``
    tells whether a pid lives on ``host``)."""
    if record and record.get("host") == host and not alive(record.get("pid", -1)):
        return f"its owner, pid {record.get('pid')} on {host}, is gone"
    if age > limit:
        who = f"pid {record.get('pid')} on {record.get('host')}" if record else "an unknown owner"
        return f"no heartbeat from {who} for {age:.0f} s (limit {limit:.0f} s)"
    return None


class RunLock:
    """The lock of run ``key`` under ``root`` (see the module's rules).

    ``acquire(done)`` blocks until this process holds the lock, or returns ``False`` early
    (without the lock) once ``done()`` is true, e.g. when another worker finished the run.
    """

    def __init__(self, root: str | os.PathLike, key: str, *, poll: float = 0.5) -> None:
        self.key = key
        folder = Path(root) / ".locks"
        with storage_errors(folder):  # a read-only or full run cache: one clear error
            folder.mkdir(parents=True, exist_ok=True)
        self.lock_path = folder / f"{key}.lock"
        self.owner_path = folder / f"{key}.owner"
        self.takeover_path = folder / f"{key}.takeover"
        self.poll = poll
        self.limit = stale_after()
        self.host = socket.gethostname()
        soft = os.environ.get("PALVIZ_LOCK", "").lower() == "soft"
        self._cls = filelock.SoftFileLock if soft else filelock.FileLock
        self._lock = self._cls(str(self.lock_path))
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self.record: dict | None = None

    # -- holding
    def acquire(self, done: Callable[[], bool] | None = None) -> bool:
        while True:
            try:
                with storage_errors(self.lock_path):
                    self._lock.acquire(timeout=self.poll)
            except filelock.Timeout:
                if done is not None and done():
                    return False
                if self._take_over_if_stale():
                    return True
                continue
            self._own()
            return True

    def release(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        with contextlib.suppress(FileNotFoundError, ValueError, OSError):
            if json.loads(self.owner_path.read_text()) == self.record:
                self.owner_path.unlink()
        self._lock.release()

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def _own(self) -> None:
        self.record = {"pid": os.getpid(), "host": self.host, "time": time.time()}
        tmp = self.owner_path.with_name(f".{self.owner_path.name}.{os.getpid()}.tmp")
        try:
            with storage_errors(self.owner_path):
                tmp.write_text(json.dumps(self.record))
                os.replace(tmp, self.owner_path)
        except BaseException:  # e.g. a full disk: give the lock back, leave no temp file
            with contextlib.suppress(OSError):
                tmp.unlink()
            self._lock.release()
            raise
        self._stop.clear()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True, name="palviz-lock")
        self._beat.start()

    def _heartbeat(self) -> None:
        every = heartbeat_seconds(self.limit)
        while not self._stop.wait(every):
            with contextlib.suppress(OSError):
                os.utime(self.owner_path)

    # -- waiting
    def owner(self) -> tuple[dict | None, float | None]:
        """The owner record and the seconds since its last heartbeat (``None, None`` when
        there is neither an owner record nor a lock file)."""
        now = time.time()
        try:
            mtime = self.owner_path.stat().st_mtime
            record = json.loads(self.owner_path.read_text())
        except (FileNotFoundError, ValueError, OSError):
            record = None
            try:
                mtime = self.lock_path.stat().st_mtime
            except FileNotFoundError:
                return None, None
        return (record if isinstance(record, dict) else None), max(0.0, now - mtime)

    def _take_over_if_stale(self) -> bool:
        """Take the lock over from a stale owner; whether this process now holds it."""
        record, age = self.owner()
        if age is None or stale_reason(record, age, host=self.host, limit=self.limit) is None:
            return False
        with filelock.FileLock(str(self.takeover_path)):
            record, age = self.owner()  # again: another waiter may have taken over meanwhile
            if age is None:
                return False
            reason = stale_reason(record, age, host=self.host, limit=self.limit)
            if reason is None:
                return False
            warnings.warn(
                f"run cache: taking over the lock of run {self.key}: {reason}",
                RuntimeWarning,
                stacklevel=4,
            )
            # A new file: the old owner's flock (if any) stays on the unlinked one. The owner
            # record is rewritten at once, so a second waiter re-checking sees a fresh owner.
            with contextlib.suppress(FileNotFoundError):
                self.lock_path.unlink()
            self._lock = self._cls(str(self.lock_path))
            try:
                self._lock.acquire(timeout=self.poll)
            except filelock.Timeout:
                return False  # a newcomer took the fresh lock first: wait for it instead
            self._own()
            return True
