"""Prefect flows for Phase 0-6, checkpoints, deployments, and the luban CLI.

Importing this package must stay cheap: `luban score` runs in CI on every push,
so nothing here imports Prefect, openai or pandas at module level.
"""
