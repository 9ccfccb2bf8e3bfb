"""palviz.claims: paired Student-t intervals, verdicts, claim rows and claims.csv."""

import math
import threading

import filelock
import numpy as np
import pandas as pd
import pytest

from palviz import claims as pc
from palviz import tables
from palviz.recipes import lt_spec
from palviz.runcache import RunResult

T_975_4 = 2.7764451051977987  # t_{0.975, 4}, from a table (not from scipy)


# ------------------------------------------------------------------ paired_difference


def test_paired_difference_matches_a_hand_computation():
    baseline = [70.0, 71.0, 69.0, 72.0, 70.0]
    method = [73.0, 73.5, 72.0, 76.0, 72.5]
    # differences 3.0, 2.5, 3.0, 4.0, 2.5: mean 15 / 5 = 3.0
    # squared deviations 0, .25, 0, 1, .25 -> sum 1.5, variance 1.5 / 4 = .375
    mean, sd = 3.0, math.sqrt(0.375)
    half = T_975_4 * sd / math.sqrt(5)
    d = pc.paired_difference(baseline, method)
    assert d.n == 5 and d.method == "t" and d.confidence == 0.95
    assert d.mean == pytest.approx(mean, abs=1e-12)
    assert d.sd == pytest.approx(sd, abs=1e-12)
    assert d.ci_low == pytest.approx(mean - half, abs=1e-12)
    assert d.ci_high == pytest.approx(mean + half, abs=1e-12)


def test_paired_difference_pairs_series_by_seed_not_by_position():
    baseline = pd.Series([70.0, 71.0, 69.0], index=[0, 1, 2])
    method = pd.Series([71.0, 74.0, 72.0], index=[2, 0, 1])  # seed 0: +4, 1: +1, 2: +2
    d = pc.paired_difference(baseline, method)
    assert d.mean == pytest.approx(7 / 3)
    assert d.sd == pytest.approx(np.std([4.0, 1.0, 2.0], ddof=1))


def test_paired_difference_of_one_seed_has_no_interval_and_says_so():
    d = pc.paired_difference([0.5], [0.6])
    assert d.n == 1 and d.mean == pytest.approx(0.1)
    assert math.isnan(d.sd) and math.isnan(d.ci_low) and math.isnan(d.ci_high)
    assert "one seed" in d.note
    assert pc.verdict(d.ci_low, d.ci_high) == pc.INCONCLUSIVE


@pytest.mark.parametrize(
    ("baseline", "method", "argument"),
    [
        (pd.Series([1.0, 2.0], index=[0, 1]), pd.Series([1.0, 2.0], index=[0, 2]), "method"),
        ([1.0, 2.0, 3.0], [1.0, 2.0], "method"),
        ([], [], "baseline"),
        ([1.0, float("nan")], [1.0, 2.0], "baseline"),
        (pd.Series([1.0, 2.0], index=[0, 0]), pd.Series([1.0, 2.0], index=[0, 1]), "baseline"),
        ("abc", [1.0], "baseline"),
    ],
)
def test_paired_difference_errors_name_the_argument(baseline, method, argument):
    with pytest.raises(ValueError, match=f"^{argument} must"):
        pc.paired_difference(baseline, method)


def test_paired_difference_errors_show_the_seeds_and_the_confidence():
    with pytest.raises(ValueError, match=r"method must .*\[0, 1\].*got \[0, 2\]"):
        pc.paired_difference(pd.Series([1.0, 2.0], [0, 1]), pd.Series([1.0, 2.0], [0, 2]))
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\), got 1.5"):
        pc.paired_difference([1.0, 2.0], [2.0, 3.0], confidence=1.5)


# ------------------------------------------------------------------------------ verdict


@pytest.mark.parametrize(
    ("low", "high", "direction", "expected"),
    [
        (0.5, 2.0, +1, pc.CONSISTENT),
        (-2.0, -0.5, +1, pc.CONTRADICTED),
        (-0.5, 2.0, +1, pc.INCONCLUSIVE),
        (0.0, 2.0, +1, pc.INCONCLUSIVE),  # touching 0 is not "the whole interval above"
        (-2.0, -0.5, -1, pc.CONSISTENT),
        (0.5, 2.0, -1, pc.CONTRADICTED),
        (-2.0, 0.5, -1, pc.INCONCLUSIVE),
        (float("nan"), float("nan"), +1, pc.INCONCLUSIVE),
        (float("nan"), float("nan"), -1, pc.INCONCLUSIVE),
    ],
)
def test_verdict_reads_the_whole_interval(low, high, direction, expected):
    assert pc.verdict(low, high, direction) == expected


