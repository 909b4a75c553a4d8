"""One line to the terminal for a usage error, exit 2."""

from __future__ import annotations

from typing import NoReturn

import typer


def usage_error(message: str, command: str = "score") -> NoReturn:
    typer.echo(f"luban {command}: {message}", err=True)
    raise typer.Exit(2)
