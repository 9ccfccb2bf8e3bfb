"""What :func:`palviz.diagnose` and :func:`palviz.diagnosis.post_hoc` are given, checked where
it enters, so that a diagnosis never measures the wrong thing in silence.

* At the call, before any forward pass: the classifier layer (``layer=``, a module name of
  ``model.named_modules()`` or a module of the model; :mod:`palviz.diagnosis_layer`), the
  device (one this machine has), the form of each split and the type of its labels (integer
  class indices: float and bool labels are refused, never rounded), the class counts (labels
  passed in their place, as in ``diagnose(model, x, y)``, are named as such).
* On the first batch: the model's output is no probabilities (rows in [0, 1] summing to 1),
  it is the output of the classifier layer whose input and rows are read, up to a constant per
  row (a log-softmax after it is fine; else the features and rows read would be another
  layer's), and there is one class count per logit.
* On every batch: the labels; the logits and the features are finite (the message names the
  split and its first bad sample).
* After the pass: the class counts do not order two classes against the training labels
  (:func:`check_counts_order`).

Messages take the form of :func:`palviz.checks.invalid`; the measures trust what these checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from palviz.checks import check_class_counts, invalid

if TYPE_CHECKING:
    import torch
    from torch import nn

__all__ = [
    "Tap",
    "batches",
    "check_counts",
    "check_counts_order",
    "check_device",
    "check_finite",
    "check_first_batch",
    "check_split",
]

#: A first batch whose rows all lie in [0, 1] and sum to 1 within this is read as probabilities.
PROBABILITY_TOL = 1e-4
#: The logits are the classifier layer's output when no entry differs by more than this times
#: the largest logit of the first batch (at least 1).
OUTPUT_RTOL = 1e-4
#: :func:`check_counts_order` refuses a class given more than this factor times another's count
#: while the training labels hold fewer than 1 / this factor times as many of its samples.
ORDER_FACTOR = 2.0
LABELS_HINT = "for inputs x and labels y, call diagnose(model, (x, y))"
_FORMS = "a torch DataLoader yielding (x, y) or (x, y, index) batches or an (x, y) tuple of tensors"


class Described(str):
    """A description of a value (its type and shape, never its entries), shown as it is."""

    def __repr__(self) -> str:
        return str(self)


def described(value: Any) -> Described:
    """``value`` as a message shows it: its type and its shape or number of items."""
    kind = type(value).__name__
    kind = f"{'an' if kind[0].lower() in 'aeiou' else 'a'} {kind}"
    if hasattr(value, "shape"):
        return Described(f"{kind} of shape {tuple(value.shape)}")
    if isinstance(value, tuple | list):
        kinds = ", ".join(type(v).__name__ for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return Described(f"{kind} of {len(value)} items ({kinds})")
    return Described(kind)


def _bad(name: str, value: Any, rule: str, hint: str | None = None) -> ValueError:
    """:func:`~palviz.checks.invalid`'s error, with a hint after it."""
    error = invalid(name, value, rule)
    return ValueError(f"{error}; {hint}") if hint else error


def _few(items: np.ndarray) -> str:
    """A list of class indices as a message shows it, the first 8 of a longer one."""
    return "[" + ", ".join(map(str, items[:8].tolist())) + (", ...]" if len(items) > 8 else "]")


# ----------------------------------------------------------------------------------------------
# the device
# ----------------------------------------------------------------------------------------------
def check_device(device: Any) -> torch.device | None:
    """``device`` (None: where the model is) as a ``torch.device`` this machine has."""
    import torch

    from palviz.evaluation import resolve_device

    if device is None:
        return None
    here = ["cpu", *(f"cuda:{i}" for i in range(torch.cuda.device_count()))]
    here += ["mps"] if torch.backends.mps.is_available() else []
    rule = f"None (where the model's parameters are), 'auto' or a device this machine has: {here}"
    try:
        dev = resolve_device(device)
    except (RuntimeError, TypeError, ValueError):
        raise invalid("device", device, rule) from None
    cuda = dev.type == "cuda" and f"cuda:{dev.index or 0}" not in here
    if cuda or (dev.type == "mps" and "mps" not in here):
        raise invalid("device", device, rule)
    return dev


# ----------------------------------------------------------------------------------------------
# the splits, the labels, the counts
# ----------------------------------------------------------------------------------------------
def _integer(t: torch.Tensor) -> bool:
    """Whether tensor ``t`` holds integers (class indices, sample indices): not float, complex
    or bool."""
    import torch

    return not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)


def _labels(name: str, y: Any) -> torch.Tensor:
    import torch

    where = f"the labels of {name}"
    try:
        t = torch.as_tensor(y)
    except (TypeError, ValueError, RuntimeError):
        raise invalid(where, described(y), "a tensor or array of integer class indices") from None
    if not _integer(t):
        raise _bad(
            where,
            Described(f"dtype {getattr(y, 'dtype', t.dtype)}"),
            "integer class indices (an integer tensor or array)",
            "float and bool labels are not rounded here: convert them (y.long()) if they are whole",
        )
    if t.ndim != 1:
        raise invalid(
            where, Described(f"shape {tuple(t.shape)}"), "1-D: one class index per sample"
        )
    return t


