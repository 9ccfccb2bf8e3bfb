"""Stopping means stopping: Ctrl-C and SIGTERM end a command at once (queued runs cancelled,
workers ended, one line, status 130 or 143, no traceback) and a rerun resumes; workers ignore
a terminal's SIGINT and die with their parent even when it is killed with SIGKILL; a broken
entry that another process moves aside while run_many reads the cache counts as missing.

The signals go to real child processes: ``python -m palviz`` in a session of its own, whose
whole process group gets SIGINT as a terminal's Ctrl-C would do it, or its parent alone gets
SIGTERM or SIGKILL as a scheduler, ``timeout`` or the OOM killer would. Those tests take tens
of seconds because each starts Python processes that import torch (on an idle 2-core machine
about half of that); the rest take a second or two."""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from palviz import cli
from palviz import experiments as ex
from palviz.experiments import cluster, runcache, workers

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads the process table from /proc"
)

#: Seconds a test waits for training to reach its first checkpoint (a loaded machine).
START_TIMEOUT = 300


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, ppid, pgrp,
    session, ...), or ``None`` if there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def identity(pid: int) -> tuple[int, str] | None:
    """``(pid, start time)``: a process, told apart from a later one given the same pid."""
    fields = stat_fields(pid)
    return None if fields is None else (pid, fields[19])


def descendants(root: int) -> set[tuple[int, str]]:
    """Every live process below ``root`` in the process tree, as :func:`identity`."""
    parents = {}
    for entry in Path("/proc").glob("[0-9]*"):
        fields = stat_fields(int(entry.name))
        if fields is not None:
            parents[int(entry.name)] = int(fields[1])
    found, todo = set(), [root]
    while todo:
        parent = todo.pop()
        for pid, ppid in parents.items():
            if ppid == parent and (ident := identity(pid)) is not None and ident not in found:
                found.add(ident)
                todo.append(pid)
    return found


def still_running(processes: set[tuple[int, str]]) -> set[tuple[int, str]]:
    """Those of ``processes`` that still run (a zombie, dead but not yet reaped, does not)."""
    alive = set()
    for pid, start in processes:
        fields = stat_fields(pid)
        if fields is not None and fields[19] == start and fields[0] not in "ZX":
            alive.add((pid, start))
    return alive


def outliving(processes: set[tuple[int, str]], seconds: float) -> list[str]:
    """Wait up to ``seconds`` for ``processes`` to end; the command lines of those still
    running, which are then killed (not to outlive the test)."""
    deadline = time.monotonic() + seconds
    while (alive := still_running(processes)) and time.monotonic() < deadline:
        time.sleep(0.1)
    names = [command_line(pid) for pid, _ in alive]
    for pid, _ in alive:
        os.kill(pid, signal.SIGKILL)
    return names


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


def deaf_to(pid: int, signum: int) -> bool:
    """Whether ``signum`` cannot reach the process: it ignores it, or (still starting) its
    main thread blocks it (``SigIgn``, ``SigBlk`` of ``/proc/<pid>/status``)."""
    status = Path(f"/proc/{pid}/status").read_text()
    masks = re.findall(r"^Sig(?:Ign|Blk):\s*([0-9a-f]+)$", status, re.M)
    return any(int(mask, 16) >> (signum - 1) & 1 for mask in masks)


def environment(runs: Path) -> dict:
    env = dict(os.environ)
    env["PALVIZ_RUNS"] = str(runs)
    env["PALVIZ_PROFILE"] = "smoke"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.pop("PALVIZ_TOY", None)
    return env


