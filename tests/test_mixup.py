"""mixup (``palviz.losses.mixup``, ``TrainConfig(mixup_alpha=...)``; Zhang et al., ICLR 2018):
the mixed batch lam x + (1 - lam) x[perm] and the mixed loss lam L(z, y) + (1 - lam) L(z, y[perm])
against the formula in numpy; mixup_alpha = 0 trains exactly the plain SGD loop and draws
nothing; the rival's recipe ETF+DR+mixup."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from palviz import train as ptrain
from palviz.data import BatchIterator
from palviz.experiments import methods, plan, recipes
from palviz.losses import mixup as pmixup
from palviz.models import make_model
from palviz.train import TrainConfig, fit


def blobs(n: int = 96, c: int = 4, d: int = 40, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % c
    return torch.randn(c, d, generator=g)[y] + torch.randn(n, d, generator=g), y


def config(**kw) -> TrainConfig:
    base = {"epochs": 3, "batch_size": 32, "lr": 0.05, "schedule": "constant", "seed": 3}
    return TrainConfig(**{**base, "progress": False, "device": "cpu", **kw})


def ref_ce(z: np.ndarray, y: np.ndarray) -> float:
    """mean_i log sum_j e^{z_ij} - z_{i y_i}, one sample at a time."""
    terms = []
    for zi, yi in zip(z, y, strict=True):
        m = max(zi)
        terms.append(m + math.log(sum(math.exp(v - m) for v in zi)) - zi[yi])
    return float(np.mean(terms))


def test_the_mixed_batch_is_lam_x_plus_one_minus_lam_x_perm():
    x = torch.randn(5, 3, 4, 4, generator=torch.Generator().manual_seed(1))
    perm, lam = torch.tensor([3, 0, 4, 1, 2]), 0.3
    got = pmixup.mixup_inputs(x, lam, perm).double().numpy()
    xn = x.double().numpy()
    expected = np.stack([lam * xn[i] + (1 - lam) * xn[int(perm[i])] for i in range(5)])
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_the_mixed_loss_is_lam_l_y_plus_one_minus_lam_l_y_perm():
    g = torch.Generator().manual_seed(2)
    z, y = torch.randn(6, 5, generator=g) * 2, torch.tensor([0, 1, 2, 3, 4, 0])
    perm, lam = torch.tensor([5, 4, 3, 2, 1, 0]), 0.7
    got = float(pmixup.mixup_loss(nn.functional.cross_entropy, z, y, (lam, perm)))
    zn, yn = z.double().numpy(), y.numpy()
    expected = lam * ref_ce(zn, yn) + (1 - lam) * ref_ce(zn, yn[perm.numpy()])
    assert got == pytest.approx(expected, abs=1e-5)
    # without mixup: the loss itself
    plain = float(pmixup.mixup_loss(nn.functional.cross_entropy, z, y, None))
    assert plain == pytest.approx(ref_ce(zn, yn), abs=1e-5)


def test_the_draw_is_a_beta_weight_and_a_permutation_from_the_generator():
    lam, perm = pmixup.mixup_draw(np.random.default_rng(4), 1.0, 10)
    assert 0.0 < lam < 1.0 and sorted(perm.tolist()) == list(range(10))
    again = pmixup.mixup_draw(np.random.default_rng(4), 1.0, 10)
    assert again[0] == lam and torch.equal(again[1], perm)
    rng = np.random.default_rng(5)
    draws = [pmixup.mixup_draw(rng, 0.4, 2)[0] for _ in range(4000)]
    # Beta(0.4, 0.4): mean 1/2, variance a^2 / ((2a)^2 (2a + 1)) = 1 / (4 (2a + 1)) = 0.1389
    assert np.mean(draws) == pytest.approx(0.5, abs=0.03)
    assert np.var(draws) == pytest.approx(1 / (4 * 1.8), abs=0.015)
    x = torch.ones(3, 2)
    assert pmixup.mixup_batch(x, None, 1.0) == (x, None)
    with pytest.raises(ValueError, match="alpha must be > 0, got 0"):
        pmixup.mixup_draw(np.random.default_rng(0), 0, 3)


def plain_sgd(net: nn.Module, data, cfg: TrainConfig) -> None:
    """The SGD loop of fit without mixup, written out: the same batches, seeds and rates."""
    x, y = data
    batches = BatchIterator(x, y, cfg.batch_size, shuffle=True, seed=cfg.seed, device="cpu")
    opt = torch.optim.SGD(
        net.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
    )
    for epoch in range(cfg.epochs):
        torch.manual_seed(ptrain._epoch_seed(cfg.seed, epoch))
        net.train()
        for xb, yb in batches.epoch(epoch):
            loss = nn.functional.cross_entropy(net(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()


def test_mixup_alpha_zero_trains_the_plain_loop_bit_for_bit_and_draws_nothing(monkeypatch):
    def refuse(*_args, **_kw):
        raise AssertionError("mixup drew with mixup_alpha = 0")

    monkeypatch.setattr(pmixup, "mixup_draw", refuse)  # what fit's mixup_batch would call
    data = blobs()
    torch.manual_seed(1)
    trained = make_model("mlp1d", 4)
    torch.manual_seed(1)
    by_hand = make_model("mlp1d", 4)
    fit(trained, nn.CrossEntropyLoss(), data, None, config(mixup_alpha=0.0))
    plain_sgd(by_hand, data, config())
    for (name, a), b in zip(
        trained.state_dict().items(), by_hand.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name
    assert TrainConfig().mixup_alpha == 0.0


class Recording(nn.Module):
    """Cross entropy, recording the targets of every call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[torch.Tensor] = []

    def forward(self, logits, targets):
        self.calls.append(targets.clone())
        return nn.functional.cross_entropy(logits, targets)


