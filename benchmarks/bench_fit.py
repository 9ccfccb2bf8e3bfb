"""How much does ``palviz.train.fit`` cost on top of a bare PyTorch loop?

Usage::

    python benchmarks/bench_fit.py            # cnn1d on 10k vectors, ResNet-32 on 2048 images
    python benchmarks/bench_fit.py --quick    # ResNet-32 on 512 images instead of 2048
    python benchmarks/bench_fit.py --threads 1 --only cnn1d   # one case, one thread

For each case, on the same data and the same architecture (freshly initialised from the same
seed), it times one training epoch of

* **bare**: a hand-written loop doing only forward, ``F.cross_entropy``, ``zero_grad``, backward
  and SGD step on the batches of a ``BatchIterator`` built with the same arguments as the one
  ``fit`` builds (same shuffling, the same on-device augmentation and normalisation,
  channels-last for images as ``fit`` does), so the data pipeline costs the same in both and
  the difference is the loop's own bookkeeping (and ``palviz.losses.CrossEntropyLoss``'s
  argument checks, which ``fit`` is given as its loss);
* **fit**: ``fit(...)`` for one epoch with ``eval_every=0``, no test split, no checkpoint, no
  progress bar, on a model that keeps training from call to call; the epoch's time is the
  ``seconds`` of its history row (the training pass: learning-rate update, DRW check, the
  batches with their on-device loss/accuracy sums, the per-epoch ``.item()``). The whole
  call (setup included: moving the data, building the optimiser) is shown too.

After one warm-up epoch of each, ``--repeats`` epochs of the two are alternated, so both see
the same load on the machine, and the best epoch of each is kept (the minimum is the least
disturbed by other work). Wall time is shown, and the process's CPU time too. On a machine
whose cores other jobs share, the epochs of a two-thread run swing by several times in wall
time and less, but still, in CPU time (idle OpenMP workers spin); ``--threads 1`` steadies
both. The target is fit / bare <= 1.10. Separately it times one ``evaluate`` pass (logits and
features of the evaluation split, moved to the CPU, in batches of the default size).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from palviz.data import BatchIterator  # noqa: E402
from palviz.losses import CrossEntropyLoss  # noqa: E402
from palviz.models import make_model  # noqa: E402
from palviz.threads import matmul_rate  # noqa: E402
from palviz.train import TrainConfig, evaluate, fit  # noqa: E402

CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2023, 0.1994, 0.2010)


def vectors(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 40, generator=g), torch.randint(0, 10, (n,), generator=g)


def images(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g)
    return x, torch.randint(0, 10, (n,), generator=g)


class BareLoop:
    """The hand-written loop: forward, loss, zero_grad, backward, step; nothing else."""

    def __init__(self, arch: str, train, cfg: TrainConfig) -> None:
        torch.manual_seed(0)
        self.model = make_model(arch, 10)
        self.channels_last = train[0].dim() == 4  # images: NHWC, as fit stores them
        if self.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.batches = BatchIterator(
            *train,
            cfg.batch_size,
            shuffle=True,
            augment=cfg.augment,
            mean=cfg.mean,
            std=cfg.std,
            device="cpu",
            seed=cfg.seed,
        )
        self.opt = torch.optim.SGD(
            self.model.parameters(),
            lr=cfg.lr,
            momentum=cfg.momentum,
            weight_decay=cfg.weight_decay,
        )

    def epoch(self, e: int) -> tuple[float, float]:
        """Wall and CPU seconds of epoch ``e``."""
        self.model.train()
        t0, c0 = time.perf_counter(), time.process_time()
        for xb, yb in self.batches.epoch(e):
            if self.channels_last:
                xb = xb.contiguous(memory_format=torch.channels_last)
            loss = F.cross_entropy(self.model(xb), yb)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
        return time.perf_counter() - t0, time.process_time() - c0


def fit_epoch(model, train, cfg: TrainConfig) -> tuple[float, float, float]:
    """Wall seconds of ``fit``'s training epoch (its history row), and wall and CPU seconds
    of the whole one-epoch call (setup included)."""
    t0, c0 = time.perf_counter(), time.process_time()
    record = fit(model, CrossEntropyLoss(), train, None, cfg)
    return record.history[0]["seconds"], time.perf_counter() - t0, time.process_time() - c0


def eval_seconds(arch: str, test, cfg: TrainConfig, repeats: int) -> float:
    """Best wall time of one ``evaluate`` pass (default batch size)."""
    torch.manual_seed(0)
    model = make_model(arch, 10)
    if test[0].dim() == 4:
        model = model.to(memory_format=torch.channels_last)
    evaluate(model, *test, mean=cfg.mean, std=cfg.std, device="cpu")  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        evaluate(model, *test, mean=cfg.mean, std=cfg.std, device="cpu")
        best = min(best, time.perf_counter() - t0)
    return best


def bench(name: str, arch: str, train, test, cfg: TrainConfig, repeats: int) -> dict:
    bare = BareLoop(arch, train, cfg)
    torch.manual_seed(0)
    model = make_model(arch, 10)
    one = TrainConfig(**{**cfg.to_dict(), "epochs": 1})
    bare.epoch(0), fit_epoch(model, train, one)  # warm-up
    bare_wall, bare_cpu, fit_wall, call_wall, call_cpu = [], [], [], [], []
    for e in range(repeats):  # alternated, so both see the same machine load
        wall, cpu = bare.epoch(e + 1)
        bare_wall.append(wall)
        bare_cpu.append(cpu)
        epoch_wall, wall, cpu = fit_epoch(model, train, one)
        fit_wall.append(epoch_wall)
        call_wall.append(wall)
        call_cpu.append(cpu)
    return {
        "case": name,
        "batches": len(bare.batches),
        "bare": min(bare_wall),
        "fit": min(fit_wall),
        "call": min(call_wall),
        "bare_cpu": min(bare_cpu),
        "call_cpu": min(call_cpu),
        "eval": eval_seconds(arch, test, cfg, repeats),
        "eval_n": len(test[1]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="512 images instead of 2048")
    parser.add_argument("--repeats", type=int, default=None, help="timed epochs per block")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--only", choices=("cnn1d", "resnet32"), help="run one case only")
    args = parser.parse_args(argv)
    repeats = args.repeats or 5
    if args.threads:
        torch.set_num_threads(args.threads)
    n_images = 512 if args.quick else 2048

    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU; "
        f"best of {repeats} alternated epochs (cnn1d: {4 * repeats}) after a warm-up epoch; "
        f"one-thread matmul {matmul_rate():.1f} GFLOP/s"
    )
    common = {
        "lr": 0.1,
        "eval_every": 0,
        "progress": False,
        "device": "cpu",
        "schedule": "constant",
        "batch_size": 128,
    }
    cases = [
        (
            "cnn1d, 10k x 40 vectors",
            "cnn1d",
            vectors(10_000, 0),
            vectors(2_000, 1),
            TrainConfig(**common),
        ),
        (
            f"resnet32, {n_images} x 3x32x32 uint8, augment",
            "resnet32",
            images(n_images, 0),
            images(512, 1),
            TrainConfig(**common, augment=True, mean=CIFAR_MEAN, std=CIFAR_STD),
        ),
    ]
    # the small net's epochs take a fraction of a second: give it more of them
    rows = [
        bench(name, arch, tr, te, cfg, repeats * (4 if arch == "cnn1d" else 1))
        for name, arch, tr, te, cfg in cases
        if args.only in (None, arch)
    ]

    header = (
        f"{'case':<40} {'batches':>7} {'bare':>7} {'fit':>7} {'ratio':>6} {'call':>7} "
        f"{'bare cpu':>8} {'call cpu':>8} {'ratio':>6} {'eval':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['case']:<40} {r['batches']:>7} {r['bare']:>7.3f} {r['fit']:>7.3f} "
            f"{r['fit'] / r['bare']:>6.3f} {r['call']:>7.3f} {r['bare_cpu']:>8.3f} "
            f"{r['call_cpu']:>8.3f} {r['call_cpu'] / r['bare_cpu']:>6.3f} {r['eval']:>6.3f}"
        )
    print(
        "seconds, best epoch. bare: the hand-written loop; fit: fit's training epoch (history);"
        " call: the whole one-epoch fit() call, setup included; cpu: process CPU time (less"
        " disturbed than wall time when other work shares the cores); eval: one evaluate()"
        " pass over " + " and ".join(str(r["eval_n"]) for r in rows) + " samples."
    )
    worst_wall = max(r["fit"] / r["bare"] for r in rows)
    worst_cpu = max(r["call_cpu"] / r["bare_cpu"] for r in rows)
    print(f"worst ratio: {worst_wall:.3f} wall, {worst_cpu:.3f} CPU (target <= 1.10)")


if __name__ == "__main__":
    main()
