"""Specification of palviz.collapse, palviz.calibration and palviz.diagnose: each measure
against an independent NumPy computation from its formula, a constructed neural-collapse
configuration, a hand-worked ECE, and the one-call diagnosis of torchvision and palviz models."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import palviz  # noqa: E402
from palviz import calibration, collapse  # noqa: E402
from palviz.diagnosis import Diagnosis, diagnose, find_classifier, post_hoc  # noqa: E402
from palviz.heads import AnchoredHead, CosineHead  # noqa: E402
from palviz.models import Classifier  # noqa: E402

TOL = 1e-5
COUNTS = [9, 5, 3, 2, 1]  # unequal class counts, K = 5


# ----------------------------------------------------------------------------------------------
# independent computations from the formulas (loops over samples and classes)
# ----------------------------------------------------------------------------------------------
def ref_means(h, y, k):
    return np.array([h[y == c].mean(axis=0) for c in range(k)])


def ref_center(h, y, k, center):
    return ref_means(h, y, k).mean(axis=0) if center == "class_means" else h.mean(axis=0)


def ref_nc1(h, y, k, center, classes=None):
    mu, mu_g = ref_means(h, y, k), ref_center(h, y, k, center)
    keep = [i for i in range(len(y)) if classes is None or y[i] in classes]
    sw = sum(np.outer(h[i] - mu[y[i]], h[i] - mu[y[i]]) for i in keep) / len(keep)
    sb = sum(np.outer(mu[c] - mu_g, mu[c] - mu_g) for c in range(k)) / k
    return np.trace(sw @ np.linalg.pinv(sb)) / k


def ref_pair_cosines(V):
    out = []
    for i in range(len(V)):
        for j in range(i + 1, len(V)):
            ni, nj = np.sqrt(V[i] @ V[i]), np.sqrt(V[j] @ V[j])
            if ni > 0 and nj > 0:
                out.append(V[i] @ V[j] / (ni * nj))
    return np.array(out)


def ref_equiangularity(V):
    c = ref_pair_cosines(V)
    return np.sqrt(np.mean((c - c.mean()) ** 2))


def ref_max_angle(V):
    return np.mean(np.abs(ref_pair_cosines(V) + 1.0 / (len(V) - 1)))


def ref_equinorm(V):
    n = np.array([np.sqrt(v @ v) for v in V])
    return np.sqrt(np.mean((n - n.mean()) ** 2)) / n.mean()


def ref_nc3(W, M):
    a = W / np.sqrt((W**2).sum()) - M / np.sqrt((M**2).sum())
    return np.sqrt((a**2).sum())


def ref_nc4(h, preds, mu):
    ncc = [min(range(len(mu)), key=lambda c: np.sum((x - mu[c]) ** 2)) for x in h]
    return np.mean(np.asarray(preds) != np.asarray(ncc))


def ref_ece(z, y, bins):
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = (conf > lo) & (conf <= hi)
        if inside.any():
            total += (
                inside.sum()
                / len(y)
                * abs((pred[inside] == y[inside]).mean() - conf[inside].mean())
            )
    return total


def ref_margin(z, y):
    return np.array([z[i, y[i]] - max(np.delete(z[i], y[i])) for i in range(len(y))])


def random_split(seed, counts=COUNTS, d=7):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(len(counts)), counts)
    h = rng.normal(size=(len(y), d)) + 2.0 * rng.normal(size=(len(counts), d))[y]
    return h, y


# ----------------------------------------------------------------------------------------------
# neural collapse on random configurations with unequal class counts
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("center", ["class_means", "samples"])
@pytest.mark.parametrize("d", [3, 7])  # d < K - 1 and d > K
def test_collapse_measures_match_their_formulas(seed, center, d):
    h, y = random_split(seed, d=d)
    k = len(COUNTS)
    rng = np.random.default_rng(seed + 10)
    W, b = rng.normal(size=(k, d)), rng.normal(size=k)
    M = ref_means(h, y, k) - ref_center(h, y, k, center)
    assert np.allclose(collapse.class_means(h, y, k), ref_means(h, y, k), atol=TOL)
    assert np.allclose(collapse.centered_means(h, y, k, center), M, atol=TOL)
    assert collapse.nc1(h, y, k, center) == pytest.approx(ref_nc1(h, y, k, center), abs=TOL)
    few = [2, 3, 4]
    assert collapse.nc1(h, y, k, center, classes=few) == pytest.approx(
        ref_nc1(h, y, k, center, classes=few), abs=TOL
    )
    for V in (M, W):
        assert collapse.equinorm(V) == pytest.approx(ref_equinorm(V), abs=TOL)
        assert collapse.equiangularity(V) == pytest.approx(ref_equiangularity(V), abs=TOL)
        assert collapse.max_angle(V) == pytest.approx(ref_max_angle(V), abs=TOL)
    assert collapse.nc3(W, M) == pytest.approx(ref_nc3(W, M), abs=TOL)
    preds = (h @ W.T + b).argmax(axis=1)
    expected = ref_nc4(h, preds, ref_means(h, y, k))
    assert collapse.nc4(h, W, b, ref_means(h, y, k)) == pytest.approx(expected, abs=TOL)
    assert collapse.nc4(h, None, None, ref_means(h, y, k), preds=preds) == pytest.approx(expected)


def test_the_two_centres_differ_under_imbalance_and_agree_when_balanced():
    h, y = random_split(3)
    k = len(COUNTS)
    a, s = collapse.global_mean(h, y, k), collapse.global_mean(h, y, k, center="samples")
    assert np.allclose(a, ref_means(h, y, k).mean(axis=0)) and np.allclose(s, h.mean(axis=0))
    assert np.linalg.norm(a - s) > 1e-2
    hb, yb = random_split(3, counts=[4] * k)
    assert np.allclose(collapse.global_mean(hb, yb, k), collapse.global_mean(hb, yb, k, "samples"))


def test_equiangularity_leaves_a_vanished_row_out_and_equinorm_keeps_its_norm():
    rng = np.random.default_rng(4)
    W = rng.normal(size=(5, 6))
    W[2] = 0.0
    kept = np.delete(W, 2, axis=0)
    assert collapse.equiangularity(W) == pytest.approx(ref_equiangularity(kept), abs=TOL)
    pairs = ref_pair_cosines(kept)
    assert collapse.max_angle(W) == pytest.approx(np.mean(np.abs(pairs + 1 / 4)), abs=TOL)
    assert collapse.equinorm(W) == pytest.approx(ref_equinorm(W), abs=TOL)


# ----------------------------------------------------------------------------------------------
# a constructed collapse: simplex ETF class means, shifted, unequal counts, no within-class spread
# ----------------------------------------------------------------------------------------------
def collapsed(k=5, d=8, radius=3.0, counts=(30, 12, 7, 3, 1), seed=0):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.normal(size=(d, k)))  # orthonormal columns [d, k]
    etf = (np.eye(k) - np.ones((k, k)) / k) @ U.T * radius  # centred simplex ETF rows
    offset = rng.normal(size=d) * 5.0
    means = etf + offset
    y = np.repeat(np.arange(k), counts)
    h = means[y]  # every feature on its class mean
    W = means - means.mean(axis=0)  # the class means centred on the mean of class means
    b = -W @ means.mean(axis=0)  # W h + b = W (h - mean of class means)
    return h, y, W, b, means


def test_a_simplex_configuration_collapses_under_the_class_means_convention():
    h, y, W, b, means = collapsed()
    k = W.shape[0]
    M = collapse.centered_means(h, y, k)
    assert collapse.nc1(h, y, k) == pytest.approx(0.0, abs=TOL)
    assert collapse.nc3(W, M) == pytest.approx(0.0, abs=TOL)
    assert collapse.nc4(h, W, b, means) == 0.0
    for V in (M, W):
        assert collapse.equinorm(V) == pytest.approx(0.0, abs=TOL)
        assert collapse.equiangularity(V) == pytest.approx(0.0, abs=TOL)
        assert collapse.max_angle(V) == pytest.approx(0.0, abs=TOL)
    # the sample mean is pulled towards the many-sample class: the means it centres are no ETF
    Ms = collapse.centered_means(h, y, k, center="samples")
    assert collapse.nc1(h, y, k, "samples") == pytest.approx(0.0, abs=TOL)  # no spread
    assert collapse.equinorm(Ms) > 0.05
    assert collapse.equiangularity(Ms) > 0.05
    assert collapse.max_angle(Ms) > 0.05
    assert collapse.nc3(W, Ms) > 0.05


def test_diagnose_reads_the_constructed_collapse_through_a_linear_layer():
    h, y, W, b, _ = collapsed()
    layer = nn.Linear(W.shape[1], W.shape[0]).double()
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(W))
        layer.bias.copy_(torch.as_tensor(b))
    model = nn.Sequential(nn.Identity(), layer)
    data = (torch.as_tensor(h), torch.as_tensor(y))
    for center, zero in (("class_means", True), ("samples", False)):
        d = diagnose(model, data, center=center, batch_size=16)
        assert d.value("accuracy") == 1.0 and d.value("NC4") == 0.0
        assert d.value("NC1") == pytest.approx(0.0, abs=TOL)
        for metric in ("NC3", "NC2 equinorm (means)", "NC2 equiangularity (means)"):
            assert (d.value(metric) < TOL) == zero, (center, metric)
        assert d.value("NC2 equiangularity (classifier)") == pytest.approx(0.0, abs=TOL)
        assert d.value("min prototype angle (deg)") == pytest.approx(
            np.degrees(np.arccos(-1 / 4)), abs=TOL
        )


# ----------------------------------------------------------------------------------------------
# calibration, worked by hand
# ----------------------------------------------------------------------------------------------
PROBS = np.array(
    [
        [0.35, 0.25, 0.20, 0.20],  # conf .35, pred 0, true 0: right
        [0.10, 0.38, 0.30, 0.22],  # conf .38, pred 1, true 2: wrong
        [0.55, 0.15, 0.15, 0.15],  # conf .55, pred 0, true 0: right
        [0.05, 0.05, 0.85, 0.05],  # conf .85, pred 2, true 2: right
        [0.90, 0.04, 0.03, 0.03],  # conf .90, pred 0, true 3: wrong
        [0.02, 0.02, 0.01, 0.95],  # conf .95, pred 3, true 3: right
    ]
)
TARGETS = np.array([0, 2, 0, 2, 3, 3])


def test_ece_with_five_bins_worked_by_hand():
    # bins (0,.2] (.2,.4] (.4,.6] (.6,.8] (.8,1]
    # (.2,.4]: 2 samples, accuracy 1/2, confidence (.35 + .38)/2 = .365, gap .135
    # (.4,.6]: 1 sample, accuracy 1, confidence .55, gap .45
    # (.8,1]:  3 samples, accuracy 2/3, confidence (.85 + .90 + .95)/3 = .90, gap .2333...
    # ECE = (2 * .135 + 1 * .45 + 3 * (.9 - 2/3)) / 6 = 1.42 / 6
    assert calibration.expected_calibration_error(PROBS, TARGETS, bins=5) == pytest.approx(
        1.42 / 6, abs=TOL
    )
    r = calibration.reliability_bins(PROBS, TARGETS, bins=5)
    assert r["count"].tolist() == [0, 2, 1, 0, 3]
    assert np.allclose(r["accuracy"][[1, 2, 4]], [0.5, 1.0, 2 / 3])
    assert np.allclose(r["confidence"][[1, 2, 4]], [0.365, 0.55, 0.9])
    assert np.isnan(r["accuracy"][0]) and np.isnan(r["confidence"][3])
    assert np.allclose(r["lower"], [0, 0.2, 0.4, 0.6, 0.8]) and r["upper"][-1] == 1.0


def test_ece_with_the_default_fifteen_bins_worked_by_hand():
    # width 1/15: .35, .38 in (5/15, 6/15]; .55 in (8/15, 9/15]; .85 in (12/15, 13/15];
    # .90 in (13/15, 14/15]; .95 in (14/15, 1]: gaps .135 (2 samples), .45, .15, .90, .05
    expected = (2 * 0.135 + 0.45 + 0.15 + 0.90 + 0.05) / 6
    assert calibration.expected_calibration_error(PROBS, TARGETS) == pytest.approx(
        expected, abs=TOL
    )
    assert calibration.reliability_bins(PROBS, TARGETS)["count"][[5, 8, 12, 13, 14]].tolist() == [
        2,
        1,
        1,
        1,
        1,
    ]
    # logits give the same: softmax(log p) = p
    logits = np.log(PROBS) + 3.0
    ece = calibration.expected_calibration_error(logits, TARGETS, kind="logits")
    assert ece == pytest.approx(expected, abs=TOL)


def test_a_confidence_on_a_bin_edge_falls_in_the_bin_below_it():
    # bins (0,.25] (.25,.5] (.5,.75] (.75,1]: a confidence of exactly .75 is in (.5,.75]
    probs, y = np.array([[0.75, 0.25], [0.25, 0.75]]), np.array([0, 0])
    r = calibration.reliability_bins(probs, y, bins=4)
    assert r["count"].tolist() == [0, 0, 2, 0]
    assert calibration.expected_calibration_error(probs, y, bins=4) == pytest.approx(0.25)


def test_ece_of_random_logits_matches_the_formula():
    rng = np.random.default_rng(5)
    z, y = rng.normal(size=(200, 7)) * 3, rng.integers(0, 7, 200)
    for bins in (1, 10, 15):
        assert calibration.expected_calibration_error(z, y, bins) == pytest.approx(
            ref_ece(z, y, bins), abs=TOL
        )


# ----------------------------------------------------------------------------------------------
# post-hoc re-balancing
# ----------------------------------------------------------------------------------------------
def test_logit_adjustment_and_tau_normalisation_match_their_formulas():
    rng = np.random.default_rng(6)
    z, counts = rng.normal(size=(4, 3)), np.array([50.0, 10.0, 2.0])
    for tau in (0.0, 0.5, 1.0, 2.0):
        out = calibration.logit_adjust(z, counts, tau)
        for i in range(4):
            for j in range(3):
                assert out[i, j] == pytest.approx(z[i, j] - tau * np.log(counts[j] / 62.0), abs=TOL)
    W = rng.normal(size=(3, 4)) * np.array([[5.0], [1.0], [0.2]])
    for tau in (0.0, 0.5, 1.0, 2.0):
        out = calibration.tau_normalize(W, tau)
        for j in range(3):
            assert np.allclose(out[j], W[j] / np.sqrt(W[j] @ W[j]) ** tau, atol=TOL)
    assert np.allclose(np.linalg.norm(calibration.tau_normalize(W, 1.0), axis=1), 1.0)


def test_choose_tau_picks_the_best_mean_class_accuracy_first_of_ties():
    y = np.array([0, 0, 1, 1])
    base = np.array([[2.0, 0.0], [2.0, 0.0], [1.0, 0.0], [0.0, 2.0]])

    def at(tau):  # tau >= 1 adds 1.5 to class 1: sample 2 becomes right, none wrong
        return base + np.array([0.0, 1.5]) * (tau >= 1.0)

    tau, acc = calibration.choose_tau(at, y, [0.0, 0.5, 1.0, 2.0])
    assert tau == 1.0
    assert acc.tolist() == [0.75, 0.75, 1.0, 1.0]


@pytest.mark.parametrize("normalize", [False, True])
def test_tau_normalisation_leaves_an_anchored_heads_predictions_unchanged(normalize):
    head = AnchoredHead(16, 10, normalize=normalize, scale=5.0)
    z = torch.randn(300, 16, generator=torch.Generator().manual_seed(7))
    before = head(z).argmax(1)
    W = head.prototypes.double().numpy()
    for tau in (0.3, 1.0, 2.0):
        Wt = torch.as_tensor(calibration.tau_normalize(W * 3.0, tau)).float()
        logits = (torch.nn.functional.normalize(z, dim=1) if normalize else z) @ Wt.T
        assert torch.equal(logits.argmax(1), before)


# ----------------------------------------------------------------------------------------------
# diagnose on real models
# ----------------------------------------------------------------------------------------------
def images(n=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    counts = [8, 6, 5, 5, 4, 3, 3, 2, 2, 2]
    return torch.randn(n, 3, 32, 32, generator=g), torch.repeat_interleave(
        torch.arange(10), torch.tensor(counts)
    )


def test_diagnose_on_a_torchvision_resnet18_matches_numpy_on_its_own_hook():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    x, y = images()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)
    model.train()
    d = diagnose(model, loader, bins=15)
    assert model.training  # the training mode is restored
    assert find_classifier(model) is model.fc
    caught = []
    handle = model.fc.register_forward_hook(lambda m, args, out: caught.append(args[0]))
    model.eval()
    with torch.no_grad():
        z = torch.cat([model(xb) for xb, _ in loader]).double().numpy()
    handle.remove()
    h, t, k = torch.cat(caught).double().numpy(), y.numpy(), 10
    W = model.fc.weight.detach().double().numpy()
    mu = ref_means(h, t, k)
    M = mu - mu.mean(axis=0)
    preds = z.argmax(1)
    assert d.value("accuracy") == pytest.approx(np.mean(preds == t), abs=TOL)
    assert d.value("NC1") == pytest.approx(ref_nc1(h, t, k, "class_means"), rel=TOL)
    assert d.value("NC2 equinorm (means)") == pytest.approx(ref_equinorm(M), abs=TOL)
    assert d.value("NC2 equiangularity (means)") == pytest.approx(ref_equiangularity(M), abs=TOL)
    assert d.value("NC2 equinorm (classifier)") == pytest.approx(ref_equinorm(W), abs=TOL)
    assert d.value("NC2 max-angle (classifier)") == pytest.approx(ref_max_angle(W), abs=TOL)
    assert d.value("NC3") == pytest.approx(ref_nc3(W, M), abs=TOL)
    assert d.value("NC4") == pytest.approx(ref_nc4(h, preds, mu), abs=TOL)
    assert d.value("ECE") == pytest.approx(ref_ece(z, t, 15), abs=TOL)
    assert d.value("mean sample margin") == pytest.approx(ref_margin(z, t).mean(), abs=TOL)
    few = np.flatnonzero(np.array([8, 6, 5, 5, 4, 3, 3, 2, 2, 2]) < 20)
    assert d.value("NC4", group="few") == pytest.approx(ref_nc4(h, preds, mu), abs=TOL)
    assert set(d.frame.group) == {"all", "few"} and few.size == 10  # every class is few-shot here
    pc = d.per_class
    assert pc["count"].tolist() == [8, 6, 5, 5, 4, 3, 3, 2, 2, 2]
    assert np.allclose(pc["classifier_norm"], np.linalg.norm(W, axis=1), atol=TOL)
    assert np.allclose(pc["feature_mean_norm"], np.linalg.norm(M, axis=1), atol=TOL)
    assert d.cosines.shape == (10, 10)
    assert d.reliability["count"].sum() == 40 and len(d.reliability) == 15


def classifier_with_anchored_head(normalize):
    torch.manual_seed(1)
    body = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 12))
    return Classifier(body, AnchoredHead(12, 4, normalize=normalize), 12)


def vectors(n_per_class=(150, 40, 12, 6), seed=2):
    g = torch.Generator().manual_seed(seed)
    y = torch.repeat_interleave(torch.arange(4), torch.tensor(n_per_class))
    return torch.randn(len(y), 6, generator=g) + y[:, None].float(), y


def test_diagnose_takes_a_palviz_classifiers_head_input_and_anchored_prototypes():
    model = classifier_with_anchored_head(normalize=True)
    x, y = vectors()
    xt, yt = vectors((10, 10, 10, 10), seed=3)
    d = diagnose(model, (x, y), test=(xt, yt), logit_scale=30.0, batch_size=50)
    with torch.no_grad():
        h = model.features(x).double().numpy()
        z = model(x).double().numpy() * 30.0
        zt = model(xt).double().numpy() * 30.0
    t, W = y.numpy(), model.head.prototypes.double().numpy()
    M = ref_means(h, t, 4) - ref_means(h, t, 4).mean(axis=0)
    assert find_classifier(model) is model.head
    assert d.value("NC3") == pytest.approx(ref_nc3(W, M), abs=TOL)
    assert d.value("NC1") == pytest.approx(ref_nc1(h, t, 4, "class_means"), rel=TOL)
    assert d.value("ECE") == pytest.approx(ref_ece(z, t, 15), abs=TOL)
    assert d.value("ECE", split="test") == pytest.approx(ref_ece(zt, yt.numpy(), 15), abs=TOL)
    assert d.value("NC2 equiangularity (classifier)") == pytest.approx(0.0, abs=1e-6)  # the simplex
    assert set(d.frame.group) == {"all", "many", "medium", "few"}
    assert d.logit_scale == 30.0 and "30" in d.notes[0] and "AnchoredHead" in d.notes[0]
    assert "training split" in d.split_note and "class means" in d.split_note
    # the scale changes confidence, never predictions
    d1 = diagnose(model, (x, y))
    assert d1.value("accuracy") == d.value("accuracy") and d1.value("ECE") != d.value("ECE")
    assert "cosines" in d1.notes[0]
    # the features= callable gives the same numbers as the hook
    d2 = diagnose(model, (x, y), features=model.features, logit_scale=30.0)
    assert d2.value("NC1") == pytest.approx(d.value("NC1"), abs=TOL)


def test_post_hoc_tau_normalisation_leaves_an_anchored_model_unchanged():
    model = classifier_with_anchored_head(normalize=False)
    x, y = vectors()
    xv, yv = vectors((10, 10, 10, 10), seed=4)
    xt, yt = vectors((10, 10, 10, 10), seed=5)
    counts = np.bincount(y.numpy())
    table = post_hoc(model, None, counts, held_out=(xv, yv), test=(xt, yt), taus=[0, 1, 2]).table
    acc = table.set_index(["method", "group"]).accuracy
    assert acc[("tau-normalisation", "all")] == acc[("none", "all")]
    # logit adjustment at the chosen tau, recomputed from the formula
    with torch.no_grad():
        zv, zt = model(xv).double().numpy(), model(xt).double().numpy()
    prior = counts / counts.sum()
    best = max(
        [0.0, 1.0, 2.0], key=lambda t: np.mean((zv - t * np.log(prior)).argmax(1) == yv.numpy())
    )
    chosen = table[table.method == "logit adjustment"].tau.iloc[0]
    assert chosen == best
    assert acc[("logit adjustment", "all")] == pytest.approx(
        np.mean((zt - chosen * np.log(prior)).argmax(1) == yt.numpy())
    )


def test_post_hoc_tau_normalisation_of_a_linear_layer_matches_the_formula():
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    with torch.no_grad():
        model[2].weight.mul_(torch.tensor([[4.0], [2.0], [1.0], [0.5]]))  # head classes longer
    x, y = vectors()
    xv, yv = vectors((10, 10, 10, 10), seed=7)
    xt, yt = vectors((10, 10, 10, 10), seed=8)
    taus = [0.0, 0.5, 1.0, 1.5]
    table = post_hoc(model, (x, y), held_out=(xv, yv), test=(xt, yt), taus=taus).table
    W, b = model[2].weight.detach().double().numpy(), model[2].bias.detach().double().numpy()
    with torch.no_grad():
        hv, ht = (model[:2](v).double().numpy() for v in (xv, xt))

    def accuracy(h, t, tau):  # h (w_j / ||w_j||^tau) + b_j, the bias kept
        Wt = np.array([w / np.sqrt(w @ w) ** tau for w in W])
        return np.mean((h @ Wt.T + b).argmax(1) == t.numpy())

    best = max(taus, key=lambda t: accuracy(hv, yv, t))  # balanced: accuracy = per-class mean
    row = table[(table.method == "tau-normalisation") & (table.group == "all")]
    assert row.tau.iloc[0] == best
    assert row.accuracy.iloc[0] == pytest.approx(accuracy(ht, yt, best))


def test_diagnose_of_a_cosine_head_notes_the_cosine_scale_and_plots():
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), CosineHead(8, 4))
    x, y = vectors()
    d = diagnose(model, (x, y))
    assert isinstance(d, Diagnosis) and "cosines in [-1, 1]" in d.notes[0]
    assert find_classifier(model) is model[2]
    fig = d.plot()
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert "reliability, train split: ECE" in " ".join(titles) and fig.get_suptitle()
    plt.close(fig)


def test_diagnose_reports_a_vanished_classifier_row_and_a_test_split_without_a_class():
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    with torch.no_grad():
        model[2].weight[1] = 0.0
    x, y = vectors()
    xt, yt = vectors((10, 0, 10, 10), seed=6)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, y, torch.arange(len(y))), batch_size=64
    )  # (x, y, index) batches: the index is ignored
    d = diagnose(model, loader, test=(xt, yt))
    assert d.value("vanished classifier rows") == 1
    assert np.isnan(d.cosines[1]).all() and np.isnan(d.cosines[:, 1]).all()
    W = model[2].weight.detach().double().numpy()
    kept = np.delete(W, 1, axis=0)
    assert d.value("NC2 equiangularity (classifier)") == pytest.approx(
        ref_equiangularity(kept), abs=TOL
    )
    assert "test split lacks a class" in d.notes[-1]
    assert d.value("accuracy", split="test") >= 0.0
    with pytest.raises(KeyError, match="no 'NC1' for split='test'"):
        d.value("NC1", split="test")
    assert d.value("NC4", split="test") >= 0.0  # against the training class means


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_diagnose_on_cuda_gives_the_cpu_numbers():
    model = classifier_with_anchored_head(normalize=True)
    x, y = vectors()
    on_cpu = diagnose(model, (x, y), logit_scale=30.0).frame
    on_gpu = diagnose(model, (x, y), logit_scale=30.0, device="cuda").frame
    assert next(model.parameters()).is_cuda
    assert on_cpu.metric.tolist() == on_gpu.metric.tolist()
    assert np.allclose(on_cpu.value, on_gpu.value, atol=1e-4)


def test_diagnose_is_exported_from_palviz():
    assert palviz.diagnose is diagnose


# ----------------------------------------------------------------------------------------------
# bad arguments
# ----------------------------------------------------------------------------------------------
def test_bad_arguments_raise_clear_errors():
    model = classifier_with_anchored_head(normalize=False)
    x, y = vectors()
    with pytest.raises(ValueError, match=r"center must be one of \['class_means', 'samples'\]"):
        diagnose(model, (x, y), center="median")
    with pytest.raises(ValueError, match="bins must be >= 1, got 0"):
        diagnose(model, (x, y), bins=0)
    with pytest.raises(ValueError, match="logit_scale must be > 0, got -1"):
        diagnose(model, (x, y), logit_scale=-1)
    with pytest.raises(ValueError, match="data must be a torch DataLoader"):
        diagnose(model, x)
    with pytest.raises(ValueError, match="pass features="):
        diagnose(nn.Sequential(nn.Flatten()), (x, y))
    with pytest.raises(ValueError, match=r"data must be every class present, got 'no sample of"):
        diagnose(model, (x[y < 3], y[y < 3]))
    with pytest.raises(ValueError, match=r"class_counts must be one count per class \(4\)"):
        diagnose(model, (x, y), class_counts=[5, 5, 5])
    with pytest.raises(ValueError, match="class_counts must be counts > 0"):
        diagnose(model, (x, y), class_counts=[5, 0, 5, 5])
    h, t = random_split(0)
    with pytest.raises(ValueError, match=r"targets must be every class 0..5 present"):
        collapse.nc1(h, t, 6)
    with pytest.raises(ValueError, match="center must be one of"):
        collapse.nc1(h, t, 5, center="mean")
    with pytest.raises(ValueError, match=r"features must have shape \(20, d\)"):
        collapse.class_means(h[:-1], t, 5)
    with pytest.raises(ValueError, match="vectors must be at least 2 rows"):
        collapse.equinorm(np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"M must have shape \(5, 7\)"):
        collapse.nc3(np.ones((5, 7)), np.ones((4, 7)))
    with pytest.raises(ValueError, match="W must be a matrix with"):
        collapse.nc3(np.zeros((5, 7)), np.ones((5, 7)))
    with pytest.raises(ValueError, match="kind must be one of"):
        calibration.expected_calibration_error(PROBS, TARGETS, kind="odds")
    with pytest.raises(ValueError, match="probs_or_logits must be rows >= 0 summing to 1"):
        calibration.expected_calibration_error(PROBS * 2, TARGETS, kind="probs")
    with pytest.raises(ValueError, match="tau must be finite"):
        calibration.tau_normalize(np.ones((3, 2)), float("nan"))
    with pytest.raises(ValueError, match=r"logits must have shape \(N, 3\)"):
        calibration.logit_adjust(np.ones((2, 4)), [1, 2, 3])
    with pytest.raises(ValueError, match="taus must be a non-empty sequence"):
        calibration.choose_tau(lambda t: PROBS, TARGETS, [])


# ----------------------------------------------------------------------------------------------
# what diagnose reads and what it refuses (palviz.diagnosis_inputs)
# ----------------------------------------------------------------------------------------------
class Net(nn.Module):
    """A body and a classifier layer ``fc``, named as torchvision names them."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(6)
        self.body = nn.Sequential(nn.Linear(6, 8), nn.ReLU())
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(self.body(x))


