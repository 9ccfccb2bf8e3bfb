"""Exercises of lesson 06, long-tailed classification (LDAM-DRW's long-tailed sets and DRW;
Cui et al. 2019 for the class-balanced weights; docs/reference.md 1 and 2).

* ``q1`` (compute a number): one class count $n_i = \\lfloor n_{\\max}\\rho^{-i/(C-1)}\\rfloor$
  of CIFAR-10-LT at $\\rho = 50$.
* ``q2`` (write a function): ``my_long_tail_counts(n_max, num_classes, rho)``, checked on several
  sets against :func:`palviz.data.long_tail_counts`.
* ``q3`` (compute a number): DRW's class-balanced weight of the rarest class of CIFAR-10-LT,
  $\\rho = 100$, $\\beta = 0.9999$.
* ``q4`` (predict, then run): which shot group of CIFAR-10-LT, $\\rho = 100$, has no class?
* ``q5`` (write a function): ``paired_ci(baseline, method)``, the mean per-seed difference and
  its 95 % Student-t interval, against :func:`palviz.stats.paired_difference`.

Every expected value comes from palviz (:mod:`palviz.data`, :mod:`palviz.losses`,
:mod:`palviz.metrics`, :mod:`palviz.stats`), never from the student's code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from palviz.data import long_tail_counts
from palviz.exercises import (
    Exercise,
    call_student,
    compare_number,
    not_a_function,
    read_choice,
)
from palviz.losses import class_balanced_weights, inverse_frequency_weights
from palviz.metrics import SHOT_GROUPS, shot_groups
from palviz.stats import paired_difference

__all__ = ["q1", "q2", "q3", "q4", "q5"]

Q1_SET, Q1_CLASS = (5000, 10, 50), 4  # (n_max, C, rho): CIFAR-10-LT, rho = 50
Q2_CASES = ((5000, 10, 100), (500, 100, 100), (5000, 10, 50), (960, 10, 10), (100, 5, 1))
Q3_SET, Q3_BETA = (5000, 10, 100), 0.9999
Q4_SET = (5000, 10, 100)
Q5_CASES = (  # (baseline, method): accuracies (%) of five paired seeds, then of three
    ([70.1, 68.4, 71.0, 69.5, 70.3], [71.0, 69.0, 71.9, 69.9, 71.6]),
    ([55.0, 57.5, 54.2], [54.1, 58.3, 53.0]),
)


def _close(a: float, b: float, rtol: float = 1e-3) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-9)


# --- q1 ------------------------------------------------------------------------------------------
def _judge_q1(answer: Any) -> str | None:
    n_max, C, rho = Q1_SET
    i = Q1_CLASS
    expected = long_tail_counts(n_max, C, rho)[i]
    problem = compare_number(answer, expected, name="your count", rtol=0.0, atol=1e-9)
    if problem is None or "should be a number" in problem:
        return problem
    a, exact = float(answer), n_max * rho ** (-i / (C - 1))
    if _close(a, exact, 1e-4):
        return f"{a:.6g} is n_max rho^(-i/(C-1)) before truncation: a count is a whole number"
    if a != int(a):
        return f"{a:.6g} is not a whole number: truncate n_max rho^(-i/(C-1)) to a count"
    if a == round(exact):
        return (
            f"{a:.0f} rounds {exact:.4f}; LDAM-DRW's rule truncates (int(...)), giving {expected}"
        )
    if a in (int(n_max * rho ** (-i / C)), n_max * rho ** (-i / C)):
        return (
            f"{a:.6g} uses the exponent i/C; with i/(C-1) the rarest class i = C-1 gets n_max/rho"
        )
    if a in (int(n_max * rho ** (-(i + 1) / (C - 1))), int(n_max * rho ** (-(i - 1) / (C - 1)))):
        return f"{a:.0f} is the count of a neighbouring class: classes are numbered from i = 0"
    return problem


q1 = Exercise(
    key="06.q1",
    question=(
        f"CIFAR-10-LT with $n_{{\\max}} = {Q1_SET[0]}$, $C = {Q1_SET[1]}$ and imbalance ratio "
        f"$\\rho = {Q1_SET[2]}$ (LDAM-DRW's exponential profile): how many training images does "
        f"class $i = {Q1_CLASS}$ keep (class 0 is the head)? A whole number."
    ),
    judge=_judge_q1,
    hint_text="n_i = floor(n_max * rho ** (-i / (C - 1))): truncation, not rounding.",
    solution_text=(
        f"n_max, C, rho, i = {Q1_SET[0]}, {Q1_SET[1]}, {Q1_SET[2]}, {Q1_CLASS}\n"
        "answer = int(n_max * rho ** (-i / (C - 1)))  # 878\n"
    ),
)


# --- q2 ------------------------------------------------------------------------------------------
def _judge_q2(fn: Any) -> str | None:
    problem = not_a_function(
        fn, "def my_long_tail_counts(n_max, num_classes, rho): ...; answer = my_long_tail_counts"
    )
    if problem is not None:
        return problem
    for n_max, C, rho in Q2_CASES:
        call = f"my_long_tail_counts({n_max}, {C}, {rho})"
        out = call_student(call, fn, n_max, C, rho)
        try:
            got = [float(x) for x in out]
        except (TypeError, ValueError):
            return f"{call} should return a list of counts, got {type(out).__name__}"
        expected = long_tail_counts(n_max, C, rho)
        if len(got) != C:
            return f"{call} returned {len(got)} counts, one per class is {C}"
        wrong = [j for j in range(C) if got[j] != expected[j]]
        if not wrong:
            continue
        j = wrong[0]
        exact = n_max * rho ** (-j / (C - 1))
        said = f"{call}: class {j} got {got[j]:g}, palviz gives {expected[j]}"
        if _close(got[j], exact, 1e-9):
            return f"{said}; {exact:.4f} must be truncated to a whole count"
        if got[j] == round(exact):
            return f"{said}; you rounded {exact:.4f}, the rule truncates"
        if got[0] != n_max:
            return f"{said}; class 0 (the head) keeps all n_max = {n_max}"
        if got[-1] != expected[-1]:
            return f"{said}; the rarest class must get n_max / rho = {expected[-1]}"
        return said
    return None


q2 = Exercise(
    key="06.q2",
    question=(
        "Write `my_long_tail_counts(n_max, num_classes, rho)` (palviz's own is imported as "
        "`long_tail_counts`): the list of per-class counts of "
        "LDAM-DRW's exponential profile, class 0 the head. It is checked on "
        + ", ".join(f"`{c}`" for c in Q2_CASES)
        + " against `palviz.data.long_tail_counts`."
    ),
    judge=_judge_q2,
    hint_text="[int(n_max * rho ** (-i / (num_classes - 1))) for i in range(num_classes)]",
    solution_text=(
        "def my_long_tail_counts(n_max, num_classes, rho):\n"
        "    C = num_classes\n"
        "    return [int(n_max * rho ** (-i / (C - 1))) for i in range(C)]\n\n\n"
        "answer = my_long_tail_counts\n"
    ),
)


# --- q3 ------------------------------------------------------------------------------------------
def _judge_q3(answer: Any) -> str | None:
    counts = long_tail_counts(*Q3_SET)
    C, beta = len(counts), Q3_BETA
    expected = float(class_balanced_weights(counts, beta)[-1])
    problem = compare_number(answer, expected, name="your weight", rtol=1e-3)
    if problem is None or "should be a number" in problem:
        return problem
    a = float(answer)
    raw = (1 - beta) / (1 - beta ** np.asarray(counts, dtype=float))
    if _close(a, raw[-1]):
        return (
            f"{a:.4g} is (1 - beta) / (1 - beta^n) before normalising: the weights are then "
            f"rescaled to sum to C = {C}"
        )
    if _close(a, raw[-1] / raw.sum()):
        return f"{a:.4g} makes the weights sum to 1; they sum to C = {C} (a factor {C})"
    if _close(a, float(inverse_frequency_weights(counts)[-1])):
        return (
            f"{a:.4g} is the inverse-frequency weight (1/n normalised); DRW uses the effective "
            "number of samples, (1 - beta^n) / (1 - beta)"
        )
    return problem


q3 = Exercise(
    key="06.q3",
    question=(
        f"DRW's class-balanced weights (Cui et al.): CIFAR-10-LT, $\\rho = {Q3_SET[2]}$, counts "
        f"`{long_tail_counts(*Q3_SET)}`, $\\beta = {Q3_BETA}$. What weight does the rarest class "
        "get after the deferral epoch? A number."
    ),
    judge=_judge_q3,
    hint_text=(
        "w_j = (1 - beta) / (1 - beta ** n_j), then w <- C * w / sum(w), so that the weights "
        "sum to the number of classes."
    ),
    solution_text=(
        "import numpy as np\n\n"
        f"counts = np.array({long_tail_counts(*Q3_SET)}, dtype=float)\n"
        f"beta = {Q3_BETA}\n"
        "w = (1 - beta) / (1 - beta**counts)\n"
        "w = len(counts) * w / w.sum()\n"
        "answer = w[-1]  # 3.99\n"
    ),
)


# --- q4 ------------------------------------------------------------------------------------------
def _judge_q4(answer: Any) -> str | None:
    picked, problem = read_choice(answer, tuple(SHOT_GROUPS))
    if problem:
        return problem
    counts = long_tail_counts(*Q4_SET)
    groups = shot_groups(counts)
    empty = [g for g in SHOT_GROUPS if len(groups[g]) == 0]
    if picked in empty:
        return None
    sizes = ", ".join(f"{g} {len(groups[g])}" for g in SHOT_GROUPS)
    return (
        f"you answered {picked!r}, which holds classes {groups[picked].tolist()} (counts "
        f"{[counts[c] for c in groups[picked]]}). The groups are many > 100, medium 20-100, few "
        f"< 20; with counts {counts} their sizes are {sizes}: the empty one is "
        f"{' and '.join(repr(g) for g in empty)}"
    )


q4 = Exercise(
    key="06.q4",
    question=(
        f"Predict, then run: CIFAR-10-LT, $\\rho = {Q4_SET[2]}$ (counts from 5000 down to "
        f"{min(long_tail_counts(*Q4_SET))}). Which shot group has no class: "
        + " / ".join(f'`"{g}"`' for g in SHOT_GROUPS)
        + "? The cell after the check computes the groups."
    ),
    judge=_judge_q4,
    hint_text="many: n > 100, medium: 20 <= n <= 100, few: n < 20. What is the smallest count?",
    solution_text='answer = "few"  # the rarest class has 50 images, the few-shot limit is 20\n',
)


# --- q5 ------------------------------------------------------------------------------------------
def _numbers(out: Any, call: str) -> tuple[list[float] | None, str | None]:
    try:
        values = [float(x) for x in out]
    except (TypeError, ValueError):
        return None, f"{call} should return three numbers (mean, ci_low, ci_high)"
    if len(values) != 3:
        return None, f"{call} returned {len(values)} numbers; return (mean, ci_low, ci_high)"
    return values, None


def _judge_q5(fn: Any) -> str | None:
    problem = not_a_function(fn, "def paired_ci(baseline, method): ...; answer = paired_ci")
    if problem is not None:
        return problem
    for baseline, method in Q5_CASES:
        call = f"paired_ci({baseline}, {method})"
        out = call_student(call, fn, list(baseline), list(method))
        got, problem = _numbers(out, call)
        if problem:
            return problem
        ref = paired_difference(baseline, method)
        want = [ref.mean, ref.ci_low, ref.ci_high]
        if all(_close(g, w, 1e-4) for g, w in zip(got, want, strict=True)):
            continue
        mean, low, high = got
        said = (
            f"{call} returned ({mean:.4g}, {low:.4g}, {high:.4g}), palviz gives "
            f"({ref.mean:.4g}, {ref.ci_low:.4g}, {ref.ci_high:.4g})"
        )
        if _close(mean, -ref.mean, 1e-4):
            return f"{said}: the difference is method - baseline, you have the sign flipped"
        if not _close(mean, ref.mean, 1e-4):
            return f"{said}: the mean of the per-seed differences method - baseline is off"
        d = np.asarray(method, float) - np.asarray(baseline, float)
        n, half = len(d), (high - low) / 2
        sd = d.std(ddof=1)
        if _close(half, 1.959964 * sd / math.sqrt(n), 1e-3):
            return (
                f"{said}: you used the normal 1.96; with n = {n} seeds take Student's t, n - 1 dof"
            )
        if _close(half, stats.t.ppf(0.975, n - 1) * d.std(ddof=0) / math.sqrt(n), 1e-3):
            return f"{said}: the standard deviation needs ddof=1 (the sample sd)"
        a, b = np.asarray(baseline, float), np.asarray(method, float)
        unpaired = math.sqrt(a.var(ddof=1) / n + b.var(ddof=1) / n)
        if half > stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) and unpaired > sd / math.sqrt(n):
            return (
                f"{said}: your interval is wider than the paired one; pair the runs by seed and "
                "take the spread of the per-seed differences, not of each method"
            )
        return said
    return None


q5 = Exercise(
    key="06.q5",
    question=(
        "Write `paired_ci(baseline, method)`: for the accuracies of the same seeds in the same "
        "order, return `(mean, ci_low, ci_high)`, the mean per-seed difference method - "
        "baseline and its two-sided 95 % Student-t interval. It is checked on "
        + " and ".join(f"`{b}`, `{m}`" for b, m in Q5_CASES)
        + " against `palviz.stats.paired_difference`."
    ),
    judge=_judge_q5,
    hint_text=(
        "d = method - baseline per seed; mean ± t * sd / sqrt(n) with sd = d.std(ddof=1) and "
        "t = scipy.stats.t.ppf(0.975, n - 1)."
    ),
    solution_text=(
        "import numpy as np\n"
        "from scipy import stats\n\n\n"
        "def paired_ci(baseline, method):\n"
        "    d = np.asarray(method, dtype=float) - np.asarray(baseline, dtype=float)\n"
        "    n = len(d)\n"
        "    half = stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / np.sqrt(n)\n"
        "    return d.mean(), d.mean() - half, d.mean() + half\n\n\n"
        "answer = paired_ci\n"
    ),
)
