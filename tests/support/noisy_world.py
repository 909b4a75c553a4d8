"""A noisy loopback world whose truth is known: every model Luban calls, answering from true qualities plus noise.

- each skill has a true quality per judged dimension (dim2, dim3, dim5, dim6)
  and a true Accuracy (dim8), drawn from the seed;
- the editor proposes *planted* edits: one sentence with an id, appended to the
  skill, whose true effect the world knows — neutral (none), helpful (+1 true
  point on one dimension), harmful (−1) or damaging (−3: an editor that cuts what matters); which kind the n-th proposal is comes
  from ``kinds`` (a tuple drawn from uniformly: repeat a kind to weight it), or
  from ``phases`` when the world changes at a proposal number (a proposer that
  turns bad);
- every judge call returns each dimension's true quality plus noise; the dim8
  grader returns Accuracy, Compliance and Safety the same way. ``judge_drift``
  adds a fixed offset to every judged score (judges that drifted);
- the bare model's true Accuracy is 5, below every skill's; with ``near_baseline`` it is within a point below the
  skill's own, so single readings fall under it often and a harmful edit can put a skill truly under it (the veto is
  part of the truth: a skill truly below the baseline has a true dim8 of 0).

Used by ``benchmarks/judge_noise.py`` (false and true keeps), ``benchmarks/weekly_runs.py``
(false alarms over many runs) and the suite's many-runs test.
"""

from __future__ import annotations

import hashlib
import random
import re

from tests.support.openai_server import Scripted, completion, reply
from tests.support.scripted_llm import a_quote, kind_of, skill_in

WEIGHTS = {"dim2": 11, "dim3": 11, "dim5": 18, "dim6": 4, "dim8": 20}
JUDGED = ("dim2", "dim3", "dim5", "dim6")
EFFECT_DIMS = (*JUDGED, "accuracy")
PLANTED = re.compile(r"Note (P\d+-\d+):")
TRUE_SAFETY, TRUE_COMPLIANCE, BASELINE_ACCURACY = 9.8, 9.6, 5.0
KINDS = ("neutral", "helpful", "harmful")


def skill_quality(name: str, seed: int) -> dict[str, float]:
    rng = random.Random(f"{seed}-{name}")
    return {d: rng.uniform(4.0, 8.0) for d in JUDGED} | {"accuracy": rng.uniform(6.5, 8.0)}


def planted_edit(name: str, number: int, seed: int, kinds: tuple[str, ...] = KINDS,
                 effects: tuple[str, ...] = EFFECT_DIMS) -> tuple[str, str, float]:
    """The ``number``-th planted edit proposed for a skill: (kind, dimension it moves, true effect), of ``kinds``
    moving one of ``effects`` (narrowed by --kinds / --effects, e.g. to dim8 improvements alone)."""
    rng = random.Random(f"{seed}-{name}-{number}")
    kind = kinds[rng.randrange(len(kinds))]
    dim = rng.choice(effects)
    return kind, dim, {"neutral": 0.0, "helpful": 1.0, "harmful": -1.0, "damaging": -3.0}[kind]


def dim8_of(accuracy: float, baseline: float = BASELINE_ACCURACY) -> float:
    """The rubric's dim8 for a true Accuracy, with the true Safety and Compliance: 0 when the true Accuracy is below
    the baseline's (the veto, as a text's truth: no noise in it)."""
    if accuracy < baseline:
        return 0.0
    return (8 * min(10.0, accuracy) + 5 * TRUE_SAFETY + 5 * TRUE_COMPLIANCE) / 18


def true_total(quality: dict[str, float], baseline: float = BASELINE_ACCURACY) -> float:
    """The judged part of the rubric's total (the rule dimensions never move: planted edits hold no keywords)."""
    judged = sum(WEIGHTS[d] * min(10.0, max(1.0, quality[d])) for d in JUDGED)
    return (judged + WEIGHTS["dim8"] * dim8_of(quality["accuracy"], baseline)) / 10


