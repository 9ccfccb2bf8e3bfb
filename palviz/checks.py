"""Argument checks shared by the modules: each raises before any work, with a message that
names the argument, the value received and what is allowed (``scale must be > 0, got -1.0``)."""

from __future__ import annotations

import math
import numbers
from typing import Any


def check_int(name: str, value: Any, minimum: int) -> int:
    """``value`` as an ``int`` >= ``minimum`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_real(name: str, value: Any) -> float:
    """``value`` as a finite ``float`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def check_positive(name: str, value: Any) -> float:
    """``value`` as a finite ``float`` > 0."""
    value = check_real(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


def check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value
