"""`luban route`: which skill each request goes to, across the library. One JSON document on stdout.

Imported by ``flows/cli.py`` at start-up: Prefect and the rest load only when the command runs.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

from flows.interaction.approvals import Approval, as_approval
from flows.interaction.command_line import prefect_defaults, skills_dir_option, workspace_option

ROUTER_HELP = ("Models that pick skills from the listing, comma-separated; every figure holds per model "
               "(overrides LUBAN_ROUTER_MODEL; default the target model).")


def route(
    skills: list[str] | None = typer.Argument(None, help="Skills whose queries to route (default: all); every skill "
                                              "of --skills-dir stays in the listing the router sees."),
    skills_dir: str = skills_dir_option(),
    client: str = typer.Option("claude-code", "--client", help="Whose listing the router sees: claude-code, codex or "
                               "agent-skills (scoring/skill_listings.json)."),
    window: str = typer.Option("unknown", "--window", help="The context window whose listing budget applies: unknown, "
                               "128k, 200k or 1M."),
    eval_set: str | None = typer.Option(None, "--eval-set", help="Trigger queries, skill-creator's format: a list for "
                                        "the one skill named, or {skill: list} (default: each skill's "
                                        "evals/triggers.json)."),
    router_model: str | None = typer.Option(None, "--router-model", help=ROUTER_HELP),
    runs: int | None = typer.Option(None, "--runs", min=1, help="Runs of each query per model (LUBAN_ROUTE_RUNS, "
                                    "default 3): their spread is the figures' noise."),
    max_calls: int | None = typer.Option(None, "--max-calls", min=1, help="Stop routing after this many model calls; "
                                         "the figures then say they are partial."),
    approval: str = typer.Option("cli", "--approval", help="Who accepts newly designed queries: cli, ui or auto."),
    workspace: str | None = workspace_option(),
    changed: bool = typer.Option(False, "--changed", help="The pull-request gate: route the changed skills' queries "
                                 "and their neighbours' against the library at --base and as it is now; exit 1 when a "
                                 "changed skill loses recall or takes others' queries beyond noise, 2 when undecided."),
    base: str = typer.Option("HEAD", "--base", help="With --changed: the revision to compare against (e.g. origin/main)."),
    optimize: bool = typer.Option(False, "--optimize", help="Edit descriptions for the library's routing, one round at "
                                  "a time on a git branch, each kept only beyond noise; then the validation queries "
                                  "choose among the kept versions and the sealed test is read once."),
    rounds: int = typer.Option(3, "--rounds", min=1, help="With --optimize: the most rounds."),
    shortlist: int = typer.Option(0, "--shortlist", min=0, help="Retrieve-then-choose for very large libraries: each "
                                  "request is shown only its N lexically nearest skills (0: the whole listing)."),
) -> None:
    """Measure routing across the library: recall, false triggers, steals and confusions per skill, with intervals."""
    answer = _refused_early(skills_dir, list(skills or []), client, window, eval_set, approval)
    llm = {k: v for k, v in {"router_model": router_model, "route_runs": runs}.items() if v is not None}
    common = {"skills_dir": skills_dir, "client": client, "window": window, "eval_set": eval_set,
              "workspace": workspace, "approval": answer, "llm": llm, "max_calls": max_calls}
    prefect_defaults()
    try:
        result = _run(common, list(skills or []), optimize, rounds, changed, base, shortlist)
    except Exception as err:  # noqa: BLE001 - every refusal reaches the user as one clear line
        typer.echo(f"luban route: {err}", err=True)
        raise typer.Exit(2) from None
    sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
    if "report" in result:
        typer.echo(f"report: {result['report']}", err=True)
    if changed:
        typer.echo(f"luban route --changed: {result['gate']}: {result['why']}", err=True)
        raise typer.Exit({"pass": 0, "fail": 1}.get(result["gate"], 2))


def _refused_early(skills_dir: str, skills: list[str], client: str, window: str, eval_set: str | None,
                   approval: str) -> Approval:
    """The refusals a user can fix, before Prefect starts: one line, exit 2, nothing written; the approval."""
    from pathlib import Path

    from flows.route.library import read_library
    from workspace.route_sets import read_eval_set

    try:
        answer = as_approval(approval)
        library = read_library(Path(skills_dir), client, window)
        if eval_set:
            read_eval_set(Path(eval_set), skills or list(library.names))
    except ValueError as err:
        typer.echo(f"luban route: {err}", err=True)
        raise typer.Exit(2) from None
    return answer


def _run(common: dict[str, Any], skills: list[str], optimize: bool, rounds: int, changed: bool, base: str,
         shortlist: int) -> dict[str, Any]:
    """The flow the options ask for: the rounds, the pull-request gate, or the measurement."""
    if optimize:
        from flows.route.rounds import optimize_routing

        return optimize_routing(rounds=rounds, **common)
    if changed:
        from flows.route.gate import route_changes

        return route_changes(base=base, **common)
    from flows.route.flow import route_library

    return route_library(skills=skills, shortlist=shortlist, **common)
