"""Deterministic scorer throughput against the Markdown parse floor and the skills-ref peer.

Usage (from a clean clone): make bench-score
    or: .venv/bin/python benchmarks/score_throughput.py [--count 1000] [--repeats 5]

In one process, over the corpus (../shared/corpus, read only) and over
``--count`` synthetic skills of corpus-like sizes, it times:
  parse floor   markdown-it-py's commonmark preset parsing each decoded file, nothing else;
  luban scorer  scoring.score_skill on the file's bytes (decode, one parse, every rule);
  skills-ref    the reference library's validate, in process (frontmatter parse + checks).
The engines take turns over blocks of files, ``--repeats`` passes over the set, timed in
CPU seconds; rates and ratios are over all the passes.
Then, as CI runs it: `luban score` over the synthetic set in a fresh process
pinned to one core, start-up included, and `agentskills validate` (the
skills-ref CLI, one skill per process) next to `luban score` on the corpus.
Last, whether dim1's name and description checks agree with skills-ref.

Targets (issue #8): scorer/parse_floor >= 0.80; `luban score` on 1 000 skills < 10 s.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from markdown_it import MarkdownIt  # noqa: E402 - after the sys.path and environment set-up above

from scoring import score_skill  # noqa: E402 - after the sys.path and environment set-up above
from scoring.document import parse  # noqa: E402 - after the sys.path and environment set-up above
from workspace.skill_source import SkillSource, read_skill  # noqa: E402 - after the sys.path and environment set-up above

try:
    import skills_ref_agreement as agreement
except ImportError as err:  # pragma: no cover - a message for the reader
    sys.exit(f"{err}: the skills-ref peer is not installed; run `make bench-score`, "
             "which installs the 'bench' extra (pip install -e '.[bench]')")
from synthetic_skills import corpus_profile, write_skills  # noqa: E402 - after the sys.path and environment set-up above

CORPUS = Path(os.environ.get("LUBAN_CORPUS", ROOT.parent / "shared" / "corpus"))  # as the tests read it
SCORER_FLOOR_TARGET, CLI_SECONDS_TARGET = 0.80, 10.0
BIN = Path(sys.executable).parent


def timed_turns(engines: dict[str, Callable[[int], None]], count: int, repeats: int) -> dict[str, list[float]]:
    """CPU seconds of each engine in each of ``repeats`` passes, the engines taking turns over blocks of files.

    On this shared VM the same whole pass swung by up to 40 % from one pass to the
    next, so whole passes taken in turn gave ratios from 0.64 to 0.96 within one run:
    turns tens of ms apart put the engines under the same conditions. What else a
    turn does to the result is spread evenly or kept as `luban score` has it:
    - an engine that parses a text another has just parsed runs up to 15 % faster
      (the CPU's predictors have learned that text), so the engines work on files a
      fixed stride apart, each still reading every file once a pass;
    - `luban score` runs the scorer file after file with its code warm, and one-file
      turns evicted each engine's code between files, costing the scorer (markdown-it,
      libyaml and the rules) 2-4 % against the floor depending on the engines' order;
      so a turn is a block of ``count // 25`` files (40 of 1 000, about 60 ms);
    - the order rotates by one each turn, so each engine takes every place equally often.
    A control (the floor against a second copy of itself) reads 0.96-1.01 this way.
    CPU time, not wall time: time given to other guests is not ours.
    """
    clock = time.process_time
    seconds: dict[str, list[float]] = {name: [] for name in engines}
    slots = list(enumerate(engines.items()))
    stride, block = max(1, count // len(slots)), max(1, count // 25)
    for _ in range(repeats):
        gc.collect()
        spent = dict.fromkeys(engines, 0.0)
        for turn, first in enumerate(range(0, count, block)):
            rotated = turn % len(slots)
            for slot, (name, work) in slots[rotated:] + slots[:rotated]:
                start = clock()
                for index in range(first, min(first + block, count)):
                    work((index + slot * stride) % count)
                spent[name] += clock() - start
        for name, total in spent.items():
            seconds[name].append(total)
    return seconds


def ratio(seconds: dict[str, list[float]], numerator: str, denominator: str) -> float:
    """Throughput ratio over all the passes (the engines shared every file's conditions)."""
    return sum(seconds[denominator]) / sum(seconds[numerator])


def engines(sources: list[SkillSource]) -> dict[str, Callable[[int], None]]:
    """The ways to process the same in-memory file, by its index: the three compared, and the scorer's parse alone.

    The scorer's parse is scoring/document.py's ``parse``: markdown-it-py's commonmark preset
    less the rules whose work the scorer does anyway or that cannot match the file, its
    inline pass run only on blocks with inline markup, and the walk that collects headings,
    paragraphs and links. It is timed against the floor in turns of its own, so the report
    shows how much of the scorer's ratio it accounts for.

    Each result is dropped as soon as it is made, as `luban score` keeps only
    the small scores: holding 1 000 token streams would time the allocator.
    """
    parser = MarkdownIt("commonmark")
    items = [(s.data or b"", s.name, s.files, Path(s.path).parent) for s in sources]

    def parse_floor(index: int) -> None:
        parser.parse(items[index][0].decode("utf-8"))

    def scorer_parse(index: int) -> None:
        parse(items[index][0].decode("utf-8"))

    def luban_scorer(index: int) -> None:
        data, name, files, _ = items[index]
        score_skill(data, name, files)

    def skills_ref(index: int) -> None:
        data, _, _, where = items[index]
        agreement.skills_ref_errors(data.decode("utf-8"), where)

    return {"parse floor": parse_floor, "luban scorer": luban_scorer, "skills-ref": skills_ref, "trimmed parse": scorer_parse}


def measure_set(label: str, sources: list[SkillSource], repeats: int) -> None:
    megabytes = sum(len(s.data or b"") for s in sources) / 1e6
    print(f"\n{label}: {len(sources)} files, {megabytes:.2f} MB (CPU time over {repeats} passes, "
          "the engines taking turns over blocks of files)")
    print(f"  {'engine':<15}{'files/s':>10}{'MB/s':>9}{'peak MiB':>10}")
    every = engines(sources)
    work = {name: every[name] for name in ("parse floor", "luban scorer", "skills-ref")}
    seconds = timed_turns(work, len(sources), repeats)
    for name, times in seconds.items():
        mean = statistics.fmean(times)
        print(f"  {name:<15}{len(sources) / mean:>10.0f}{megabytes / mean:>9.2f}{peak_mib(work[name], len(sources)):>10.1f}")
    floor_ratio = ratio(seconds, "luban scorer", "parse floor")
    per_pass = [floor / scorer for floor, scorer in zip(seconds["parse floor"], seconds["luban scorer"], strict=False)]
    verdict = "meets" if floor_ratio >= SCORER_FLOOR_TARGET else "MISSES"
    print(f"  scorer/parse_floor {floor_ratio:.3f}   ({verdict} the >= {SCORER_FLOOR_TARGET:.2f} target; "
          f"passes {min(per_pass):.3f} - {max(per_pass):.3f})")
    trimmed = timed_turns({name: every[name] for name in ("parse floor", "trimmed parse")}, len(sources), repeats)
    print(f"  the scorer's own parse and walk (scoring/document.py) runs at "
          f"{ratio(trimmed, 'trimmed parse', 'parse floor'):.3f}x the floor's speed, in turns of its own")
    print(f"  scorer/skills_ref  {ratio(seconds, 'luban scorer', 'skills-ref'):.2f}   "
          "(skills-ref checks frontmatter only; Luban scores the whole file)")


def peak_mib(work: Callable[[int], None], count: int) -> float:
    """Peak Python heap during one pass, the inputs (already in memory) not counted."""
    gc.collect()
    tracemalloc.start()
    for index in range(count):
        work(index)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def run_pinned(command: list[str]) -> tuple[float, int, float]:
    """Wall seconds, exit status and peak RSS (MiB) of a fresh process pinned to core 0."""
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):  # 1: a gate failed, which still scored everything
        sys.exit(f"{' '.join(command)} failed ({child.returncode}): {child.stderr.read().decode()[-2000:]}")
    return seconds, child.returncode, usage.ru_maxrss / 1024


