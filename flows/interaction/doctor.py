"""``luban doctor``: the configured model server checked before a batch (``judges/doctor.py`` does the checking).

Like ``luban score``, it imports nothing heavy until it runs.
"""

from __future__ import annotations

import typer

from flows.interaction.terminal import usage_error

MODEL_HELP = "overrides LUBAN_{}_MODEL and luban.toml"


def doctor(
    skills: list[str] | None = typer.Argument(None, help="Skill names of the batch to estimate (default: all under --skills-dir)."),
    skills_dir: str = typer.Option(".", "--skills-dir", envvar="LUBAN_SKILLS_DIR",
                                   help="The batch's folder of <name>/SKILL.md, for the estimate."),
    mode: str = typer.Option("auto", "--mode", help="The batch's mode, for the estimate: quick, full, or auto "
                             "(estimated as full, the dearer one)."),
    max_rounds: int | None = typer.Option(None, "--max-rounds", help="Rounds per skill, for the estimate (default 3 quick, 5 full)."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=f"The judges' model ({MODEL_HELP.format('JUDGE')})."),
    target_model: str | None = typer.Option(None, "--target-model", help=f"The target model ({MODEL_HELP.format('TARGET')})."),
    editor_model: str | None = typer.Option(None, "--editor-model", help=f"The editor's model ({MODEL_HELP.format('EDITOR')})."),
) -> None:
    """Check the configured model server before a batch: one line per check, and the batch's estimated cost."""
    import os
    from pathlib import Path

    from judges.doctor import Batch, run_checks
    from judges.settings import SettingsError, resolve

    if mode not in ("quick", "full", "auto"):
        usage_error(f"--mode must be quick, full or auto, not {mode!r}", "doctor")
    flags = {"judge_model": judge_model, "target_model": target_model, "editor_model": editor_model}
    try:
        settings = resolve({k: v for k, v in flags.items() if v}, os.environ, Path(skills_dir) / "luban.toml")
    except SettingsError as err:
        usage_error(str(err), "doctor")
    if settings.backend == "offline":
        typer.echo("--   server: none configured (no OPENAI_API_KEY, no OPENAI_BASE_URL): runs use the offline stand-ins, "
                   "which need no server")
        raise typer.Exit(0)
    found = sorted(p.parent.name for p in Path(skills_dir).glob("*/SKILL.md"))
    chosen = [s for s in (skills or found) if s in found]
    estimated = "quick" if mode == "quick" else "full"
    batch = Batch(len(chosen), estimated, max_rounds or (5 if estimated == "full" else 3)) if chosen else None
    checks = run_checks(settings, batch, lambda check: typer.echo(check.line()))
    if batch is None:
        typer.echo(f"--   estimate: no skill under --skills-dir {skills_dir}; give the batch's folder for its cost")
    failed = [c for c in checks if c.ok is False]
    typer.echo(f"{len(failed)} check(s) failed" if failed else "all checks passed")
    raise typer.Exit(1 if failed else 0)
