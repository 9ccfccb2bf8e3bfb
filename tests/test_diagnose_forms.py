"""Specification of what palviz.diagnose adds to the measures: the literature's second forms of
NC2, NC3 and NC4 against independent NumPy computations, NC1 per shot group from one pass, the
diagnosis of checkpoints over training, post_hoc's result, the cost at 1,000 classes and the
figure at 10 and 1,000 classes."""

from __future__ import annotations

import time
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from palviz import collapse  # noqa: E402
from palviz.diagnosis import PostHoc, diagnose, diagnose_checkpoints, post_hoc  # noqa: E402
from palviz.plots.style import STYLE  # noqa: E402
from palviz.threads import single_thread  # noqa: E402

TOL = 1e-6


# ----------------------------------------------------------------------------------------------
# independent computations, written from the formulas
# ----------------------------------------------------------------------------------------------
def ref_means(h, y, k):
    return np.array([h[y == c].mean(axis=0) for c in range(k)])


def ref_centred(h, y, k, center):
    mu = ref_means(h, y, k)
    return mu - (mu.mean(axis=0) if center == "class_means" else h.mean(axis=0))


def ref_etf_gram(k):
    return (np.eye(k) - np.ones((k, k)) / k) / np.sqrt(k - 1)


def ref_etf_distance(V):  # ||V V^T / ||V V^T||_F - (I - 11^T/K)/sqrt(K-1)||_F
    G = V @ V.T
    return np.linalg.norm(G / np.linalg.norm(G) - ref_etf_gram(len(V)))


def ref_duality(W, M):  # ||W M^T / ||W M^T||_F - (I - 11^T/K)/sqrt(K-1)||_F
    G = W @ M.T
    return np.linalg.norm(G / np.linalg.norm(G) - ref_etf_gram(len(W)))


def ref_nc3(W, M):
    return np.linalg.norm(W / np.linalg.norm(W) - M / np.linalg.norm(M))


def ref_nc1(h, y, k, center, classes):
    mu, M = ref_means(h, y, k), ref_centred(h, y, k, center)
    keep = np.isin(y, classes)
    within = h[keep] - mu[y[keep]]
    sw = within.T @ within / keep.sum()
    return np.trace(sw @ np.linalg.pinv(M.T @ M / k)) / k


def ref_ncc(h, mu):
    return np.array([np.argmin([np.sum((x - m) ** 2) for m in mu]) for x in h])


def features(counts, d, seed):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(len(counts)), counts)
    return rng.normal(size=(len(y), d)) + 2.0 * rng.normal(size=(len(counts), d))[y], y


def linear_on_features(W, b):
    layer = nn.Linear(W.shape[1], W.shape[0]).double()
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(W))
        layer.bias.copy_(torch.as_tensor(b))
    return nn.Sequential(nn.Identity(), layer)


# ----------------------------------------------------------------------------------------------
# the forms, each against its NumPy computation
# ----------------------------------------------------------------------------------------------
COUNTS = [150, 120, 40, 25, 9, 5]  # many, medium and few-shot classes, K = 6


