"""Exercises of lesson 04, Lipschitz bounds against the scale $s$ (PAL Prop. 4.5, Remark,
Sec. A.7; docs/reference.md 5).

* ``q1`` (compute a number): $\\lambda_{\\text{PAL}}(s)$ for k = 10 at the noise-aware scale of
  noise rate 0.4.
* ``q2`` (write a function): ``lambda_pal(k, B)``, checked on several (k, B) against
  :func:`palviz.theory.lipschitz_pal`.
* ``q3`` (predict, then run): as the noise rate grows from 0 to 0.8 with the noise-aware
  scale, does FNPAL's largest confidence $p_{\\max}(s)$ grow, shrink or stay?
* ``q4`` (predict, then run): for k = 2 classes and B = 1, which is larger, $\\lambda_{\\text{PAL}}$
  or the bound for learnable unit prototypes (case 3)?
* ``q5`` (compute a number): PAL's risk bound (Thm 4.4, Eq. 7) for FNPAL with CE, k = 10,
  $\\eta = 0.4$ and $B$ = the noise-aware scale.

Every expected value is computed from :mod:`palviz.theory`, never from the student's code.
"""

from __future__ import annotations

import math
from typing import Any

from palviz.exercises.core import (
    Exercise,
    call_student,
    compare_number,
    not_a_function,
    read_choice,
)
from palviz.theory import (
    fnpal_max_confidence,
    lipschitz_normalized_unanchored_lower_bound,
    lipschitz_pal,
    noise_aware_scale,
)
from palviz.theory.lipschitz import noisy_risk_bound

__all__ = ["q1", "q2", "q3", "q4", "q5"]

Q1_K, Q1_ETA = 10, 0.4
Q2_CASES = ((2, 0.5), (10, 1.0), (10, 5.0), (100, 2.0), (100, 30.0))
Q3_K, Q3_ETAS = 10, (0.0, 0.8)
Q4_K, Q4_B = 2, 1.0
Q5_K, Q5_ETA = 10, 0.4
CHOICES = ("grows", "shrinks", "stays")
WHICH = ("anchored", "learnable", "equal")


# --- q1 -----------------------------------------------------------------------------------------
def _judge_q1(answer: Any) -> str | None:
    k, s = Q1_K, noise_aware_scale(Q1_ETA)
    expected = lipschitz_pal(k, s)
    problem = compare_number(answer, expected, name="your lambda_PAL", rtol=1e-4)
    if problem is None or "should be a number" in problem:
        return problem
    a = float(answer)
    slips = {
        f"that is lambda_PAL at B = eta = {Q1_ETA}; B is the scale s = 0.25/(0.05 + eta)": (
            lipschitz_pal(k, Q1_ETA)
        ),
        "that is lambda_PAL at the clean-data scale s = 5 (eta = 0)": lipschitz_pal(k, 5.0),
        f"that is the scale s = {s:.4g} itself; lambda_PAL(s) is the next step": s,
        "that is p_max(s), the largest confidence; the question asks for lambda_PAL(s)": (
            fnpal_max_confidence(k, s)
        ),
        f"that is the limit k = {k} for large B; at this small s lambda_PAL is far below it": k,
    }
    for slip, wrong in slips.items():
        if math.isclose(a, wrong, rel_tol=1e-3):
            return f"{a:.6g}: {slip}"
    return problem


q1 = Exercise(
    key="04.q1",
    question=(
        f"FNPAL with cross-entropy, k = {Q1_K} classes, noise rate $\\eta = {Q1_ETA}$ and the "
        "noise-aware scale $s = \\frac{0.25}{0.05 + \\eta}$. The loss sees features of norm "
        "$B = s$: what is $\\lambda_{\\text{PAL}}(s) = \\frac{k(1 - e^{-ks/(k-1)})}"
        "{1 + (k-1)e^{-ks/(k-1)}}$? A number."
    ),
    judge=_judge_q1,
    hint_text=(
        "First s = 0.25 / (0.05 + 0.4) = 0.5556, then e = exp(-k s / (k - 1)) and "
        "k (1 - e) / (1 + (k - 1) e)."
    ),
    solution_text=(
        "import math\n\n"
        f"k, eta = {Q1_K}, {Q1_ETA}\n"
        "s = 0.25 / (0.05 + eta)\n"
        "e = math.exp(-k * s / (k - 1))\n"
        "answer = k * (1 - e) / (1 + (k - 1) * e)  # 0.7867\n"
    ),
)


