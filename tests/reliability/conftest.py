"""The reliability tests use the flow tests' Prefect API (the test harness, or a real server where runs are killed
against it) and example-skill copies."""

from tests.flows.conftest import example_skills, prefect_api, prefect_server  # noqa: F401 - fixtures, registered by import
