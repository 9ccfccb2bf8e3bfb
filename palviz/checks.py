"""Argument checks shared by the modules: each raises before any work, with a message of one
form, ``<name> must be <rule>, got <value>`` (``scale must be > 0, got -1.0``), naming the
argument, the value received and what is allowed. A long array, tensor, list or tuple is shown
shortened (its shape and its first and last entries), never whole.

A value of the wrong type raises :class:`ArgumentTypeError`, which is both a ``TypeError``
and a ``ValueError``; a value of the right type outside the allowed set raises ``ValueError``.
The helpers return the value converted to a plain Python type (``int``, ``float``, ``str``),
so callers can write ``self.scale = check_positive("scale", scale)``.

This module imports neither torch nor any other palviz module.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "ArgumentTypeError",
    "as_labels",
    "as_matrix",
    "check_bool",
    "check_choice",
    "check_choices",
    "check_class_counts",
    "check_int",
    "check_non_negative",
    "check_num_classes",
    "check_positive",
    "check_probability",
    "check_range",
    "check_real",
    "check_sample_shape",
    "invalid",
]


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type: a ``TypeError`` that is also a ``ValueError``, so code
    that catches either keeps working."""


#: Arrays, tensors, lists and tuples longer than this are shortened in a message: their type,
#: shape and first and last entries, never the whole of them.
_SHOWN_ENTRIES = 10


def _shown(value: Any) -> str:
    """``value`` as a message shows it: ``repr`` for Python values, a list for arrays; a long
    array, tensor, list or tuple as its shape and its first and last entries."""
    kind = "an array"
    if hasattr(value, "detach"):  # torch.Tensor, without importing torch
        kind, dtype, value = "a tensor", str(value.dtype), value.detach().cpu()
        value = (value.double() if value.dtype.is_floating_point else value).numpy()
    if isinstance(value, np.ndarray):
        if value.size <= _SHOWN_ENTRIES:
            return repr(value.tolist())
        dtype = dtype if kind == "a tensor" else str(value.dtype)
        return f"{kind} of shape {value.shape}, {dtype}: [{_ends(value.ravel().tolist())}]"
    if isinstance(value, list | tuple) and len(value) > _SHOWN_ENTRIES:
        return f"a {type(value).__name__} of {len(value)} entries: [{_ends(value)}]"
    if isinstance(value, np.generic):
        return repr(value.item())
    return repr(value)


def _ends(entries: Sequence[Any]) -> str:
    """The first six and last two of ``entries``, as a message shows them (floats to 4 digits)."""

    def one(v: Any) -> str:
        return f"{v:.4g}" if isinstance(v, float) else _shown(v)

    return ", ".join([one(v) for v in entries[:6]] + ["..."] + [one(v) for v in entries[-2:]])


def invalid(name: str, value: Any, rule: str) -> ValueError:
    """The ``ValueError`` ``<name> must be <rule>, got <value>``, for a caller to raise."""
    return ValueError(f"{name} must be {rule}, got {_shown(value)}")


def _wrong_type(name: str, value: Any, rule: str) -> ArgumentTypeError:
    return ArgumentTypeError(f"{name} must be {rule}, got {_shown(value)}")


