"""Self-checking exercises of the lessons: ``from palviz.exercises import ex01`` gives
``ex01.q1``, ``ex01.q2``, ... (:class:`~palviz.exercises.core.Exercise`), each with
``.check(answer)``, ``.hint()`` and ``.solution()``. See :mod:`palviz.exercises.core`."""

from palviz.exercises.core import (
    Exercise,
    Feedback,
    StudentCallFailed,
    call_student,
    compare_array,
    compare_number,
    not_a_function,
    read_choice,
)

__all__ = [
    "Exercise",
    "Feedback",
    "StudentCallFailed",
    "call_student",
    "compare_array",
    "compare_number",
    "not_a_function",
    "read_choice",
]