def _length(value: Any) -> int | None:
    shape = getattr(value, "shape", None)
    if shape is not None:
        return int(shape[0]) if len(shape) else None
    return len(value) if isinstance(value, list | tuple) else None


def check_split(name: str, data: Any, class_counts: Any = None) -> int | None:
    """Checks the form of a split (the labels of an ``(x, y)`` tuple too; a loader's batches
    are checked as they come); returns its number of samples when known."""
    import torch

    if isinstance(data, torch.utils.data.DataLoader):
        try:
            return len(data.dataset)
        except TypeError:
            return None
    if isinstance(data, tuple | list) and len(data) == 2 and isinstance(data[0], torch.Tensor):
        n, y = data[0].shape[0], _labels(name, data[1])
        if n != y.shape[0]:
            raise invalid(
                name,
                Described(f"x of {n} and y of {y.shape[0]} samples"),
                "an (x, y) pair of equal lengths",
            )
        return n
    n = _length(data) if hasattr(data, "shape") else None
    if n is not None and class_counts is not None and _length(class_counts) == n:
        raise _bad(
            "class_counts",
            class_counts,
            "the training counts of the K classes, one per class (K: the model's outputs)",
            f"it has one entry per sample of data ({n}), as labels do: {LABELS_HINT}",
        )
    raise _bad(name, described(data), _FORMS, LABELS_HINT if hasattr(data, "shape") else None)


def check_counts(class_counts: Any, n_samples: int | None) -> tuple[np.ndarray | None, str]:
    """``class_counts`` as float64 (``None`` stays ``None``) and the hint that a message about
    their number gives: labels in their place when they have one entry per sample."""
    hint = f"if they are labels, {LABELS_HINT}"
    if class_counts is None:
        return None, hint
    if n_samples is not None and _length(class_counts) == n_samples:
        hint = f"it has one entry per sample of data ({n_samples}), as labels do: {LABELS_HINT}"
    try:
        return check_class_counts("class_counts", class_counts), hint
    except ValueError as error:
        raise type(error)(f"{error}; {hint}") from None


def check_counts_order(counts: np.ndarray, observed: np.ndarray) -> None:
    """Refuses ``class_counts`` that order two classes against the training labels: class i
    given more than :data:`ORDER_FACTOR` (2) times the count of class j while the labels hold
    fewer than half as many samples of i as of j. Counts of a split sub-sampled uniformly keep
    this order; reversed or permuted counts break it."""
    f = ORDER_FACTOR
    by_count = np.argsort(counts, kind="stable")
    most_seen = np.maximum.accumulate(observed[by_count])  # among the smallest counts
    fewer = np.searchsorted(counts[by_count], counts / f, side="left")  # counts < counts[i] / f
    rival = np.where(fewer > 0, most_seen[np.maximum(fewer - 1, 0)], 0)
    clash = np.flatnonzero((fewer > 0) & (rival > f * observed))
    if clash.size == 0:
        return
    i = clash[np.argmax(counts[clash])]
    below = by_count[: fewer[i]]
    j = below[np.argmax(observed[below])]
    raise _bad(
        "class_counts",
        counts,
        "the training counts per class, in the order of data's labels (data is the training split)",
        f"class {i} is given {counts[i]:g} and class {j} {counts[j]:g}, but data holds "
        f"{observed[i]} samples of class {i} and {observed[j]} of class {j}; from most to "
        f"fewest, class_counts order the classes {_few(np.argsort(-counts, kind='stable'))}, "
        f"data's labels {_few(np.argsort(-observed, kind='stable'))}",
    )


def _index_like(t: Any) -> bool:
    import torch

    return isinstance(t, torch.Tensor) and t.ndim == 1 and _integer(t)


def batches(data: Any, batch_size: int, name: str) -> Iterator[tuple[Any, torch.Tensor]]:
    """The ``(x, y)`` batches of a split that :func:`check_split` passed; a loader's batches
    checked as they come (``(x, y, ...)``, not ``(index, x, y)``; integer labels)."""
    import torch

    if not isinstance(data, torch.utils.data.DataLoader):
        x, y = data[0], torch.as_tensor(data[1])
        for start in range(0, x.shape[0], batch_size):
            yield x[start : start + batch_size], y[start : start + batch_size]
        return
    rule = "a DataLoader yielding (x, y) or (x, y, index) batches: x first, the labels second"
    for i, batch in enumerate(data):
        if not isinstance(batch, tuple | list) or len(batch) < 2:
            raise invalid(name, Described(f"a batch that is {described(batch)}"), rule)
        if i == 0 and len(batch) == 3 and list(map(_index_like, batch)) == [True, False, True]:
            seen = (
                f"batches that look like (index, x, y): integers first, then {described(batch[1])}"
            )
            raise _bad(name, Described(seen), rule, "reorder its items to (x, y, index)")
        x, y = batch[0], _labels(name, batch[1])
        if hasattr(x, "shape") and x.shape[0] != y.shape[0]:
            raise invalid(
                name, Described(f"a batch of {x.shape[0]} inputs and {y.shape[0]} labels"), rule
            )
        yield x, y


