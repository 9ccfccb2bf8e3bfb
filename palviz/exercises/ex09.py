"""Exercises of lesson 09, diagnosing a trained model (calibration, post-hoc re-balancing; the
anchored head of docs/reference.md 5).

* ``q1`` (compute a number): the expected calibration error of eight predictions in two bins.
* ``q2`` (compute a number): one logit after post-hoc logit adjustment.
* ``q3`` (predict, then run): does tau-normalising an anchored head change its predictions?

Every expected value comes from palviz (:mod:`palviz.calibration`, :mod:`palviz.heads`), never
from the student's code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from palviz.calibration import expected_calibration_error, logit_adjust, tau_normalize
from palviz.exercises import Exercise, compare_number, read_choice
from palviz.heads import AnchoredHead

__all__ = ["q1", "q2", "q3", "q1_probabilities", "q3_changed"]

Q1_CONFIDENCE = (0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.55, 0.3)
Q1_CORRECT = (1, 1, 0, 1, 1, 0, 0, 1)
Q1_BINS = 2  # the question's two bins, (0, 0.5] and (0.5, 1]
Q1_CLASSES = 4
Q2_COUNTS = (90, 9, 1)
Q2_LOGITS = (4.0, 2.0, 0.5)
Q2_CLASS = 2
Q2_TAU = 1.0
Q3_DIM, Q3_K, Q3_TAU = 16, 10, 1.0
CHOICES = ("change", "stay")


def _close(a: float, b: float, rtol: float = 1e-3) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-9)


# --- q1 ------------------------------------------------------------------------------------------
def q1_probabilities() -> tuple[np.ndarray, np.ndarray]:
    """q1's predictions as palviz reads them: probability rows ``[8, 4]`` whose top-1
    confidence is ``Q1_CONFIDENCE`` on class 0 (the rest spread evenly), and labels ``[8]``
    that are 0 where ``Q1_CORRECT`` is 1 and 1 otherwise."""
    conf = np.array(Q1_CONFIDENCE)
    probs = np.repeat(((1 - conf) / (Q1_CLASSES - 1))[:, None], Q1_CLASSES, axis=1)
    probs[:, 0] = conf
    targets = np.where(np.array(Q1_CORRECT) == 1, 0, 1)
    return probs, targets


def _judge_q1(answer: Any) -> str | None:
    probs, targets = q1_probabilities()
    expected = expected_calibration_error(probs, targets, bins=Q1_BINS, kind="probs")
    problem = compare_number(answer, expected, name="your ECE", rtol=1e-3, atol=1e-6)
    if problem is None or "should be a number" in problem:
        return problem
    a = float(answer)
    conf, ok = np.array(Q1_CONFIDENCE), np.array(Q1_CORRECT, dtype=float)
    high = conf > 0.5  # the bin (0.5, 1]; the other is (0, 0.5]
    gaps = [abs(ok[m].mean() - conf[m].mean()) for m in (high, ~high)]
    if _close(a, float(np.mean(gaps))):
        return (
            f"{a:.4g} is the plain mean of the two bins' gaps; weight each gap by the share of "
            "the samples in its bin, |B_b| / N"
        )
    if _close(abs(a), abs(ok.mean() - conf.mean())):
        return (
            f"{a:.4g} is the gap between the overall accuracy and the overall confidence (one "
            "bin, or the bins' gaps added with their signs); take |acc - conf| in each bin first"
        )
    if _close(a, 100 * expected):
        return f"{a:.4g} is a percentage; the ECE is a fraction in [0, 1]"
    return problem


q1 = Exercise(
    key="09.q1",
    question=(
        f"Eight predictions with top-1 confidences `{list(Q1_CONFIDENCE)}`; the ones marked 1 in "
        f"`{list(Q1_CORRECT)}` are right. With two equal-width confidence bins, (0, 0.5] and "
        "(0.5, 1], what is the expected calibration error "
        "$\\sum_b \\frac{|B_b|}{N}\\,|\\mathrm{acc}(B_b) - \\mathrm{conf}(B_b)|$? A number."
    ),
    judge=_judge_q1,
    hint_text=(
        "Put each prediction in its bin; per bin, take the fraction right and the mean confidence; "
        "add |fraction right - mean confidence| times the bin's share of the eight predictions."
    ),
    solution_text=(
        "import numpy as np\n\n"
        f"conf = np.array({list(Q1_CONFIDENCE)})\n"
        f"correct = np.array({list(Q1_CORRECT)})\n"
        "answer = 0.0\n"
        "for in_bin in (conf <= 0.5, conf > 0.5):\n"
        "    gap = abs(correct[in_bin].mean() - conf[in_bin].mean())\n"
        "    answer += in_bin.mean() * gap  # |B_b| / N times |acc - conf|\n"
    ),
)


# --- q2 ------------------------------------------------------------------------------------------
def _judge_q2(answer: Any) -> str | None:
    z = np.array([Q2_LOGITS])
    expected = float(logit_adjust(z, Q2_COUNTS, Q2_TAU)[0, Q2_CLASS])
    problem = compare_number(answer, expected, name="your adjusted logit", rtol=1e-3)
    if problem is None or "should be a number" in problem:
        return problem
    a, n = float(answer), np.array(Q2_COUNTS, dtype=float)
    zc, prior = Q2_LOGITS[Q2_CLASS], n[Q2_CLASS] / n.sum()
    if _close(a, zc - Q2_TAU * math.log10(prior)):
        return f"{a:.4g} uses log10; the adjustment uses the natural logarithm of the prior"
    if _close(a, zc + Q2_TAU * math.log(prior)):
        return (
            f"{a:.4g} adds tau log pi_j; post-hoc adjustment subtracts it, raising the rare "
            "classes' logits"
        )
    if _close(a, zc):
        return (
            f"{a:.4g} is the logit before the adjustment (or z_j - tau log n_j, and log 1 = 0): "
            "subtract tau log pi_j with the prior pi_j = n_j / sum_k n_k"
        )
    if _close(a, zc - Q2_TAU * math.log(n[Q2_CLASS])):
        return f"{a:.4g} subtracts log n_j; the prior is pi_j = n_j / sum_k n_k"
    if _close(a, zc - Q2_TAU * prior) or _close(a, zc / prior):
        return f"{a:.4g} uses pi_j itself; subtract tau times its logarithm"
    return problem


q2 = Exercise(
    key="09.q2",
    question=(
        f"Three classes with training counts `{list(Q2_COUNTS)}`. A test image has logits "
        f"`{list(Q2_LOGITS)}`. After post-hoc logit adjustment with $\\tau = {Q2_TAU:g}$, "
        "$\\tilde z_j = z_j - \\tau\\log\\pi_j$ with $\\pi_j = n_j / \\sum_k n_k$, what is the "
        f"adjusted logit of class {Q2_CLASS}? A number. (Which class is predicted now?)"
    ),
    judge=_judge_q2,
    hint_text=(
        "pi_2 = 1 / 100; its natural logarithm is negative, so subtracting it raises the logit."
    ),
    solution_text=(
        "import math\n\n"
        f"counts, logits = {list(Q2_COUNTS)}, {list(Q2_LOGITS)}\n"
        f"prior = counts[{Q2_CLASS}] / sum(counts)\n"
        f"answer = logits[{Q2_CLASS}] - {Q2_TAU:g} * math.log(prior)  # 5.105: class 2 now wins\n"
    ),
)


# --- q3 ------------------------------------------------------------------------------------------
def q3_changed() -> dict[str, int]:
    """How many of 200 seeded feature vectors change their prediction when the rows of two
    heads are tau-normalised at tau = 1: palviz's anchored head (unit simplex prototypes) and a
    linear head with the same directions, each row scaled by a different norm."""
    with torch.random.fork_rng(devices=[]), torch.no_grad():  # leaves the global seed alone
        torch.manual_seed(0)
        h = torch.rand(200, Q3_DIM).double().numpy()
        W = AnchoredHead(Q3_DIM, Q3_K).prototypes.double().numpy()
    lengths = np.linspace(3.0, 0.5, Q3_K)[:, None]  # long rows for the head classes
    out = {}
    for name, rows in (("anchored head", W), ("linear head", lengths * W)):
        before = (h @ rows.T).argmax(axis=1)
        after = (h @ tau_normalize(rows, Q3_TAU).T).argmax(axis=1)
        out[name] = int((before != after).sum())
    return out


def _judge_q3(answer: Any) -> str | None:
    picked, problem = read_choice(answer, CHOICES)
    if problem:
        return problem
    changed = q3_changed()
    truth = "stay" if changed["anchored head"] == 0 else "change"
    if picked == truth:
        return None
    return (
        f"you answered {picked!r}, but tau-normalising palviz's AnchoredHead changes "
        f"{changed['anchored head']} of 200 predictions: they {truth}. Its rows all have norm 1, "
        "so w_c / ||w_c||^tau = w_c; a linear head whose rows have different norms changes "
        f"{changed['linear head']} of them"
    )


q3 = Exercise(
    key="09.q3",
    question=(
        "Predict, then run: the anchored head of PAL (`palviz.heads.AnchoredHead`) has unit "
        f"prototypes at a regular simplex. Tau-normalise its rows with $\\tau = {Q3_TAU:g}$, "
        "$\\tilde{\\mathbf w}_c = \\mathbf w_c / \\lVert\\mathbf w_c\\rVert^\\tau$: do its "
        "predictions "
        + " / ".join(f'`"{c}"`' for c in CHOICES)
        + "? The cell after the check counts them, and for a linear head whose rows have "
        "different norms."
    ),
    judge=_judge_q3,
    hint_text="What is ||w_c|| for every row of the anchored head, and what is 1 to any power?",
    solution_text='answer = "stay"  # every ||w_c|| = 1, so w_c / ||w_c||^tau = w_c\n',
)