def baseline_of(name: str, seed: int, near: bool) -> float:
    """The bare model's true Accuracy on a skill's requests: 5 (well below every skill's), or, in the world where
    vetoes are common (``near``), within a point below the skill's own — a single reading falls under it often, and
    a harmful edit to Accuracy can put the skill truly under it."""
    if not near:
        return BASELINE_ACCURACY
    return skill_quality(name, seed)["accuracy"] - random.Random(f"baseline-{seed}-{name}").uniform(0.0, 1.0)


WORDS = ("answer", "order", "request", "table", "summary", "field", "value", "date", "owner", "status", "ticket",
         "branch", "review", "draft", "section", "heading", "list", "number", "unit", "source", "link", "quote", "name",
         "format", "column", "row", "total", "range", "limit", "version", "change", "release", "note", "reader", "team")


def sentence(name: str, number: int, seed: int) -> str:
    """A different plain sentence for every planted edit (rejected edits are matched by similarity, so they must differ)."""
    rng = random.Random(f"sentence-{seed}-{name}-{number}")
    return f"keep the {' '.join(rng.sample(WORDS, 7))} as the request gives them."


def skill_name(text: str) -> str:
    found = re.search(r"^name: (\S+)", text, re.MULTILINE)
    return found.group(1) if found else "unknown"


MODELS = {"iid": (1.0, 0.0), "text": (0.0, 1.0), "mixed": (0.5, 0.7)}  # (σ per call, σ per text) at σ = 1


