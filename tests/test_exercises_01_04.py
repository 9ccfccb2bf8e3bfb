"""The checked exercises of lessons 01-04 (``palviz.exercises.ex01`` ... ``ex04``), without
running a notebook: every solution passes its check, a typical wrong answer fails with the
message meant for it, the blank is "not answered yet", a student's function that raises is
reported rather than raised, and every exercise appears exactly once in its notebook."""

from __future__ import annotations

import importlib
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from palviz.exercises import Exercise
from palviz.exercises.core import exercises_of
from palviz.metrics import mean_pairwise_cosine

ROOT = Path(__file__).resolve().parents[1]
LESSONS = {
    "01": "01_simplex_prototypes",
    "02": "02_minority_collapse",
    "03": "03_weight_decay_and_norms",
    "04": "04_lipschitz_bounds_vs_s",
}
MODULES = {number: importlib.import_module(f"palviz.exercises.ex{number}") for number in LESSONS}


EXERCISES = [
    pytest.param(exercise, id=f"ex{number}.{name}")
    for number, module in MODULES.items()
    for name, exercise in exercises_of(module).items()
]


def _cosines(W, classes):
    V = np.asarray(W)[classes]
    V = V / np.linalg.norm(V, axis=1, keepdims=True)
    return V @ V.T


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _per_class(values, y, k):
    return np.array([values[y == c].mean() for c in range(k)])


def _raises(*args):
    raise RuntimeError("boom")


def _lambda_pal(k, B):  # PAL Prop. 4.5, written out here from the formula
    e = math.exp(-k * B / (k - 1))
    return k * (1 - e) / (1 + (k - 1) * e)


_S_Q5 = 0.25 / (0.05 + 0.4)  # exercise 4.5: the noise-aware scale at eta = 0.4
_LAM_Q5 = _lambda_pal(10, _S_Q5)


#: (exercise, a typical wrong answer, a part of the message it must get)
WRONG = {
    "01.q1": [
        (0.25, "wrong sign"),
        (-0.2, "-1/k"),
        (104.4775, "angle in degrees"),
        ("a quarter", "should be a number"),
    ],
    "01.q2": [
        (lambda k: np.eye(k), "a regular simplex has every pair at"),
        (lambda k: np.eye(k) - 1 / k, "normalise every row"),
        (lambda k: np.ones((k + 1, k)), "one row per class"),
        (3, "should be your function"),
    ],
    "01.q3": [("grows", "you answered 'grows', but"), ("maybe", "answer one of")],
    "02.q1": [(1 - 1 / 9, "subtracting a negative number adds"), (1.0, "target logit")],
    "02.q2": [
        (lambda W, c: _cosines(W, c).mean(), "includes the diagonal"),
        (lambda W, c: np.asarray(W)[c], "should return one number"),
        (lambda W, c: mean_pairwise_cosine(W), "not over `classes`"),
    ],
    "02.q3": [("rises", "it falls"), (-0.16, "answer one of")],
    "02.q4": [(4 / 3, "only the regular simplex reaches"), (2.0, "*largest*"), ("1", "a number")],
    "03.q1": [(35, "many-shot"), (29, "count the classes with n_c < 20"), ("30", "a number")],
    "03.q2": [
        (lambda z, y, k: _per_class(_softmax(z)[np.arange(len(y)), y], y, k), "*true* class"),
        (lambda z, y, k: _per_class(np.max(z, axis=1), y, k), "largest logit"),
        (lambda z, y, k: np.ones(k + 1), "has shape"),
    ],
    "03.q3": [("stays", "it grows"), ("shrinks", "it grows")],
    "03.q4": [("grows", "it stays"), (True, "answer one of")],
    "03.q5": [
        (2.0, "w_y^T z alone"),
        (2 * (1 - 1 / 9), "subtracting it adds"),
        (4 * 10 / 9, "squared norm"),
        (10 / 9, "unit features"),
        ("two", "should be a number"),
    ],
    "04.q1": [(0.5299654, "B = eta"), (9.6264, "clean-data scale"), (-0.7867, "wrong sign")],
    "04.q2": [
        (lambda k, B: k * (1 - math.exp(-B)) / (1 + (k - 1) * math.exp(-B)), "-kB/(k-1)"),
        (lambda k, B: [1.0, 2.0], "should be a number"),
        (lambda k, B: k, "lambda_pal(2, 0.5)"),
    ],
    "04.q3": [("grows", "it shrinks"), ("stays", "it shrinks")],
    "04.q4": [("anchored", "equal"), ("learnable", "2 tanh B"), ("bigger", "answer one of")],
    "04.q5": [
        (2 * 0.4 * _LAM_Q5 * _S_Q5 / 9, "k(1 - eta) - 1"),
        (2 * 0.4 * 10 * _S_Q5 / 5, "lambda = k"),
        (2 * 0.4 * _lambda_pal(10, 1.0) / 5, "B = 1"),
        ("small", "should be a number"),
    ],
}

