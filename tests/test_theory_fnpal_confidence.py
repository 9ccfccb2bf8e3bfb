"""FNPAL's largest confidence at scale s, and lambda_PAL written through it (notebooks 01, 04)."""

import math

import pytest
import torch

from palviz.heads import AnchoredHead
from palviz.theory import fnpal_max_confidence, lipschitz_pal


@pytest.mark.parametrize("num_classes", [2, 10, 100])
@pytest.mark.parametrize("scale", [0.3, 1.0, 5.0])
def test_fnpal_max_confidence_is_reached_with_the_feature_on_its_prototype(num_classes, scale):
    head = AnchoredHead(num_classes, num_classes, normalize=True, scale=scale)
    p = torch.softmax(head(head.prototypes[:1]), dim=1)[0, 0]
    assert float(p) == pytest.approx(fnpal_max_confidence(num_classes, scale), rel=1e-5)


@pytest.mark.parametrize("num_classes", [3, 10])
def test_no_feature_direction_beats_fnpal_max_confidence(num_classes):
    scale = 2.0
    head = AnchoredHead(num_classes, num_classes, normalize=True, scale=scale)
    z = torch.randn(50_000, num_classes, generator=torch.Generator().manual_seed(0))
    best = torch.softmax(head(z), dim=1).max().item()
    assert best <= fnpal_max_confidence(num_classes, scale) + 1e-6


@pytest.mark.parametrize("scale", [0.1, 1.0, 5.0, 20.0])
def test_lambda_pal_is_a_function_of_fnpal_max_confidence(scale):
    k = 10
    p = fnpal_max_confidence(k, scale)
    assert lipschitz_pal(k, scale) == pytest.approx(k * (k * p - 1) / (k - 1), rel=1e-12)


def test_fnpal_max_confidence_runs_from_uniform_to_certain():
    assert fnpal_max_confidence(10, 1e-9) == pytest.approx(0.1, rel=1e-6)
    assert fnpal_max_confidence(10, 50.0) == pytest.approx(1.0, abs=1e-12)
    assert math.isclose(fnpal_max_confidence(10, 5.0), 1 / (1 + 9 * math.exp(-50 / 9)))


def test_fnpal_max_confidence_validates_its_arguments():
    with pytest.raises(ValueError, match="scale must be > 0, got -1"):
        fnpal_max_confidence(10, -1.0)
    with pytest.raises(ValueError, match="num_classes must be >= 2, got 1"):
        fnpal_max_confidence(1, 1.0)
