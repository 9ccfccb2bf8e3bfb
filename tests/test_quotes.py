"""Every claim quotes its paper word for word: its text is in the sentence that
docs/reference.md ("Quoted sentences") ships for it, with the same paper and location."""

import re
from pathlib import Path

import pytest

from palviz.experiments import claims as pc
from palviz.experiments import recipes

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference.md"
ENTRY = re.compile(
    r"^- `(?P<key>\w+)` \((?P<paper>PAL|ELM), (?P<location>.+)\):\n  > (?P<text>.+)$", re.M
)


def shipped() -> dict:
    text = REFERENCE.read_text()
    section = text[text.index("## 8. Quoted sentences") : text.index("## References")]
    entries = {m["key"]: m for m in ENTRY.finditer(section)}
    assert entries, "no quoted sentence found in docs/reference.md section 8"
    return entries


def _plain(text: str) -> str:
    """The paper's own words: palviz's [sic] marks taken out."""
    return text.replace(" [sic]", "")


def test_every_quote_is_a_verbatim_part_of_its_shipped_sentence():
    entries = shipped()
    for key, quote in pc.QUOTES.items():
        assert key in entries, f"QUOTES[{key!r}] has no sentence in docs/reference.md section 8"
        entry = entries[key]
        assert (entry["paper"], entry["location"]) == (quote.paper, quote.location), key
        assert _plain(quote.text) in _plain(entry["text"]), (key, quote.text)


@pytest.mark.parametrize("profile", ["smoke", "quick", "full", "paper"])
def test_every_paper_claim_of_every_profile_quotes_a_shipped_sentence(profile):
    texts = {q.text: f"{q.paper}, {q.location}" for q in pc.QUOTES.values()}
    claims = pc.long_tailed_claims(recipes.long_tailed_setup(profile))
    claims += pc.noisy_claims(recipes.noisy_setup(profile))
    assert claims
    for claim in claims:
        if claim.source == "palviz":  # palviz's own questions say so in their text
            assert claim.claim.startswith("(palviz question, not a paper claim)")
            continue
        assert claim.claim in texts, claim.claim
        assert claim.source == texts[claim.claim]


def test_the_check_fails_on_a_misquote():
    """The test above can fail: one changed word is caught."""
    entries = shipped()
    wrong = pc.Quote("PAL", pc.QUOTES["ce_fnpal"].location, "CE+FNPAL performs better than CE")
    assert _plain(wrong.text) not in _plain(entries["ce_fnpal"]["text"])


def test_the_long_tailed_pal_quote_stands_after_the_weight_decay_theorem():
    """PAL's long-tailed sentence follows the theorem introduced by "Formally, we have the
    following theorem" (weight decay), not Thm. 4.1 directly: its location says so and its
    shipped passage opens with the sentence that reads that theorem."""
    quote = pc.QUOTES["pal_lt"]
    assert quote.location.startswith("Sec. 4 (after the weight-decay theorem"), quote.location
    assert "(after Thm. 4.1)" not in quote.location
    assert shipped()["pal_lt"]["text"].startswith("According to this theoretical guarantee, PAL")