#: exercises whose answer is a function: one that raises must be reported, naming the call
FUNCTIONS = {
    "01.q2": "simplex(",
    "02.q2": "mean_cosine(",
    "03.q2": "confidence_per_class(",
    "04.q2": "lambda_pal(",
}


def _solution_answer(exercise: Exercise):
    namespace: dict = {}
    exec(exercise.solution_text, namespace)  # a fresh namespace, as a student's cell
    return namespace["answer"]


def test_every_exercise_has_wrong_answers_and_the_modules_list_their_exercises():
    keys = {exercise.key for exercise in (p.values[0] for p in EXERCISES)}
    assert keys == set(WRONG), f"wrong answers missing for {sorted(keys - set(WRONG))}"
    for number, module in MODULES.items():
        found = exercises_of(module)
        assert len(found) >= 3, f"ex{number} has {len(found)} exercises"
        for name, exercise in found.items():
            assert exercise.key == f"{number}.{name}"
            assert f"``{name}``" in module.__doc__, f"ex{number}'s docstring does not list {name}"


@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_solution_passes_its_check(exercise):
    feedback = exercise.check(_solution_answer(exercise))
    assert feedback.ok and feedback.answered, str(feedback)
    assert str(feedback).startswith("Right.")


@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_blank_is_not_answered_yet_and_gives_the_hint(exercise):
    feedback = exercise.check(...)
    assert not feedback.ok and feedback.answered is False
    assert str(feedback).startswith("Not answered yet.")
    assert exercise.hint_text in feedback.message


@pytest.mark.parametrize("exercise", EXERCISES)
def test_typical_wrong_answers_fail_with_their_message(exercise):
    for wrong, part in WRONG[exercise.key]:
        feedback = exercise.check(wrong)
        assert not feedback.ok and feedback.answered, f"{wrong!r} passed {exercise.key}"
        assert str(feedback).startswith("Not yet.")
        assert part in feedback.message, f"{exercise.key}, {wrong!r}: {feedback.message}"


@pytest.mark.parametrize("key", sorted(FUNCTIONS))
def test_a_student_function_that_raises_is_reported_not_raised(key):
    number, name = key.split(".")
    exercise = getattr(MODULES[number], name)
    feedback = exercise.check(_raises)
    assert not feedback.ok and feedback.answered
    assert "raised RuntimeError: boom" in feedback.message
    assert FUNCTIONS[key] in feedback.message  # which call failed


def _code_cells(stem: str) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def _markdown_cells(stem: str) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


@pytest.mark.parametrize("number", sorted(LESSONS))
def test_the_notebook_holds_each_exercise_exactly_once(number):
    stem = LESSONS[number]
    checks = [
        m.group(1)
        for source in _code_cells(stem)
        for m in re.finditer(rf"\bex{number}\.(q\d+)\.check\(", source)
    ]
    assert len(checks) >= 3, f"{stem}: {len(checks)} exNN.qK.check( calls"
    names = sorted(exercises_of(MODULES[number]))
    assert sorted(checks) == names, f"{stem}: checks {sorted(checks)}, exercises {names}"
    imports = [s for s in _code_cells(stem) if f"from palviz.exercises import ex{number}" in s]
    assert len(imports) == 1, f"{stem}: import ex{number} once, in the first exercise cell"
    for cell in _code_cells(stem):
        if f"ex{number}." in cell and ".check(" in cell:
            assert re.search(r"^answer = \.\.\.", cell, re.MULTILINE), f"no blank in:\n{cell}"


@pytest.mark.parametrize("number", sorted(LESSONS))
def test_the_notebook_ends_with_exercises_try_this_summary_references(number):
    heads = [
        m.group(1)
        for source in _markdown_cells(LESSONS[number])
        for m in re.finditer(r"^## (.+)$", source, re.MULTILINE)
    ]
    assert heads[-4:] == ["Exercises", "Try this", "Summary", "References"], heads


# ---------------------------------------------------------------- ex01: the lesson's tolerances


