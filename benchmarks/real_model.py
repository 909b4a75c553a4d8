"""Luban against a real model server: calls, tokens and wall time per decision, and wall time against the server's own.

Usage (after `make real-model`, which `make test` runs): make bench-real
    or: .venv/bin/python benchmarks/real_model.py [--mode quick] [--rounds 2] [--skills api-changelog,pr-review]

llama-cpp-python's server, serving SmolLM2-135M-Instruct on 127.0.0.1 (one
request at a time, as it is built), and the real `luban optimize` as a user runs
it, with default settings, on copies of the shipped examples. Printed: the run's
LLM calls, tokens and wall time, per decision (a keep or a revert) and per
round; the server's own time for those calls — the sum of llama.cpp's "total
time" for each request it served, from its log — and wall time over it (target
≤ 1.2×: what Luban adds around the model, with the model the bottleneck). A 135M
model is no judge of quality: this measures the protocol's cost, not a score.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.llama_server import environment, llama_cpp_python  # noqa: E402 - after the sys.path set-up
from workspace.results_tsv import ResultsFile  # noqa: E402

TOTAL_TIME = re.compile(r"total time =\s+([\d.]+) ms")


def server_seconds(log: str) -> float:
    """The server's own time for every request it served: llama.cpp's per-request 'total time' lines."""
    return sum(float(ms) for ms in TOTAL_TIME.findall(log)) / 1000


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--mode", default="quick", choices=("quick", "full"),
                         help="quick (default): no consumer gate, so a 135M target model still gets rounds")
    options.add_argument("--rounds", type=int, default=2)
    options.add_argument("--skills", default="api-changelog,pr-review")
    args = options.parse_args()
    skills = args.skills.split(",")
    with tempfile.TemporaryDirectory(prefix="luban-real-") as scratch:
        work = Path(scratch) / "skills"
        for skill in skills:
            shutil.copytree(ROOT / "skills" / skill, work / skill)
        with llama_cpp_python(Path(scratch)) as server:
            before = server_seconds(server.log_text())
            env = environment(server, PREFECT_HOME=str(Path(scratch) / "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false")
            command = [str(Path(sys.executable).parent / "luban"), "optimize", *skills, "--skills-dir", str(work),
                       "--mode", args.mode, "--approval", "auto", "--max-rounds", str(args.rounds), "--init-git"]
            started = time.perf_counter()
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - started
            served = server_seconds(server.log_text()) - before
        if done.returncode != 0:
            raise SystemExit(f"luban optimize failed ({done.returncode}):\n{done.stderr[-3000:]}")
        run = json.loads(done.stdout)
        rows = [r for s in skills for r in ResultsFile(Path(scratch) / "luban-workspace" / args.mode / s / "results.tsv").rows()]
    report(run, rows, wall, served, args)


def report(run: dict, rows: list, wall: float, served: float, args: argparse.Namespace) -> None:
    usage = run["usage"]
    decisions = [r for r in rows if r.status in ("keep", "revert")]
    rounds = [r for r in rows if r.round > 0]
    tokens = usage["tokens_in"] + usage["tokens_out"]
    print(f"llama-cpp-python + SmolLM2-135M, {os.cpu_count()} cores; luban optimize --mode {args.mode} --max-rounds "
          f"{args.rounds} on {args.skills}; stopped: {run['stopped']}")
    print(f"  calls {usage['calls']}, tokens {tokens} ({usage['tokens_out']} out), wall {wall:.0f} s, "
          f"server's own time {served:.0f} s: wall / server = {wall / served:.2f} (target ≤ 1.2)" if served else
          "  the server logged no request times")
    for name, count in (("decision", len(decisions)), ("round", len(rounds))):
        if count:
            own = sum(r.llm_calls or 0 for r in decisions) / len(decisions) if name == "decision" and decisions else None
            print(f"  per {name} ({count}): {usage['calls'] / count:.1f} calls, {tokens / count:.0f} tokens, "
                  f"{wall / count:.0f} s" + (f"; the decision's own calls {own:.1f}" if own is not None else ""))
    print(f"  fallbacks: {run['fallbacks']}")
    print(f"  structured output: {run['server'].get('dialects')}; failed calls {usage['failed']}, "
          f"replies cut at their cap {usage['truncated']}, over it {usage['over_cap']}")


if __name__ == "__main__":
    main()
