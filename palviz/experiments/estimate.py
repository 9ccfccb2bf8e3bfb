"""GPU-hours of a plan, from a measured benchmark: ``palviz plan --estimate FILE``.

``benchmarks/bench_gpu.py`` times training steps of the networks the ``paper`` profile trains
(:func:`benchmark_cases`) on one GPU, as :func:`palviz.train.fit` trains them (float32,
channels-last image batches), with 1, 2, 4 and 8 runs packed on the GPU at once, and writes a
JSON file of this schema (:data:`BENCH_SCHEMA`, version :data:`BENCH_VERSION`;
:func:`check_benchmark` reads it):

- ``schema``, ``version``; ``created`` (UTC time); ``torch`` (``torch.__version__``), ``cuda``
  (``torch.version.cuda`` or ``null``); ``tiny`` (the CPU-sized mode: a check of the script,
  not a measurement of a GPU);
- ``device``: ``type`` (``"cuda"`` or ``"cpu"``) and ``name`` (the GPU's, or the CPU's);
- ``settings``: ``batch_size``, ``steps`` (timed steps of every run) and ``warmup_steps``
  (untimed steps first);
- ``archs``: per network, the ``dataset`` whose shape it was fed (``input_shape``,
  ``num_classes``);
- ``results``: one object per ``(arch, runs_per_gpu)`` with a
  ``status`` (``"ok"``, ``"out of memory"`` or ``"failed"``, then a ``reason``) and, when
  ``"ok"``, ``ms_per_step`` (the slowest of the packed runs: its timed steps' wall time over
  their number), ``images_per_s`` (all packed runs together: ``runs_per_gpu * batch_size *
  1000 / ms_per_step``) and ``max_memory_bytes`` (the largest of the runs'
  ``torch.cuda.max_memory_allocated``; ``null`` on a CPU).

The estimate (:func:`estimate`), for each network of the plan, takes the best measured
configuration: the ``"ok"`` result of most images per second on the GPU, i.e. of least GPU
time a step, ``ms_per_step / runs_per_gpu`` (``runs_per_gpu`` runs share the GPU, each taking
``ms_per_step`` a step). A planned run of ``epochs`` passes over ``n`` training samples in
batches of ``batch`` (:func:`planned_train_size`: known without the data) takes
``steps = epochs * ceil(n / batch)`` steps and ``steps * ms_per_step / runs_per_gpu * batch /
B / 3.6e6`` GPU-hours, ``B`` the benchmark's batch size (time taken as proportional to the
images of a step when ``batch != B``, which the estimate then says). The GPU-hours of the plan
are the sum over its runs; on ``G`` GPUs the wall-clock time is at least the larger of
``GPU-hours / G`` and the longest run alone (``steps * ms_per_step * batch / B / 3.6e6``: a
run's steps follow one another at the packed pace).
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from palviz import data as pdata
from palviz.checks import check_choice, check_int, check_positive, invalid

BENCH_SCHEMA = "palviz-bench-gpu"
BENCH_VERSION = 2

#: A result's ``status``: measured, or why not.
STATUSES: tuple[str, ...] = ("ok", "out of memory", "failed")

#: Training images per class of the downloaded datasets' training splits (torchvision's files),
#: so that a plan's training sizes are known without the data: CIFAR's classes are equal,
#: MNIST's are not (60,000 images, the smallest class, 5, has 5,421).
SPLIT_CLASS_COUNTS: dict[str, tuple[int, ...]] = {
    "mnist": (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
    "cifar10": (5000,) * 10,
    "cifar100": (500,) * 100,
}

_SETTINGS = ("batch_size", "steps", "warmup_steps")
_MEASURES = ("ms_per_step", "images_per_s", "max_memory_bytes")


# --------------------------------------------------------------------------- what to measure


def benchmark_cases(profile: str = "paper") -> dict[str, dict]:
    """The networks ``profile``'s notebooks train, each with what a training step of it is fed,
    from the first planned run that trains it (:func:`palviz.experiments.plan.plan` of every
    notebook):
    ``{arch: {"dataset", "input_shape", "num_classes", "augment", "mean", "std"}}``."""
    from palviz.experiments.plan import NOTEBOOKS_WITH_RUNS, plan

    cases: dict[str, dict] = {}
    for row in plan(list(NOTEBOOKS_WITH_RUNS), profile):
        spec = row["spec"]
        if spec.arch in cases:
            continue
        info = pdata.dataset_info(spec.dataset)
        cases[spec.arch] = {
            "dataset": spec.dataset,
            "input_shape": list(info.shape),
            "num_classes": info.num_classes,
            "augment": spec.train.augment,
            "mean": None if spec.train.mean is None else list(spec.train.mean),
            "std": None if spec.train.std is None else list(spec.train.std),
        }
    return cases


def planned_train_size(spec: Any) -> int:
    """The number of training samples of a run (a :class:`~palviz.experiments.runcache.RunSpec`),
    without its data for MNIST and CIFAR (:data:`SPLIT_CLASS_COUNTS`; a long-tailed run keeps
    :func:`palviz.data.long_tail_counts` of the smallest class, as
    :func:`palviz.data.make_long_tailed` does); a run on a stratified ``train_size`` subset, or
    on an embedded dataset, is counted from the labels
    (:func:`palviz.experiments.budget.training_size`)."""
    counts = SPLIT_CLASS_COUNTS.get(spec.dataset)
    if counts is None or spec.train_size is not None:
        from palviz.experiments.budget import training_size

        return training_size(spec)
    if spec.imbalance_ratio > 1:
        lt = pdata.long_tail_counts(min(counts), len(counts), spec.imbalance_ratio, spec.lt_shape)
        return int(sum(lt))
    return int(sum(counts))


# --------------------------------------------------------------------------- the file


def _number(name: str, value: Any, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise invalid(name, value, "a finite number")
    return check_positive(name, value) if positive else float(value)


def _check_result(where: str, result: Any, batch_size: int) -> None:
    if not isinstance(result, Mapping):
        raise invalid(where, result, "an object")
    for key in ("arch", "runs_per_gpu", "status"):
        if key not in result:
            raise ValueError(f"{where} has no {key!r}; it has {sorted(result)}")
    if not isinstance(result["arch"], str):
        raise invalid(f"{where}.arch", result["arch"], "a string")
    runs = check_int(f"{where}.runs_per_gpu", result["runs_per_gpu"], 1)
    if check_choice(f"{where}.status", result["status"], STATUSES) != "ok":
        return
    missing = [k for k in _MEASURES if k not in result]
    if missing:
        raise ValueError(f"{where} (status 'ok') has no {missing}; it has {sorted(result)}")
    ms = _number(f"{where}.ms_per_step", result["ms_per_step"], positive=True)
    rate = _number(f"{where}.images_per_s", result["images_per_s"], positive=True)
    expected = runs * batch_size * 1000.0 / ms
    if not math.isclose(rate, expected, rel_tol=1e-6):
        rule = f"runs_per_gpu * batch_size * 1000 / ms_per_step = {expected:.6g}"
        raise invalid(f"{where}.images_per_s", rate, rule)
    if result["max_memory_bytes"] is not None:
        check_int(f"{where}.max_memory_bytes", result["max_memory_bytes"], 0)


def check_benchmark(bench: Any, source: str = "the benchmark") -> dict:
    """``bench`` (a benchmark's JSON, loaded) checked against the schema of this module's
    docstring; a ``ValueError`` names ``source``, the entry and what is expected."""
    what = f"a {BENCH_SCHEMA} file of version {BENCH_VERSION} (benchmarks/bench_gpu.py)"
    if not isinstance(bench, Mapping):
        raise ValueError(f"{source}: expected {what}, got a JSON {type(bench).__name__}")
    found = (bench.get("schema"), bench.get("version"))
    if found != (BENCH_SCHEMA, BENCH_VERSION):
        raise ValueError(f"{source}: expected {what}, got schema {found[0]!r} version {found[1]!r}")
    for key, kind in (("device", Mapping), ("settings", Mapping), ("results", list)):
        if not isinstance(bench.get(key), kind):
            rule = "a list" if kind is list else "an object"
            raise invalid(f"{source}: {key}", bench.get(key), rule)
    if not isinstance(bench.get("torch"), str):
        raise invalid(f"{source}: torch", bench.get("torch"), "a version string")
    for key in ("type", "name"):
        if not isinstance(bench["device"].get(key), str):
            raise invalid(f"{source}: device.{key}", bench["device"].get(key), "a string")
    settings = bench["settings"]
    for key in _SETTINGS:
        check_int(f"{source}: settings.{key}", settings.get(key), 0 if key == "warmup_steps" else 1)
    for i, result in enumerate(bench["results"]):
        _check_result(f"{source}: results[{i}]", result, settings["batch_size"])
    return dict(bench)


def read_benchmark(path: str | os.PathLike) -> dict:
    """The benchmark JSON at ``path``, checked (:func:`check_benchmark`); an unreadable or
    non-JSON file is a ``ValueError`` naming it."""
    try:
        with open(path) as handle:
            bench = json.load(handle)
    except OSError as err:
        raise ValueError(f"cannot read the benchmark {path}: {err.strerror or err}") from None
    except ValueError as err:
        raise ValueError(f"{path}: not JSON ({err})") from None
    return check_benchmark(bench, str(path))


# --------------------------------------------------------------------------- the estimate


def _gpu_ms(result: Mapping) -> float:
    """GPU milliseconds a step of one run: ``ms_per_step / runs_per_gpu``."""
    return result["ms_per_step"] / result["runs_per_gpu"]


def best_configurations(
    bench: Mapping, archs: Iterable[str], source: str = "the benchmark"
) -> dict[str, dict]:
    """For each of ``archs``, the ``"ok"`` result of ``bench`` of least GPU time a step (most
    images per second on the GPU); a ``ValueError`` names every arch without one."""
    best: dict[str, dict] = {}
    for result in bench["results"]:
        if result["status"] == "ok" and (
            result["arch"] not in best or _gpu_ms(result) < _gpu_ms(best[result["arch"]])
        ):
            best[result["arch"]] = dict(result)
    wanted = list(dict.fromkeys(archs))
    missing = [a for a in wanted if a not in best]
    if missing:
        raise ValueError(
            f"{source} has no measured configuration of {missing} (status 'ok'), which the "
            f"plan trains; it has {sorted(best)}: run benchmarks/bench_gpu.py with them"
        )
    return {a: best[a] for a in wanted}


def estimate(
    specs: Sequence[Any], bench: Mapping, gpus: int = 1, source: str = "the benchmark"
) -> dict:
    """GPU-hours of the runs ``specs`` (:class:`~palviz.experiments.runcache.RunSpec`) from the
    benchmark ``bench`` (:func:`check_benchmark`), shared by ``gpus`` GPUs (the formulas: this
    module's docstring). Returns ``gpus``, ``gpu_hours``, ``wall_hours``, ``longest_run_hours`` and
    ``archs``: per network, its ``runs``, ``steps``, ``gpu_hours``, the ``best`` result and
    ``batch_sizes`` of its runs."""
    gpus = check_int("gpus", gpus, 1)
    best = best_configurations(bench, (s.arch for s in specs), source)
    measured_batch = bench["settings"]["batch_size"]
    rows = {
        a: {"runs": 0, "steps": 0, "gpu_hours": 0.0, "best": r, "batch_sizes": set()}
        for a, r in best.items()
    }
    longest = 0.0
    for spec in specs:
        row, result = rows[spec.arch], best[spec.arch]
        batch = spec.train.batch_size
        steps = spec.train.epochs * math.ceil(planned_train_size(spec) / batch)
        scale = batch / measured_batch
        row["runs"] += 1
        row["steps"] += steps
        row["gpu_hours"] += steps * _gpu_ms(result) * scale / 3.6e6
        row["batch_sizes"].add(batch)
        longest = max(longest, steps * result["ms_per_step"] * scale / 3.6e6)
    total = math.fsum(r["gpu_hours"] for r in rows.values())
    return {
        "gpus": gpus,
        "gpu_hours": total,
        "wall_hours": max(total / gpus, longest),
        "longest_run_hours": longest,
        "archs": rows,
    }


def format_estimate(est: Mapping, bench: Mapping, source: str) -> str:
    """The estimate as the text ``palviz plan --estimate`` prints."""
    settings = bench["settings"]
    lines = [
        f"estimate from {source}: {bench['device']['name']} ({bench['device']['type']}), "
        f"torch {bench['torch']}, batch {settings['batch_size']}, {settings['steps']} timed "
        f"steps after {settings['warmup_steps']} warm-up steps",
        f"{'arch':12} {'runs':>5} {'steps':>11}  {'best measured':32} {'GPU ms/step':>11} "
        f"{'GPU-hours':>10}",
    ]
    notes = []
    for arch, row in est["archs"].items():
        r = row["best"]
        config = f"{r['runs_per_gpu']} runs/GPU"
        lines.append(
            f"{arch:12} {row['runs']:>5} {row['steps']:>11,}  {config:32} "
            f"{_gpu_ms(r):>11.2f} {row['gpu_hours']:>10.2f}"
        )
        other = sorted(row["batch_sizes"] - {settings["batch_size"]})
        if other:
            notes.append(
                f"{arch}: runs of batch {other} scaled from the measured batch "
                f"{settings['batch_size']} in proportion to the images of a step"
            )
    runs = sum(row["runs"] for row in est["archs"].values())
    lines.append(f"{'total':12} {runs:>5} {'':>11}  {'':32} {'':>11} {est['gpu_hours']:>10.2f}")
    g = est["gpus"]
    lines.append(f"GPU-hours: {est['gpu_hours']:.2f}")
    lines.append(
        f"on {g} GPU{'s' if g > 1 else ''}: at least {est['wall_hours']:.2f} h of wall-clock "
        f"(GPU-hours / {g}, or the longest run at its packed pace, "
        f"{est['longest_run_hours']:.2f} h, if longer)"
    )
    if bench.get("tiny"):
        notes.append(
            "the benchmark ran in its tiny mode (a check of the script, not a GPU's speed): "
            "run benchmarks/bench_gpu.py on a CUDA machine for a real estimate"
        )
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)


# -------------------------------------------------------------- the paper plan against its last


def plan_size(specs: Iterable[Any]) -> tuple[int, int]:
    """``(runs, SGD steps)`` of the distinct runs among ``specs``: a run's steps are
    ``epochs * ceil(train_size / batch_size)``, the training size known without the data for
    MNIST and CIFAR (:func:`planned_train_size`)."""
    distinct = {s.key(): s for s in specs}.values()
    steps = sum(
        s.train.epochs * math.ceil(planned_train_size(s) / s.train.batch_size) for s in distinct
    )
    return len(distinct), steps


def _previous_paper_specs(numbers: Sequence[str]) -> list[Any]:
    """The specs the ``paper`` profile's previous plan
    (:data:`palviz.experiments.profiles.PAPER_PREVIOUS`) asks of these notebooks: 06 at its
    seeds and ratios, without the methods added since; 07 at its seeds; the others as now
    (they train one seed at rho = 100 in both)."""
    from palviz.experiments import plan, recipes
    from palviz.experiments.profiles import PAPER_PREVIOUS as prev

    specs: list[Any] = []
    for number in numbers:
        if number[:2] == "06":
            setup = recipes.long_tailed_setup("paper")
            if setup["orientations"] or setup.get("replication"):
                raise ValueError("the paper profile's previous plan had no orientations")
            kept = [m for m in setup["methods"] if m not in prev["added_methods"]]
            pal = [m for m in setup["pal_methods"] if m not in prev["added_methods"]]
            where = dict(profile="paper", seeds=prev["seeds"], ratios=prev["ratios"])
            specs += recipes.lt_grid(kept, pal=(False,), **where)
            specs += recipes.lt_grid(pal, pal=(True,), **where) if pal else []
        elif number[:2] == "07":
            specs += plan.experiment_specs("07", "paper", seeds=prev["seeds"])
        else:
            specs += plan.planned_specs(number, "paper")
    return specs


def paper_plan_growth(numbers: Iterable[str]) -> dict:
    """The ``paper`` plan of these notebooks against its previous plan (the recipe
    :data:`palviz.experiments.profiles.PAPER_PREVIOUS`: one seed, rho = 100 and 10, the
    methods of then), both computed here: ``runs``, ``steps`` (:func:`plan_size`),
    ``previous_runs``, ``previous_steps``, ``runs_ratio`` and ``steps_ratio`` (now /
    previous; NaN where the previous plan was empty)."""
    from palviz.experiments import plan

    numbers = [str(n)[:2] for n in numbers if str(n)[:2] in plan.EXPERIMENTS]
    runs, steps = plan_size(s for n in numbers for s in plan.planned_specs(n, "paper"))
    before_runs, before_steps = plan_size(_previous_paper_specs(numbers))
    return {
        "runs": runs,
        "steps": steps,
        "previous_runs": before_runs,
        "previous_steps": before_steps,
        "runs_ratio": runs / before_runs if before_runs else math.nan,
        "steps_ratio": steps / before_steps if before_steps else math.nan,
    }


def describe_paper_growth(numbers: Iterable[str]) -> str:
    """:func:`paper_plan_growth` in one sentence, as ``palviz plan --profile paper`` prints it."""
    from palviz.experiments.profiles import PAPER_PREVIOUS as prev

    g = paper_plan_growth(numbers)
    return (
        f"paper plan: {g['runs']:,} run(s), {g['steps']:,} SGD steps; the previous plan "
        f"(seeds {prev['seeds']}, rho {prev['ratios']}, without {', '.join(prev['added_methods'])}"
        f"): {g['previous_runs']:,} run(s), {g['previous_steps']:,} steps; "
        f"x{g['runs_ratio']:.2f} the runs, x{g['steps_ratio']:.2f} the steps"
    )