def _cosine_error(W: np.ndarray) -> float:
    """max_{i != j} |cos(w_i, w_j) + 1/(k-1)|, from the formula."""
    V = W / np.linalg.norm(W, axis=1, keepdims=True)
    off = (V @ V.T)[~np.eye(len(W), dtype=bool)]
    return float(np.abs(off + 1 / (len(W) - 1)).max())


def _near_simplex(k: int, error: float) -> np.ndarray:
    """Unit rows whose largest |cos + 1/(k-1)| is ``error`` (to 1e-9): the closed-form simplex
    M = I - 11^T/k, normalised, plus t times a fixed random matrix, t found by bisection."""
    M = np.eye(k) - np.ones((k, k)) / k
    R = np.random.default_rng(k).standard_normal((k, k))
    low, high = 0.0, 1.0
    for _ in range(60):
        t = (low + high) / 2
        low, high = (t, high) if _cosine_error(M + t * R) < error else (low, t)
    W = M + low * R
    return W / np.linalg.norm(W, axis=1, keepdims=True)


def test_ex01_q2_accepts_what_lesson_01_accepts_of_pals_optimiser():
    from palviz.heads import SIMPLEX_TOL, simplex_prototypes
    from palviz.metrics import simplex_error

    ex01 = MODULES["01"]
    assert SIMPLEX_TOL == 1e-3
    assert ex01.q2.check(lambda k: simplex_prototypes(k, k, method="optimize", seed=0)).ok
    for k in ex01.Q2_KS:  # palviz's own measure agrees with the formula's
        assert abs(simplex_error(_near_simplex(k, 0.9 * SIMPLEX_TOL)) - 0.9 * SIMPLEX_TOL) < 1e-8
    assert ex01.q2.check(lambda k: _near_simplex(k, 0.9 * SIMPLEX_TOL)).ok  # was refused
    feedback = ex01.q2.check(lambda k: _near_simplex(k, 1.5 * SIMPLEX_TOL))
    assert not feedback.ok and "a regular simplex has every pair at" in feedback.message


@pytest.mark.parametrize("run", [{3: 90.0, 4: 89.98}, {3: 89.95, 4: 90.0}, {3: 80.0, 4: 90.0}])
def test_ex01_q3_is_decided_by_rankins_bound_not_by_one_run(monkeypatch, run):
    """'stays' is right whatever angle one optimiser run ends at (90 deg at d = 3 and 4);
    the feedback says which runs are within the stated tolerance of the bound."""
    ex01 = MODULES["01"]
    monkeypatch.setattr(ex01, "_q3_angles", lambda: run)
    assert ex01.q3.check("stays").ok
    feedback = ex01.q3.check("grows")
    assert not feedback.ok and "it stays" in feedback.message
    for d, angle in run.items():
        near = f"{angle:.3f}° at d = {d} (within {ex01.Q3_TOL_DEG:g}° of 90°)"
        assert (near in feedback.message) == (abs(angle - 90) <= ex01.Q3_TOL_DEG), feedback
    assert ex01._largest_min_angle(6, 3) == ex01._largest_min_angle(6, 4) == 90.0
    assert ex01._largest_min_angle(6, 2) is None  # 2d < k: the axes do not fit


# ---------------------------------------------------------------- ex03: the weight-decay theorem


def test_ex03_q5_expects_the_theorems_margin_from_the_formula():
    """gamma_min = k/(k-1) sqrt(E) at z_i = sqrt(E) w_{y_i} (PAL's weight-decay theorem),
    computed here from the formula, and the same for every class of the simplex."""
    ex03 = MODULES["03"]
    k, E = ex03.Q5["num_classes"], ex03.Q5["energy"]
    assert math.isclose(ex03._q5_margin(), k / (k - 1) * math.sqrt(E), rel_tol=1e-6)
    M = np.eye(k) - np.ones((k, k)) / k
    W = M / np.linalg.norm(M, axis=1, keepdims=True)  # unit rows, cos = -1/(k-1)
    for c in range(k):
        logits = W @ (math.sqrt(E) * W[c])
        assert math.isclose(logits[c] - np.delete(logits, c).max(), ex03._q5_margin(), rel_tol=1e-6)
    assert ex03.q5.check(k / (k - 1) * math.sqrt(E)).ok


def test_ex03_q4_question_reads_plainly():
    question = MODULES["03"].q4.question
    assert question.count("(") == question.count(")") and "((" not in question
    assert "demo_logits() (" not in question and "Exercise 3.3" in question
