"""A skill author's evals/evals.json read as its test prompts: both spellings, a stable held-out split, and a file
that cannot be used named with its entry and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workspace.author_evals import AuthorEvalsError, as_prompts, read_cases


def write_evals(skill: Path, content: object) -> Path:
    path = skill / "evals" / "evals.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2), encoding="utf-8")
    return path


CASES = {"skill_name": "pdf", "evals": [
    {"id": 1, "prompt": "Fill in form.pdf", "expected_output": "a filled form", "files": ["evals/files/form.pdf"],
     "assertions": ["every field is filled", "the signature box is left empty"]},
    {"id": 2, "prompt": "Merge a.pdf and b.pdf", "expected_output": "one file", "expectations": ["pages in order"]},
    {"id": 3, "prompt": "Extract the tables", "expected_output": "CSV per table"}]}


def test_the_authors_cases_are_read_in_either_spelling(tmp_path: Path):
    assert read_cases(tmp_path) is None  # no evals file: prompts are designed
    write_evals(tmp_path, CASES)
    cases = read_cases(tmp_path)
    assert cases is not None and [c.assertions for c in cases] == [
        ["every field is filled", "the signature box is left empty"], ["pages in order"], []]
    prompts = as_prompts(cases, "pdf", None)
    assert [p.prompt for p in prompts] == ["Fill in form.pdf", "Merge a.pdf and b.pdf", "Extract the tables"]
    assert prompts[0].expected == "a filled form" and prompts[0].files == ("evals/files/form.pdf",)
    assert prompts[0].assertions == ("every field is filled", "the signature box is left empty")  # graded one by one
    assert prompts[2].assertions == () and prompts[1].assertions == ("pages in order",)
    assert sum(p.held_out for p in prompts) == 1


def test_the_held_out_case_is_the_same_on_every_run_and_a_saved_split_is_kept(tmp_path: Path):
    write_evals(tmp_path, CASES)
    cases = read_cases(tmp_path)
    assert cases is not None
    first = as_prompts(cases, "pdf", None)
    assert as_prompts(cases, "pdf", None) == first  # chosen by the skill and its cases, not by the run
    person = [p.model_copy(update={"held_out": p.id == 3, "held_out_source": None}) for p in first]
    assert as_prompts(cases, "pdf", person) == person  # a split already recorded (a person's, here) is kept
    assert sum(p.held_out for p in as_prompts(cases[:1], "pdf", None)) == 0  # one case: nothing to hold out


@pytest.mark.parametrize(("content", "said"), [
    ('{"evals": [\n  {"id": 1, "prompt": "x",}\n]}', "evals.json:2: not valid JSON"),
    ({"evals": [{"id": 1, "prompt": ""}]}, "evals.0.prompt: String should have at least 1 character"),
    ({"evals": []}, "evals: List should have at least 1 item"),
    ({"cases": [{"id": 1, "prompt": "x"}]}, "evals: Field required"),
    ({"evals": [{"id": 1, "prompt": "x"}, {"id": 1, "prompt": "y"}]}, "id 1 used more than once"),
])
def test_a_file_that_cannot_be_used_is_named_with_its_entry_and_the_fix(tmp_path: Path, content: object, said: str):
    path = write_evals(tmp_path, content)
    with pytest.raises(AuthorEvalsError) as raised:
        read_cases(tmp_path)
    assert str(path) in str(raised.value) and said in str(raised.value)
    assert "fix it" in str(raised.value) or "the file needs" in str(raised.value) or "give each case" in str(raised.value)


def test_designed_prompts_are_exported_on_request_and_never_over_the_authors_file(tmp_path: Path):
    from workspace.author_evals import export_prompts
    from workspace.test_prompts import TestPrompt

    designed = [TestPrompt(id=1, type="main", prompt="review my PR", expected="a review"),
                TestPrompt(id=2, type="edge", prompt="review a 3000-line PR", expected="asks to split", held_out=True)]
    written = export_prompts(tmp_path, designed)
    cases = read_cases(tmp_path)  # what Luban writes, it reads back as the author's
    assert written == tmp_path / "evals" / "evals.json" and cases is not None
    assert [(c.id, c.prompt, c.expected_output) for c in cases] == [(1, "review my PR", "a review"),
                                                                    (2, "review a 3000-line PR", "asks to split")]
    before = written.read_bytes()
    with pytest.raises(AuthorEvalsError, match="never overwritten"):
        export_prompts(tmp_path, designed[:1])
    assert written.read_bytes() == before
