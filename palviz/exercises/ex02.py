"""Exercises of lesson 02, minority collapse (Fang et al. 2021; PAL Lemma 3.1 and a
layer-peeled analogue of PAL Theorem 4.1; docs/reference.md 5).

* ``q1`` (compute a number): the normalised minimal margin $\\gamma_{\\min}$ of anchored simplex
  prototypes for K = 10 classes, each feature on its own prototype.
* ``q2`` (write a function): ``mean_cosine(W, classes)``, the mean pairwise cosine among some
  classifiers, checked on layer-peeled solutions against
  :func:`palviz.metrics.mean_pairwise_cosine`.
* ``q3`` (predict, then run): as the imbalance ratio R grows from 1 to 1000, does the learned
  *majority* classifiers' mean cosine rise, fall or stay?
* ``q4`` (compute a number): the bound $\\gamma_{\\min} \\leq \\frac{k}{k-1}$ is reached only by
  the regular simplex, which needs $d \\geq k - 1$; what is $\\gamma_{\\min}$ of k = 4 unit
  prototypes at the corners of a square (d = 2), each feature on its own prototype?

Every expected value is computed from palviz (:mod:`palviz.theory.layer_peeled`,
:mod:`palviz.heads`, :mod:`palviz.metrics`), never from the student's code.
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
from palviz.heads import simplex_prototypes
from palviz.metrics import mean_pairwise_cosine, sample_margins
from palviz.theory.layer_peeled import minority_collapse_sweep

__all__ = ["SWEEP", "q1", "q2", "q3", "q4"]

Q1_K = 10
#: The layer-peeled problem of q2 and q3 (the notebook's run cell makes the same call).
SWEEP = dict(ratios=[1.0, 10.0, 1000.0], k_major=5, k_minor=5, E_W=5.0, E_H=5.0, steps=100, seed=0)
CHOICES = ("rises", "falls", "stays")


@cache
def _sweep() -> dict[str, np.ndarray]:
    return minority_collapse_sweep(**SWEEP)


# --- q1 -----------------------------------------------------------------------------------------
def _judge_q1(answer: Any) -> str | None:
    K = Q1_K
    W = simplex_prototypes(K, K, method="etf", seed=0).double().numpy()
    # feature h_k = w_k: logits W h_k, margin w_k.w_k - max_{j != k} w_j.w_k
    expected = float(sample_margins(W @ W.T, np.arange(K)).min())
    problem = compare_number(answer, expected, name="your margin", rtol=1e-4)
    if problem is None or "should be a number" in problem:
        return problem
    a = float(answer)
    if math.isclose(a, 1 - 1 / (K - 1), rel_tol=1e-3):
        return (
            f"{a:.4g} is 1 - 1/(K-1): the strongest wrong logit is w_j·w_k = -1/(K-1), and "
            "subtracting a negative number adds"
        )
    if math.isclose(a, 1.0, rel_tol=1e-4):
        return "1 is the target logit w_k·w_k alone; the margin subtracts the largest wrong logit"
    if math.isclose(a, -1 / (K - 1), rel_tol=1e-3) or math.isclose(a, 1 / (K - 1), rel_tol=1e-3):
        return f"{a:.4g} is (minus) the wrong logit alone; the margin is target minus it"
    return problem


q1 = Exercise(
    key="02.q1",
    question=(
        f"Anchored simplex prototypes, K = {Q1_K} classes, features and prototypes of unit "
        "length, and every class's feature exactly on its own prototype, $h_k = w_k$. What is "
        "the minimal margin $\\gamma_{\\min} = \\min_k \\big(w_k^\\top h_k - \\max_{j \\neq k} "
        "w_j^\\top h_k\\big)$? A number."
    ),
    judge=_judge_q1,
    hint_text=(
        "The target logit is w_k·w_k = 1; every wrong logit is a pairwise cosine of the simplex, "
        "-1/(K-1). The margin is the first minus the largest of the others."
    ),
    solution_text=f"K = {Q1_K}\nanswer = 1 + 1 / (K - 1)  # 1.1111\n",
)


# --- q2 -----------------------------------------------------------------------------------------
def _variants(W: np.ndarray, classes: list[int]) -> dict[str, float]:
    """What common slips compute, to name them."""
    V = W[classes]
    m = len(classes)
    unit = V / np.linalg.norm(V, axis=1, keepdims=True)
    cos, dots = unit @ unit.T, V @ V.T
    off = ~np.eye(m, dtype=bool)
    return {
        "the mean includes the diagonal i = j (cosine 1): average over the m(m-1) pairs "
        "i != j only": float(cos.mean()),
        "that is the mean dot product w_i·w_j: divide by the norms to get cosines": float(
            dots[off].mean()
        ),
        "that is the mean over all classes, not over `classes`": float(mean_pairwise_cosine(W)),
    }


def _judge_q2(mean_cosine: Any) -> str | None:
    problem = not_a_function(mean_cosine, "def mean_cosine(W, classes): ...; answer = mean_cosine")
    if problem is not None:
        return problem
    sweep = _sweep()
    k_major, K = SWEEP["k_major"], SWEEP["k_major"] + SWEEP["k_minor"]
    groups = {"majority": list(range(k_major)), "minority": list(range(k_major, K))}
    groups["mixed"] = [0, 3, K - 2]
    for i, R in enumerate(SWEEP["ratios"]):
        W = np.array(sweep["W"][i])
        for label, classes in groups.items():
            call = f"mean_cosine(W at R = {R:g}, {label} classes {classes})"
            value = call_student(call, mean_cosine, W.copy(), list(classes))
            shape = np.shape(value) if hasattr(value, "shape") else None
            if shape is not None and int(np.prod(shape)) != 1:
                return f"{call} should return one number, got an array of shape {tuple(shape)}"
            expected = mean_pairwise_cosine(W, classes)
            problem = compare_number(value, expected, name=call, rtol=1e-6, atol=1e-9)
            if problem is None:
                continue
            if "should be a number" not in problem:
                for slip, wrong in _variants(W, classes).items():
                    if math.isclose(float(value), wrong, rel_tol=1e-6, abs_tol=1e-9):
                        return (
                            f"{call} returned {float(value):.6g}, expected {expected:.6g}: {slip}"
                        )
            return f"{problem}; expected {expected:.6g}"
    return None


q2 = Exercise(
    key="02.q2",
    question=(
        "Write `mean_cosine(W, classes)`: the mean pairwise cosine "
        "$\\frac{1}{m(m-1)}\\sum_{i \\neq j} \\hat w_i^\\top \\hat w_j$ among the rows of `W` "
        "(`[K, d]`) listed in `classes` (m of them). It is checked on learned layer-peeled "
        "solutions ($k_A = k_B = 5$, $E_W = E_H = 5$, R = 1, 10, 1000) for the majority, the "
        "minority and a mixed set of classes, against palviz's `mean_pairwise_cosine`."
    ),
    judge=_judge_q2,
    hint_text=(
        "Take the rows W[classes], divide each by its norm, form the m x m matrix of dot "
        "products, and average its entries off the diagonal."
    ),
    solution_text=(
        "import numpy as np\n\n\n"
        "def mean_cosine(W, classes):\n"
        "    V = np.asarray(W, dtype=float)[list(classes)]\n"
        "    V = V / np.linalg.norm(V, axis=1, keepdims=True)\n"
        "    C = V @ V.T\n"
        "    m = len(V)\n"
        "    return (C.sum() - np.trace(C)) / (m * (m - 1))\n\n\n"
        "answer = mean_cosine\n"
    ),
)


# --- q3 -----------------------------------------------------------------------------------------
def _judge_q3(answer: Any) -> str | None:
    picked, problem = read_choice(answer, CHOICES)
    if problem:
        return problem
    sweep = _sweep()
    major, minor = sweep["majority_cosine"], sweep["minority_cosine"]
    change = float(major[-1] - major[0])
    truth = "stays" if abs(change) < 1e-3 else ("rises" if change > 0 else "falls")
    if picked == truth:
        return None
    r0, r1 = SWEEP["ratios"][0], SWEEP["ratios"][-1]
    return (
        f"you answered {picked!r}, but the learned majority classifiers' mean cosine goes from "
        f"{major[0]:+.4f} at R = {r0:g} to {major[-1]:+.4f} at R = {r1:g}: it {truth}. While "
        f"the minority classifiers draw together ({minor[0]:+.4f} to {minor[-1]:+.4f}), the "
        f"majority ones spread apart towards their own simplex, -1/(k_A - 1) = "
        f"{-1 / (SWEEP['k_major'] - 1):+.4f}, taking the room the minority classes give up"
    )


q3 = Exercise(
    key="02.q3",
    question=(
        "Predict, then run: the layer-peeled model with learned classifiers, $k_A = k_B = 5$, "
        "$E_W = E_H = 5$. As the imbalance ratio R grows from 1 to 1000, the minority "
        "classifiers draw together. What does the mean pairwise cosine of the *majority* "
        "classifiers do? Answer "
        + ", ".join(f'`"{c}"`' for c in CHOICES[:-1])
        + f' or `"{CHOICES[-1]}"`.'
    ),
    judge=_judge_q3,
    hint_text=(
        "The minority loss is down-weighted by R, so the solution cares more and more about the "
        "majority classes alone. What is the best configuration for k_A classes on their own?"
    ),
    solution_text='answer = "falls"  # towards -1/(k_A - 1) = -0.25\n',
)


# --- q4 -----------------------------------------------------------------------------------------
Q4_K = 4


def _square() -> np.ndarray:
    """K = 4 unit prototypes in the plane, 90 degrees apart."""
    angles = np.arange(Q4_K) * (2 * math.pi / Q4_K)
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)


def _judge_q4(answer: Any) -> str | None:
    K = Q4_K
    W = _square()
    # feature z_k = w_k: logits W z_k, margin w_k.w_k - max_{j != k} w_j.w_k
    expected = float(sample_margins(W @ W.T, np.arange(K)).min())
    problem = compare_number(answer, expected, name="your margin", rtol=1e-4, atol=1e-9)
    if problem is None or "should be a number" in problem:
        return problem
    a = float(answer)
    if math.isclose(a, K / (K - 1), rel_tol=1e-3):
        return (
            f"{a:.4g} is the bound k/(k-1), which only the regular simplex reaches; the "
            f"simplex of k = {K} needs d >= k - 1 = {K - 1}, and the square lies in d = 2"
        )
    if math.isclose(a, 2.0, rel_tol=1e-4):
        return (
            "2 is 1 - cos 180°, the opposite corner; the margin subtracts the *largest* "
            "wrong logit, that of a neighbour at 90°"
        )
    return problem


q4 = Exercise(
    key="02.q4",
    question=(
        "The bound $\\gamma_{\\min} \\leq \\frac{k}{k-1}$ holds with equality only for the "
        "regular simplex, which needs $d \\geq k - 1$. Take k = 4 unit prototypes in the plane "
        "(d = 2) at the corners of a square, $w_j = (\\cos 90°j, \\sin 90°j)$ for "
        "j = 0, 1, 2, 3, and every "
        "feature on its own prototype, $z_k = w_k$. What is their minimal margin "
        "$\\gamma_{\\min}$? A number (compare it with $\\frac{k}{k-1}$)."
    ),
    judge=_judge_q4,
    hint_text=(
        "The target logit is w_k·w_k = 1. The wrong logits are the cosines with the other "
        "three corners: two neighbours at 90° and the opposite corner at 180°. The margin "
        "subtracts the largest of them."
    ),
    solution_text=(
        "answer = 1 - 0  # cos 0° minus the largest wrong cosine, cos 90° = 0; below 4/3\n"
    ),
)
