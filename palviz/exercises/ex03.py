"""Exercises of lesson 03, weight decay, norms and over-confidence (PAL Sec. 4, Fig. 2-3,
Sec. B.1; docs/reference.md 1 and 5).

* ``q1`` (compute a number): how many few-shot classes CIFAR-100-LT has at imbalance ratio
  100 (:func:`palviz.data.long_tail_counts`, :func:`palviz.metrics.shot_groups`).
* ``q2`` (write a function): ``confidence_per_class(logits, targets, num_classes)``, the mean
  top softmax probability per true class, checked against
  :func:`palviz.metrics.mean_confidence_per_class`.
* ``q3`` (predict, then run): doubling every logit (twice the feature norm): does the mean
  confidence grow, shrink or stay?
* ``q4`` (predict, then run): and the per-class accuracy?
* ``q5`` (compute a number): the minimal sample margin at the minimiser of PAL's
  weight-decay theorem (anchored prototypes, softmax loss, a feature budget E), computed from
  :func:`palviz.heads.simplex_prototypes`.

Every expected value is computed from palviz (:mod:`palviz.data`, :mod:`palviz.heads`,
:mod:`palviz.metrics`),
never from the student's code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from palviz.data import long_tail_counts
from palviz.exercises.core import (
    Exercise,
    call_student,
    compare_array,
    compare_number,
    not_a_function,
    read_choice,
)
from palviz.heads import simplex_prototypes
from palviz.metrics import mean_confidence_per_class, per_class_accuracy, shot_groups

__all__ = ["demo_logits", "q1", "q2", "q3", "q4", "q5"]

Q1 = dict(n_max=500, num_classes=100, imbalance_ratio=100)  # CIFAR-100-LT, rho = 100
CHOICES = ("grows", "shrinks", "stays")


def demo_logits(
    num_classes: int = 10, n: int = 1000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The logits and targets q2-q4 use: standard normal logits, the true class's raised by
    1.5 (a classifier that is right more often than chance), targets uniform."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, num_classes, size=n)
    z = rng.normal(size=(n, num_classes))
    z[np.arange(n), y] += 1.5
    return z, y


# --- q1 -----------------------------------------------------------------------------------------
def _judge_q1(answer: Any) -> str | None:
    counts = long_tail_counts(**Q1)
    groups = {name: len(idx) for name, idx in shot_groups(counts).items()}
    expected = groups["few"]
    problem = compare_number(answer, expected, name="your count", rtol=0.0, atol=0.0)
    if problem is None or "should be a number" in problem:
        return problem
    others = [name for name in ("many", "medium") if answer == groups[name]]
    if others:
        return (
            f"{answer} is the number of {' and of '.join(n + '-shot' for n in others)} classes; "
            "few-shot means "
            f"fewer than 20 "
            f"training images (the counts run from {counts[0]} down to {counts[-1]})"
        )
    return (
        f"{problem}: count the classes with n_c < 20 among long_tail_counts(500, 100, 100), "
        f"which runs from {counts[0]} down to {counts[-1]}"
    )


q1 = Exercise(
    key="03.q1",
    question=(
        "CIFAR-100-LT with imbalance ratio $\\rho = 100$ (500 training images in the largest "
        "class, exponential profile): how many of its 100 classes are few-shot (fewer than 20 "
        "training images)? A whole number; `palviz.data.long_tail_counts` gives the counts."
    ),
    judge=_judge_q1,
    hint_text=(
        "Class i has int(500 · (1/100) ** (i / 99)) images. Count the i with fewer than 20, e.g. "
        "with palviz.data.long_tail_counts(500, 100, 100)."
    ),
    solution_text=(
        "from palviz.data import long_tail_counts\n\n"
        "counts = long_tail_counts(500, 100, 100)\n"
        "answer = sum(n < 20 for n in counts)  # 30\n"
    ),
)


# --- q2 -----------------------------------------------------------------------------------------
def _softmax(z: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _per_class(values: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    return np.array([values[y == c].mean() for c in range(k)])


def _slips(z: np.ndarray, y: np.ndarray, k: int) -> dict[str, np.ndarray]:
    p = _softmax(z, 1)
    top = p.max(axis=1)
    return {
        "that is the mean probability of the *true* class; the confidence is the top "
        "probability max_j p_j, whichever class it belongs to": _per_class(
            p[np.arange(len(y)), y], y, k
        ),
        "that groups the samples by *predicted* class; group them by their true class": np.array(
            [top[p.argmax(axis=1) == c].mean() for c in range(k)]
        ),
        "that is the softmax over the samples (axis 0); take it over the classes (axis 1)": (
            _per_class(_softmax(z, 0).max(axis=1), y, k)
        ),
        "that is the largest logit, not the largest softmax probability": _per_class(
            z.max(axis=1), y, k
        ),
    }


def _judge_q2(confidence_per_class: Any) -> str | None:
    problem = not_a_function(
        confidence_per_class, "def confidence_per_class(logits, targets, num_classes): ..."
    )
    if problem is not None:
        return problem
    for k, n, scale in ((5, 400, 1.0), (10, 1000, 3.0)):
        z, y = demo_logits(k, n, seed=k)
        z = scale * z
        call = f"confidence_per_class(logits [{n}, {k}] x {scale:g}, targets, {k})"
        out = call_student(call, confidence_per_class, z.copy(), y.copy(), k)
        expected = mean_confidence_per_class(z, y, k)
        problem = compare_array(out, expected, name=call, rtol=1e-6, atol=1e-9)
        if problem is None:
            continue
        a = np.asarray(out, dtype=float) if np.shape(out) == expected.shape else None
        if a is not None:
            for slip, wrong in _slips(z, y, k).items():
                if np.allclose(a, wrong, rtol=1e-6, atol=1e-9):
                    return f"{call}: {slip}"
        return problem
    return None


q2 = Exercise(
    key="03.q2",
    question=(
        "Write `confidence_per_class(logits, targets, num_classes)`: for every *true* class c, "
        "the mean over its samples of the confidence $\\max_j p_j$, $p = \\mathrm{softmax}(z)$ "
        "(a NumPy array `[num_classes]`). `logits` is a NumPy array `[N, num_classes]`, `targets` "
        "`[N]`. It is checked against palviz's `mean_confidence_per_class`."
    ),
    judge=_judge_q2,
    hint_text=(
        "Softmax along axis 1 (subtract each row's maximum before exp), take each row's largest "
        "probability, then average it over the samples with targets == c, for c in range(k)."
    ),
    solution_text=(
        "import numpy as np\n\n\n"
        "def confidence_per_class(logits, targets, num_classes):\n"
        "    z = np.asarray(logits, dtype=float)\n"
        "    e = np.exp(z - z.max(axis=1, keepdims=True))\n"
        "    top = (e / e.sum(axis=1, keepdims=True)).max(axis=1)\n"
        "    y = np.asarray(targets)\n"
        "    return np.array([top[y == c].mean() for c in range(num_classes)])\n\n\n"
        "answer = confidence_per_class\n"
    ),
)


# --- q3, q4 -------------------------------------------------------------------------------------
def _doubled() -> dict[str, tuple[float, float]]:
    """Mean confidence and accuracy over the classes, logits as they are and doubled."""
    z, y = demo_logits()
    k = z.shape[1]
    return {
        "confidence": tuple(float(mean_confidence_per_class(f * z, y, k).mean()) for f in (1, 2)),
        "accuracy": tuple(float(per_class_accuracy(f * z, y, k).mean()) for f in (1, 2)),
    }


def _doubling_judge(quantity: str, why: str):
    def judge(answer: Any) -> str | None:
        picked, problem = read_choice(answer, CHOICES)
        if problem:
            return problem
        before, after = _doubled()[quantity]
        change = after - before
        truth = "stays" if abs(change) < 1e-12 else ("grows" if change > 0 else "shrinks")
        if picked == truth:
            return None
        return (
            f"you answered {picked!r}, but the mean per-class {quantity} goes from {before:.4f} "
            f"to {after:.4f} when every logit is doubled: it {truth}. {why}"
        )

    return judge


_SETTING = (
    "`demo_logits()` (1,000 samples, 10 classes, the true class's logit raised by 1.5). "
    "Multiply every logit by 2, as twice the feature norm $\\|h\\|$ of a linear head without "
    "bias would."
)

q3 = Exercise(
    key="03.q3",
    question=(
        f"Predict, then run: the logits and targets of {_SETTING} What does the mean confidence "
        '$\\max_j p_j$ do? Answer `"grows"`, `"shrinks"` or `"stays"`.'
    ),
    judge=_doubling_judge(
        "confidence",
        "Doubling the logits doubles every gap z_top - z_j, so the softmax moves towards "
        "one-hot: long features make a network sure of itself.",
    ),
    hint_text=(
        "max_j p_j = 1 / sum_j exp(z_j - z_top). What happens to each term when every gap "
        "z_j - z_top (all <= 0) doubles?"
    ),
    solution_text='answer = "grows"  # every gap to the top logit doubles\n',
)

q4 = Exercise(
    key="03.q4",
    question=(
        "Predict, then run: the logits and targets of Exercise 3.3, every logit doubled. What "
        'does the mean per-class accuracy do? Answer `"grows"`, `"shrinks"` or `"stays"`.'
    ),
    judge=_doubling_judge(
        "accuracy",
        "Scaling by a positive number keeps the order of the logits, so every prediction (the "
        "argmax) is the same: the norms change the confidence, not the decisions.",
    ),
    hint_text=(
        "The prediction is argmax_j z_j. Does multiplying every z_j by 2 change which is largest?"
    ),
    solution_text='answer = "stays"  # the argmax does not move\n',
)


# --- q5 -----------------------------------------------------------------------------------------
Q5 = dict(num_classes=10, energy=4.0, imbalance_ratio=100)


def _q5_margin() -> float:
    """gamma = w_y^T z - max_{j != y} w_j^T z at the theorem's minimiser z = sqrt(E) w_y, on
    palviz's simplex (every class gives the same value)."""
    k, E = Q5["num_classes"], Q5["energy"]
    W = simplex_prototypes(k, k, method="etf", seed=0).double().numpy()  # unit rows w_j
    logits = W @ (math.sqrt(E) * W[0])  # w_j^T z for z = sqrt(E) w_0
    return float(logits[0] - np.max(logits[1:]))


