"""Does a kept edit mean a better skill when the judges are noisy? False-keep and true-keep rates through the real flow.

Usage (from a clean clone): make bench-noise
    or: .venv/bin/python benchmarks/judge_noise.py [--models iid,text,mixed] [--sigmas 0,1] [--decisions 100] [--seed 11]

A loopback OpenAI-compatible server, in its own process, plays every model:

- each synthetic skill has a true quality per judged dimension (dim2, dim3,
  dim5, dim6) and a true Accuracy (dim8), drawn from the seed;
- the editor proposes *planted* edits: one sentence with an id, appended to the
  skill, whose true effect the server knows — neutral (none), helpful (+1 true
  point on one dimension) or harmful (−1) — and it declares as its target the
  dimension it moves (a neutral edit names one at random);
- every judge call returns each dimension's true quality plus noise, clamped
  to [1, 10]; the dim8 grader returns Accuracy, Compliance and Safety the same
  way (the with-skill answer tells it which planted sentences the skill holds);
  the consumer-baseline reference tasks are graded without noise (that gate is
  not what is measured here). The noise models (``--models``), at a given σ:
  ``iid`` N(0, σ) afresh on every call; ``text`` a fixed offset N(0, σ) per
  dimension for each text the model reads — the same on every call about that
  text, as a judge at temperature 0 reads it, and another for any other text,
  however little it differs; ``mixed`` both, σ_call = 0.5σ and σ_text = 0.7σ.
  A text is what the model is given: the skill between the markers for a judge,
  the answer for the grader. The target model answers at temperature 0, so its
  answer is a function of what it read: it carries a digest of the skill text.

The real ``optimize-skills`` flow runs in full mode, approval auto, under a real
Prefect API (the test harness), on as many skills as it takes to reach
``--decisions`` keep decisions per σ. A decision is *truly better* when the
candidate's true total (the rubric's weights over the true qualities) is above
the incumbent's. Printed per σ: the false-keep rate (kept / not truly better)
and the true-keep rate (kept / truly better), each with its 95 % Wilson interval
and counts, harmful edits kept, and LLM calls per decision — all the run's calls
(baselines, held-out gates, prompt design included) over its decisions, and the
decisions' own (their ``llm_calls``).

Run with ``--code PATH`` on another checkout of Luban (e.g. a worktree of an
older commit) to measure that code's keep rule with the same skills and judges.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from shared import rate, server_process  # noqa: E402 - after the sys.path and environment set-up above

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
    return kind, dim, {"neutral": 0.0, "helpful": 1.0, "harmful": -1.0}[kind]


def dim8_of(accuracy: float) -> float:
    """The rubric's dim8 for a true Accuracy, with the true Safety and Compliance (no veto applies)."""
    return (8 * min(10.0, accuracy) + 5 * TRUE_SAFETY + 5 * TRUE_COMPLIANCE) / 18