def test_verdict_refuses_a_bad_direction_or_a_reversed_interval():
    with pytest.raises(ValueError, match="direction must be .*got 0"):
        pc.verdict(1.0, 2.0, 0)
    with pytest.raises(ValueError, match="ci_low must be <= ci_high"):
        pc.verdict(2.0, 1.0)


# --------------------------------------------------------------------- evaluate_claims

SEEDS = [0, 1, 2, 3, 4]
CE = [0.700, 0.710, 0.690, 0.705, 0.695]
RHO = 100.0


def _row(label, seed, acc, *, rho=RHO, kind="symmetric", eta=0.0, steps=1500):
    return {
        "label": label,
        "method": label,
        "seed": seed,
        "imbalance_ratio": rho,
        "noise_kind": kind,
        "noise_rate": eta,
        "last_acc": acc,
        "steps": steps,
    }


@pytest.fixture
def frame():
    offsets = [0.030, 0.035, 0.025, 0.030, 0.030]  # +3 +- 0.35 points
    noise = [0.004, -0.006, 0.002, -0.003, 0.005]  # around 0
    rows = []
    for s, base, off, eps in zip(SEEDS, CE, offsets, noise, strict=True):
        rows += [
            _row("CE", s, base),
            _row("PAL", s, base + off),
            _row("worse", s, base - off),
            _row("same", s, base + eps, steps=1600),
            _row("CE", s, base - 0.2, rho=10.0),  # another setting, must not be picked up
        ]
    return pd.DataFrame(rows)


def _claim(method, direction=+1, notebook="06", **where):
    return pc.Claim(
        notebook=notebook,
        claim=f"{method} beats CE",
        source="PAL paper, Table 2",
        baseline="CE",
        method=method,
        where=where or {"imbalance_ratio": 100},
        direction=direction,
    )


def test_evaluate_claims_gives_each_outcome(frame):
    claims = [_claim("PAL"), _claim("worse"), _claim("same"), _claim("missing")]
    df = pc.evaluate_claims(frame, claims, profile="smoke", paper_steps=19_400)
    assert list(df.columns) == list(pc.CLAIM_COLUMNS)
    assert df["verdict"].tolist() == [pc.CONSISTENT, pc.CONTRADICTED, pc.INCONCLUSIVE, pc.NOT_RUN]
    assert df["n_seeds"].tolist() == [5, 5, 5, 0]
    assert df["profile"].unique().tolist() == ["smoke"]
    pal = df.iloc[0]
    assert pal["comparison"] == "PAL - CE (imbalance_ratio = 100)"
    assert pal["mean_diff"] == pytest.approx(3.0)  # percentage points
    expected = pc.paired_difference(100 * np.array(CE), 100 * np.array(CE) + [3, 3.5, 2.5, 3, 3])
    assert pal["ci_low"] == pytest.approx(expected.ci_low)
    assert pal["ci_high"] == pytest.approx(expected.ci_high)
    assert df.iloc[1]["mean_diff"] == pytest.approx(-3.0)
    assert df["steps_per_run"].tolist()[:3] == [1500, 1500, 1600]  # the larger of the pair
    assert pd.isna(df["steps_per_run"].iloc[3])
    assert df["paper_steps"].tolist() == [19_400] * 4
    missing = df.iloc[3]
    assert math.isnan(missing["mean_diff"]) and math.isnan(missing["ci_low"])


def test_evaluate_claims_reads_a_claimed_decrease(frame):
    df = pc.evaluate_claims(frame, [_claim("worse", -1)], profile="smoke", paper_steps=None)
    assert df["verdict"].tolist() == [pc.CONSISTENT]
    assert pd.isna(df["paper_steps"].iloc[0])


def test_evaluate_claims_pairs_only_the_seeds_both_ran(frame):
    frame = frame[~((frame["label"] == "PAL") & frame["seed"].isin([3, 4]))]
    df = pc.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=None)
    assert df["n_seeds"].tolist() == [3]


