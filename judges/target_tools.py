"""The target model uses a skill as a client does: SKILL.md in its context, and a ``read_file`` tool over the skill.

Claude Code, Codex and Cursor load SKILL.md and open a reference when SKILL.md tells them to. The with-skill run does
the same through the OpenAI tools API: a bounded loop (``target_tool_reads`` reads per answer) in which each
``read_file`` call is answered from the files Luban read of the skill (``SourceFile``) — inside the skill only,
each capped at 64 KB when read, no link out of it, and never the author's ``evals/`` material except the files the
case itself names. Which files an answer read is recorded, and the grader is told.

Whether the server and model make tool calls at all is asked once per model and run (``judges.tool_support``), as structured
output is negotiated: one probe that asks for a ``read_file`` call. A server that refuses ``tools``, or a model that
answers in text instead (SmolLM2 on llama.cpp does), gets SKILL.md and the files it references inline, within
``target_context_tokens``, instead — counted as a fallback on every answer that took it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judges.llm import LLMClient, ToolCall
from judges.settings import Role, Settings
from judges.tokens import count_tokens
from judges.usage import LLMError
from scoring.skill_view import SKILL_FILE, SourceFile, skill_view

READ_FILE_TOOL = {"type": "function", "function": {
    "name": "read_file",
    "description": "Read one file of the loaded skill, by its path relative to the skill's directory "
                   "(as SKILL.md names it, e.g. references/api.md).",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}}
PROBE = [{"role": "system", "content": "Call the read_file tool with the path SKILL.md. Do not answer in text."},
         {"role": "user", "content": "Read SKILL.md."}]
TOOL = "tool"
INLINE = "inline"


@dataclass(frozen=True)
class TargetSkill:
    """What the with-skill run is given: SKILL.md's text, the skill's files as read, and those SKILL.md references."""

    text: str
    sources: tuple[SourceFile, ...] = ()
    referenced: tuple[str, ...] = ()


@dataclass(frozen=True)
class TargetAnswer:
    """One with-skill answer: its text, tokens over every call of its loop, the files it read and how."""

    text: str
    tokens_in: int
    tokens_out: int
    truncated: bool
    seconds: float
    files_read: tuple[str, ...] = ()
    access: str = TOOL  # TOOL: read through read_file; INLINE: given the files (the fallback)


def read_in_skill(skill: TargetSkill, path: str, case_files: tuple[str, ...] = ()) -> tuple[str, bool]:
    """(what a ``read_file`` call gets, whether it read a file): the file's text, or why not — with the paths it may
    read, so a model that guessed wrong can try again."""
    wanted = "/".join(part for part in str(path).strip().split("/") if part not in ("", "."))
    if not wanted or ".." in wanted.split("/") or str(path).strip().startswith(("/", "~")):
        return f"error: {path!r} is not a path inside the skill; paths are relative to the skill's directory", False
    if wanted == SKILL_FILE:
        return skill.text, True
    readable = {s.path: s for s in skill.sources if not s.path.startswith("evals/") or s.path in case_files}
    source = readable.get(wanted)
    if source is None:
        listed = ", ".join(sorted(readable)[:40]) or "(none)"
        return f"error: the skill has no file {wanted!r}; its files: SKILL.md, {listed}", False
    if source.text is None:
        return f"error: {wanted} cannot be read as text ({source.why_not})", False
    return source.text, True


def tool_calls_refused(client: LLMClient, model: str) -> str | None:
    """None when ``model`` makes tool calls (asked once per model and run, then remembered by the client); else why
    it gets the skill's files inline."""
    return client.tool_support.why_not(model, lambda name: _probe(client, name))


def _probe(client: LLMClient, model: str) -> str | None:
    try:
        reply = client.chat("target:tool-probe", model, list(PROBE), role=Role.TARGET, tools=[READ_FILE_TOOL],
                            tool_choice="required", reply_cap=64)
    except LLMError as err:
        if err.kind != "bad_request":
            raise  # the server is away: nothing is learned, the answer that asked fails as any call would
        return f"the server refused the tools parameter ({err})"
    if any(call.name == "read_file" for call in reply.tool_calls):
        return None
    return "asked to call read_file, the model answered in text"


