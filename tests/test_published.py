"""The published numbers as data (palviz.experiments.published): every record has a source and
a dataset and method palviz knows, the five numbers the tables have always stood beside are
unchanged, and the docs list the sources as the data does."""

import re
from pathlib import Path

import pytest

from palviz import data as pdata
from palviz import experiments as ex
from palviz.experiments import published as pub

ROOT = Path(__file__).resolve().parents[1]

#: The source's names palviz's labels stand for: none of them may be left unmapped.
SYNONYMS = {"ERM": "CE", "Softmax": "CE", "FL": "Focal", "LogitAdjust": "LA-CE"}


def test_every_record_has_a_source_a_registered_dataset_and_one_setting():
    assert len(pub.PUBLISHED) > 100
    for r in pub.PUBLISHED:
        source = pub.SOURCES[r.source]
        assert source.citation and source.where and source.url.startswith("https://")
        assert source.reports in ("error", "accuracy")
        assert r.dataset in pdata.DATASETS
        long_tailed = r.imbalance_ratio is not None
        assert long_tailed != (r.noise_kind is not None), r
        if not long_tailed:
            assert r.noise_kind in ("symmetric", "asymmetric") and 0 < r.noise_rate < 1
        assert 0 < r.accuracy < 100 and (r.std is None or 0 <= r.std < 10)


def test_a_method_is_palvizs_label_where_palviz_trains_it_and_the_sources_name_otherwise():
    for r in pub.PUBLISHED:
        methods = ex.LT_METHODS if r.imbalance_ratio is not None else ex.NOISE_METHODS
        assert r.method in methods or r.method == r.source_method, r
        assert r.source_method not in SYNONYMS or r.method == SYNONYMS[r.source_method], r
    trained = {r.method for r in pub.PUBLISHED if r.method != r.source_method}
    assert {"CE", "Focal", "LA-CE"} <= trained


def test_the_five_numbers_the_tables_always_stood_beside_are_unchanged():
    assert ex.published_lt_accuracy("cifar10", 100, "LDAM-DRW") == pytest.approx(0.7703)
    assert ex.published_lt_accuracy("cifar10", 10, "LDAM-DRW") == pytest.approx(0.8816)
    assert ex.published_lt_accuracy("cifar100", 100, "LDAM-DRW") == pytest.approx(0.4204)
    assert ex.published_lt_accuracy("cifar100", 10, "LDAM-DRW") == pytest.approx(0.5871)
    assert ex.published_lt_accuracy("cifar10", 10, "CE") == pytest.approx(0.8639)
    assert ex.published_lt_accuracy("mnist1d", 100, "LDAM-DRW") is None


def test_an_error_is_shown_as_accuracy_and_a_cell_names_its_source():
    ldam = pub.published_for("cifar10", "LDAM-DRW", imbalance_ratio=100)[0]
    assert (ldam.value, ldam.accuracy, ldam.text) == (22.97, 77.03, "77.03")  # 100 - 22.97
    (nce,) = pub.published_for("cifar10", "NCE+RCE", noise_kind="symmetric", noise_rate=0.4)
    assert nce.text == "85.13 +- 0.56" and nce.std == 0.56
    cell = pub.published_text(pub.published_for("cifar100", "CE", imbalance_ratio=100))
    assert cell.startswith("38.32 (LDAM-DRW paper); 38.32 (Cui et al.)")
    assert "39.1 (OpenLT README reported); 40.3 (OpenLT README reproduced)" in cell
    assert pub.published_text([]) == "-"
    with pytest.raises(ValueError, match="exactly one of imbalance_ratio and noise_kind"):
        pub.published_for("cifar10", "CE")


def test_the_published_markdown_groups_every_number_by_source():
    lt = ex.published_lt_markdown()
    noisy = ex.published_noisy_markdown()
    for source in pub.SOURCES:
        assert f"**{source}" in lt + noisy
    records = [r for r in pub.PUBLISHED if r.imbalance_ratio is not None]
    assert all(r.text in lt for r in records)
    assert "CIFAR-10-LT, rho = 100" in lt and "CIFAR-100-LT, rho = 100, reproduced" in lt
    assert "**eps-softmax paper, CIFAR-100**" in noisy and "sym 0.8" in noisy
    assert "CIFAR-100" not in ex.published_noisy_markdown(["cifar10"])
    assert ex.published_noisy_markdown(["mnist1d"]) == ""


def test_docs_list_the_sources_as_the_data_does():
    text = (ROOT / "docs" / "reference.md").read_text()
    block = re.search(r"<!-- published sources [^>]*-->\n(.*?)<!-- end -->", text, re.S)
    assert block, "docs/reference.md has no published-sources block"
    assert block.group(1) == pub.sources_markdown(), (
        "docs/reference.md 6.4 is stale: paste palviz.experiments.sources_markdown() there"
    )
