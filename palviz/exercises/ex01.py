"""Exercises of lesson 01, simplex prototypes (PAL Lemma 3.1, Theorem 3.2; docs/reference.md 5).

* ``q1`` (compute a number): the cosine between two vertices of the regular simplex for
  k = 5 classes.
* ``q2`` (write a function): ``simplex(k)``, k unit prototypes (rows) forming a regular
  simplex, checked for several k against the pairwise cosines of
  :func:`palviz.heads.simplex_prototypes`, to the lesson's tolerance
  :data:`palviz.heads.SIMPLEX_TOL` (what lesson 01 accepts of PAL's own optimiser).
* ``q3`` (predict, then run): with k = 6 prototypes and too few dimensions for a simplex,
  does the largest minimum angle grow, shrink or stay from d = 3 to d = 4? Decided by
  Rankin's bound (exactly 90 degrees at both), not by one optimiser run; the run is shown
  beside it, within :data:`Q3_TOL_DEG` of 90 degrees.

Every expected value is computed from palviz (:mod:`palviz.heads`, :mod:`palviz.metrics`)
or from the geometry's bounds, never from the student's code.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from palviz.exercises.core import (
    Exercise,
    call_student,
    compare_number,
    not_a_function,
    read_choice,
)
from palviz.heads import SIMPLEX_TOL, simplex_prototypes
from palviz.metrics import min_prototype_angle, prototype_cosines

__all__ = ["q1", "q2", "q3"]

Q1_K = 5
Q2_KS = (2, 3, 5, 10)
Q3_K, Q3_DIMS = 6, (3, 4)
#: How close (degrees) an optimiser run must come to the 90 degrees of Rankin's bound for the
#: feedback to call it "at the bound" (a run of PAL's recipe can stop at, e.g., 89.98).
Q3_TOL_DEG = 0.1
CHOICES = ("grows", "shrinks", "stays")


def _off_diagonal(cos: np.ndarray) -> np.ndarray:
    return cos[~np.eye(len(cos), dtype=bool)]


@cache
def _simplex_cosine(k: int) -> float:
    """The pairwise cosine of palviz's closed-form simplex of k classes (all pairs agree)."""
    W = simplex_prototypes(k, k, method="etf", seed=0).double().numpy()
    return float(_off_diagonal(prototype_cosines(W)).mean())


# --- q1 -----------------------------------------------------------------------------------------
def _judge_q1(answer: Any) -> str | None:
    k = Q1_K
    expected = _simplex_cosine(k)
    problem = compare_number(answer, expected, name="your cosine", rtol=1e-4, atol=1e-6)
    if problem is None or "should be a number" in problem:
        return problem
    a = float(answer)
    if math.isclose(a, -1 / k, rel_tol=1e-3):
        return f"{a:.4g} is -1/k; for k = {k} unit vectors summing to zero the cosine is -1/(k-1)"
    if math.isclose(a, math.degrees(math.acos(expected)), rel_tol=1e-3):
        return f"{a:.4g} is the angle in degrees; the question asks for its cosine"
    if math.isclose(a, math.acos(expected), rel_tol=1e-3):
        return f"{a:.4g} is the angle in radians; the question asks for its cosine"
    if abs(a) > 1:
        return f"a cosine lies in [-1, 1], your answer is {a:.4g}"
    return problem


q1 = Exercise(
    key="01.q1",
    question=(
        f"The regular simplex of k = {Q1_K} classes: what is the cosine $w_i^\\top w_j$ between "
        "two of its (unit) prototypes, $i \\neq j$? A number."
    ),
    judge=_judge_q1,
    hint_text=(
        "The k unit prototypes sum to zero. Expand |w_1 + ... + w_k|² = 0: k terms equal 1, "
        "and k(k-1) equal the pairwise cosine."
    ),
    solution_text=f"k = {Q1_K}\nanswer = -1 / (k - 1)  # -0.25\n",
)


# --- q2 -----------------------------------------------------------------------------------------
def _judge_q2(simplex: Any) -> str | None:
    problem = not_a_function(simplex, "def simplex(k): ...; answer = simplex")
    if problem is not None:
        return problem
    for k in Q2_KS:
        out = call_student(f"simplex({k})", simplex, k)
        try:
            if hasattr(out, "detach"):
                out = out.detach().cpu().numpy()
            W = np.asarray(out, dtype=float)
        except (TypeError, ValueError):
            return f"simplex({k}) should return an array, got {type(out).__name__}"
        if W.ndim != 2 or W.shape[0] != k:
            return (
                f"simplex({k}) has shape {W.shape}; it should have one row per class: shape "
                f"({k}, d) with d >= k - 1 = {k - 1}"
            )
        if W.shape[1] < k - 1:
            return f"simplex({k}) has shape {W.shape}: a simplex of {k} points needs d >= {k - 1}"
        norms = np.linalg.norm(W, axis=1)
        if np.max(np.abs(norms - 1.0)) > SIMPLEX_TOL:
            shown = ", ".join(f"{n:.3g}" for n in norms[:4])
            return f"the rows of simplex({k}) have norms {shown}...: normalise every row to 1"
        cos = _off_diagonal(prototype_cosines(W))
        expected = _simplex_cosine(k)
        if np.max(np.abs(cos - expected)) > SIMPLEX_TOL:  # max_{i != j} |cos_ij + 1/(k-1)|
            return (
                f"the pairwise cosines of simplex({k}) range from {cos.min():.4g} to "
                f"{cos.max():.4g}; a regular simplex has every pair at {expected:.4g} "
                f"(within {SIMPLEX_TOL:g}, what lesson 01 accepts of PAL's optimiser)"
            )
    return None


