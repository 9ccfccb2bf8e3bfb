"""Exercises of lesson 07, noisy labels (PAL Sec. 4-5.2, Theorem 4.4, Prop. 4.5; APL's label
noise; docs/reference.md 4 and 5).

* ``q1`` (compute a number): FNPAL's noise-aware scale $s = 0.25 / (0.05 + \\eta)$.
* ``q2`` (compute a number): the realised symmetric noise rate
  $\\lfloor \\eta n_c + 1/2\\rfloor / n_c$ of one class.
* ``q3`` (write a function): ``symmetric_flip_count(n_c, eta)``, checked against the flips
  :func:`palviz.data.add_label_noise` makes.
* ``q4`` (predict, then run): is $\\lambda_{\\text{PAL}}(s)$ at the noise-aware $s$ larger or
  smaller at $\\eta = 0.8$ than at $\\eta = 0.2$?
* ``q5`` (compute a number): one Holm-adjusted p-value of a family of comparisons.

Every expected value comes from palviz (:mod:`palviz.theory`, :mod:`palviz.data`,
:mod:`palviz.metrics`, :mod:`palviz.stats`), never from the student's code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from palviz.data import add_label_noise
from palviz.exercises import (
    Exercise,
    call_student,
    compare_number,
    not_a_function,
    read_choice,
)
from palviz.metrics import realised_noise_rate
from palviz.stats import holm
from palviz.theory import lipschitz_pal, noise_aware_scale

__all__ = ["q1", "q2", "q3", "q4", "q5"]

Q1_ETA = 0.6
Q2_N, Q2_ETA = 333, 0.4
Q3_CASES = (
    (90, 0.7),
    (333, 0.4),
    (7, 0.5),
    (10, 0.3),
    (1000, 0.8),
    (5, 0.0),
    (3, 1.0),
    (19, 0.45),
    (5, 0.5),
)
Q4_K, Q4_ETAS = 10, (0.2, 0.8)
Q5_P, Q5_INDEX = (0.01, 0.04, 0.03, 0.20), 1
CHOICES = ("larger", "smaller", "same")
NUM_CLASSES = 10  # the classes the flipped labels of q2 and q3 move to


def _close(a: float, b: float, rtol: float = 1e-3) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12)


def _one_class_noise(n_c: int, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """Clean labels of one class (class 0, ``n_c`` samples) and palviz's symmetric noisy copy."""
    clean = np.zeros(n_c, dtype=np.int64)
    return clean, add_label_noise(clean, eta, "symmetric", seed=0, num_classes=NUM_CLASSES)


# --- q1 ------------------------------------------------------------------------------------------
def _judge_q1(answer: Any) -> str | None:
    eta = Q1_ETA
    expected = noise_aware_scale(eta)
    problem = compare_number(answer, expected, name="your s", rtol=1e-3)
    if problem is None or "should be a number" in problem:
        return problem
    a = float(answer)
    if _close(a, 0.25 / eta):
        return f"{a:.4g} is 0.25 / eta; PAL's rule adds epsilon = 0.05: 0.25 / (0.05 + eta)"
    if _close(a, 0.25 / 0.05 + eta):
        return f"{a:.4g} is 0.25 / 0.05 + eta: the brackets belong around 0.05 + eta"
    if _close(a, 1 / (0.05 + eta)):
        return f"{a:.4g} is 1 / (0.05 + eta), four times too large: the numerator is 0.25"
    return problem


q1 = Exercise(
    key="07.q1",
    question=(
        f"FNPAL with CE under symmetric noise at rate $\\eta = {Q1_ETA}$: what scale $s$ does "
        "PAL's noise-aware rule give? A number."
    ),
    judge=_judge_q1,
    hint_text="s = 0.25 / (0.05 + eta): smaller for noisier labels.",
    solution_text=f"eta = {Q1_ETA}\nanswer = 0.25 / (0.05 + eta)  # 0.385\n",
)


