"""Routing a large library: what it costs as the library grows, and how retrieve-then-choose agrees with the whole
listing.

Usage (from a clean clone): .venv/bin/python benchmarks/route_scale.py [--sizes 100 250 500] [--runs 1]

Each library is the public corpus's skills (../shared/corpus, when present) and generated skills
(tests/support/generated_skills.py) up to the size, every skill with two requests in its own description's words.
`luban route`'s own routing (flows.route.measure.route_all) runs over the real `openai` client and HTTP on 127.0.0.1
against tests/support/routing_world.py's affinity router, once with the whole listing and once retrieve-then-choose
(``--shortlist`` skills a request). The Agent Skills listing has no budget, so both modes see whole descriptions and
their agreement is about the choice, not about a cut. Printed per size: calls and calls per query (the same at every
size: calls grow with the queries, never with pairs of skills), the listing's characters, wall time per call, and
the shortlist's recall (the share of requests whose skill it holds) and agreement with the whole listing (the share
of requests whose usual first choice is the same), with 95 % Wilson intervals.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(1, str(ROOT))

from shared import rate  # noqa: E402 - after the sys.path set-up above

from flows.route.library import Library, read_library  # noqa: E402 - as above
from flows.route.measure import agreement, route_all, shortlist_recall  # noqa: E402 - as above
from judges.llm import LLMClient  # noqa: E402 - as above
from judges.settings import Secret, Settings  # noqa: E402 - as above
from scoring.route_queries import Kind, RouteQuery, words  # noqa: E402 - as above
from tests.conftest import CORPUS  # noqa: E402 - as above
from tests.support.generated_skills import write_generated  # noqa: E402 - as above
from tests.support.openai_server import ScriptedOpenAI  # noqa: E402 - as above
from tests.support.routing_world import AffinityRouter  # noqa: E402 - as above


def build(root: Path, size: int, seed: int) -> Library:
    """``size`` skills: the corpus's first, then generated ones."""
    corpus = sorted(CORPUS.glob("*/*/SKILL.md"))[:size] if CORPUS.is_dir() else []
    for path in corpus:
        shutil.copytree(path.parent, root / "skills" / path.parent.name, dirs_exist_ok=True)
    write_generated(root / "skills", count=size - len(corpus), seed=seed)
    return read_library(root / "skills", "agent-skills", "unknown")


def requests(library: Library, rng: random.Random) -> list[RouteQuery]:
    """Two requests a skill, each in four of its description's distinctive words."""
    queries = []
    for skill in library.skills:
        own = sorted(words(skill.description) - {"use", "when", "the", "user", "says", "this", "and", "for", "with"})
        for k in range(2):
            picked = rng.sample(own, min(4, len(own))) if own else [skill.name]
            queries.append(RouteQuery(skill.name, f"{' '.join(picked)} please ({k})", True, Kind.AUTHOR))
    return queries


def one_size(client: LLMClient, server: ScriptedOpenAI, size: int, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="luban-route-scale-") as folder:
        library = build(Path(folder), size, args.seed)
    queries = requests(library, random.Random(args.seed))
    started = time.monotonic()
    full = route_all(client, ("router",), library, queries, args.runs)
    full_seconds = time.monotonic() - started
    server.requests.clear()  # the loopback server keeps every request it answered: a 500-skill listing each
    started = time.monotonic()
    short = route_all(client, ("router",), library, queries, args.runs, args.shortlist)
    short_seconds = time.monotonic() - started
    server.requests.clear()
    calls = full.cost.calls
    print(f"{len(library.skills):4d} skills, {len(queries):4d} queries × {args.runs} runs: {calls} calls "
          f"({calls / len(queries):.1f} a query), listing {len(library.listing.text):,} characters, "
          f"{1000 * full_seconds / max(calls, 1):.1f} ms a call whole, {1000 * short_seconds / max(calls, 1):.1f} ms "
          f"shortlisted")
    print(f"      shortlist of {args.shortlist}: recall {rate(*_counts(shortlist_recall(library, queries, args.shortlist)))}, "
          f"agreement with the whole listing {rate(*_counts(agreement(full, short, 'router')))}")
    whole, shortlisted = (r.of("router", library, queries).top1 for r in (full, short))
    print(f"      top-1 accuracy: whole listing {rate(*_counts(whole))}, shortlist {rate(*_counts(shortlisted))}")


def _counts(r) -> tuple[int, int]:
    return r.hits, r.out_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 250, 500])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shortlist", type=int, default=20)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    router = AffinityRouter(beta=2.0, none_score=1.0, seed=args.seed)
    with ScriptedOpenAI() as server:
        server.responder = router
        settings = Settings(api_key=Secret("sk-benchmark"), base_url=server.base_url, target_model="router",
                            max_llm_calls=10**9, max_tokens=10**12, max_retries=0, max_concurrency=8)
        client = LLMClient(settings)
        print(f"corpus: {CORPUS if CORPUS.is_dir() else 'not found (generated skills only)'}")
        for size in args.sizes:
            one_size(client, server, size, args)


if __name__ == "__main__":
    main()
