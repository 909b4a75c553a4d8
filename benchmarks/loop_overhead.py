"""What the orchestration costs around the LLM calls: wall time against the LLM critical path.

Usage (from a clean clone): make bench-loop
    or: .venv/bin/python benchmarks/loop_overhead.py [--latency 0.2] [--skills 8] [--rounds 3]

A loopback OpenAI-compatible server (tests/support/openai_server.py) answers
every call after a fixed latency L with a valid judge, runner, grader or
proposer reply. The real `optimize-skills` flow runs in full mode, under a
real Prefect API (the test harness: a temporary server on 127.0.0.1), on
copies of corpus skills; every proposal adds one counter-example line and the
judges score each added line higher, so every round keeps its edit and a run
is exactly N skills x R rounds.

The critical path (critical_path.py) is the waves of calls that must follow
one another given the concurrency limit, in the order the flow defines: the
phases in turn, and skills one after another within each (the design asks for
a checkpoint after each skill; one git branch carries the edits). Within an
evaluation nothing waits but a grade on its runs. Each wave counts at the time
the bare openai client takes for that many calls side by side against the same
server (L plus the HTTP round trip, measured first). wall/critical_path is what
Luban adds: Prefect, git, the rubric, results.tsv, checkpoints, artifacts.

Target (issue #8): wall/critical_path <= 1.15 for N = 8, R = 3.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy  # pandas brings it

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.update({"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "ERROR",
                   "PREFECT_HOME": tempfile.mkdtemp(prefix="luban-bench-prefect-"),
                   "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120"})
for variable in ("PREFECT_API_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
    os.environ.pop(variable, None)

from critical_path import full_run_steps, wave_widths  # noqa: E402 - after the sys.path and environment set-up above
from shared import server_process  # noqa: E402 - after the sys.path and environment set-up above

from tests.support.openai_server import Request, Scripted, ScriptedOpenAI, completion, reply  # noqa: E402 - after the sys.path and environment set-up above
from tests.support.scripted_llm import LubanResponder, kind_of, skill_in  # noqa: E402 - after the sys.path and environment set-up above

CORPUS = Path(os.environ.get("LUBAN_CORPUS", ROOT.parent / "shared" / "corpus"))  # as the tests read it
TARGET = 1.15
MARKER = "- Do not skip check "  # one per kept round; the count in a skill is its round
PROMPTS_MAIN, PROMPTS_HELD_OUT = 3, 1
MINIMUM_PER_ROUND = {"propose": 1, "with_skill": PROMPTS_MAIN, "grade": PROMPTS_MAIN, "baseline": 0}
# Judge calls are counted for the run: the candidate's two in its round, the incumbent's fresh ones in the next
# (KeepPolicy.judges_per_step: it is re-measured every round), and a kept text's first four (its baseline).
BASELINE_JUDGES, FRESH_JUDGES = 4, 4
HELD_OUT_TAG = "held-out case for"
_ANSWER_TAG = re.compile(r"answer for (\S+) round (\d+)")


def _skill_text(request: Request) -> str:
    """The skill a request carries: delimited as data for judges and the proposer, as the system prompt for runs."""
    if kind_of(request) == "with_skill":
        return str(request.body["messages"][0]["content"])
    return skill_in(request)


def _prose_lines(skill: str) -> list[str]:
    """Lines outside code fences and tables: the edit guards refuse text written inside those."""
    prose, fenced = [], False
    for line in skill.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and not line.lstrip().startswith(("|", "<")):
            prose.append(line)
    return prose


class LatencyResponder(LubanResponder):
    """Valid replies after ``latency`` seconds, each request attributed to a (skill, round)."""

    def __init__(self, latency: float):
        super().__init__()
        self.latency = latency
        self.by_round: dict[tuple[str, int], Counter] = {}

    def __call__(self, request: Request) -> Scripted:
        scripted = super().__call__(request)
        scripted.delay = self.latency
        where = self._where(request)
        if where is not None:
            with self._lock:
                self.by_round.setdefault(where, Counter())[kind_of(request)] += 1
        return scripted

    def _where(self, request: Request) -> tuple[str, int] | None:
        kind, text = kind_of(request), str(request.body.get("messages", ""))
        if HELD_OUT_TAG in text or kind == "baseline":
            return None  # held-out gate calls and cached-or-not baselines are counted apart
        if kind == "grade":
            tag = _ANSWER_TAG.search(text)
            return (tag.group(1), int(tag.group(2))) if tag else None
        skill = _skill_text(request)
        name = re.search(r"^name: (.+)$", skill, re.MULTILINE)
        if kind in ("judge", "with_skill", "propose") and name:
            return name.group(1).strip(), skill.count(MARKER) + (kind == "propose")
        return None

    def _judge(self, request: Request) -> Scripted:
        score = min(10, 5 + skill_in(request).count(MARKER))
        self.judge_scores = [{"dim2": score, "dim3": score, "dim5": score, "dim6": score}]
        return super()._judge(request)

    def _with_skill(self, request: Request) -> Scripted:
        skill = _skill_text(request)
        name = re.search(r"^name: (.+)$", skill, re.MULTILINE)
        tag = f"answer for {name.group(1).strip() if name else '?'} round {skill.count(MARKER)}"
        return Scripted(body=completion(f"with-skill {tag}: followed the skill.", 900, 60))

    def _design(self, request: Request) -> Scripted:
        name = re.search(r"^name: (.+)$", skill_in(request), re.MULTILINE)
        skill = name.group(1).strip() if name else "skill"
        prompts = [{"id": i, "type": kind, "prompt": f"use {skill} on case {i}", "expected": "done", "held_out": False}
                   for i, kind in enumerate(("main", "edge", "error")[:PROMPTS_MAIN], start=1)]
        prompts.append({"id": PROMPTS_MAIN + 1, "type": "main", "prompt": f"{HELD_OUT_TAG} {skill}",
                        "expected": "done", "held_out": True})
        return reply({"prompts": prompts})

    def _propose(self, request: Request) -> Scripted:
        skill = skill_in(request)
        lines = [line for line in _prose_lines(skill) if len(line.strip()) > 15 and skill.count(line) == 1]
        count = skill.count(MARKER) + 1
        name = re.search(r"^name: (.+)$", skill, re.MULTILINE)
        # The skill's name in the line: one block in several skills of a batch is refused as boilerplate.
        line = f"{MARKER}{count} of {name.group(1).strip() if name else 'this skill'} before you finish."
        return reply({"target_dim": "dim9", "old": "", "anchor": lines[-1], "new": f"\n{line}",
                      "rationale": "one more counter-example", "expected_gain": 3})


def copy_skills(dest: Path, count: int) -> Path:
    """The first ``count`` corpus skills, copied (the corpus is read only)."""
    # Over 1 KB: the proposer's one-line edit must fit the 10 % edit budget (the corpus's template skill is 140 bytes).
    sources = sorted(p.parent for p in CORPUS.glob("*/*/SKILL.md") if p.stat().st_size > 1024)[:count]
    if len(sources) < count:
        sys.exit(f"the corpus at {CORPUS} holds {len(sources)} skills; asked for {count}")
    for source in sources:
        shutil.copytree(source, dest / source.name)
    return dest


def task_runs() -> int:
    """Task runs the API holds so far (the client has no count_task_runs; the REST route does)."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return int(client.request("POST", "/task_runs/count", json={}).json())


