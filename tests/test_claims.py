"""palviz.experiments.claims and claims_table: the claims, their rows read with palviz.stats,
claims.csv and its markdown."""

import math
import threading
from pathlib import Path

import filelock
import numpy as np
import pandas as pd
import pytest

from palviz import stats
from palviz.experiments import claims as pc
from palviz.experiments import claims_table as ct
from palviz.experiments import tables
from palviz.experiments.recipes import lt_spec
from palviz.experiments.runcache import RunResult

# --------------------------------------------------------------------- evaluate_claims

SEEDS = [0, 1, 2, 3, 4]
CE = [0.700, 0.710, 0.690, 0.705, 0.695]
RHO = 100.0


def _row(label, seed, acc, *, rho=RHO, kind="symmetric", eta=0.0, steps=1500, best=None):
    """One run's row of a results frame; its best-epoch accuracy ``best`` (default: 0.01 above
    the last epoch's)."""
    return {
        "label": label,
        "method": label,
        "seed": seed,
        "imbalance_ratio": rho,
        "noise_kind": kind,
        "noise_rate": eta,
        "last_acc": acc,
        "best_acc": acc + 0.01 if best is None else best,
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


def _members(df):
    """The comparison rows of an evaluate_claims frame (each family row dropped)."""
    return df[df["level"] == "member"].reset_index(drop=True)


def test_evaluate_claims_gives_each_outcome(frame):
    claims = [_claim("PAL"), _claim("worse"), _claim("same"), _claim("missing")]
    everything = ct.evaluate_claims(frame, claims, profile="smoke", paper_steps=19_400)
    assert list(everything.columns) == list(pc.CLAIM_COLUMNS)
    assert everything["level"].tolist() == ["family", "member"] * 4  # one family per claim
    df = _members(everything)
    assert df["verdict"].tolist() == [
        stats.CONSISTENT,
        stats.CONTRADICTED,
        stats.INCONCLUSIVE,
        stats.NOT_RUN,
    ]
    assert df["n_seeds"].tolist() == [5, 5, 5, 0]
    assert df["profile"].unique().tolist() == ["smoke"]
    pal = df.iloc[0]
    assert pal["comparison"] == "PAL - CE (imbalance_ratio = 100)"
    assert pal["mean_diff"] == pytest.approx(3.0)  # percentage points
    expected = stats.paired_difference(100 * np.array(CE), 100 * np.array(CE) + [3, 3.5, 2.5, 3, 3])
    assert pal["ci_low"] == pytest.approx(expected.ci_low)
    assert pal["ci_high"] == pytest.approx(expected.ci_high)
    assert df.iloc[1]["mean_diff"] == pytest.approx(-3.0)
    assert df["steps_per_run"].tolist()[:3] == [1500, 1500, 1600]  # the larger of the pair
    assert pd.isna(df["steps_per_run"].iloc[3])
    assert df["paper_steps"].tolist() == [19_400] * 4
    missing = df.iloc[3]
    assert math.isnan(missing["mean_diff"]) and math.isnan(missing["ci_low"])


def test_evaluate_claims_reads_a_claimed_decrease(frame):
    df = ct.evaluate_claims(frame, [_claim("worse", -1)], profile="smoke", paper_steps=None)
    df = _members(df)
    assert df["verdict"].tolist() == [stats.CONSISTENT]
    assert pd.isna(df["paper_steps"].iloc[0])


def test_evaluate_claims_pairs_only_the_seeds_both_ran(frame):
    frame = frame[~((frame["label"] == "PAL") & frame["seed"].isin([3, 4]))]
    df = ct.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=None)
    df = _members(df)
    assert df["n_seeds"].tolist() == [3]


