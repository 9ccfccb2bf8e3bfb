"""Specifications of ``palviz.losses`` (docs/reference.md sections 2, 3 and 5).

Every loss value is compared with an expected value computed here, independently of palviz,
from the formula: float64 numpy, one sample at a time, with an explicit log-sum-exp.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from palviz.experiments.methods import TABLE_METHODS
from palviz.losses import (
    LOSS_NAMES,
    LOSSES,
    CrossEntropyLoss,
    ELMLoss,
    FocalLoss,
    GCELoss,
    LDAMLoss,
    LMSCELoss,
    MAELoss,
    NCEandMAE,
    NCEandRCE,
    NCELoss,
    NFLandRCE,
    NFLLoss,
    NormalizedMarginLoss,
    RCELoss,
    SCELoss,
    class_balanced_weights,
    make_loss,
    registry,
)

TOL = 1e-5
CIFAR10_LT_100 = [5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50]
# (batch size N, classes C): a single sample, small C, CIFAR-10 and CIFAR-100 sizes
SHAPES = [(1, 3), (7, 10), (64, 10), (33, 100)]
SHAPE_IDS = [f"N{n}-C{c}" for n, c in SHAPES]


# ---------------------------------------------------------------------------------------------
# Independent references: float64, one sample at a time
# ---------------------------------------------------------------------------------------------


def lse(v: np.ndarray) -> float:
    """log sum_j exp(v_j), stabilised by the maximum."""
    m = float(np.max(v))
    return m + math.log(float(np.sum(np.exp(v - m))))


def log_softmax(v: np.ndarray) -> np.ndarray:
    return v - lse(v)


def ce_terms(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """-log softmax(z_i)_{y_i} for every sample."""
    return np.array([lse(z[i]) - z[i, y[i]] for i in range(len(y))])


def weighted_mean(terms: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> float:
    """PyTorch's weighted mean: sum_i w_{y_i} t_i / sum_i w_{y_i}."""
    if w is None:
        return float(np.mean(terms))
    wy = np.array([w[t] for t in y])
    return float(np.sum(wy * terms) / np.sum(wy))


def ref_margins(counts, max_m=0.5) -> np.ndarray:
    m = np.array([n ** (-0.25) for n in counts], dtype=np.float64)
    return m * max_m / m.max()


def ref_ce(z, y, w=None):
    return weighted_mean(ce_terms(z, y), y, w)


def ref_focal(z, y, gamma, w=None, apl=False):
    out = []
    for i in range(len(y)):
        ce = lse(z[i]) - z[i, y[i]]
        wy = 1.0 if w is None else w[y[i]]
        if apl:
            factor = (1.0 - math.exp(-ce)) ** gamma  # (1 - p_y)^gamma, p_y unweighted
        else:
            factor = (1.0 - math.exp(-wy * ce)) ** gamma  # exp(-weighted ce), as LDAM-DRW
        out.append(factor * wy * ce)
    return float(np.mean(out))


def ref_ldam(z, y, counts, max_m=0.5, s=30.0, w=None):
    m = ref_margins(counts, max_m)
    terms = []
    for i in range(len(y)):
        zi = z[i].copy()
        zi[y[i]] -= m[y[i]]
        terms.append(lse(s * zi) - s * zi[y[i]])
    return weighted_mean(np.array(terms), y, w)


def strongest_wrong_class(zi: np.ndarray, target: int) -> int:
    best, best_j = -math.inf, -1
    for j, v in enumerate(zi):
        if j != target and v > best:
            best, best_j = v, j
    return best_j


def ref_elm(z, y, counts, max_m=0.5, s=30.0, lam=1.0, w=None, use_target_margin=True):
    m = ref_margins(counts, max_m)
    terms = []
    for i in range(len(y)):
        zi = z[i].copy()
        c_star = strongest_wrong_class(zi, y[i])
        zi[y[i]] = zi[y[i]] + lam * m[c_star] - (m[y[i]] if use_target_margin else 0.0)
        terms.append(lse(s * zi) - s * zi[y[i]])
    return weighted_mean(np.array(terms), y, w)


def ref_lmsce(z, y, lam=0.3, w=None):
    c = z.shape[1]
    regs = []
    for i in range(len(y)):
        rest = np.array([z[i, j] for j in range(c) if j != y[i]])
        log_q = log_softmax(rest)
        q = np.exp(log_q)
        regs.append(0.5 * float(np.sum((q - 1.0 / (c - 1)) * log_q)))
    return ref_ce(z, y, w) + lam * float(np.mean(regs))


def probs(z: np.ndarray) -> np.ndarray:
    return np.stack([np.exp(log_softmax(row)) for row in z])


def ref_mae(z, y, scale=1.0):
    p = probs(z)
    return scale * float(np.mean([1.0 - p[i, y[i]] for i in range(len(y))]))


def ref_rce(z, y, scale=1.0):
    p = np.clip(probs(z), 1e-7, 1.0)
    out = []
    for i in range(len(y)):
        label = np.full(z.shape[1], 1e-4)
        label[y[i]] = 1.0
        out.append(-float(np.sum(p[i] * np.log(label))))
    return scale * float(np.mean(out))


def ref_gce(z, y, q=0.7):
    p = np.clip(probs(z), 1e-7, 1.0)
    return float(np.mean([(1.0 - p[i, y[i]] ** q) / q for i in range(len(y))]))


