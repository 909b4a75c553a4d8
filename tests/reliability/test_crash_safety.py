"""SIGKILL in the middle of writing a SKILL.md and a results.tsv row: old or new, never a mix, no row lost."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from workspace.results_tsv import ResultsFile

KILLS = 25

# The child continues from whatever the last one left: rows 0..k-1 exist, so it writes
# SKILL.md version k, then row k, then version k+1, ... until it is killed.
CHILD = r"""
import sys
from pathlib import Path
from workspace.atomic import atomic_write
from workspace.results_tsv import ResultRow, ResultsFile

skill, tsv = Path(sys.argv[1]), Path(sys.argv[2])
results = ResultsFile(tsv)
results.ensure()
k = len(results.rows())
print("ready", flush=True)
while True:
    atomic_write(skill, (f"version {k}\n" + "x" * 400_000 + f"\nend {k}\n").encode())
    results.append(ResultRow(timestamp="2026-12-02T15:00:00+00:00", skill="alpha", round=k, status="keep",
                             mode="full", note="n" * 2000, new_score=float(k % 100)))
    k += 1
"""


def version_of(data: bytes) -> int:
    first, _, _rest = data.partition(b"\n")
    number = int(first.removeprefix(b"version "))
    assert data == (f"version {number}\n" + "x" * 400_000 + f"\nend {number}\n").encode(), "torn SKILL.md"
    return number


@pytest.mark.slow
def test_sigkill_at_random_instants_never_tears_a_file_or_loses_a_row(tmp_path: Path):
    skill, tsv = tmp_path / "SKILL.md", tmp_path / "results.tsv"
    rng = random.Random(20261202)
    previous_rows = 0
    for attempt in range(KILLS):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(skill), str(tsv)], cwd=REPO_ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert child.stdout is not None and child.stdout.readline() == b"ready\n", child.stderr.read() if child.stderr else ""
        time.sleep(rng.uniform(0.0, 0.25))
        child.send_signal(signal.SIGKILL)
        child.wait(10)

        results = ResultsFile(tsv)
        assert results.ensure() is None, f"attempt {attempt}: results.tsv needed a repair"
        rows = results.rows()
        assert [r.round for r in rows] == list(range(len(rows))), f"attempt {attempt}: a row was lost"
        assert len(rows) >= previous_rows
        previous_rows = len(rows)
        if skill.exists():
            # the version whose row was written last, or the next one, caught between its two writes
            assert version_of(skill.read_bytes()) in (len(rows) - 1, len(rows)), f"attempt {attempt}"
    assert previous_rows > KILLS, "the child should get real work done between kills"
