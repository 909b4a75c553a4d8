"""``luban doctor``: can the configured server serve a batch, and what will the batch cost?

One check per line, against the server the settings name: it answers, takes
the key, serves each configured model; which structured-output dialect works;
whether it honours the reply cap; its latency and tokens per second; how many
requests it works on at once; one real judge call on a shipped example skill,
parsed (or why not); and an estimate of the batch's calls, tokens and time.
A failed check says its fix; ``luban doctor`` exits non-zero when any failed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from judges.llm import LLMClient
from judges.replies import last_json_object
from judges.server import MODEL_SETTINGS, ServerFacts, probe, serves
from judges.settings import ENV_NAMES, Role, Settings
from judges.structure_judge import judge_once
from judges.target_tools import tool_calls_refused
from judges.usage import LLMError

EXAMPLE_SKILL = Path(__file__).with_name("doctor_example.md")
PROBE_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
CAP_PROBE = 16  # tokens asked for where a long answer is invited: a server that honours max_tokens stops there
SPEED_TOKENS = 64
# Calls per keep decision, measured through the real flow (benchmarks/judge_noise.py at σ = 1, all calls over
# decisions): what a round costs beyond its proposal. A skill's other calls are its baseline and held-out grades.
CALLS_PER_DECISION = {"full": 45, "quick": 20}
CALLS_PER_SKILL = {"full": 32, "quick": 6}
CONSUMER_CALLS = 6  # the reference tasks of the consumer baseline, once per full-mode run


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None  # None: not checked (the server does not say), which is not a failure
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = {True: "ok  ", False: "FAIL", None: "--  "}[self.ok]
        return f"{mark} {self.name}: {self.detail}" + (f" — fix: {self.fix}" if self.fix else "")


@dataclass(frozen=True)
class Batch:
    skills: int
    mode: str
    rounds: int


def run_checks(settings: Settings, batch: Batch | None, say: Callable[[Check], None]) -> list[Check]:
    """Every check, each said as soon as it is known; the later ones only where the server answers at all."""
    done: list[Check] = []

    def record(check: Check) -> Check:
        done.append(check)
        say(check)
        return check

    facts = probe(settings)
    record(_reachable(settings, facts))
    if not facts.reachable:
        return done
    for check in _models(settings, facts):
        record(check)
    client = LLMClient(settings, facts=facts)
    for step in (_dialect, _cap, _speed, _slots, _judge, _target_files):
        record(step(client, settings))
    if batch is not None:
        record(_estimate(client, batch))
    return done


def _reachable(settings: Settings, facts: ServerFacts) -> Check:
    if not facts.reachable:
        return Check("server", False, facts.problem or "no answer", "luban doctor checks again once it is fixed")
    if facts.busy:
        return Check("server", True, f"{facts.base_url} took the connection but was busy for {facts.latency_s:.0f} s "
                                     "(working on other requests): the checks below wait their turn")
    listed = f"{len(facts.models)} model(s) listed" if facts.models is not None else "no model list (/models)"
    return Check("server", True, f"{facts.base_url} answers in {facts.latency_s * 1000:.0f} ms, key accepted; {listed}")


def _models(settings: Settings, facts: ServerFacts) -> list[Check]:
    checks = []
    for name in MODEL_SETTINGS:
        model = getattr(settings, name)
        if not model:
            continue
        if facts.models is None:
            checks.append(Check(f"model {model}", None, "the server lists no models, so this is learned on the first call"))
        elif serves(facts.models, model):
            checks.append(Check(f"model {model}", True, f"served ({ENV_NAMES[name]})"))
        else:
            checks.append(Check(f"model {model}", False, f"not served; it serves {', '.join(facts.models[:8]) or 'nothing'}",
                                f"set {ENV_NAMES[name]} to one of those"))
    return checks


def _dialect(client: LLMClient, settings: Settings) -> Check:
    try:
        reply = client.chat("doctor:dialect", settings.judge_model, [{"role": "user", "content": 'Reply with the JSON {"ok": true}.'}],
                            role=Role.JUDGE, schema=PROBE_SCHEMA, reply_cap=32)
    except LLMError as err:
        return Check("structured output", False, str(err), "see the error; LUBAN_STRUCTURED_OUTPUT=off sends no format")
    facts = client.facts()
    dialect = facts["dialects"].get(settings.judge_model, client.formats.ladder[0].value)
    steps = "; ".join(facts["step_downs"]) or "taken at the first try"
    if last_json_object(reply.text) is None:
        return Check("structured output", False, f"{dialect} ({steps}), but the reply held no JSON: {reply.text[:80]!r}",
                     "a judge model that can answer in JSON; its judges would be unscored")
    return Check("structured output", True, f"{dialect} ({steps})")


def _target_files(client: LLMClient, settings: Settings) -> Check:
    """How the target will read a skill's files: its read_file tool, or given them inline (judges/target_tools.py)."""
    try:
        why_not = tool_calls_refused(client, settings.target_model)
    except LLMError as err:
        return Check("target files", False, str(err), "see the error")
    if why_not is None:
        return Check("target files", True, f"{settings.target_model} calls the read_file tool: it opens a skill's files "
                                           "as it needs them")
    return Check("target files", True, f"inline: {why_not}; it is given the files SKILL.md references, within "
                                       f"LUBAN_TARGET_CONTEXT_TOKENS ({settings.target_context_tokens})")


