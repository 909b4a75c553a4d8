"""Edits where the weakness is: a proposal may change a Markdown file SKILL.md references — one file an edit, the edit
budget of that file, every guard, git rolling back that file, rejected_edits.md and the rows naming it."""

from __future__ import annotations

import re
from pathlib import Path

import git
import pytest
from prefect.artifacts import Artifact

from flows.optimize import optimize_skills
from judges.backend import ProposalRequest
from judges.proposer import RefusalKind, build_messages, check, edit_schema
from scoring.edits import Edit
from tests.conftest import write_skill
from tests.support.noisy_llm import NoisyJudges
from tests.support.openai_server import ScriptedOpenAI, reply
from tests.support.scripted_llm import kind_of
from workspace import rejected_edits
from workspace.rejected_edits import edit_sha256
from workspace.results_tsv import ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")

REFERENCE = "references/api.md"
SKILL = f"""---
name: orders
description: Place and amend customer orders through the Orders API. Use when a user asks to order, re-order or change an order.
---
# Orders

## Steps
1. Read [the API notes]({REFERENCE}) for the endpoint and its idempotency rule.
2. Send the order with `curl -X POST /v1/orders` and an idempotency key.
3. Confirm the total with the user before sending.

## Errors
- A 409 means the key was used: do not retry with a new key.
"""
API = "# Orders API\n\n" + "".join(
    f"- `{verb} /v1/orders{path}` {what}; it answers JSON with the order's id and its status ({n} of 14).\n"
    for n, (verb, path, what) in enumerate([
        ("POST", "", "places an order"), ("GET", "/{id}", "reads one order"), ("PATCH", "/{id}", "amends an order"),
        ("DELETE", "/{id}", "cancels an order"), ("GET", "", "lists a customer's orders"),
        ("POST", "/{id}/refund", "refunds an order"), ("GET", "/{id}/lines", "reads the lines"),
        ("POST", "/{id}/lines", "adds a line"), ("DELETE", "/{id}/lines/{n}", "removes a line"),
        ("GET", "/{id}/events", "reads the history"), ("POST", "/{id}/notes", "adds a note"),
        ("GET", "/{id}/invoice", "reads the invoice"), ("POST", "/{id}/ship", "ships an order"),
        ("POST", "/{id}/hold", "holds an order")], 1))
HELPFUL = "A 409 on POST means the key was already used: read the order back with GET instead of sending it again."
HARMFUL = "Retry every failed call with a fresh idempotency key until the server answers 201."
LLM = {"judge_model": "judge-a", "target_model": "target-m", "editor_model": "editor-e", "max_retries": 0}


class ReferenceEditor(NoisyJudges):
    """Judges that read the whole call (SKILL.md and the files shown with it); an editor that appends its planted
    sentences to references/api.md."""

    def _judge(self, request):
        content = request.body["messages"][1]["content"]
        quality = self.quality(content)
        dims = {d: {"score": round(min(10.0, max(1.0, quality[d] + self._noise(content))), 2), "rationale": "noisy",
                    "quotes": ["Send the order"]} for d in ("dim2", "dim3", "dim5", "dim6")}
        return reply({"dims": dims, "safety_red_line": False, "safety_reason": ""})

    def _propose(self, request):
        prompt = request.body["messages"][1]["content"]  # SKILL.md and the files shown after it
        waiting = [(s, d) for s, d, _ in self.planted if s not in prompt and not self._rejected(s, request)]
        if not waiting:
            return reply({"target_dim": "dim6", "old": "", "new": "", "rationale": "nothing left"})
        sentence, dim = waiting[0]
        return reply({"target_dim": dim, "file": REFERENCE, "old": "", "anchor": "", "new": f"\n{sentence}\n",
                      "rationale": sentence[:40], "expected_gain": 1.0})


def run_once(tmp_path: Path, planted: tuple[str, float], monkeypatch) -> tuple[Path, ScriptedOpenAI, dict]:
    skills = tmp_path / "skills"
    write_skill(skills, "orders", SKILL, {REFERENCE: API})
    repo = git.Repo.init(skills, initial_branch="main")
    repo.git.add(A=True)
    repo.git.commit("-m", "skills", env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
                                         "GIT_COMMITTER_EMAIL": "a@x", "HOME": str(tmp_path)})
    judges = ReferenceEditor(sigma=0.3)
    judges.plant(planted[0], "dim6", planted[1])
    server = ScriptedOpenAI()
    server.responder = judges
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-luban-reference-edits-0001")
    with server:
        result = optimize_skills(skills_dir=str(skills), mode="full", approval="auto", max_rounds=1, llm=LLM)
    return skills, server, result


def rows(skills: Path):
    return ResultsFile(skills.parent / "luban-workspace" / "full" / "orders" / "results.tsv").rows()


