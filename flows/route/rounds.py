"""`luban route --optimize`: descriptions edited for the library, one round at a time, kept only beyond noise.

A round takes the worst routing problem, asks the editor for one new description of one skill, commits it, routes the
train queries with it, and keeps it only when the routing is right more often beyond the runs' noise and no skill's
recall and no pair's confusion got worse (``scoring.route_keep.decide``, every router model). Otherwise git puts the
description back and the attempt is remembered. Every attempt is a ``routing.tsv`` row with its evidence.

Then the validation queries choose among the versions kept (the original included), and the sealed test queries
are read once: when the chosen version is worse than the original there beyond noise, the original comes back.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from flows.interaction.approvals import Approval
from flows.route.flow import queries_for, route, say_cost, set_up
from flows.route.library import DEFAULT_CLIENT, DEFAULT_WINDOW, Library, library_at, read_library
from flows.route.measure import Routing
from flows.route.report import rounds_markdown
from flows.route.round_records import (
    RoundContext,
    concerned,
    cues_lost,
    record,
    rejected_descriptions,
    right_share,
)
from judges.description_editor import propose_description
from scoring.description_edit import DescriptionEditError, description_problems, with_description
from scoring.document import decode
from scoring.route_keep import ALPHA, decide, paired, right
from scoring.route_problems import worst_problem
from scoring.route_queries import RouteQuery, Split, nearest
from workspace.git_ratchet import GitRatchet
from workspace.git_repository import check_state, open_repository
from workspace.layout import Mode, Workspace
from workspace.run_branches import hand_off


@dataclass
class Incumbent:
    """The library as kept so far, its routing of the train queries, and the attempts made on each problem."""

    library: Library
    routing: Routing
    tries: dict[tuple[str, str], int] = field(default_factory=dict)
    versions: list[tuple[str, str]] = field(default_factory=list)  # (label, commit) of the original and each keep


@flow(name="optimize-routing", log_prints=True)
def optimize_routing(skills_dir: str, rounds: int = 3, client: str = DEFAULT_CLIENT, window: str = DEFAULT_WINDOW,
                     eval_set: str | None = None, workspace: str | None = None, approval: Approval = "auto",
                     llm: dict[str, Any] | None = None, max_calls: int | None = None) -> dict[str, Any]:
    """Rounds of description edits for the library's routing, then the validation choice and the sealed check."""
    setup = set_up(skills_dir, workspace, llm, max_calls)
    if setup.client is None:
        raise ValueError("routing rounds need a model: set OPENAI_BASE_URL (or OPENAI_API_KEY) and LUBAN_ROUTER_MODEL")
    check_state(open_repository(Path(skills_dir)))  # not a repository, or mid-merge: said before any call is made
    library = read_library(Path(skills_dir), client, window)
    plan = queries_for(library, setup, [], eval_set, approval)
    split = {s: plan.routed((s,)) for s in Split}
    if not split[Split.TRAIN]:
        raise ValueError("no skill has train queries to decide on: add evals/triggers.json or let queries be designed")
    space = Workspace.open(Path(skills_dir), Mode.FULL, setup.root)
    editable = {s.name: s.directory.name for s in library.skills if s.directory.resolve().parent == space.skills_dir}
    ratchet = GitRatchet.start(space, sorted(editable.values()), datetime.now(UTC))
    say_cost(setup.settings, len(split[Split.TRAIN]), libraries=rounds + 1)
    context = RoundContext(setup, space, ratchet, editable, split[Split.TRAIN], client, window)
    state = Incumbent(library, route(context.client, setup.settings.router_models, library, split[Split.TRAIN],
                                     setup.settings.route_runs), versions=[("original", ratchet.original)])
    attempts = []
    for number in range(1, rounds + 1):
        outcome, state = one_round(context, state, number)
        attempts.append(outcome)
        if outcome["status"] in ("stop", "budget"):
            break
    chosen = choose_by_validation(context, state, split[Split.VALIDATION])
    sealed = sealed_check(context, chosen, split[Split.TEST])
    handoff = hand_off(ratchet.repo, ratchet.branch, ratchet.base, ratchet.original, drop_when_empty=True)
    doc = {"rounds": attempts, "validation": chosen, "sealed_test": sealed, "branch": handoff.branch,
           "handoff": handoff.lines(), "queries": {s.value: len(q) for s, q in split.items()}}
    create_markdown_artifact(rounds_markdown(doc), key="luban-routing-rounds", description="luban route --optimize")
    return doc


