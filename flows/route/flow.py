"""The route-library flow: read the library, plan the queries (a checkpoint for new ones), route, report.

Offline it still reads the library and says what each client's listing cuts; the routing itself needs a model, and
the document says so instead of inventing figures.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger

from flows.interaction.approvals import Approval
from flows.interaction.checkpoints import checkpoint
from flows.route.heatmap import heatmap_png
from flows.route.library import DEFAULT_CLIENT, DEFAULT_WINDOW, Library, read_library
from flows.route.measure import Routing, planned_calls, route_all, shortlist_recall
from flows.route.queries import QueryPlan, plan_queries, plan_summary
from flows.route.report import document, markdown, rate
from judges.llm import LLMClient
from judges.route_design import design_queries
from judges.settings import Settings, resolve
from scoring.route_figures import LibraryFigures
from scoring.route_queries import RouteQuery, Split
from workspace import route_sets
from workspace.atomic import atomic_write
from workspace.layout import default_root, new_stamped_dir
from workspace.manifest import prune_stamped

MEASURED = (Split.TRAIN, Split.VALIDATION)  # the test split stays sealed for a routing run's final check
NEEDS_A_MODEL = ("a model: set OPENAI_BASE_URL (any OpenAI-compatible server) or OPENAI_API_KEY, and "
                 "LUBAN_ROUTER_MODEL; the listing checks above need none")


@task(name="plan-routing-queries", cache_policy=NO_CACHE)
def plan(library: Library, root: Path, focus: list[str], eval_set: Path | None, client: LLMClient | None,
         designer_model: str) -> QueryPlan:
    def designer(skill: str, description: str, around: list[tuple[str, str]]) -> tuple[list[RouteQuery], str]:
        designed = design_queries(client, designer_model, skill, description, around)  # type: ignore[arg-type]  # only called with a client
        return list(designed.queries), designed.problem

    return plan_queries(library, root, focus, eval_set, designer if client is not None else None)


@task(name="route-queries", cache_policy=NO_CACHE)
def route(client: LLMClient, models: tuple[str, ...], library: Library, queries: list[RouteQuery], runs: int,
          shortlist: int = 0) -> Routing:
    return route_all(client, models, library, queries, runs, shortlist)


@task(name="write-routing-report", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def write_report(root: Path, doc: dict[str, Any], per_model: list[LibraryFigures], routing: Routing | None,
                 queries: list[RouteQuery], keep_runs: int) -> Path:
    """The run's folder under routing/runs/, and the oldest beyond the newest ``keep_runs`` deleted (LUBAN_KEEP_RUNS)."""
    folder = new_stamped_dir(root / "routing" / "runs", datetime.now(UTC))
    prune_stamped(root / "routing" / "runs", folder, keep_runs)
    heatmaps: dict[str, str] = {}
    for n, figures in enumerate(per_model):
        png = heatmap_png(queries, routing.picks, figures.model) if routing else None
        if png:
            heatmaps[figures.model] = f"confusion-{n + 1}.png"
            atomic_write(folder / heatmaps[figures.model], png)
    text = markdown(doc, per_model, heatmaps)
    atomic_write(folder / "report.md", text)
    atomic_write(folder / "route.json", json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    if routing is not None:
        lines = [json.dumps(asdict(p), ensure_ascii=False) for p in routing.picks]
        atomic_write(folder / "picks.jsonl", "\n".join(lines) + ("\n" if lines else ""))
    create_markdown_artifact(text, key="luban-routing", description="luban route: the routing report")
    return folder / "report.md"


@flow(name="route-library", log_prints=True)
def route_library(skills_dir: str, skills: list[str] | None = None, client: str = DEFAULT_CLIENT,
                  window: str = DEFAULT_WINDOW, eval_set: str | None = None, workspace: str | None = None,
                  approval: Approval = "auto", llm: dict[str, Any] | None = None,
                  max_calls: int | None = None, shortlist: int = 0) -> dict[str, Any]:
    """Measure which skill each request goes to, across the library, with each router model (``shortlist``:
    retrieve-then-choose, each request shown only its nearest skills)."""
    setup = set_up(skills_dir, workspace, llm, max_calls)
    library = read_library(Path(skills_dir), client, window)
    query_plan = queries_for(library, setup, list(skills or []), eval_set, approval)
    measured, sealed = query_plan.routed(MEASURED), len(query_plan.routed((Split.TEST,)))
    routing, per_model = None, []
    if setup.client is not None and measured:
        say_cost(setup.settings, len(measured), libraries=1)
        routing = route(setup.client, setup.settings.router_models, library, measured, setup.settings.route_runs,
                        shortlist)
        per_model = [routing.of(m, library, measured) for m in setup.settings.router_models]
    needs = NEEDS_A_MODEL if setup.client is None else "no skill has queries (see queries.source)"
    doc = document(library, query_plan, len(measured), sealed, routing, per_model, needs)
    doc["mode"] = (f"retrieve-then-choose: each request shown its {shortlist} lexically nearest skills" if shortlist
                   else "the whole listing")
    if shortlist and measured:
        doc["shortlist_recall"] = rate(shortlist_recall(library, measured, shortlist))
    doc["settings"] = _said(setup.settings)
    doc["report"] = str(write_report(setup.root, doc, per_model, routing, measured, setup.settings.keep_runs))
    return doc


@dataclass(frozen=True)
class Setup:
    """A routing run's settings, resolved once, where it writes, and its model client (None offline)."""

    settings: Settings
    root: Path
    client: LLMClient | None


def set_up(skills_dir: str, workspace: str | None, llm: dict[str, Any] | None, max_calls: int | None) -> Setup:
    settings = resolve(llm, os.environ, Path(skills_dir) / "luban.toml")
    if max_calls is not None:
        settings = replace(settings, max_llm_calls=max_calls)
    root = Path(workspace).resolve() if workspace else default_root(Path(skills_dir))
    return Setup(settings, root, LLMClient(settings) if settings.backend == "openai" else None)


def queries_for(library: Library, setup: Setup, focus: list[str], eval_set: str | None, approval: Approval) -> QueryPlan:
    """The focused skills' queries, new designed ones accepted at the checkpoint (or left out)."""
    designed = plan(library, setup.root, focus, Path(eval_set) if eval_set else None, setup.client,
                    setup.settings.editor_model)
    return _accepted(designed, setup.root, approval)


def say_cost(settings: Settings, queries: int, libraries: int) -> int:
    """The calls a routing will take, said before it starts (and the cap it stops at)."""
    calls = libraries * planned_calls(queries, settings.route_runs, len(settings.router_models))
    line = (f"routing {queries} queries × {settings.route_runs} runs × {len(settings.router_models)} router models"
            f"{f' × {libraries} libraries' if libraries > 1 else ''} = {calls} calls "
            f"(it stops at {settings.max_llm_calls}: --max-calls)")
    get_run_logger().info(line)  # the run's log in the Prefect UI
    sys.stderr.write(f"luban route: {line}\n")  # and the person at the terminal, whatever the console's log level
    return calls


def _accepted(query_plan: QueryPlan, root: Path, approval: Approval) -> QueryPlan:
    """New designed queries shown at a checkpoint; saved when accepted, left out when not."""
    if not query_plan.new:
        return query_plan
    decision = checkpoint("routing-queries", plan_summary(query_plan), approval)
    if not decision.approved:
        return query_plan.without_new()
    route_sets.save(root, [*route_sets.load_saved(root), *query_plan.new])
    return query_plan


def _said(settings: Settings) -> dict[str, Any]:
    return {"router_models": list(settings.router_models), "runs": settings.route_runs,
            "designer_model": settings.editor_model, "backend": settings.backend}
