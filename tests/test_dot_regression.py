"""The dot-regression loss of the fixed ETF classifier (``palviz.losses.dot_regression``), the
closed-form ETF it trains on and its table method "ETF+DR" (docs/reference.md 2.4).

Every loss value is compared with one computed here from the formula, in float64 numpy, one
sample at a time: the reference code's target E_{W,y} w_y with the per-batch lengths
E_{W,c} = sqrt(gamma / m_c), gamma = B / (classes in the batch), and the features divided by
their norm, term 1/2 (E_{W,y} w_y^T h - E_{W,y} ||h||)^2 / ||h||.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_losses import TOL, value

from palviz.experiments import methods, plan, recipes
from palviz.heads import AnchoredHead, simplex_prototypes
from palviz.losses import LOSSES, DotRegressionLoss, batch_class_lengths, make_loss


def ref_dot_regression(h: np.ndarray, W: np.ndarray, y: np.ndarray, balanced: bool) -> float:
    """mean_i 1/2 (E_y w_y^T h_i / ||h_i|| - E_y)^2 with E_c = sqrt(gamma / m_c) (or 1),
    from the raw features h [N, d] and the prototypes W [C, d]."""
    n = len(y)
    classes, counts = np.unique(y, return_counts=True)
    gamma = n / len(classes)
    length = {
        c: math.sqrt(gamma / m) if balanced else 1.0 for c, m in zip(classes, counts, strict=True)
    }
    terms = []
    for i in range(n):
        unit = h[i] / math.sqrt(sum(v * v for v in h[i]))  # E_H = ||h / ||h|| || = 1
        e = length[y[i]]
        dot = e * float(np.dot(W[y[i]], unit))  # (E_y w_y)^T h
        terms.append(0.5 * (dot - e * 1.0) ** 2 / 1.0)  # (dot - ||E_y w_y|| E_H)^2 / (2 E_H)
    return float(np.mean(terms))


def features(n: int, d: int, seed: int) -> torch.Tensor:
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed))


def test_reference_reproduces_hand_computed_values():
    # one sample on its prototype: 0; orthogonal to it: 1/2 (0 - 1)^2
    W = np.eye(2)
    assert ref_dot_regression(np.array([[2.0, 0.0]]), W, np.array([0]), True) == 0.0
    assert ref_dot_regression(np.array([[0.0, 3.0]]), W, np.array([0]), True) == 0.5
    # two samples of class 0, one of class 1: gamma = 3/2, E_0^2 = 3/4, E_1^2 = 3/2
    h = np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    expected = (0.75 * 0.5 + 0.75 * 0.5 + 1.5 * 0.5) / 3
    assert ref_dot_regression(h, W, np.array([0, 0, 1]), True) == pytest.approx(expected)


@pytest.mark.parametrize("balanced", [True, False], ids=["batch-balanced", "plain"])
@pytest.mark.parametrize(("n", "c", "d"), [(1, 2, 4), (17, 10, 64), (64, 10, 9), (40, 5, 32)])
def test_dr_on_the_anchored_head_is_the_formula_of_the_reference(n, c, d, balanced):
    g = torch.Generator().manual_seed(n + c + d)
    h = features(n, d, seed=n * d)
    targets = torch.randint(0, c, (n,), generator=g)
    head = AnchoredHead(d, c, normalize=True, scale=1.0)
    loss = DotRegressionLoss(c, batch_balanced=balanced)
    got = value(loss(head(h), targets))
    W = head.prototypes.double().numpy()
    expected = ref_dot_regression(h.double().numpy(), W, targets.numpy(), balanced)
    assert got == pytest.approx(expected, abs=TOL)


def test_plain_dr_is_half_the_squared_gap_of_the_target_cosine():
    cos = torch.tensor([[0.2, -0.5, 0.9], [1.0, 0.0, -1.0]], dtype=torch.float64)
    y = torch.tensor([2, 0])
    expected = (0.5 * (0.9 - 1) ** 2 + 0.0) / 2
    assert value(DotRegressionLoss(3, batch_balanced=False)(cos, y)) == pytest.approx(
        expected, abs=1e-12
    )
    assert value(DotRegressionLoss(3)(cos, y)) == pytest.approx(expected, abs=1e-12)  # m_c = 1


def test_batch_lengths_give_every_class_present_the_same_weight():
    y = torch.tensor([0, 0, 0, 1, 3])
    lengths = batch_class_lengths(y, 5)
    # gamma = 5 / 3; E_0 = sqrt(5/9), E_1 = E_3 = sqrt(5/3); absent classes keep 1
    expected = [math.sqrt(5 / 9), math.sqrt(5 / 3), 1.0, math.sqrt(5 / 3), 1.0]
    np.testing.assert_allclose(lengths.numpy(), expected, rtol=1e-12)
    assert float((lengths[y] ** 2).sum()) == pytest.approx(len(y))


def test_gradient_reaches_only_the_target_cosine_and_vanishes_at_collapse():
    cos = torch.tensor([[0.3, -0.2, 0.1], [1.0, -0.5, -0.5]], requires_grad=True)
    DotRegressionLoss(3, batch_balanced=False)(cos, torch.tensor([0, 0])).backward()
    # d/dcos_y of mean_i 1/2 (cos_y - 1)^2 = (cos_y - 1) / N
    expected = torch.tensor([[(0.3 - 1) / 2, 0, 0], [0.0, 0, 0]])
    torch.testing.assert_close(cos.grad, expected)


def test_logits_outside_the_cosine_range_are_refused():
    with pytest.raises(ValueError, match=r"logits must be cosines within \[-1, 1\].*3"):
        DotRegressionLoss(2)(torch.tensor([[3.0, 0.0]]), torch.tensor([0]))
    with pytest.raises(ValueError, match="batch_balanced"):
        DotRegressionLoss(2, batch_balanced="yes")
    with pytest.raises(ValueError, match="num_classes"):
        DotRegressionLoss(1)


@pytest.mark.parametrize(("k", "d"), [(3, 2), (10, 9), (10, 64), (4, 100)])
def test_the_etf_has_unit_rows_and_gram_minus_one_over_k_minus_one(k, d):
    W = simplex_prototypes(k, d, method="etf").double().numpy()
    gram = W @ W.T
    expected = np.full((k, k), -1.0 / (k - 1))
    np.fill_diagonal(expected, 1.0)
    np.testing.assert_allclose(gram, expected, atol=1e-6)
    # the ETF sums to zero: sum_i w_i = 0 (its rows are centred)
    np.testing.assert_allclose(W.sum(axis=0), np.zeros(d), atol=1e-6)


def test_etf_dr_is_a_registered_long_tailed_method_on_the_fixed_etf():
    assert LOSSES["dot_regression"].factory is DotRegressionLoss
    assert LOSSES["dot_regression"].needs == ("num_classes",)
    assert make_loss("dot_regression", num_classes=10).batch_balanced is True
    m = methods.method("long_tailed", "ETF+DR")
    assert m.head() == ("anchored", {"normalize": True, "scale": 1.0})
    assert "ETF+DR+PAL" not in methods.methods_of("long_tailed")
    assert recipes.lt_method("ETF+DR")["loss"] == "dot_regression"
    assert "ETF+DR" in recipes.LT_METHODS
    row = [r for r in methods.method_table("long_tailed").splitlines() if r.startswith("| ETF+DR ")]
    assert len(row) == 1 and "`AnchoredHead(normalize=True, scale=1)` (fixed ETF)" in row[0]
    # the anchored head's default prototypes are the closed-form ETF where it exists
    head = AnchoredHead(64, 10, normalize=True, scale=1.0)
    torch.testing.assert_close(head.prototypes, simplex_prototypes(10, 64, method="etf"))


def test_an_etf_method_must_be_long_tailed_without_pal_on_cosine_logits():
    bad = methods.TableMethod("X", "long_tailed", "ce", etf=True, pal=False)
    with pytest.raises(ValueError, match="etf=True"):
        methods.check_table([bad])
    with pytest.raises(ValueError, match="etf=True"):
        methods.check_table([methods.TableMethod("X", "long_tailed", "dot_regression", etf=True)])


def test_full_and_paper_train_the_rivals_without_pal_and_quick_and_smoke_do_not():
    rivals = {"EQLv2", "ETF+DR"}
    for profile in ("full", "paper"):
        setup = recipes.long_tailed_setup(profile)
        assert rivals <= set(setup["methods"]) and not rivals & set(setup["pal_methods"])
        assert setup["ratios"] == (100, 50, 10)
    assert recipes.long_tailed_setup("paper")["seeds"] == (0, 1, 2)
    for profile in ("smoke", "quick"):
        setup = recipes.long_tailed_setup(profile)
        assert not rivals & (set(setup["methods"]) | set(setup["pal_methods"]))
        assert setup["ratios"] == (100,)
        labels = {s.label for n in plan.EXPERIMENTS for s in plan.planned_specs(n, profile)}
        assert not rivals & labels
    labels = [s.label for s in plan.planned_specs("06", "paper")]
    assert labels.count("ETF+DR") == 2 * 3 * 3  # 2 datasets x 3 ratios x 3 seeds


@pytest.mark.parametrize("method", ["ETF+DR", "ETF+DR+mixup", "EQLv2"])
def test_the_rivals_train_end_to_end_at_smoke_size(method, tmp_path, monkeypatch):
    from palviz.experiments import runcache

    monkeypatch.setenv("PALVIZ_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("PALVIZ_TOY", raising=False)
    spec = recipes.lt_spec(method, profile="smoke", epochs=5)
    assert spec.train.mixup_alpha == (1.0 if method.endswith("+mixup") else 0.0)
    result = runcache.run(spec)
    history = result.metrics["history"]
    assert len(history) == 5 and all(math.isfinite(r["train_loss"]) for r in history)
    assert result.metrics["last_acc"] > 0.15  # above chance (0.1) on MNIST-1D-LT
