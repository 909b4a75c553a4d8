"""prefect.yaml (workers) and `luban serve` make deployments that never replace each other, and the workers'
pull step fails with the fix when LUBAN_CHECKOUT is not this machine's checkout."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from tests.conftest import REPO_ROOT


def prefect_yaml() -> dict:
    return yaml.safe_load((REPO_ROOT / "prefect.yaml").read_text(encoding="utf-8"))


def flow_name(entrypoint: str) -> str:
    """The flow's name as Prefect registers it: the decorated function's ``name``."""
    import importlib

    module, function = entrypoint.split(":")
    return importlib.import_module(module.removesuffix(".py").replace("/", ".")).__dict__[function].name


def test_workers_and_serve_deployments_have_different_names_and_the_same_flows():
    from flows.serving import deployments

    from_yaml = {(flow_name(d["entrypoint"]), d["name"]) for d in prefect_yaml()["deployments"]}
    served = {(d.flow_name, d.name) for d in deployments()}
    assert served == {("optimize-skills", "batch"), ("evaluate-skills", "evaluate"), ("optimize-skill", "rounds"),
                      ("route-library", "route"), ("optimize-routing", "route-rounds")}
    assert from_yaml == {("optimize-skills", "workers-batch"), ("evaluate-skills", "workers-evaluate"),
                         ("optimize-skill", "workers-rounds"), ("route-library", "workers-route"),
                         ("optimize-routing", "workers-route-rounds")}
    assert not from_yaml & served  # `luban serve` can never overwrite what `prefect deploy --all` made


def test_the_workers_batch_runs_unattended_with_heartbeats():
    batch = next(d for d in prefect_yaml()["deployments"] if d["name"] == "workers-batch")
    assert batch["parameters"]["approval"] == "auto"  # a worker's batch must not wait at every checkpoint
    assert int(batch["work_pool"]["job_variables"]["env"]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"]) > 30  # Prefect's minimum


@pytest.mark.parametrize("checkout", [None, "/nonexistent/luban", str(REPO_ROOT)])
def test_the_pull_step_refuses_a_missing_checkout_with_the_fix(checkout: str | None, monkeypatch):
    from prefect.deployments.steps.utility import run_shell_script

    step = prefect_yaml()["pull"][0]["prefect.deployments.steps.run_shell_script"]
    if checkout is None:
        monkeypatch.delenv("LUBAN_CHECKOUT", raising=False)
    else:
        monkeypatch.setenv("LUBAN_CHECKOUT", checkout)
    run = run_shell_script(step["script"], shell=step["shell"], stream_output=step["stream_output"])
    if checkout == str(REPO_ROOT):
        asyncio.run(run)
        return
    with pytest.raises(RuntimeError, match="export LUBAN_CHECKOUT=") as err:
        asyncio.run(run)
    assert f"LUBAN_CHECKOUT='{checkout or ''}'" in str(err.value)


@pytest.mark.usefixtures("prefect_api")
def test_setup_server_creates_the_zombie_automation_once():
    from prefect.automations import Automation

    from flows.server.setup import ZOMBIE_AUTOMATION, ensure_zombie_automation

    first_id, created = ensure_zombie_automation(60)
    again_id, created_again = ensure_zombie_automation(60)
    assert created and not created_again and first_id == again_id
    stored = Automation.read(name=ZOMBIE_AUTOMATION)
    assert stored.trigger.within.total_seconds() == 180 and stored.actions[0].state.value == "CRASHED"
