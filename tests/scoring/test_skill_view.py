"""What a judge reads of a skill: SKILL.md, the files it references first, the rest while the budget lasts, and the
files left out named with why."""

from __future__ import annotations

import pytest

from scoring.skill_view import SourceFile, skill_view


def words(text: str) -> int:
    return len(text.split())


SKILL = "one two three four"  # 4 "tokens"
SOURCES = (
    SourceFile("assets/logo.png", None, "binary"),
    SourceFile("notes.md", "n " * 3),
    SourceFile("references/api.md", "a " * 10),
    SourceFile("references/deep/more.md", "m " * 5),
    SourceFile("scripts/run.sh", "s " * 20),
    SourceFile("evals/evals.json", '{"evals": []}'),
)


def test_referenced_files_come_first_in_the_order_skill_md_names_them_then_the_rest_by_path():
    view = skill_view(SKILL, SOURCES, ("scripts/run.sh", "references/"), 1000, words)
    assert [path for path, _ in view.files] == ["scripts/run.sh", "references/api.md", "references/deep/more.md",
                                                "notes.md"]
    assert view.left_out == (("assets/logo.png", "binary"),)  # named, never inlined; evals/ is not the skill's text
    assert view.texts()["SKILL.md"] == SKILL and "evals/evals.json" not in view.texts()


def test_a_file_over_the_budget_is_named_and_a_smaller_one_after_it_still_fits():
    view = skill_view(SKILL, SOURCES, ("scripts/run.sh", "references/api.md"), 4 + 12, words)
    assert [path for path, _ in view.files] == ["references/api.md"]  # 10 of the 12 left; the script (20) did not fit
    reasons = dict(view.left_out)
    assert "20 tokens" in reasons["scripts/run.sh"] and "budget of 16" in reasons["scripts/run.sh"]
    assert "notes.md" in reasons and "assets/logo.png (binary)" in view.unseen()


def test_a_source_has_its_text_or_the_reason_it_has_none():
    with pytest.raises(ValueError, match="either its text or the reason"):
        SourceFile("x.md", None)
    with pytest.raises(ValueError, match="either its text or the reason"):
        SourceFile("x.md", "text", "binary")
