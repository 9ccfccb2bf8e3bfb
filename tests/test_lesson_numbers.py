"""No lesson types a measured number: every number in the lessons' markdown cells
(``notebooks/*.ipynb``) is one of the papers' constants or the profiles' declared settings.

A measured number (a parameter count, a training-set size, a number of steps, an error, an
angle reached by an optimiser) must be computed where it is shown: printed by a code cell, or
written into markdown the run builds. Typed into a markdown cell it goes stale silently.

What is read, and how:

* **Numbers are normalised before they are compared**, so that reformatting does not hide
  one: thousands separators (``3,330``, ``3 330``), suffixes (``3.33k``, ``17k``, ``1.2M``),
  scientific forms (``1e-4``, ``2.4\\cdot10^{-3}``, ``2 \\times 10^{-4}``, ``10^{-3}``),
  percentages (``80 %`` is compared as 80 and as 0.8) and signs (compared by magnitude). A
  number written with ``d`` decimals matches an allowed value that rounds to it at ``d``
  decimals (``109.47`` matches ``arccos(-1/3)`` in degrees); ``3.33k`` is read at its written
  precision (tens).
* **Not measurements, skipped:** inline code and code blocks (names, calls and arguments:
  the run prints what they give), link targets, HTML comments, the lesson number of the
  title (``# 06 · ...``), the references cell (the cell headed ``References``: years,
  volumes, arXiv ids) and a citation's year elsewhere ("Fang et al. 2021", "PNAS 2021"), an
  exercise's cell (headed ``**Exercise N.M**``: the course writes it from the question
  :mod:`palviz.exercises` states, whose data grades it), and cross-references: a number or a
  list of them after Thm/Theorem, Lemma, Prop., Corollary, Eq., Sec./Section, Fig., Table,
  Appendix, Algorithm, lesson(s), notebook(s), Exercise, Question, Step,
  ``docs/reference.md`` and ``§`` ("Thm 4.1", "Eqs. 2 and 7", "Sec. 4-5.2", "notebooks 00
  and 06").
* **LaTeX maths** (``$...$``, ``$$...$$``): a formula's structure is not a measurement.
  Sub- and superscripts are indices and exponents and are skipped (``n_j^{-1/4}``,
  ``w_{k-1}``, ``\\mathbb{S}^{d-1}``), except the exponent of a power of ten, which is part
  of the number (``10^{-4}``). The arguments of ``\\frac``/``\\tfrac``/``\\dfrac`` are
  skipped when they are small integers (up to 10), like every small integer (below).
  Every other number in maths is read like prose: ``$\\lambda = 0.026$`` is flagged.
* **Always allowed:** integers from 0 to 10 (counts and the digits of formulas: "two
  classes", "k = 3", "1/2"), the angles of geometry (90, 180, 360 degrees), the constants
  of the two papers and of the methods they compare, listed below with their source, the
  numbers declared in the profiles (:data:`palviz.experiments.profiles.LONG_TAILED_PROFILES`
  and ``NOISY_PROFILES``, :data:`palviz.experiments.runspec.TOY`), the published budgets
  (:data:`palviz.experiments.budget.PAPER_BUDGETS`, ``PAPER_STEPS``,
  ``PAPER_LR_WD_INTEGRAL``), the published accuracies the tables stand beside
  (:data:`palviz.experiments.published.PUBLISHED_LT_ACCURACY`), every dataset's declared
  number of classes, and values of the theory's closed forms that a lesson quotes (the
  simplex's cosine -1/(k-1), angle arccos(-1/(k-1)) and minimal margin 1 + 1/(k-1), for
  k up to 100; PAL's noise-aware scale 0.25 / (0.05 + eta) at the profiles' rates).

The checker itself is tested on a small synthetic notebook with a planted measurement.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from palviz import data as pdata
from palviz.experiments import budget, profiles, published, runspec

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

#: Lessons that other work is rewriting now: they are checked by :func:`flagged` like every
#: lesson, and listed here only so that the suite reports them (xfail) instead of failing.
IN_REVISION: tuple[str, ...] = ()

#: The papers' constants and the constants of the methods they compare, each with its source.
PAPER_CONSTANTS: dict[float, str] = {
    30: "LDAM-DRW: cosine scale s = 30; ELM's s",
    0.5: "LDAM-DRW: largest margin M = 0.5 (max_m)",
    0.25: "PAL Sec. 5.2: noise-aware scale s = 0.25 / (0.05 + eta); LDAM's exponent 1/4",
    0.05: "PAL Sec. 5.2: epsilon = 0.05 of the noise-aware scale; the tests' alpha = 0.05",
    100: "LDAM-DRW: imbalance ratio rho = 100; CIFAR-100's classes; many-shot > 100",
    20: "LDAM-DRW's shot groups: few-shot < 20 images; APL's RandomRotation(20)",
    200: "LDAM-DRW and APL CIFAR-100: 200 epochs",
    160: "LDAM-DRW: the learning rate's first cut and DRW's start, epoch 160",
    180: "LDAM-DRW: the learning rate's second cut, epoch 180",
    0.1: "LDAM-DRW: lr 0.1 and the cut factor 0.1",
    0.01: "APL: lr 0.01",
    128: "LDAM-DRW and APL: batch 128",
    2e-4: "LDAM-DRW: weight decay 2e-4",
    5e-4: "PAL's CIFAR-100-LT weight decay 5e-4",
    1e-4: "APL's MNIST weight decay 1e-4",
    0.9: "momentum 0.9",
    0.9999: "class-balanced re-weighting: beta = 0.9999 (Cui et al.)",
    0.999: "class-balanced re-weighting: beta = 0.999 (Cui et al.)",
    0.8: "DRW and IB start at 80 % of the epochs",
    32: "CIFAR: 32 x 32 images, RandomCrop(32)",
    4: "CIFAR: RandomCrop padding 4",
    50_000: "CIFAR-10/100: 50,000 training images",
    10_000: "CIFAR-10/100: 10,000 test images",
    60_000: "MNIST: 60,000 training images",
    5000: "CIFAR-10: 5,000 images per class",
    500: "CIFAR-100: 500 images per class",
    1.96: "the normal 97.5 % quantile",
    0.95: "95 % intervals",
    97.5: "the normal 97.5 % quantile",
    95: "95 % intervals",
    34: "ResNet-34 (APL CIFAR-100)",
    1e-3: "the cosine schedule's floor 1e-3 (APL)",
}

GEOMETRY = {90: "orthogonal", 180: "a half turn", 360: "a full turn"}

#: Settings a lesson's own code declares and its text names (a grid, a threshold), per lesson,
#: each with the cell that sets it: they are choices, not measurements.
LESSON_SETTINGS: dict[str, dict[float, str]] = {
    "02": {
        40: "the last index i of the ratio grid R = 10^(0.1 i) (set-up cell: np.arange(0, 41))",
        0.99: "the minority cosine the figure's reading reports crossing (its code: > 0.99)",
    },
    "05": {12: "the most classes a margin heatmap annotates (palviz.plots.margins: C <= 12)"},
    "08": {15: "the ECE's confidence bins (palviz.evaluation.collapse_readings, Guo et al.'s 15)"},
}

_REFERENCE_WORDS = (
    r"Thm|Thms|Theorem|Theorems|Lemma|Lemmas|Prop|Props|Proposition|Corollary|Cor|Eq|Eqs|"
    r"Equation|Equations|Sec|Secs|Section|Sections|Fig|Figs|Figure|Figures|Table|Tables|Tab|"
    r"Appendix|App|Algorithm|Alg|lesson|lessons|Lesson|Lessons|notebook|notebooks|Notebook|"
    r"Notebooks|Exercise|Exercises|exercise|exercises|Question|Step|docs/reference\.md|§"
)
_REF_ITEM = r"\(?[A-Z]?\d+(?:\.\d+)*[a-z]?\)?"
_CROSS_REF = re.compile(
    rf"(?:\b(?:{_REFERENCE_WORDS})\b|§)\.?[ \t]*{_REF_ITEM}"
    rf"(?:[ \t]*(?:,|-|–|and|or|to)[ \t]*{_REF_ITEM})*"
)
_CITATION_YEAR = re.compile(
    r"\b(?:et al\.?,?|ICML|NeurIPS|ICLR|CVPR|ICCV|ECCV|BMVC|ICIP|PNAS|AAAI|JMLR|TPAMI|"
    r"(?<=\()[A-Z][a-z]+)"  # or a parenthesised author: "(Lin 2004)"
    r"[ \t]*\(?(?:19|20)\d{2}\)?"
)
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+?\$", re.DOTALL)  # inline maths may wrap a line
_POWER_OF_TEN = re.compile(
    r"(?:(\d+(?:\.\d+)?)\s*(?:\\cdot|\\times|·|×|\*)\s*)?10\s*\^\s*\{?\s*([-−]?\s*\d+)\s*\}?"
)
_SCRIPT = re.compile(r"[_^]\s*(?:\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}|\\?[A-Za-z0-9])")
_NUMBER = re.compile(
    r"(?<![\w.])(\d{1,3}(?:(?:,| |\u2009|\u202f)\d{3}(?!\d))+|\d+)(\.\d+)?(?:[eE]([-−+]?\d+))?"
    r"(\s?[kKM](?![\w]))?(\s?%)?"
)


def allowed_values() -> list[float]:
    """Every value a lesson may type: see the module docstring."""
    values: set[float] = set(PAPER_CONSTANTS) | set(GEOMETRY) | set(range(11))

    def walk(obj: object) -> Iterable[float]:
        if isinstance(obj, bool):
            return
        if isinstance(obj, numbers.Real):
            yield float(obj)
        elif isinstance(obj, dict):
            for v in obj.values():
                yield from walk(v)
        elif isinstance(obj, list | tuple | set):
            for v in obj:
                yield from walk(v)

    values.update(walk(profiles.LONG_TAILED_PROFILES))
    values.update(walk(profiles.NOISY_PROFILES))
    values.update(walk(runspec.TOY))
    values.update(walk(published.PUBLISHED_LT_ACCURACY))
    for b in budget.PAPER_BUDGETS.values():
        values.update((b.epochs, b.train_size, b.batch_size, b.steps, b.steps_per_epoch))
    values.add(budget.PAPER_LR_WD_INTEGRAL)
    values.update(pdata.dataset_info(name).num_classes for name in pdata.DATASETS)
    for k in (*range(2, 11), 100):  # the lessons' small examples, and CIFAR's 10 and 100
        values.update((1 / (k - 1), 1 + 1 / (k - 1), math.degrees(math.acos(-1 / (k - 1)))))
    rates = set(walk([(p["symmetric"], p["asymmetric"]) for p in profiles.NOISY_PROFILES.values()]))
    values.update(0.25 / (0.05 + eta) for eta in rates | {0.2, 0.4, 0.6, 0.8})
    return sorted(values)


def _strip(text: str) -> str:
    """``text`` without what is not read (module docstring), maths reduced to its numbers."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.DOTALL)
    text = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "] ", text)  # link targets
    text = re.sub(r"https?://\S+|arXiv:\s*\d+\.\d+", " ", text)
    text = _CITATION_YEAR.sub(" ", text)
    text = re.sub(r"^#\s*\d+\s*·", "#", text)  # the lesson number of the title

    def maths(m: re.Match[str]) -> str:
        formula = _POWER_OF_TEN.sub(
            lambda p: f" {p.group(1) or '1'}e{p.group(2).replace(' ', '').replace('−', '-')} ",
            m.group(0),
        )
        formula = re.sub(r"\\[td]?frac\s*(\d)\s*(\d)", " ", formula)  # \tfrac12
        formula = re.sub(
            r"(\d)\s*(?=[A-Za-z\\])(?![eE][-+]?\d)", r"\1*", formula
        )  # 2k is 2 times k, not 2,000
        return _SCRIPT.sub(" ", formula)

    text = _MATH.sub(maths, text)
    text = _POWER_OF_TEN.sub(
        lambda p: f" {p.group(1) or '1'}e{p.group(2).replace(' ', '').replace('−', '-')} ", text
    )
    return _CROSS_REF.sub(" ", text)