def one_round(context: RoundContext, state: Incumbent, number: int) -> tuple[dict[str, Any], Incumbent]:
    """Propose, write, route, decide: the round's outcome, and the incumbent after it."""
    problem = worst_problem([state.routing.of(m, state.library, context.train) for m in context.models],
                            state.tries, set(context.editable), context.train, state.routing.picks)
    if problem is None:
        return {"round": number, "status": "stop", "why": "no routing problem left that a round may take on"}, state
    state.tries[problem.kind, problem.skill] = state.tries.get((problem.kind, problem.skill), 0) + 1
    skill, folder = state.library.skill(problem.skill), context.editable[problem.skill]
    old_text = decode(context.space.skill_file(folder).read_bytes())
    around = [(n, state.library.skill(n).description)
              for n in nearest({s.name: s.description for s in state.library.skills})[skill.name]]
    proposal = propose_description(context.client, context.setup.settings.editor_model, skill.name, skill.description,
                                   around, problem, rejected_descriptions(context.space, folder))
    try:
        new_text = with_description(old_text, proposal.description) if proposal.description else None
    except DescriptionEditError as err:
        new_text, proposal = None, replace(proposal, why=str(err))
    refused = description_problems(old_text, new_text) if new_text else [proposal.why]
    if new_text is None or refused:
        return record(context, number, folder, "skip", problem, proposal, "; ".join(refused)), state
    context.ratchet.pre_edit(folder)
    context.ratchet.write_skill(folder, new_text)
    candidate = read_library(context.space.skills_dir, context.client_name, context.window)
    lost = cues_lost(state.library, candidate, skill.name)
    if lost:
        context.ratchet.rollback(folder)
        return record(context, number, folder, "skip", problem, proposal, lost), state
    routing = route(context.client, context.models, candidate, context.train, context.setup.settings.route_runs)
    if routing.stopped:
        context.ratchet.rollback(folder)
        return record(context, number, folder, "budget", problem, proposal, routing.stopped), state
    near = concerned(context.train, problem)
    decisions = [decide(m, context.train, state.routing.picks, routing.picks, state.library.names, near)
                 for m in context.models]
    if all(d.kept for d in decisions):
        gain = min(d.better.mean_change for d in decisions)
        sha = context.ratchet.keep(folder, 100 * gain, "routing", {"description": proposal.description})
        state.versions.append((f"round {number}: {skill.name}", sha))
        kept = Incumbent(candidate, routing, state.tries, state.versions)
        return record(context, number, folder, "keep", problem, proposal, "", decisions, sha), kept
    context.ratchet.rollback(folder)
    return record(context, number, folder, "revert", problem, proposal, "", decisions), state


def choose_by_validation(context: RoundContext, state: Incumbent, validation: list[RouteQuery]) -> dict[str, Any]:
    """Of the original and each kept version, the one the validation queries route best (the worst model's share);
    on a tie the earlier, with fewer changes. The library is put back to it when it is not the last kept."""
    if len(state.versions) == 1 or not validation:
        return {"chosen": state.versions[-1][0], "why": "nothing kept" if len(state.versions) == 1 else "no validation queries"}
    scores = []
    for label, sha in state.versions:
        library = read_library_at_commit(context, sha)
        routing = route(context.client, context.models, library, validation, context.setup.settings.route_runs)
        scores.append((label, sha, min(right_share(routing, m, validation) for m in context.models)))
    best = max(scores, key=lambda s: (s[2], -scores.index(s)))
    if best[1] != state.versions[-1][1]:
        for folder in context.changed_folders(best[1]):
            context.ratchet.restore_to(folder, best[1], "the validation queries chose it")
    return {"chosen": best[0], "commit": best[1], "shares": {label: round(share, 4) for label, _, share in scores}}


def sealed_check(context: RoundContext, chosen: dict[str, Any], test: list[RouteQuery]) -> dict[str, Any]:
    """The sealed test, read once: the chosen version against the original; worse beyond noise puts the original back."""
    if "commit" not in chosen or chosen.get("chosen") == "original" or not test:
        return {"read": False, "why": "nothing to check" if test else "no sealed test queries"}
    original = read_library_at_commit(context, context.ratchet.original)
    now = read_library(context.space.skills_dir, context.client_name, context.window)
    runs = context.setup.settings.route_runs
    before = route(context.client, context.models, original, test, runs)
    after = route(context.client, context.models, now, test, runs)
    worse = [paired("right routing", test, before.picks, after.picks, m, right, direction=-1) for m in context.models]
    failed = [w for w in worse if w.p < ALPHA and w.mean_change < 0]
    if failed:
        for folder in context.changed_folders(context.ratchet.original):
            context.ratchet.restore_original(folder)
    return {"read": True, "queries": len(test), "restored_original": bool(failed),
            "models": [{"model": m, "mean_change": round(w.mean_change, 4), "p": round(w.p, 5)}
                       for m, w in zip(context.models, worse, strict=True)]}


def read_library_at_commit(context: RoundContext, sha: str) -> Library:
    return library_at(context.space.skills_dir, sha, context.client_name, context.window)
