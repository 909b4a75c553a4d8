"""Phase 0.5: the test prompts each skill is measured on — reused, rewritten or appended to, and approved."""

from __future__ import annotations

from pathlib import Path

from flows.state.config import PhaseEnd, RunStop, StopKind
from flows.state.products import Designed
from flows.state.run import Run
from judges import fallbacks
from workspace import author_evals, test_prompts
from workspace.test_prompts import TestPrompt


def design_prompts(run: Run) -> Designed:
    """Phase 0.5: reuse test-prompts.json (ask: reuse / rewrite / append), or design them; save; confirm."""
    designed = {skill: tuple(_prompts_for(run, skill)) for skill in run.skills}
    summary = "\n\n".join(prompts_summary(s, list(p)) for s, p in designed.items())
    answer = run.ask("test-prompts", summary)
    if answer.approved:
        return Designed(designed)
    if answer.timed_out:
        return Designed(designed, PhaseEnd(RunStop(StopKind.NO_ANSWER, "no answer at the test-prompts checkpoint: "
                                                                       "resumable with 'luban optimize --resume'")))
    return Designed(designed, PhaseEnd(RunStop(StopKind.DECLINED, "test prompts rejected: "
                                                                  f"{answer.comment or 'edit test-prompts.json and run again'}")))


def _prompts_for(run: Run, skill: str) -> list[TestPrompt]:
    """The skill's prompts: its author's evals when it has them; else reused, rewritten or appended to, with a
    held-out one marked if none was; saved."""
    path = run.workspace.test_prompts(skill)
    authored = _authors_prompts(run, skill, path)
    if authored is not None:
        test_prompts.save(path, authored)
        return authored
    text = run.workspace.skill_file(skill).read_text(encoding="utf-8")
    prompts = None
    if path.exists() and run.options.resume:  # the baseline's held-out score was measured on these prompts
        prompts = _load_prompts(run, path)
    elif path.exists():
        answer = run.ask(f"test-prompts-{skill}", f"{path} exists",
                         choices=("reuse", "rewrite", "append"), default_choice="reuse")
        existing = _load_prompts(run, path) or []
        if answer.choice == "reuse" and existing:
            prompts = existing
        elif answer.choice == "append" and existing:
            prompts = appended(existing, _designed(run, skill, text))
    if prompts is None:
        prompts = _designed(run, skill, text)
    prompts, marked = test_prompts.ensure_held_out(prompts, run.options.seed)
    if marked:
        run.effects.notice(f"{skill}: no held-out prompt; marked prompt {marked.id} ({marked.held_out_source})")
    test_prompts.save(path, prompts)
    return prompts


def _authors_prompts(run: Run, skill: str, path: Path) -> list[TestPrompt] | None:
    """The cases of the skill's evals/evals.json as they are (workspace/author_evals.py), or None: no such file, or
    one that cannot be used — said, and the skill's prompts are designed instead."""
    try:
        cases = author_evals.read_cases(run.workspace.skill_file(skill).parent)
    except author_evals.AuthorEvalsError as err:
        run.effects.notice(f"{skill}: {err}. Its test prompts are designed instead")
        return None
    if cases is None:
        return None
    try:
        saved = test_prompts.load(path) if path.exists() else None
    except test_prompts.TestPromptsError:
        saved = None  # the split is chosen again, the same way
    run.effects.notice(f"{skill}: its author's {len(cases)} case(s) in {author_evals.EVALS_FILE} are its test prompts")
    return author_evals.as_prompts(cases, skill, saved)


def _designed(run: Run, skill: str, text: str) -> list:
    """The designer's prompts; when it fell back to the offline design, the run says so and counts it."""
    from flows.ratchet import tasks

    prompts, how = tasks.design_prompts(run.backend, text, skill)
    taken = fallbacks.design(how)
    if taken:
        run.ledger.note_fallbacks(skill, taken)
        run.effects.notice(f"{skill}: test prompts designed offline ({how})")
    return prompts


def _load_prompts(run: Run, path: Path):
    try:
        return test_prompts.load(path)
    except test_prompts.TestPromptsError as err:
        run.effects.notice(f"{err}; designing new prompts")
        return None


def appended(existing: list, designed: list) -> list:
    """``existing`` and then ``designed``, renumbered after the largest numeric id (a person's ids may be words)."""
    next_id = max((int(p.id) for p in existing if str(p.id).isdigit()), default=0) + 1
    return existing + [p.model_copy(update={"id": next_id + i, "held_out": False}) for i, p in enumerate(designed)]


def prompts_summary(skill: str, prompts: list) -> str:
    """What a person approves at the test-prompts checkpoint: every prompt, not a count."""
    lines = [f"{skill}: {len(prompts)} prompts ({sum(p.held_out for p in prompts)} held out)"]
    for p in prompts:
        held = " [held out]" if p.held_out else ""
        lines.append(f"  {p.id}. ({p.type}){held} {_one_line(p.prompt)}\n     expected: {_one_line(p.expected)}")
    return "\n".join(lines)


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