def test_evaluate_claims_selects_noisy_settings_by_where():
    rows = [_row("CE", s, 0.5 + 0.01 * s, eta=0.4) for s in range(3)]
    rows += [_row("ELM", s, 0.6 + 0.01 * s, eta=0.4) for s in range(3)]
    rows += [_row("ELM", s, 0.1, eta=0.8) for s in range(3)]
    claim = _claim("ELM", noise_kind="symmetric", noise_rate=0.4)
    df = ct.evaluate_claims(pd.DataFrame(rows), [claim], profile="smoke", paper_steps=None)
    df = _members(df)
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
    df = ct.evaluate_claims(frame, [claim], profile="quick", paper_steps=19_400)
    df = _members(df)
    assert df["n_seeds"].tolist() == [3]
    assert df["mean_diff"].iloc[0] == pytest.approx(31 / 3)
    assert df["verdict"].tolist() == [stats.CONSISTENT]
    assert pd.isna(df["steps_per_run"].iloc[0])  # these metrics hold no training size


def test_evaluate_claims_takes_the_papers_steps_per_setting(frame):
    """paper_steps may be a function of the claim's where
    (palviz.experiments.budget.paper_steps_for)."""
    seen = []

    def steps(where):
        seen.append(where)
        return 19_400 if where == {"imbalance_ratio": 100} else None

    claims = [_claim("PAL"), _claim("same")]
    df = ct.evaluate_claims(frame, claims, profile="smoke", paper_steps=steps)
    df = _members(df)
    assert seen == [{"imbalance_ratio": 100}] * 2
    assert df["paper_steps"].tolist() == [19_400, 19_400]
    df = ct.evaluate_claims(frame, claims, profile="smoke", paper_steps=lambda where: None)
    df = _members(df)
    assert df["paper_steps"].isna().all()


def test_evaluate_claims_errors_name_the_argument(frame):
    with pytest.raises(ValueError, match="profile must be one of"):
        ct.evaluate_claims(frame, [_claim("PAL")], profile="huge", paper_steps=None)
    steps = "paper_steps must be an integer >= 1, None, or a function giving one, got "
    with pytest.raises(ValueError, match=steps + "0"):
        ct.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=0)
    with pytest.raises(ValueError, match=steps + "'many'"):
        ct.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=lambda w: "many")
    where = r"where of claim .*\('rho' is not one\), got \{'rho': 100\}"
    with pytest.raises(ValueError, match=where):
        ct.evaluate_claims(frame, [_claim("PAL", rho=100)], profile="smoke", paper_steps=None)
    with pytest.raises(ValueError, match="several runs of 'CE' for seeds"):
        ct.evaluate_claims(
            frame, [_claim("PAL", noise_rate=0.0)], profile="smoke", paper_steps=None
        )


# ------------------------------------------------------------------ claims.csv, markdown


def _files(folder):
    """The files in ``folder`` but the merge lock of claims.csv (it stays, as flock files do)."""
    return sorted(p.name for p in folder.iterdir() if p.name != ".claims.csv.lock")


@pytest.fixture
def figures(tmp_path, monkeypatch):
    monkeypatch.setenv("PALVIZ_FIGURES", str(tmp_path))
    return tmp_path


def test_write_claims_merges_notebooks_and_replaces_only_their_rows(frame, figures):
    six = ct.evaluate_claims(
        frame, [_claim("same"), _claim("PAL")], profile="smoke", paper_steps=19_400
    )
    seven = ct.evaluate_claims(
        frame, [_claim("worse", notebook="07")], profile="smoke", paper_steps=None
    )
    path = pc.write_claims(six, "smoke")
    assert path == figures / "smoke" / "claims.csv"
    pc.write_claims(seven, "smoke")
    both = pc.read_claims("smoke")
    assert both["notebook"].tolist() == ["06"] * 4 + ["07"] * 2  # text, not the number 6
    assert both["claim"].tolist()[::2] == ["same beats CE", "PAL beats CE", "worse beats CE"]
    assert both["level"].tolist() == ["family", "member"] * 3  # each family above its rows
    pd.testing.assert_frame_equal(both.iloc[:4].reset_index(drop=True), six)

    again = ct.evaluate_claims(frame, [_claim("missing")], profile="smoke", paper_steps=None)
    pc.write_claims(again, "smoke")
    after = pc.read_claims("smoke")
    assert after["notebook"].tolist() == ["06", "06", "07", "07"]
    assert after["verdict"].tolist()[::2] == [stats.NOT_RUN, stats.CONTRADICTED]
    assert _files(figures / "smoke") == ["claims.csv"]  # no temporary file left


