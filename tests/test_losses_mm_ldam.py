"""MM-LDAM (palviz.losses.MaxMarginLoss) against its formula computed sample by sample in
NumPy, in the per-sample reading and in the reference code's (``reference=True``); its margin
carries no gradient; it is a table method of ``full`` and ``paper``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from palviz.losses import MaxMarginLoss, make_loss

COUNTS = np.array([500, 300, 120, 40, 9])


def expected(z, y, *, max_m, s, gamma, ldam, weight, reference):
    """The loss from its definition, one sample at a time."""
    delta = COUNTS**-0.25
    delta = delta * 0.5 / delta.max()  # LDAM's margins, the largest 0.5
    total, norm = 0.0, 0.0
    for i in range(len(y)):
        others = [z[i, j] for j in range(z.shape[1]) if j != y[i]]
        if reference:  # the first sample's label column; the wrong classes against 0
            z_y, rival = z[i, y[0]], max(max(others), 0.0)
        else:
            z_y, rival = z[i, y[i]], max(others)
        d = z_y - rival
        m = max_m - delta[y[i]] if ldam else max_m
        mu = math.exp(-d - gamma * m) if d > 0 else math.exp(d - m) if d < 0 else 0.0
        shifted = z[i].copy()
        shifted[y[i]] -= mu
        a = s * shifted
        ce = math.log(sum(math.exp(v - a.max()) for v in a)) + a.max() - a[y[i]]
        w = 1.0 if weight is None else weight[y[i]]
        total, norm = total + w * ce, norm + w
    return total / norm


def batch(seed=0):
    rng = np.random.default_rng(seed)
    z = np.tanh(rng.normal(size=(12, 5)))  # cosine-like logits
    y = np.array([3, 0, 1, 2, 4, 0, 0, 1, 3, 2, 4, 1])
    z[5] = -np.abs(z[5])  # every logit negative: the reference measures it against 0
    z[6, 0] = z[6].max() + 0.3  # a sample classified right
    return z, y


@pytest.mark.parametrize("ldam", [True, False])
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_mm_ldam_is_its_formula(ldam, reference, weighted):
    z, y = batch()
    weight = np.random.default_rng(1).uniform(0.5, 2.0, 5) if weighted else None
    kw = {"max_m": 1.29, "s": 26.0, "gamma": 1.528, "ldam": ldam}
    loss = MaxMarginLoss(COUNTS.tolist(), reference=reference, **kw)
    if weighted:
        loss.weight = torch.tensor(weight)
    got = loss(torch.tensor(z), torch.tensor(y)).item()
    want = expected(z, y, weight=weight, reference=reference, **kw)
    # float64 throughout, but the class weights, which the loss keeps in float32
    assert got == pytest.approx(want, rel=1e-6 if weighted else 1e-12)


def test_the_reference_reading_differs_where_its_quirks_act():
    z, y = batch()
    kw = {"max_m": 1.29, "s": 26.0, "gamma": 1.528, "ldam": True, "weight": None}
    assert expected(z, y, reference=True, **kw) != pytest.approx(
        expected(z, y, reference=False, **kw)
    )
    per_sample = MaxMarginLoss(COUNTS.tolist()).margins(torch.tensor(z), torch.tensor(y))
    first = MaxMarginLoss(COUNTS.tolist(), reference=True).margins(torch.tensor(z), torch.tensor(y))
    assert torch.equal(per_sample[0], first[0])  # the first sample reads its own column
    assert not torch.allclose(per_sample, first)


def test_the_margin_carries_no_gradient():
    z, y = batch(2)
    logits = torch.tensor(z, requires_grad=True)
    loss = MaxMarginLoss(COUNTS.tolist())
    mu = loss.margins(logits, torch.tensor(y))
    loss(logits, torch.tensor(y)).backward()
    fixed = torch.tensor(z, requires_grad=True)  # the same shift, as a constant
    shift = torch.zeros_like(fixed).scatter(1, torch.tensor(y)[:, None], mu[:, None])
    torch.nn.functional.cross_entropy(26.0 * (fixed - shift), torch.tensor(y)).backward()
    assert torch.allclose(logits.grad, fixed.grad, rtol=1e-12, atol=0)


def test_mm_ldam_is_built_by_name_and_refuses_bad_arguments():
    built = make_loss("mm_ldam", cls_num_list=COUNTS.tolist())
    assert isinstance(built, MaxMarginLoss) and built.ldam and built.s == 26.0
    with pytest.raises(ValueError, match=r"^max_m must be > 0, got -1"):
        MaxMarginLoss(COUNTS.tolist(), max_m=-1)
    with pytest.raises(ValueError, match=r"^gamma must be >= 0"):
        MaxMarginLoss(COUNTS.tolist(), gamma=-0.5)


def test_mm_ldam_drw_is_a_table_method_of_full_and_paper_at_the_papers_seeds():
    from palviz.experiments import plan
    from palviz.experiments.methods import TABLE_METHODS

    (method,) = [m for m in TABLE_METHODS if m.label == "MM-LDAM-DRW"]
    assert method.loss == "mm_ldam" and method.drw and not method.pal
    assert method.loss_kw == {"max_m": 1.29, "s": 26.0, "gamma": 1.528}
    for profile, seeds in (("full", {0, 1, 2, 3, 4}), ("paper", {0, 1, 2})):
        specs = [s for s in plan.experiment_specs("06", profile) if s.loss == "mm_ldam"]
        assert specs and {s.seed for s in specs} >= seeds
    assert not [s for s in plan.experiment_specs("06", "quick") if s.loss == "mm_ldam"]