def cli_section(synthetic_dir: Path, count: int, corpus_files: list[Path]) -> None:
    print("\nAs CI runs it (fresh process, one core, start-up included)")
    seconds, _, rss = run_pinned([str(BIN / "luban"), "score", str(synthetic_dir), "--format", "json"])
    verdict = "meets" if seconds < CLI_SECONDS_TARGET else "MISSES"
    print(f"  luban score, {count} synthetic skills   {seconds:6.2f} s  peak RSS {rss:5.0f} MiB  "
          f"({verdict} the < {CLI_SECONDS_TARGET:.0f} s target)")
    corpus_seconds, _, _ = run_pinned([str(BIN / "luban"), "score", str(CORPUS), "--format", "json"])
    peer_seconds = sum(run_pinned([str(BIN / "agentskills"), "validate", str(p.parent)])[0] for p in corpus_files)
    print(f"  luban score, corpus ({len(corpus_files)} skills, one process)   {corpus_seconds:6.2f} s")
    print(f"  agentskills validate, corpus (one process per skill) {peer_seconds:6.2f} s  "
          f"-> luban/skills_ref wall {corpus_seconds / peer_seconds:.2f}")


def agreement_section(corpus_files: list[Path], scratch: Path) -> int:
    print()
    unexplained = agreement.report([v for p in corpus_files for v in agreement.compare(p)], "corpus")
    edge_files = agreement.write_edge_cases(scratch / "edge-cases")
    unexplained += agreement.report([v for p in edge_files for v in agreement.compare(p)],
                                    "crafted edge cases (one per known difference)")
    return unexplained


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--count", type=int, default=1000, help="synthetic skills to generate")
    options.add_argument("--repeats", type=int, default=7, help="passes over each set, the engines taking turns over blocks of files")
    args = options.parse_args()
    corpus_files = sorted(CORPUS.rglob("SKILL.md"))
    if not corpus_files:
        sys.exit(f"no SKILL.md under {CORPUS}; the benchmark reads the shared corpus beside the project")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; corpus {CORPUS}")
    with tempfile.TemporaryDirectory(prefix="luban-bench-") as scratch:
        synthetic = write_skills(Path(scratch) / "skills", args.count, *corpus_profile(corpus_files))
        measure_set("corpus", [read_skill(p) for p in corpus_files], args.repeats)
        measure_set("synthetic", [read_skill(p) for p in synthetic], args.repeats)
        cli_section(Path(scratch) / "skills", args.count, corpus_files)
        unexplained = agreement_section(corpus_files, Path(scratch))
    if unexplained:
        sys.exit(f"{unexplained} disagreement(s) with skills-ref have no known cause; see above")


if __name__ == "__main__":
    main()