def test_write_claims_keeps_profiles_apart_and_refuses_foreign_rows(frame, figures):
    quick = ct.evaluate_claims(frame, [_claim("PAL")], profile="quick", paper_steps=None)
    pc.write_claims(quick, "quick")
    assert (figures / "claims.csv").exists() and pc.read_claims("smoke").empty
    with pytest.raises(ValueError, match=r"rows must be rows of profile 'smoke' only.*\['quick'\]"):
        pc.write_claims(quick, "smoke")
    with pytest.raises(ValueError, match="rows must be a frame with columns"):
        pc.write_claims(quick.drop(columns="verdict"), "quick")


def test_write_claims_leaves_the_old_file_when_writing_fails(frame, figures, monkeypatch):
    six = ct.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=None)
    path = pc.write_claims(six, "smoke")
    before = path.read_bytes()

    def broken(self, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken)
    with pytest.raises(OSError, match="disk full"):
        pc.write_claims(
            ct.evaluate_claims(frame, [_claim("worse")], profile="smoke", paper_steps=None), "smoke"
        )
    assert path.read_bytes() == before
    assert _files(path.parent) == ["claims.csv"]


def test_write_claims_waits_for_a_writer_that_holds_the_lock(frame, figures):
    """Two notebooks run at once both merge into claims.csv: a second writer waits for the
    first one's lock instead of reading the file the first one is about to replace."""
    six = ct.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=None)
    seven = ct.evaluate_claims(
        frame, [_claim("worse", notebook="07")], profile="smoke", paper_steps=None
    )
    path = pc.write_claims(six, "smoke")
    lock = filelock.FileLock(str(path.with_name(".claims.csv.lock")))
    with lock:
        writer = threading.Thread(target=pc.write_claims, args=(seven, "smoke"))
        writer.start()
        writer.join(timeout=1.0)
        assert writer.is_alive(), "write_claims did not wait for the lock"
        assert pc.read_claims("smoke")["notebook"].tolist() == ["06", "06"]
    writer.join(timeout=30)
    assert not writer.is_alive()
    assert pc.read_claims("smoke")["notebook"].tolist() == ["06", "06", "07", "07"]


def test_claims_markdown_shows_differences_and_intervals_to_one_decimal(frame):
    df = ct.evaluate_claims(
        frame, [_claim("PAL"), _claim("missing")], profile="smoke", paper_steps=19_400
    )
    text = ct.claims_markdown(df)
    d = _members(df).iloc[0]
    assert f"+3.0 [{d['ci_low']:+.1f}, {d['ci_high']:+.1f}]" in text
    assert '**"PAL beats CE"** (PAL paper, Table 2)' in text
    assert "19,400" in text and "1,500" in text and " 0-4 (5) |" in text
    assert " n/a |" in text and stats.NOT_RUN in text
    assert "<0.001" in text and "0.062" in text  # t p of a steady +3, sign-flip 2/32
    narrow, _, folded = text.partition("<details>")
    assert narrow.strip().count("\n") == 5  # header, rule, two families of one row each
    header = [c.strip() for c in narrow.splitlines()[0].strip("|").split("|")]
    assert header == ["claim", "comparison", "difference [95 % CI], last epoch", "verdict"]
    assert "<summary>" in folded and folded.rstrip().endswith("</details>")


def test_evaluate_claims_of_no_runs_says_not_run():
    df = ct.evaluate_claims(pd.DataFrame(), [_claim("PAL")], profile="smoke", paper_steps=None)
    df = _members(df)
    assert df["verdict"].tolist() == [stats.NOT_RUN] and df["n_seeds"].tolist() == [0]
    assert list(df.columns) == list(pc.CLAIM_COLUMNS)


