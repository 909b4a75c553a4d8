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