def _serve(latency: float, conn) -> None:
    """The LLM server's process: replies until told to stop, then sends back what it saw."""
    responder = LatencyResponder(latency)
    with ScriptedOpenAI() as server:
        server.responder = responder
        conn.send(server.base_url)
        conn.recv()
        conn.send({"kinds": responder.kinds, "by_round": dict(responder.by_round), "calls": len(server.chat_requests()),
                   "timeline": [(r.at, kind_of(r)) for r in server.chat_requests()]})


def llm_server(latency: float):
    """The scripted models in a process of their own (benchmarks/shared.py)."""
    return server_process(_serve, latency)


def run_once(skills: int, rounds: int, concurrency: int, latency: float, wave: dict[int, float] | None = None) -> dict:
    """One full-mode optimization through the real flow; wall time, critical path (``wave``: seconds a wave of each
    width takes, from ``wave_times``; L when not given) and what the server saw."""
    from flows.optimize import optimize_skills

    with tempfile.TemporaryDirectory(prefix="luban-loop-") as scratch, llm_server(latency) as (base_url, seen):
        skills_dir = copy_skills(Path(scratch) / "skills", skills)
        os.environ.update({"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-luban-bench-0000"})
        tasks_before = task_runs()
        started_at, start = time.time(), time.perf_counter()
        result = optimize_skills(skills_dir=str(skills_dir), mode="full", approval="auto", init_git=True, max_rounds=rounds,
                                 llm={"judge_model": "judge-a", "target_model": "target-m", "editor_model": "editor-e",
                                      "max_concurrency": concurrency, "max_retries": 0, "max_llm_calls": 100_000,
                                      "max_tokens": 10**9})
        wall = time.perf_counter() - start
        task_count = task_runs() - tasks_before
    kept = sum(o["kept"] for o in result["skills"].values())
    if kept != skills * rounds:
        sys.exit(f"expected every round to keep its edit ({skills} x {rounds}), got {kept}: {result['skills']}")
    steps = full_run_steps(skills, rounds, PROMPTS_MAIN, PROMPTS_HELD_OUT)
    widths = wave_widths(steps, concurrency)
    critical = sum(count * (wave or {}).get(width, latency) for width, count in widths.items())
    return {"wall": wall, "critical": critical, "critical_at_latency": sum(widths.values()) * latency,
            "waves": sum(widths.values()), "kinds": Counter(seen["kinds"]),
            "by_round": seen["by_round"], "calls": seen["calls"], "model_calls": sum(s.calls for s in steps),
            "task_runs": task_count, "timeline": [(at - started_at, kind) for at, kind in seen["timeline"]]}