def numbers_in(text: str) -> list[tuple[str, float, float, bool]]:
    """``(as written, value, half its last written digit, percent)`` for each number read."""
    found = []
    for m in _NUMBER.finditer(_strip(text)):
        whole, frac, exp, suffix, percent = m.groups()
        digits = re.sub(r"[, \u2009\u202f]", "", whole) + (frac or "")
        value = float(digits)
        step = 10.0 ** -(len(frac) - 1) if frac else 1.0
        if exp:
            scale = 10.0 ** int(exp.replace("−", "-"))
            value, step = value * scale, step * scale
        if suffix:
            scale = {"k": 1e3, "K": 1e3, "M": 1e6}[suffix.strip()]
            value, step = value * scale, step * scale
        found.append((m.group(0).strip(), value, step / 2, bool(percent)))
    return found


def _matches(value: float, half: float, allowed: list[float]) -> bool:
    tol = half * (1 + 1e-9) + 1e-12 * abs(value)
    return any(abs(abs(value) - abs(a)) <= tol for a in allowed)


def flagged(cells: Iterable[str], allowed: list[float] | None = None) -> list[str]:
    """The numbers of markdown ``cells`` (their sources) that are not allowed, as
    ``"cell i: written (context)"``."""
    allowed = allowed_values() if allowed is None else allowed
    out = []
    for i, source in enumerate(cells):
        if re.match(r"\s*(#+\s*References\b|\*\*Exercise \d+\.\d+\*\*)", source):
            continue
        for written, value, half, percent in numbers_in(source):
            candidates = [(value, half)] + ([(value / 100, half / 100)] if percent else [])
            if not any(_matches(v, h, allowed) for v, h in candidates):
                out.append(f"cell {i}: {written}")
    return out


