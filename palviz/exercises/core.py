"""Exercises that check themselves: a question, a check that answers in the student's terms,
a hint and a solution on request.

A lesson's exercises live in ``palviz.exercises.exNN`` (``ex01`` ... ``ex09``) as
:class:`Exercise` objects ``q1``, ``q2``, ...; a notebook cell holds the blank::

    answer = ...  # your answer
    ex01.q1.check(answer)

:meth:`Exercise.check` never raises on a wrong answer: it returns a :class:`Feedback` that the
notebook shows (right, or what is wrong: a shape, a sign, a factor, a formula), and on the
blank ``...`` it says the exercise is not answered yet and gives the hint. The checks compare
with palviz's own functions, computed independently of the student's code. The helpers
:func:`compare_number` and :func:`compare_array` phrase the usual mistakes.
"""

from __future__ import annotations

import html
import math
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Exercise",
    "Feedback",
    "compare_array",
    "compare_number",
    "exercises_of",
    "read_choice",
]


@dataclass(frozen=True)
class Feedback:
    """The outcome of a check: ``ok`` and the ``message`` shown to the student. ``answered``
    is False for the blank ``...``. Shown as coloured markdown in a notebook, as text
    elsewhere; ``bool(feedback)`` is ``ok``."""

    ok: bool
    message: str
    answered: bool = True

    def __bool__(self) -> bool:
        return self.ok

    def _mark(self) -> str:
        return "Right." if self.ok else ("Not answered yet." if not self.answered else "Not yet.")

    def __str__(self) -> str:
        return f"{self._mark()} {self.message}".strip()

    def _repr_markdown_(self) -> str:
        colour = "#1a7f37" if self.ok else ("#6e7781" if not self.answered else "#b35900")
        mark = f'<span style="color:{colour}"><b>{self._mark()}</b></span>'
        return f"{mark} {html.escape(self.message)}".strip()


@dataclass(frozen=True)
class Exercise:
    """One exercise: ``key`` (``"01.q1"``), the ``question`` (markdown), ``judge`` (answer ->
    ``None`` when right, else what is wrong, in the student's terms), the ``hint_text`` and
    the ``solution_text`` (code that answers it)."""

    key: str
    question: str
    judge: Callable[[Any], str | None]
    hint_text: str
    solution_text: str

    def check(self, answer: Any) -> Feedback:
        """Right, or what is wrong; the blank ``...`` (or ``None``) is "not answered yet"
        with the hint. An error inside the student's own function is reported, not raised."""
        if answer is Ellipsis or answer is None:
            return Feedback(False, f"Replace `...` with your answer. Hint: {self.hint_text}", False)
        try:
            problem = self.judge(answer)
        except StudentCallFailed as failed:  # raised by call_student: it names the call
            problem = str(failed)
        except Exception as error:  # the student's function failed: say how, don't raise
            problem = f"calling your answer raised {type(error).__name__}: {error}"
        if problem is None:
            return Feedback(True, "That is what palviz computes.")
        return Feedback(False, problem + " (`.hint()` helps, `.solution()` shows one answer.)")

    def hint(self) -> str:
        """The hint, printed and returned."""
        print(self.hint_text)
        return self.hint_text

    def solution(self) -> str:
        """One solution (code), printed and returned."""
        print(self.solution_text)
        return self.solution_text


class StudentCallFailed(Exception):
    """A student's function raised on one call of a "write this function" exercise; the
    message names the call and the error (:meth:`Exercise.check` reports it)."""


def not_a_function(answer: Any, usage: str) -> str | None:
    """``None`` if ``answer`` can be called; else the message of a "write this function"
    exercise given something else, with ``usage`` (how the cell defines and hands it over)."""
    if callable(answer):
        return None
    return f"answer should be your function ({usage}), got {type(answer).__name__}"