def ref_nce(z, y, scale=1.0):
    out = []
    for i in range(len(y)):
        lp = log_softmax(z[i])
        out.append(-lp[y[i]] / -np.sum(lp))
    return scale * float(np.mean(out))


def ref_nfl(z, y, gamma=0.5, scale=1.0):
    out = []
    for i in range(len(y)):
        lp = log_softmax(z[i])
        a = (1.0 - np.exp(lp)) ** gamma
        out.append(-a[y[i]] * lp[y[i]] / np.sum(-a * lp))
    return scale * float(np.mean(out))


def ref_normalized_margin(cos, y, s, alpha):
    out = []
    for i in range(len(y)):
        t = s * (cos[i, y[i]] - alpha[y[i]])
        others = [s * cos[i, j] for j in range(cos.shape[1]) if j != y[i]]
        out.append(-(t - lse(np.array([t, *others]))))
    return float(np.mean(out))


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------


def counts_for(c: int) -> list[int]:
    """Long-tailed class counts (rho = 100); the CIFAR-10-LT ones for C = 10."""
    if c == 10:
        return list(CIFAR10_LT_100)
    return [int(500 * (1 / 100) ** (i / (c - 1))) for i in range(c)]


def batch(n: int, c: int, seed: int, spread: float = 3.0, cosine: bool = False):
    """Seeded float32 logits ``[n, c]`` (cosines in [-1, 1] if ``cosine``) and targets ``[n]``,
    with their exact float64 numpy copies."""
    g = torch.Generator().manual_seed(seed)
    if cosine:
        logits = torch.rand(n, c, generator=g) * 2 - 1
    else:
        logits = torch.randn(n, c, generator=g) * spread
    targets = torch.randint(0, c, (n,), generator=g)
    return logits, targets, logits.double().numpy(), targets.numpy()


def class_weights(c: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.2, 3.0, size=c)


def value(loss: torch.Tensor) -> float:
    assert loss.ndim == 0
    return float(loss.detach())


# ---------------------------------------------------------------------------------------------
# The references themselves
# ---------------------------------------------------------------------------------------------


def test_references_reproduce_hand_computed_values():
    z = np.array([[0.0, 0.0], [2.0, 0.0]])
    assert ref_ce(z, np.array([0, 0])) == pytest.approx(
        0.5 * (math.log(2) + math.log(1 + math.exp(-2))), abs=1e-12
    )
    m = ref_margins(CIFAR10_LT_100)
    assert m[9] == pytest.approx(0.5, abs=1e-12)
    assert m[0] == pytest.approx(0.5 * (50 / 5000) ** 0.25, abs=1e-12)
    # RCE closed form: -log(1e-4) * sum_{k != y} p_k
    assert ref_rce(np.zeros((1, 4)), np.array([1])) == pytest.approx(-math.log(1e-4) * 0.75)


# ---------------------------------------------------------------------------------------------
# Losses for class imbalance
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize(("n", "c"), SHAPES, ids=SHAPE_IDS)
def test_cross_entropy_is_the_weighted_mean_of_minus_log_p_y(n, c, weighted):
    logits, targets, z, y = batch(n, c, seed=1)
    w = class_weights(c, seed=2) if weighted else None
    loss = CrossEntropyLoss(weight=None if w is None else torch.tensor(w))
    assert value(loss(logits, targets)) == pytest.approx(ref_ce(z, y, w), abs=TOL)


