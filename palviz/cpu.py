"""The same numbers on every x86-64 machine: the instruction set of the CPU kernels that decide
a run's numbers, pinned to AVX2 before torch loads.

PyTorch picks its CPU kernels by what the processor offers: ATen's own kernels (``log_softmax``,
the optimiser's arithmetic, ...) at AVX2 or AVX-512, oneDNN's convolutions by the widest
vector unit (and its blocking), MKL's matrix products by the processor's branch. The same run
gives other float roundings, so after 90 epochs another final accuracy (one to seven points
on the quick runs), on two machines that differ only in their CPU.
``benchmarks/bench_pin.py`` shows which switch decides which number; three are needed
(:data:`SWITCHES`), each read once, when its library loads:

- ``ATEN_CPU_CAPABILITY=avx2``: ATen's dispatch;
- ``ONEDNN_MAX_CPU_ISA=AVX2``: oneDNN's convolutions and batch norm;
- ``MKL_CBWR=AVX2``: MKL's code branch (its conditional numerical reproducibility), which
  otherwise takes AVX-512 on Intel processors that have it.

NumPy, which makes the embedded data, gives the same arrays at every level it dispatches to
(``X86_V2``, ``V3``, ``V4``; checked when this was written), so it is left alone; the run
key holds a fingerprint of the data (:func:`palviz.data.dataset_fingerprint`) in case it does not.

Importing palviz calls :func:`pin_environment`, so every process that imports palviz before
torch (``palviz`` commands, the local pool's workers, Slurm jobs, the lessons' kernels) is
pinned. ``PALVIZ_CPU_PIN=0`` turns it off for speed: the variables are then left as they are,
and the runs say so (:func:`pin_label` enters their key and :func:`pin_state` their metrics).
A processor without AVX2, or not x86-64 (ARM), runs at its own level and says so.
"""

from __future__ import annotations

import os
import platform
import sys
import warnings
from pathlib import Path

#: ``PALVIZ_CPU_PIN=0`` leaves the CPU's own kernels (faster on some machines, other numbers).
PIN_ENV = "PALVIZ_CPU_PIN"

#: The switches of the pin and their values.
SWITCHES = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}


def pin_requested() -> bool:
    """Whether ``$PALVIZ_CPU_PIN`` asks for the pin (anything but ``"0"``; the default)."""
    return os.environ.get(PIN_ENV, "1") != "0"


def _cpu_flags() -> set[str] | None:
    """The CPU's feature flags from ``/proc/cpuinfo`` (Linux), else ``None``."""
    path = Path("/proc/cpuinfo")
    if not path.exists():
        return None
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return None


def can_pin() -> bool:
    """Whether this processor runs AVX2 code: an x86-64 one whose flags list ``avx2`` (where
    the flags cannot be read, every x86-64 processor of the last decade has it)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    flags = _cpu_flags()
    return flags is None or "avx2" in flags


def pin_environment(env: dict | None = None) -> dict:
    """Set :data:`SWITCHES` in ``env`` (default ``os.environ``) when the pin is asked for and the
    processor can run it; returns ``env``. In ``os.environ`` after torch has loaded, the switches
    come too late: a warning says that this process's runs are not pinned."""
    target = os.environ if env is None else env
    if pin_requested() and can_pin():
        late = env is None and "torch" in sys.modules
        if late and any(os.environ.get(k) != v for k, v in SWITCHES.items()):
            warnings.warn(
                "torch was imported before palviz, so its CPU kernels are not pinned to AVX2: "
                "runs trained here may differ from other machines' (import palviz first)",
                stacklevel=2,
            )
        target.update(SWITCHES)
    return target


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``), else what :mod:`platform` says."""
    path = Path("/proc/cpuinfo")
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def pin_label() -> str:
    """``"avx2"`` when this process's kernels are pinned (the switches set and ATen at AVX2),
    else ``"native-<level>"`` with ATen's own level, e.g. ``"native-avx512"``."""
    import torch

    level = torch.backends.cpu.get_cpu_capability().lower()
    pinned = all(os.environ.get(k) == v for k, v in SWITCHES.items())
    return "avx2" if pinned and level == "avx2" else f"native-{level}"


def pin_state() -> dict:
    """What a run and ``timings.json`` record of the CPU: the pin's label, ATen's level, the
    switches as set, the CPU model and the versions of torch and NumPy."""
    import numpy as np
    import torch

    return {
        "pin": pin_label(),
        "aten_level": torch.backends.cpu.get_cpu_capability(),
        "switches": {k: os.environ.get(k) for k in SWITCHES},
        "cpu_model": cpu_model(),
        "machine": platform.machine(),
        "torch": torch.__version__,
        "numpy": np.__version__,
    }


def exactness(device: str = "cpu") -> str:
    """Where this process's training numbers hold, in a few words (a notebook's profile line,
    docs/results.md): on a CPU pinned to AVX2, on every x86-64 machine with the same torch;
    unpinned, ARM or a GPU, only on machines of the same kind."""
    if device != "cpu":
        return "runs on a GPU: other numbers than on a CPU, the same only on a GPU of its kind"
    label = pin_label()
    if label == "avx2":
        return "CPU kernels pinned to AVX2: the same numbers on every x86-64 CPU (same torch)"
    return f"CPU kernels unpinned ({label}): the same numbers only on CPUs of this kind"
