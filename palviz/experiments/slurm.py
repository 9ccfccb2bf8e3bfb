"""What a sweep's Slurm jobs ask for, checked before anything is submitted.

- :func:`slurm_resources` the GPUs and CPUs each job of ``palviz sweep --executor submitit``
  asks for, with defaults from the partition, checked against the nodes ``sinfo`` lists
  (:func:`sinfo_partitions`, :func:`gres_gpus`): a job no node can run raises
  :class:`SlurmRefused` naming the option to change;
- :func:`sbatch_refusal` what ``sbatch`` said when it refused a job array anyway, in one line
  with the option to change (:data:`SBATCH_ADVICE`).

:mod:`palviz.experiments.cluster` submits the jobs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass


class SlurmRefused(RuntimeError):
    """Slurm cannot run a sweep's jobs as asked: what ``sinfo`` says the partition has, or
    ``sbatch``'s refusal, in one line naming the option to change. Nothing was submitted."""


#: What to change when a job asks for GPUs a partition does not have.
CPU_ONLY = "on a CPU partition use --gpus-per-job 0"
#: The advice for each kind of sbatch refusal: (a fragment of its error, what to change).
SBATCH_ADVICE = (
    ("node configuration is not available", f"{CPU_ONLY}; lower --cpus-per-job"),
    ("generic resource", f"the partition has no such GPUs (GRES): {CPU_ONLY}"),
    ("partition", "check --slurm-partition (`sinfo -s` lists the partitions)"),
    ("time limit", "lower --slurm-time (minutes; `sinfo -o '%P %l'` shows the limits)"),
    ("memory", "lower --slurm-mem"),
    ("account", "check --slurm-account"),
    ("qos", "check --slurm-qos"),
)
#: When no fragment of :data:`SBATCH_ADVICE` matches.
SBATCH_FALLBACK = "check --gpus-per-job, --cpus-per-job, --slurm-time and the --slurm-* options"


def sbatch_refusal(stderr: str) -> str:
    """One line of what sbatch said (its last ``error:`` line) and what to change."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()] or lines or ["(no message)"]
    said = errors[-1]
    said = said.split("error:", 1)[1].strip() if "error:" in said else said
    lower = stderr.lower()
    advice = next((tip for part, tip in SBATCH_ADVICE if part in lower), SBATCH_FALLBACK)
    return f"sbatch refused the job array: {said} - {advice}; nothing was submitted"


@dataclass(frozen=True)
class SlurmResources:
    """What each Slurm job of a sweep asks for, and how the defaults were chosen."""

    partition: str | None  # None: Slurm's default partition
    gpus: int
    cpus: int
    source: str

    def __str__(self) -> str:
        where = f"partition {self.partition}" if self.partition else "the default partition"
        gpus = f"{self.gpus} GPU(s)" if self.gpus else "no GPU"
        return f"Slurm jobs on {where}: {self.cpus} CPU(s) and {gpus} each ({self.source})"


def gres_gpus(gres: str) -> int:
    """The GPUs in a node's ``sinfo`` GRES field: ``"gpu:2"`` and ``"gpu:a100:4(S:0-1)"``
    hold 2 and 4, ``"(null)"`` none; several ``gpu`` entries add up."""
    total = 0
    for item in re.sub(r"\([^)]*\)", "", gres).split(","):
        parts = item.strip().split(":")
        if parts[0] == "gpu":
            total += int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
    return total


@dataclass(frozen=True)
class Partitions:
    """What ``sinfo`` lists: each partition's nodes as ``(cpus, gpus)``, and the default."""

    nodes: dict[str, list[tuple[int, int]]]
    default: str | None


