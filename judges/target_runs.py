"""The two runs of a test prompt: the target model with the skill and without it (the baseline, cached on disk).

The with-skill run reads the skill as a client does (``judges/target_tools.py``); the baseline gets the request
alone, with the case's own files inline when the author's case has some (it has no tool to read them with).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from judges.llm import LLMClient
from judges.settings import Role, Settings
from judges.target_tools import TargetAnswer, TargetSkill, answer_with_skill, read_in_skill
from workspace.baseline_cache import BaselineCache, CachedOutput
from workspace.test_prompts import TestPrompt


def target_parameters(settings: Settings) -> dict[str, float | int]:
    """What a target answer depends on besides the model and the prompt: the baseline cache's key includes it."""
    return {"temperature": 0.0, "max_tokens": settings.target_reply_tokens}


def baseline_request(prompt: TestPrompt, skill: TargetSkill | None) -> str:
    """The baseline's request: the prompt, and the case's own files inline (it has no tool to read them with)."""
    if not prompt.files or skill is None:
        return prompt.prompt
    shown = "".join(f"\n\n--- {p} ---\n{read_in_skill(skill, p, prompt.files)[0]}" for p in prompt.files)
    return f"{prompt.prompt}\n\nFiles for this request (given below): {', '.join(prompt.files)}{shown}"


def _fresh_baseline(client: LLMClient, settings: Settings, cache: BaselineCache, request: str) -> CachedOutput:
    parameters = target_parameters(settings)
    with cache.lock_for(settings.target_model, request, parameters):
        cached = cache.get(settings.target_model, request, parameters, count=False)  # computed while this one waited
        if cached is not None:
            return cached
        reply = client.chat("target:baseline", settings.target_model, [{"role": "user", "content": request}], role=Role.TARGET)
        value = CachedOutput(reply.text, reply.tokens_in, reply.tokens_out, reply.truncated, reply.seconds)
        cache.put(settings.target_model, request, parameters, value)
        return value


def _with_skill(client: LLMClient, settings: Settings, skill: TargetSkill | None, prompt: TestPrompt) -> TargetAnswer:
    if skill is not None:
        return answer_with_skill(client, settings, skill, prompt.prompt, prompt.files)
    # no skill (the consumer baseline): the bare model, uncached, asked as it always was (an empty system message)
    reply = client.chat("target:with_skill", settings.target_model,
                        [{"role": "system", "content": ""}, {"role": "user", "content": prompt.prompt}], role=Role.TARGET)
    return TargetAnswer(reply.text, reply.tokens_in, reply.tokens_out, reply.truncated, reply.seconds, access="")


def run_both(client: LLMClient, settings: Settings, cache: BaselineCache, skill: TargetSkill | None,
              prompt: TestPrompt) -> tuple[TargetAnswer, CachedOutput]:
    """The with-skill run and the baseline run side by side: neither needs the other, the grade needs both."""
    request = baseline_request(prompt, skill)
    cached = cache.get(settings.target_model, request, target_parameters(settings))
    if cached is not None:
        return _with_skill(client, settings, skill, prompt), cached
    with ThreadPoolExecutor(max_workers=1) as side:
        base = side.submit(_fresh_baseline, client, settings, cache, request)
        try:
            with_reply = _with_skill(client, settings, skill, prompt)
        finally:
            base_output = base.result()  # waits even when the with-skill run failed; re-raises its own error
    return with_reply, base_output
