"""The measurement cache's keys: everything that can change an answer is in them, and nothing else is shared."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

from flows.ratchet import measure
from flows.state.config import Quality
from judges.settings import Secret, Settings
from tests.conftest import REPO_ROOT, write_skill
from workspace.layout import Workspace
from workspace.test_prompts import TestPrompt


def run_like(tmp_path: Path, run_id: str = "run-1", judge_model_2: str | None = None, **settings) -> SimpleNamespace:
    write_skill(tmp_path / "skills", "alpha", "---\nname: alpha\ndescription: d\n---\n# Alpha\n")
    backend = SimpleNamespace(name="openai", settings=Settings(api_key=Secret("sk-luban-key-never-in-a-key"),
                                                               base_url="http://127.0.0.1:9/v1", judge_model_2=judge_model_2,
                                                               **settings))
    prompts = {"alpha": [TestPrompt(id=1, type="main", prompt="p", expected="e")]}
    return SimpleNamespace(workspace=Workspace.open(tmp_path / "skills", "full"), prompts=prompts.__getitem__, mode="full",
                           quality=Quality.NORMAL, backend=backend, flow_run_id=run_id)


def key(run, text: str = "text", index: int = 0, kind: str = "evaluate") -> str:
    return measure.measurement_key(run, kind, "alpha", text, index)


def test_each_sample_of_a_text_has_its_own_key_and_a_re_execution_of_the_run_finds_it_again(tmp_path: Path):
    run = run_like(tmp_path)
    assert key(run) == key(run)  # the same run asking for the same sample again: a cache hit
    assert len({key(run, index=0), key(run, index=1), key(run, text="other"), key(run, kind="resample")}) == 4


def test_another_run_another_judge_or_another_structured_output_never_shares_a_key(tmp_path: Path):
    base = key(run_like(tmp_path))
    assert key(run_like(tmp_path, run_id="run-2")) != base
    assert key(run_like(tmp_path, judge_model_2="judge-b")) != base
    assert key(run_like(tmp_path, structured_output="off")) != base
    assert key(run_like(tmp_path, judge_model="judge-z")) != base
    assert key(run_like(tmp_path, max_llm_calls=7)) == base  # limits change no answer


def test_the_prompts_and_the_skills_files_are_part_of_the_key(tmp_path: Path):
    run = run_like(tmp_path)
    base = key(run)
    run.prompts = {"alpha": [TestPrompt(id=1, type="main", prompt="another", expected="e")]}.__getitem__
    assert key(run) != base
    run.prompts = run_like(tmp_path).prompts
    (tmp_path / "skills" / "alpha" / "references").mkdir()
    (tmp_path / "skills" / "alpha" / "references" / "a.md").write_text("x")
    assert key(run) != base


def test_the_code_version_changes_with_the_code_that_scores(tmp_path: Path):
    copy = tmp_path / "code"
    for package in ("scoring", "judges"):
        shutil.copytree(REPO_ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    before = measure.code_version(copy)
    assert before == measure.code_version(REPO_ROOT)
    (copy / "judges" / "structure_judge.py").write_text((copy / "judges" / "structure_judge.py").read_text() + "\n# x\n")
    measure.code_version.cache_clear()
    assert measure.code_version(copy) != before


def test_the_key_never_holds_the_api_key(tmp_path: Path):
    run = run_like(tmp_path)
    assert "sk-luban-key-never-in-a-key" not in str(measure.settings_fingerprint(run))