def start(args: list[str], runs: Path) -> subprocess.Popen:
    """``python args`` in a session of its own (its own process group, as a terminal gives
    a command), with the run cache ``runs``."""
    return subprocess.Popen(
        [sys.executable, *args],
        env=environment(runs),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for_training(proc: subprocess.Popen, runs: Path) -> None:
    """Until a run has written its first checkpoint (its workers are past their start)."""
    deadline = time.monotonic() + START_TIMEOUT
    while not list(runs.glob("*/checkpoint.pt")):
        if proc.poll() is not None:
            pytest.fail(f"ended before training (status {proc.returncode}): {proc.stderr.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no checkpoint in {START_TIMEOUT} s")
        time.sleep(0.05)


def finished_runs(runs: Path) -> set[str]:
    """The keys with a ``metrics.json`` (counted from the files, not through palviz)."""
    return {p.parent.name for p in runs.glob("*/metrics.json")}


def stop(proc: subprocess.Popen, signum: int, group: bool = False) -> str:
    """Send ``signum`` to the command (``group``: to its whole process group); check that it
    ends within a minute with status 128 + ``signum`` and no traceback; the one line of its
    standard error (progress bars split at their carriage returns) that says it stopped."""
    (os.killpg if group else os.kill)(proc.pid, signum)
    try:
        _, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"still running 60 s after {signal.Signals(signum).name}")
    assert proc.returncode == 128 + signum
    assert "Traceback" not in stderr, stderr
    (line,) = [ln for ln in re.split(r"[\r\n]+", stderr) if "interrupted" in ln]
    return line


def test_ctrl_c_cancels_the_queue_ends_the_workers_and_a_rerun_resumes(
    tmp_path, capsys, monkeypatch
):
    runs = tmp_path / "runs"
    planned = 3  # notebook 00's smoke runs: two train on two workers, one waits in the queue
    proc = start(["-m", "palviz", "sweep", "--only", "00", "--workers", "2"], runs)
    wait_for_training(proc, runs)
    tree = descendants(proc.pid)
    pool = [pid for pid, _ in tree if "multiprocessing.spawn" in command_line(pid)]
    assert len(pool) == 2, [command_line(pid) for pid, _ in tree]
    assert all(deaf_to(pid, signal.SIGINT) for pid in pool)  # only the parent acts on Ctrl-C
    line = stop(proc, signal.SIGINT, group=True)  # what a terminal does on Ctrl-C
    cached = len(finished_runs(runs))
    started = [p for p in runs.iterdir() if not p.name.startswith(".")]
    assert len(started) <= 2, "the queued run was started"
    assert f"palviz sweep: interrupted: {cached} of the {planned} run(s) asked for" in line
    assert "running again resumes" in line
    assert not outliving(tree, 5), "workers or the resource tracker outlived the command"
    # the rerun (here in this process) trains only what is not cached, and finishes
    monkeypatch.setenv("PALVIZ_RUNS", str(runs))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    assert cli.main(["sweep", "--profile", "smoke", "--only", "00", "--workers", "1"]) == 0
    assert (
        f"{planned} run(s) planned (smoke), {planned - cached} missing" in capsys.readouterr().out
    )
    assert len(finished_runs(runs)) == planned


def test_sigterm_to_the_command_alone_stops_it_with_status_143(tmp_path):
    runs = tmp_path / "runs"
    specfile = tmp_path / "one.jsonl"
    spec = ex.lt_spec("CE", profile="smoke", epochs=100)
    specfile.write_text(json.dumps(spec.to_dict()) + "\n")
    proc = start(["-m", "palviz", "train", str(specfile)], runs)
    wait_for_training(proc, runs)
    line = stop(proc, signal.SIGTERM)  # the command alone, as `timeout` or a scheduler does
    assert line.startswith("palviz train: interrupted (SIGTERM)")
    assert not finished_runs(runs) and (runs / spec.key() / "checkpoint.pt").exists()


KILLED_PARENT = """
import concurrent.futures as cf
from palviz.experiments.cluster import run_many
from palviz.experiments.recipes import lt_spec

if __name__ == "__main__":
    short = [lt_spec(m, profile="smoke", epochs=2) for m in ("CE", "Focal")]
    long = [lt_spec(m, profile="smoke", epochs=100) for m in ("LA-CE", "CE-DRW")]
    # run_many from a thread of a thread pool: Linux's parent-death signal follows the
    # thread that started the workers; it must not end them before their runs do
    with cf.ThreadPoolExecutor(1) as threads:
        threads.submit(run_many, short + long, workers=2).result()
"""


