"""The structural guards, on skills shaped like the damage seen on real ones: each refuses its case and lets the
honest neighbour through."""

from __future__ import annotations

import pytest

from scoring.boilerplate import NEAR_DUPLICATE, boilerplate, inserted_units
from scoring.edit_guards import adds_words, check_edit, span_between
from scoring.edits import Edit, apply_edit

SKILL = """---
name: cleanup-records
description: Deletes stale records after a review. Use when the user says "clean up records".
---

# Cleanup records

## Steps

1. List the stale records with `records list --stale`.
2. Delete them:

   ```python
   obj = Record.get(pk)
   obj.delete()
   ```

3. When the user passed `--yes`, this step may run directly, without asking.

## Styles

Pick a layout from `references/presets/<style>.md` and follow
[the field guide](references/fields.md).

## Troubleshooting

- Symptom: the job exits with code 3.

  Root cause: the lock file of an earlier run is still there.

| trigger | first fix |
|---|---|
| lock held | remove `run.lock` |
"""
FILES = frozenset({"SKILL.md", "references/presets/compact.md", "references/presets/wide.md", "references/fields.md"})


def refusals(edit: Edit, files: frozenset[str] = FILES, allow_rename: bool = False, text: str = SKILL) -> list[str]:
    return [r.guard for r in check_edit(text, apply_edit(text, edit), edit, files, allow_rename)]


def test_a_stop_pasted_inside_a_code_block_is_refused_and_before_it_is_not():
    inside = Edit("dim4", "", "\n   🛑 STOP: confirm with the user before deleting.", anchor="obj = Record.get(pk)")
    assert refusals(inside) == ["inside-block"]
    before = Edit("dim4", "2. Delete them:", "2. 🛑 STOP: confirm with the user first. Delete them:")
    assert refusals(before) == []


def test_inline_code_and_links_are_not_written_into():
    assert refusals(Edit("dim5", "records list --stale", "records list --stale --all")) == ["inside-inline"]
    assert refusals(Edit("dim6", "[the field guide]", "[the full field guide]")) == ["inside-inline"]
    assert refusals(Edit("dim5", "with `records list --stale`.", "with `records list --stale` (read only).")) == []


def test_a_table_is_not_written_into():
    assert refusals(Edit("dim3", "", " (or wait an hour)", anchor="| remove `run.lock`")) == ["inside-block"]


def test_a_live_reference_and_a_placeholder_path_whose_folder_exists_are_not_removed():
    placeholder = Edit("dim6", "Pick a layout from `references/presets/<style>.md` and follow", "Follow")
    assert refusals(placeholder) == ["live-reference"]
    assert refusals(Edit("dim6", "\n[the field guide](references/fields.md).", "\nthe field guide.")) == ["live-reference"]
    gone = FILES - {"references/presets/compact.md", "references/presets/wide.md"}
    assert refusals(placeholder, gone) == []  # its folder does not exist: the reference is dead, and may go


def test_the_frontmatter_name_only_changes_when_a_person_allows_it():
    rename = Edit("dim1", "name: cleanup-records", "name: record-cleanup")
    assert refusals(rename) == ["frontmatter-name"]
    assert refusals(rename, allow_rename=True) == []


def test_a_heading_between_a_symptom_and_its_root_cause_splits_the_item():
    split = Edit("dim7", "", "\n\n## 约束\n", anchor="- Symptom: the job exits with code 3.")
    assert refusals(split) == ["split-block"]
    blank_line = Edit("dim5", "", "\n\nFirst check the log.", anchor="Pick a layout from `references/presets/<style>.md` and")
    assert "split-block" in refusals(blank_line)  # a paragraph cut in two by a blank line
    after_item = Edit("dim3", "", "\n\n## Escalation\n\nPage the on-call engineer.",
                      anchor="  Root cause: the lock file of an earlier run is still there.")
    assert refusals(after_item) == []


def test_an_empty_heading_is_refused_and_one_with_its_text_is_not():
    empty = Edit("dim7", "", "\n## Overview\n", anchor="# Cleanup records\n")
    assert refusals(empty) == ["empty-heading"]
    with_text = Edit("dim7", "", "\n## Overview\n\nRemoves records nobody has read for a year.\n", anchor="# Cleanup records\n")
    assert refusals(with_text) == []