class CustomHead(nn.Module):
    """A head holding its own class vectors as a Parameter, no nn.Linear: logits 2 x W^T h."""

    def __init__(self, d, k):
        super().__init__()
        self.W = nn.Parameter(torch.randn(k, d, generator=torch.Generator().manual_seed(7)))

    def forward(self, x):
        return x @ self.W.T * 2


def ten_classes(per_class=5):
    g = torch.Generator().manual_seed(8)
    y = torch.arange(10).repeat(per_class)
    return torch.randn(len(y), 8, generator=g) + y[:, None].float(), y


def test_diagnose_names_the_layer_it_read_and_takes_one_by_name_or_module():
    model = Net()
    x, y = vectors()
    d = diagnose(model, (x, y))
    assert d.layer == "fc" and "'fc' (Linear, weight (4, 8))" in d.notes[1]
    for layer in ("fc", model.fc):
        assert diagnose(model, (x, y), layer=layer).frame.equals(d.frame)
    anchored = diagnose(classifier_with_anchored_head(normalize=False), (x, y))
    assert anchored.layer == "head" and "'head' (AnchoredHead, weight (4, 12))" in anchored.notes[1]
    with pytest.raises(ValueError, match=r"layer must be the name of a module of the model") as e:
        diagnose(model, (x, y), layer="fc2")
    assert "'body.0', 'fc'" in str(e.value) and str(e.value).endswith("got 'fc2'")
    with pytest.raises(ValueError, match="layer must be a module of the model, got a Linear that"):
        diagnose(model, (x, y), layer=nn.Linear(8, 4))
    with pytest.raises(TypeError, match="layer must be None, a module name .* got an int"):
        diagnose(model, (x, y), layer=3)