# --- q2 -----------------------------------------------------------------------------------------
def _judge_q2(lambda_pal: Any) -> str | None:
    problem = not_a_function(lambda_pal, "def lambda_pal(k, B): ...; answer = lambda_pal")
    if problem is not None:
        return problem
    for k, B in Q2_CASES:
        call = f"lambda_pal({k}, {B:g})"
        value = call_student(call, lambda_pal, k, B)
        expected = lipschitz_pal(k, B)
        problem = compare_number(value, expected, name=call, rtol=1e-6)
        if problem is None:
            continue
        if "should be a number" in problem or "is NaN" in problem:
            return problem
        v = float(value)
        e = math.exp(-B)  # the exponent without its k/(k-1)
        if math.isclose(v, k * (1 - e) / (1 + (k - 1) * e), rel_tol=1e-6):
            return f"{call} returned {v:.6g}, expected {expected:.6g}: the exponent is -kB/(k-1)"
        return f"{problem}; expected {expected:.6g}"
    return None


q2 = Exercise(
    key="04.q2",
    question=(
        "Write `lambda_pal(k, B)`: PAL's Lipschitz constant $\\lambda_{\\text{PAL}}$ of the "
        "summed CE loss for anchored simplex prototypes and features of norm B (Prop. 4.5). It "
        "is checked for (k, B) = "
        + ", ".join(f"({k}, {B:g})" for k, B in Q2_CASES)
        + " against palviz's `theory.lipschitz_pal`."
    ),
    judge=_judge_q2,
    hint_text=(
        "With e = exp(-k B / (k - 1)): k (1 - e) / (1 + (k - 1) e). Written with exp of a "
        "negative number, it cannot overflow at large B."
    ),
    solution_text=(
        "import math\n\n\n"
        "def lambda_pal(k, B):\n"
        "    e = math.exp(-k * B / (k - 1))\n"
        "    return k * (1 - e) / (1 + (k - 1) * e)\n\n\n"
        "answer = lambda_pal\n"
    ),
)


# --- q3 -----------------------------------------------------------------------------------------
def _q3_values() -> list[tuple[float, float, float, float]]:
    """``(eta, s, p_max, lambda_PAL)`` at the two noise rates of q3, from palviz.theory."""
    out = []
    for eta in Q3_ETAS:
        s = noise_aware_scale(eta)
        out.append((eta, s, fnpal_max_confidence(Q3_K, s), lipschitz_pal(Q3_K, s)))
    return out


def _judge_q3(answer: Any) -> str | None:
    picked, problem = read_choice(answer, CHOICES)
    if problem:
        return problem
    (e0, s0, p0, l0), (e1, s1, p1, l1) = _q3_values()
    truth = "stays" if abs(p1 - p0) < 1e-9 else ("grows" if p1 > p0 else "shrinks")
    if picked == truth:
        return None
    return (
        f"you answered {picked!r}, but with eta = {e0:g} the scale is s = {s0:.3f} and "
        f"p_max = {p0:.3f}; with eta = {e1:g}, s = {s1:.3f} and p_max = {p1:.3f}: it {truth}. "
        f"A smaller s buys a smaller lambda_PAL ({l0:.3f} to {l1:.3f}, robustness) at the price "
        "of the confidence the model can express (fitting ability)"
    )


q3 = Exercise(
    key="04.q3",
    question=(
        f"Predict, then run: FNPAL with k = {Q3_K} and the noise-aware scale "
        "$s = \\frac{0.25}{0.05 + \\eta}$. As the noise rate $\\eta$ grows from "
        f"{Q3_ETAS[0]:g} to {Q3_ETAS[1]:g}, what does the largest confidence "
        '$p_{\\max}(s)$ FNPAL can give a class do? Answer `"grows"`, `"shrinks"` or `"stays"`.'
    ),
    judge=_judge_q3,
    hint_text=(
        "The larger eta, the smaller s. p_max(s) = 1 / (1 + (k - 1) exp(-k s / (k - 1))): what "
        "does it tend to as s goes to 0?"
    ),
    solution_text='answer = "shrinks"  # s falls from 5 to 0.29, p_max from 0.966 to 0.133\n',
)