def _judge_q5(answer: Any) -> str | None:
    expected = _q5_margin()
    problem = compare_number(answer, expected, name="your margin", rtol=1e-4, atol=1e-6)
    if problem is None or "should be a number" in problem:
        return problem
    a, k, E = float(answer), Q5["num_classes"], Q5["energy"]
    slips = {
        math.sqrt(E): "that is w_y^T z alone; subtract the largest wrong logit w_j^T z",
        math.sqrt(E)
        * (1 - 1 / (k - 1)): "w_j^T z = -sqrt(E)/(k-1) is negative: subtracting it adds",
        E * k / (k - 1): "E is the squared norm: the features have norm sqrt(E)",
        k / (k - 1): "that is the margin of unit features; these have norm sqrt(E)",
    }
    for value, why in slips.items():
        if math.isclose(a, value, rel_tol=1e-3):
            return f"{a:.4g}: {why}"
    return problem


q5 = Exercise(
    key="03.q5",
    question=(
        f"PAL's weight-decay theorem: k = {Q5['num_classes']} prototypes anchored at the regular "
        "simplex (unit norm), the softmax loss minimised over the features under the budget "
        f"$\\frac1N\\sum_i\\|z_i\\|_2^2 \\le E = {Q5['energy']:g}$, on a long-tailed training "
        f"set ($\\rho = {Q5['imbalance_ratio']}$). At the minimiser, what is the minimal sample "
        "margin $\\gamma_{\\min} = \\min_i (w_{y_i}^\\top z_i - \\max_{j \\neq y_i} "
        "w_j^\\top z_i)$? A number."
    ),
    judge=_judge_q5,
    hint_text=(
        "The theorem puts every feature on its prototype at the budget's norm, z_i = sqrt(E) "
        "w_{y_i}, whatever rho. Then w_y^T z = sqrt(E) and w_j^T z = -sqrt(E)/(k-1) for j != y."
    ),
    solution_text=(
        "import math\n\n"
        f"k, E = {Q5['num_classes']}, {Q5['energy']:g}\n"
        "answer = math.sqrt(E) * k / (k - 1)  # 2.2222: z_i = 2 w_{y_i}; rho plays no part\n"
    ),
)