def test_diagnose_refuses_logits_that_its_classifier_layer_does_not_output():
    model = nn.Sequential(nn.Linear(8, 10), CustomHead(10, 10))  # the Linear has K = 10 outputs
    x, y = ten_classes()
    with pytest.raises(ValueError) as e:
        diagnose(model, (x, y))
    message = str(e.value)
    assert message.startswith("layer must be the module whose output is the model's logits")
    assert "got '0' (Linear, weight (10, 8)), found by find_classifier" in message
    assert "differ by up to" in message and "pass layer=" in message and "features=" in message
    # the head named: its input is read as the features, no class vectors (noted)
    d = diagnose(model, (x, y), layer="1")
    with torch.no_grad():
        h = model[0](x).double().numpy()
    assert d.layer == "1" and "'1' (CustomHead)" in d.notes[1] and d.cosines is None
    assert d.value("NC1") == pytest.approx(ref_nc1(h, y.numpy(), 10, "class_means"), rel=TOL)
    assert "NC3" not in set(d.frame.metric)
    # features= given: the Linear's rows are not read, and the notes say why
    d = diagnose(model, (x, y), features=model[0])
    assert d.layer is None and d.cosines is None and "not the model's logits" in d.notes[1]
    assert d.value("NC1") == pytest.approx(ref_nc1(h, y.numpy(), 10, "class_means"), rel=TOL)
    # a Classifier whose head is an MLP: its input is not the input of its last Linear
    torch.manual_seed(9)
    mlp = nn.Sequential(nn.Linear(12, 12), nn.ReLU(), nn.Linear(12, 4))
    model = Classifier(nn.Sequential(nn.Linear(6, 12), nn.ReLU()), mlp, 12)
    x, y = vectors()
    with pytest.raises(ValueError, match=r"the inputs of 'head' \(the features\) and 'head.2'"):
        diagnose(model, (x, y))
    assert diagnose(model, (x, y), layer="head.2").layer == "head.2"
    # a log-softmax after the layer shifts each row by a constant: the same measures
    torch.manual_seed(10)
    logsoftmax = nn.Sequential(nn.Linear(6, 4), nn.LogSoftmax(dim=1))
    d = diagnose(logsoftmax, (x, y))
    assert d.layer == "0" and d.value("ECE") == pytest.approx(
        diagnose(logsoftmax[0], (x, y)).value("ECE"), abs=TOL
    )