# --- q4 -----------------------------------------------------------------------------------------
def _judge_q4(answer: Any) -> str | None:
    picked, problem = read_choice(answer, WHICH)
    if problem:
        return problem
    anchored = lipschitz_pal(Q4_K, Q4_B)
    learnable = lipschitz_normalized_unanchored_lower_bound(Q4_K, Q4_B)
    if math.isclose(anchored, learnable, rel_tol=1e-9):
        truth = "equal"
    else:
        truth = "anchored" if anchored > learnable else "learnable"
    if picked == truth:
        return None
    return (
        f"you answered {picked!r}, but for k = {Q4_K}, B = {Q4_B:g} lambda_PAL is "
        f"{anchored:.6f} and the case-3 bound {learnable:.6f}: {truth}. Both are 2 tanh B: with "
        "two classes the configuration that attains the case-3 bound, w_1 = z/B and "
        "w_2 = -z/B, *is* the simplex {w, -w}; from k = 3 on the bound is strictly larger"
    )


q4 = Exercise(
    key="04.q4",
    question=(
        f"Predict, then run: k = {Q4_K} classes, features of norm B = {Q4_B:g}. Which is larger: "
        "$\\lambda_{\\text{PAL}}$ of the anchored simplex, or the lower bound "
        "$\\frac{2(e^{2B} - 1)}{e^{2B}/(k-1) + 1}$ for learnable unit prototypes (case 3)? "
        'Answer `"anchored"`, `"learnable"` or `"equal"`.'
    ),
    judge=_judge_q4,
    hint_text=(
        "For k = 2 write both with e^(-2B): k/(k-1) = 2, and 2(1 - e^(-2B)) / (1 + e^(-2B)) is "
        "a function you know."
    ),
    solution_text='answer = "equal"  # both are 2 tanh(B) for k = 2\n',
)


# --- q5 -----------------------------------------------------------------------------------------
def _q5_parts() -> tuple[float, float, float]:
    """``(B, lambda_PAL(B), bound)`` of q5, from palviz.theory."""
    B = noise_aware_scale(Q5_ETA)
    lam = lipschitz_pal(Q5_K, B)
    return B, lam, noisy_risk_bound(Q5_K, Q5_ETA, lam, B)


def _judge_q5(answer: Any) -> str | None:
    k, eta = Q5_K, Q5_ETA
    B, lam, expected = _q5_parts()
    problem = compare_number(answer, expected, name="your bound", rtol=1e-3)
    if problem is None or "should be a number" in problem:
        return problem
    a = float(answer)
    slips = {
        "the denominator is k(1 - eta) - 1, not k - 1": 2 * eta * lam * B / (k - 1),
        "that uses lambda = k, the large-B limit; at B = s the constant is lambda_PAL(s)": (
            2 * eta * k * B / (k * (1 - eta) - 1)
        ),
        f"that uses B = 1; the features have norm B = s = {B:.4g}": noisy_risk_bound(
            k, eta, lipschitz_pal(k, 1.0), 1.0
        ),
    }
    for slip, wrong in slips.items():
        if math.isclose(a, wrong, rel_tol=1e-3):
            return f"{a:.6g}: {slip}"
    return problem


q5 = Exercise(
    key="04.q5",
    question=(
        f"PAL's risk bound (Theorem 4.4, Eq. 7): $R_L(\\hat f) - R_L(f^*) \\leq "
        "\\frac{2\\eta\\lambda B}{k(1-\\eta) - 1}$. FNPAL with cross-entropy, "
        f"k = {Q5_K}, symmetric noise at $\\eta = {Q5_ETA}$ and the noise-aware scale, so "
        "$B = s = \\frac{0.25}{0.05 + \\eta}$ and $\\lambda = \\lambda_{\\text{PAL}}(s)$. "
        "What is the bound? A number."
    ),
    judge=_judge_q5,
    hint_text=(
        "s = 0.25 / 0.45; lambda_PAL(s) is exercise 4.1's answer; then 2 eta lambda s divided "
        "by k (1 - eta) - 1 = 5."
    ),
    solution_text=(
        "import math\n\n"
        f"k, eta = {Q5_K}, {Q5_ETA}\n"
        "B = 0.25 / (0.05 + eta)  # = s\n"
        "e = math.exp(-k * B / (k - 1))\n"
        "lam = k * (1 - e) / (1 + (k - 1) * e)  # lambda_PAL(s)\n"
        "answer = 2 * eta * lam * B / (k * (1 - eta) - 1)  # 0.0699\n"
    ),
)