# --- q2 ------------------------------------------------------------------------------------------
def _judge_q2(answer: Any) -> str | None:
    n, eta = Q2_N, Q2_ETA
    clean, noisy = _one_class_noise(n, eta)
    expected = realised_noise_rate(clean, noisy)
    flips = int(np.sum(clean != noisy))
    # 3 significant digits pass (0.399 for 133/333 = 0.3994), the nominal 0.4 does not
    problem = compare_number(answer, expected, name="your rate", rtol=1e-3)
    if problem is None or "should be a number" in problem:
        return problem
    a = float(answer)
    if _close(a, eta, 1e-9):
        return (
            f"{a:g} is the nominal rate; exactly round(eta n_c) = round({eta * n:.1f}) = {flips} "
            f"labels of the {n} move, so the realised rate is a little lower"
        )
    if a in (flips, math.floor(eta * n)):
        return f"{a:g} is a number of labels; the rate divides it by n_c = {n}"
    return problem


q2 = Exercise(
    key="07.q2",
    question=(
        f"Symmetric noise at $\\eta = {Q2_ETA}$ on a class of $n_c = {Q2_N}$ training samples "
        "(palviz's rule, docs/reference.md 4): what fraction of that class's labels is actually "
        "changed? A number in [0, 1]."
    ),
    judge=_judge_q2,
    hint_text="Exactly round(eta * n_c) labels of the class (the nearest integer) move.",
    solution_text=f"n_c, eta = {Q2_N}, {Q2_ETA}\nanswer = round(eta * n_c) / n_c  # 133 / 333\n",
)


# --- q3 ------------------------------------------------------------------------------------------
def _judge_q3(fn: Any) -> str | None:
    problem = not_a_function(
        fn, "def symmetric_flip_count(n_c, eta): ...; answer = symmetric_flip_count"
    )
    if problem is not None:
        return problem
    for n, eta in Q3_CASES:
        call = f"symmetric_flip_count({n}, {eta})"
        out = call_student(call, fn, n, eta)
        clean, noisy = _one_class_noise(n, eta)
        expected = int(np.sum(clean != noisy))
        if isinstance(out, bool) or not isinstance(out, int | np.integer):
            if isinstance(out, float | np.floating) and float(out) == expected:
                return f"{call} returned the float {out!r}: a count of labels is an int"
            return f"{call} should return an int, got {type(out).__name__} {out!r}"
        if int(out) == expected:
            continue
        said = f"{call} returned {int(out)}, palviz flips {expected} labels"
        if (eta * n) % 1 == 0.5 and int(out) == math.floor(eta * n):
            return f"{said}: eta n_c = {eta * n:g} is a half, and palviz rounds halves up"
        if int(out) == int(eta * n):
            return (
                f"{said}: eta n_c = {eta * n!r} in floating point; palviz rounds the exact "
                "product to the nearest integer, int() truncates it"
            )
        if int(out) == math.ceil(eta * n):
            return f"{said}: eta n_c = {eta * n:g} is rounded to the nearest integer, not up"
        if int(out) == n - expected:
            return f"{said}: that is the number of labels that stay"
        return said
    return None


q3 = Exercise(
    key="07.q3",
    question=(
        "Write `symmetric_flip_count(n_c, eta)`: how many of the $n_c$ labels of one class "
        "symmetric noise at rate $\\eta$ changes (an int). It is checked on "
        + ", ".join(f"`{c}`" for c in Q3_CASES)
        + " against the labels `palviz.data.add_label_noise` actually changes."
    ),
    judge=_judge_q3,
    hint_text=(
        "The nearest integer to eta * n_c, halves up; int(0.7 * 90) is 62 because 0.7 * 90 is "
        "62.999... in floating point: take the product exactly (fractions.Fraction)."
    ),
    solution_text=(
        "import math\nfrom fractions import Fraction\n\n\n"
        "def symmetric_flip_count(n_c, eta):\n"
        "    # round(eta * n_c), halves up, with eta * n_c exact: 0.7 * 90 is 63\n"
        "    return math.floor(Fraction(str(eta)) * n_c + Fraction(1, 2))\n\n\n"
        "answer = symmetric_flip_count\n"
    ),
)


