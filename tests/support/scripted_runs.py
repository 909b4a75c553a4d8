"""Flow runs against the scripted OpenAI-compatible server, and a person answering checkpoints from code."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from flows.optimize import optimize_skills
from flows.serving import approve, pending
from tests.support.openai_server import Scripted, ScriptedOpenAI, completion, reply
from tests.support.scripted_llm import LubanResponder

STOP_LINE = "🛑 STOP: confirm before merging."


HELD_OUT = "look over branch fix-login"


class GateResponder(LubanResponder):
    """The with-skill answer says whether the STOP edit is in the skill; the grader scores held-out on that."""

    def __init__(self, held_after: float, main_after: float = 8, judge_after: int | None = None):
        super().__init__()
        self.held_after, self.main_after, self.judge_after = held_after, main_after, judge_after

    def _with_skill(self, request):
        edited = STOP_LINE in request.body["messages"][0]["content"]
        return Scripted(body=completion("with-skill answer" + (" [edited]" if edited else ""), 900, 60))

    def _grade(self, request):
        user = request.body["messages"][1]["content"]
        edited = "[edited]" in user
        accuracy = (self.held_after if HELD_OUT in user else self.main_after) if edited else 8
        return reply({"accuracy": accuracy, "baseline_accuracy": 6, "safety": 10, "compliance": 9,
                      "safety_red_line": False, "rationale": "scripted"})

    def _judge(self, request):
        if self.judge_after is not None and STOP_LINE in request.body["messages"][1]["content"]:
            self.judge_scores = [{"dim2": self.judge_after, "dim3": self.judge_after, "dim5": self.judge_after, "dim6": self.judge_after}]
        else:
            self.judge_scores = [{"dim2": 7, "dim3": 6, "dim5": 7, "dim6": 8}]
        return super()._judge(request)


def run_online(example_skills: Path, monkeypatch, responder: LubanResponder, **kwargs):
    server = ScriptedOpenAI()
    server.responder = responder
    with server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-luban-test-online-0001")
        kwargs.setdefault("skills", ["pr-review"])
        kwargs.setdefault("approval", "auto")
        kwargs.setdefault("llm", {"judge_model": "judge-a", "target_model": "target-m", "editor_model": "editor-e",
                                  "max_retries": 0})
        result = optimize_skills(skills_dir=str(example_skills), mode="full", init_git=True, **kwargs)
    return result, server


def run_in_thread(**kwargs) -> tuple[threading.Thread, dict]:
    box: dict = {}

    def target():
        try:
            box["result"] = optimize_skills(**kwargs)
        except BaseException as err:  # noqa: BLE001 - the test reads it
            box["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def answer_checkpoints(thread: threading.Thread, decide, deadline: float = 240, flows: dict | None = None) -> list[str]:
    """Answer every checkpoint the run pauses at, until it finishes; returns the checkpoints seen
    (and fills ``flows``, when given, with the name of the flow each one paused)."""
    seen: list[tuple[str, str]] = []  # (checkpoint, run id): one subflow run can pause more than once
    end = time.monotonic() + deadline
    while thread.is_alive() and time.monotonic() < end:
        for run in pending():
            if (run.checkpoint, run.id) not in seen:
                seen.append((run.checkpoint, run.id))
                if flows is not None:
                    flows[run.checkpoint] = run.flow
                approve(run.id, **decide(run.checkpoint))
        time.sleep(0.3)
    thread.join(5)
    return [name for name, _ in seen]
