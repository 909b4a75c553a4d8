"""`luban score` run in process, as the gate's tests run it: (exit status, stdout, stderr)."""

from __future__ import annotations

from typer.testing import CliRunner


def run_score(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Wide columns (no wrapping inside a finding) and no GITHUB_WORKSPACE (paths relative to the repository)."""
    from flows.cli import app

    result = CliRunner().invoke(app, ["score", *args], env={"COLUMNS": "200", "GITHUB_WORKSPACE": "", **(env or {})})
    return result.exit_code, result.stdout, result.stderr