def test_a_line_the_skill_already_has_is_not_added_again():
    again = Edit("dim9", "", "\n- Symptom: the job exits with code 3.", anchor="| remove `run.lock` |")
    assert "repeated-line" in refusals(again)
    assert refusals(Edit("dim9", "", "\n\nNever delete a record that is still referenced.\n",
                         anchor="| remove `run.lock` |\n")) == []


def test_the_stop_for_a_step_that_may_run_directly_is_not_a_structure_problem_but_the_words_count_as_written():
    """Contradicting the text ("may run directly") is semantic: the judges, not the guards, see it — so such an edit
    adds words, and its rule gain needs a judged gain to count (scoring/keep_decision.py)."""
    stop = Edit("dim4", "3. When the user passed", "3. 🛑 STOP: confirm first. When the user passed")
    assert refusals(stop) == [] and adds_words(SKILL, stop)
    assert not adds_words(SKILL, Edit("dim7", "## Styles", "### Styles"))


def test_the_same_line_normalized_is_the_same_line_and_tweaks_are_not_lines():
    a = inserted_units(SKILL, Edit("dim3", "", "\n\n| lock held by a dead job | remove `run.lock`, then start again |\n"))
    b = inserted_units(SKILL, Edit("dim3", "", "\n\n|  Lock held by a dead job | Remove run.lock then start again. |\n"))
    assert a and a == b
    assert inserted_units(SKILL, Edit("dim1", "records\".", "records\" or \"tidy\".")) == ()


PARAGRAPH = """---
name: x
description: Does x. Use when the user asks for x.
---

# X

Read the whole change before you comment on any of it.
Then write one summary paragraph, and the comments by file.
Keep each comment to the line it is about.

## Next
"""


@pytest.mark.parametrize("old, new", [
    ("Read the whole change before you comment on any of it.",
     "Read the whole change before you comment on any of it.\n\nIn short:"),  # the paragraph's first line
    ("Keep each comment to the line it is about.", "In short:\n\nKeep each comment to the line it is about."),  # its last
    ("Read the whole change before you comment on any of it.\nThen",
     "Read the whole change before you comment on any of it.\n\n## Summary\n\nThen"),
])
def test_a_paragraph_is_not_cut_in_two_at_its_first_line_or_its_last(old, new):
    """Before: an edit whose replaced text began at the paragraph's first character was never checked."""
    assert refusals(Edit("dim2", old, new), frozenset({"SKILL.md"}), text=PARAGRAPH) == ["split-block"]


@pytest.mark.parametrize("old, new", [
    ("Read the whole change", "Intro line.\n\nRead the whole change"),  # a paragraph of its own before it
    ("it is about.", "it is about.\n\nIn short: comment where it changes the outcome."),  # one after it
    ("Read the whole change", "First, read the whole change"),  # words changed inside it
])
def test_text_around_a_paragraph_or_inside_one_line_of_it_is_not_a_split(old, new):
    assert refusals(Edit("dim2", old, new), frozenset({"SKILL.md"}), text=PARAGRAPH) == []


CHECKLIST = "\n\n- [ ] Confirm a backup of the data exists before you start.\n- [ ] Ask the owner of {name} to approve the plan.\n"


def test_a_checklist_pasted_into_many_skills_with_one_line_changed_is_boilerplate_in_the_second():
    """Before: only the very same whole block counted, so one line that differs per skill let it through everywhere."""
    first = inserted_units(SKILL, Edit("dim4", "", CHECKLIST.format(name="cleanup-records")), "cleanup-records")
    seen = dict.fromkeys(first, "cleanup-records")
    second = inserted_units(PARAGRAPH, Edit("dim4", "", CHECKLIST.format(name="x") + "- [ ] Note what you changed.\n"), "x")
    assert "cleanup-records" in boilerplate(second, seen, "x")
    assert boilerplate(second, seen, "cleanup-records") == ""  # the same skill again is the repeated-line guard's case
    reworded = inserted_units(PARAGRAPH, Edit("dim4", "", "\n\n- [ ] Confirm a backup of the database exists before you start.\n"), "x")
    assert "% alike" in boilerplate(reworded, seen, "x")  # one word changed: at least NEAR_DUPLICATE alike
    own = inserted_units(PARAGRAPH, Edit("dim4", "", "\n\n- [ ] Check the diff still applies to the base branch.\n"), "x")
    assert boilerplate(own, seen, "x") == ""


