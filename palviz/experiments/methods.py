"""The methods of the experiment tables, derived from the loss registry.

Each loss declares its table methods where it is defined
(:func:`palviz.losses.registry.register_loss`); this module adds the prototype-anchored
variants and tells, for a method's label, which loss, arguments and head it trains:

- long-tailed (notebooks 00, 02, 03, 06, 08): every method ``M`` and, where it allows PAL,
  ``M+PAL``: the loss's head family with fixed simplex prototypes
  (``AnchoredHead(normalize=False)`` for plain logits, ``normalize=True, scale=1`` for cosine
  logits, whose loss scales them by its own s);
- noisy labels (notebook 07): every method ``M``, ``M+FNPAL`` (``AnchoredHead(normalize=True,
  scale=s)``) and ``M+FNPN`` (``CosineHead(scale=s)``, learnable normalised prototypes) where
  the loss declares them.

:func:`method_table` renders either list as the markdown table notebooks 06 and 07 show and
``docs/reference.md`` holds (``palviz methods --write-docs`` writes it there; a test checks it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from palviz.files import atomic_write
from palviz.heads import PROTOTYPE_ORIENTATIONS
from palviz.losses import LOSSES
from palviz.losses.registry import TableMethod

__all__ = [
    "ORIENTATIONS",
    "TASKS",
    "Method",
    "dataset_family",
    "long_tailed_methods",
    "method",
    "method_table",
    "methods_of",
    "noisy_methods",
    "write_method_tables",
]

TASKS = ("long_tailed", "noisy")

#: Orientations of PAL's simplex in feature space (``palviz.heads.simplex_prototypes``): the
#: papers' random rotation is the default and is not named in a spec or a label.
ORIENTATIONS = PROTOTYPE_ORIENTATIONS

#: The variant suffixes of each task, in the order tables list them.
_VARIANTS = {"long_tailed": ("", "+PAL"), "noisy": ("", "+FNPAL", "+FNPN")}


@dataclass(frozen=True)
class Method:
    """A table method: its ``label``, the registered ``base`` method and the ``variant``
    (``""``, ``"+PAL"``, ``"+FNPAL"`` or ``"+FNPN"``)."""

    label: str
    base: TableMethod
    variant: str

    @property
    def task(self) -> str:
        return self.base.task

    @property
    def loss(self) -> str:
        return self.base.loss

    @property
    def drw(self) -> bool:
        return self.base.drw

    @property
    def head_family(self) -> str:
        return LOSSES[self.base.loss].head

    def head(self, scale: float | None = None, orientation: str = "random") -> tuple[str, dict]:
        """``(head, head_kw)`` of the model; ``scale`` is s of ``+FNPAL`` / ``+FNPN``,
        ``orientation`` the simplex's placement (``+PAL`` only)."""
        if orientation not in ORIENTATIONS:
            raise ValueError(f"orientation must be one of {ORIENTATIONS}, got {orientation!r}")
        if orientation != "random" and self.variant != "+PAL":
            raise ValueError(
                f"orientation {orientation!r} needs a +PAL method (anchored prototypes), "
                f"got {self.label!r}"
            )
        if self.variant == "+PAL":
            kw: dict = {"normalize": self.head_family == "cosine", "scale": 1.0}
            if orientation != "random":
                kw["orientation"] = orientation
            return "anchored", kw
        if self.variant in ("+FNPAL", "+FNPN"):
            if scale is None:
                raise ValueError(f"method {self.label!r} needs its scale s")
            if self.variant == "+FNPAL":
                return "anchored", {"normalize": True, "scale": float(scale)}
            return "cosine", {"scale": float(scale)}
        if self.task == "noisy":
            return "linear", {}
        return self.head_family, {}

    def describe_head(self) -> str:
        """The head in words, for the method tables."""
        if self.variant == "+PAL":
            normalize = self.head_family == "cosine"
            return f"`AnchoredHead(normalize={normalize}{', scale=1' if normalize else ''})`"
        if self.variant == "+FNPAL":
            return "`AnchoredHead(normalize=True, scale=s)`"
        if self.variant == "+FNPN":
            return "`CosineHead(scale=s)`"
        if self.task == "long_tailed" and self.head_family == "cosine":
            return "`CosineHead(scale=1)`"
        return "linear"