def test_evaluate_claims_selects_noisy_settings_by_where():
    rows = [_row("CE", s, 0.5 + 0.01 * s, eta=0.4) for s in range(3)]
    rows += [_row("ELM", s, 0.6 + 0.01 * s, eta=0.4) for s in range(3)]
    rows += [_row("ELM", s, 0.1, eta=0.8) for s in range(3)]
    claim = _claim("ELM", noise_kind="symmetric", noise_rate=0.4)
    df = pc.evaluate_claims(pd.DataFrame(rows), [claim], profile="smoke", paper_steps=None)
    row = df.iloc[0]
    assert row["comparison"] == "ELM - CE (noise_kind = symmetric, noise_rate = 0.4)"
    assert row["mean_diff"] == pytest.approx(10.0)
    assert row["n_seeds"] == 3


def test_evaluate_claims_reads_a_results_frame():
    accuracy = {"CE": [0.50, 0.51, 0.52], "LDAM-DRW": [0.60, 0.62, 0.62]}  # +10, +11, +10
    results = [
        RunResult(lt_spec(m, seed=s, profile="quick"), {"last_acc": acc[s]}, None)
        for m, acc in accuracy.items()
        for s in range(3)
    ]
    frame = tables.results_frame(results)
    rho = frame["imbalance_ratio"].iloc[0]
    claim = pc.Claim(
        "07", "LDAM-DRW beats CE", "LDAM paper, Table 2", "CE", "LDAM-DRW", {"imbalance_ratio": rho}
    )
    df = pc.evaluate_claims(frame, [claim], profile="quick", paper_steps=19_400)
    assert df["n_seeds"].tolist() == [3]
    assert df["mean_diff"].iloc[0] == pytest.approx(31 / 3)
    assert df["verdict"].tolist() == [pc.CONSISTENT]
    assert pd.isna(df["steps_per_run"].iloc[0])  # these metrics hold no training size


def test_evaluate_claims_takes_the_papers_steps_per_setting(frame):
    """paper_steps may be a function of the claim's where (palviz.budget.paper_steps_for)."""
    seen = []

    def steps(where):
        seen.append(where)
        return 19_400 if where == {"imbalance_ratio": 100} else None

    claims = [_claim("PAL"), _claim("same")]
    df = pc.evaluate_claims(frame, claims, profile="smoke", paper_steps=steps)
    assert seen == [{"imbalance_ratio": 100}] * 2
    assert df["paper_steps"].tolist() == [19_400, 19_400]
    df = pc.evaluate_claims(frame, claims, profile="smoke", paper_steps=lambda where: None)
    assert df["paper_steps"].isna().all()


def test_evaluate_claims_errors_name_the_argument(frame):
    with pytest.raises(ValueError, match="profile must be one of"):
        pc.evaluate_claims(frame, [_claim("PAL")], profile="huge", paper_steps=None)
    steps = "paper_steps must be an integer >= 1, None, or a function giving one, got "
    with pytest.raises(ValueError, match=steps + "0"):
        pc.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=0)
    with pytest.raises(ValueError, match=steps + "'many'"):
        pc.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=lambda w: "many")
    where = r"where of claim .*\('rho' is not one\), got \{'rho': 100\}"
    with pytest.raises(ValueError, match=where):
        pc.evaluate_claims(frame, [_claim("PAL", rho=100)], profile="smoke", paper_steps=None)
    with pytest.raises(ValueError, match="several runs of 'CE' for seeds"):
        pc.evaluate_claims(
            frame, [_claim("PAL", noise_rate=0.0)], profile="smoke", paper_steps=None
        )


def test_claim_checks_its_fields():
    with pytest.raises(ValueError, match="notebook must be two digits, e.g. '06', got '6'"):
        pc.Claim("6", "c", "s", "CE", "PAL")
    with pytest.raises(ValueError, match="direction must be .*got 2"):
        pc.Claim("06", "c", "s", "CE", "PAL", direction=2)
    with pytest.raises(ValueError, match="baseline must be a non-empty string, got ''"):
        pc.Claim("06", "c", "s", "", "PAL")


# ------------------------------------------------------------------ claims.csv, markdown


