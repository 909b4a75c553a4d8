"""Where should `similar_description` draw its line? Pairs of real skills that are different skills, against copies
of each real description edited the ways a near-duplicate skill is made.

For the SIMILAR_AT threshold of scoring/library.py: it should flag no pair of distinct real skills and most edited
copies. Prints, for the distinct pairs, how many it flags and the most alike ones (to be read), and for each kind of
edit how many copies it flags and the least alike copy.

    .venv/bin/python benchmarks/description_collisions.py [--seed 5]

Reads the public corpus (LUBAN_CORPUS, else ../shared/corpus) when it is there, else this project's own examples.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scoring.library import SIMILAR_AT, similarity  # noqa: E402 - after the path is set

CORPUS = Path(os.environ.get("LUBAN_CORPUS", ROOT.parent / "shared" / "corpus"))


def descriptions() -> dict[str, str]:
    files = sorted(CORPUS.rglob("SKILL.md")) if CORPUS.is_dir() else sorted((ROOT / "skills").glob("*/SKILL.md"))
    out = {}
    for path in files:
        front = yaml.safe_load(path.read_text(encoding="utf-8").split("---", 2)[1]) or {}
        if isinstance(front.get("description"), str):
            out[str(front.get("name") or path.parent.name)] = front["description"]
    return out


def generated_descriptions(seed: int) -> list[str]:
    import tempfile

    from tests.support.generated_skills import write_generated

    with tempfile.TemporaryDirectory() as scratch:
        root = write_generated(Path(scratch), seed=seed)
        return [yaml.safe_load(p.read_text(encoding="utf-8").split("---", 2)[1])["description"]
                for p in sorted(root.rglob("SKILL.md"))]


def edits(rng: random.Random, vocabulary: list[str]) -> dict[str, Callable[[str], str]]:
    """Ways one skill's description becomes another's: words swapped (characters, for CJK), sentences reordered,
    the end cut, a sentence appended."""

    def swap(fraction: float) -> Callable[[str], str]:
        def edit(text: str) -> str:
            units, join = (list(text), "".join) if not text.isascii() else (text.split(), " ".join)
            pool = [c for c in "".join(vocabulary) if not c.isascii()] if not text.isascii() else vocabulary
            return join([rng.choice(pool) if rng.random() < fraction else unit for unit in units])
        return edit

    def reorder(text: str) -> str:
        return " ".join(reversed([s for s in re.split(r"(?<=[.!?。])\s*", text.strip()) if s]))

    def cut(text: str) -> str:
        units, join = (list(text), "".join) if not text.isascii() else (text.split(), " ".join)
        return join(units[: max(3, int(len(units) * 0.7))])

    return {"10 % of words swapped": swap(0.1), "20 % of words swapped": swap(0.2), "30 % of words swapped": swap(0.3),
            "sentences reordered": reorder, "last 30 % cut": cut,
            "a sentence appended": lambda text: text + " Also use it for release notes and changelog summaries."}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=5)
    seed = parser.parse_args().seed
    found = descriptions()
    print(f"{len(found)} descriptions from {CORPUS if CORPUS.is_dir() else ROOT / 'skills'}; threshold {SIMILAR_AT:.0f}")
    pairs = sorted(((similarity(a, b), x, y) for (x, a), (y, b) in itertools.combinations(found.items(), 2)), reverse=True)
    flagged = [p for p in pairs if p[0] >= SIMILAR_AT]
    print(f"distinct skills: {len(flagged)} of {len(pairs)} pairs flagged; the most alike:")
    for alike, x, y in pairs[:5]:
        print(f"  {alike:5.1f}  {x} ~ {y}")
    generated = generated_descriptions(seed)
    pairs = [similarity(a, b) for a, b in itertools.combinations(generated, 2)]
    print(f"generated skills (tests/support/generated_skills.py, seed {seed}: sentences from a 20-word vocabulary, one "
          f"trigger clause): {sum(p >= SIMILAR_AT for p in pairs)} of {len(pairs)} pairs flagged, most alike {max(pairs):.1f}")
    rng = random.Random(seed)
    vocabulary = [w for text in found.values() for w in text.split()]
    for name, edit in edits(rng, vocabulary).items():
        scores = [similarity(text, edit(text)) for text in found.values()]
        print(f"{name:24} {sum(s >= SIMILAR_AT for s in scores):3d} of {len(scores)} copies flagged "
              f"(least alike {min(scores):5.1f}, median {statistics.median(scores):5.1f})")


if __name__ == "__main__":
    main()