@pytest.mark.parametrize("gamma", [0.0, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize(("n", "c"), SHAPES, ids=SHAPE_IDS)
def test_focal_is_the_ldam_drw_form_mean_of_modulated_weighted_ce(n, c, weighted, gamma):
    logits, targets, z, y = batch(n, c, seed=3)
    w = class_weights(c, seed=4) if weighted else None
    loss = FocalLoss(gamma, weight=None if w is None else torch.tensor(w))
    assert value(loss(logits, targets)) == pytest.approx(ref_focal(z, y, gamma, w), abs=TOL)


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize(("n", "c"), SHAPES, ids=SHAPE_IDS)
def test_focal_apl_form_uses_the_unweighted_p_y_and_equals_ldam_drw_form_without_weights(
    n, c, weighted
):
    logits, targets, z, y = batch(n, c, seed=5)
    w = class_weights(c, seed=6) if weighted else None
    weight = None if w is None else torch.tensor(w)
    apl = FocalLoss(0.5, weight=weight, detach_modulating=True)
    expected = ref_focal(z, y, 0.5, w, apl=True)
    assert value(apl(logits, targets)) == pytest.approx(expected, abs=TOL)
    if not weighted:
        assert value(FocalLoss(0.5)(logits, targets)) == pytest.approx(expected, abs=TOL)


def test_focal_gradients_follow_each_form():
    logits, targets, z, y = batch(16, 10, seed=7)
    n, c = z.shape
    gamma = 1.0
    p = probs(z)
    onehot = np.eye(c)[y]
    ce = ce_terms(z, y)
    p_y = np.exp(-ce)
    # APL: d/dz [const * ce] = (1 - p_y)^gamma (p - onehot) / N
    expected_apl = ((1 - p_y) ** gamma)[:, None] * (p - onehot) / n
    # LDAM-DRW: d/dce [(1 - e^-ce)^g ce] = g (1 - e^-ce)^(g-1) e^-ce ce + (1 - e^-ce)^g
    dfactor = gamma * (1 - p_y) ** (gamma - 1) * p_y * ce + (1 - p_y) ** gamma
    expected_ldam = dfactor[:, None] * (p - onehot) / n
    for detach, expected in [(True, expected_apl), (False, expected_ldam)]:
        x = logits.clone().requires_grad_(True)
        FocalLoss(gamma, detach_modulating=detach)(x, targets).backward()
        np.testing.assert_allclose(x.grad.double().numpy(), expected, atol=TOL)
    assert np.abs(expected_apl - expected_ldam).max() > 1e-3


def test_ldam_margin_is_largest_for_the_rarest_class():
    loss = LDAMLoss(CIFAR10_LT_100, max_m=0.5)
    m = loss.margins.double().numpy()
    assert m.shape == (10,)
    assert int(np.argmax(m)) == 9 and int(np.argmin(m)) == 0
    assert m.max() == pytest.approx(0.5, abs=1e-7)
    assert np.all(np.diff(m) > 0)  # counts decrease, so margins increase
    np.testing.assert_allclose(m, ref_margins(CIFAR10_LT_100), atol=1e-7)
    # m_j proportional to n_j^{-1/4}
    ratio = m * np.array(CIFAR10_LT_100, dtype=float) ** 0.25
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-6)


def test_ldam_max_margin_follows_max_m():
    assert float(LDAMLoss([100, 10, 1], max_m=0.8).margins.max()) == pytest.approx(0.8)
    assert float(LDAMLoss([7, 7], max_m=0.3).margins.min()) == pytest.approx(0.3)


def test_margins_are_buffers_and_weight_is_a_plain_attribute():
    for loss in (LDAMLoss(CIFAR10_LT_100), ELMLoss(CIFAR10_LT_100)):
        assert "margins" in dict(loss.named_buffers())
        assert "margins" in loss.state_dict()
        assert "weight" not in loss.state_dict()


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize(("n", "c"), SHAPES, ids=SHAPE_IDS)
def test_ldam_is_ce_of_scaled_logits_with_the_target_lowered_by_its_margin(n, c, weighted):
    logits, targets, z, y = batch(n, c, seed=8, cosine=True)
    counts = counts_for(c)
    w = class_weights(c, seed=9) if weighted else None
    loss = LDAMLoss(counts, max_m=0.5, s=30.0, weight=None if w is None else torch.tensor(w))
    expected = ref_ldam(z, y, counts, 0.5, 30.0, w)
    assert value(loss(logits, targets)) == pytest.approx(expected, abs=TOL)


def test_ldam_with_other_max_m_and_s():
    logits, targets, z, y = batch(20, 10, seed=10, cosine=True)
    loss = LDAMLoss(CIFAR10_LT_100, max_m=0.3, s=16.0)
    expected = ref_ldam(z, y, CIFAR10_LT_100, 0.3, 16.0)
    assert value(loss(logits, targets)) == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize("lam", [1.0, 0.5, -0.5])
@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize(("n", "c"), SHAPES, ids=SHAPE_IDS)
def test_elm_shifts_the_target_logit_by_lam_m_cstar_minus_m_y(n, c, weighted, lam):
    logits, targets, z, y = batch(n, c, seed=11, cosine=True)
    counts = counts_for(c)
    w = class_weights(c, seed=12) if weighted else None
    loss = ELMLoss(counts, lam=lam, weight=None if w is None else torch.tensor(w))
    expected = ref_elm(z, y, counts, 0.5, 30.0, lam, w)
    assert value(loss(logits, targets)) == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize(("n", "c"), SHAPES, ids=SHAPE_IDS)
def test_elm_without_delta_y_drops_the_target_margin(n, c, weighted):
    logits, targets, z, y = batch(n, c, seed=13, cosine=True)
    counts = counts_for(c)
    w = class_weights(c, seed=14) if weighted else None
    weight = None if w is None else torch.tensor(w)
    expected = ref_elm(z, y, counts, 0.5, 30.0, 0.3, w, use_target_margin=False)
    direct = ELMLoss(counts, lam=0.3, weight=weight, use_target_margin=False)
    built = make_loss("elm_wo_delta_y", cls_num_list=counts, lam=0.3, weight=weight)
    assert value(direct(logits, targets)) == pytest.approx(expected, abs=TOL)
    assert value(built(logits, targets)) == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
def test_elm_with_lam_zero_equals_ldam(weighted):
    logits, targets, _, _ = batch(64, 10, seed=15, cosine=True)
    weight = torch.tensor(class_weights(10, seed=16)) if weighted else None
    elm = ELMLoss(CIFAR10_LT_100, lam=0.0, weight=weight)
    ldam = LDAMLoss(CIFAR10_LT_100, weight=weight)
    assert value(elm(logits, targets)) == pytest.approx(value(ldam(logits, targets)), abs=1e-6)


def test_elm_effective_margin_on_cifar10_lt_is_smaller_than_ldams():
    m = ELMLoss(CIFAR10_LT_100, max_m=0.5, lam=1.0).margins.double().numpy()
    # rarest true class (9) against the most frequent wrong class (0), and the reverse pair
    assert m[9] - m[0] == pytest.approx(0.342, abs=1e-3)
    assert m[0] - m[9] == pytest.approx(-0.342, abs=1e-3)
    # one sample of class 9 whose strongest wrong logit is class 0: ELM is CE with the
    # target lowered by m_9 - m_0, LDAM lowers it by m_9 = 0.5
    z = np.array([[0.6, 0.1, -0.2, 0.0, 0.3, -0.5, 0.2, -0.1, 0.05, 0.55]])
    y = np.array([9])
    shifted = z.copy()
    shifted[0, 9] -= 0.5 - 0.5 * (50 / 5000) ** 0.25
    expected_elm = ref_ce(30.0 * shifted, y)
    logits, targets = torch.tensor(z, dtype=torch.float32), torch.tensor(y)
    elm = value(ELMLoss(CIFAR10_LT_100)(logits, targets))
    ldam = value(LDAMLoss(CIFAR10_LT_100)(logits, targets))
    assert elm == pytest.approx(expected_elm, abs=TOL)
    assert ldam > elm + 1.0


def test_elm_uses_the_second_largest_logit_when_the_target_is_the_largest():
    counts = CIFAR10_LT_100
    z = np.array([[0.2, 0.7, -0.3, 0.1, 0.0, -0.6, 0.4, 0.3, -0.2, 0.9]])
    y = np.array([9])  # the target holds the largest logit; c* must be class 1
    assert strongest_wrong_class(z[0], 9) == 1
    logits, targets = torch.tensor(z, dtype=torch.float32), torch.tensor(y)
    got = value(ELMLoss(counts)(logits, targets))
    assert got == pytest.approx(ref_elm(z, y, counts), abs=TOL)
    # taking c* = y (no masking) would cancel the margins for lam = 1: plain CE of s z
    assert abs(got - ref_ce(30.0 * z, y)) > 1e-2


@pytest.mark.parametrize("lam", [0.3, 0.0, 1.0])
@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize(("n", "c"), SHAPES, ids=SHAPE_IDS)
def test_lmsce_adds_the_non_target_uniformity_regulariser(n, c, weighted, lam):
    logits, targets, z, y = batch(n, c, seed=17)
    w = class_weights(c, seed=18) if weighted else None
    loss = LMSCELoss(lam=lam, weight=None if w is None else torch.tensor(w))
    assert value(loss(logits, targets)) == pytest.approx(ref_lmsce(z, y, lam, w), abs=TOL)


def test_lmsce_regulariser_is_not_trivially_zero():
    logits, targets, z, y = batch(32, 10, seed=19)
    assert abs(ref_lmsce(z, y, 0.3) - ref_ce(z, y)) > 1e-3
    lmsce = value(LMSCELoss(lam=0.3)(logits, targets))
    assert abs(lmsce - value(CrossEntropyLoss()(logits, targets))) > 1e-3


def test_lmsce_with_two_classes_is_plain_ce():
    logits, targets, z, y = batch(9, 2, seed=20)
    assert value(LMSCELoss(lam=0.3)(logits, targets)) == pytest.approx(ref_ce(z, y), abs=TOL)


# ---------------------------------------------------------------------------------------------
# Class-balanced weights and deferred re-weighting
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("beta", [0.9999, 0.999, 0.99])
def test_class_balanced_weights_follow_the_effective_number(beta):
    w = class_balanced_weights(CIFAR10_LT_100, beta=beta)
    assert w.dtype == torch.float32 and w.shape == (10,)
    raw = np.array([(1 - beta) / (1 - beta**n) for n in CIFAR10_LT_100])
    np.testing.assert_allclose(w.double().numpy(), raw / raw.sum() * 10, rtol=1e-6)
    assert float(w.sum()) == pytest.approx(10.0, abs=1e-5)
    assert int(torch.argmax(w)) == 9 and int(torch.argmin(w)) == 0


def test_class_balanced_weights_with_beta_zero_are_all_ones():
    np.testing.assert_allclose(class_balanced_weights([10, 3, 1], beta=0.0).numpy(), 1.0)


@pytest.mark.parametrize("name", ["ce", "focal", "ldam", "elm", "lmsce"])
def test_reassigning_weight_reweights_the_loss(name):
    """DRW: ``loss.weight = class_balanced_weights(...)`` switches re-weighting on."""
    kw = {"ce": {}, "focal": {"gamma": 1.0}, "lmsce": {}}.get(
        name, {"cls_num_list": CIFAR10_LT_100}
    )
    loss = make_loss(name, **kw)
    logits, targets, z, y = batch(64, 10, seed=21, cosine=name in ("ldam", "elm"))
    plain = value(loss(logits, targets))
    w = class_balanced_weights(CIFAR10_LT_100)
    loss.weight = w
    reweighted = value(loss(logits, targets))
    expected = {
        "ce": lambda wn: ref_ce(z, y, wn),
        "focal": lambda wn: ref_focal(z, y, 1.0, wn),
        "ldam": lambda wn: ref_ldam(z, y, CIFAR10_LT_100, w=wn),
        "elm": lambda wn: ref_elm(z, y, CIFAR10_LT_100, w=wn),
        "lmsce": lambda wn: ref_lmsce(z, y, 0.3, wn),
    }[name]
    assert plain == pytest.approx(expected(None), abs=TOL)
    assert reweighted == pytest.approx(expected(w.double().numpy()), abs=TOL)
    assert abs(reweighted - plain) > 1e-3
    loss.weight = None
    assert value(loss(logits, targets)) == pytest.approx(plain, abs=1e-7)
    loss.weight = w.tolist()  # a plain list of numbers is accepted too
    assert value(loss(logits, targets)) == pytest.approx(reweighted, abs=1e-6)


# ---------------------------------------------------------------------------------------------
# PAL's L_alpha
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha_kind", ["none", "scalar", "per_class"])
@pytest.mark.parametrize(("n", "c"), SHAPES, ids=SHAPE_IDS)
def test_normalized_margin_loss_is_pal_l_alpha(n, c, alpha_kind):
    logits, targets, cos, y = batch(n, c, seed=22, cosine=True)
    alpha_np = {
        "none": np.zeros(c),
        "scalar": np.full(c, 0.2),
        "per_class": np.random.default_rng(23).uniform(0.0, 0.4, size=c),
    }[alpha_kind]
    alpha = {"none": None, "scalar": 0.2, "per_class": torch.tensor(alpha_np)}[alpha_kind]
    loss = NormalizedMarginLoss(c, s=10.0, alpha=alpha)
    expected = ref_normalized_margin(cos, y, 10.0, alpha_np.astype(np.float32))
    assert value(loss(logits, targets)) == pytest.approx(expected, abs=TOL)


def test_normalized_margin_loss_without_margins_is_ce_of_scaled_cosines():
    logits, targets, cos, y = batch(12, 10, seed=24, cosine=True)
    got = value(NormalizedMarginLoss(10, s=2.0)(logits, targets))
    assert got == pytest.approx(ref_ce(2.0 * cos, y), abs=TOL)


# ---------------------------------------------------------------------------------------------
# Losses for label noise
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "c"), SHAPES, ids=SHAPE_IDS)
def test_noise_robust_losses_follow_their_formulas(n, c):
    logits, targets, z, y = batch(n, c, seed=25)
    cases = [
        (MAELoss(c), ref_mae(z, y)),
        (MAELoss(c, scale=10.0), ref_mae(z, y, 10.0)),
        (RCELoss(c), ref_rce(z, y)),
        (RCELoss(c, scale=0.1), ref_rce(z, y, 0.1)),
        (GCELoss(c), ref_gce(z, y, 0.7)),
        (GCELoss(c, q=0.3), ref_gce(z, y, 0.3)),
        (SCELoss(c, 0.1, 1.0), 0.1 * ref_ce(z, y) + 1.0 * ref_rce(z, y)),
        (SCELoss(c, 6.0, 0.1), 6.0 * ref_ce(z, y) + 0.1 * ref_rce(z, y)),
        (NCELoss(c), ref_nce(z, y)),
        (NCELoss(c, scale=10.0), ref_nce(z, y, 10.0)),
        (NFLLoss(c), ref_nfl(z, y, 0.5)),
        (NFLLoss(c, gamma=2.0, scale=3.0), ref_nfl(z, y, 2.0, 3.0)),
        (NCEandRCE(c, 10.0, 0.1), ref_nce(z, y, 10.0) + ref_rce(z, y, 0.1)),
        (NFLandRCE(c, 1.0, 10.0), ref_nfl(z, y, 0.5, 1.0) + ref_rce(z, y, 10.0)),
        (NFLandRCE(c, 10.0, 0.1, gamma=1.0), ref_nfl(z, y, 1.0, 10.0) + ref_rce(z, y, 0.1)),
        (NCEandMAE(c, 1.0, 10.0), ref_nce(z, y, 1.0) + ref_mae(z, y, 10.0)),
    ]
    for loss, expected in cases:
        assert value(loss(logits, targets)) == pytest.approx(expected, abs=TOL), type(loss)