def _files(folder):
    """The files in ``folder`` but the merge lock of claims.csv (it stays, as flock files do)."""
    return sorted(p.name for p in folder.iterdir() if p.name != ".claims.csv.lock")


@pytest.fixture
def figures(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path))
    return tmp_path


def test_write_claims_merges_notebooks_and_replaces_only_their_rows(frame, figures):
    six = pc.evaluate_claims(
        frame, [_claim("same"), _claim("PAL")], profile="smoke", paper_steps=19_400
    )
    seven = pc.evaluate_claims(
        frame, [_claim("worse", notebook="07")], profile="smoke", paper_steps=None
    )
    path = pc.write_claims(six, "smoke")
    assert path == figures / "smoke" / "claims.csv"
    pc.write_claims(seven, "smoke")
    both = pc.read_claims("smoke")
    assert both["notebook"].tolist() == ["06", "06", "07"]  # text, not the number 6
    assert both["claim"].tolist() == ["PAL beats CE", "same beats CE", "worse beats CE"]
    pd.testing.assert_frame_equal(
        both.iloc[:2].reset_index(drop=True), six.iloc[::-1].reset_index(drop=True)
    )

    again = pc.evaluate_claims(frame, [_claim("missing")], profile="smoke", paper_steps=None)
    pc.write_claims(again, "smoke")
    after = pc.read_claims("smoke")
    assert after["notebook"].tolist() == ["06", "07"]
    assert after["verdict"].tolist() == [pc.NOT_RUN, pc.CONTRADICTED]
    assert _files(figures / "smoke") == ["claims.csv"]  # no temporary file left


def test_write_claims_keeps_profiles_apart_and_refuses_foreign_rows(frame, figures):
    quick = pc.evaluate_claims(frame, [_claim("PAL")], profile="quick", paper_steps=None)
    pc.write_claims(quick, "quick")
    assert (figures / "claims.csv").exists() and pc.read_claims("smoke").empty
    with pytest.raises(ValueError, match=r"rows must be rows of profile 'smoke' only.*\['quick'\]"):
        pc.write_claims(quick, "smoke")
    with pytest.raises(ValueError, match="rows must be a frame with columns"):
        pc.write_claims(quick.drop(columns="verdict"), "quick")


def test_write_claims_leaves_the_old_file_when_writing_fails(frame, figures, monkeypatch):
    six = pc.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=None)
    path = pc.write_claims(six, "smoke")
    before = path.read_bytes()

    def broken(self, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken)
    with pytest.raises(OSError, match="disk full"):
        pc.write_claims(
            pc.evaluate_claims(frame, [_claim("worse")], profile="smoke", paper_steps=None), "smoke"
        )
    assert path.read_bytes() == before
    assert _files(path.parent) == ["claims.csv"]


def test_write_claims_waits_for_a_writer_that_holds_the_lock(frame, figures):
    """Two notebooks run at once both merge into claims.csv: a second writer waits for the
    first one's lock instead of reading the file the first one is about to replace."""
    six = pc.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=None)
    seven = pc.evaluate_claims(
        frame, [_claim("worse", notebook="07")], profile="smoke", paper_steps=None
    )
    path = pc.write_claims(six, "smoke")
    lock = filelock.FileLock(str(path.with_name(".claims.csv.lock")))
    with lock:
        writer = threading.Thread(target=pc.write_claims, args=(seven, "smoke"))
        writer.start()
        writer.join(timeout=1.0)
        assert writer.is_alive(), "write_claims did not wait for the lock"
        assert pc.read_claims("smoke")["notebook"].tolist() == ["06"]
    writer.join(timeout=30)
    assert not writer.is_alive()
    assert pc.read_claims("smoke")["notebook"].tolist() == ["06", "07"]


def test_claims_markdown_shows_differences_and_intervals_to_one_decimal(frame):
    df = pc.evaluate_claims(
        frame, [_claim("PAL"), _claim("missing")], profile="smoke", paper_steps=19_400
    )
    text = pc.claims_markdown(df)
    d = df.iloc[0]
    assert f"+3.0 [{d['ci_low']:+.1f}, {d['ci_high']:+.1f}]" in text
    assert '"PAL beats CE"' in text and "19,400" in text and "1,500" in text
    assert " n/a |" in text and pc.NOT_RUN in text
    assert text.count("\n") == 4  # header, rule, two rows