def test_the_notebooks_claims_follow_the_profiles_grids():
    from palviz.experiments import recipes

    lt = pc.long_tailed_claims(recipes.long_tailed_setup("quick"))
    pairs = {c.family: [] for c in lt}
    for c in lt:
        pairs[c.family].append((c.baseline, c.method))
    assert pairs == {
        "PAL boosts long-tailed methods": [("CE", "CE+PAL"), ("LDAM-DRW", "LDAM-DRW+PAL")],
        "ELM-DRW highest in all ratios": [("CE", "ELM-DRW"), ("LDAM-DRW", "ELM-DRW")],
        "axis orientation": [("CE+PAL", "CE+PAL (axis)")],
    }
    assert all(c.where == {"dataset": "mnist1d", "imbalance_ratio": 100} for c in lt)
    assert {c.reading for c in lt if c.source != "palviz"} == {"all"}
    paper = pc.long_tailed_claims(recipes.long_tailed_setup("paper"))
    assert {(c.where["dataset"], c.where["imbalance_ratio"]) for c in paper} == {
        (d, r) for d in ("cifar10", "cifar100") for r in (100, 50, 10)
    }
    elm = [c for c in paper if c.family == "ELM-DRW highest in all ratios"]
    # ELM's own table only (CE, Focal, EQL v2, IB-Focal, LMSCE, LDAM, MM-LDAM, DRW forms, ELM)
    assert {c.baseline for c in elm} == {
        "CE", "CE-DRW", "Focal", "EQLv2", "IB-Focal", "LMSCE", "LDAM-DRW", "MM-LDAM-DRW", "ELM"
    }  # fmt: skip
    assert not {c.baseline for c in elm} & {"LA-CE", "ETF+DR", "ETF+DR+mixup"}
    noisy = pc.noisy_claims(recipes.noisy_setup("quick"))
    ce = [c for c in noisy if c.family == "CE+FNPAL beats CE in all noisy cases"]
    settings = {(c.where["noise_kind"], c.where["noise_rate"]) for c in ce}
    assert settings == {("symmetric", 0.2), ("symmetric", 0.4), ("asymmetric", 0.4)}
    assert {c.family for c in noisy} == {
        "CE+FNPAL beats CE in all noisy cases",
        "FNPAL gains on APLs",  # not trained in quick: its row says so
        "FNPAL beats FNPN under the same s",
    }


def test_full_reads_fnpn_at_several_s_both_apls_and_a_replication_on_fresh_seeds():
    from palviz.experiments import recipes

    setup = recipes.noisy_setup("full")
    noisy = pc.noisy_claims(setup)
    fnpn = [
        (c.baseline, c.method) for c in noisy if c.family == "FNPAL beats FNPN under the same s"
    ]
    assert fnpn[0] == ("CE+FNPN", "CE+FNPAL")  # at the noise-aware s
    assert fnpn[1:] == [(f"CE+FNPN s={s:g}", f"CE+FNPAL s={s:g}") for s in setup["fnpn_scales"]]
    assert len(setup["fnpn_scales"]) >= 2
    apl = [c.baseline for c in noisy if c.family == "FNPAL gains on APLs"]
    assert apl == ["NCE+RCE", "NFL+RCE"]
    quick_seeds = set(recipes.noisy_setup("quick")["seeds"])
    quick_seeds |= set(recipes.long_tailed_setup("quick")["seeds"])
    for claims in (noisy, pc.long_tailed_claims(recipes.long_tailed_setup("full"))):
        fresh = [c for c in claims if "replication" in c.family]
        assert fresh and all(c.seeds and not set(c.seeds) & quick_seeds for c in fresh)
        first = {c.family for c in claims if c.seeds is None and c.source != "palviz"}
        again = {c.family.split(" (replication")[0] for c in fresh}
        assert again and again <= first