def call_student(call: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``; if the student's ``fn`` raises, :class:`StudentCallFailed`
    says ``<call> raised <error>``, which :meth:`Exercise.check` turns into its feedback."""
    try:
        return fn(*args, **kwargs)
    except Exception as error:
        raise StudentCallFailed(f"{call} raised {type(error).__name__}: {error}") from error


def compare_number(
    answer: Any,
    expected: float,
    *,
    name: str = "your answer",
    rtol: float = 1e-3,
    atol: float = 0.0,
) -> str | None:
    """``None`` if ``answer`` is a number within ``rtol`` / ``atol`` of ``expected``; else what
    is wrong: not a number, the sign, a factor (2, 1/2, k, 1/k, 100 for percent), or how far."""
    if isinstance(answer, np.ndarray) and answer.size == 1:
        answer = answer.item()
    if hasattr(answer, "item") and not isinstance(answer, numbers.Number):
        try:
            answer = answer.item()
        except (TypeError, ValueError):
            pass
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return f"{name} should be a number, got {type(answer).__name__} {answer!r}"
    a, e = float(answer), float(expected)
    if math.isnan(a):
        return f"{name} is NaN"
    if math.isclose(a, e, rel_tol=rtol, abs_tol=atol):
        return None
    if e != 0 and math.isclose(a, -e, rel_tol=rtol, abs_tol=atol):
        return f"{name} ({a:.6g}) has the wrong sign"
    if e != 0 and a != 0:
        ratio = a / e
        for factor, words in ((100.0, "100 (a percentage instead of a fraction?)"),
                              (0.01, "1/100 (a fraction instead of a percentage?)"),
                              (2.0, "2"), (0.5, "1/2")):  # fmt: skip
            if math.isclose(ratio, factor, rel_tol=rtol):
                return f"{name} ({a:.6g}) is off by a factor of {words}"
        return f"{name} is {a:.6g}; that is {ratio:.3g} times the expected value"
    return f"{name} is {a:.6g}, not the expected value"


def compare_array(
    answer: Any, expected: Any, *, name: str = "your answer", rtol: float = 1e-4, atol: float = 1e-6
) -> str | None:
    """``None`` if ``answer`` (array-like or a torch tensor) has ``expected``'s shape and
    values; else what is wrong: not an array, the shape (transposed?), the sign, a factor, or
    the largest difference and where."""
    try:
        if hasattr(answer, "detach"):
            answer = answer.detach().cpu().numpy()
        a = np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        return f"{name} should be an array of numbers, got {type(answer).__name__}"
    e = np.asarray(expected, dtype=float)
    if a.shape != e.shape:
        extra = " (transposed?)" if a.shape == e.shape[::-1] and a.ndim == 2 else ""
        return f"{name} has shape {a.shape}, expected {e.shape}{extra}"
    if np.allclose(a, e, rtol=rtol, atol=atol):
        return None
    if np.allclose(a, -e, rtol=rtol, atol=atol):
        return f"{name} has the wrong sign everywhere"
    scale = np.vdot(a.ravel(), e.ravel()) / max(np.vdot(e.ravel(), e.ravel()), 1e-300)
    if scale != 0 and np.allclose(a, scale * e, rtol=rtol, atol=atol):
        return f"{name} is {scale:.4g} times the expected values (a missing or extra factor?)"
    where = np.unravel_index(np.argmax(np.abs(a - e)), a.shape) if a.ndim else ()
    worst = float(np.max(np.abs(a - e)))
    at = tuple(int(i) for i in where)
    return f"{name} differs from the expected values by up to {worst:.3g} (at index {at})"


def read_choice(answer: Any, choices: tuple[str, ...]) -> tuple[str | None, str | None]:
    """A "predict, then run" answer among named ``choices``: ``(choice, None)`` (quotes,
    spaces and case ignored), or ``(None, what is wrong)`` when it is not one of them."""
    allowed = ", ".join(repr(c) for c in choices)
    if not isinstance(answer, str):
        return None, f"answer one of {allowed} (a string), got {type(answer).__name__} {answer!r}"
    picked = answer.strip().strip("'\"").lower()
    if picked not in choices:
        return None, f"answer one of {allowed}, got {answer!r}"
    return picked, None


def exercises_of(module: Any) -> dict[str, Exercise]:
    """The exercises of a lesson module (``palviz.exercises.ex01``): its ``q1``, ``q2``, ...
    in the order they are defined."""
    return {
        name: value
        for name, value in vars(module).items()
        if re.fullmatch(r"q\d+", name) and isinstance(value, Exercise)
    }
