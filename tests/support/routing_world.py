"""A loopback router whose choices follow a known affinity between a request and the descriptions it is shown.

The router reads the listing out of the system message as a model would (so a description the client's budget cut
is cut for it too), scores each skill by the words the request shares with its description, and samples one skill
— or none — from a softmax over those scores. Every probability is known, so every figure's truth is: recall, each
pair's confusion, and what an edit to a description really changes (``probabilities``).

Modes: ``tools`` answers the read_file probe and routing calls with tool calls; ``json`` answers in text (a model
that makes no tool calls), reading the JSON its request asks for; ``refuse_tools`` answers any request that carries
``tools`` with HTTP 400 naming them, as a server without function calling does.
"""

from __future__ import annotations

import html
import json
import math
import random
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from scoring.route_queries import NONE, words
from tests.support.openai_server import Request, Scripted, completion, error, reply
from tests.support.scripted_llm import tool_call_completion

_LINE = re.compile(r"^- ([^:\n]+): (.*)$", re.MULTILINE)


_XML_SKILL = re.compile(r"<skill>\n<name>\n(.*?)\n</name>\n<description>\n(.*?)\n</description>", re.DOTALL)


def listing_in(system: str) -> dict[str, str]:
    """name → description as the listing shows it (claude-code and codex lines, where a bare name shows no
    description, and the Agent Skills XML block)."""
    if "<available_skills>" in system:
        return {html.unescape(n): html.unescape(d) for n, d in _XML_SKILL.findall(system)}
    shown = {m.group(1).strip(): re.sub(r" \(file: [^)]*\)$", "", m.group(2)) for m in _LINE.finditer(system)}
    for bare in re.findall(r"^- ([\w.-]+)$", system, re.MULTILINE):
        shown.setdefault(bare, "")
    return shown


def affinity(query: str, description: str) -> float:
    return float(len(words(query) & words(description)))


@dataclass
class AffinityRouter:
    beta: float = 1.5  # how sharply the shared words decide
    none_score: float = 1.0  # the score of answering none
    seed: int = 0
    mode: str = "tools"
    fail_every: int = 0  # every n-th routing call gets HTTP 400 that no retry fixes (0: never)
    unreadable_every: int = 0  # every n-th routing call answers prose with no choice in it
    calls: int = 0
    seen: dict[str, int] = field(default_factory=dict)  # query -> times routed: its k-th run samples the same way
    cache: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def probabilities(self, listing: dict[str, str], query: str) -> dict[str, float]:
        scores = {name: self.beta * affinity(query, text) for name, text in listing.items()}
        scores[NONE] = self.beta * self.none_score
        top = max(scores.values())
        weights = {k: math.exp(v - top) for k, v in scores.items()}
        total = sum(weights.values())
        return {k: w / total for k, w in weights.items()}

    def __call__(self, request: Request) -> Scripted:
        body = request.body
        messages = body.get("messages", [])
        if self.mode == "refuse_tools" and body.get("tools"):
            return error(400, "tools are not supported by this server (no function calling)")
        if any(t.get("function", {}).get("name") == "read_file" for t in body.get("tools") or []):
            return Scripted(body=tool_call_completion([("read_file", {"path": "SKILL.md"})]) if self.mode == "tools"
                            else completion("I would read SKILL.md."))
        system, query = messages[0]["content"], messages[-1]["content"]
        with self._lock:
            self.calls += 1
            n = self.calls
            self.seen[query] = self.seen.get(query, 0) + 1
            # seeded by the query and its run, not the call's place in the queue: threads reorder calls, and a
            # query's runs still come out the same
            rng = random.Random(f"{self.seed}:{self.seen[query]}:{query}")
            cached = len(system) // 4 if system in self.cache else 0
            self.cache.add(system)
        if self.fail_every and n % self.fail_every == 0:
            return error(400, "scripted: this request is malformed")
        if self.unreadable_every and n % self.unreadable_every == 0:
            return Scripted(body=_with_cache(completion("Let me think about which one fits best."), system, cached))
        chosen = self.sample(listing_in(system), query, rng)
        answer = {"skills": [] if chosen == NONE else [chosen]}
        if self.mode == "tools" and body.get("tools"):
            return Scripted(body=_with_cache(tool_call_completion([("choose_skills", answer)]), system, cached))
        return Scripted(body=_with_cache(completion(json.dumps(answer)), system, cached))

    def sample(self, listing: dict[str, str], query: str, rng: random.Random) -> str:
        probabilities = self.probabilities(listing, query)
        pick, acc = rng.random(), 0.0
        for name in sorted(probabilities):
            acc += probabilities[name]
            if pick < acc:
                return name
        return NONE


