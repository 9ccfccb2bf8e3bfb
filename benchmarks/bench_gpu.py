"""Training throughput on a GPU of the networks the paper profile trains, written as JSON.

Usage, on a CUDA machine::

    python benchmarks/bench_gpu.py                      # -> build/bench_gpu.json
    python benchmarks/estimate_gpu_hours.py build/bench_gpu.json [--only 06 07] [--gpus 4]

    python benchmarks/bench_gpu.py --tiny               # a check of the script (also on a CPU)
    python benchmarks/bench_gpu.py --archs resnet32 --runs-per-gpu 1 4 --out FILE

Every network of the ``paper`` profile (ResNet-32 on CIFAR-shaped data, ResNet-34 with 100
classes, the CIFAR-10 and the MNIST CNN: ``benchmark_cases`` of ``estimate_gpu_hours.py``) is
timed training on random images of its dataset's shape and class count, as many as its training
split holds (so that the memory per run counts them as a run's does), kept on the GPU as
``uint8`` and drawn by :class:`palviz.data.BatchIterator` with the run's augmentation and
normalisation, at batch 128, with SGD as :func:`palviz.train.fit` does it (float32, image
batches and conv weights channels-last), with 1, 2, 4 and 8 runs training on the GPU at once
(each its own process, as ``palviz sweep --workers-per-gpu W`` runs them).

A configuration's runs each build their model and data and take the warm-up steps (not
timed), then start their timed steps together; each times them with
``torch.cuda.synchronize()`` and ``time.perf_counter()`` and reports its peak
``torch.cuda.max_memory_allocated()``. The JSON (schema: ``benchmarks/estimate_gpu_hours.py``)
holds per ``(arch, runs_per_gpu)`` the ms a step (the slowest run's), the images a second of
all runs together and the memory per run. The script prints the results and the ratios of packed
runs to one run measured in this one run; their numbers belong to the machine.

Without CUDA, or with ``--tiny``, it runs its tiny mode: a few steps at batch 4, 1 and 2 runs
at once, with one thread per run as CPU runs train: it checks the script and the file, it
does not measure a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import multiprocessing
import platform
import sys
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimate_gpu_hours import (  # noqa: E402
    BENCH_SCHEMA,
    BENCH_VERSION,
    SPLIT_CLASS_COUNTS,
    benchmark_cases,
    check_benchmark,
)

from palviz.data import BatchIterator  # noqa: E402
from palviz.files import build_dir, write_json  # noqa: E402
from palviz.losses import CrossEntropyLoss  # noqa: E402
from palviz.models import make_model  # noqa: E402
from palviz.train import TrainConfig  # noqa: E402

FULL = {"batch_size": 128, "steps": 50, "warmup_steps": 10, "runs_per_gpu": (1, 2, 4, 8)}
TINY = {"batch_size": 4, "steps": 2, "warmup_steps": 1, "runs_per_gpu": (1, 2)}


# ------------------------------------------------------------------------------ one run


class Run:
    """One training run of a configuration: model, SGD, data on the device."""

    def __init__(self, case: dict, config: dict, settings: dict, device: torch.device) -> None:
        torch.manual_seed(0)
        train = TrainConfig(batch_size=settings["batch_size"])  # the paper's SGD defaults
        self.device = device
        self.channels_last = len(case["input_shape"]) == 3  # images: NHWC, as fit stores them
        self.model = make_model(config["arch"], case["num_classes"]).to(device)
        if self.channels_last:
            self.model.to(memory_format=torch.channels_last)
        self.loss = CrossEntropyLoss().to(device)
        self.optimizer = torch.optim.SGD(
            self.model.parameters(),
            lr=train.lr,
            momentum=train.momentum,
            weight_decay=train.weight_decay,
        )
        n = settings["batch_size"] * (settings["warmup_steps"] + settings["steps"])
        if not settings["tiny"]:  # the whole training split on the device, as a run holds it
            n = max(n, sum(SPLIT_CLASS_COUNTS.get(case["dataset"], ())))
        g = torch.Generator().manual_seed(0)
        x = torch.randint(0, 256, (n, *case["input_shape"]), dtype=torch.uint8, generator=g)
        y = torch.randint(0, case["num_classes"], (n,), generator=g)
        self.batches = BatchIterator(
            x,
            y,
            settings["batch_size"],
            augment=case["augment"],
            mean=case["mean"],
            std=case["std"],
            device=device,
        )
        self.epoch = 0

    def _batches(self, count: int):
        while count > 0:
            for xb, yb in self.batches.epoch(self.epoch):
                yield xb, yb
                count -= 1
                if count == 0:
                    break
            self.epoch += 1

    def steps(self, count: int) -> None:
        """``count`` SGD steps as :func:`palviz.train.fit` takes them (its loop over batches),
        then a device synchronisation."""
        self.model.train()
        loss_sum = torch.zeros((), device=self.device)
        correct = torch.zeros((), dtype=torch.long, device=self.device)
        for xb, yb in self._batches(count):
            if self.channels_last:
                xb = xb.contiguous(memory_format=torch.channels_last)
            logits = self.model(xb)
            loss = self.loss(logits, yb)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            loss_sum += loss.detach() * len(yb)
            correct += (logits.detach().argmax(1) == yb).sum()
        loss_sum.item(), correct.item()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


def _free(device: torch.device) -> None:
    if device.type == "cuda":
        # CUDA starts lazily: its allocator must exist before its statistics are reset (in a
        # fresh worker, resetting first fails with "Invalid device argument")
        torch.cuda.init()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def worker(conn, device_name: str, threads: int | None) -> None:
    """A process that runs configurations on ``device_name`` when asked: builds the run and
    takes the warm-up steps, says "ready", waits for "go", times the steps, reports."""
    if threads:
        torch.set_num_threads(threads)
    device = torch.device(device_name)
    while (job := conn.recv()) is not None:
        case, config, settings = job
        run = None
        try:
            _free(device)
            run = Run(case, config, settings, device)
            run.steps(settings["warmup_steps"])
            conn.send(("ready", None))
            if not conn.recv():
                continue
            start = time.perf_counter()
            run.steps(settings["steps"])
            seconds = time.perf_counter() - start
            memory = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
            conn.send(("ok", {"seconds": seconds, "max_memory_bytes": memory}))
        except torch.cuda.OutOfMemoryError as err:
            conn.send(("out of memory", str(err).splitlines()[0]))
        except Exception:  # reported with its traceback, the other configurations go on
            conn.send(("failed", traceback.format_exc()))
        finally:
            del run
            _free(device)


# ------------------------------------------------------------------------- the coordinator


class Workers:
    """``count`` worker processes (spawned, as palviz's pools start them) on one device."""

    def __init__(self, count: int, device: torch.device, threads: int | None) -> None:
        self.context = multiprocessing.get_context("spawn")
        self.args = (str(device), threads)
        self.conns, self.procs = [None] * count, [None] * count
        for i in range(count):
            self._start(i)

    def _start(self, i: int) -> None:
        mine, theirs = self.context.Pipe()
        proc = self.context.Process(target=worker, args=(theirs, *self.args))
        proc.start()
        self.conns[i], self.procs[i] = mine, proc

    def _talk(self, conn, message=None, *, send: bool = False) -> tuple[str, object] | None:
        try:
            if send:
                return conn.send(message)
            return conn.recv()
        except (EOFError, OSError):
            return "failed", "the worker process died (killed, or out of host memory)"

    def measure(self, case: dict, config: dict, settings: dict) -> dict:
        """One configuration on ``config["runs_per_gpu"]`` workers at once (a worker that
        died is replaced for the next one)."""
        try:
            return self._measure(case, config, settings)
        finally:
            for i, proc in enumerate(self.procs):
                if not proc.is_alive():
                    self._start(i)

    def _measure(self, case: dict, config: dict, settings: dict) -> dict:
        conns = self.conns[: config["runs_per_gpu"]]
        sent = [self._talk(conn, (case, config, settings), send=True) for conn in conns]
        ready = [s or self._talk(conn) for conn, s in zip(conns, sent, strict=True)]
        go = all(status == "ready" for status, _ in ready)
        for conn, (status, _) in zip(conns, ready, strict=True):
            if status == "ready":
                self._talk(conn, go, send=True)
        if not go:
            status, reason = next(r for r in ready if r[0] != "ready")
            return {**config, "status": status, "reason": str(reason)}
        done = [self._talk(conn) for conn in conns]
        bad = [d for d in done if d[0] != "ok"]
        if bad:
            return {**config, "status": bad[0][0], "reason": str(bad[0][1])}
        ms = 1000.0 * max(d[1]["seconds"] for d in done) / settings["steps"]
        memory = [d[1]["max_memory_bytes"] for d in done]
        return {
            **config,
            "status": "ok",
            "ms_per_step": ms,
            "images_per_s": config["runs_per_gpu"] * settings["batch_size"] * 1000.0 / ms,
            "max_memory_bytes": None if None in memory else max(memory),
        }

    def close(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for proc in self.procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()


def device_name(device: torch.device) -> str:
    """The GPU's name, or the CPU's (its ``model name`` in ``/proc/cpuinfo`` on Linux)."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def run_benchmark(args: argparse.Namespace) -> dict:
    cuda = torch.cuda.is_available() and not args.device.startswith("cpu")
    tiny = args.tiny or not cuda
    device = torch.device(args.device if cuda else "cpu")
    base = TINY if tiny else FULL
    settings = {k: base[k] for k in ("batch_size", "steps", "warmup_steps")}
    for key in ("batch_size", "steps", "warmup_steps"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    packing = tuple(args.runs_per_gpu or base["runs_per_gpu"])
    cases = benchmark_cases()
    archs = args.archs or list(cases)
    unknown = sorted(set(archs) - set(cases))
    if unknown:
        raise SystemExit(f"--archs: {unknown} are not trained by the paper profile; {list(cases)}")
    print(
        f"{device_name(device)} ({device.type}), torch {torch.__version__}"
        f"{', tiny mode' if tiny else ''}: batch {settings['batch_size']}, "
        f"{settings['steps']} timed steps after {settings['warmup_steps']} warm-up steps; "
        f"{len(archs) * len(packing)} configurations"
    )
    print(HEADER)
    print("-" * len(HEADER))
    results = []
    workers = Workers(max(packing), device, 1 if device.type == "cpu" else None)
    try:
        for arch in archs:
            for runs in packing:
                config = {"arch": arch, "runs_per_gpu": runs}
                result = workers.measure(cases[arch], config, {**settings, "tiny": tiny})
                results.append(result)
                print(row(result), flush=True)
    finally:
        workers.close()
    keep = ("dataset", "input_shape", "num_classes")
    return {
        "schema": BENCH_SCHEMA,
        "version": BENCH_VERSION,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "tiny": tiny,
        "device": {"type": device.type, "name": device_name(device)},
        "settings": settings,
        "archs": {a: {k: cases[a][k] for k in keep} for a in archs},
        "results": results,
    }


# ----------------------------------------------------------------------------- the tables

HEADER = f"{'arch':12} {'runs':>4} {'ms/step':>9} {'images/s':>10} {'MB/run':>8}"


def row(r: dict) -> str:
    head = f"{r['arch']:12} {r['runs_per_gpu']:>4} "
    if r["status"] != "ok":
        return head + f"{r['status']}: {r['reason'].strip().splitlines()[-1][:80]}"
    memory = "-" if r["max_memory_bytes"] is None else f"{r['max_memory_bytes'] / 2**20:8.0f}"
    return head + f"{r['ms_per_step']:>9.2f} {r['images_per_s']:>10.1f} {memory:>8}"


def ratios(bench: dict) -> list[str]:
    """Images a second of n runs packed on the GPU over one run's, both measured in this run."""
    rate = {
        (r["arch"], r["runs_per_gpu"]): r["images_per_s"]
        for r in bench["results"]
        if r["status"] == "ok"
    }
    packing = sorted({n for _, n in rate})
    lines = ["ratios of images/s measured in this run:"]
    for arch in bench["archs"]:
        if (arch, 1) not in rate or len(packing) < 2:
            continue
        values = [
            f"{n}: {rate[arch, n] / rate[arch, 1]:.2f}" if (arch, n) in rate else f"{n}: -"
            for n in packing[1:]
        ]
        lines.append(f"  {arch:12} n runs packed / 1: {', '.join(values)}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="the JSON file (default build/bench_gpu.json)")
    parser.add_argument("--tiny", action="store_true", help="a few steps at batch 4 (any device)")
    parser.add_argument("--device", default="cuda:0", help="the GPU (default cuda:0)")
    parser.add_argument("--archs", nargs="+", metavar="ARCH", help="default: the paper's")
    parser.add_argument("--runs-per-gpu", nargs="+", type=int, metavar="N")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--steps", type=int, help="timed steps per run")
    parser.add_argument("--warmup-steps", type=int, help="untimed steps first")
    args = parser.parse_args(argv)
    for name in ("batch_size", "steps", "runs_per_gpu"):
        values = getattr(args, name)
        if values is not None and min(values if isinstance(values, list) else [values]) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {values}")
    if args.warmup_steps is not None and args.warmup_steps < 0:
        parser.error(f"--warmup-steps must be >= 0, got {args.warmup_steps}")
    out = args.out or build_dir() / "bench_gpu.json"
    bench = check_benchmark(run_benchmark(args), "the benchmark's results")
    write_json(out, bench)
    print("\n".join(ratios(bench)))
    print(f"written to {out}; estimate: python benchmarks/estimate_gpu_hours.py {out}")


if __name__ == "__main__":
    main()