def true_total(quality: dict[str, float]) -> float:
    """The judged part of the rubric's total (the rule dimensions never move: planted edits hold no keywords)."""
    judged = sum(WEIGHTS[d] * min(10.0, max(1.0, quality[d])) for d in JUDGED)
    return (judged + WEIGHTS["dim8"] * dim8_of(quality["accuracy"])) / 10


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
                 effects: tuple[str, ...] = EFFECT_DIMS):
        self.sigma, self.seed, self.planted_kinds, self.planted_effects = sigma, seed, kinds, effects
        self.per_call, self.per_text = (sigma * part for part in MODELS[model])
        self.rng = random.Random(f"noise-{seed}-{sigma}-{model}")
        self.proposals: dict[str, int] = {}
        self.decided: dict[str, dict] = {}  # planted id -> kind, dim, true Δ total
        self.calls = 0
        self.kinds: dict[str, int] = {}

    def quality(self, name: str, text: str) -> dict[str, float]:
        quality = skill_quality(name, self.seed)
        for planted in PLANTED.findall(text):
            _kind, dim, effect = planted_edit(name, int(planted.split("-")[1]), self.seed, self.planted_kinds,
                                              self.planted_effects)
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
        from tests.support.openai_server import Scripted, completion, reply
        from tests.support.scripted_llm import a_quote, kind_of, skill_in

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
            dims = {d: {"score": self.noisy(quality[d], read=text, what=d), "rationale": "scored", "quotes": [quote]}
                    for d in JUDGED}
            return reply({"dims": dims, "safety_red_line": False, "safety_reason": ""})
        if kind == "propose":
            number = self.proposals.get(name, 0) + 1
            self.proposals[name] = number
            planted_kind, dim, effect = planted_edit(name, number, self.seed, self.planted_kinds, self.planted_effects)
            quality = self.quality(name, text)
            after = dict(quality, **{dim: quality[dim] + effect})
            self.decided[f"P{self.seed}-{number}@{name}"] = {
                "kind": planted_kind, "dim": dim, "delta": true_total(after) - true_total(quality)}
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
            read = hashlib.sha256(context.encode()).hexdigest()[:12]  # temperature 0: the answer follows from the input
            return Scripted(body=completion(f"answer of {name} [accuracy {quality['accuracy']:.4f}] ({read})", 900, 60))
        if kind == "grade":
            return reply(self.grade(messages[1]["content"]))
        if kind == "review":
            return reply({"findings": []})
        if kind == "dry_run":
            return reply({"accuracy": 7, "safety": 10, "compliance": 9, "safety_red_line": False})
        return Scripted(body=completion("baseline answer.", 20, 40))


    def grade(self, user: str) -> dict:
        """The grader's scores for a pair of answers (the with-skill answer says its true Accuracy)."""
        found = re.search(r"\[accuracy ([\d.]+)\]", user)
        if found is None:  # a reference task of the consumer baseline: graded without noise
            return {"accuracy": 8, "baseline_accuracy": 8, "safety": 10, "compliance": 10, "safety_red_line": False,
                    "rationale": "reference"}
        answer = user[user.find("<answer-"):]
        return {"accuracy": self.noisy(float(found.group(1)), 0.0, answer, "accuracy"),
                "baseline_accuracy": self.noisy(BASELINE_ACCURACY, 0.0, answer, "baseline"),
                "safety": self.noisy(TRUE_SAFETY, 0.0, answer, "safety"),
                "compliance": self.noisy(TRUE_COMPLIANCE, 0.0, answer, "compliance"),
                "safety_red_line": False, "rationale": "graded"}


def _serve(sigma: float, seed: int, model: str, kinds: tuple[str, ...], effects: tuple[str, ...], conn) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.support.openai_server import ScriptedOpenAI

    models = NoisyModels(sigma, seed, model, kinds, effects)
    with ScriptedOpenAI() as server:
        server.responder = models
        conn.send(server.base_url)
        conn.recv()
        conn.send({"decided": models.decided, "calls": models.calls, "kinds": models.kinds})


def write_skills(dest: Path, count: int, seed: int) -> list[str]:
    """Synthetic skills in the corpus's shapes, from the vocabulary of this project's own examples (no corpus needed)."""
    from synthetic_skills import corpus_profile
    from synthetic_skills import write_skills as synthesize

    _, words = corpus_profile(sorted((ROOT / "skills").glob("*/SKILL.md")))
    rng = random.Random(seed)
    paths = synthesize(dest, count, [rng.randint(1800, 4000) for _ in range(count)], words, seed=seed)
    for path in paths:  # English only: the planted sentence is English, and a Chinese skill would get Chinese STOPs
        text = path.read_text(encoding="utf-8")
        if not text.isascii():
            path.write_text(re.sub(r"[^\x00-\x7f]+", "text", text), encoding="utf-8")
    return [p.parent.name for p in paths]


