"""A real Prefect server on 127.0.0.1, `luban serve`, `prefect deployment run`, and a pause answered from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.flows.prefect_server import BIN, api, batch_finished, children, cli, paused_runs, start_batch, stop, wait_for
from tests.support.openai_server import ScriptedOpenAI
from tests.support.scripted_llm import LubanResponder, kind_of, same_skill, skill_in
from workspace.results_tsv import ResultsFile


@pytest.mark.slow
def test_batch_deployment_runs_pauses_and_resumes(prefect_server: dict, example_skills: Path):
    env = prefect_server
    serve = start_batch(env, example_skills, "weekly-report-zh")
    try:
        answered: list[str] = []

        def finished():  # polled through the REST API; `luban pending` and `luban approve` once per checkpoint
            for run_id, checkpoint, _ in paused_runs(env):
                if (run_id, checkpoint) in answered:
                    continue
                listed = cli(env, str(BIN / "luban"), "pending").stdout
                assert any(line.startswith(run_id) and f"checkpoint={checkpoint} " in line for line in listed.splitlines()), listed
                result = cli(env, str(BIN / "luban"), "approve", run_id, "--comment", "approved by the test")
                assert result.returncode == 0, result.stderr
                answered.append((run_id, checkpoint))
            return batch_finished(env, example_skills)

        wait_for(finished, 240, "the batch run to finish after its checkpoints were answered")
        assert [c for _, c in answered][:2] == ["test-prompts", "baseline"]
        rows = (example_skills.parent / "luban-workspace" / "quick" / "weekly-report-zh" / "results.tsv").read_text()
        assert "\tbaseline\t" in rows and ("\tkeep\t" in rows or "\trevert\t" in rows)
        report = sorted((example_skills.parent / "luban-workspace" / "quick" / "reports").glob("*.md"))
        assert report and "| weekly-report-zh |" in report[-1].read_text()
    finally:
        stop(serve)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_long_checkpoints_suspend_hold_no_process_and_repeat_no_llm_call(prefect_server: dict, example_skills: Path):
    """A served run with a long approval wait suspends (nothing held); each resume re-runs the flow from the top,
    which continues from the records: one baseline row, and the baseline is judged once, not once per re-run."""
    server = ScriptedOpenAI()
    server.responder = LubanResponder()
    baseline_text = (example_skills / "pr-review" / "SKILL.md").read_text()
    with server:
        env = dict(prefect_server, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-luban-suspend-0001")
        serve = start_batch(env, example_skills, "pr-review", 3600, "-p", 'llm={"judge_model": "judge-a", "max_retries": 0}')
        answered: list[tuple[str, str]] = []
        try:
            def answer_suspended():
                for run_id, checkpoint, state in paused_runs(env):
                    if (run_id, checkpoint) in answered:
                        continue
                    assert state == "Suspended", (checkpoint, state)
                    wait_for(lambda: not children(serve.pid), 60, "the suspended flow run's process to exit")
                    result = cli(env, str(BIN / "luban"), "approve", run_id, "--comment", f"ok {checkpoint}")
                    assert result.returncode == 0, result.stderr
                    answered.append((run_id, checkpoint))
                return batch_finished(env, example_skills)

            wait_for(answer_suspended, 420, "the suspended batch to finish after its checkpoints were answered")
        finally:
            stop(serve)
    assert [c for _, c in answered] == ["test-prompts", "baseline", "max-rounds-pr-review", "skill-pr-review"]
    assert len({run_id for run_id, _ in answered}) == 1  # one flow run, executed again after each answer
    workspace = example_skills.parent / "luban-workspace"
    rows = (workspace / "quick" / "pr-review" / "results.tsv").read_text().splitlines()
    assert sum("\tbaseline\t" in r for r in rows) == 1
    baseline_judged = [r for r in server.chat_requests() if kind_of(r) == "judge" and same_skill(skill_in(r), baseline_text)]
    # The baseline text's judge samples, as the last decision that had it as the incumbent counted them: every
    # judge request on it is one of those samples — the re-runs took theirs from Prefect's cache, none twice.
    attempts = ResultsFile(workspace / "quick" / "pr-review" / "results.tsv").rows()
    first_keep = next((i for i, r in enumerate(attempts) if r.status == "keep"), len(attempts) - 1)
    against_baseline = [r for r in attempts[: first_keep + 1] if r.evidence]
    assert against_baseline and len(baseline_judged) == against_baseline[-1].evidence["dims"]["dim2"]["n"][1]
    phases = api(prefect_server, "/flow_runs/filter", {"flows": {"name": {"like_": "phase-"}}})
    assert phases and not [p["name"] for p in phases if p["state"]["type"] == "RUNNING"]  # none left hanging
    marker = json.loads((workspace / "runs" / f"{answered[0][0]}.json").read_text())
    assert marker["state"] == "finished" and "sk-luban" not in json.dumps(marker)