def test_diagnose_refuses_probabilities():
    torch.manual_seed(11)
    model = nn.Sequential(nn.Linear(6, 4), nn.Softmax(dim=1))
    x, y = vectors()
    with pytest.raises(ValueError) as e:
        diagnose(model, (x, y))
    message = str(e.value)
    assert message.startswith("model must be a model whose outputs are logits")
    assert "got outputs that look like probabilities" in message
    assert "remove the final softmax" in message and "model[:-1]" in message
    assert diagnose(model[:-1], (x, y)).layer == "0"


@pytest.mark.parametrize(
    "labels, dtype",
    [
        (lambda y: y.float(), "torch.float32"),  # whole numbers, still refused
        (lambda y: y.numpy().astype(np.float64), "float64"),
        (lambda y: y % 2 == 0, "torch.bool"),
    ],
)
def test_diagnose_refuses_labels_that_are_not_integers(labels, dtype):
    model = Net()
    x, y = vectors()
    rule = r"integer class indices \(an integer tensor or array\), got dtype " + dtype
    with pytest.raises(ValueError, match="the labels of data must be " + rule):
        diagnose(model, (x, labels(y)))
    with pytest.raises(ValueError, match="the labels of test must be " + rule):
        diagnose(model, (x, y), test=(x, labels(y)))
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, torch.as_tensor(labels(y))), batch_size=64
    )
    with pytest.raises(ValueError, match="the labels of data must be integer class indices"):
        diagnose(model, loader)
    d = diagnose(model, (x, y.numpy().astype(np.int32)))  # integer arrays are read as they are
    assert d.value("accuracy") == diagnose(model, (x, y)).value("accuracy")


