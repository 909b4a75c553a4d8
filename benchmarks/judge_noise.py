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
sys.path.insert(1, str(ROOT))

from shared import harness_environment, rate, server_process  # noqa: E402 - after the sys.path and environment set-up above

from tests.support.noisy_world import EFFECT_DIMS, KINDS, MODELS, PLANTED, NoisyModels  # noqa: E402 - as above


def _serve(sigma: float, seed: int, model: str, kinds: tuple[str, ...], effects: tuple[str, ...], near: bool,
           conn) -> None:
    from tests.support.openai_server import ScriptedOpenAI

    models = NoisyModels(sigma, seed, model, kinds, effects, near_baseline=near)
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
              effects: tuple[str, ...] = EFFECT_DIMS, near: bool = False) -> tuple[list[dict], dict]:
    """One optimize-skills run; its decisions, each with the planted edit's truth."""
    from flows.optimize import optimize_skills
    from workspace.results_tsv import ResultsFile

    with (tempfile.TemporaryDirectory(prefix="luban-noise-") as scratch,
          server_process(_serve, sigma, seed, model, kinds, effects, near) as (base_url, seen)):
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
                decisions.append(truth | {"kept": row.status == "keep", "calls": getattr(row, "llm_calls", None),
                                          "one_reading": one_reading(row.evidence), "look_one": look_one(row.evidence)})
                if truth["delta"] <= 0 and row.status == "keep":  # a false keep: the evidence behind it, to read
                    print(f"   {truth['kind']} kept: {name} round {row.round} ({truth['dim']}, true Δ {truth['delta']:+.2f}): "
                          f"{json.dumps(row.evidence)}", file=sys.stderr)
    print("   calls by kind:", seen["kinds"], file=sys.stderr)
    return decisions, {"calls": seen["calls"]}


def _basis(evidence: dict | None) -> dict | None:
    """The evidence of the judged dimension that decided a keep or revert (None: none did, or it was exact)."""
    if not evidence or not evidence.get("basis"):
        return None
    basis = (evidence.get("dims") or {}).get(evidence["basis"]) or {}
    return basis if basis.get("se") else None


def one_reading(evidence: dict | None) -> bool:
    """Decided by a judged dimension read once on each text (n = [1, 1]): what a veto on one reading looked like."""
    basis = _basis(evidence)
    return basis is not None and min(basis.get("n") or [0]) <= 1


def look_one(evidence: dict | None) -> bool:
    """Decided by a judged dimension at the first look."""
    return _basis(evidence) is not None and evidence is not None and evidence.get("look") == 1


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
    options.add_argument("--world", choices=("default", "near"), default="default",
                         help="near: each skill's with-skill Accuracy within a point of the baseline's (vetoes common)")
    options.add_argument("--code", help="another checkout of Luban to measure (default: this one)")
    options.add_argument("--json", help="also write the figures to this file")
    args = options.parse_args()
    code = Path(args.code).resolve() if args.code else ROOT
    sys.path.insert(0, str(code))
    os.chdir(code)
    harness_environment("luban-noise-prefect-")
    from prefect.testing.utilities import prefect_test_harness

    print(f"code: {code}; world {args.world}; seed {args.seed}; ≥ {args.decisions} decisions per model and σ; "
          f"batches of {args.skills} skills "
          f"× ≤ {args.rounds} rounds; python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print(f"{'model':<6} {'σ':>4}  {'false keeps (kept / not truly better)':<38}  {'true keeps (kept / truly better)':<38}  "
          f"{'dim8 improvements kept':<38}  harmful kept  one reading · look 1  calls/decision (all · own)  "
          "calls/kept improvement  wall")
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
                                tuple(args.kinds.split(",")), tuple(args.effects.split(",")), args.world == "near")
        decisions += found
        calls += seen["calls"]
        batch += 1
    worse = [d for d in decisions if d["delta"] <= 1e-9]
    better = [d for d in decisions if d["delta"] > 1e-9]
    dim8 = [d for d in better if d["dim"] == "accuracy"]
    kept_better = sum(d["kept"] for d in better)
    harmful_kept = sum(d["kept"] for d in decisions if d["kind"] == "harmful")
    thin, first = sum(d["one_reading"] for d in decisions), sum(d["look_one"] for d in decisions)
    own = [d["calls"] for d in decisions if d["calls"] is not None]
    per_own = f"{sum(own) / len(own):.1f}" if own else "—"
    per_kept = f"{calls / kept_better:.0f}" if kept_better else "—"
    print(f"{model:<6} {sigma:>4g}  {rate(sum(d['kept'] for d in worse), len(worse)):<38}  {rate(kept_better, len(better)):<38}  "
          f"{rate(sum(d['kept'] for d in dim8), len(dim8)):<38}  {harmful_kept:<12}  {f'{thin} · {first}':<20}  "
          f"{calls / len(decisions):6.1f} · {per_own:<17}  {per_kept:<22}  {time.perf_counter() - started:5.0f} s", flush=True)
    return {"decisions": len(decisions), "false_keeps": [sum(d["kept"] for d in worse), len(worse)],
            "true_keeps": [kept_better, len(better)], "dim8_kept": [sum(d["kept"] for d in dim8), len(dim8)],
            "harmful_kept": harmful_kept, "decided_on_one_reading": thin, "decided_at_look_one": first,
            "calls_per_decision": calls / len(decisions),
            "calls_per_kept_improvement": calls / kept_better if kept_better else None}


if __name__ == "__main__":
    main()
