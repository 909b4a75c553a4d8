"""`luban score`, the CI gate: its options, and the one path from them to an exit status.

Imports nothing heavy at the top (no Prefect, openai or pandas): CI runs it on every push.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

import typer

from flows.interaction.terminal import usage_error

if TYPE_CHECKING:
    from flows.gate.check import ScoreOptions


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    github = "github"
    junit = "junit"
    sarif = "sarif"


def score(
    paths: list[str] | None = typer.Argument(
        None, help="SKILL.md files, skill directories, or directories searched recursively."
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout (same as --format json)."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text, json, github (annotations "
                                               "+ step summary), junit (JUnit XML) or sarif (SARIF 2.1.0)."),
    fail_under: float | None = typer.Option(
        None, "--fail-under", help="Fail when a skill's deterministic subtotal (or total, once LLM dims are scored) is "
        "below N (also LUBAN_FAIL_UNDER, fail-under in the configuration)."
    ),
    strict: bool | None = typer.Option(None, "--strict/--no-strict", help="Fail on warnings too (also LUBAN_STRICT, "
                                       "strict in the configuration); errors always fail."),
    ignore: list[str] | None = typer.Option(None, "--ignore", help="A rule that does not apply here (repeatable): a "
                                            "check like dim1.what or a finding like missing_reference. Still shown."),
    show_config: bool = typer.Option(False, "--show-config", help="Print the resolved configuration, where each value "
                                     "came from (flag > environment > luban.toml / pyproject.toml > default), and exit."),
    changed: bool = typer.Option(False, "--changed", help="Score only SKILL.md files changed since --base, and compare."),
    base: str | None = typer.Option(None, "--base", help="Revision to compare against with --changed (e.g. origin/main)."),
    allow_regression: bool = typer.Option(False, "--allow-regression", help="With --changed, do not fail when a skill got worse."),
    fix: bool = typer.Option(False, "--fix", help="Remove the zero-width and bidi characters flagged (each file written "
                             "atomically, nothing else in it changed), say each removal on stderr, then score."),
) -> None:
    """Score skills with the deterministic rubric; exit 0 good, 1 gate failed, 2 usage error or unscorable skill."""
    import gc
    import os

    # Parsing allocates hundreds of thousands of short-lived, acyclic tokens; CPython's default sweeps the young
    # generation every 700 allocations, about a tenth of this command's CPU on a large tree (benchmarks/score_process.py).
    gc.set_threshold(50_000, 20, 100)
    from pathlib import Path

    from flows.gate.check import ScoreOptions
    from flows.gate.config import ConfigError, resolve

    try:
        config = resolve({"fail-under": fail_under, "strict": strict, "ignore": ignore}, os.environ, Path.cwd())
    except ConfigError as err:
        usage_error(str(err))
    if show_config:
        typer.echo(config.shown())
        raise typer.Exit(0)
    _check_arguments(paths, changed, base)
    options = ScoreOptions(tuple(paths or ()), config, changed, base, allow_regression)
    raise typer.Exit(_gate(options, fix, OutputFormat.json.value if as_json else output_format.value))


def _gate(options: ScoreOptions, fix: bool, output_format: str) -> int:
    """Fix what was asked, score, apply the gates and write the results: the exit status."""
    from flows.gate.check import EXIT_ERROR, apply_gates, collect, fix_hidden
    from flows.gate.write import write

    try:
        for change in fix_hidden(options) if fix else ():
            typer.echo(f"fixed {change}", err=True)
        results = collect(options)
    except ValueError as err:  # RevisionError: a repository or revision that cannot be used
        typer.echo(f"luban score: {err}", err=True)
        raise typer.Exit(EXIT_ERROR) from None
    status = apply_gates(results, options)
    write(output_format, results, status, options)
    return status


def _check_arguments(paths: list[str] | None, changed: bool, base: str | None) -> None:
    """Refuse what cannot be meant (exit 2, with the command that was)."""
    if base is not None and not changed:
        usage_error("--base goes with --changed: 'luban score --changed --base origin/main'")
    if changed and base is None:
        usage_error("--changed needs --base REV, the revision to compare against, e.g. --base origin/main")
    if not paths and not changed:
        usage_error("name at least one SKILL.md, skill directory or directory to search, e.g. 'luban score skills/'")