def test_diagnose_refuses_labels_passed_as_class_counts():
    model = Net()
    x, y = vectors()
    n = len(y)
    with pytest.raises(ValueError) as e:
        diagnose(model, x, y)  # for diagnose(model, (x, y))
    message = str(e.value)
    assert message.startswith("class_counts must be the training counts of the K classes")
    assert f"a tensor of shape ({n},), torch.int64: [0, 0, 0" in message  # shortened
    assert f"one entry per sample of data ({n})" in message
    assert "call diagnose(model, (x, y))" in message
    with pytest.raises(ValueError, match=r"class_counts must be counts > 0 .*diagnose\(model, "):
        diagnose(model, (x, y), y)
    with pytest.raises(ValueError) as e:
        diagnose(model, (x, y), class_counts=[150, 40, 12])
    message = str(e.value)
    assert message.startswith("class_counts must be one count per class (4): the training")
    assert "got [150.0, 40.0, 12.0]" in message and "diagnose(model, (x, y))" in message
    with pytest.raises(ValueError, match=r"data must be a torch DataLoader.*got a Tensor of shape"):
        diagnose(model, x)


def test_diagnose_refuses_class_counts_ordered_against_the_training_labels():
    model = Net()
    x, y = vectors()  # 150, 40, 12 and 6 samples
    with pytest.raises(ValueError) as e:
        diagnose(model, (x, y), [6, 12, 40, 150])
    message = str(e.value)
    assert message.startswith("class_counts must be the training counts per class, in the order")
    assert "class 3 is given 150 and class 0 6, but data holds 6 samples of class 3" in message
    assert "class_counts order the classes [3, 2, 1, 0], data's labels [0, 1, 2, 3]" in message
    # counts of a training split that data sub-samples uniformly are read as given
    d = diagnose(model, (x[::3], y[::3]), [150, 40, 12, 6])
    assert d.per_class["count"].tolist()[:4] == [150, 40, 12, 6]
    assert d.value("accuracy", group="many") >= 0.0
    # two classes near each other in count may swap without a factor 2 between them
    diagnose(model, (x, y), [150, 40, 6, 12])