def wave_times(latency: float, widths: set[int], waves: int = 12) -> dict[int, float]:
    """How long a wave of k calls side by side takes on this loopback, with the bare openai client and nothing else.

    A call costs its latency L plus the HTTP round trip (the openai client and the scripted server, both Python:
    about 5 ms alone here, more when k calls share the two cores). That is part of the call, not of Luban, so
    the critical path counts each wave at the measured length for its width (median of ``waves``, after one
    wave that opens the connections) rather than at L alone; the report shows both.
    """
    from openai import OpenAI

    skill = sorted(CORPUS.glob("*/*/SKILL.md"))[0].read_text(encoding="utf-8")
    messages = [{"role": "system", "content": f"You have this skill loaded. Follow it when it applies.\n\n{skill}"},
                {"role": "user", "content": "use the skill on case 1"}]
    times = {}
    with llm_server(latency) as (base_url, _), ThreadPoolExecutor(max(widths)) as pool:
        client = OpenAI(base_url=base_url, api_key="sk-luban-bench-0000", max_retries=0)

        def wave(width: int) -> float:
            start = time.perf_counter()
            list(pool.map(lambda _: client.chat.completions.create(model="target-m", messages=messages), range(width)))
            return time.perf_counter() - start

        wave(max(widths))
        for width in sorted(widths):
            times[width] = statistics.median(wave(width) for _ in range(waves))
    return times


def prefect_task_overhead(count: int = 200) -> float:
    """Seconds a trivial task run costs over a plain call, timed inside one flow against the same API."""
    from prefect import flow, task

    @task
    def nothing(index: int) -> int:
        return index

    @flow
    def timed(as_tasks: bool) -> float:
        start = time.perf_counter()
        for index in range(count):
            nothing(index) if as_tasks else nothing.fn(index)
        return time.perf_counter() - start

    timed(True)  # the first task run of a process loads and registers
    return (timed(True) - timed(False)) / count


def per_round(by_round: dict[tuple[str, int], Counter]) -> tuple[dict[str, float], bool]:
    rounds = [counts for (_, number), counts in by_round.items() if number >= 1]
    mean = {kind: sum(c[kind] for c in rounds) / len(rounds) for kind in MINIMUM_PER_ROUND}
    return mean, all(all(c[k] == v for k, v in MINIMUM_PER_ROUND.items()) for c in rounds)


