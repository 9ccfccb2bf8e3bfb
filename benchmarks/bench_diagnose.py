"""What does ``palviz.diagnose`` cost beside one forward pass over the same data?

Run from the project root:

    python benchmarks/bench_diagnose.py [--classes 1000] [--per-class 2] [--dim 512] [--repeats 3]
    python benchmarks/bench_diagnose.py --long-tail --samples 10000 --classes 100
    python benchmarks/bench_diagnose.py --recording


The model is ``nn.Identity()`` followed by ``nn.Linear(dim, classes)``, so the data are the
features themselves (random; ``--per-class`` samples of every class, or with ``--long-tail``
``--samples`` in all, class counts from 20x the rarest class down to it) and the forward pass
is as cheap as a classifier gets: the difference is the measures' own cost (class means, NC1's
pseudo-inverse, the cosines, NC4's distances, ECE). Both run on one thread (torch and NumPy's
BLAS), so that the ratio does not depend on how many cores are free. Prints the best wall time
of ``--repeats`` runs of each (batches of 256, on the CPU), their ratio, the target (diagnose
within 2 forward passes + 1 s at 1,000 classes of 2 samples, d = 512) and the one-thread
matmul rate of the machine at that moment.

``--recording`` measures instead what the trainer's neural-collapse and ECE readings
(``palviz.evaluation.collapse_readings``) cost during a quick run: the quick CE run of
notebook 08 trained three times in this process, into a temporary run cache, with the readings
at every evaluated epoch, at the profile's ``TrainConfig.readings`` epochs and with none, and
the ratios of the wall times to the one without.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from palviz import diagnose  # noqa: E402
from palviz.threads import matmul_rate, single_thread  # noqa: E402

BATCH = 256


def balanced(per_class: int, k: int, d: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``per_class`` random features of each of ``k`` classes around random centres."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(k).repeat(per_class)
    return torch.randn(k, d, generator=g)[y] + torch.randn(len(y), d, generator=g), y


def data(n: int, k: int, d: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` random features in ``k`` long-tailed classes (counts n_j ~ 20^(-j/(k-1)))."""
    g = torch.Generator().manual_seed(seed)
    profile = 20.0 ** (-np.arange(k) / (k - 1))
    counts = np.maximum(1, np.floor(profile / profile.sum() * n)).astype(int)
    counts[0] += n - counts.sum()
    y = torch.repeat_interleave(torch.arange(k), torch.as_tensor(counts))
    centres = torch.randn(k, d, generator=g)
    return centres[y] + torch.randn(n, d, generator=g), y


def best_of(repeats: int, fn) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def recording_cost() -> None:
    """The quick CE run of notebook 08 with readings at every evaluated epoch, at its few
    reading epochs and at none."""
    import os
    import tempfile

    from palviz import experiments as ex

    spec = ex.experiment_specs("08", "quick", methods=("CE",))[0]
    spec = spec.replace(train={"progress": False})
    every, few = spec.train.epochs, spec.train.readings
    seconds = {}
    for name, readings in ((f"every epoch ({every})", every), (f"{few} epochs", few), ("none", 0)):
        with tempfile.TemporaryDirectory() as runs:
            os.environ["PALVIZ_RUNS"] = runs
            start = time.perf_counter()
            ex.run(spec.replace(train={"readings": readings}))
            seconds[name] = time.perf_counter() - start
    print(
        f"quick run {spec.label} ({spec.train.epochs} epochs, evaluated every "
        f"{spec.train.eval_every}); one-thread matmul {matmul_rate():.1f} GFLOP/s"
    )
    for name, t in seconds.items():
        print(f"  readings at {name}: {t:.1f} s, {t / seconds['none']:.3f} x none")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recording", action="store_true", help="the trainer's readings' cost")
    parser.add_argument("--long-tail", action="store_true", help="long-tailed counts")
    parser.add_argument("--samples", type=int, default=10_000, help="with --long-tail")
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--per-class", type=int, default=2)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.recording:
        recording_cost()
        return
    torch.manual_seed(0)
    if args.long_tail:
        x, y = data(args.samples, args.classes, args.dim)
    else:
        x, y = balanced(args.per_class, args.classes, args.dim)
    model = nn.Sequential(nn.Identity(), nn.Linear(args.dim, args.classes)).eval()

    def forward() -> None:
        with torch.no_grad():
            for start in range(0, len(x), BATCH):
                model(x[start : start + BATCH])

    print(
        f"diagnose on {len(y)} samples, {args.classes} classes, {args.dim}-dim features; "
        f"torch {torch.__version__}, one thread, CPU; "
        f"one-thread matmul {matmul_rate():.1f} GFLOP/s"
    )
    with single_thread():
        forward()  # warm-up
        diagnose(model, (x, y), batch_size=BATCH)
        t_forward = best_of(args.repeats, forward)
        t_diagnose = best_of(args.repeats, lambda: diagnose(model, (x, y), batch_size=BATCH))
    print(f"forward pass: best {t_forward:.3f} s; diagnose: best {t_diagnose:.3f} s")
    print(f"diagnose / forward pass: {t_diagnose / t_forward:.1f}")
    bound = 2 * t_forward + 1.0
    print(
        f"diagnose / (2 x forward pass + 1 s): {t_diagnose / bound:.2f} "
        f"({'within' if t_diagnose <= bound else 'over'} the target)"
    )


if __name__ == "__main__":
    main()