def test_an_edit_of_a_referenced_file_is_measured_with_it_kept_and_committed_alone(tmp_path: Path, monkeypatch):
    skills, server, result = run_once(tmp_path, (HELPFUL, +2.0), monkeypatch)
    keep = next(r for r in rows(skills) if r.status == "keep")
    assert "file=references/api.md" in keep.note and "in references/api.md" in keep.note, keep.note
    repo = git.Repo(skills)
    kept = next(c for c in repo.iter_commits() if str(c.message).startswith("optimize: orders"))
    assert sorted(kept.stats.files) == ["orders/references/api.md"]  # one file an edit; SKILL.md untouched
    assert (skills / "orders" / "SKILL.md").read_text() == SKILL and HELPFUL in (skills / "orders" / REFERENCE).read_text()
    judged = [r.body["messages"][1]["content"] for r in server.chat_requests() if kind_of(r) == "judge"]
    shown = [c for c in judged if re.search(rf'path="{REFERENCE}">[^<]*{re.escape(HELPFUL)}', c)]
    assert shown and len(shown) < len(judged)  # the candidate's judges read the edited file, the incumbent's did not
    assert "references/api.md" in Path(result["report"]).read_text(encoding="utf-8")
    checkpoint = Artifact.get("skill-orders")  # the 🔴 summary a person answers shows the file the edit touched
    assert checkpoint is not None and "orders/references/api.md (after)" in str(checkpoint.data)
    assert f"+{HELPFUL}" in str(checkpoint.data) and "(no change)" not in str(checkpoint.data)


def test_a_rejected_edit_of_a_referenced_file_rolls_that_file_back_and_is_remembered_with_it(tmp_path: Path,
                                                                                             monkeypatch):
    skills, _server, _result = run_once(tmp_path, (HARMFUL, -2.0), monkeypatch)
    revert = next(r for r in rows(skills) if r.status == "revert")
    new = f"\n{HARMFUL}\n"
    assert "file=references/api.md" in revert.note and f"sha256={edit_sha256('', new, REFERENCE)}" in revert.note
    assert (skills / "orders" / REFERENCE).read_text() == API and not git.Repo(skills).is_dirty()
    path = skills.parent / "luban-workspace" / "full" / "orders" / "rejected_edits.md"
    assert "- file: references/api.md" in path.read_text(encoding="utf-8")
    buffer = rejected_edits.load(path, "orders", "")
    assert buffer.is_rejected("", new, REFERENCE) and not buffer.is_rejected("", new)  # the same words in SKILL.md: another edit


def request(**changes) -> ProposalRequest:
    return ProposalRequest(SKILL, "orders", frozenset({"SKILL.md", REFERENCE}), "dim6",
                           **({"references": ((REFERENCE, API),)} | changes))


def test_the_edit_budget_and_the_guards_are_the_edited_files():
    grown = Edit("dim6", "", "\n" + "Read the order back before any retry. " * 8, file=REFERENCE)
    assert len(grown.new) > 0.1 * len(API)  # over the budget of api.md
    edited, refusal, _ = check(grown, request())
    assert edited is None and refusal is not None and refusal.kind is RefusalKind.OVER_BUDGET, refusal
    fits = Edit("dim6", "", f"\n{HELPFUL}\n", file=REFERENCE)
    edited, refusal, pct = check(fits, request())
    assert refusal is None and edited == API + f"\n{HELPFUL}\n" and 0 < pct <= 10
    inside_code = Edit("dim6", "v1/orders/{id}/hold", "v1/orders/{id}/pause", file=REFERENCE)
    assert check(inside_code, request())[1] is not None  # every guard holds in that file too (here: inline code)
    elsewhere = Edit("dim6", "", "\nNotes.\n", file="scripts/run.sh")
    refusal = check(elsewhere, request())[1]
    assert refusal is not None and refusal.kind is RefusalKind.UNAPPLICABLE and REFERENCE in refusal.text
    assert check(fits, request(references=()))[1] is not None  # not offered (quick mode): not editable


def test_the_editor_is_shown_the_referenced_files_and_may_name_one():
    prompt = build_messages(request(), None, "n0")[1]["content"]
    assert f'<file-n0 path="{REFERENCE}">' in prompt and API.splitlines()[2] in prompt
    schema = edit_schema(SKILL, ((REFERENCE, API),))
    assert schema["properties"]["file"]["enum"] == ["SKILL.md", REFERENCE]
    assert {"# Orders API", "3. Confirm the total with the user before sending."} <= set(schema["properties"]["old"]["enum"])


def test_real_skills_offer_their_referenced_markdown_and_a_short_addition_to_it_passes_or_is_refused_with_why(
        skill_collection: Path):
    """Skills not written for this: each one that references Markdown offers it (never evals/, never over the cap), and
    a one-line addition at the end of the first such file is checked like any edit — applied within that file's
    budget, or refused with the reason — never an exception."""
    from flows.ratchet.loop import REFERENCE_CHARS, references_to_offer
    from workspace.skill_source import list_files, read_sources

    offered = roomy = passed = 0
    for path in sorted(skill_collection.rglob("SKILL.md"))[:40]:
        folder, text = path.parent, path.read_text(encoding="utf-8", errors="replace")
        files = list_files(folder)
        references = references_to_offer(text, files, read_sources(folder, files))
        assert all(p.endswith(".md") and not p.startswith("evals/") for p, _ in references), references
        assert sum(len(body) for _, body in references) <= REFERENCE_CHARS
        if not references:
            continue
        offered += 1
        first, body = references[0]
        edit = Edit("dim6", "", "\nCheck the result against the example above before you answer.\n", file=first)
        edited, refusal, _ = check(edit, ProposalRequest(text, path.parent.name, files, "dim6", references=references))
        assert (edited is None) == (refusal is not None) and (refusal is None or refusal.text), refusal
        fits = len(edit.new) <= 0.1 * len(body)  # the budget is that file's: a stub of a file takes no addition
        assert fits or (refusal is not None and refusal.kind is RefusalKind.OVER_BUDGET), (first, refusal)
        roomy += fits
        passed += edited is not None
    assert offered and (passed or not roomy), (offered, roomy, passed)
