"""What one training step of a network holds in memory, measured on the CPU with forward hooks.

Usage::

    python benchmarks/bench_memory.py                       # ResNet-32, 10 classes, batch 128
    python benchmarks/bench_memory.py --arch resnet34 --classes 100 --batch 128

It prints, in MiB, the parameters, their gradients and SGD momentum (as many again each), the
activations of one forward pass (every leaf module's outputs, which autograd keeps for the
backward pass) and their sum: the figures behind docs/cluster.md ("How many runs per GPU").
``benchmarks/bench_gpu.py`` measures the memory of runs on a GPU itself.
"""

from __future__ import annotations

import argparse
from typing import Any

from palviz.models import make_model  # palviz first: it pins torch's CPU kernels


def activation_bytes(model: Any, input_shape: tuple[int, ...], batch_size: int) -> dict:
    """What one training step of ``model`` on a batch of ``batch_size`` inputs of
    ``input_shape`` (without the batch axis) holds, in bytes, measured on the CPU in float32:

    - ``parameters``: the weights; ``gradients`` and ``momentum``: as many again each (SGD);
    - ``activations``: the outputs of every leaf module in one forward pass (forward hooks),
      which autograd keeps for the backward pass (an upper bound: in-place ReLUs share theirs),
      and the input batch;
    - ``total``: their sum. With AMP on a GPU the activations take about half as much; the
      CUDA context (about 300-500 MB per process) and the allocator's slack come on top.
    """
    import torch

    seen = {"bytes": 0}

    def hook(_module, _inputs, output):
        outputs = output if isinstance(output, (tuple, list)) else (output,)
        for out in outputs:
            if torch.is_tensor(out):
                seen["bytes"] += out.numel() * out.element_size()

    handles = [m.register_forward_hook(hook) for m in model.modules() if not list(m.children())]
    try:
        model.train()
        model(torch.zeros(batch_size, *input_shape))
    finally:
        for handle in handles:
            handle.remove()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    input_bytes = batch_size * int(torch.tensor(input_shape).prod()) * 4  # float32: 4 bytes
    out = {
        "parameters": params,
        "gradients": params,
        "momentum": params,
        "activations": seen["bytes"] + input_bytes,
    }
    out["total"] = sum(out.values())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="resnet32", help="a palviz.models architecture")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()
    sizes = activation_bytes(make_model(args.arch, args.classes), (3, 32, 32), args.batch)
    print(f"{args.arch}, {args.classes} classes, batch {args.batch} of 3x32x32, float32:")
    for part, size in sizes.items():
        print(f"  {part:<12} {size / 2**20:8.1f} MiB")


if __name__ == "__main__":
    main()
