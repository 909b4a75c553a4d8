"""Valid replies for every kind of call Luban makes, so tests script only what they vary.

``LubanResponder`` recognises a request by its system prompt (structure judge,
dim8 grader, dry run, reviewer, prompt designer, proposer) or by its shape (a
target-model run with or without the skill) and answers like a well-behaved
model. Attributes change the answers: per-judge scores, a fabricated quote, a
Safety red line, grader scores, review findings, the proposer's edit.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.support.openai_server import Request, Scripted, reply

_SKILL_BLOCK = re.compile(r"<skill-([0-9a-f]+)>\n(.*?)\n</skill-\1>", re.DOTALL)


def skill_in(request: Request) -> str:
    for message in request.body.get("messages", []):
        found = _SKILL_BLOCK.search(message.get("content", ""))
        if found:
            return found.group(2)
    return ""


def same_skill(a: str, b: str) -> bool:
    """Whether two skill texts are one skill read through null variants (scoring/null_variants.py): the same but for
    blank lines doubled, one space at a line's end, and blank lines before the body."""
    def folded(text: str) -> str:
        return re.sub(r"\n\s*\n+", "\n\n", "\n".join(line.rstrip(" ") for line in text.split("\n"))).strip("\n")

    return folded(a) == folded(b)


def system_of(request: Request) -> str:
    messages = request.body.get("messages", [])
    return messages[0]["content"] if messages and messages[0]["role"] == "system" else ""


def kind_of(request: Request) -> str:
    system = system_of(request)
    if "independent judge scoring" in system:
        return "judge"
    if "You grade an AI assistant" in system:
        return "grade"
    if "WITHOUT running anything" in system:
        return "dry_run"
    if "review panel" in system:
        return "review"
    if "You design test prompts" in system:
        return "design"
    if "You improve an agent skill" in system:
        return "propose"
    if "You rewrite an agent skill" in system:
        return "rewrite"
    if "Call the read_file tool with the path SKILL.md" in system:
        return "tool_probe"
    if "You have this skill loaded" in system:
        return "with_skill"
    return "baseline"


def a_quote(skill: str) -> str:
    lines = [line.strip() for line in skill.split("\n") if len(line.strip()) > 12 and not line.startswith("---")]
    return (lines[len(lines) // 2] if lines else skill.strip())[:60]


@dataclass
class LubanResponder:
    judge_scores: list[dict[str, int]] = field(default_factory=lambda: [{"dim2": 7, "dim3": 6, "dim5": 7, "dim6": 8}])
    fabricate_quotes: int = 0  # the next N judge replies quote text that is not in the skill
    safety_red_line: bool = False
    grade: dict[str, Any] = field(default_factory=lambda: {"accuracy": 8, "baseline_accuracy": 6, "safety": 10, "compliance": 9})
    graded_assertions: list[dict] = field(default_factory=list)  # the grade's "assertions" when a prompt has some
    findings: list[dict] = field(default_factory=list)
    edit: dict | None = None
    # The judges see the default proposal's STOP before merging as substance: +this on each dimension they score
    # (a keyword-stuffing test sets 0: the rule gain alone must then not be kept).
    stop_substance: int = 1
    kinds: list[str] = field(default_factory=list)
    # The target model: whether it makes tool calls, and which of the skill's files it reads (in order) before answering
    tools: bool = True
    reads: list[str] = field(default_factory=list)
    _judge_calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: Request) -> Scripted:
        kind = kind_of(request)
        with self._lock:
            self.kinds.append(kind)
        return getattr(self, f"_{kind}")(request)

    def _judge(self, request: Request) -> Scripted:
        skill = skill_in(request)
        with self._lock:
            index = self._judge_calls
            self._judge_calls += 1
            fabricate = self.fabricate_quotes > 0
            if fabricate:
                self.fabricate_quotes -= 1
        scores = self.judge_scores[index % len(self.judge_scores)]
        if "🛑 STOP: confirm before merging." in skill:
            scores = {d: min(10, s + self.stop_substance) for d, s in scores.items()}
        quote = "this sentence is not in the skill at all" if fabricate else a_quote(skill)
        dims = {d: {"score": s, "rationale": f"{d} looks like {s}", "quotes": [quote]} for d, s in scores.items()}
        return reply({"dims": dims, "safety_red_line": self.safety_red_line, "safety_reason": "scripted" if self.safety_red_line else ""})

    def _grade(self, request: Request) -> Scripted:
        extra = {"assertions": self.graded_assertions} if "\nAssertions:\n" in messages_json(request).replace("\\n", "\n") else {}
        return reply(dict(self.grade, safety_red_line=self.safety_red_line, rationale="scripted grade") | extra)

    def _dry_run(self, request: Request) -> Scripted:
        return reply({"accuracy": 7, "safety": 10, "compliance": 9, "safety_red_line": False, "rationale": "estimated"})

    def _review(self, request: Request) -> Scripted:
        return reply({"findings": self.findings})

    def _design(self, request: Request) -> Scripted:
        return reply({"prompts": [
            {"id": 1, "type": "main", "prompt": "review my PR", "expected": "a review", "held_out": False},
            {"id": 2, "type": "edge", "prompt": "review a 3000-line PR", "expected": "asks to split", "held_out": False},
            {"id": 3, "type": "error", "prompt": "review", "expected": "asks which PR", "held_out": False},
            {"id": 4, "type": "main", "prompt": "look over branch fix-login", "expected": "a review", "held_out": True},
        ]})

    def _propose(self, request: Request) -> Scripted:
        if self.edit is not None:
            return reply(self.edit)
        skill = skill_in(request)
        last = [line for line in skill.split("\n") if line.strip()][-1]
        return reply({"target_dim": "dim4", "old": "", "anchor": last, "new": "\n\n🛑 STOP: confirm before merging.",
                      "rationale": "add a STOP", "expected_gain": 3})

    def _rewrite(self, request: Request) -> Scripted:
        """Phase 2.5: the same skill with a STOP line before merging (what the rewrite tests score)."""
        skill = skill_in(request).rstrip("\n")
        return Scripted(body=_completion(f"<rewritten>\n{skill}\n\n🛑 STOP: confirm before merging.\n</rewritten>", 900, 400))

    def _tool_probe(self, request: Request) -> Scripted:
        if not self.tools:
            return reply("I cannot call tools.")
        return Scripted(body=tool_call_completion([("read_file", {"path": "SKILL.md"})]))

    def _with_skill(self, request: Request) -> Scripted:
        done = sum(1 for m in request.body.get("messages", []) if m.get("role") == "tool")
        if request.body.get("tools") and done < len(self.reads) and request.body.get("tool_choice") != "none":
            return Scripted(body=tool_call_completion([("read_file", {"path": self.reads[done]})]))
        return Scripted(body=_completion("with-skill answer: followed the skill step by step.", 900, 60))

    def _baseline(self, request: Request) -> Scripted:
        return Scripted(body=_completion("baseline answer.", 20, 40))


def tool_call_completion(calls: list[tuple[str, dict]], prompt_tokens: int = 300, completion_tokens: int = 20) -> dict:
    """A chat completion whose message asks for function calls (the OpenAI tools API), content empty."""
    body = _completion("", prompt_tokens, completion_tokens)
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        for i, (name, arguments) in enumerate(calls)]}
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


def _completion(text: str, prompt_tokens: int, completion_tokens: int) -> dict:
    from tests.support.openai_server import completion

    return completion(text, prompt_tokens, completion_tokens)


def messages_json(request: Request) -> str:
    return json.dumps(request.body.get("messages", []), ensure_ascii=False)