def test_diagnose_names_the_split_and_sample_of_non_finite_values():
    model = Net()
    x, y = vectors()
    xt = x.clone()
    xt[17] = float("nan")
    with pytest.raises(ValueError, match="logits of split 'test' are not finite from sample 17 "):
        diagnose(model, (x, y), test=(xt, y), batch_size=10)

    def features(v):
        h = model.body(v).clone()
        h[3] = float("inf")
        return h

    with pytest.raises(ValueError, match="features of split 'train' are not finite from sample 3"):
        diagnose(model, (x, y), features=features, batch_size=64)


def test_diagnose_refuses_index_first_batches_a_tensor_as_features_and_a_missing_device(
    monkeypatch,
):
    model = Net()
    x, y = vectors()
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.arange(len(y)), x, y), batch_size=64
    )
    with pytest.raises(ValueError) as e:
        diagnose(model, loader)
    message = str(e.value)
    assert message.startswith("data must be a DataLoader yielding (x, y) or (x, y, index) batches")
    assert "look like (index, x, y)" in message and "reorder its items to (x, y, index)" in message
    h = torch.randn(len(y), 8)
    with pytest.raises(ValueError) as e:
        diagnose(model, (x, y), features=h)
    message = str(e.value)
    assert message.startswith("features must be None or a function x -> features")
    assert f"got a tensor of shape ({len(y)}, 8), torch.float32: [" in message
    assert "..." in message and len(message) < 250  # never the whole tensor
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError) as e:
        diagnose(model, (x, y), device="cuda")
    assert str(e.value) == (
        "device must be None (where the model's parameters are), 'auto' or a device this "
        "machine has: ['cpu'], got 'cuda'"
    )
    assert next(model.parameters()).device.type == "cpu"  # refused before any work


def test_post_hoc_takes_the_layer_and_checks_its_class_counts():
    torch.manual_seed(12)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    x, y = vectors((10, 10, 10, 10), seed=7)
    counts = [150, 40, 12, 6]
    with pytest.warns(UserWarning, match="held_out is the test split"):
        table = post_hoc(model, None, counts, held_out=(x, y), test=(x, y), taus=[0, 1], layer="2")
    assert "tau-normalisation" in set(table.table.method)
    with pytest.raises(ValueError, match=r"class_counts must be one count per class \(4\)"):
        post_hoc(model, None, counts[:3], held_out=(x, y), test=(x, y))