def test_workers_started_from_a_thread_train_and_die_with_a_killed_parent(tmp_path):
    runs = tmp_path / "runs"
    proc = start(["-c", KILLED_PARENT], runs)
    deadline = time.monotonic() + START_TIMEOUT
    # the short runs finish (their workers lived on), a long one trains
    while len(finished_runs(runs)) < 2 or len(list(runs.glob("*/checkpoint.pt"))) < 3:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, f"not training after {START_TIMEOUT} s"
        time.sleep(0.05)
    tree = descendants(proc.pid)
    names = [command_line(pid) for pid, _ in tree]
    assert sum("multiprocessing.spawn" in n for n in names) == 2, names
    assert any("resource_tracker" in n for n in names), names
    proc.send_signal(signal.SIGKILL)  # no handler runs: what the OOM killer does
    proc.wait()
    left = outliving(tree, 5)
    assert not left, f"outlived their killed parent: {left}"
    assert len(finished_runs(runs)) == 2


WATCHED = """
import os, sys, time
from palviz.experiments import workers
if sys.argv[1] == "watchdog":
    sys.platform = "watchdog-only"  # no parent-death signal: only the portable watchdog
else:
    workers.WATCHDOG_SECONDS = 3600  # only the parent-death signal can act in time
workers.die_with_parent(os.getppid())
print(os.getpid(), flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize(
    "how",
    [
        "watchdog",
        pytest.param(
            "parent-death signal",
            marks=pytest.mark.skipif(sys.platform != "linux", reason="Linux's prctl"),
        ),
    ],
)
def test_a_worker_ends_when_its_parent_is_killed(how, tmp_path):
    parent = start(
        [
            "-c",
            "import subprocess, sys, time\n"
            f"subprocess.Popen([sys.executable, '-c', {WATCHED!r}, {how.split()[0]!r}])\n"
            "time.sleep(60)",
        ],
        tmp_path,
    )
    child = int(parent.stdout.readline())  # the grandchild printed its pid once armed
    watched = {identity(child)}
    assert still_running(watched)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert not outliving(watched, 2 + workers.WATCHDOG_SECONDS), "outlived its killed parent"


def test_workers_start_with_sigint_blocked_and_then_ignore_it():
    context = multiprocessing.get_context("spawn")
    # started without the initializer: the mask the worker inherited from starting_workers
    with cf.ProcessPoolExecutor(1, mp_context=context) as plain:
        with workers.starting_workers():
            mask = plain.submit(signal.pthread_sigmask, signal.SIG_BLOCK, [])
        assert signal.SIGINT in mask.result()  # no Ctrl-C reaches it while it imports
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # restored here
    with cluster.local_pool(1) as pool:
        handler = pool.submit(signal.getsignal, signal.SIGINT).result()
        mask = pool.submit(signal.pthread_sigmask, signal.SIG_BLOCK, []).result()
    assert handler == signal.SIG_IGN and signal.SIGINT not in mask


def test_a_ctrl_c_while_workers_start_is_handled_after_they_started():
    calls = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    try:
        with workers.starting_workers():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
            held = list(calls)
        assert held == [] and calls == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_an_interrupted_command_says_so_in_one_line_and_exits_130(monkeypatch, capsys):
    def interrupted(_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_plan", interrupted)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert cli.main(["plan", "--profile", "smoke"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("palviz plan: interrupted (Ctrl-C)")
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_broken_entry_moved_aside_by_another_process_counts_as_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    spec = ex.lt_spec("CE", profile="smoke")
    folder = tmp_path / "runs" / spec.key()
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text('{"key": "' + spec.key())  # truncated
    quarantine = runcache.quarantine

    def raced(folder, problem, label=""):
        quarantine(folder, problem, label)  # another process moves it aside first
        return quarantine(folder, problem, label)  # this one finds it gone

    monkeypatch.setattr(runcache, "quarantine", raced)
    with pytest.warns(RuntimeWarning, match="is broken: metrics.json is not readable"):
        (result,) = cluster.run_many([spec], workers=1)
    assert result.metrics["key"] == spec.key() and ex.is_cached(spec)  # trained again
    assert len(list((tmp_path / "runs" / ".broken").iterdir())) == 1