def _with_cache(body: dict, system: str, cached: int) -> dict:
    """The usage a server with a prompt cache reports: the prompt's tokens, and those its cache served."""
    prompt = len(system) // 4 + 20
    body["usage"] = {"prompt_tokens": prompt, "completion_tokens": 12, "total_tokens": prompt + 12,
                     "prompt_tokens_details": {"cached_tokens": cached}}
    return body


SKILLS = {
    "invoices": "Creates and sends customer invoices from billing records. Use when the user asks to bill a client.",
    "weather": "Forecasts tomorrow's weather for a city from station data. Use when the user asks about rain or sun.",
    "recipes": "Suggests dinner recipes from the ingredients in the fridge. Use when the user asks what to cook.",
    "travel": "Plans train and flight trips with hotel bookings. Use when the user asks to plan a journey.",
}
TRIGGERS = {
    "invoices": [("bill the client for the customer invoices of march", True), ("send customer invoices today", True),
                 ("create invoices from the billing records", True), ("sends billing records", True),
                 ("what will the weather be tomorrow", False), ("plan a train trip", False)],
    "weather": [("will there be rain or sun tomorrow in the city", True), ("forecast tomorrow weather", True),
                ("station data for the weather forecast", True), ("what should i cook for dinner", False)],
}
def make_library(root: Path) -> Path:
    for name, description in SKILLS.items():
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nSteps.\n",
                                         encoding="utf-8")
    for name, cases in TRIGGERS.items():
        (root / name / "evals").mkdir()
        (root / name / "evals" / "triggers.json").write_text(
            json.dumps([{"query": q, "should_trigger": t} for q, t in cases]), encoding="utf-8")
    return root


def designed_for(skill: str, user: str) -> dict:
    """What users of ``skill`` really ask (from its true purpose, SKILLS, whatever its description says now), a
    near-miss in its first neighbour's words, and a request for no skill."""
    truth = SKILLS.get(skill) or user.split("description: ")[1].split("\n")[0]  # a skill of no world: its own words
    purpose = [w for w in re.findall(r"[a-z']+", truth.lower()) if len(w) > 3 and w not in ("when", "user", "asks")]
    neighbour = re.search(r"<neighbours-[0-9a-f]+>\n- ([\w-]+): ", user)
    other = neighbour.group(1) if neighbour and neighbour.group(1) in SKILLS else None
    theirs = [w for w in re.findall(r"[a-z']+", SKILLS[other].lower()) if len(w) > 3] if other else []
    queries = [{"kind": "explicit", "query": " ".join(purpose[0:5]), "belongs_to": skill},
               {"kind": "implicit", "query": "i need " + " ".join(purpose[3:7]), "belongs_to": skill},
               {"kind": "buried", "query": f"after lunch {' '.join(purpose[1:5])}, then email the team", "belongs_to": skill},
               {"kind": "explicit", "query": "please " + " ".join(purpose[2:6]) + " now", "belongs_to": skill},
               {"kind": "none", "query": f"tell me a joke about cats and {skill[:2]}", "belongs_to": "none"}]
    if other:
        queries.append({"kind": "near_miss", "query": " ".join(theirs[0:4]) + f" for {skill}", "belongs_to": other})
    return {"queries": queries}


class World(AffinityRouter):
    """The affinity router, a designer that writes the same queries for whichever skill asks, and an editor that
    proposes ``proposals[skill]`` (else the description unchanged, which Luban does not even try)."""

    designs: int = 0
    proposals: dict[str, str] = {}  # noqa: RUF012 - set per test on the instance
    edit_requests: list[str] = []  # noqa: RUF012 - set per test on the instance

    def __call__(self, request):
        system = request.body["messages"][0]["content"]
        user = request.body["messages"][-1]["content"]
        skill = user.split("name: ")[1].split("\n")[0] if "name: " in user else ""
        if "You write test requests" in system:
            self.designs += 1
            return reply(designed_for(skill, user))
        if "You rewrite the description of one skill" in system:
            self.edit_requests = [*self.edit_requests, user]
            current = user.split("description: ")[1].split("\n")[0]
            return reply({"description": self.proposals.get(skill, current), "why": "scripted"})
        return super().__call__(request)
