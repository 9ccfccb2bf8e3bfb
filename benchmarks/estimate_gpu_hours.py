"""GPU-hours of a plan, from a benchmark file of ``benchmarks/bench_gpu.py``.

Usage::

    python benchmarks/bench_gpu.py                       # on a CUDA machine -> build/bench_gpu.json
    python benchmarks/estimate_gpu_hours.py build/bench_gpu.json [--only 06 07] [--gpus 4]
    palviz plan --profile paper --missing --jsonl todo.jsonl
    python benchmarks/estimate_gpu_hours.py build/bench_gpu.json --plan todo.jsonl

The plan is a ``palviz plan --jsonl`` file (``--plan``), or the runs ``--profile`` (default
``paper``) plans for the notebooks ``--only`` names (all of them by default), as ``palviz plan``
lists them; neither needs the datasets or a GPU.

The benchmark file (:data:`BENCH_SCHEMA`, version :data:`BENCH_VERSION`; :func:`check_benchmark`
reads it, and bench_gpu.py checks what it writes with it) holds ``schema``, ``version``,
``created``, ``torch``, ``cuda``, ``tiny`` (the CPU-sized mode: a check of the script, not a
measurement of a GPU), ``device`` (``type`` and ``name``), ``settings`` (``batch_size``,
``steps`` timed after ``warmup_steps``), ``archs`` (per network, the ``dataset`` whose shape it
was fed: :func:`benchmark_cases`) and ``results``: one object per configuration with ``arch``,
``runs_per_gpu``, its layout and precision where it has them (``channels_last``,
``precision``) and a ``status`` (``"ok"``, ``"out of memory"`` or ``"failed"``, then a
``reason``); an ``"ok"`` one has ``ms_per_step`` (the slowest of the packed runs),
``images_per_s`` (all packed runs together: ``runs_per_gpu * batch_size * 1000 /
ms_per_step``) and ``max_memory_bytes`` (``null`` on a CPU).

The estimate takes, for each network of the plan, its ``"ok"`` result of least GPU time a step,
``ms_per_step / runs_per_gpu`` (``runs_per_gpu`` runs share the GPU, each taking
``ms_per_step`` a step), whatever its precision or layout. A run of ``epochs`` passes over ``n``
training samples (:func:`planned_train_size`, known without the data) in batches of ``batch``
takes ``steps = epochs * ceil(n / batch)`` steps and ``steps * ms_per_step / runs_per_gpu *
batch / B / 3.6e6`` GPU-hours, ``B`` the benchmark's batch (time taken as proportional to the
images of a step when ``batch != B``, which the table then says). The plan's GPU-hours are the
sum over its runs; on ``G`` GPUs the wall-clock time is at least the larger of ``GPU-hours /
G`` and the longest run alone (``steps * ms_per_step * batch / B / 3.6e6``: a run's steps
follow one another at the packed pace).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from palviz import data as pdata  # noqa: E402
from palviz.checks import check_bool, check_choice, check_int, check_positive, invalid  # noqa: E402

BENCH_SCHEMA = "palviz-bench-gpu"
BENCH_VERSION = 1

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


def benchmark_cases(profile: str = "paper") -> dict[str, dict]:
    """The networks ``profile``'s notebooks train, each with what a training step of it is fed,
    from the first planned run that trains it:
    ``{arch: {"dataset", "input_shape", "num_classes", "augment", "mean", "std"}}``."""
    from palviz.experiments.plan import NOTEBOOKS_WITH_RUNS, plan

    cases: dict[str, dict] = {}
    for row in plan(list(NOTEBOOKS_WITH_RUNS), profile):
        spec = row["spec"]
        if spec.arch not in cases:
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
    """The training samples of a run (a :class:`~palviz.experiments.runspec.RunSpec`), without
    its data for MNIST and CIFAR (:data:`SPLIT_CLASS_COUNTS`; a long-tailed run keeps
    :func:`palviz.data.long_tail_counts` of the smallest class, as
    :func:`palviz.data.make_long_tailed` does); a run on a ``train_size`` subset, or on an
    embedded dataset, is counted from its labels
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