def test_mixup_in_fit_pairs_each_batch_with_its_permuted_labels_reproducibly():
    data = blobs()
    runs = []
    for _ in range(2):
        torch.manual_seed(1)
        net, loss = make_model("mlp1d", 4), Recording()
        fit(net, loss, data, None, config(mixup_alpha=1.0))
        runs.append((net.state_dict(), loss.calls))
    (params, calls), (params2, calls2) = runs
    assert len(calls) == 2 * 3 * 3  # two calls per batch, 3 batches a epoch, 3 epochs
    for first, second in zip(calls[::2], calls[1::2], strict=True):
        assert sorted(first.tolist()) == sorted(second.tolist())  # y and y[perm]
    assert any(not torch.equal(a, b) for a, b in zip(calls[::2], calls[1::2], strict=True))
    assert all(torch.equal(params[k], params2[k]) for k in params)  # seeded per (seed, epoch)
    torch.manual_seed(1)
    plain = make_model("mlp1d", 4)
    fit(plain, nn.CrossEntropyLoss(), data, None, config())
    assert any(not torch.equal(params[k], v) for k, v in plain.state_dict().items())


def test_mixup_alpha_is_checked_and_round_trips():
    with pytest.raises(ValueError, match=r"TrainConfig.mixup_alpha must be >= 0, got -1"):
        TrainConfig(mixup_alpha=-1)
    cfg = TrainConfig(mixup_alpha=1.0)
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg and cfg.to_dict()["mixup_alpha"] == 1.0


def test_the_rival_mixup_recipe_is_etf_dr_with_alpha_one_in_full_and_paper_only():
    m = methods.method("long_tailed", "ETF+DR+mixup")
    assert m.loss == "dot_regression" and m.base.mixup_alpha == 1.0
    assert m.head() == ("anchored", {"normalize": True, "scale": 1.0})
    spec = recipes.lt_spec("ETF+DR+mixup", profile="paper", dataset="cifar10")
    assert spec.train.mixup_alpha == 1.0 and spec.label == "ETF+DR+mixup"
    assert recipes.lt_spec("ETF+DR", profile="paper", dataset="cifar10").train.mixup_alpha == 0
    for profile in ("full", "paper"):
        assert "ETF+DR+mixup" in recipes.long_tailed_setup(profile)["methods"]
    for profile in ("smoke", "quick"):
        specs = [s for n in plan.EXPERIMENTS for s in plan.planned_specs(n, profile)]
        assert {s.train.mixup_alpha for s in specs} == {0.0}
    row = [r for r in methods.method_table("long_tailed").splitlines() if "ETF+DR+mixup" in r]
    assert len(row) == 1 and "mixup alpha=1" in row[0]