def test_evaluate_claims_of_no_runs_says_not_run():
    df = pc.evaluate_claims(pd.DataFrame(), [_claim("PAL")], profile="smoke", paper_steps=None)
    assert df["verdict"].tolist() == [pc.NOT_RUN] and df["n_seeds"].tolist() == [0]
    assert list(df.columns) == list(pc.CLAIM_COLUMNS)


def test_the_notebooks_claims_follow_the_profiles_grids():
    from palviz import recipes

    lt = pc.long_tailed_claims(recipes.long_tailed_setup("quick"))
    pairs = [(c.baseline, c.method) for c in lt]
    assert ("CE", "CE+PAL") in pairs and ("LDAM-DRW", "LDAM-DRW+PAL") in pairs
    assert ("LDAM-DRW", "ELM-DRW") in pairs
    assert ("CE+PAL", "CE+PAL (axis)") in pairs and ("CE+PAL", "CE+PAL (block)") in pairs
    assert all(c.where == {"dataset": "mnist1d", "imbalance_ratio": 100} for c in lt)
    paper = pc.long_tailed_claims(recipes.long_tailed_setup("paper"))
    assert {(c.where["dataset"], c.where["imbalance_ratio"]) for c in paper} == {
        (d, r) for d in ("cifar10", "cifar100") for r in (100, 10)
    }
    noisy = pc.noisy_claims(recipes.noisy_setup("quick"))
    settings = {(c.where["noise_kind"], c.where["noise_rate"]) for c in noisy}
    assert settings == {
        ("symmetric", 0.2),
        ("symmetric", 0.4),
        ("symmetric", 0.8),
        ("asymmetric", 0.4),
    }
    assert sum(c.method == "CE+FNPAL" and c.baseline == "CE" for c in noisy) == 4
    assert len(lt) + len(noisy) >= 8


@pytest.mark.parametrize("profile", ["smoke", "quick", "full", "paper"])
def test_every_noisy_claim_finds_its_runs_among_the_claim_runs(profile):
    """Notebook 07 reads its claims from claim_runs(results, exclude=["sweep"]): each claim's
    two labels must be there for each seed of its setting. (In ``full`` the s-sweep's
    "CE+FNPAL s=1" is the same run as the table's "CE+FNPAL" at symmetric 0.2; keeping the
    sweep's label hid the table's run and the claim read "not run".)"""
    from types import SimpleNamespace

    from palviz import plan, recipes

    groups = {
        name: [SimpleNamespace(spec=s, label=s.label) for s in specs]
        for name, specs in plan.noisy_groups(profile).items()
    }
    kept = pc.claim_runs(groups, exclude=["sweep"])
    assert len({r.spec.key() for r in kept}) == len(kept)
    seen = {
        (r.label, r.spec.dataset, r.spec.noise_kind, r.spec.noise_rate, r.spec.seed) for r in kept
    }
    setup = recipes.noisy_setup(profile)
    for claim in pc.noisy_claims(setup):
        w = claim.where
        headline = (w["noise_kind"], w["noise_rate"]) == (
            setup["headline"]["kind"],
            setup["headline"]["eta"],
        )
        seeds = setup["headline"]["seeds"] if headline else setup["seeds"]
        for label in (claim.baseline, claim.method):
            for seed in seeds:
                row = (label, w["dataset"], w["noise_kind"], w["noise_rate"], seed)
                assert row in seen, (profile, claim.claim, row)


def test_claim_runs_keeps_the_first_label_and_names_unknown_groups():
    from types import SimpleNamespace

    def run(key, label):
        return SimpleNamespace(spec=SimpleNamespace(key=lambda: key), label=label)

    groups = {"table": [run("a", "CE+FNPAL"), run("b", "CE")], "sweep": [run("a", "s=1")]}
    assert [r.label for r in pc.claim_runs(groups)] == ["CE+FNPAL", "CE"]
    assert [r.label for r in pc.claim_runs(groups, exclude=["table"])] == ["s=1"]
    with pytest.raises(ValueError, match=r"exclude must be names of groups .*got \['swept'\]"):
        pc.claim_runs(groups, exclude=["swept"])
