"""Skill texts the `luban score` tests share."""

from __future__ import annotations

GOOD = """---
name: {name}
description: Formats SQL queries to the team style. Use when the user says "format this SQL".
---
# {name}

## Overview

## Workflow

## Rules

1. Do not guess.
2. Never skip tests.
3. Avoid globals.

🛑 STOP before running the migration.

See [guide](references/guide.md).
"""

# A second skill's description, for tests that score GOOD beside another skill: two skills with one description
# collide (similar_description), which is not what those tests are about.
CHARTS = 'Draws bar and line charts from CSV files. Use when the user says "chart this CSV".'


def good_skill(name: str, description: str | None = None) -> str:
    """GOOD for ``name``, with ``description`` in place of its own when given."""
    text = GOOD.format(name=name)
    return text if description is None else text.replace(
        'description: Formats SQL queries to the team style. Use when the user says "format this SQL".',
        f"description: {description}", 1)
