"""``palviz plan``, ``train`` and ``sweep``: the runs the notebooks will ask for
(:func:`planned_runs`, needing no data or notebook file), a plan as JSON lines
(:func:`read_specs`) and a Slurm array script (:func:`write_sbatch_script`), and the
executors of a sweep with their options (local, submitit/Slurm)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def plan_numbers(only: list[str] | None = None) -> list[str]:
    """The numbers of the notebooks that train
    (:data:`palviz.experiments.plan.NOTEBOOKS_WITH_RUNS`), or those of them in ``only``; ``only``
    may name any lesson of the course (``docs/syllabus.toml``,
    :func:`palviz.book_syllabus.syllabus`). Needs no notebook file, so ``palviz plan`` works
    from any folder."""
    from palviz.book_syllabus import syllabus
    from palviz.experiments.plan import NOTEBOOKS_WITH_RUNS

    lessons = sorted(syllabus()["lessons"])
    numbers = {n.zfill(2) for n in only or ()}
    unknown = numbers - set(lessons)
    if unknown:
        raise SystemExit(
            f"--only: no notebook numbered {sorted(unknown)}; have {' '.join(lessons)} "
            f"(those that train: {' '.join(NOTEBOOKS_WITH_RUNS)})"
        )
    return [n for n in NOTEBOOKS_WITH_RUNS if not only or n in numbers]


def _planned(args: argparse.Namespace) -> list[dict]:
    numbers = plan_numbers(args.only)
    try:
        methods = checked_methods(numbers, getattr(args, "methods", None))
        return planned_runs(numbers, args.profile, args.datasets, methods)
    except ValueError as err:  # a dataset not registered, a module that does not import
        print(f"palviz {args.command}: {err}", file=sys.stderr)
        raise SystemExit(2) from None


def checked_methods(numbers: list[str], methods: list[str] | None) -> tuple | None:
    """``--methods`` as a tuple, each label one that the ``METHODS`` parameter of every
    notebook of ``numbers`` that has one allows (else ``ValueError`` naming ``--methods``,
    from :func:`palviz.checks.check_choice`, as a notebook's parameters check refuses it)."""
    if methods is None:
        return None
    from palviz.checks import check_choice
    from palviz.parameters import CHOICES, TABLES

    for number in numbers:
        entry = TABLES[number].get("METHODS")
        if entry is not None:
            allowed = CHOICES[entry.choices]()
            for label in methods:
                check_choice("--methods", label, allowed)
    return tuple(methods)


def planned_runs(
    selected: list[Path] | list[str], profile: str, datasets=None, methods=None
) -> list[dict]:
    """:func:`palviz.experiments.plan.plan` of the ``selected`` notebooks (paths, or their two-digit
    numbers), each row with ``cached`` too; ``datasets`` is the ``DATASETS`` of 06, 07 and 08
    (a name not registered is looked for in the modules ``$PALVIZ_DATASET_MODULES`` names),
    ``methods`` the ``METHODS`` of 00, 06, 07 and 08 (checked: :func:`checked_methods`)."""
    from palviz.experiments.plan import NOTEBOOKS_WITH_RUNS, plan
    from palviz.experiments.runcache import is_cached

    numbers = [n for n in (Path(p).name[:2] for p in selected) if n in NOTEBOOKS_WITH_RUNS]
    rows = plan(numbers, profile, datasets, methods)
    for row in rows:
        row["cached"] = is_cached(row["spec"])
    return rows


def cmd_plan(args: argparse.Namespace) -> int:
    import json

    if args.sbatch and not args.jsonl:
        print("palviz plan: --sbatch SCRIPT needs --jsonl FILE (the tasks' specs)", file=sys.stderr)
        return 2
    rows = _planned(args)
    shown = [r for r in rows if not (args.missing and r["cached"])]
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
    :class:`~palviz.experiments.runspec.RunSpec` (the field and its rule) raises ``ValueError``
    naming
    the file, the line number and what was expected."""
    import json

    from palviz.experiments.runspec import RunSpec

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
    chosen = list(enumerate(specs))
    if args.index is not None and not 0 <= args.index < len(specs):
        print(f"--index {args.index}: {args.specfile} has {len(specs)} spec(s)", file=sys.stderr)
        return 2
    if args.index is not None:
        chosen = [chosen[args.index]]
    elif not specs:
        print(f"{args.specfile} holds no spec (e.g. a plan of cached runs): nothing to train")
        return 0
    for i, spec in chosen:
        start = time.perf_counter()
        result = run(spec)
        print(
            f"[{i}] {spec.key()} {spec.label}: last_acc {result.metrics['last_acc']:.4f} "
            f"({time.perf_counter() - start:.1f} s) in {result.path}"
        )
    return 0


#: The executors of ``palviz sweep``; those that go through submitit.
EXECUTORS = ("local", "slurm", "submitit-local")
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
    """Why the options given do not fit ``--executor`` or are out of range (one line), or
    ``None``."""
    for flag, value, least in (
        ("--gpus-per-job", args.gpus_per_job, 0),
        ("--cpus-per-job", args.cpus_per_job, 1),
    ):
        if value is not None and value < least:
            return f"{flag} must be an integer >= {least}, got {value}; nothing was trained"
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
    refused: tuple = ()  # what sbatch or a submitit job said, in its own words
    options: dict = {}
    if args.executor in SUBMITIT:
        from submitit.core.utils import FailedJobError

        refused = (FailedJobError,)
        options = _submitit_options(args)
    try:
        executor = cluster.make_executor(args.executor, **options)
        start = time.perf_counter()
        results = cluster.run_many(
            todo,
            desc=f"sweep ({args.executor})",
            workers=args.workers,
            executor=executor,
            workers_per_gpu=args.workers_per_gpu,
        )
    except refused as err:
        print(f"palviz sweep: {err}", file=sys.stderr)
        return 2
    print(f"{len(results)} run(s) trained in {time.perf_counter() - start:.0f} s")
    return 0


def _submitit_options(args: argparse.Namespace) -> dict:
    """:func:`palviz.experiments.cluster.make_executor`'s options of a submitit sweep; a Slurm
    job asks for ``--gpus-per-job`` GPUs (default 0) and ``--cpus-per-job`` CPUs (default 1,
    as palviz trains a CPU run on one thread; 4 with a GPU)."""
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
        gpus = args.gpus_per_job or 0
        cpus = args.cpus_per_job or (4 if gpus else 1)
        partition = args.slurm_partition or "(Slurm's default)"
        print(f"Slurm jobs on partition {partition}: {cpus} CPU(s) and {gpus or 'no'} GPU(s) each")
        options.update(
            slurm_partition=args.slurm_partition,
            gpus_per_node=gpus,
            cpus_per_task=cpus,
            slurm_array_parallelism=args.max_parallel,
            **(args.slurm_extra or {}),
        )
    print(f"submitit's files and the jobs' logs: {log_dir}")
    return options