def sinfo_partitions() -> Partitions | None:
    """The partitions ``sinfo`` lists, or ``None`` when it is missing or fails."""
    if shutil.which("sinfo") is None:
        return None
    try:
        done = subprocess.run(
            ["sinfo", "--noheader", "--Node", "--format=%P|%c|%G"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    nodes: dict[str, list[tuple[int, int]]] = {}
    default = None
    for line in done.stdout.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 3 or not fields[1].rstrip("+").isdigit():
            continue
        name, cpus, gres = fields
        if name.endswith("*"):
            name = default = name[:-1]
        nodes.setdefault(name, []).append((int(cpus.rstrip("+")), gres_gpus(gres)))
    return Partitions(nodes, default) if nodes else None


def slurm_resources(
    partition: str | None = None, gpus: int | None = None, cpus: int | None = None
) -> SlurmResources:
    """The GPUs and CPUs each Slurm job asks for, checked against the partition's nodes as
    ``sinfo`` lists them (skipped where ``sinfo`` is missing or fails; sbatch then has the
    last word, see :func:`sbatch_refusal`).

    Defaults: ``gpus`` 1 if a node of the partition has a GPU, else 0 (also when ``sinfo``
    cannot tell); ``cpus`` 1 without a GPU (palviz trains a CPU run on one thread), else 4,
    at most what the largest such node has. Raises :class:`SlurmRefused` when the partition
    is unknown or no node of it has ``gpus`` GPUs and ``cpus`` CPUs."""
    for name, value, least in (("--gpus-per-job", gpus, 0), ("--cpus-per-job", cpus, 1)):
        if value is not None and (type(value) is not int or value < least):
            raise SlurmRefused(f"{name} must be an integer >= {least}, got {value!r}")
    known = sinfo_partitions()
    if known is None:
        gpus = 0 if gpus is None else gpus
        cpus = _default_cpus(gpus) if cpus is None else cpus
        return SlurmResources(partition, gpus, cpus, "sinfo gave no node list: nothing checked")
    name = partition or known.default
    if partition is not None and partition not in known.nodes:
        raise SlurmRefused(
            f"--slurm-partition {partition}: sinfo lists no such partition; have "
            f"{', '.join(sorted(known.nodes))}; nothing was submitted"
        )
    nodes = known.nodes.get(name, []) if name else [n for ns in known.nodes.values() for n in ns]
    source = "as asked, checked with sinfo"
    if gpus is None:
        gpus = 1 if any(g for _, g in nodes) else 0
        source = f"{'a GPU' if gpus else 'no GPU'} in the partition per sinfo"
    if cpus is None:
        usable = [c for c, g in nodes if g >= gpus]
        cpus = min(_default_cpus(gpus), max(usable)) if usable else _default_cpus(gpus)
    if not any(c >= cpus and g >= gpus for c, g in nodes):
        raise SlurmRefused(_too_much(name, nodes, gpus, cpus))
    return SlurmResources(partition, gpus, cpus, source)


def _too_much(partition: str | None, nodes: list[tuple[int, int]], gpus: int, cpus: int) -> str:
    """Why no node of ``nodes`` (``(cpus, gpus)`` each) can run a job of ``gpus`` GPUs and
    ``cpus`` CPUs, and the flag to change, in one line."""
    top_cpus = max((c for c, _ in nodes), default=0)
    top_gpus = max((g for _, g in nodes), default=0)
    advice = []
    if gpus > top_gpus:
        advice.append(CPU_ONLY if top_gpus == 0 else f"use --gpus-per-job {top_gpus} or fewer")
    room = max((c for c, g in nodes if g >= min(gpus, top_gpus)), default=0)
    if cpus > room:
        advice.append(f"lower --cpus-per-job to {room} or fewer")
    where = f"partition {partition}" if partition else "the cluster"
    return (
        f"--gpus-per-job {gpus} --cpus-per-job {cpus}: no node of {where} has that many "
        f"(sinfo: at most {top_cpus} CPUs and {top_gpus} GPUs a node) - {'; '.join(advice)}; "
        "nothing was submitted"
    )


def _default_cpus(gpus: int) -> int:
    return 4 if gpus else 1
