"""Facts the docs state that a test can pin: the numbers are computed here from palviz's own
functions, the names checked against the sources' title pages."""

from __future__ import annotations

import re

import numpy as np
import pytest

from palviz.data import flip_count
from palviz.files import project_root
from palviz.theory import ldam_margins
from palviz.theory.lipschitz import lipschitz_pal, noise_aware_scale, noisy_risk_bound

REFERENCE = (project_root() / "docs" / "reference.md").read_text(encoding="utf-8")
GLOSSARY = (project_root() / "docs" / "glossary.md").read_text(encoding="utf-8")


def test_ldams_check_values_are_the_margins_rounded():
    counts = [5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50]  # CIFAR-10-LT, rho = 100
    margins = ldam_margins(counts, 0.5)
    shown = ", ".join(f"{m:.3f}" for m in sorted(margins))
    assert f"$\\Delta \\approx ({shown})$" in REFERENCE


def test_eql_v2_is_credited_to_its_authors():
    assert "(Tan, Lu, Zhang, Yin, Li, *Equalization Loss v2" in REFERENCE
    assert "Ouyang" not in REFERENCE  # EQL v1's list


@pytest.mark.parametrize("measure", ["NC1", "NC2", "NC3", "NC4", "ECE"])
def test_the_reference_defines_each_measure_of_lessons_08_and_09(measure):
    assert f"**{measure}**" in REFERENCE


@pytest.mark.parametrize(
    "source",
    ["V. Papyan", "Z. Zhu", "C. Guo", "B. Kang", "A. K. Menon", "**$\\tau$-normalisation**"],
)
def test_the_reference_has_the_sources_lesson_09_sends_the_reader_to(source):
    assert source in REFERENCE


@pytest.mark.parametrize(("eta", "n"), [(0.7, 90), (0.4, 333), (0.25, 10), (0.15, 7)])
def test_the_glossarys_noise_rule_is_palvizs(eta, n):
    assert "\\mathrm{round}(\\eta\\, n_c)" in GLOSSARY and "\\lfloor \\eta\\, n_c" not in GLOSSARY
    assert flip_count(eta, n) == int(np.floor(eta * n + 0.5 + 1e-9))  # nearest, halves up


def test_the_noise_aware_bound_falls_then_grows_as_the_glossary_says():
    k = 10
    scales = {e: noise_aware_scale(e) for e in (0.1, 0.4, 0.8, 0.89)}  # B = s: FNPAL's features
    bound = {e: noisy_risk_bound(k, e, lipschitz_pal(k, s), s) for e, s in scales.items()}
    assert bound[0.4] < bound[0.1] < bound[0.8] < bound[0.89]
    assert "grows without limit as $\\eta \\to 1 - 1/k$" in GLOSSARY


def test_no_doc_types_the_quick_profiles_epochs():
    assert not re.search(r"`quick` profile runs\s+the same shape .* 30 epochs", REFERENCE)