def test_rce_is_minus_log_1e4_times_the_wrong_class_probability():
    logits, targets, z, y = batch(40, 10, seed=26)
    p = probs(z)
    wrong = np.mean([1.0 - p[i, y[i]] for i in range(len(y))])
    got = value(RCELoss(10)(logits, targets))
    assert got == pytest.approx(-math.log(1e-4) * wrong, abs=1e-4)


def test_rce_clamps_vanishing_probabilities_at_1e_minus_7():
    # a confident correct sample: the 99 wrong-class probabilities (~e^-100) count as 1e-7
    z = np.zeros((1, 100))
    z[0, 0] = 100.0
    logits, targets = torch.tensor(z, dtype=torch.float32), torch.tensor([0])
    expected = 10.0 * -math.log(1e-4) * 99 * 1e-7
    assert ref_rce(z, np.array([0]), scale=10.0) == pytest.approx(expected, rel=1e-9)
    assert value(RCELoss(100, scale=10.0)(logits, targets)) == pytest.approx(expected, abs=TOL)
    assert expected > 50 * TOL  # without the clamp the loss would be ~0


def test_gce_clamps_p_y_at_1e_minus_7():
    z = np.array([[0.0, 100.0]])  # p_0 ~ e^-100, clamped to 1e-7
    logits, targets = torch.tensor(z, dtype=torch.float32), torch.tensor([0])
    expected = (1 - 1e-7**0.7) / 0.7
    assert value(GCELoss(2)(logits, targets)) == pytest.approx(expected, abs=TOL)


