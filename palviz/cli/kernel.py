"""One notebook's run for ``palviz figures`` (:func:`execute_notebook`): its kernel's
environment (:func:`kernel_environment`) and cell limit (:func:`cell_timeout`), the watch on a
cell's lost reply (:class:`ReplyLost`), the staging folder its files go to while it runs
(:func:`figure_stage`) and the executed copy the course book is built from."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from palviz.files import (
    PROFILES,
    cache_dir,
    figures_base,
    figures_dir,
    publish,
    storage_errors,
    write_json,
)

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
#: are trained before the notebooks start (:func:`palviz.cli.figures.train_missing`), so a
#: cell only reads them; ``$PALVIZ_CELL_TIMEOUT`` (seconds) sets another limit.
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
    (:func:`palviz.cli.reuse.notebook_inputs`) is recorded beside the executed copy, with the
    files it wrote."""
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
