"""The ``palviz`` command.

::

    palviz figures [--profile smoke|quick|full|paper] [--only 00 06 ...] [--jobs N] [--download]
                   [--rerun]
    palviz runs [--clear] [--keys KEY ...] [--check [--fix]]
    palviz plan [--profile paper] [--only 06 07] [--missing] [--jsonl FILE [--sbatch SCRIPT]]
    palviz train SPECFILE [--index I]
    palviz sweep [--profile paper] [--only 06] --executor local|slurm|submitit-local [...]
    palviz download {mnist,cifar10,cifar100} [...]
    palviz gallery [--profile quick]
    palviz report [--profile quick] [--compare]

A command with ``--profile`` reads ``$PALVIZ_PROFILE`` when it is not given (else ``quick``);
an unknown profile, from either, stops it before any work (:func:`parse_args`).

``figures`` trains the runs the notebooks will ask for that the cache lacks (one pool, before
any notebook starts), then executes the notebooks, started in order and two at a time on a
machine with two cores or more (``--jobs``), in ``notebooks/`` as JupyterLab would. It leaves
their figures in ``figures/`` and writes executed copies to ``build/<profile>/``, then builds
the course book from them, ``build/<profile>/book/index.html`` (see :mod:`palviz.book`).
Training results come from the run cache (``runs/``), so a second ``figures`` only
re-renders, and it keeps the pages and files of a notebook whose inputs have not changed since
its last good run (the notebook, the package, the installed libraries, the environment, the
runs it reads: :func:`palviz.cli.reuse.notebook_inputs`); ``--rerun`` runs every one.
Before anything starts it checks the downloaded datasets that the planned runs read
(:func:`palviz.cli.figures.data_refusal`).

``plan`` lists the runs the selected notebooks will ask for (from :mod:`palviz.experiments.plan`,
without data, a GPU or the notebook files, from any folder) and writes them as JSON lines, and with
``--sbatch`` a script submitting them as one Slurm array; ``train`` trains one line of such a
file into the cache (a Slurm array task: ``--index $SLURM_ARRAY_TASK_ID``); ``sweep`` trains
every missing run of a plan through a local pool or submitit (Slurm, or its local executor on
this machine; see docs/cluster.md).

A successful ``figures`` run also writes ``timings.json`` beside the figures (what trained,
seconds per notebook, the machine, its CPU pin) and ``runs.csv`` (each run's key and
accuracies, every digit). ``report`` copies the profile's result files (``claims.csv``,
``timings.json``, ``runs.csv``, the notebooks' ``NN_*.md``) into ``docs/results/<profile>/``,
which docs/results.md includes (:mod:`palviz.experiments.report`); ``report --compare``
compares the last run's result files with the committed ones, run by run.

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
import threading
from pathlib import Path

from palviz.cli.figures import DOWNLOADABLE, cmd_download, cmd_figures, notebooks
from palviz.cli.sweep import (
    EXECUTORS,
    SLURM_MINUTES,
    cmd_plan,
    cmd_sweep,
    cmd_train,
    planned_runs,
)
from palviz.files import (
    PROFILES,
    ProjectNotFound,
    StorageError,
    figures_dir,
    project_root,
    resolve_profile,
)

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


def cmd_runs(args: argparse.Namespace) -> int:
    from palviz.experiments import clear_runs, list_runs
    from palviz.experiments.cachedir import check_runs

    if args.clear and not args.check:
        print(f"deleted {clear_runs(args.keys or None)} cached run(s)")
        return 0
    rows = check_runs(fix=args.fix) if args.check else list_runs()
    if not rows:
        print("no cached runs")
        return 0
    if args.check:
        return report_check(rows, fix=args.fix)
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


def cmd_pack(args: argparse.Namespace) -> int:
    """``palviz runs pack`` and ``palviz runs unpack``."""
    from palviz.experiments import pack

    try:
        if args.action == "unpack":
            done = pack.unpack(args.file, force=args.force)
            manifest = done.manifest
        else:
            selected = notebooks(args.only)
            rows = planned_runs(selected, args.profile)
            target = Path(args.output or pack.default_name(args.profile))
            manifest = pack.pack(
                target,
                rows,
                profile=args.profile,
                notebooks=[p.name[:2] for p in selected],
                with_checkpoints=args.with_checkpoints,
            )
    except pack.PackError as err:
        nothing = {"pack": "no archive written", "unpack": "nothing was added to the run cache"}
        print(f"palviz runs {args.action}: {err}; {nothing[args.action]}", file=sys.stderr)
        return 2
    missing = manifest["missing"]
    if missing:
        shown = "\n".join(
            f"  {m['key']}  {m['label'][:22]:22} notebooks {' '.join(m['notebooks'])}"
            for m in missing[:20]
        )
        more = f"\n  ... and {len(missing) - 20} more" if len(missing) > 20 else ""
        print(
            f"warning: {len(missing)} planned run(s) of profile "
            f"{manifest['profile']!r} are not in the archive (not cached when it "
            f"was packed); `palviz figures` would train them:\n{shown}{more}",
            file=sys.stderr,
        )
    if args.action == "pack":
        what = "with checkpoints" if args.with_checkpoints else "checkpoints left out"
        print(
            f"packed {len(manifest['runs'])} run(s) of profile {args.profile!r} ({what}) "
            f"into {target}, {target.stat().st_size / 1e6:.1f} MB"
        )
        return 0
    kept = " (--force replaces them)" if done.kept else ""
    print(
        f"unpacked {args.file}: {len(done.added)} run(s) added, {len(done.kept)} already "
        f"cached and kept{kept}, {len(done.replaced)} replaced; profile "
        f"{manifest['profile']!r}"
    )
    if not done.check:
        return 0
    print(f"checking the {len(done.check)} run(s) it added (palviz runs --check):")
    return report_check(done.check, fix=False)


def report_check(rows: list[dict], *, fix: bool) -> int:
    """Print the rows of :func:`~palviz.experiments.cachedir.check_runs` that are not ok and
    the counts; 1 when an entry is broken (and ``fix`` did not move it aside)."""
    for r in rows:
        if r["status"] != "ok":
            problem = r["problem"] or ("" if r.get("resumable", True) else NOTHING_TO_RESUME)
            where = f" -> moved to {r['moved_to']}" if "moved_to" in r else ""
            where += " -> removed" if r.get("removed") else ""
            print(f"{r['key']:16}  {r['label'][:18]:18} {r['status']:10} {problem}{where}")
    counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "unfinished", "broken")}
    print(", ".join(f"{n} {s}" for s, n in counts.items()))
    empty = [r for r in rows if r.get("resumable") is False and not r.get("removed")]
    if counts["broken"] and not fix:
        print("move the broken entries aside (to runs/.broken/) with: palviz runs --check --fix")
    if empty:
        print(
            f"{len(empty)} unfinished entr{'y' if len(empty) == 1 else 'ies'} "
            f"{NOTHING_TO_RESUME}"
            + (": being trained now" if fix else "; remove with: palviz runs --check --fix")
        )
    return 1 if counts["broken"] and not fix else 0


def _slurm_extras(extra: list[str]) -> dict:
    """``--slurm-KEY VALUE`` pairs (the options argparse does not know) as ``slurm_KEY``."""
    flags, values = extra[::2], extra[1::2]
    unknown = [f for f in flags if not f.startswith("--slurm-")] + flags[len(values) :]
    if unknown:  # the first flag that is not --slurm-KEY, or the last one, without a value
        flag = unknown[0]
        raise SystemExit(f"unknown option {flag!r} (pass Slurm options as --slurm-KEY VALUE)")
    pairs = zip(flags, values, strict=True)
    return {"slurm_" + f[len("--slurm-") :].replace("-", "_"): v for f, v in pairs}


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
    """Copy the profile's result files into docs/results/<profile>/ (for ``quick`` also the
    gallery); ``--compare``: compare the last run's result files with the committed ones."""
    from palviz.experiments import report

    source = figures_dir(args.profile)
    if args.compare:
        equal, text = report.compare_runs(source, report.results_dir(args.profile))
        print(text, end="")
        print(f"{args.profile}: results {'unchanged' if equal else 'CHANGED'}")
        return 0 if equal else 1
    copies = report.collect_results(args.profile)
    if not copies:
        print(
            f"palviz report: no result files in {source}; run `palviz figures --profile "
            f"{args.profile}` first",
            file=sys.stderr,
        )
        return 2
    for path in copies:
        print(f"{path.relative_to(project_root())}  (from {source})")
    return cmd_gallery(args) if args.profile == "quick" else 0