# --- q4 ------------------------------------------------------------------------------------------
def q4_values() -> dict[float, tuple[float, float]]:
    """``{eta: (s, lambda_PAL(s))}`` at the noise-aware s, for the etas of q4."""
    return {
        eta: (noise_aware_scale(eta), lipschitz_pal(Q4_K, noise_aware_scale(eta)))
        for eta in Q4_ETAS
    }


def _judge_q4(answer: Any) -> str | None:
    picked, problem = read_choice(answer, CHOICES)
    if problem:
        return problem
    values = q4_values()
    (s_low, lam_low), (s_high, lam_high) = (values[eta] for eta in Q4_ETAS)
    truth = (
        "same"
        if _close(lam_high, lam_low, 1e-12)
        else ("larger" if lam_high > lam_low else "smaller")
    )
    if picked == truth:
        return None
    return (
        f"you answered {picked!r}, but palviz gives s = {s_low:.3f}, lambda_PAL = {lam_low:.4f} "
        f"at eta = {Q4_ETAS[0]} and s = {s_high:.3f}, lambda_PAL = {lam_high:.4f} at eta = "
        f"{Q4_ETAS[1]}: {truth}. The rule lowers s as eta grows, and lambda_PAL grows with s"
    )


q4 = Exercise(
    key="07.q4",
    question=(
        f"Predict, then run: with $k = {Q4_K}$ classes and FNPAL's noise-aware $s$, is the "
        f"Lipschitz constant $\\lambda_{{\\text{{PAL}}}}(s)$ at $\\eta = {Q4_ETAS[1]}$ "
        + " / ".join(f'`"{c}"`' for c in CHOICES)
        + f" compared with $\\eta = {Q4_ETAS[0]}$? The cell after the check computes both."
    ),
    judge=_judge_q4,
    hint_text=(
        "Two steps: how does s = 0.25 / (0.05 + eta) move with eta, and how does "
        "lambda_PAL(k, B = s) move with s?"
    ),
    solution_text='answer = "smaller"  # s falls from 1.0 to 0.29, lambda_PAL with it\n',
)


# --- q5 ------------------------------------------------------------------------------------------
def _judge_q5(answer: Any) -> str | None:
    p, i = np.asarray(Q5_P), Q5_INDEX
    adjusted = holm(list(p))
    expected = adjusted[i]
    problem = compare_number(answer, expected, name="your adjusted p-value", rtol=1e-6)
    if problem is None or "should be a number" in problem:
        return problem
    a, m = float(answer), len(p)
    rank = int(np.sum(p < p[i]))  # 0-based rank of p_i among the sorted p-values
    if _close(a, p[i], 1e-9):
        return f"{a:g} is the raw p-value; Holm multiplies it by the number of tests still open"
    if _close(a, min(1.0, (m - rank) * p[i]), 1e-9):
        return (
            f"{a:g} is (m - rank) p = {m - rank} x {p[i]:g}, but Holm's adjusted values never "
            "decrease along the sorted order: take the running maximum with the smaller p-values'"
        )
    if _close(a, min(1.0, m * p[i]), 1e-9):
        return f"{a:g} is m p = {m} x {p[i]:g}, Bonferroni's; Holm multiplies by m - rank"
    return problem


q5 = Exercise(
    key="07.q5",
    question=(
        f"A claim is a family of {len(Q5_P)} comparisons with p-values `{list(Q5_P)}`. What is "
        f"the Holm-adjusted p-value of the comparison whose raw p-value is {Q5_P[Q5_INDEX]}? "
        "A number."
    ),
    judge=_judge_q5,
    hint_text=(
        "Sort the p-values; the j-th smallest (j = 1..m) gets min(1, (m - j + 1) p), and then "
        "the running maximum along the sorted order."
    ),
    solution_text=(
        f"p = sorted({list(Q5_P)})\n"
        "m = len(p)\n"
        "adjusted, running = {}, 0.0\n"
        "for j, value in enumerate(p):\n"
        "    running = max(running, min(1.0, (m - j) * value))\n"
        "    adjusted[value] = running\n"
        f"answer = adjusted[{Q5_P[Q5_INDEX]}]  # 0.09, not 2 x 0.04\n"
    ),
)
