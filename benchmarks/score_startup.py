"""How long `luban score` takes to start and score one skill, as CI pays it.

Runs the real console entry point in fresh processes and prints the median
wall time next to bare `python -c pass` (the interpreter floor), so the ratio
shows what Luban adds. Usage: .venv/bin/python benchmarks/score_startup.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 9


def median_seconds(command: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    skill = ROOT / "skills" / "pr-review"
    floor = median_seconds([sys.executable, "-c", "pass"])
    score = median_seconds([sys.executable, "-m", "flows.cli", "score", str(skill), "--json"])
    print(f"python -c pass        {floor * 1000:7.1f} ms")
    print(f"luban score (1 skill) {score * 1000:7.1f} ms   target < 500 ms")
    print(f"score/interpreter     {score / floor:7.2f}x")


if __name__ == "__main__":
    main()