def report_main(outcome: dict, args, wave: dict[int, float], overhead: float) -> None:
    ratio = outcome["wall"] / outcome["critical"]
    print(f"\nN={args.skills} skills x R={args.rounds} rounds, concurrency {args.concurrency}, L={args.latency * 1000:.0f} ms")
    trips = ", ".join(f"{width}: +{(seconds - args.latency) * 1000:.1f}" for width, seconds in sorted(wave.items()))
    print(f"  wall {outcome['wall']:.1f} s, critical path {outcome['critical']:.1f} s: {outcome['waves']} waves, each L plus "
          f"the round trip measured for its width (calls side by side: ms) {trips}")
    print(f"  wall/critical_path {ratio:.3f}   ({'meets' if ratio <= TARGET else 'MISSES'} the <= {TARGET} target)")
    print(f"  (counting each wave at L alone, {outcome['critical_at_latency']:.1f} s: "
          f"{outcome['wall'] / outcome['critical_at_latency']:.3f})")
    print(f"  LLM calls {outcome['calls']} (the design's minimum for this run: {outcome['model_calls']})")
    kinds = outcome["kinds"]
    mean, minimal = per_round(outcome["by_round"])
    shown = ", ".join(f"{kind} {value:g}" for kind, value in mean.items())
    print(f"  calls per round: {shown}  ({'the minimum in every round' if minimal else 'ABOVE the minimum in some round'})")
    judges = args.skills * (BASELINE_JUDGES + args.rounds * (2 + FRESH_JUDGES))
    print(f"  judge calls: {kinds['judge']} (the minimum: {judges}, each round's candidate and incumbent decided at the "
          "first look)")
    print(f"  baseline cache: {kinds['grade']} graded pairs, {kinds['baseline']} baseline runs -> "
          f"{kinds['grade'] - kinds['baseline']} calls saved ({(kinds['grade'] - kinds['baseline']) / kinds['grade']:.0%})")
    spent = outcome["task_runs"] * overhead
    print(f"  Prefect: {overhead * 1000:.1f} ms per task run x {outcome['task_runs']} task runs = {spent:.1f} s "
          f"({spent / outcome['wall']:.1%} of the wall)")


def report_growth(latency: float, rounds: int, sizes: list[int], levels: list[int]) -> None:
    steps = full_run_steps(max(sizes), rounds, PROMPTS_MAIN, PROMPTS_HELD_OUT)
    wave = {level: wave_times(latency, set(wave_widths(steps, level))) for level in levels}
    print(f"\nGrowth with N (R={rounds}, L={latency * 1000:.0f} ms): wall s / critical path s (wall/critical_path)")
    print("  N  " + "".join(f"{'concurrency ' + str(c):>26}" for c in levels))
    overheads: dict[int, list[float]] = {level: [] for level in levels}
    for size in sizes:
        cells = []
        for level in levels:
            outcome = run_once(size, rounds, level, latency, wave[level])
            overheads[level].append(outcome["wall"] - outcome["critical"])
            cells.append(f"{outcome['wall']:7.1f} / {outcome['critical']:5.1f} ({outcome['wall'] / outcome['critical']:.2f})")
        print(f"  {size:<3}" + "".join(f"{cell:>26}" for cell in cells))
    if len(sizes) > 1:
        print("  wall - critical path = fixed + per skill x N (least squares):")
        for level in levels:
            per_skill, fixed = numpy.polyfit(sizes, overheads[level], 1)
            print(f"    concurrency {level:>2}: {fixed:5.2f} s fixed + {per_skill:5.2f} s per skill "
                  f"(its {rounds} rounds, baseline and held-out gate)")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--latency", type=float, default=0.2, help="seconds the server waits before each reply")
    options.add_argument("--skills", type=int, default=8)
    options.add_argument("--rounds", type=int, default=3)
    options.add_argument("--concurrency", type=int, default=4)
    options.add_argument("--growth", default="1,2,4", help="skill counts for the growth table ('' to skip)")
    options.add_argument("--growth-latency", type=float, default=0.1)
    args = options.parse_args()
    from prefect.testing.utilities import prefect_test_harness

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; skills copied from {CORPUS}")
    with prefect_test_harness(server_startup_timeout=120):
        warm = run_once(1, 1, args.concurrency, args.latency)  # as a batch worker is after its first skill
        print(f"\nwarm-up run (1 skill, 1 round; imports git, matplotlib and the flow code once): "
              f"{warm['wall']:.1f} s; not counted below")
        steps = full_run_steps(args.skills, args.rounds, PROMPTS_MAIN, PROMPTS_HELD_OUT)
        wave = wave_times(args.latency, set(wave_widths(steps, args.concurrency)))
        main_run = run_once(args.skills, args.rounds, args.concurrency, args.latency, wave)
        # Timed after the run: its 600 task runs leave the API server seconds of events to write, which would
        # compete with the run for this machine's cores.
        report_main(main_run, args, wave, prefect_task_overhead())
        if args.growth:
            report_growth(args.growth_latency, args.rounds, [int(n) for n in args.growth.split(",")], [1, 4, 16])


if __name__ == "__main__":
    main()