# ----------------------------------------------------------------------------------------------
# the pass: hooks, the first batch, finite values
# ----------------------------------------------------------------------------------------------
class Tap:
    """Forward hooks keeping the ``(input, output)`` of each call of the given modules during
    one forward pass."""

    def __init__(self, *modules: nn.Module | None) -> None:
        unique = {id(m): m for m in modules if m is not None}
        self.calls: dict[int, list[tuple[Any, Any]]] = {key: [] for key in unique}
        self.handles = [m.register_forward_hook(self._keep) for m in unique.values()]

    def _keep(self, module: nn.Module, args: tuple, out: Any) -> None:
        self.calls[id(module)].append((args[0] if args else None, out))

    def of(self, module: nn.Module) -> list[tuple[Any, Any]]:
        return self.calls[id(module)]

    def clear(self) -> None:
        for calls in self.calls.values():
            calls.clear()

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _differs(a: Any, b: Any, what: str, *, shift: bool = False) -> str | None:
    """Why tensor ``b`` is not ``a`` (``None`` when it is, within :data:`OUTPUT_RTOL`); with
    ``shift``, rows that differ by a constant count as equal (logits and log-probabilities give
    the same softmax, margins and predictions)."""
    import torch

    if not isinstance(b, torch.Tensor) or b.shape != a.shape:
        shape = tuple(getattr(b, "shape", ()))
        return f"{what} differ in shape on the first batch, {tuple(a.shape)} and {shape}"
    a, b = a.detach().double(), b.detach().double()
    if shift:
        a, b = a - a.mean(dim=1, keepdim=True), b - b.mean(dim=1, keepdim=True)
    gap = (a - b).abs().max().item()
    if gap > OUTPUT_RTOL * max(1.0, a.abs().max().item()):
        return f"{what} differ by up to {gap:.3g} on the first batch"
    return None


def check_first_batch(
    out: torch.Tensor,
    tap: Tap,
    layer: Any,
    name: str,
    *,
    features_given: bool,
    counts: np.ndarray | None,
    hint: str,
) -> bool:
    """Checks the model's output ``out`` on the first batch of ``name`` and returns whether the
    class vectors of ``layer`` (a :class:`palviz.diagnosis_layer.Layer`) are read (not when
    ``features=`` is given and the layer found does not output the logits)."""
    z = out.detach().double()
    if ((z >= 0) & (z <= 1)).all() and ((z.sum(1) - 1).abs() <= PROBABILITY_TOL).all():
        raise _bad(
            "model",
            Described(
                f"outputs that look like probabilities: on the first batch of {name} every row "
                "lies in [0, 1] and sums to 1"
            ),
            "a model whose outputs are logits (diagnose takes their softmax itself)",
            "remove the final softmax (for an nn.Sequential ending in nn.Softmax, pass "
            "model[:-1], the model up to the layer before it)",
        )
    k = z.shape[1]
    if counts is not None and counts.size != k:
        rule = f"one count per class ({k}): the training counts of the K = {k} classes"
        raise _bad("class_counts", counts, f"{rule} the model outputs", hint)
    if layer.module is None:
        return False
    target = layer.rows if layer.rows is not None else layer.module
    calls = tap.of(target)
    if len(calls) != 1:
        why = f"it ran {len(calls)} times in one forward pass"
    else:
        why = _differs(out, calls[0][1], "the model's logits and its output", shift=True)
    inner = layer.rows is not None and layer.rows is not layer.module
    if why is None and inner and not features_given and len(tap.of(layer.module)) == 1:
        pair = f"the inputs of {layer.path!r} (the features) and {layer.rows_path!r} (W)"
        why = _differs(tap.of(layer.module)[0][0], calls[0][0], pair)
    if why is None:
        return True
    if features_given and not layer.chosen:
        return False
    how = "given as layer=" if layer.chosen else "found by find_classifier"
    raise _bad(
        "layer",
        Described(f"{layer.describe()}, {how}: {why}"),
        "the module whose output is the model's logits and whose input is the features",
        f"pass layer= the name of that module ({layer.names}) or features=lambda x: ... "
        "giving the features",
    )


def check_finite(what: str, split: str, name: str, values: torch.Tensor, start: int) -> None:
    """Refuses NaN or inf in ``values`` (a batch whose first sample is sample ``start``),
    naming the split and its first bad sample."""
    import torch

    bad = ~torch.isfinite(values.detach()).reshape(values.shape[0], -1).all(dim=1)
    if bad.any():
        first = start + int(bad.nonzero()[0, 0])
        raise ValueError(
            f"{what} of split {split!r} are not finite from sample {first} (NaN or inf; the "
            f"samples of {name} counted in the order its batches come)"
        )
