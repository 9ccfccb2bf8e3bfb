"""The checked exercises of lesson 09 (``palviz.exercises.ex09``), without running a notebook:
every solution passes its check, typical wrong answers fail with the message meant for them, the
blank is "not answered yet", a student's answer that raises is reported rather than raised, and
every exercise appears exactly once in its notebook."""

from __future__ import annotations

import importlib
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from palviz.exercises import Exercise, Feedback
from palviz.exercises.core import exercises_of

ROOT = Path(__file__).resolve().parents[1]
LESSONS = {"09": "09_diagnose_your_model"}
MODULES = {number: importlib.import_module(f"palviz.exercises.ex{number}") for number in LESSONS}


EXERCISES = {
    f"{number}.{name}": exercise
    for number, module in MODULES.items()
    for name, exercise in exercises_of(module).items()
}


def _raises(*args, **kwargs):
    raise RuntimeError("boom")


# --- the expected values, from the formulas (independently of palviz) ---------------------------
CONF = np.array([0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.55, 0.3])
RIGHT = np.array([1, 1, 0, 1, 1, 0, 0, 1], dtype=float)
HIGH = CONF > 0.5  # the bins (0, 0.5] and (0.5, 1]
GAPS = [abs(RIGHT[m].mean() - CONF[m].mean()) for m in (HIGH, ~HIGH)]
ECE = sum(m.mean() * g for m, g in zip((HIGH, ~HIGH), GAPS, strict=True))  # sum |B|/N |acc - conf|
PRIOR_2 = 1 / 100  # counts (90, 9, 1)
ADJUSTED_2 = 0.5 - math.log(PRIOR_2)  # z_2 - tau log pi_2, tau = 1


def test_the_expected_values_are_those_of_the_formulas():
    assert EXERCISES["09.q1"].check(ECE).ok and not EXERCISES["09.q1"].check(ECE + 0.01).ok
    assert EXERCISES["09.q2"].check(ADJUSTED_2).ok and not EXERCISES["09.q2"].check(5.0).ok
    assert abs(ECE - 0.25625) < 1e-9 and abs(ADJUSTED_2 - 5.1051702) < 1e-6


#: exercise -> [(a typical wrong answer, a part of the message it must get)]
WRONG = {
    "09.q1": [
        (float(np.mean(GAPS)), "plain mean of the two bins' gaps"),
        (abs(RIGHT.mean() - CONF.mean()), "overall accuracy and the overall confidence"),
        (100 * ECE, "percentage"),
        ("0.26", "should be a number"),
    ],
    "09.q2": [
        (0.5 - math.log10(PRIOR_2), "log10"),
        (0.5 + math.log(PRIOR_2), "subtracts it"),
        (0.5, "before the adjustment"),
        (0.5 - PRIOR_2, "uses pi_j itself"),
    ],
    "09.q3": [("change", "they stay"), ("up", "answer one of")],
}
LESSON_WRONG = {key: cases for key, cases in WRONG.items() if key in EXERCISES}


def _solution_answer(exercise: Exercise):
    namespace: dict = {}
    exec(exercise.solution_text, namespace)  # a fresh namespace, as a student's cell would be
    return namespace["answer"]


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_the_solution_passes_its_check(key):
    feedback = EXERCISES[key].check(_solution_answer(EXERCISES[key]))
    assert isinstance(feedback, Feedback)
    assert feedback.ok, str(feedback)


@pytest.mark.parametrize(
    "key, answer, words",
    [
        pytest.param(key, answer, words, id=f"{key}-{i}")
        for key, cases in LESSON_WRONG.items()
        for i, (answer, words) in enumerate(cases)
    ],
)
def test_a_typical_wrong_answer_gets_the_message_meant_for_it(key, answer, words):
    feedback = EXERCISES[key].check(answer)
    assert not feedback.ok and feedback.answered
    assert words in feedback.message, feedback.message


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_every_exercise_has_a_wrong_answer_tested(key):
    assert LESSON_WRONG.get(key), f"no typical wrong answer tested for {key}"


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_the_blank_is_not_answered_yet_and_gives_the_hint(key):
    feedback = EXERCISES[key].check(...)
    assert not feedback.ok and not feedback.answered
    assert str(feedback).startswith("Not answered yet") and EXERCISES[key].hint_text in str(
        feedback
    )


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_an_answer_that_raises_is_reported_not_raised(key):
    feedback = EXERCISES[key].check(_raises)
    assert not feedback.ok and feedback.answered
    if "def " in EXERCISES[key].solution_text:  # a function exercise calls the student's code
        assert "raised RuntimeError: boom" in feedback.message


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_keys_questions_and_hints_are_filled_in(key):
    exercise = EXERCISES[key]
    assert exercise.key == key
    assert exercise.question.strip() and exercise.hint_text.strip()
    assert "answer" in exercise.solution_text


def _code_cells(stem: str) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in nb["cells"]
        if c["cell_type"] == "code"
    ]


@pytest.mark.parametrize("number", sorted(LESSONS))
def test_every_exercise_appears_exactly_once_in_its_notebook(number):
    cells = _code_cells(LESSONS[number])
    pattern = re.compile(rf"\bex{number}\.(q\d+)\.check\(")
    checked = [m.group(1) for cell in cells for m in pattern.finditer(cell)]
    assert len([c for c in cells if pattern.search(c)]) >= 3
    assert sorted(checked) == sorted(exercises_of(MODULES[number])), checked
    imports = [c for c in cells if f"from palviz.exercises import ex{number}" in c]
    assert len(imports) == 1


@pytest.mark.parametrize("number", sorted(LESSONS))
def test_the_exercises_come_before_try_this_and_the_summary_after(number):
    nb = json.loads((ROOT / "notebooks" / f"{LESSONS[number]}.ipynb").read_text(encoding="utf-8"))
    markdown = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    heads = [
        next(i for i, text in enumerate(markdown) if re.search(rf"(^|\n){head}", text))
        for head in ("## Exercises", "## Try this", "## Summary", "## References")
    ]
    assert heads == sorted(heads), heads