def _check_result(where: str, result: Any, batch_size: int) -> None:
    if not isinstance(result, Mapping):
        raise invalid(where, result, "an object")
    for key in ("arch", "runs_per_gpu", "status"):
        if key not in result:
            raise ValueError(f"{where} has no {key!r}; it has {sorted(result)}")
    if not isinstance(result["arch"], str):
        raise invalid(f"{where}.arch", result["arch"], "a string")
    if not isinstance(result.get("precision", ""), str):
        raise invalid(f"{where}.precision", result["precision"], "a string")
    if "channels_last" in result:
        check_bool(f"{where}.channels_last", result["channels_last"])
    runs = check_int(f"{where}.runs_per_gpu", result["runs_per_gpu"], 1)
    if check_choice(f"{where}.status", result["status"], STATUSES) != "ok":
        return
    missing = [k for k in ("ms_per_step", "images_per_s", "max_memory_bytes") if k not in result]
    if missing:
        raise ValueError(f"{where} (status 'ok') has no {missing}; it has {sorted(result)}")
    ms = check_positive(f"{where}.ms_per_step", result["ms_per_step"])
    rate = check_positive(f"{where}.images_per_s", result["images_per_s"])
    expected = runs * batch_size * 1000.0 / ms
    if not math.isclose(rate, expected, rel_tol=1e-6):
        rule = f"runs_per_gpu * batch_size * 1000 / ms_per_step = {expected:.6g}"
        raise invalid(f"{where}.images_per_s", rate, rule)
    if result["max_memory_bytes"] is not None:
        check_int(f"{where}.max_memory_bytes", result["max_memory_bytes"], 0)


def check_benchmark(bench: Any, source: str = "the benchmark") -> dict:
    """``bench`` (a benchmark's JSON, loaded) checked against the schema of this script's
    docstring; a ``ValueError`` names ``source``, the entry and what is expected."""
    what = f"a {BENCH_SCHEMA} file of version {BENCH_VERSION} (benchmarks/bench_gpu.py)"
    if not isinstance(bench, Mapping):
        raise ValueError(f"{source}: expected {what}, got a JSON {type(bench).__name__}")
    found = (bench.get("schema"), bench.get("version"))
    if found != (BENCH_SCHEMA, BENCH_VERSION):
        raise ValueError(f"{source}: expected {what}, got schema {found[0]!r} version {found[1]!r}")
    for key, kind in (("device", Mapping), ("settings", Mapping), ("results", list)):
        if not isinstance(bench.get(key), kind):
            raise invalid(
                f"{source}: {key}", bench.get(key), "a list" if kind is list else "an object"
            )
    device = bench["device"]
    named = {"torch": bench.get("torch"), "device.type": device.get("type")}
    for key, value in {**named, "device.name": device.get("name")}.items():
        if not isinstance(value, str):
            raise invalid(f"{source}: {key}", value, "a string")
    settings = bench["settings"]
    for key in ("batch_size", "steps", "warmup_steps"):
        check_int(f"{source}: settings.{key}", settings.get(key), 0 if key == "warmup_steps" else 1)
    for i, result in enumerate(bench["results"]):
        _check_result(f"{source}: results[{i}]", result, settings["batch_size"])
    return dict(bench)


def read_benchmark(path: str | Path) -> dict:
    """The benchmark JSON at ``path``, checked (:func:`check_benchmark`); an unreadable or
    non-JSON file is a ``ValueError`` naming it."""
    try:
        bench = json.loads(Path(path).read_text())
    except OSError as err:
        raise ValueError(f"cannot read the benchmark {path}: {err.strerror or err}") from None
    except ValueError as err:
        raise ValueError(f"{path}: not JSON ({err})") from None
    return check_benchmark(bench, str(path))


# --------------------------------------------------------------------------- the estimate


def _gpu_ms(result: Mapping) -> float:
    """GPU milliseconds a step of one run: ``ms_per_step / runs_per_gpu``."""
    return result["ms_per_step"] / result["runs_per_gpu"]


