"""The reliability tests use the flow tests' Prefect API (the test harness) and example-skill copies."""

from tests.flows.conftest import example_skills, prefect_api  # noqa: F401 - fixtures, registered by import
