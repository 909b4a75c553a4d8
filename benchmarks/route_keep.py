"""The routing keep rule on loopback worlds whose truth is known: how often it keeps a description edit that does not
help, and how often one that does.

Usage (from a clean clone): .venv/bin/python benchmarks/route_keep.py [--decisions 240] [--runs 3] [--seed 11]

Each world is a library of ``--skills`` skills with descriptions of ten words each; its users' requests use one
word of their skill's description, one of another skill's, and a topic word no description has yet, and some
requests are for no skill. The router is tests/support/routing_world.py's affinity router over the real `openai`
client and HTTP on 127.0.0.1: it reads the listing out of its system message and picks a skill, or none, from a
softmax over the words each description shares with the request. Every probability is known, so every edit's true
effect is: the mean, over the queries the round measures on, of the change in the probability the router is right.

Three kinds of edit, one per decision, to one skill's description:
- null: the same words in another order — a true effect of exactly 0;
- harmful: two of its words replaced by words of no request — a true effect below 0;
- helpful: its topic word added — a true effect above 0.

Every decision is the rounds' own (`flows.route.round_records.concerned`, `scoring.route_keep.decide`): a fresh
routing of the train queries with each library, ``--runs`` runs each. Printed with 95 % Wilson intervals: false keeps
(null and harmful edits kept), true keeps (helpful edits kept), and keeps by the size of the true effect.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(1, str(ROOT))

from shared import rate  # noqa: E402 - after the sys.path set-up above

from flows.route.library import Library, library_of  # noqa: E402 - as above
from flows.route.measure import route_all  # noqa: E402 - as above
from flows.route.round_records import concerned  # noqa: E402 - as above
from judges.llm import LLMClient  # noqa: E402 - as above
from judges.settings import Secret, Settings  # noqa: E402 - as above
from scoring.route_keep import decide  # noqa: E402 - as above
from scoring.route_problems import RoutingProblem  # noqa: E402 - as above
from scoring.route_queries import NONE, Kind, RouteQuery, Split  # noqa: E402 - as above
from tests.support.openai_server import ScriptedOpenAI  # noqa: E402 - as above
from tests.support.routing_world import AffinityRouter, listing_in  # noqa: E402 - as above
from workspace.skill_source import SkillSource  # noqa: E402 - as above

VOCABULARY = [f"w{n:03d}" for n in range(600)]
KINDS = ("null", "harmful", "helpful")


def world(rng: random.Random, skills: int, per_skill: int) -> tuple[dict[str, list[str]], list[RouteQuery]]:
    words = rng.sample(VOCABULARY, skills * 10)
    descriptions = {f"skill-{n}": words[n * 10:(n + 1) * 10] for n in range(skills)}
    queries = []
    for name, own in descriptions.items():
        others = [w for other, theirs in descriptions.items() if other != name for w in theirs]
        for k in range(per_skill):
            text = f"{rng.choice(own)} {rng.choice(others)} topic{name[6:]} request{k}x{name[6:]}"
            queries.append(RouteQuery(name, text, True, Kind.EXPLICIT))
    queries += [RouteQuery("skill-0", f"nothing{k} here{k} at{k} all{k}", False, Kind.NONE, NONE) for k in range(6)]
    return descriptions, queries


def library(descriptions: dict[str, list[str]]) -> Library:
    sources = [SkillSource(name, f"{name}/SKILL.md", data=f"---\nname: {name}\ndescription: {' '.join(words)}\n---\n"
                           f"\n# {name}\n".encode()) for name, words in descriptions.items()]
    return library_of(sources, "benchmark", "agent-skills", "unknown")  # no budget: the truth is the whole listing


def edited(descriptions: dict[str, list[str]], target: str, kind: str, rng: random.Random) -> dict[str, list[str]]:
    out = {name: list(words) for name, words in descriptions.items()}
    if kind == "null":
        rng.shuffle(out[target])
    elif kind == "harmful":
        out[target] = [*out[target][2:], f"unused{rng.randrange(10**6)}", f"unused{rng.randrange(10**6)}"]
    else:
        out[target] = [*out[target], f"topic{target[6:]}"]
    return out


def true_effect(router: AffinityRouter, before: Library, after: Library, queries: list[RouteQuery]) -> float:
    def right(lib: Library, query: RouteQuery) -> float:
        return router.probabilities(listing_in(lib.listing.text), query.text).get(str(query.expected), 0.0)

    return sum(right(after, q) - right(before, q) for q in queries) / len(queries)


def one_decision(client: LLMClient, router: AffinityRouter, rng: random.Random, kind: str, runs: int,
                 skills: int, per_skill: int) -> tuple[bool, float]:
    descriptions, queries = world(rng, skills, per_skill)
    train = [q for q in queries if q.split is Split.TRAIN]
    target = rng.choice(sorted({q.owner for q in train if q.should_trigger}))  # a skill with train queries to decide on
    before, after = library(descriptions), library(edited(descriptions, target, kind, rng))
    near = concerned(train, RoutingProblem("low_recall", target, None, 1.0, ()))
    base = route_all(client, ("router",), before, train, runs)
    candidate = route_all(client, ("router",), after, train, runs)
    decision = decide("router", train, base.picks, candidate.picks, before.names, near)
    return decision.kept, true_effect(router, before, after, near)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decisions", type=int, default=240, help="decisions of each kind")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skills", type=int, default=8)
    parser.add_argument("--per-skill", type=int, default=7)
    parser.add_argument("--beta", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    router = AffinityRouter(beta=args.beta, none_score=1.0, seed=args.seed)
    started = time.monotonic()
    outcomes: dict[str, list[tuple[bool, float]]] = {kind: [] for kind in KINDS}
    with ScriptedOpenAI() as server:
        server.responder = router
        settings = Settings(api_key=Secret("sk-benchmark"), base_url=server.base_url, target_model="router",
                            max_llm_calls=10**9, max_tokens=10**12, max_retries=0, max_concurrency=8)
        client = LLMClient(settings)
        rng = random.Random(args.seed)
        for n in range(args.decisions):
            for kind in KINDS:
                outcomes[kind].append(one_decision(client, router, rng, kind, args.runs, args.skills, args.per_skill))
            if (n + 1) % 40 == 0:
                print(f"  {n + 1} × {len(KINDS)} decisions, {time.monotonic() - started:.0f} s", file=sys.stderr)
    report(outcomes, args, time.monotonic() - started)


def report(outcomes: dict[str, list[tuple[bool, float]]], args: argparse.Namespace, seconds: float) -> None:
    wrong = [kept for kind in ("null", "harmful") for kept, _ in outcomes[kind]]
    print(f"routing keep rule, {args.skills} skills × {args.per_skill} requests, {args.runs} runs a query, "
          f"beta {args.beta}, seed {args.seed}: {seconds:.0f} s")
    print(f"false keeps (null and harmful edits kept): {rate(sum(wrong), len(wrong))}")
    for kind in KINDS:
        kept = [k for k, _ in outcomes[kind]]
        effects = [e for _, e in outcomes[kind]]
        print(f"  {kind:8s} kept {rate(sum(kept), len(kept))}; true effect mean {sum(effects) / len(effects):+.3f}")
    helpful = outcomes["helpful"]
    print(f"true keeps (helpful edits kept): {rate(sum(k for k, _ in helpful), len(helpful))}")
    for low, high in ((0.0, 0.15), (0.15, 0.3), (0.3, 1.0)):
        bucket = [k for k, e in helpful if low < e <= high]
        print(f"  true effect in ({low:.2f}, {high:.2f}]: kept {rate(sum(bucket), len(bucket))}")


if __name__ == "__main__":
    main()
