"""Exercises of lesson 05, the margins of LDAM and ELM (LDAM: Cao et al. 2019, Eq. 13; ELM:
Kato & Hotta 2023, Eq. 4-7; docs/reference.md 2 and 7).

* ``q1`` (compute a number): LDAM's margin $\\Delta_4$ of CIFAR-10-LT, $\\rho = 100$, M = 0.5.
* ``q2`` (write a function): ``ldam_margins(counts, max_m=0.5)``, checked on several count
  lists against :func:`palviz.theory.ldam_margins`.
* ``q3`` (compute a number): ELM's effective margin $\\Delta_y - \\lambda\\Delta_{c^*}$ for one
  pair $(y, c^*)$ at $\\lambda = 0.5$.
* ``q4`` (predict, then run): halving $\\lambda$, does ELM's signed margin of the pair (most
  frequent true class, rarest rival) grow, shrink or stay?
* ``q5`` (compute a number): the relative pairwise margin $\\tau\\log(\\pi_j/\\pi_y)$ that the
  logit-adjusted loss asks of the rarest class over the most frequent one.

Every expected value comes from palviz (:mod:`palviz.theory`, :mod:`palviz.data`), never from
the student's code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from palviz.data import long_tail_counts
from palviz.exercises import (
    Exercise,
    call_student,
    compare_array,
    compare_number,
    not_a_function,
    read_choice,
)
from palviz.theory import elm_effective_margins, ldam_margins
from palviz.theory.margins import la_pairwise_margins

__all__ = ["q1", "q2", "q3", "q4", "q5"]

#: CIFAR-10-LT, rho = 100 (n_max = 5000): the counts every exercise of this lesson reads
COUNTS = tuple(long_tail_counts(5000, 10, 100))
MAX_M = 0.5
Q1_CLASS = 4
Q2_CASES = (  # (counts, max_m): long-tailed, a steep three-class set, balanced, unsorted
    (COUNTS, 0.5),
    ((100, 10, 1), 0.3),
    ((500, 500, 500, 500), 0.5),
    ((7, 300, 42), 1.0),
)
Q3_PAIR, Q3_LAM = (7, 2), 0.5
Q4_PAIR, Q4_LAMS = (0, 9), (1.0, 0.5)
Q5_PAIR = (9, 0)  # (target y, rival j): the rarest class against the most frequent
CHOICES = ("grows", "shrinks", "stays")


def _close(a: float, b: float, rtol: float = 1e-3) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-9)


def _as_array(out: Any) -> np.ndarray | None:
    if hasattr(out, "detach"):
        out = out.detach().cpu().numpy()
    try:
        return np.asarray(out, dtype=float)
    except (TypeError, ValueError):
        return None


# --- q1 ------------------------------------------------------------------------------------------
def _judge_q1(answer: Any) -> str | None:
    j = Q1_CLASS
    expected = float(ldam_margins(COUNTS, MAX_M)[j])
    problem = compare_number(answer, expected, name="your margin", rtol=1e-3)
    if problem is None or "should be a number" in problem:
        return problem
    a, n, n_min = float(answer), COUNTS[j], min(COUNTS)
    if _close(a, n**-0.25):
        return (
            f"{a:.4g} is n_{j}^(-1/4) = {n}^(-1/4) before rescaling: LDAM multiplies every "
            f"n_j^(-1/4) by the same factor so that the rarest class (n = {n_min}) gets M = {MAX_M}"
        )
    if _close(a, MAX_M * n**-0.25):
        return (
            f"{a:.4g} is M * n_{j}^(-1/4): the factor is M / n_min^(-1/4), chosen so that the "
            f"rarest class (n = {n_min}) gets exactly M = {MAX_M}"
        )
    if _close(a, MAX_M * (n / n_min) ** 0.25):
        return (
            f"{a:.4g} is larger than M = {MAX_M}: the ratio is upside down. The rarest class "
            f"gets the largest margin, so a class with {n} samples gets M (n_min / n)^(1/4)"
        )
    if _close(a, MAX_M * (n_min / n) ** 0.5):
        return f"{a:.4g} uses the exponent 1/2; LDAM's margins go as n_j^(-1/4)"
    return problem + f" (class {j} has n = {n} training images)"


q1 = Exercise(
    key="05.q1",
    question=(
        f"CIFAR-10-LT with $\\rho = 100$ has the counts `{list(COUNTS)}`. With the largest "
        f"margin $M = {MAX_M}$, what is LDAM's margin $\\Delta_{Q1_CLASS}$ of class {Q1_CLASS} "
        f"($n_{Q1_CLASS} = {COUNTS[Q1_CLASS]}$)? A number."
    ),
    judge=_judge_q1,
    hint_text=(
        "Delta_j = C / n_j^(1/4), with C chosen so that the rarest class gets M: "
        "Delta_j = M * (n_min / n_j)^(1/4)."
    ),
    solution_text=(
        f"counts = {list(COUNTS)}\n"
        f"M = {MAX_M}\n"
        f"answer = M * (min(counts) / counts[{Q1_CLASS}]) ** 0.25  # 0.2638\n"
    ),
)


# --- q2 ------------------------------------------------------------------------------------------
def _judge_q2(fn: Any) -> str | None:
    problem = not_a_function(fn, "def ldam_margins(counts, max_m=0.5): ...; answer = ldam_margins")
    if problem is not None:
        return problem
    for counts, max_m in Q2_CASES:
        call = f"ldam_margins({list(counts)}, max_m={max_m})"
        out = call_student(call, fn, list(counts), max_m=max_m)
        got = _as_array(out)
        if got is None:
            return f"{call} should return an array of numbers, got {type(out).__name__}"
        expected = ldam_margins(counts, max_m)
        problem = compare_array(got, expected, name=f"{call}", rtol=1e-5, atol=1e-8)
        if problem is None:
            continue
        if got.shape != expected.shape:
            return f"{problem}: one margin per class"
        shown = np.round(got, 4).tolist()
        if not _close(float(got.max()), max_m, 1e-5):
            return (
                f"{call} returned {shown}, whose largest margin is {got.max():.4g}; the rarest "
                f"class must get exactly max_m = {max_m}"
            )
        if int(np.argmax(got)) != int(np.argmin(counts)):
            return (
                f"{call} returned {shown}: the largest margin sits on class "
                f"{int(np.argmax(got))} (n = {counts[int(np.argmax(got))]}), it belongs to the "
                f"rarest class {int(np.argmin(counts))} (n = {min(counts)})"
            )
        return f"{call} returned {shown}, palviz gives {np.round(expected, 4).tolist()}"
    return None


q2 = Exercise(
    key="05.q2",
    question=(
        "Write `ldam_margins(counts, max_m=0.5)`: LDAM's per-class margins "
        "$\\Delta_j \\propto n_j^{-1/4}$, rescaled so that $\\max_j \\Delta_j$ = `max_m`, one "
        "number per class (a list, array or tensor). It is checked on "
        + "; ".join(f"`{list(c)}` with `max_m={m}`" for c, m in Q2_CASES)
        + ", against `palviz.theory.ldam_margins`."
    ),
    judge=_judge_q2,
    hint_text=(
        "Take n_j^(-1/4) for every class (NumPy: np.asarray(counts, float) ** -0.25), then "
        "multiply by max_m / (the largest of them)."
    ),
    solution_text=(
        "import numpy as np\n\n\n"
        "def ldam_margins(counts, max_m=0.5):\n"
        "    m = np.asarray(counts, dtype=float) ** -0.25  # n_j^(-1/4)\n"
        "    return m * (max_m / m.max())  # the rarest class gets max_m\n\n\n"
        "answer = ldam_margins\n"
    ),
)


# --- q3 ------------------------------------------------------------------------------------------
def _judge_q3(answer: Any) -> str | None:
    y, c = Q3_PAIR
    expected = float(elm_effective_margins(COUNTS, MAX_M, Q3_LAM)[y, c])
    problem = compare_number(answer, expected, name="your margin", rtol=1e-3)
    if problem is None or "should be a number" in problem:
        return problem
    a = float(answer)
    d = ldam_margins(COUNTS, MAX_M)
    if _close(a, d[y] + Q3_LAM * d[c]):
        return (
            f"{a:.4g} is Delta_y + lambda Delta_c*: ELM shifts the target logit by "
            "-Delta_y + lambda Delta_c* (Eq. 6), so the lead it asks for is "
            "Delta_y - lambda Delta_c*"
        )
    if _close(a, d[c] - Q3_LAM * d[y]):
        return f"{a:.4g} swaps the roles: y = {y} is the true class, c* = {c} the rival"
    if _close(a, d[y]):
        return f"{a:.4g} is LDAM's margin Delta_{y}; ELM subtracts lambda Delta_c* from it"
    if _close(a, d[y] - d[c]):
        return f"{a:.4g} is Delta_y - Delta_c*, i.e. lambda = 1; here lambda = {Q3_LAM}"
    return problem


q3 = Exercise(
    key="05.q3",
    question=(
        f"Same counts and $M = {MAX_M}$, ELM with $\\lambda = {Q3_LAM}$: the true class is "
        f"$y = {Q3_PAIR[0]}$ and the strongest wrong class $c^* = {Q3_PAIR[1]}$. By how much "
        "must $z_y$ beat $z_{c^*}$ at ELM's hinge corner (leave out $\\hat\\rho/s$)? A number."
    ),
    judge=_judge_q3,
    hint_text=(
        "ELM's target logit is z_y - Delta_y + lambda Delta_c* (Eq. 6-7): the margin is "
        "Delta_y - lambda Delta_c*, with Delta from exercise 5.1's formula."
    ),
    solution_text=(
        f"counts = {list(COUNTS)}\n"
        f"M, lam, y, c_star = {MAX_M}, {Q3_LAM}, {Q3_PAIR[0]}, {Q3_PAIR[1]}\n"
        "delta = [M * (min(counts) / n) ** 0.25 for n in counts]\n"
        "answer = delta[y] - lam * delta[c_star]  # 0.2851\n"
    ),
)


# --- q4 ------------------------------------------------------------------------------------------
def q4_values() -> dict[float, float]:
    """ELM's margin of the pair ``Q4_PAIR`` at each lambda of ``Q4_LAMS`` (what the run cell
    prints)."""
    y, c = Q4_PAIR
    return {lam: float(elm_effective_margins(COUNTS, MAX_M, lam)[y, c]) for lam in Q4_LAMS}


def _judge_q4(answer: Any) -> str | None:
    picked, problem = read_choice(answer, CHOICES)
    if problem:
        return problem
    values = q4_values()
    before, after = (values[lam] for lam in Q4_LAMS)
    truth = "stays" if abs(after - before) < 1e-12 else ("grows" if after > before else "shrinks")
    if picked == truth:
        return None
    y, c = Q4_PAIR
    return (
        f"you answered {picked!r}, but palviz gives {before:+.4f} at lambda = {Q4_LAMS[0]} and "
        f"{after:+.4f} at lambda = {Q4_LAMS[1]}: the signed margin {truth} (its magnitude "
        "moves the other way while it stays negative). The margin is "
        f"Delta_{y} - lambda Delta_{c}, and d(margin)/d(lambda) = -Delta_{c} < 0: a smaller "
        "lambda subtracts less"
    )


q4 = Exercise(
    key="05.q4",
    question=(
        f"Predict, then run: same counts, $M = {MAX_M}$. The true class is the most frequent, "
        f"$y = {Q4_PAIR[0]}$, its strongest rival the rarest, $c^* = {Q4_PAIR[1]}$. Going from "
        f"$\\lambda = {Q4_LAMS[0]}$ to $\\lambda = {Q4_LAMS[1]}$, does ELM's signed margin "
        "$\\Delta_y - \\lambda\\Delta_{c^*}$ (a number that can be negative) "
        + " / ".join(f'`"{c}"`' for c in CHOICES)
        + "? The cell after the check computes it."
    ),
    judge=_judge_q4,
    hint_text="Differentiate Delta_y - lambda Delta_c* with respect to lambda.",
    solution_text=(
        'answer = "grows"  # signed: -0.342 at lambda = 1, -0.092 at lambda = 0.5 '
        "(its magnitude shrinks)\n"
    ),
)


# --- q5 ------------------------------------------------------------------------------------------
def _judge_q5(answer: Any) -> str | None:
    y, j = Q5_PAIR
    expected = float(la_pairwise_margins(COUNTS, 1.0)[y, j])
    problem = compare_number(answer, expected, name="your margin", rtol=1e-3)
    if problem is None or "should be a number" in problem:
        return problem
    a, ratio = float(answer), COUNTS[j] / COUNTS[y]
    if _close(a, math.log10(ratio)):
        return f"{a:.4g} is log10 of {ratio:g}; the loss works in natural logarithms"
    if _close(a, ratio):
        return f"{a:.4g} is the ratio pi_j / pi_y itself; the margin is its logarithm"
    if _close(a, float(elm_effective_margins(COUNTS, MAX_M, 1.0)[y, j])):
        return (
            f"{a:.4g} is ELM's Delta_y - Delta_c* (cosine units): the same relative form, but "
            "the question asks for the logit-adjusted loss's tau log(pi_j / pi_y)"
        )
    return problem


q5 = Exercise(
    key="05.q5",
    question=(
        "The logit-adjusted loss (Menon et al. 2021, `palviz.losses.LogitAdjustedLoss`, "
        "$\\tau = 1$) is $\\mathrm{CE}(z + \\tau\\log\\pi, y)$ with the class prior "
        "$\\pi_j = n_j / \\sum_k n_k$. Same counts: by how much must the target logit of the "
        f"rarest class $y = {Q5_PAIR[0]}$ beat the logit of the most frequent class "
        f"$j = {Q5_PAIR[1]}$ at the loss's hinge corner (all other logits far below)? A number."
    ),
    judge=_judge_q5,
    hint_text=(
        "CE(z + tau log pi, y) = softplus(z_j - z_y + tau (log pi_j - log pi_y)) when only j "
        "competes: the corner is at z_y - z_j = tau log(pi_j / pi_y), and pi_j / pi_y = n_j / n_y."
    ),
    solution_text=(
        "import math\n\n"
        f"counts = {list(COUNTS)}\n"
        f"y, j, tau = {Q5_PAIR[0]}, {Q5_PAIR[1]}, 1.0\n"
        "answer = tau * math.log(counts[j] / counts[y])  # log(5000 / 50) = 4.605\n"
    ),
)
