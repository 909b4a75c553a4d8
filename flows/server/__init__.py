"""What the Prefect server keeps for every process: LLM limits, the shared budget, locks, heartbeats."""