def markdown_cells(path: Path) -> list[str]:
    notebook = json.loads(path.read_text())
    return ["".join(c["source"]) if c["cell_type"] == "markdown" else "" for c in notebook["cells"]]


LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", LESSONS, ids=[p.name[:2] for p in LESSONS])
def test_no_lesson_types_a_measured_number(path, request):
    if path.name[:2] in IN_REVISION:
        request.applymarker(pytest.mark.xfail(reason="being rewritten", strict=False))
    own = sorted(LESSON_SETTINGS.get(path.name[:2], {}))
    problems = flagged(markdown_cells(path), allowed_values() + own)
    assert not problems, (
        f"{path.name} types numbers that are neither the papers' constants nor the profiles' "
        f"settings: compute each where it is shown (print it, or build the markdown from the "
        f"results), or drop it: {problems}"
    )


# --- the checker itself ----------------------------------------------------------------------


def _synthetic(*cells: str) -> list[str]:
    return list(cells)


@pytest.mark.parametrize(
    "planted",
    [
        "Each run takes 3330 steps.",
        "Each run takes 3,330 steps.",
        "Each run takes 3.33k steps.",
        "The network has 41k parameters.",
        "The sum is $\\approx 0.026$ here.",
        "We measured an error of $4.1\\cdot10^{-5}$.",
        "The smallest angle is about 74°.",
        "The gap shrinks by 37 %.",
        "It stays within 3e-4 of the target.",
    ],
)
def test_the_checker_flags_a_planted_measurement(planted):
    cells = _synthetic("# 09 · A lesson\n\nSee Thm 4.1 and Eq. 7.", planted)
    problems = flagged(cells)
    assert len(problems) == 1 and problems[0].startswith("cell 1:"), problems