def check_int(name: str, value: Any, minimum: int | None = None) -> int:
    """``value`` as an ``int`` (>= ``minimum`` if given); bools and floats refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _wrong_type(name, value, "an integer")
    if minimum is not None and value < minimum:
        raise invalid(name, value, f">= {minimum}")
    return int(value)


def check_real(name: str, value: Any) -> float:
    """``value`` as a finite ``float`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _wrong_type(name, value, "a real number")
    if not math.isfinite(value):
        raise invalid(name, value, "finite")
    return float(value)


def check_positive(name: str, value: Any) -> float:
    """``value`` as a finite ``float`` > 0."""
    number = check_real(name, value)
    if number <= 0:
        raise invalid(name, value, "> 0")
    return number


def check_non_negative(name: str, value: Any) -> float:
    """``value`` as a finite ``float`` >= 0."""
    number = check_real(name, value)
    if number < 0:
        raise invalid(name, value, ">= 0")
    return number


def check_range(
    name: str,
    value: Any,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a finite ``float`` in the interval from ``low`` to ``high``, each end
    closed unless ``low_open`` / ``high_open`` (``q must be in (0, 1], got 1.5``)."""
    number = check_real(name, value)
    above = number > low if low_open else number >= low
    below = number < high if high_open else number <= high
    if not (above and below):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise invalid(name, value, f"in {interval}")
    return number


def check_probability(name: str, value: Any) -> float:
    """``value`` as a ``float`` in ``[0, 1]`` (a rate, a probability)."""
    return check_range(name, value, 0.0, 1.0)


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise _wrong_type(name, value, "True or False")
    return value


def check_choice(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    """``value`` if it is one of ``allowed``."""
    if not isinstance(value, str | int | float | type(None)) or value not in allowed:
        raise invalid(name, value, f"one of {list(allowed)}")
    return value


def check_choices(
    name: str, value: Any, allowed: Sequence[Any], *, min_len: int = 1, unique: bool = True
) -> tuple:
    """``value`` as a tuple of items of ``allowed`` (a list or tuple, not a string: ``"CE"``
    is refused rather than read letter by letter), at least ``min_len`` long, without
    repeats when ``unique``."""
    rule = f"a tuple of {'distinct ' if unique else ''}values from {tuple(allowed)}"
    if min_len:
        rule += f", at least {min_len}"
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise _wrong_type(name, value, rule + " (a tuple such as ('CE',), not a string)")
    for item in value:
        if item not in allowed:
            raise invalid(name, value, f"{rule}; {item!r} is not one of them")
    if len(value) < min_len:
        raise invalid(name, value, rule)
    if unique and len(set(value)) != len(value):
        raise invalid(name, value, rule + "; repeats found")
    return tuple(value)


def check_num_classes(value: Any, name: str = "num_classes") -> int:
    """A number of classes: an ``int`` >= 2."""
    return check_int(name, value, 2)


def check_class_counts(name: str, value: Any) -> np.ndarray:
    """Training-set class counts (a sequence, array or tensor) as a float64 array of at least
    2 entries, all finite and > 0."""
    if hasattr(value, "detach"):  # torch.Tensor, without importing torch
        value = value.detach().cpu().numpy()
    try:
        counts = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise _wrong_type(name, value, "a sequence of class counts (numbers > 0)") from None
    if counts.ndim != 1 or counts.size < 2:
        raise invalid(name, value, "a 1-D sequence of the counts of at least 2 classes")
    if not np.all(np.isfinite(counts)) or np.any(counts <= 0):
        raise invalid(name, value, "counts > 0 for every class")
    return counts


def _numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def as_labels(name: str, x: Any, num_classes: int | None = None) -> np.ndarray:
    """``x`` (an array or tensor) as int64 class indices ``[N]``, in ``[0, num_classes)`` when
    given (else >= 0)."""
    a = _numpy(x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D (N,), got shape {a.shape}")
    if a.size == 0:
        return a.astype(np.int64)
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name} must hold integer class indices, got dtype {a.dtype}")
    a = a.astype(np.int64)
    if num_classes is not None and (a.min() < 0 or a.max() >= num_classes):
        raise ValueError(
            f"{name} must be in [0, {num_classes - 1}] for num_classes={num_classes}, "
            f"got values in [{a.min()}, {a.max()}]"
        )
    if num_classes is None and a.min() < 0:
        raise ValueError(f"{name} must be >= 0, got minimum {a.min()}")
    return a


def as_matrix(name: str, x: Any, rows: int | None = None, cols: int | None = None) -> np.ndarray:
    """``x`` (an array or tensor) as a finite float64 matrix, of shape ``(rows, cols)`` where
    given."""
    a = _numpy(x)
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {a.shape}")
    if (rows is not None and a.shape[0] != rows) or (cols is not None and a.shape[1] != cols):
        want = f"({rows if rows is not None else 'N'}, {cols if cols is not None else 'd'})"
        raise ValueError(f"{name} must have shape {want}, got {a.shape}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got NaN or inf entries")
    return a


def check_sample_shape(name: str, value: Any) -> tuple[int, ...]:
    """``value`` as the shape of one sample, ``(D,)`` or ``(C, H, W)``: a tuple or list of
    integers >= 1 (bools refused)."""
    dims = tuple(value) if isinstance(value, tuple | list) else ()
    ints = all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims)
    if len(dims) not in (1, 3) or not ints:
        raise invalid(name, value, "(D,) for vectors or (C, H, W) for images, sizes >= 1")
    return dims