@pytest.mark.parametrize("profile", ["smoke", "quick", "full", "paper"])
def test_every_noisy_claim_finds_its_runs_among_the_claim_runs(profile):
    """Notebook 07 reads its claims from claim_runs(results, exclude=["sweep"]): each claim's
    two labels must be there for each seed of its setting. (In ``full`` the s-sweep's
    "CE+FNPAL s=1" is the same run as the table's "CE+FNPAL" at symmetric 0.2; keeping the
    sweep's label hid the table's run and the claim read "not run".)"""
    from types import SimpleNamespace

    from palviz.experiments import plan, recipes

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
    labels = {r.label for r in kept}
    for claim in pc.noisy_claims(setup):
        w = claim.where
        if not {claim.baseline, claim.method} & labels:
            continue  # a family this profile does not train (its row says "not run")
        headline = (w["noise_kind"], w["noise_rate"]) == (
            setup["headline"]["kind"],
            setup["headline"]["eta"],
        )
        seeds = setup["headline"]["seeds"] if headline else setup["seeds"]
        if claim.seeds is not None:
            seeds = claim.seeds
        elif headline and profile != "smoke":
            seeds = sorted({*setup["headline"]["seeds"], *setup["seeds"]})
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


# ------------------------------------------------------------------- families, with Holm


def test_evaluate_claims_reads_a_family_with_holm(frame):
    """Two members in a family: 'PAL' (+3 +- 0.35, tiny p) and 'same' (around 0): under 'all'
    the family is inconclusive, under 'any' consistent; p_holm is Holm's of the two, and the
    family row holds the p of its conclusion about every member and about some member."""

    def member(method, reading):
        return pc.Claim(
            "06", "methods beat CE", "PAL paper", "CE", method, {"imbalance_ratio": 100},
            family="beats CE", reading=reading,
        )  # fmt: skip

    for reading, expected in (("all", stats.INCONCLUSIVE), ("any", stats.CONSISTENT)):
        claims = [member("PAL", reading), member("same", reading)]
        df = ct.evaluate_claims(frame, claims, profile="smoke", paper_steps=None)
        assert df["level"].tolist() == ["family", "member", "member"]
        fam, rows = df.iloc[0], _members(df)
        assert fam["verdict"] == expected and fam["reading"] == reading
        assert fam["comparison"] == f"{reading} of the 2 comparisons below"
        assert fam["seeds"] == "0-4" and fam["n_seeds"] == 5
        p = rows["p_value"].tolist()
        assert rows["p_holm"].tolist() == pytest.approx(stats.holm(p))
        # both means lie on the claimed side (PAL +3, same +0.04): under "all" the family's
        # p_value is the larger p (every member for the claim), p_holm 1 (no member against
        # it); under "any" p_holm is the smaller Holm p (some member for the claim) and
        # p_value 1 (no member against it)
        assert rows["mean_diff"].gt(0).all()
        if reading == "all":
            assert fam["p_value"] == pytest.approx(max(p)) and fam["p_holm"] == 1.0
            assert fam["p_signflip"] == pytest.approx(max(rows["p_signflip"]))
        else:
            assert fam["p_holm"] == pytest.approx(min(stats.holm(p))) and fam["p_value"] == 1.0
        assert rows["verdict"].tolist() == [stats.CONSISTENT, stats.INCONCLUSIVE]  # each on its own


def test_a_family_needs_one_text_and_reading_and_single_means_one(frame):
    a = pc.Claim("06", "x", "s", "CE", "PAL", {"imbalance_ratio": 100}, family="f", reading="all")
    b = pc.Claim("06", "y", "s", "CE", "same", {"imbalance_ratio": 100}, family="f", reading="all")
    with pytest.raises(ValueError, match="claims of family 'f' must be the same claim text"):
        ct.evaluate_claims(frame, [a, b], profile="smoke", paper_steps=None)
    c = pc.Claim("06", "x", "s", "CE", "PAL", {"imbalance_ratio": 100}, family="g")
    d = pc.Claim("06", "x", "s", "CE", "same", {"imbalance_ratio": 100}, family="g")
    with pytest.raises(ValueError, match="reading of family 'g' must be 'all' or 'any'"):
        ct.evaluate_claims(frame, [c, d], profile="smoke", paper_steps=None)