def dataset_family(dataset: str) -> str:
    """The family whose loss arguments a dataset uses: MNIST's row serves MNIST-1D and digits,
    which have the same ten digit classes."""
    return "mnist" if dataset in ("mnist", "mnist1d", "digits") else dataset


def _all() -> dict[str, dict[str, Method]]:
    out: dict[str, dict[str, Method]] = {task: {} for task in TASKS}
    for task in TASKS:
        bases = [m for e in LOSSES.values() for m in e.methods if m.task == task]
        for variant in _VARIANTS[task]:
            for base in bases:
                if variant in ("+PAL", "+FNPAL") and not base.pal:
                    continue
                if variant == "+FNPN" and not base.fnpn:
                    continue
                out[task][base.label + variant] = Method(base.label + variant, base, variant)
    return out


def methods_of(task: str) -> dict[str, Method]:
    """Every method of ``task`` (``"long_tailed"`` or ``"noisy"``) by label, in table order:
    the registered methods, then their variants."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    return _all()[task]


def long_tailed_methods() -> tuple[str, ...]:
    """The long-tailed base methods (without ``+PAL``), in registration order."""
    return tuple(label for label, m in methods_of("long_tailed").items() if not m.variant)


def noisy_methods() -> tuple[str, ...]:
    """Every noisy-label method, variants included."""
    return tuple(methods_of("noisy"))


def method(task: str, label: Any) -> Method:
    """The method ``label`` of ``task``; the error lists the labels there are."""
    table = methods_of(task)
    if label not in table:
        raise ValueError(f"method must be one of {tuple(table)}, got {label!r}")
    return table[label]


def _kwargs_text(m: Method) -> str:
    base = m.base
    parts = [f"{k}={v!r}" for k, v in base.loss_kw.items()]
    if base.kw_by_family:
        fam = "; ".join(
            f"{f}: " + ", ".join(f"{k}={v!r}" for k, v in kw.items())
            for f, kw in base.kw_by_family.items()
        )
        parts.append(fam)
    return ", ".join(parts) or "-"


def method_table(task: str, labels: Any = None) -> str:
    """The markdown table of ``task``'s methods (or of ``labels`` only): label, loss (class and
    registry name), its arguments, the head, DRW (long-tailed) and the source."""
    table = methods_of(task)
    chosen = list(table) if labels is None else [method(task, label).label for label in labels]
    if task == "long_tailed":
        lines = ["| method | loss | arguments | head | DRW | source |", "|---|---|---|---|---|---|"]
    else:
        lines = ["| method | loss | arguments | head | s | source |", "|---|---|---|---|---|---|"]
    for label in chosen:
        m = table[label]
        entry = LOSSES[m.loss]
        cells = [label, f"`{entry.class_name}` (`{m.loss}`)", _kwargs_text(m), m.describe_head()]
        if task == "long_tailed":
            cells.append("yes" if m.drw else "no")
        elif m.variant:
            s = m.base.fnpal_scale
            cells.append("0.25 / (0.05 + eta)" if s == "noise_aware" else f"{s:g}")
        else:
            cells.append("-")
        cells.append(entry.source)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _marker(task: str) -> tuple[str, str]:
    return f"<!-- method table: {task} (palviz methods --write-docs) -->", "<!-- end -->"


def write_method_tables(path: str | Path, *, check: bool = False) -> bool:
    """Write :func:`method_table` of each task into ``path`` between its markers
    (``<!-- method table: long_tailed ... -->`` ... ``<!-- end -->``); with ``check``, write
    nothing and return whether the file is up to date. Returns ``True`` if the file holds the
    current tables (after writing, always)."""
    path = Path(path)
    text = path.read_text()
    new = text
    for task in TASKS:
        start, end = _marker(task)
        pattern = re.compile(re.escape(start) + r"\n(?:[^\n]*\n)*?" + re.escape(end))
        if not pattern.search(new):
            raise ValueError(f"{path} has no block {start!r} ... {end!r}")
        new = pattern.sub(lambda _m, t=task, s=start, e=end: f"{s}\n{method_table(t)}\n{e}", new)
    if check:
        return new == text
    if new != text:
        with atomic_write(path, "w") as f:
            f.write(new)
    return True