def skill_system(skill: TargetSkill, inline: tuple[tuple[str, str], ...] = (), left_out: str = "") -> str:
    """The with-skill run's system message: SKILL.md, then (inline fallback) the files given with it."""
    files = sorted({s.path for s in skill.sources if not s.path.startswith("evals/")})
    listed = "\n".join(f"- {f}" for f in files) or "- (none)"
    how = ("Read a file of the skill with the read_file tool when the skill tells you to." if not inline
           else "The skill's files SKILL.md references are given below it.")
    shown = "".join(f"\n\n--- {path} ---\n{text}" for path, text in inline)
    missing = f"\n\nNot given (too large for the context): {left_out}" if left_out else ""
    return (f"You have this skill loaded. Follow it when it applies. {how}\n\n{skill.text}{shown}{missing}\n\n"
            f"Files in the skill directory:\n{listed}")


def case_note(case_files: tuple[str, ...], access: str) -> str:
    """Said after the request when the case comes with files (the author's ``files``)."""
    if not case_files:
        return ""
    how = "read them with the read_file tool" if access == TOOL else "they are given below"
    return f"\n\nFiles for this request ({how}): {', '.join(case_files)}"


def answer_with_skill(client: LLMClient, settings: Settings, skill: TargetSkill, request: str,
                      case_files: tuple[str, ...] = ()) -> TargetAnswer:
    """The with-skill answer: the tool loop, or the files inline when the model makes no tool calls."""
    if tool_calls_refused(client, settings.target_model) is not None:
        return _inline(client, settings, skill, request, case_files)
    messages: list[dict[str, Any]] = [{"role": "system", "content": skill_system(skill)},
                                      {"role": "user", "content": request + case_note(case_files, TOOL)}]
    read: list[str] = []
    tokens_in = tokens_out = 0
    seconds = 0.0
    for _turn in range(settings.target_tool_reads + 1):
        room = len(read) < settings.target_tool_reads
        reply = client.chat("target:with_skill", settings.target_model, messages, role=Role.TARGET,
                            tools=[READ_FILE_TOOL], tool_choice="auto" if room else "none")
        tokens_in, tokens_out, seconds = tokens_in + reply.tokens_in, tokens_out + reply.tokens_out, seconds + reply.seconds
        if not reply.tool_calls or not room:
            return TargetAnswer(reply.text, tokens_in, tokens_out, reply.truncated, seconds, tuple(read))
        messages.append({"role": "assistant", "content": reply.text or None, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls]})
        for call in reply.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": _answer_call(skill, call, read,
                                                                                               settings, case_files)})
    raise AssertionError("the loop's last turn offers no tool")  # pragma: no cover


def _answer_call(skill: TargetSkill, call: ToolCall, read: list[str], settings: Settings, case_files: tuple[str, ...]) -> str:
    if len(read) >= settings.target_tool_reads:
        return f"error: the {settings.target_tool_reads} reads this answer may make are used; answer now"
    if call.name != "read_file":
        return f"error: there is no tool {call.name!r}; the one tool is read_file"
    try:
        path = json.loads(call.arguments or "{}").get("path", "")
    except (json.JSONDecodeError, AttributeError):
        return 'error: the arguments are not JSON like {"path": "references/x.md"}'
    text, found = read_in_skill(skill, str(path), case_files)
    read.append(str(path) if found else f"{path} (not found)")
    return text


def _inline(client: LLMClient, settings: Settings, skill: TargetSkill, request: str,
            case_files: tuple[str, ...]) -> TargetAnswer:
    count: Callable[[str], int] = _counter(settings)
    view = skill_view(skill.text, skill.sources, skill.referenced, settings.target_context_tokens, count)
    cases = tuple((p, read_in_skill(skill, p, case_files)[0]) for p in case_files)
    user = request + case_note(case_files, INLINE) + "".join(f"\n\n--- {p} ---\n{t}" for p, t in cases)
    reply = client.chat("target:with_skill", settings.target_model,
                        [{"role": "system", "content": skill_system(skill, view.files, view.unseen())},
                         {"role": "user", "content": user}], role=Role.TARGET)
    return TargetAnswer(reply.text, reply.tokens_in, reply.tokens_out, reply.truncated, reply.seconds,
                        tuple(p for p, _ in view.files) + case_files, INLINE)


def _counter(settings: Settings) -> Callable[[str], int]:
    return lambda text: count_tokens(text, settings.target_model)[0]