@pytest.mark.parametrize("center", ["class_means", "samples"])
@pytest.mark.parametrize("d", [4, 9])  # K > d and K < d: both Gram matrices of NC1
def test_every_form_of_diagnose_equals_its_numpy_computation(center, d):
    h, y = features(COUNTS, d, seed=d)
    k = len(COUNTS)
    rng = np.random.default_rng(d + 1)
    W, b = rng.normal(size=(k, d)), rng.normal(size=k)
    ht, yt = features([7] * k, d, seed=d + 2)
    model = linear_on_features(W, b)
    dg = diagnose(
        model,
        (torch.as_tensor(h), torch.as_tensor(y)),
        test=(torch.as_tensor(ht), torch.as_tensor(yt)),
        center=center,
        batch_size=64,
    )
    M, mu = ref_centred(h, y, k, center), ref_means(h, y, k)
    forms = dg.frame.groupby("metric").definition.unique()
    assert set(forms["NC3"]) == {"Papyan", "ETF distance"}
    assert set(forms["NC4"]) == {"Papyan", "agreement"}
    assert dg.value("NC3", definition="Papyan") == pytest.approx(ref_nc3(W, M), abs=TOL)
    assert dg.value("NC3") == dg.value("NC3", definition="Papyan")  # the default form
    assert dg.value("NC3", definition="ETF distance") == pytest.approx(ref_duality(W, M), abs=TOL)
    assert dg.value("NC2 ETF distance (means)") == pytest.approx(ref_etf_distance(M), abs=TOL)
    assert dg.value("NC2 ETF distance (classifier)") == pytest.approx(ref_etf_distance(W), abs=TOL)
    preds = (h @ W.T + b).argmax(axis=1)
    agree = np.mean(preds == ref_ncc(h, mu))
    assert dg.value("NC4", definition="agreement") == pytest.approx(agree, abs=TOL)
    assert dg.value("NC4") == pytest.approx(1.0 - agree, abs=TOL)
    groups = {"many": [0, 1], "medium": [2, 3], "few": [4, 5]}
    for group, cls in groups.items():
        assert dg.value("NC1", group=group) == pytest.approx(
            ref_nc1(h, y, k, center, cls), rel=1e-6
        )
        assert dg.value("NC4", group=group, definition="agreement") == pytest.approx(
            np.mean((preds == ref_ncc(h, mu))[np.isin(y, cls)]), abs=TOL
        )
    assert dg.value("NC1") == pytest.approx(ref_nc1(h, y, k, center, range(k)), rel=1e-6)
    # the test split: its own centred means for NC2 and NC3, the training means for NC4
    Mt = ref_centred(ht, yt, k, center)
    assert dg.value("NC2 ETF distance (means)", "test") == pytest.approx(
        ref_etf_distance(Mt), abs=TOL
    )
    agree_t = np.mean((ht @ W.T + b).argmax(axis=1) == ref_ncc(ht, mu))
    assert dg.value("NC4", "test", definition="agreement") == pytest.approx(agree_t, abs=TOL)
    with pytest.raises(KeyError, match=r"its definitions: \['ETF distance', 'Papyan'\]"):
        dg.value("NC3", definition="agreement")


def test_the_etf_forms_are_zero_at_a_simplex_and_not_elsewhere():
    rng = np.random.default_rng(3)
    k, d = 5, 8
    U, _ = np.linalg.qr(rng.normal(size=(d, k)))
    etf = (np.eye(k) - np.ones((k, k)) / k) @ U.T * 3.0  # a centred simplex ETF, rows
    assert collapse.etf_distance(etf) == pytest.approx(0.0, abs=1e-7)
    assert collapse.duality_distance(2.0 * etf, etf) == pytest.approx(0.0, abs=1e-7)
    V = rng.normal(size=(k, d))
    assert collapse.etf_distance(V) == pytest.approx(ref_etf_distance(V), abs=TOL)
    assert collapse.etf_distance(V) > 0.1
    # equinorm and equiangular, yet no simplex: Papyan's spreads are 0, the ETF distance not
    square = np.eye(k, d)
    assert collapse.equiangularity(square) == pytest.approx(0.0, abs=TOL)
    assert collapse.etf_distance(square) == pytest.approx(ref_etf_distance(square), abs=TOL)
    assert collapse.etf_distance(square) > 0.1
    with pytest.raises(ValueError, match="vectors must be vectors with a length"):
        collapse.etf_distance(np.zeros((3, 2)))