@pytest.fixture
def corpus_lines(corpus_dir) -> list[tuple[str, dict[str, str]]]:
    """Each line of each corpus skill (normalized, UNIT_MIN characters or more), with every other skill's lines."""
    from scoring.boilerplate import UNIT_MIN, normalized_line

    skills = {p.parent.name: [u for u in (normalized_line(line, p.parent.name) for line in
                                           p.read_text(encoding="utf-8", errors="replace").splitlines()) if len(u) >= UNIT_MIN]
              for p in sorted(corpus_dir.glob("*/*/SKILL.md"))}
    return [(line, {other: name for name, lines in skills.items() if name != skill for other in lines})
            for skill, lines in skills.items() for line in lines]


def test_the_near_duplicate_threshold_tells_real_skills_lines_apart(corpus_lines):
    """On the public corpus: lines of different skills that say different things stay below it; those above it are one
    template with a word or a number changed (the measurement behind NEAR_DUPLICATE)."""
    from rapidfuzz import fuzz

    different = [("read the corresponding theme file from the themes directory",
                  "load the appropriate guideline file from the examples directory")]
    assert all(fuzz.ratio(a, b) < NEAR_DUPLICATE for a, b in different)
    flagged = sum(1 for line, others in corpus_lines if boilerplate((line,), others, "self"))
    assert flagged / len(corpus_lines) < 0.06, f"{flagged} of {len(corpus_lines)} corpus lines flagged"


@pytest.mark.parametrize("before, after", [("abc", "abXc"), ("abc", "ac"), ("", "x"), ("same", "same")])
def test_span_between_finds_the_one_region_that_differs(before, after):
    span = span_between(before, after)
    assert before[: span.start] + span.new + before[span.end:] == after


def test_a_dead_link_may_be_pointed_at_the_file_that_moved_and_nothing_else_inside_a_link():
    """Found on generated skills: the moved-reference fix on a Markdown link was refused as 'inside a link'."""
    from scoring.edit_guards import check_edit
    from scoring.edits import Edit, apply_edit

    text = "---\nname: x\ndescription: d\n---\n# X\n\nRead [the notes](fixture.md) first.\n"
    files = frozenset({"SKILL.md", "references/fixture.md", "references/other.md"})
    moved = Edit("dim6", "(fixture.md)", "(references/fixture.md)", "moved", 1.0)
    assert check_edit(text, apply_edit(text, moved), moved, files) == []
    elsewhere = Edit("dim6", "(fixture.md)", "(references/missing.md)", "a guess", 1.0)  # not a file the skill has
    assert [r.guard for r in check_edit(text, apply_edit(text, elsewhere), elsewhere, files)] == ["inside-inline"]
    label = Edit("dim6", "[the notes]", "[the NEVER notes]", "stuffing", 1.0)
    assert "inside-inline" in [r.guard for r in check_edit(text, apply_edit(text, label), label, files)]
    live_text = text.replace("(fixture.md)", "(references/other.md)")
    swap = Edit("dim6", "(references/other.md)", "(references/fixture.md)", "swap a live one", 1.0)
    assert "inside-inline" in [r.guard for r in check_edit(live_text, apply_edit(live_text, swap), swap, files)]


@pytest.mark.parametrize("new", [
    "## Steps\n\n<!-- Never delete without a backup. Do not skip the review. -->",
    "## Steps\n\n[//]: # (Never delete without a backup. Do not skip the review.)",
    "## Steps\n\nNever delete without a back\u200bup.",
    "## Steps\n\nUse the key sk-" + "Zq8Xw2" * 7 + " for the records API.",
])
def test_text_the_rendered_skill_does_not_show_is_not_added(new: str):
    """A "never ..." tucked into a comment lifts dim9 where the reviewer of the change sees nothing."""
    found = check_edit(SKILL, apply_edit(SKILL, edit := Edit("dim9", "## Steps", new)), edit, FILES)
    assert [r.guard for r in found] == ["hidden-text"] and found[0].line == 8, found


def test_visible_text_an_html_example_in_code_and_a_comment_moved_whole_are_not_hidden_text():
    visible = Edit("dim9", "## Steps", "## Steps\n\nNever delete without a backup.")
    assert refusals(visible) == []
    example = Edit("dim5", "## Styles", "## Styles\n\n```html\n<!-- a comment in an HTML example -->\n```")
    assert refusals(example) == []
    commented = SKILL.replace("## Styles\n", "## Styles\n\n<!-- layout notes -->\n")
    moved = Edit("dim7", "\n<!-- layout notes -->\n", "\n")
    assert refusals(moved, text=commented) == []  # one comment fewer: nothing hidden added
