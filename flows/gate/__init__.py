"""`luban score`, the CI gate: options, configuration, the check, summaries and the output formats (no Prefect)."""