def test_nfl_with_gamma_zero_is_nce_and_gce_with_q_one_is_mae():
    logits, targets, z, y = batch(30, 10, seed=27)
    assert value(NFLLoss(10, gamma=0.0)(logits, targets)) == pytest.approx(ref_nce(z, y), abs=TOL)
    assert value(GCELoss(10, q=1.0)(logits, targets)) == pytest.approx(ref_mae(z, y), abs=TOL)


def test_nfl_gradient_treats_the_focusing_factors_as_constants():
    logits, targets, z, y = batch(8, 5, seed=28)
    n, c = z.shape
    gamma, scale = 0.5, 2.0
    expected = np.zeros_like(z)
    for i in range(n):
        lp = log_softmax(z[i])
        p = np.exp(lp)
        a = (1.0 - p) ** gamma  # constants
        d = np.sum(-a * lp)
        num = -a[y[i]] * lp[y[i]]
        # d(num / d)/d lp_k = -a_y [k = y] / d + num a_k / d^2
        g_lp = a * num / d**2
        g_lp[y[i]] -= a[y[i]] / d
        # d lp_k / d z_j = [k = j] - p_j
        expected[i] = scale * (g_lp - p * g_lp.sum()) / n
    x = logits.clone().requires_grad_(True)
    NFLLoss(c, gamma=gamma, scale=scale)(x, targets).backward()
    np.testing.assert_allclose(x.grad.double().numpy(), expected, atol=TOL)