@pytest.mark.parametrize(
    "harmless",
    [
        "PAL's Theorem 4.1 and Eqs. 2 and 7 (Sec. 4-5.2, Fig. 3); notebooks 00 and 06.",
        "LDAM uses $\\Delta_j = C\\, n_j^{-1/4}$ with $s = 30$ and $M = 0.5$.",
        "The paper trains 200 epochs at lr 0.1, batch 128, weight decay $2\\cdot10^{-4}$.",
        "Every pair is at cosine $-\\frac{1}{k-1}$ (109.47° for $k = 4$).",
        "Run `train(epochs=3330)` to see it.",
        "# 09 · A lesson",
        "The budget is $\\sum_t \\eta_t \\lambda$ = 0.3069 in the paper.",
        "Read [arXiv:2206.11602](https://arxiv.org/abs/2206.11602).",
        "After Fang et al. 2021 and (PNAS 2021).",
        "**Exercise 3.1** (compute a number). A class of 1,234 samples.",
        "## References\n\n- Zhou et al., ICML 2022, arXiv:2206.11602.",
    ],
)
def test_the_checker_lets_constants_and_references_through(harmless):
    assert flagged(_synthetic(harmless)) == []


def test_a_reformatted_number_reads_the_same():
    values = {text: numbers_in(text)[0][1] for text in ("3330", "3,330", "3.33k", "3 330")}
    assert set(values.values()) == {3330.0}, values
    assert numbers_in("$2.4\\cdot10^{-3}$")[0][1] == pytest.approx(2.4e-3)
    assert numbers_in("$10^{-4}$")[0][1] == pytest.approx(1e-4)


def test_the_checker_reads_a_real_notebook_file(tmp_path):
    notebook = {
        "cells": [
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": ["# 09 · A lesson\n", "\n", "It takes 1,234 steps."],
            },
            {"cell_type": "code", "metadata": {}, "source": ["print(5678)"], "outputs": []},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "09_lesson.ipynb"
    path.write_text(json.dumps(notebook))
    assert flagged(markdown_cells(path)) == ["cell 0: 1,234"]


def test_a_coefficient_in_maths_is_not_a_thousand():
    allowed = allowed_values()
    assert (
        flagged(
            ["$\\sum_y \\|k w_y - s\\|^2 = k^3 - 2k\\, s^\\top s$,\n  wrapped $a =\n 3x$"], allowed
        )
        == []
    )
    assert flagged(["the run took 2k steps"], allowed) == ["cell 0: 2k"]  # prose: 2,000
    assert flagged(["$w = 2.4\\cdot10^{-3}$"], [2.4e-3]) == []  # a power of ten still reads
    assert flagged(["consistency (Lin 2004)"], allowed) == []  # a citation's year
    assert flagged(["Training took 2004 steps"], allowed) == ["cell 0: 2004"]
