"""Exercises of lesson 08, feature geometry (PAL Sec. 3-4 and Fig. 2-3; the heads of
docs/reference.md 5).

* ``q1`` (compute a number): the mean feature norm of one class of a small feature matrix.
* ``q2`` (compute a number): the minimum prototype angle, in degrees, of the regular simplex of
  k = 4 classes.
* ``q3`` (write a function): ``feature_norms_per_class(features, targets, num_classes)``,
  checked against :func:`palviz.metrics.feature_norms_per_class`.
* ``q4`` (predict, then run): doubling every feature, what happens to a cosine head's logits?

Every expected value comes from palviz (:mod:`palviz.metrics`, :mod:`palviz.heads`), never
from the student's code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from palviz.exercises import (
    Exercise,
    call_student,
    compare_array,
    compare_number,
    not_a_function,
    read_choice,
)
from palviz.heads import AnchoredHead, CosineHead, simplex_prototypes
from palviz.metrics import feature_norms_per_class, min_prototype_angle

__all__ = ["q1", "q2", "q3", "q4"]

Q1_FEATURES = ((3.0, 4.0), (6.0, 8.0), (1.0, 0.0), (0.0, 2.0), (2.0, 2.0))
Q1_TARGETS = (0, 0, 1, 1, 1)
Q1_CLASS = 1
Q2_K = 4
Q4_DIM, Q4_K = 16, 10
CHOICES = ("double", "stay", "halve")


def _close(a: float, b: float, rtol: float = 1e-3) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12)


def _q3_cases() -> list[tuple[np.ndarray, np.ndarray, int]]:
    """(features, targets, num_classes): q1's matrix, and a seeded 60 x 8 one of 4 classes."""
    rng = np.random.default_rng(0)
    targets = np.repeat(np.arange(4), [30, 15, 10, 5])
    features = np.abs(rng.normal(size=(60, 8))) * (1 + targets[:, None])
    return [
        (np.array(Q1_FEATURES), np.array(Q1_TARGETS), 2),
        (features, targets, 4),
    ]


# --- q1 ------------------------------------------------------------------------------------------
def _judge_q1(answer: Any) -> str | None:
    F, y, c = np.array(Q1_FEATURES), np.array(Q1_TARGETS), Q1_CLASS
    expected = float(feature_norms_per_class(F, y, 2)[c])
    problem = compare_number(answer, expected, name="your mean norm", rtol=1e-3)
    if problem is None or "should be a number" in problem:
        return problem
    a, rows = float(answer), F[y == c]
    if _close(a, float(np.linalg.norm(rows.mean(axis=0)))):
        return (
            f"{a:.4g} is the norm of the class's mean feature; the statistic is the mean of the "
            "norms, (1/n_c) sum ||z_i||, which is never smaller"
        )
    if _close(a, float(np.mean(np.sum(rows**2, axis=1)))):
        return f"{a:.4g} averages the squared norms ||z_i||^2; take the square root of each first"
    if _close(a, float(np.sum(np.linalg.norm(rows, axis=1)))):
        return f"{a:.4g} is the sum of the norms; divide by the class's n_c = {len(rows)} samples"
    if _close(a, float(np.mean(np.linalg.norm(F, axis=1)))):
        return f"{a:.4g} averages over every sample; take only those with label {c}"
    return problem


q1 = Exercise(
    key="08.q1",
    question=(
        f"Five penultimate features (rows) `{[list(r) for r in Q1_FEATURES]}` with labels "
        f"`{list(Q1_TARGETS)}`. What is the mean feature norm "
        f"$\\frac{{1}}{{n_c}}\\sum_{{i: y_i = c}} \\|\\mathbf z_i\\|_2$ of class $c = {Q1_CLASS}$ "
        "(section 4's left panel)? A number."
    ),
    judge=_judge_q1,
    hint_text="Take the Euclidean norm of each row with label 1, then their mean.",
    solution_text=(
        "import numpy as np\n\n"
        f"features = np.array({[list(r) for r in Q1_FEATURES]})\n"
        f"targets = np.array({list(Q1_TARGETS)})\n"
        f"answer = np.linalg.norm(features[targets == {Q1_CLASS}], axis=1).mean()  # 1.943\n"
    ),
)


# --- q2 ------------------------------------------------------------------------------------------
def _judge_q2(answer: Any) -> str | None:
    k = Q2_K
    expected = min_prototype_angle(simplex_prototypes(k, k, method="etf", seed=0))
    problem = compare_number(answer, expected, name="your angle", rtol=1e-4)
    if problem is None or "should be a number" in problem:
        return problem
    a = float(answer)
    if _close(a, math.radians(expected)):
        return f"{a:.4g} is the angle in radians; the question asks for degrees"
    if _close(a, -1 / (k - 1)):
        return f"{a:.4g} is the cosine -1/(k-1); the question asks for the angle, arccos of it"
    if _close(a, math.degrees(math.acos(-1 / k))):
        return f"{a:.4g} is arccos(-1/k); the simplex's cosine is -1/(k-1)"
    if _close(a, 90.0):
        return f"{a:.4g} is orthogonal; the simplex's prototypes are more than 90° apart"
    return problem