def cmd_methods(args: argparse.Namespace) -> int:
    """Print the method tables of the loss registry."""
    from palviz.experiments import methods

    for task in (args.task,) if args.task else methods.TASKS:
        print(f"{task} methods (palviz.experiments.methods):\n\n{methods.method_table(task)}\n")
    return 0


def shared_options() -> tuple[argparse.ArgumentParser, ...]:
    """The options that several commands take, each declared once, as the parent parsers
    ``profile``, ``only`` and ``datasets``. ``--profile``'s default is ``$PALVIZ_PROFILE`` (else
    ``quick``): :func:`parse_args` resolves and checks it with
    :func:`palviz.files.resolve_profile`."""
    profile, only, datasets = (argparse.ArgumentParser(add_help=False) for _ in range(3))
    profile.add_argument(
        "--profile",
        metavar="{" + ",".join(PROFILES) + "}",
        help="the size of everything (default: $PALVIZ_PROFILE, else quick)",
    )
    only.add_argument("--only", nargs="+", metavar="NN", help="notebook numbers, e.g. 06 07")
    datasets.add_argument("--datasets", nargs="+", metavar="NAME", help="DATASETS of 06, 07, 08")
    return profile, only, datasets


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="palviz", description=__doc__.split("\n\n")[0])
    profile, only, datasets = shared_options()
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name, func, text, *parents, under=sub) -> argparse.ArgumentParser:
        """A sub-command ``name`` that runs ``func``, its help ``text``, with the options of
        ``parents``."""
        p = under.add_parser(name, help=text, parents=parents)
        p.set_defaults(func=func)
        return p

    p = command(
        "figures", cmd_figures, "execute the notebooks and regenerate every figure", profile, only
    )
    p.add_argument(
        "--download", action="store_true", help="fetch the datasets the runs read (paper)"
    )
    p.add_argument(
        "--jobs", type=int, help="notebooks executed at once (default: 2, or 1 on one core)"
    )
    p.add_argument(
        "--rerun", action="store_true", help="run every notebook, also those with unchanged inputs"
    )
    p = command("runs", cmd_runs, "list, --clear, --check, pack or unpack the cached runs")
    p.add_argument("--clear", action="store_true")
    p.add_argument("--keys", nargs="+", metavar="KEY", help="with --clear: only these runs")
    p.add_argument("--check", action="store_true", help="verify every entry of the cache")
    p.add_argument("--fix", action="store_true", help="with --check: move broken entries aside")
    actions = p.add_subparsers(dest="action", metavar="{pack,unpack}")
    text = "the profile's cached runs into one archive, to hand out"
    a = command("pack", cmd_pack, text, profile, only, under=actions)
    a.add_argument("--with-checkpoints", action="store_true", help="also pack checkpoint.pt")
    a.add_argument("-o", "--output", metavar="FILE", help="default palviz-runs-<profile>.tar.gz")
    text = "add the runs of a `runs pack` archive to the cache"
    a = command("unpack", cmd_pack, text, under=actions)
    a.add_argument("file", metavar="FILE")
    a.add_argument("--force", action="store_true", help="replace the runs already cached")
    text = "list the runs the notebooks will ask for (no data needed)"
    p = command("plan", cmd_plan, text, profile, only, datasets)
    p.add_argument("--methods", nargs="+", metavar="LABEL", help="METHODS of 00, 06, 07, 08")
    p.add_argument("--missing", action="store_true", help="only the runs not in the cache")
    p.add_argument("--jsonl", metavar="FILE", help="also write the specs, one JSON per line")
    p.add_argument("--sbatch", metavar="SCRIPT", help="with --jsonl: a script submitting them")
    p = command("train", cmd_train, "train specs of a `plan --jsonl` file into the cache")
    p.add_argument("specfile")
    p.add_argument("--index", type=int, help="only line I (0-based), e.g. $SLURM_ARRAY_TASK_ID")
    text = "train every missing run of a plan (local, Slurm)"
    p = command("sweep", cmd_sweep, text, profile, only, datasets)
    p.add_argument("--executor", choices=EXECUTORS, default="local")
    p.add_argument("--workers", type=int, help="local: processes (default: 2 on a CPU)")
    p.add_argument("--workers-per-gpu", type=int, help="local: processes per visible GPU")
    p.add_argument("--slurm-partition", help="Slurm: the partition (default: Slurm's)")
    p.add_argument("--slurm-time", type=int, help=f"Slurm: minutes per job ({SLURM_MINUTES})")
    p.add_argument("--gpus-per-job", type=int, help="Slurm: GPUs per job (default 0)")
    p.add_argument("--cpus-per-job", type=int, help="Slurm: default 1 (CPU job), 4 (GPU job)")
    p.add_argument("--max-parallel", type=int, help="Slurm: array tasks running at once")
    p.add_argument("--log-dir", help="submitit's folder (default: .submitit/ in the run cache)")
    p = command("methods", cmd_methods, "the registered losses' table methods, as markdown")
    p.add_argument("--task", choices=("long_tailed", "noisy"))
    p = command("download", cmd_download, "fetch datasets for the paper profile")
    p.add_argument("names", nargs="+", choices=DOWNLOADABLE)
    command("gallery", cmd_gallery, "refresh the README images in docs/img/", profile)
    p = command("report", cmd_report, "copy the result files into docs/results/<profile>/", profile)
    p.add_argument(
        "--compare",
        action="store_true",
        help="write nothing; compare the result files of the last `palviz figures` run with "
        "docs/results/<profile>/, run by run (runs.csv) and byte for byte (claims, tables)",
    )
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