def test_claim_seeds_restrict_the_pairs(frame):
    claim = pc.Claim("06", "x", "s", "CE", "PAL", {"imbalance_ratio": 100}, seeds=(3, 4))
    rows = _members(ct.evaluate_claims(frame, [claim], profile="smoke", paper_steps=None))
    assert rows["seeds"].tolist() == ["3-4"] and rows["n_seeds"].tolist() == [2]
    assert rows["mean_diff"].iloc[0] == pytest.approx(3.0)  # seeds 3, 4: +3.0 and +3.0


def test_claims_summary_counts_the_family_verdicts(frame):
    claims = [_claim("PAL"), _claim("worse"), _claim("missing")]
    df = ct.evaluate_claims(frame, claims, profile="smoke", paper_steps=None)
    counts = "1 consistent, 1 contradicted, 0 inconclusive at this size, 1 not run in this profile"
    assert ct.claims_summary(df) == (
        f"3 claims, at the last epoch: {counts}; at the best epoch: {counts} (3 comparisons)."
    )


def test_write_claims_replaces_a_file_of_another_version_with_a_warning(frame, figures):
    old = figures / "smoke" / "claims.csv"
    old.parent.mkdir(parents=True)
    old.write_text("profile,notebook,claim,verdict\nsmoke,06,x,consistent\n")
    with pytest.raises(ValueError, match="has columns"):
        pc.read_claims("smoke")
    six = ct.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=None)
    with pytest.warns(UserWarning, match="claims.csv has columns .*rows are dropped"):
        pc.write_claims(six, "smoke")
    pd.testing.assert_frame_equal(pc.read_claims("smoke"), six)


@pytest.mark.parametrize("profile", ["smoke", "quick", "full", "paper"])
def test_every_long_tailed_claim_finds_its_runs_in_the_plan(profile):
    """Notebook 06 reads its claims from all its groups (the replication included): each
    comparison's two labels are planned for each seed it reads (its own seeds, or the
    profile's)."""
    from palviz.experiments import plan, recipes

    groups = plan.long_tailed_groups(profile)
    seen = {
        (s.label, s.dataset, s.imbalance_ratio, s.seed) for specs in groups.values() for s in specs
    }
    setup = recipes.long_tailed_setup(profile)
    claims = pc.long_tailed_claims(setup)
    assert claims
    for claim in claims:
        w = claim.where
        for label in (claim.baseline, claim.method):
            for seed in claim.seeds or setup["seeds"]:
                row = (label, w["dataset"], float(w["imbalance_ratio"]), seed)
                assert row in seen, (profile, claim.family, row)
    if profile == "full":
        fresh = {s.seed for s in groups["replication"]}
        assert fresh == {5, 6, 7, 8, 9} and not fresh & set(
            recipes.long_tailed_setup("quick")["seeds"]
        )


# ------------------------------------------- the family rule, the verdict's p, two epochs


def _steady(base, diffs, label):
    """Rows of ``label``: the baseline accuracies ``base`` plus ``diffs`` points."""
    return [_row(label, s, b + d / 100) for s, b, d in zip(SEEDS, base, diffs, strict=True)]


# per-seed differences (points) whose paired t p-values lie in (0.025, 0.05): each below 0.05
# on its own, but Holm over two multiplies the smaller by 2
FIRST = [1.0, 2.0, 3.0, 0.2, 2.4]
SECOND = [2.5, 0.3, 1.8, 3.2, 0.6]