def _cap(client: LLMClient, settings: Settings) -> Check:
    reply = client.chat("doctor:cap", settings.judge_model,
                        [{"role": "user", "content": "Write a long story about a lighthouse keeper."}],
                        role=Role.JUDGE, reply_cap=CAP_PROBE)
    if reply.tokens_out > CAP_PROBE:
        return Check("reply cap", False, f"asked for at most {CAP_PROBE} tokens, got {reply.tokens_out}",
                     "a server that honours max_tokens (replies would otherwise run to the context)")
    how = "stopped at it" if reply.truncated else f"{reply.tokens_out} token(s), finished on its own"
    return Check("reply cap", True, f"max_tokens {CAP_PROBE} honoured ({how}); caps per role: "
                                    + ", ".join(f"{r.value} {settings.reply_cap(r)}" for r in Role))


def _speed(client: LLMClient, settings: Settings) -> Check:
    started = time.monotonic()
    reply = client.chat("doctor:speed", settings.judge_model,
                        [{"role": "user", "content": "Count from one to one hundred in words, separated by commas."}],
                        role=Role.JUDGE, reply_cap=SPEED_TOKENS)
    seconds = time.monotonic() - started
    rate = reply.tokens_out / seconds if seconds > 0 else 0.0
    return Check("speed", True, f"{seconds:.2f} s for {reply.tokens_out} tokens out ({reply.tokens_in} in): "
                                f"{rate:.1f} tokens/s")


def _slots(client: LLMClient, settings: Settings) -> Check:
    """The server's own word (llama.cpp's /props), else measured: two short calls at once against one alone."""
    if client.slots:
        return Check("concurrency", True, f"{client.slots} slot(s) (the server says); Luban sends {client.concurrency} at once")
    one = _timed(client, settings, 1)
    two = _timed(client, settings, 2)
    serial = two > 1.6 * one
    found = "1 request at a time (two at once took " if serial else "more than one request at a time (two at once took "
    detail = (f"{found}{two:.2f} s, one {one:.2f} s); Luban sends up to {client.concurrency} at once and waits up to "
              f"{client.read_timeout:g} s for each, queueing included")
    return Check("concurrency", True, detail, "LUBAN_SERVER_SLOTS=1 sends one at a time" if serial and client.concurrency > 1 else "")


def _timed(client: LLMClient, settings: Settings, calls: int) -> float:
    def one_call(_: int) -> None:
        client.chat("doctor:slots", settings.judge_model, [{"role": "user", "content": "Name three rivers."}],
                    role=Role.JUDGE, reply_cap=24)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=calls) as pool:
        list(pool.map(one_call, range(calls)))
    return time.monotonic() - started


def _judge(client: LLMClient, settings: Settings, tries: int = 3) -> Check:
    """The structure judge on a shipped example skill, as a run calls it: how many of its verdicts are usable."""
    text = EXAMPLE_SKILL.read_text(encoding="utf-8")
    verdicts = [judge_once(client, settings.judge_model, f"doctor-{i + 1}", text, ()) for i in range(tries)]
    usable = [v for v in verdicts if v.unscored_reason is None]
    void = "; ".join(sorted({str(v.unscored_kind) for v in verdicts if v.unscored_reason}))
    if not usable:
        return Check("judge", False, f"0 of {tries} verdicts on {EXAMPLE_SKILL.name} usable ({verdicts[-1].unscored_reason}); "
                                     f"raw reply: {verdicts[-1].raw[:120]!r}",
                     f"a stronger {ENV_NAMES['judge_model']} (or a larger {ENV_NAMES['judge_reply_tokens']} if truncated): "
                     "every judged dimension would be unscored")
    scores = json.dumps(usable[0].scores, sort_keys=True)
    return Check("judge", True, f"{len(usable)} of {tries} verdicts on {EXAMPLE_SKILL.name} usable, e.g. {scores}"
                                + (f"; void: {void}" if void else ""))


def estimate(batch: Batch, seconds_per_call: float, tokens_per_call: float, at_once: int) -> tuple[int, int, float]:
    """(calls, tokens, seconds) for a batch: the skill's own measurements, then one decision per round."""
    calls = batch.skills * (CALLS_PER_SKILL[batch.mode] + batch.rounds * CALLS_PER_DECISION[batch.mode])
    calls += CONSUMER_CALLS if batch.mode == "full" else 0
    return calls, int(calls * tokens_per_call), calls * seconds_per_call / max(1, at_once)


def _estimate(client: LLMClient, batch: Batch) -> Check:
    records = [r for r in client.usage.records if r.role.startswith("judge:doctor")]
    per_call = sum(r.latency_s for r in records) / max(1, len(records))
    tokens = sum(r.tokens_in + r.tokens_out for r in records) / max(1, len(records))
    calls, total_tokens, seconds = estimate(batch, per_call, tokens, min(client.concurrency, client.slots or 1))
    return Check("estimate", True, f"{batch.skills} skill(s), {batch.mode} mode, {batch.rounds} round(s): about {calls} calls, "
                                   f"{total_tokens:,} tokens, {_duration(seconds)} at this server's speed "
                                   f"({per_call:.1f} s and {tokens:.0f} tokens per judge call; a rough guide, not a budget)")


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{max(1, minutes)} min"
