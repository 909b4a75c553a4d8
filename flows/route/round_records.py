"""What a routing round reads and writes besides the routing: its context, the queries its gain is measured on, the
listing check of a new description, and its ``routing.tsv`` row (with the descriptions tried, so none is tried again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flows.route.flow import Setup
from flows.route.library import Library
from flows.route.measure import Routing
from judges.description_editor import DescriptionProposal
from judges.llm import LLMClient
from scoring.route_keep import RouteDecision, counts, right
from scoring.route_problems import RoutingProblem
from scoring.route_queries import RouteQuery
from workspace.git_ratchet import GitRatchet
from workspace.layout import Mode, Workspace
from workspace.results_tsv import ROUTING_DIM, ResultRow, ResultsFile, Status, Stop, routing_rows


@dataclass(frozen=True)
class RoundContext:
    setup: Setup
    space: Workspace
    ratchet: GitRatchet
    editable: dict[str, str]  # routed name -> its folder under the skills directory
    train: list[RouteQuery]
    client_name: str
    window: str

    @property
    def models(self) -> tuple[str, ...]:
        return self.setup.settings.router_models

    @property
    def client(self) -> LLMClient:
        if self.setup.client is None:
            raise ValueError("routing rounds need a model")  # refused before any round starts
        return self.setup.client

    def changed_folders(self, revision: str) -> list[str]:
        """The skill folders whose files differ between ``revision`` and HEAD."""
        root = Path(str(self.ratchet.repo.working_tree_dir))
        names = self.ratchet.repo.git.diff("--name-only", revision, "HEAD", "--", str(self.space.skills_dir)).splitlines()
        folders = {(root / n).relative_to(self.space.skills_dir).parts[0] for n in names if n}
        return sorted(folders & set(self.editable.values()))


def concerned(train: Sequence[RouteQuery], problem: RoutingProblem) -> list[RouteQuery]:
    """The queries the round's problem is made of, whose routing its edit sets out to change: the edited skill's own
    (and its near-misses), and, for a pair or a thief, the other skill's. Chosen from the problem before either
    routing, so the test on them stays exact; the guards read every train query."""
    involved = {problem.skill, *((problem.other,) if problem.other else ())}
    return [q for q in train if q.owner in involved or q.expected in involved]


def cues_lost(before: Library, after: Library, name: str) -> str:
    """Where the new description's trigger words no longer reach the router, though the old one's did; "" if nowhere."""
    had = {(listing.client, listing.window): shown for listing in before.every_listing
           for shown in listing.shown if shown.name == name}
    lost = [f"{listing.client} at {listing.window}" for listing in after.every_listing for shown in listing.shown
            if shown.name == name and shown.cues_lost and not had[listing.client, listing.window].cues_lost]
    return f"its trigger words no longer reach the router in {', '.join(lost)}" if lost else ""


def right_share(routing: Routing, model: str, queries: Sequence[RouteQuery]) -> float:
    """The share of ``model``'s answered runs of ``queries`` that went right (0 with none answered)."""
    found = counts(queries, routing.picks, model, right).values()
    runs = sum(n for _, n in found)
    return sum(hits for hits, _ in found) / runs if runs else 0.0


def rejected_descriptions(space: Workspace, folder: str) -> list[str]:
    """The descriptions routing rounds tried for this skill and put back, in any run."""
    rows = routing_rows(space.routing_tsv(folder), space.results_tsv(folder, Mode.FULL))
    return [str(r.evidence["proposed"]) for r in rows if r.status == Status.REVERT and r.evidence and r.evidence.get("proposed")]


def record(context: RoundContext, number: int, folder: str, outcome: str, problem: RoutingProblem,
           proposal: DescriptionProposal, why: str, decisions: Sequence[RouteDecision] = (), sha: str = "") -> dict[str, Any]:
    """The attempt's row in the skill's routing.tsv (never results.tsv: the rubric's readers must not take it for
    theirs), and its outcome for the run's document."""
    status = Status.SKIP if outcome == "budget" else Status(outcome)
    gains = [d.better.mean_change for d in decisions]
    said = "; ".join(d.said() for d in decisions) or why
    evidence = {"problem": problem.said(), "evidence": list(problem.evidence), "proposed": proposal.description,
                "why": proposal.why, "decisions": [_decision(d) for d in decisions]}
    row = ResultRow(timestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), skill=folder, round=number,
                    status=status.value, mode=Mode.FULL.value, commit=sha[:12], dim_changed=ROUTING_DIM,
                    delta=round(100 * min(gains), 1) if gains else None, note=f"{problem.said()}: {said}"[:400],
                    stop=Stop.BUDGET.value if outcome == "budget" else "", evidence=evidence)
    path = context.space.routing_tsv(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    ResultsFile(path).append(row)
    return {"round": number, "skill": problem.skill, "status": outcome, "problem": problem.said(),
            "proposed": proposal.description, "why": said, "commit": sha[:12] or None}


def _decision(d: RouteDecision) -> dict[str, Any]:
    return {"model": d.model, "kept": d.kept, "mean_change": round(d.better.mean_change, 4), "p": round(d.better.p, 5),
            "queries": d.better.queries, "worse": [w.name for w in d.worse], "guards": d.guards, "missing": d.missing}