def best_configurations(bench: Mapping, archs: Iterable[str], source: str) -> dict[str, dict]:
    """For each of ``archs``, the ``"ok"`` result of ``bench`` of least GPU time a step; a
    ``ValueError`` names every arch without one."""
    best: dict[str, dict] = {}
    for r in bench["results"]:
        if r["status"] == "ok" and (r["arch"] not in best or _gpu_ms(r) < _gpu_ms(best[r["arch"]])):
            best[r["arch"]] = dict(r)
    wanted = list(dict.fromkeys(archs))
    missing = [a for a in wanted if a not in best]
    if missing:
        raise ValueError(
            f"{source} has no measured configuration of {missing} (status 'ok'), which the "
            f"plan trains; it has {sorted(best)}: run benchmarks/bench_gpu.py with them"
        )
    return {a: best[a] for a in wanted}


def estimate(specs: Sequence[Any], bench: Mapping, gpus: int, source: str) -> dict:
    """GPU-hours of the runs ``specs`` from ``bench`` on ``gpus`` GPUs (the formulas: this
    script's docstring): ``gpus``, ``gpu_hours``, ``wall_hours``, ``longest_run_hours`` and
    ``archs``, per network its ``runs``, ``steps``, ``gpu_hours``, ``best`` result and the
    ``batch_sizes`` of its runs."""
    best = best_configurations(bench, (s.arch for s in specs), source)
    measured_batch = bench["settings"]["batch_size"]
    rows = {a: {"runs": 0, "steps": 0, "gpu_hours": 0.0, "best": r, "batch_sizes": set()}
            for a, r in best.items()}  # fmt: skip
    longest = 0.0
    for spec in specs:
        row, result = rows[spec.arch], best[spec.arch]
        batch = spec.train.batch_size
        steps = spec.train.epochs * math.ceil(planned_train_size(spec) / batch)
        scale = batch / measured_batch  # time proportional to the images of a step
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


def _configuration(result: Mapping) -> str:
    """A result's precision, layout and packing, those it has: ``fp32, channels_last on, 4/GPU``."""
    parts = [result["precision"]] if "precision" in result else []
    if "channels_last" in result:
        parts.append(f"channels_last {'on' if result['channels_last'] else 'off'}")
    return ", ".join([*parts, f"{result['runs_per_gpu']}/GPU"])


def format_estimate(est: Mapping, bench: Mapping, source: str) -> str:
    """The estimate as the script prints it: a table per network, the total and the notes."""
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
        lines.append(
            f"{arch:12} {row['runs']:>5} {row['steps']:>11,}  {_configuration(r):32} "
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
    return "\n".join([*lines, *(f"note: {n}" for n in notes)])


# --------------------------------------------------------------------------- the command


def planned_specs(args: argparse.Namespace) -> list:
    """The runs to estimate: those of the ``--plan`` file, else of ``--profile`` and ``--only``."""
    from palviz.cli.sweep import plan_numbers, read_specs
    from palviz.experiments.plan import plan

    if args.plan:
        try:
            return read_specs(args.plan)
        except OSError as err:
            raise ValueError(f"cannot read the plan {args.plan}: {err.strerror or err}") from None
    return [row["spec"] for row in plan(plan_numbers(args.only), args.profile)]


def main(argv: list[str] | None = None) -> int:
    from palviz.files import PROFILES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("benchmark", help="a JSON file of benchmarks/bench_gpu.py")
    parser.add_argument("--plan", metavar="FILE", help="a `palviz plan --jsonl` file")
    parser.add_argument("--profile", choices=PROFILES, default="paper", help="without --plan")
    parser.add_argument("--only", nargs="+", metavar="NN", help="without --plan: notebooks")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs sharing the runs (default 1)")
    args = parser.parse_args(argv)
    if args.gpus < 1:
        parser.error(f"--gpus must be >= 1, got {args.gpus}")
    if args.plan and args.only:
        parser.error("--only selects notebooks of a profile's plan; a --plan file is already one")
    try:
        bench = read_benchmark(args.benchmark)
        specs = planned_specs(args)
        est = estimate(specs, bench, args.gpus, args.benchmark)
    except ValueError as err:
        print(f"estimate_gpu_hours: {err}; no estimate made", file=sys.stderr)
        return 2
    print(f"GPU time of the {len(specs)} run(s) of {args.plan or f'the {args.profile} plan'}:")
    print(format_estimate(est, bench, args.benchmark))
    return 0


if __name__ == "__main__":
    sys.exit(main())