# ---------------------------------------------------------------------------------------------
# Every loss: registry, gradients, dtypes, devices
# ---------------------------------------------------------------------------------------------


def example_kwargs(name: str) -> dict:
    """Arguments that build loss ``name``: its first table method's (CIFAR-10's where they
    depend on the dataset) plus the facts of a CIFAR-10-LT run the registry says it needs."""
    entry = LOSSES[name]
    rows = [m for m in TABLE_METHODS if m.loss == name]
    kw = rows[0].kwargs("cifar10") if rows else {}
    facts = {"class_counts": CIFAR10_LT_100, "num_classes": 10}
    kw.update({registry.FACTS[f]: facts[f] for f in entry.needs})
    return kw


BUILDERS = {name: (example_kwargs(name), LOSSES[name].factory) for name in LOSS_NAMES}


def test_every_registered_loss_builds_from_its_declaration():
    assert len(LOSS_NAMES) >= 16 and len(set(LOSS_NAMES)) == len(LOSS_NAMES)
    for name, (kw, factory) in BUILDERS.items():
        loss = make_loss(name, **kw)
        if isinstance(factory, type):
            assert type(loss) is factory, name
        assert LOSSES[name].head in registry.HEAD_FAMILIES
        assert LOSSES[name].source, name
        # the facts a run supplies reach the constructor under their registered names
        built = registry.build_loss(
            name,
            {k: v for k, v in kw.items() if k not in registry.FACTS.values()},
            class_counts=CIFAR10_LT_100,
            num_classes=10,
        )
        assert type(built) is type(loss), name
    assert make_loss("elm", **BUILDERS["elm"][0]).use_target_margin is True
    assert make_loss("elm_wo_delta_y", **BUILDERS["elm"][0]).use_target_margin is False


def test_register_loss_rejects_a_bad_declaration():
    class Fine(torch.nn.Module):
        def __init__(self, num_classes: int, q: float = 0.5):
            super().__init__()

    cases = [
        (dict(name="ce"), "taken by"),
        (dict(name="fresh", head="sphere"), "head must be one of"),
    ]
    for kw, message in cases:
        name = kw.pop("name")
        with pytest.raises(ValueError, match=message):
            registry.register_loss(name, source="test", **kw)(Fine)
        assert "fresh" not in LOSSES


def test_what_a_loss_needs_of_a_run_is_read_from_its_constructor():
    assert LOSSES["ldam"].needs == ("class_counts",)  # LDAMLoss(cls_num_list, ...)
    assert LOSSES["gce"].needs == ("num_classes",)  # GCELoss(num_classes, q)
    assert LOSSES["focal"].needs == ()
    for name, entry in LOSSES.items():
        taken = {arg for fact, arg in registry.FACTS.items() if fact in entry.needs}
        assert taken == set(registry.FACTS.values()) & set(entry.arguments), name

    class Both(torch.nn.Module):
        def __init__(self, num_classes: int, cls_num_list, q: float = 0.5):
            super().__init__()
            self.num_classes, self.counts = num_classes, cls_num_list

    registry.register_loss("test_both", source="test")(Both)
    try:
        assert LOSSES["test_both"].needs == ("class_counts", "num_classes")
        built = registry.build_loss("test_both", {"q": 0.1}, class_counts=[3, 1], num_classes=2)
        assert (built.num_classes, built.counts) == (2, [3, 1])
    finally:
        del LOSSES["test_both"]


def test_loss_kw_is_checked_against_the_constructor():
    registry.check_loss_kw("focal", {"gamma": 2.0})
    with pytest.raises(ValueError, match=r"no argument 'gama'.*allowed: \['gamma'"):
        registry.check_loss_kw("focal", {"gama": 2.0})
    with pytest.raises(ValueError, match="the run supplies it"):
        registry.check_loss_kw("ldam", {"cls_num_list": [3, 2]})
    with pytest.raises(ValueError, match="has no argument"):
        make_loss("ce", gamma=1.0)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_make_loss_builds_each_name(name):
    kw, factory = BUILDERS[name]
    loss = make_loss(name, **kw)
    assert isinstance(loss, torch.nn.Module)
    if isinstance(factory, type):
        assert type(loss) is factory


def test_make_loss_rejects_an_unknown_name_listing_the_allowed_ones():
    with pytest.raises(ValueError, match="ldma") as err:
        make_loss("ldma", cls_num_list=CIFAR10_LT_100)
    for name in LOSS_NAMES:
        assert name in str(err.value)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_loss_has_finite_nonzero_gradients(name):
    kw, _ = BUILDERS[name]
    loss = make_loss(name, **kw)
    logits, targets, _, _ = batch(32, 10, seed=29, cosine=True)
    x = logits.clone().requires_grad_(True)
    out = loss(x, targets)
    out.backward()
    assert torch.isfinite(out)
    assert x.grad is not None and torch.isfinite(x.grad).all()
    assert float(x.grad.abs().sum()) > 1e-6


