"""The checked exercises of lessons 05-09 (``palviz.exercises.ex05`` ... ``ex09``), without
running a notebook: every solution passes its check, typical wrong answers fail with the message
meant for them, the blank is "not answered yet", a student's function that raises is reported
rather than raised, and every exercise appears exactly once in its notebook."""

from __future__ import annotations

import importlib
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from palviz.exercises import Exercise, Feedback
from palviz.exercises.core import exercises_of

ROOT = Path(__file__).resolve().parents[1]
LESSONS = {
    "05": "05_margins_lmsce_ldam_elm",
    "06": "06_long_tailed",
    "07": "07_noisy_labels",
    "08": "08_feature_geometry",
    "09": "09_diagnose_your_model",
}
MODULES = {number: importlib.import_module(f"palviz.exercises.ex{number}") for number in LESSONS}


EXERCISES = {
    f"{number}.{name}": exercise
    for number, module in MODULES.items()
    for name, exercise in exercises_of(module).items()
}


def _raises(*args, **kwargs):
    raise RuntimeError("boom")


# --- typical wrong answers ----------------------------------------------------------------------
def _ldam_unscaled(counts, max_m=0.5):
    return np.asarray(counts, dtype=float) ** -0.25


def _ldam_inverted(counts, max_m=0.5):
    m = np.asarray(counts, dtype=float) ** 0.25
    return m * max_m / m.max()


def _ldam_scalar(counts, max_m=0.5):
    return max_m


def _counts_rounded(n_max, num_classes, rho):
    return [round(n_max * rho ** (-i / (num_classes - 1))) for i in range(num_classes)]


def _counts_over_c(n_max, num_classes, rho):
    return [int(n_max * rho ** (-i / num_classes)) for i in range(num_classes)]


def _ci_normal(baseline, method):
    d = np.asarray(method, float) - np.asarray(baseline, float)
    half = 1.959964 * d.std(ddof=1) / math.sqrt(len(d))
    return d.mean(), d.mean() - half, d.mean() + half


def _ci_unpaired(baseline, method):
    a, b = np.asarray(baseline, float), np.asarray(method, float)
    n = len(a)
    half = stats.t.ppf(0.975, n - 1) * math.sqrt(a.var(ddof=1) / n + b.var(ddof=1) / n)
    return b.mean() - a.mean(), b.mean() - a.mean() - half, b.mean() - a.mean() + half


def _ci_flipped(baseline, method):
    d = np.asarray(baseline, float) - np.asarray(method, float)
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return d.mean(), d.mean() - half, d.mean() + half


def _norms_squared(features, targets, num_classes):
    sq = np.sum(np.asarray(features, float) ** 2, axis=1)
    return np.array([sq[np.asarray(targets) == c].mean() for c in range(num_classes)])


def _norm_of_mean(features, targets, num_classes):
    F, y = np.asarray(features, float), np.asarray(targets)
    return np.array([np.linalg.norm(F[y == c].mean(axis=0)) for c in range(num_classes)])


# --- lesson 09's expected values, from the formulas (independently of palviz) -----------------
CONF = np.array([0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.55, 0.3])
RIGHT = np.array([1, 1, 0, 1, 1, 0, 0, 1], dtype=float)
HIGH = CONF > 0.5  # the bins (0, 0.5] and (0.5, 1]
GAPS = [abs(RIGHT[m].mean() - CONF[m].mean()) for m in (HIGH, ~HIGH)]
ECE = sum(m.mean() * g for m, g in zip((HIGH, ~HIGH), GAPS, strict=True))  # sum |B|/N |acc - conf|
PRIOR_2 = 1 / 100  # counts (90, 9, 1)
ADJUSTED_2 = 0.5 - math.log(PRIOR_2)  # z_2 - tau log pi_2, tau = 1


def test_a_rate_given_to_three_digits_passes_exercise_7_2():
    assert EXERCISES["07.q2"].check(0.399).ok and EXERCISES["07.q2"].check(133 / 333).ok
    assert not EXERCISES["07.q2"].check(0.4).ok


def test_lesson_09s_expected_values_are_those_of_the_formulas():
    assert EXERCISES["09.q1"].check(ECE).ok and not EXERCISES["09.q1"].check(ECE + 0.01).ok
    assert EXERCISES["09.q2"].check(ADJUSTED_2).ok and not EXERCISES["09.q2"].check(5.0).ok
    assert abs(ECE - 0.25625) < 1e-9 and abs(ADJUSTED_2 - 5.1051702) < 1e-6