class NoisyModels:
    """Judge, grader, runner, designer and editor for one noise model and σ: replies computed from the true qualities."""

    def __init__(self, sigma: float, seed: int, model: str = "iid", kinds: tuple[str, ...] = KINDS,
                 effects: tuple[str, ...] = EFFECT_DIMS, phases: tuple[tuple[int, tuple[str, ...]], ...] = (),
                 first_proposal: int = 1, judge_drift: float = 0.0, near_baseline: bool = False):
        self.sigma, self.seed, self.planted_kinds, self.planted_effects = sigma, seed, kinds, effects
        self.phases = phases  # (from proposal number, kinds): the proposer changes there
        self.first_proposal, self.judge_drift = first_proposal, judge_drift
        self.near_baseline = near_baseline  # the with-skill Accuracy close to the baseline's: vetoes are common
        self.per_call, self.per_text = (sigma * part for part in MODELS[model])
        self.rng = random.Random(f"noise-{seed}-{sigma}-{model}-{first_proposal}")
        self.proposals: dict[str, int] = {}
        self.decided: dict[str, dict] = {}  # planted id -> kind, dim, true Δ total
        self.calls = 0
        self.kinds: dict[str, int] = {}

    def kinds_at(self, number: int) -> tuple[str, ...]:
        """The kinds the ``number``-th proposal is drawn from: the last phase begun by then, else ``kinds``."""
        kinds = self.planted_kinds
        for start, phase_kinds in self.phases:
            if number >= start:
                kinds = phase_kinds
        return kinds

    def planted(self, name: str, number: int) -> tuple[str, str, float]:
        return planted_edit(name, number, self.seed, self.kinds_at(number), self.planted_effects)

    def quality(self, name: str, text: str) -> dict[str, float]:
        quality = skill_quality(name, self.seed)
        for planted in PLANTED.findall(text):
            _kind, dim, effect = self.planted(name, int(planted.split("-")[1]))
            quality[dim] += effect
        return quality

    def noisy(self, value: float, low: float = 1.0, read: str = "", what: str = "") -> float:
        """``value`` as the model reads it: its fixed offset for this text (``read``) and dimension, plus this call's."""
        offset = 0.0
        if self.per_text:
            digest = hashlib.sha256(f"{self.seed}|{what}|{read}".encode()).digest()
            offset = random.Random(digest).gauss(0, self.per_text)
        call = self.rng.gauss(0, self.per_call) if self.per_call else 0.0
        return round(min(10.0, max(low, value + offset + call)), 2)

    def __call__(self, request):
        self.calls += 1
        kind = kind_of(request)
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        messages = request.body.get("messages", [])
        if kind in ("judge", "propose", "design", "review", "rewrite", "dry_run"):
            text = skill_in(request)
            name = skill_name(text)
        if kind == "judge":
            quality = self.quality(name, text)
            quote = a_quote(text)
            dims = {d: {"score": self.noisy(quality[d] + self.judge_drift, read=text, what=d), "rationale": "scored",
                        "quotes": [quote]}
                    for d in JUDGED}
            return reply({"dims": dims, "safety_red_line": False, "safety_reason": ""})
        if kind == "propose":
            number = self.proposals.get(name, self.first_proposal - 1) + 1
            self.proposals[name] = number
            planted_kind, dim, effect = self.planted(name, number)
            quality = self.quality(name, text)
            after = dict(quality, **{dim: quality[dim] + effect})
            self.decided[f"P{self.seed}-{number}@{name}"] = {
                "kind": planted_kind, "dim": dim,
                "delta": true_total(after, self.baseline(name)) - true_total(quality, self.baseline(name))}
            declared = "dim8" if dim == "accuracy" else dim
            if planted_kind == "neutral":
                declared = random.Random(f"{name}-{number}").choice(JUDGED)
            return reply({"target_dim": declared, "old": "", "anchor": "", "expected_gain": 1.0,  # appended at the end
                          "new": f"\n\nNote P{self.seed}-{number}: {sentence(name, number, self.seed)}",
                          "rationale": f"planted P{self.seed}-{number}"})
        if kind == "design":
            return reply({"prompts": [
                {"id": 1, "type": "main", "prompt": f"use {name} on the first case", "expected": "done", "held_out": False},
                {"id": 2, "type": "edge", "prompt": f"use {name} on an odd case", "expected": "done", "held_out": False},
                {"id": 3, "type": "error", "prompt": f"use {name} with nothing given", "expected": "asks", "held_out": False},
                {"id": 4, "type": "main", "prompt": f"use {name} on a held-out case", "expected": "done", "held_out": True}]})
        if kind == "with_skill":
            context = messages[0]["content"]
            quality = self.quality(skill_name(context), context)
            name = skill_name(context)
            # temperature 0: the answer follows from the input — the skill as given, not Luban's constant wording around
            # it (a change to that wording would otherwise draw a new world for every test built on this one)
            skill = context[context.find("---"):context.rfind("\n\nFiles in the skill directory:")]
            read = hashlib.sha256(skill.encode()).hexdigest()[:12]
            said = f"[accuracy {quality['accuracy']:.4f}]"  # the default world's answers as they always were
            said += f" [baseline {self.baseline(name):.4f}]" if self.near_baseline else ""
            return Scripted(body=completion(f"answer of {name} {said} ({read})", 900, 60))
        if kind == "grade":
            return reply(self.grade(messages[1]["content"]))
        if kind == "review":
            return reply({"findings": []})
        if kind == "dry_run":
            return reply({"accuracy": 7, "safety": 10, "compliance": 9, "safety_red_line": False})
        return Scripted(body=completion("baseline answer.", 20, 40))


    def baseline(self, name: str) -> float:
        return baseline_of(name, self.seed, self.near_baseline)

    def grade(self, user: str) -> dict:
        """The grader's scores for a pair of answers (the with-skill answer says its true Accuracy)."""
        found = re.search(r"\[accuracy ([\d.]+)\]", user)
        if found is None:  # a reference task of the consumer baseline: graded without noise
            return {"accuracy": 8, "baseline_accuracy": 8, "safety": 10, "compliance": 10, "safety_red_line": False,
                    "rationale": "reference"}
        answer = user[user.find("<answer-"):]
        baseline = re.search(r"\[baseline ([\d.]+)\]", user)
        return {"accuracy": self.noisy(float(found.group(1)), 0.0, answer, "accuracy"),
                "baseline_accuracy": self.noisy(float(baseline.group(1)) if baseline else BASELINE_ACCURACY, 0.0, answer,
                                                "baseline"),
                "safety": self.noisy(TRUE_SAFETY, 0.0, answer, "safety"),
                "compliance": self.noisy(TRUE_COMPLIANCE, 0.0, answer, "compliance"),
                "safety_red_line": False, "rationale": "graded"}