def test_nc1_per_class_sums_to_nc1_of_any_set_of_classes():
    h, y = features(COUNTS, 5, seed=9)
    k = len(COUNTS)
    parts = collapse.nc1_per_class(h, y, k)
    n = np.bincount(y)
    for cls in ([0], [1, 4], list(range(k))):
        assert parts[cls].sum() / n[cls].sum() == pytest.approx(
            ref_nc1(h, y, k, "class_means", cls), rel=1e-6
        )
        assert collapse.nc1(h, y, k, classes=cls) == pytest.approx(
            parts[cls].sum() / n[cls].sum(), rel=1e-12
        )


# ----------------------------------------------------------------------------------------------
# checkpoints over training
# ----------------------------------------------------------------------------------------------
def small_net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))


def blobs(per_class=(30, 20, 10, 5), seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.repeat_interleave(torch.arange(4), torch.tensor(per_class))
    return torch.randn(len(y), 6, generator=g) + 2 * torch.eye(4, 6)[y], y


def test_diagnose_checkpoints_gives_one_frame_with_the_epochs(tmp_path):
    x, y = blobs()
    xt, yt = blobs((10, 10, 10, 10), seed=1)
    model = small_net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    states = {0: {k: v.clone() for k, v in model.state_dict().items()}}
    for epoch in (1, 2):
        for _ in range(20):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        states[epoch] = {k: v.clone() for k, v in model.state_dict().items()}
    path = tmp_path / "epoch2.pt"
    torch.save(states[2], path)
    frame = diagnose_checkpoints(
        small_net, {2: path, 0: states[0], 1: states[1]}, (x, y), test=(xt, yt)
    )
    assert frame.columns.tolist() == ["epoch", "split", "group", "metric", "definition", "value"]
    assert frame.epoch.unique().tolist() == [0, 1, 2]  # in epoch order
    for epoch, state in states.items():
        net = small_net()
        net.load_state_dict(state)
        expected = diagnose(net, (x, y), test=(xt, yt)).frame
        got = frame[frame.epoch == epoch].drop(columns="epoch").reset_index(drop=True)
        assert got[["split", "group", "metric", "definition"]].equals(
            expected[["split", "group", "metric", "definition"]]
        )
        assert np.allclose(got.value, expected.value, atol=1e-12)
    nc1 = frame[(frame.metric == "NC1") & (frame.split == "train") & (frame.group == "all")]
    assert nc1.value.iloc[0] != nc1.value.iloc[-1]  # training moved the features
    pairs = diagnose_checkpoints(small_net, [(5, states[1])], (x, y))
    assert set(pairs.epoch) == {5}


def test_diagnose_checkpoints_refuses_bad_checkpoints(tmp_path):
    x, y = blobs()
    state = small_net().state_dict()
    with pytest.raises(ValueError, match="checkpoints must be a mapping epoch"):
        diagnose_checkpoints(small_net, state["0.weight"], (x, y))
    with pytest.raises(ValueError, match="not empty"):
        diagnose_checkpoints(small_net, {}, (x, y))
    with pytest.raises(ValueError, match="each epoch once"):
        diagnose_checkpoints(small_net, [(1, state), (1, state)], (x, y))
    with pytest.raises(ValueError, match=r"checkpoints\[3\] must be the path of a file"):
        diagnose_checkpoints(small_net, {3: tmp_path / "none.pt"}, (x, y))
    with pytest.raises(ValueError, match="checkpoints epoch must be >= 0"):
        diagnose_checkpoints(small_net, {-1: state}, (x, y))
    with pytest.raises(ValueError, match="model_fn must be a function"):
        diagnose_checkpoints(small_net(), {0: state}, (x, y))


# ----------------------------------------------------------------------------------------------
# post_hoc
# ----------------------------------------------------------------------------------------------
def ref_ece(z, y, bins=15):
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    edges = np.linspace(0, 1, bins + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (conf > lo) & (conf <= hi)
        if inside.any():
            gap = abs((pred[inside] == y[inside]).mean() - conf[inside].mean())
            total += inside.sum() / len(y) * gap
    return total


def long_tailed_net():
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    with torch.no_grad():
        model[2].weight.mul_(torch.tensor([[4.0], [2.0], [1.0], [0.5]]))  # head classes longer
    return model


def test_post_hoc_returns_the_logits_a_model_the_curve_and_the_ece():
    model = long_tailed_net()
    x, y = blobs((150, 40, 12, 6))
    xv, yv = blobs((10, 10, 10, 10), seed=7)
    xt, yt = blobs((10, 10, 10, 10), seed=8)
    taus = [0.0, 0.5, 1.0, 1.5]
    result = post_hoc(model, (x, y), held_out=(xv, yv), test=(xt, yt), taus=taus, logit_scale=2.0)
    assert isinstance(result, PostHoc)
    counts = np.bincount(y.numpy())
    prior = counts / counts.sum()
    with torch.no_grad():
        zv, zt = (2.0 * model(v).double().numpy() for v in (xv, xt))

    def balanced(z, t):  # mean per-class accuracy
        return np.mean([np.mean(z[t == c].argmax(1) == c) for c in range(4)])

    curve = result.curve
    assert len(curve) == 2 * 2 * len(taus)  # two methods, held_out and test
    la = curve[(curve.method == "logit adjustment") & (curve.split == "held_out")]
    expected = [balanced(zv - t * np.log(prior), yv.numpy()) for t in taus]
    assert np.allclose(la.accuracy, expected)
    tau = result.taus["logit adjustment"]
    assert tau == taus[int(np.argmax(expected))]
    adjusted = zt - tau * np.log(prior)  # z_j - tau log pi_j
    assert np.allclose(result.logits["logit adjustment"], adjusted)
    with torch.no_grad():  # the predictor outputs the adjusted logits, at the model's scale
        out = result.model("logit adjustment")(xt).double().numpy() * 2.0
    assert np.allclose(out, adjusted, atol=1e-4)
    W, b = model[2].weight.detach().double().numpy(), model[2].bias.detach().double().numpy()
    t_tau = result.taus["tau-normalisation"]
    Wt = W / np.linalg.norm(W, axis=1, keepdims=True) ** t_tau
    with torch.no_grad():
        ht = model[:2](xt).double().numpy()
        out = result.model("tau-normalisation")(xt).double().numpy()
    assert np.allclose(out, ht @ Wt.T + b, atol=1e-4)
    assert np.allclose(result.logits["tau-normalisation"], 2.0 * (ht @ Wt.T + b), atol=1e-9)
    table = result.table
    assert set(table.split) == {"test"}
    none = table[(table.method == "none") & (table.group == "all")]
    assert none.tau.iloc[0] == 0.0  # the trained model: tau = 0 of either method
    assert none.accuracy.iloc[0] == pytest.approx(np.mean(zt.argmax(1) == yt.numpy()))
    assert none.ECE.iloc[0] == pytest.approx(ref_ece(zt, yt.numpy()), abs=TOL)
    after = table[(table.method == "logit adjustment") & (table.group == "all")]
    assert after.ECE.iloc[0] == pytest.approx(ref_ece(adjusted, yt.numpy()), abs=TOL)
    pivot = table.pivot_table(index=["method", "tau"], columns="group", values="accuracy")
    assert "none" in pivot.index.get_level_values("method")  # no NaN tau dropped
    assert np.isfinite(table.tau).all()


def test_post_hoc_warns_when_tau_is_chosen_on_the_training_split():
    model = long_tailed_net()
    x, y = blobs((150, 40, 12, 6))
    xt, yt = blobs((10, 10, 10, 10), seed=8)
    with pytest.warns(UserWarning, match="held_out is the training split"):
        result = post_hoc(model, (x, y), held_out=(x, y), taus=[0.0, 1.0])
    assert set(result.table.split) == {"held_out"} and "training split" in result.notes[0]
    with pytest.warns(UserWarning, match="exactly the training class counts"):
        post_hoc(model, None, [150, 40, 12, 6], held_out=(x.clone(), y), taus=[0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post_hoc(model, None, [150, 40, 12, 6], held_out=(xt, yt), taus=[0.0, 1.0])
    with pytest.raises(ValueError, match="class_counts must be the training counts, or pass"):
        post_hoc(model, held_out=(xt, yt))


# ----------------------------------------------------------------------------------------------
# cost at 1,000 classes, and the figure
# ----------------------------------------------------------------------------------------------
def thousand_classes(per_class=2, k=1000, d=512):
    g = torch.Generator().manual_seed(0)
    y = torch.arange(k).repeat(per_class)
    x = torch.randn(k, d, generator=g)[y] + torch.randn(len(y), d, generator=g)
    return nn.Sequential(nn.Identity(), nn.Linear(d, k)).eval(), x, y


def test_diagnose_at_a_thousand_classes_costs_a_few_forward_passes():
    model, x, y = thousand_classes()
    with single_thread(), torch.no_grad():
        diagnose(model, (x, y))  # warm-up
        start = time.perf_counter()
        for s in range(0, len(x), 256):
            model(x[s : s + 256])
        forward = time.perf_counter() - start
        start = time.perf_counter()
        dg = diagnose(model, (x, y))
        cost = time.perf_counter() - start
    # the target is 2 forward passes + 1 s (benchmarks/bench_diagnose.py); 3 times that here,
    # for a machine busy with other work
    assert cost <= 3 * (2 * forward + 1.0), (cost, forward)
    assert dg.value("NC1", group="few") == dg.value("NC1")  # one group of every class


def titles_inside(fig):
    fig.canvas.draw()
    box = fig.bbox
    texts = [ax.title for ax in fig.axes if ax.get_title()] + [fig._suptitle]
    for text in texts:
        extent = text.get_window_extent()
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, text.get_text()
    return [t.get_text() for t in texts]


@pytest.fixture
def palviz_style():
    """The lessons' figure style (constrained layout among its rcParams), restored after."""
    with matplotlib.rc_context(STYLE):
        yield


def test_the_figure_stands_alone_at_ten_and_a_thousand_classes(palviz_style):
    x, y = blobs((150, 40, 12, 6))
    xt, yt = blobs((10, 10, 10, 10), seed=3)
    fig = diagnose(long_tailed_net(), (x, y), test=(xt, yt)).plot()
    titles = titles_inside(fig)
    assert fig.get_layout_engine() is None  # fixed margins, whatever the style asks
    assert any("reliability, train split: ECE" in t for t in titles)
    assert any("reliability, test split: ECE" in t for t in titles)
    table = next(c for ax in fig.axes for c in ax.get_children() if type(c).__name__ == "Table")
    labels = [cell.get_text().get_text() for cell in table.get_celld().values()]
    assert any(label.startswith("NC1") for label in labels)
    assert {"accuracy, many-shot (1 class)", "accuracy, few-shot (2 classes)"} <= set(labels)
    plt.close(fig)
    model, x, y = thousand_classes(d=32)  # above PER_CLASS_MAX: boxes per shot group
    dg = diagnose(model, (x, y))
    start = time.perf_counter()
    bare = plt.figure(figsize=(16, 13))
    for ax in bare.add_gridspec(3, 3).subplots().flat:
        ax.set(title="title", xlabel="x", ylabel="y")
    bare.canvas.draw()
    plt.close(bare)
    start, bare_time = time.perf_counter(), time.perf_counter() - start
    fig = dg.plot()
    fig.canvas.draw()
    drawn = time.perf_counter() - start
    assert drawn <= 3 * bare_time + 1.0, (drawn, bare_time)  # about an empty figure's time
    titles = titles_inside(fig)
    assert sum("by shot group" in t for t in titles) == 4
    assert not any(len(ax.patches) >= 1000 for ax in fig.axes)  # no bar per class
    plt.close(fig)