q2 = Exercise(
    key="08.q2",
    question=(
        f"PAL anchors $k = {Q2_K}$ class vectors at a regular simplex. What is the smallest angle "
        "between two of them, in degrees (what `metrics.min_prototype_angle` reports)? A number."
    ),
    judge=_judge_q2,
    hint_text="Every pair has cosine -1/(k-1); the angle is its arccos, in degrees.",
    solution_text=(
        "import math\n\n"
        f"k = {Q2_K}\n"
        "answer = math.degrees(math.acos(-1 / (k - 1)))  # 109.47, the tetrahedron\n"
    ),
)


# --- q3 ------------------------------------------------------------------------------------------
def _judge_q3(fn: Any) -> str | None:
    problem = not_a_function(
        fn,
        "def feature_norms_per_class(features, targets, num_classes): ...; "
        "answer = feature_norms_per_class",
    )
    if problem is not None:
        return problem
    for F, y, k in _q3_cases():
        call = f"feature_norms_per_class(<{F.shape[0]} x {F.shape[1]} features>, targets, {k})"
        out = call_student(call, fn, F.copy(), y.copy(), k)
        expected = feature_norms_per_class(F, y, k)
        problem = compare_array(out, expected, name=call, rtol=1e-5, atol=1e-8)
        if problem is None:
            continue
        got = np.asarray(out.detach().numpy() if hasattr(out, "detach") else out, dtype=float)
        if got.shape != expected.shape:
            return f"{problem}: one number per class"
        norms = np.linalg.norm(F, axis=1)
        sizes = np.bincount(y, minlength=k)
        if np.allclose(got, np.bincount(y, weights=norms**2, minlength=k) / sizes):
            return f"{call} averages squared norms; take the square root of each ||z_i||^2 first"
        if np.allclose(got, np.bincount(y, weights=norms, minlength=k)):
            return f"{call} sums the norms of each class; divide by its number of samples"
        means = np.array([np.linalg.norm(F[y == c].mean(axis=0)) for c in range(k)])
        if np.allclose(got, means):
            return f"{call} gives the norm of each class mean; the statistic is the mean of norms"
        return problem
    return None


q3 = Exercise(
    key="08.q3",
    question=(
        "Write `feature_norms_per_class(features, targets, num_classes)`: for features `[N, d]` "
        "(rows) and labels `[N]`, the mean norm of each class's features, one number per class. "
        "It is checked on exercise 8.1's matrix and on a seeded 60 x 8 matrix of 4 classes "
        "against `palviz.metrics.feature_norms_per_class`."
    ),
    judge=_judge_q3,
    hint_text=(
        "norms = np.linalg.norm(features, axis=1); then, for each class c, the mean of "
        "norms[targets == c]."
    ),
    solution_text=(
        "import numpy as np\n\n\n"
        "def feature_norms_per_class(features, targets, num_classes):\n"
        "    norms = np.linalg.norm(np.asarray(features, dtype=float), axis=1)\n"
        "    targets = np.asarray(targets)\n"
        "    return np.array([norms[targets == c].mean() for c in range(num_classes)])\n\n\n"
        "answer = feature_norms_per_class\n"
    ),
)


# --- q4 ------------------------------------------------------------------------------------------
def q4_ratios() -> dict[str, float]:
    """The median ratio logits(2 z) / logits(z) of palviz's cosine head (LDAM-DRW, ELM-DRW)
    and plain PAL head (CE + PAL) on seeded features: what the run cell prints."""
    with torch.random.fork_rng(devices=[]), torch.no_grad():  # leaves the global seed alone
        torch.manual_seed(0)
        z = torch.rand(5, Q4_DIM) + 0.1
        heads = {
            "cosine head": CosineHead(Q4_DIM, Q4_K),
            "PAL head": AnchoredHead(Q4_DIM, Q4_K, normalize=False),
        }
        return {name: float((head(2 * z) / head(z)).median()) for name, head in heads.items()}


def _judge_q4(answer: Any) -> str | None:
    picked, problem = read_choice(answer, CHOICES)
    if problem:
        return problem
    ratios = q4_ratios()
    ratio = ratios["cosine head"]
    truth = "stay" if _close(ratio, 1.0, 1e-5) else ("double" if _close(ratio, 2.0, 1e-5) else "")
    if picked == truth:
        return None
    return (
        f"you answered {picked!r}, but palviz's CosineHead gives logits(2z) / logits(z) = "
        f"{ratio:.4g}: they {truth}. A cosine head computes s cos(z, w_j) and normalises z "
        f"first, so only directions count; the plain PAL head W z gives a ratio of "
        f"{ratios['PAL head']:.4g}, its logits double"
    )


q4 = Exercise(
    key="08.q4",
    question=(
        "Predict, then run: LDAM-DRW and ELM-DRW use a cosine head (`palviz.heads.CosineHead`). "
        "If every penultimate feature $\\mathbf z$ is multiplied by 2, do its logits "
        + " / ".join(f'`"{c}"`' for c in CHOICES)
        + "? The cell after the check computes it, and the same for CE + PAL's head."
    ),
    judge=_judge_q4,
    hint_text="The cosine logit is s * (z / ||z||) . (w_j / ||w_j||). What does 2z / ||2z|| equal?",
    solution_text='answer = "stay"  # cos(2z, w) = cos(z, w); the PAL head W z doubles\n',
)