q2 = Exercise(
    key="01.q2",
    question=(
        "Write `simplex(k)`: a `[k, d]` array (or tensor) whose rows are k unit prototypes "
        "forming a regular simplex, $w_i^\\top w_j = -\\frac{1}{k-1}$ (any rotation, any "
        "$d \\geq k - 1$). It is checked for k = "
        + ", ".join(map(str, Q2_KS))
        + f" against palviz's `simplex_prototypes`, every norm and cosine within {SIMPLEX_TOL:g} "
        "(the lesson's tolerance)."
    ),
    judge=_judge_q2,
    hint_text=(
        "Start from the identity matrix (k orthonormal rows), subtract the mean row from every "
        "row (that is M = I - 11ᵀ/k), then normalise each row."
    ),
    solution_text=(
        "import numpy as np\n\n\n"
        "def simplex(k):\n"
        "    M = np.eye(k) - np.ones((k, k)) / k  # centred identity: rows sum to zero\n"
        "    return M / np.linalg.norm(M, axis=1, keepdims=True)\n\n\n"
        "answer = simplex\n"
    ),
)


# --- q3 -----------------------------------------------------------------------------------------
def _largest_min_angle(k: int, d: int) -> float | None:
    """The largest minimum pairwise angle (degrees) of k unit vectors in R^d where the bounds
    settle it: 90 when k >= d + 2 (Rankin: some pair is at most 90 degrees apart) and 2d >= k
    (the ± coordinate axes reach 90); ``None`` elsewhere (not needed here)."""
    return 90.0 if k >= d + 2 and 2 * d >= k else None


def _q3_truth() -> str:
    """The answer the bounds give, from d = 3 to d = 4 for k = 6: 90 degrees at both."""
    before, after = (_largest_min_angle(Q3_K, d) for d in Q3_DIMS)
    if before is None or after is None:
        raise ValueError(f"q3's bounds do not settle k = {Q3_K}, d = {Q3_DIMS}")
    return "stays" if after == before else ("grows" if after > before else "shrinks")


@cache
def _q3_angles() -> dict[int, float]:
    """The minimum angle (degrees) PAL's recipe reaches for k = 6 at d = 3 and d = 4 (seed 0),
    as the notebook's run cell computes it: shown beside the bound, not the answer."""
    return {
        d: min_prototype_angle(simplex_prototypes(Q3_K, d, method="optimize", seed=0))
        for d in Q3_DIMS
    }


def _judge_q3(answer: Any) -> str | None:
    picked, problem = read_choice(answer, CHOICES)
    if problem:
        return problem
    truth = _q3_truth()
    if picked == truth:
        return None
    angles = _q3_angles()
    run = ", ".join(
        f"{angles[d]:.3f}° at d = {d}"
        + (f" (within {Q3_TOL_DEG:g}° of 90°)" if abs(angles[d] - 90) <= Q3_TOL_DEG else "")
        for d in Q3_DIMS
    )
    simplex_angle = math.degrees(math.acos(-1 / (Q3_K - 1)))
    return (
        f"you answered {picked!r}, but the largest minimum angle is 90° at d = {Q3_DIMS[0]} and "
        f"at d = {Q3_DIMS[1]}: it {truth}. Rankin's bound caps it at 90° whenever k >= d + 2, "
        f"and from 2d >= k on the ± coordinate axes reach 90°; nothing wider exists until "
        f"d = k - 1 = {Q3_K - 1}, where the simplex gives {simplex_angle:.2f}°. PAL's recipe "
        f"(seed 0) reaches {run}"
    )


q3 = Exercise(
    key="01.q3",
    question=(
        f"Predict, then run: for k = {Q3_K} unit prototypes, where no simplex fits "
        "($d < k - 1$), the largest minimum pairwise angle they can have (the best packing; "
        'PAL\'s recipe, `simplex_prototypes(k, d, method="optimize")`, minimises $L_0$, not '
        f"this). From d = {Q3_DIMS[0]} to "
        f"d = {Q3_DIMS[1]}: does it grow, shrink or stay? Answer "
        + ", ".join(f'`"{c}"`' for c in CHOICES[:-1])
        + f' or `"{CHOICES[-1]}"`. The run cell below then shows where the recipe stops.'
    ),
    judge=_judge_q3,
    hint_text=(
        "With 2d >= k you can place the k points on the ± coordinate axes: every pair at 90° or "
        "180°. Can k = 6 points in 4 dimensions all be more than 90° apart? (Rankin: k >= d + 2 "
        "unit vectors always have a pair at most 90° apart.)"
    ),
    solution_text='answer = "stays"  # 90° at d = 3 and at d = 4 (Rankin\'s bound)\n',
)