def test_lmsce_gradient_is_finite_when_one_wrong_class_dominates():
    logits = torch.tensor([[0.0, 50.0, -50.0, 0.0]], requires_grad=True)
    LMSCELoss()(logits, torch.tensor([0])).backward()
    assert torch.isfinite(logits.grad).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("name", list(BUILDERS))
def test_low_precision_logits_are_upcast_to_float32(name, dtype):
    kw, _ = BUILDERS[name]
    loss = make_loss(name, **kw)
    logits, targets, _, _ = batch(16, 10, seed=30, cosine=True)
    low = logits.to(dtype).requires_grad_(True)
    out = loss(low, targets)
    assert out.dtype == torch.float32
    # the same value as the float32 computation on the (exactly representable) rounded logits
    assert value(out) == pytest.approx(value(loss(low.detach().float(), targets)), abs=1e-6)
    out.backward()
    assert low.grad.dtype == dtype and torch.isfinite(low.grad.float()).all()


def test_float16_logits_match_the_float64_formula():
    logits, targets, _, y = batch(24, 10, seed=31, cosine=True)
    half = logits.half()
    z = half.double().numpy()
    elm = value(ELMLoss(CIFAR10_LT_100)(half, targets))
    assert elm == pytest.approx(ref_elm(z, y, CIFAR10_LT_100), abs=TOL)
    assert value(SCELoss(10, 0.1, 1.0)(half, targets)) == pytest.approx(
        0.1 * ref_ce(z, y) + ref_rce(z, y), abs=TOL
    )


def test_float64_logits_stay_float64_for_exact_checks():
    logits, targets, z, y = batch(16, 10, seed=32, cosine=True)
    out = LDAMLoss(CIFAR10_LT_100)(logits.double(), targets)
    assert out.dtype == torch.float64
    # margins are stored in float32, hence the 1e-6 rather than 1e-12
    assert value(out) == pytest.approx(ref_ldam(z, y, CIFAR10_LT_100), abs=1e-6)


def test_losses_accept_int32_targets():
    logits, targets, z, y = batch(10, 10, seed=33, cosine=True)
    got = value(ELMLoss(CIFAR10_LT_100)(logits, targets.int()))
    assert got == pytest.approx(ref_elm(z, y, CIFAR10_LT_100), abs=TOL)


def test_module_dtype_conversion_does_not_break_forward():
    loss = ELMLoss(CIFAR10_LT_100, weight=class_balanced_weights(CIFAR10_LT_100)).double()
    logits, targets, _, _ = batch(10, 10, seed=34, cosine=True)
    assert torch.isfinite(loss(logits, targets))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", list(BUILDERS))
def test_losses_run_on_cuda_with_weights_and_buffers_left_on_cpu(name):
    kw, _ = BUILDERS[name]
    loss = make_loss(name, **kw)
    if hasattr(loss, "weight"):
        loss.weight = class_balanced_weights(CIFAR10_LT_100)  # a CPU tensor
    logits, targets, _, _ = batch(32, 10, seed=35, cosine=True)
    on_cpu = value(loss(logits, targets))
    on_gpu = value(loss(logits.cuda(), targets.cuda()))
    assert on_gpu == pytest.approx(on_cpu, abs=TOL)
    assert value(loss.cuda()(logits.cuda(), targets.cuda())) == pytest.approx(on_cpu, abs=TOL)


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------