#: exercise -> [(a typical wrong answer, a part of the message it must get)]
WRONG = {
    "05.q1": [
        (645**-0.25, "before rescaling"),
        (0.5 * 645**-0.25, "M * n_4^(-1/4)"),
        (0.5 * (645 / 50) ** 0.25, "upside down"),
        (0.5 * (50 / 645) ** 0.5, "exponent 1/2"),
        ("0.26", "should be a number"),
    ],
    "05.q2": [
        (_ldam_unscaled, "must get exactly max_m"),
        (_ldam_inverted, "belongs to the rarest class"),
        (_ldam_scalar, "shape"),
        (0.5, "should be your function"),
    ],
    "05.q3": [
        (0.38722091 + 0.5 * 0.20423771, "Delta_y + lambda Delta_c*"),
        (0.20423771 - 0.5 * 0.38722091, "swaps the roles"),
        (0.38722091, "LDAM's margin"),
        (0.38722091 - 0.20423771, "lambda = 1"),
    ],
    "05.q4": [
        ("shrinks", "signed margin grows"),
        ("stays", "signed margin grows"),
        ("up", "answer one of"),
    ],
    "05.q5": [
        (math.log10(5000 / 50), "log10"),
        (5000 / 50, "the ratio"),
        (-math.log(5000 / 50), "wrong sign"),
        (0.5 - 0.5 * (50 / 5000) ** 0.25, "ELM's Delta_y - Delta_c*"),
    ],
    "06.q1": [
        (879, "truncates"),
        (878.7639, "before truncation"),
        (int(5000 * 50**-0.4), "exponent i/C"),
        (568, "neighbouring class"),
    ],
    "06.q2": [
        (_counts_rounded, "you rounded"),
        (_counts_over_c, "n_max / rho"),
        (lambda n_max, C, rho: [n_max] * (C - 1), "one per class"),
        ("counts", "should be your function"),
    ],
    "06.q3": [
        (1e-4 / (1 - 0.9999**50), "before normalising"),
        (0.39927, "sum to 1"),
        (4.0236, "inverse-frequency"),
    ],
    "06.q4": [("medium", "the empty one is 'few'"), ("many", "the empty one is 'few'")],
    "06.q5": [
        (_ci_normal, "normal 1.96"),
        (_ci_unpaired, "pair the runs by seed"),
        (_ci_flipped, "sign flipped"),
        (lambda b, m: (0.0, 1.0), "return (mean, ci_low, ci_high)"),
    ],
    "07.q1": [
        (0.25 / 0.6, "0.25 / eta"),
        (0.25 / 0.05 + 0.6, "brackets"),
        (1 / 0.65, "four times too large"),
    ],
    "07.q2": [(0.4, "nominal rate"), (133, "number of labels"), (0.398, "your rate")],
    "07.q3": [
        (lambda n_c, eta: int(eta * n_c), "int() truncates"),
        (lambda n_c, eta: round(eta * n_c), "rounds halves up"),
        (lambda n_c, eta: math.ceil(eta * n_c), "not up"),
        (lambda n_c, eta: eta * n_c, "should return an int"),
        (lambda n_c, eta: float(round(eta * n_c)), "is an int"),
        (lambda n_c, eta: n_c - round(eta * n_c), "labels that stay"),
    ],
    "07.q4": [("larger", "smaller"), ("same", "smaller")],
    "07.q5": [(0.08, "running maximum"), (0.16, "Bonferroni"), (0.04, "raw p-value")],
    "08.q1": [
        (math.hypot(1.0, 4 / 3), "norm of the class's mean"),
        (13 / 3, "squared norms"),
        (1 + 2 + math.sqrt(8), "sum of the norms"),
    ],
    "08.q2": [
        (math.acos(-1 / 3), "radians"),
        (-1 / 3, "cosine"),
        (90.0, "orthogonal"),
        (math.degrees(math.acos(-1 / 4)), "-1/(k-1)"),
    ],
    "08.q3": [
        (_norms_squared, "squared norms"),
        (_norm_of_mean, "norm of each class mean"),
        (lambda F, y, k: np.zeros(k + 1), "one number per class"),
    ],
    "08.q4": [("double", "they stay"), ("halve", "they stay")],
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