def test_an_all_family_with_every_member_below_alpha_is_consistent_without_holm():
    """An 'all' claim is an intersection-union test: every member at p < 0.05 on the claimed
    side makes the family consistent, although Holm's adjustment of the two p-values would
    leave it inconclusive (the rule before this one)."""
    rows = [_row("CE", s, b) for s, b in zip(SEEDS, CE, strict=True)]
    rows += _steady(CE, FIRST, "A") + _steady(CE, SECOND, "B")
    claims = [
        pc.Claim("06", "A and B beat CE", "p", "CE", m, {"imbalance_ratio": 100},
                 family="both", reading="all")
        for m in ("A", "B")
    ]  # fmt: skip
    df = ct.evaluate_claims(pd.DataFrame(rows), claims, profile="smoke", paper_steps=None)
    fam, members = df.iloc[0], _members(df)
    p = members["p_value"].tolist()
    assert all(0.025 < x < 0.05 for x in p), p  # the premise: each below alpha on its own
    assert min(stats.holm(p)) >= 0.05  # ... and Holm would refuse every one of them
    assert members["verdict"].tolist() == [stats.CONSISTENT] * 2
    assert fam["verdict"] == stats.CONSISTENT
    assert fam["p_value"] == pytest.approx(max(p)) and fam["p_value"] < 0.05
    # one member measurably worse at p < 0.05 but not after Holm does not contradict "all"
    rows2 = [_row("CE", s, b) for s, b in zip(SEEDS, CE, strict=True)]
    rows2 += _steady(CE, FIRST, "A") + _steady(CE, [-x for x in SECOND], "B")
    df = ct.evaluate_claims(pd.DataFrame(rows2), claims, profile="smoke", paper_steps=None)
    members = _members(df)
    assert members["verdict"].tolist() == [stats.CONSISTENT, stats.CONTRADICTED]
    assert df.iloc[0]["verdict"] == stats.INCONCLUSIVE
    holm_b = stats.holm(members["p_value"].tolist())[1]
    assert df.iloc[0]["p_holm"] == pytest.approx(holm_b) and holm_b >= 0.05  # B, after Holm


def test_the_verdicts_rest_on_the_p_value_the_constant_names(frame, monkeypatch):
    """VERDICT_P selects the p-value of every verdict, and docs/results.md names it; with five
    pairs the sign-flip p cannot fall below 2 / 2**5 = 0.0625, so resting on it turns a steady
    +3 points into 'inconclusive'."""
    df = ct.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=None)
    assert ct.VERDICT_P == "p_value" and ct.P_NAMES[ct.VERDICT_P] == "p (t)"
    page = " ".join((Path(__file__).parents[1] / "docs" / "results.md").read_text().split())
    assert f"**The verdicts rest on {ct.P_NAMES[ct.VERDICT_P]}** (`palviz" in page
    assert stats.sign_flip_floor(5) == 0.0625 and "0.0625 with 5 pairs" in page
    assert _members(df)["verdict"].tolist() == [stats.CONSISTENT]
    monkeypatch.setattr(ct, "VERDICT_P", "p_signflip")
    df = ct.evaluate_claims(frame, [_claim("PAL")], profile="smoke", paper_steps=None)
    member = _members(df).iloc[0]
    assert member["p_signflip"] == pytest.approx(1 / 16)  # all five seeds the same sign
    assert member["verdict"] == stats.INCONCLUSIVE and df.iloc[0]["verdict"] == stats.INCONCLUSIVE
    assert member["p_holm"] == pytest.approx(member["p_signflip"])  # Holm of the chosen p