C10 = CIFAR10_LT_100
INVALID_ARGUMENTS = [
    # (build, error, fragments the message must contain)
    (lambda: LDAMLoss([]), ValueError, ["cls_num_list", "[]"]),
    (lambda: ELMLoss([]), ValueError, ["cls_num_list", "[]"]),
    (lambda: class_balanced_weights([]), ValueError, ["cls_num_list", "[]"]),
    (lambda: LDAMLoss([10, 0, 5]), ValueError, ["cls_num_list", "[10, 0, 5]", "> 0"]),
    (lambda: ELMLoss([10, -3]), ValueError, ["cls_num_list", "[10, -3]"]),
    (lambda: class_balanced_weights([5, 0]), ValueError, ["cls_num_list", "[5, 0]"]),
    (lambda: LDAMLoss(["a", "b"]), TypeError, ["cls_num_list", "'a'"]),
    (lambda: LDAMLoss(C10, max_m=-0.5), ValueError, ["max_m must be > 0, got -0.5"]),
    (lambda: LDAMLoss(C10, max_m=0), ValueError, ["max_m", "> 0", "got 0"]),
    (lambda: ELMLoss(C10, max_m=-1.0), ValueError, ["max_m", "-1.0"]),
    (lambda: LDAMLoss(C10, max_m="big"), TypeError, ["max_m", "'big'"]),
    (lambda: LDAMLoss(C10, s=0.0), ValueError, ["s must be > 0", "0.0"]),
    (lambda: ELMLoss(C10, s=-30), ValueError, ["s must be > 0", "-30"]),
    (lambda: NormalizedMarginLoss(10, s=-1.0), ValueError, ["s must be > 0", "-1.0"]),
    (lambda: ELMLoss(C10, lam=float("nan")), ValueError, ["lam", "nan"]),
    (lambda: GCELoss(10, q=0.0), ValueError, ["q must be in (0, 1]", "0.0"]),
    (lambda: GCELoss(10, q=1.5), ValueError, ["q must be in (0, 1]", "1.5"]),
    (lambda: GCELoss(10, q=-0.2), ValueError, ["q", "-0.2"]),
    (lambda: class_balanced_weights(C10, beta=1.0), ValueError, ["beta", "[0, 1)", "1.0"]),
    (lambda: class_balanced_weights(C10, beta=-0.1), ValueError, ["beta", "-0.1"]),
    (lambda: FocalLoss(-1.0), ValueError, ["gamma must be >= 0", "-1.0"]),
    (lambda: NFLLoss(10, gamma=-0.5), ValueError, ["gamma", "-0.5"]),
    (lambda: NFLandRCE(10, 1.0, 1.0, gamma=-2.0), ValueError, ["gamma", "-2.0"]),
    (lambda: MAELoss(1), ValueError, ["num_classes", ">= 2", "1"]),
    (lambda: NCELoss(0), ValueError, ["num_classes", "0"]),
    (lambda: NormalizedMarginLoss(1), ValueError, ["num_classes", "1"]),
    (lambda: RCELoss(2.5), TypeError, ["num_classes", "2.5"]),
    (lambda: SCELoss(1, 0.1, 1.0), ValueError, ["num_classes", "1"]),
    (lambda: MAELoss(10, scale=-1.0), ValueError, ["scale must be >= 0", "-1.0"]),
    (lambda: RCELoss(10, scale=-0.1), ValueError, ["scale", "-0.1"]),
    (lambda: NCELoss(10, scale=-2.0), ValueError, ["scale", "-2.0"]),
    (lambda: NFLLoss(10, scale=-3.0), ValueError, ["scale", "-3.0"]),
    (lambda: SCELoss(10, -0.1, 1.0), ValueError, ["alpha must be >= 0", "-0.1"]),
    (lambda: SCELoss(10, 0.1, -1.0), ValueError, ["beta must be >= 0", "-1.0"]),
    (lambda: NCEandRCE(10, -1.0, 1.0), ValueError, ["alpha", "-1.0"]),
    (lambda: NCEandRCE(10, 1.0, -1.5), ValueError, ["beta", "-1.5"]),
    (lambda: NFLandRCE(10, -2.0, 1.0), ValueError, ["alpha", "-2.0"]),
    (lambda: NCEandMAE(10, 1.0, -4.0), ValueError, ["beta", "-4.0"]),
    (lambda: LMSCELoss(lam=-0.3), ValueError, ["lam must be >= 0", "-0.3"]),
    (lambda: LDAMLoss(C10, weight=torch.ones(9)), ValueError, ["weight", "10", "9"]),
    (lambda: ELMLoss(C10, weight=[1.0, 2.0]), ValueError, ["weight", "10", "2"]),
    (lambda: CrossEntropyLoss(weight=torch.ones(2, 5)), ValueError, ["weight", "(2, 5)"]),
    (lambda: FocalLoss(1.0, weight=[1.0, -1.0]), ValueError, ["weight", ">= 0", "-1.0"]),
    (lambda: NormalizedMarginLoss(10, alpha=torch.zeros(9)), ValueError, ["alpha", "(9,)"]),
]


@pytest.mark.parametrize(
    ("build", "error", "fragments"),
    INVALID_ARGUMENTS,
    ids=[f"{i:02d}-{case[2][0][:24]}" for i, case in enumerate(INVALID_ARGUMENTS)],
)
def test_invalid_arguments_fail_at_construction_naming_argument_and_value(build, error, fragments):
    with pytest.raises(error) as err:
        build()
    for fragment in fragments:
        assert fragment in str(err.value), (fragment, str(err.value))


def test_reassigning_a_weight_of_the_wrong_length_is_rejected():
    loss = LDAMLoss(C10)
    with pytest.raises(ValueError, match="weight"):
        loss.weight = torch.ones(3)
    ce = CrossEntropyLoss(weight=torch.ones(3))  # C unknown until forward
    logits, targets, _, _ = batch(4, 10, seed=36)
    with pytest.raises(ValueError, match=r"weight.*10.*3"):
        ce(logits, targets)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_targets_outside_the_class_range_are_rejected(name):
    kw, _ = BUILDERS[name]
    loss = make_loss(name, **kw)
    logits = torch.zeros(3, 10)
    for bad in ([0, 10, 1], [-1, 0, 1]):
        with pytest.raises(ValueError, match=r"\[0, 10\)"):
            loss(logits, torch.tensor(bad))
    with pytest.raises(TypeError, match="integer"):
        loss(logits, torch.tensor([0.0, 1.0, 2.0]))


@pytest.mark.parametrize("name", list(BUILDERS))
def test_logits_must_be_2d(name):
    kw, _ = BUILDERS[name]
    loss = make_loss(name, **kw)
    with pytest.raises(ValueError, match="2-D"):
        loss(torch.zeros(10), torch.tensor([0]))
    with pytest.raises(ValueError, match="2-D"):
        loss(torch.zeros(2, 10, 3), torch.tensor([0, 1]))


@pytest.mark.parametrize(
    "loss",
    [
        LDAMLoss(C10),
        ELMLoss(C10),
        MAELoss(10),
        NCEandRCE(10, 1.0, 1.0),
        NormalizedMarginLoss(10),
    ],
    ids=lambda loss: type(loss).__name__,
)
def test_logits_with_the_wrong_number_of_classes_are_rejected(loss):
    with pytest.raises(ValueError, match=r"C=5.*num_classes=10"):
        loss(torch.zeros(4, 5), torch.tensor([0, 1, 2, 3]))