def one_batch(model: str, sigma: float, seed: int, skills: int, rounds: int, kinds: tuple[str, ...] = KINDS,
              effects: tuple[str, ...] = EFFECT_DIMS) -> tuple[list[dict], dict]:
    """One optimize-skills run; its decisions, each with the planted edit's truth."""
    from flows.optimize import optimize_skills
    from workspace.results_tsv import ResultsFile

    with (tempfile.TemporaryDirectory(prefix="luban-noise-") as scratch,
          server_process(_serve, sigma, seed, model, kinds, effects) as (base_url, seen)):
        skills_dir = Path(scratch) / "skills"
        names = write_skills(skills_dir, skills, seed)
        os.environ.update({"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-luban-bench-noise"})
        optimize_skills(skills_dir=str(skills_dir), mode="full", approval="auto", init_git=True, max_rounds=rounds,
                        llm={"judge_model": "judge-a", "target_model": "target-m", "editor_model": "editor-e",
                             "max_retries": 0, "max_llm_calls": 10**6, "max_tokens": 10**10})
        rows = {name: ResultsFile(Path(scratch) / "luban-workspace" / "full" / name / "results.tsv").rows() for name in names}
    decisions = []
    for name, history in rows.items():
        for row in history:
            planted = PLANTED.search(row.note) or re.search(r"planted (P\d+-\d+)", row.note)
            if row.status not in ("keep", "revert") or planted is None:
                continue
            truth = seen["decided"].get(f"{planted.group(1)}@{name}")
            if truth is not None:
                decisions.append(truth | {"kept": row.status == "keep", "calls": getattr(row, "llm_calls", None)})
    print("   calls by kind:", seen["kinds"], file=sys.stderr)
    return decisions, {"calls": seen["calls"]}


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--models", default="iid,text,mixed", help=f"noise models, of {', '.join(MODELS)}")
    options.add_argument("--sigmas", default="0,1")
    options.add_argument("--decisions", type=int, default=100, help="at least this many decisions per model and σ")
    options.add_argument("--skills", type=int, default=12, help="skills per batch (batches repeat until enough decisions)")
    options.add_argument("--rounds", type=int, default=12)
    options.add_argument("--seed", type=int, default=11)
    options.add_argument("--kinds", default=",".join(KINDS), help="planted edit kinds (e.g. helpful)")
    options.add_argument("--effects", default=",".join(EFFECT_DIMS), help="what they move (accuracy: dim8 alone)")
    options.add_argument("--code", help="another checkout of Luban to measure (default: this one)")
    options.add_argument("--json", help="also write the figures to this file")
    args = options.parse_args()
    code = Path(args.code).resolve() if args.code else ROOT
    sys.path.insert(0, str(code))
    os.chdir(code)
    os.environ.update({"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "ERROR",
                       "PREFECT_HOME": tempfile.mkdtemp(prefix="luban-noise-prefect-"),
                       "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120"})
    for variable in ("PREFECT_API_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(variable, None)
    from prefect.testing.utilities import prefect_test_harness

    print(f"code: {code}; seed {args.seed}; ≥ {args.decisions} decisions per model and σ; batches of {args.skills} skills "
          f"× ≤ {args.rounds} rounds; python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print(f"{'model':<6} {'σ':>4}  {'false keeps (kept / not truly better)':<38}  {'true keeps (kept / truly better)':<38}  "
          f"{'dim8 improvements kept':<38}  harmful kept  calls/decision (all · own)  calls/kept improvement  wall")
    figures: dict[str, dict] = {}
    with prefect_test_harness(server_startup_timeout=120):
        for model in args.models.split(","):
            for sigma in (float(s) for s in args.sigmas.split(",")):
                if sigma == 0 and model != args.models.split(",")[0]:
                    continue  # without noise every model is the same
                figures[f"{model} {sigma:g}"] = one_row(model, sigma, args)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


def one_row(model: str, sigma: float, args: argparse.Namespace) -> dict:
    """Batches until there are enough decisions; the row's figures, printed and returned."""
    started, decisions, calls, batch = time.perf_counter(), [], 0, 0
    while len(decisions) < args.decisions:
        found, seen = one_batch(model, sigma, args.seed + 1000 * batch, args.skills, args.rounds,
                                tuple(args.kinds.split(",")), tuple(args.effects.split(",")))
        decisions += found
        calls += seen["calls"]
        batch += 1
    worse = [d for d in decisions if d["delta"] <= 1e-9]
    better = [d for d in decisions if d["delta"] > 1e-9]
    dim8 = [d for d in better if d["dim"] == "accuracy"]
    kept_better = sum(d["kept"] for d in better)
    harmful_kept = sum(d["kept"] for d in decisions if d["kind"] == "harmful")
    own = [d["calls"] for d in decisions if d["calls"] is not None]
    per_own = f"{sum(own) / len(own):.1f}" if own else "—"
    per_kept = f"{calls / kept_better:.0f}" if kept_better else "—"
    print(f"{model:<6} {sigma:>4g}  {rate(sum(d['kept'] for d in worse), len(worse)):<38}  {rate(kept_better, len(better)):<38}  "
          f"{rate(sum(d['kept'] for d in dim8), len(dim8)):<38}  {harmful_kept:<12}  "
          f"{calls / len(decisions):6.1f} · {per_own:<17}  {per_kept:<22}  {time.perf_counter() - started:5.0f} s", flush=True)
    return {"decisions": len(decisions), "false_keeps": [sum(d["kept"] for d in worse), len(worse)],
            "true_keeps": [kept_better, len(better)], "dim8_kept": [sum(d["kept"] for d in dim8), len(dim8)],
            "harmful_kept": harmful_kept, "calls_per_decision": calls / len(decisions),
            "calls_per_kept_improvement": calls / kept_better if kept_better else None}


if __name__ == "__main__":
    main()