def test_each_claim_is_read_at_the_last_and_the_best_epoch_side_by_side():
    """Last epoch: 'PAL' is +3 points on every seed; best epoch: no better than CE (+0 +-
    a little). Both readings, with both p-values, are in the frame and in the table."""
    rows = []
    for s, base, eps in zip(SEEDS, CE, [0.004, -0.006, 0.002, -0.003, 0.005], strict=True):
        rows += [_row("CE", s, base, best=base + 0.05)]
        rows += [_row("PAL", s, base + 0.03, best=base + 0.05 + eps)]
    df = ct.evaluate_claims(pd.DataFrame(rows), [_claim("PAL")], profile="smoke", paper_steps=None)
    member = _members(df).iloc[0]
    assert member["mean_diff"] == pytest.approx(3.0)
    assert member["best_mean_diff"] == pytest.approx(
        100 * np.mean([0.004, -0.006, 0.002, -0.003, 0.005])
    )
    best = stats.paired_difference(
        100 * (np.array(CE) + 0.05),
        100 * (np.array(CE) + 0.05 + [0.004, -0.006, 0.002, -0.003, 0.005]),
    )
    assert member["best_p_value"] == pytest.approx(best.p_value)
    assert member["best_p_signflip"] == pytest.approx(best.p_signflip)
    assert (member["verdict"], member["best_verdict"]) == (stats.CONSISTENT, stats.INCONCLUSIVE)
    assert (df.iloc[0]["verdict"], df.iloc[0]["best_verdict"]) == (
        stats.CONSISTENT,
        stats.INCONCLUSIVE,
    )
    assert member["paper_reads"] == "not stated"
    table = ct.claims_markdown(df)
    folded = table.partition("</summary>")[2].strip()
    header = [c.strip() for c in folded.splitlines()[0].strip("|").split("|")]
    for epoch in ("last", "best"):
        for name in ("p (t)", "p (sign-flip)", "p (Holm)"):
            assert f"{epoch}: {name}" in header
    assert "best: difference [CI]" in header and "best: verdict" in header
    assert "paper reads" in header
    assert f"{best.mean:+.1f} [{best.ci_low:+.1f}, {best.ci_high:+.1f}]" in table
    assert "not stated" in table


def test_paper_reads_comes_from_the_quote():
    from palviz.experiments import recipes

    assert {q.paper_reads for q in pc.QUOTES.values()} == {"not stated"}  # PAL, ELM excerpts
    claims = pc.long_tailed_claims(recipes.long_tailed_setup("quick"))
    claims += pc.noisy_claims(recipes.noisy_setup("quick"))
    for c in claims:
        assert c.paper_reads == ("" if c.source == "palviz" else "not stated"), c.family


# ------------------------------------------------------------ the rival: fixed ETF + DR


def test_the_rival_family_reads_etf_dr_against_ce_pal_and_ce_where_trained():
    from palviz.experiments import recipes

    for profile in ("smoke", "quick"):  # not trained there: no family, the claims unchanged
        lt = pc.long_tailed_claims(recipes.long_tailed_setup(profile))
        assert pc.RIVAL_FAMILY not in {c.family for c in lt}
    paper = recipes.long_tailed_setup("paper")
    rival = [c for c in pc.long_tailed_claims(paper) if c.family == pc.RIVAL_FAMILY]
    settings = [(d, r) for d in paper["datasets"] for r in paper["ratios"]]
    assert [(c.baseline, c.method) for c in rival] == [("CE+PAL", "ETF+DR"), ("CE", "ETF+DR")] * (
        len(settings)
    )
    assert {c.paper_reads for c in rival} == {""} and {c.reading for c in rival} == {"all"}
    assert rival[0].claim.startswith("(palviz question, not a paper claim)")


def test_the_rival_family_is_read_at_smoke_size():
    """The smoke setup with ETF+DR added, read against made-up accuracies: ETF+DR 3 points
    above CE+PAL and CE at every seed gives a consistent family of two members."""
    from palviz.experiments import recipes

    setup = {**recipes.long_tailed_setup("smoke"), "methods": ("CE", "ETF+DR")}
    setup["pal_methods"] = ("CE",)
    claims = [c for c in pc.long_tailed_claims(setup) if c.family == pc.RIVAL_FAMILY]
    offsets = [0.030, 0.035, 0.025, 0.030, 0.032]
    rows = []
    for s, base, off in zip(SEEDS, CE, offsets, strict=True):
        rows += [_row("CE", s, base), _row("CE+PAL", s, base), _row("ETF+DR", s, base + off)]
    frame = pd.DataFrame(rows).assign(dataset="mnist1d")
    df = ct.evaluate_claims(frame, claims, profile="smoke", paper_steps=None)
    assert df["level"].tolist() == ["family", "member", "member"]
    assert df.iloc[0]["verdict"] == stats.CONSISTENT
    # in percentage points
    assert _members(df)["mean_diff"].tolist() == pytest.approx([100 * np.mean(offsets)] * 2)
