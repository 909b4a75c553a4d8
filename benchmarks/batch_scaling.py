"""One batch on several worker slots (``--parallel W``): wall time against the parallel critical path.

Usage (from a clean clone): make bench-batch
    or: .venv/bin/python benchmarks/batch_scaling.py [--latency 0.2] [--sizes 8,32,64] [--workers 1,2,4]

The real `optimize-skills` flow runs in full mode under a real Prefect API (the test harness on 127.0.0.1)
against the loopback model of loop_overhead.py (every reply after L seconds; every round keeps its edit), on
generated skills (tests/support/generated_skills.py: no corpus needed). For each N, the run on one slot gives
T_skill = wall / N; the parallel critical path on W slots is N · T_skill / min(W, C), where C is how many
skills the LLM limit lets run at once (the limit on calls divided by the calls one skill keeps in flight).

Target (issue 19): wall <= 1.25 x that path at N = 64. What the ratio holds beyond the path is the batch's
serial part: Phases 0-1 (settings, mode, the baselines) and 3-6 (held-out gate, report, meta-review) take
their skills one after another, and the skills' branches are merged one at a time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Importing loop_overhead sets up what both benchmarks need before Prefect loads: a throwaway PREFECT_HOME,
# quiet logs, no API URL or model server from the environment, and the repository on sys.path.
from loop_overhead import llm_server

from tests.support.generated_skills import write_generated

TARGET = 1.25
CALLS_IN_FLIGHT_PER_SKILL = 4  # a skill's evaluation runs its judges and test prompts side by side


def phase_seconds(flow_run_name: str | None = None) -> dict[str, float]:
    """Each phase's wall seconds in the newest optimize-skills run (its phases are task runs named phase-*)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentTaskRunId
    from prefect.client.schemas.sorting import FlowRunSort

    with get_client(sync_client=True) as client:
        (newest,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_task_run_id=FlowRunFilterParentTaskRunId(is_null_=True)), sort=FlowRunSort.START_TIME_DESC, limit=1)
        from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterFlowRunId

        runs = client.read_task_runs(task_run_filter=TaskRunFilter(flow_run_id=TaskRunFilterFlowRunId(any_=[newest.id])))
    return {r.name.rsplit("-", 1)[0]: r.total_run_time.total_seconds() for r in runs if r.name.startswith("phase-")}


def run_batch(size: int, workers: int, rounds: int, latency: float, limit: int) -> tuple[float, dict[str, float]]:
    """Wall seconds of one full-mode batch of ``size`` generated skills on ``workers`` slots, and its phases'."""
    from flows.optimize import optimize_skills

    with tempfile.TemporaryDirectory(prefix="luban-batch-") as scratch, llm_server(latency) as (base_url, _seen):
        skills_dir = write_generated(Path(scratch), count=size, seed=11) / "generated"
        os.environ.update({"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-luban-bench-0000"})
        start = time.perf_counter()
        result = optimize_skills(skills_dir=str(skills_dir), mode="full", approval="auto", init_git=True,
                                 max_rounds=rounds, parallel=workers,
                                 llm={"judge_model": "judge-a", "target_model": "target-m", "editor_model": "editor-e",
                                      "max_concurrency": limit, "max_retries": 0, "max_llm_calls": 10**6,
                                      "max_tokens": 10**10})
        wall = time.perf_counter() - start
    if not isinstance(result, dict):
        sys.exit(f"the batch of {size} on {workers} slot(s) did not finish: {result}")
    return wall, phase_seconds()


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--latency", type=float, default=0.2, help="seconds the model server waits before each reply")
    options.add_argument("--sizes", default="8,32,64", help="batch sizes N")
    options.add_argument("--workers", default="1,2,4", help="worker slots W (--parallel)")
    options.add_argument("--rounds", type=int, default=2)
    options.add_argument("--limit", type=int, default=16, help="the LLM concurrency limit (calls at once)")
    args = options.parse_args()
    from prefect.testing.utilities import prefect_test_harness

    sizes, workers = [int(n) for n in args.sizes.split(",")], [int(w) for w in args.workers.split(",")]
    skills_at_once = max(1, args.limit // CALLS_IN_FLIGHT_PER_SKILL)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; L = {args.latency} s, {args.rounds} rounds, "
          f"LLM limit {args.limit} calls (C = {skills_at_once} skills at once)")
    with prefect_test_harness(server_startup_timeout=120):
        run_batch(1, 1, 1, args.latency, args.limit)  # warm-up: imports and the first flow run, not counted
        print(f"\n  {'N':>3} {'W':>3} {'wall s':>9} {'path s':>9} {'wall/path':>10}   phases (s)")
        for size in sizes:
            serial, serial_phases = run_batch(size, 1, args.rounds, args.latency, args.limit)
            per_skill = serial / size
            for slots in workers:
                wall, phases = (serial, serial_phases) if slots == 1 else run_batch(size, slots, args.rounds, args.latency,
                                                                                     args.limit)
                path = size * per_skill / min(slots, skills_at_once)
                verdict = "" if size != max(sizes) or slots == 1 else ("  within target" if wall / path <= TARGET
                                                                         else f"  above the {TARGET} target")
                spent = "  ".join(f"{name.removeprefix('phase-')} {seconds:.1f}" for name, seconds in sorted(phases.items()))
                print(f"  {size:>3} {slots:>3} {wall:>9.1f} {path:>9.1f} {wall / path:>10.2f}   {spent}{verdict}")


if __name__ == "__main__":
    main()
