"""Property-based: the deterministic scorer never raises on arbitrary input, and the same input always
gives the same score (hypothesis explores text, Markdown-shaped text and raw bytes)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring import SkillScore, UnreadableSkill, score_document, score_skill
from scoring.document import parse

FRAGMENTS = ["---\n", "name: x\n", "description: Use when the user asks\n", "# H\n", "### H3\n", "```\n", "```bash\n",
             "- item\n", "  - nested\n", "1. step\n", "> quote\n", "[link](refs/a.md)\n", "[up](../../etc/passwd)\n",
             "🛑 STOP: confirm\n", "🔴 CHECKPOINT\n", "<<<<<<< HEAD\n", "=======\n", ">>>>>>> b\n", "| a | b |\n|---|---|\n",
             "NEVER do this\n", "等\n", "\n", "\r\n", "\t", "*", "_", "`", "&a [*a]\n", "!!python/object x\n", "\x00", "\ufeff"]
markdownish = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=40)), max_size=60).map("".join)
no_surrogates = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=3000)
FILES = frozenset({"refs/a.md", "scripts/run.sh"})


def score_text(text: str) -> SkillScore:
    return score_document(parse(text), "prop-skill", FILES)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(no_surrogates, markdownish))
def test_scoring_never_raises_on_arbitrary_text_and_is_deterministic(text: str):
    first = score_text(text)
    assert first == score_text(text)
    assert 0 <= first.deterministic_subtotal <= 31
    assert all(d.score is None or 0 <= d.score <= 10 for d in first.dims)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_arbitrary_bytes_are_scored_or_rejected_as_unreadable_and_nothing_else(data: bytes):
    try:
        first = score_skill(data, "prop-skill", FILES)
    except UnreadableSkill as err:
        assert str(err)  # a rejection always says why
        return
    assert first == score_skill(data, "prop-skill", FILES)
