"""Route every query, several runs each, with each router model; what it cost; and the figures of each model.

The calls run ``client.concurrency`` at a time. The run's call budget (``--max-calls``) is a hard stop: past it no call
is sent, the routing so far is kept, and the stop is said — figures from part of the queries are marked partial. The
calls go run by run, and within a run the skills' queries in turn (``interleaved``), so that a routing cut short has
routed every skill about as far as the others: never the first skills listed whole and the last not at all.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from itertools import zip_longest

from flows.route.library import Library
from judges.llm import LLMClient
from judges.router import Routed, route_once
from judges.usage import BudgetExhausted
from scoring.route_figures import LibraryFigures, Pick, Rate, figures
from scoring.route_queries import RouteQuery
from scoring.shortlist import index
from scoring.shortlist import shortlist as nearest_skills


@dataclass(frozen=True)
class Cost:
    calls: int
    tokens_in: int
    tokens_out: int
    tokens_cached: int  # of tokens_in, served by the server's prompt cache
    call_seconds: float  # the calls' latencies summed
    wall_seconds: float

    def as_dict(self) -> dict[str, float | int]:
        cached = self.tokens_cached / self.tokens_in if self.tokens_in else 0.0
        return {"calls": self.calls, "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "tokens_cached": self.tokens_cached, "cached_share": round(cached, 3),
                "call_seconds": round(self.call_seconds, 2), "wall_seconds": round(self.wall_seconds, 2)}


@dataclass(frozen=True)
class Routing:
    picks: tuple[Pick, ...]
    cost: Cost
    channels: dict[str, int]  # how answers came: tool call, JSON, none readable
    raw_unreadable: tuple[tuple[str, str], ...] = ()  # (query id, the reply) for replies that named no skills
    stopped: str = ""  # why routing ended before every call was made

    @property
    def queries(self) -> int:
        """The queries routed at least once (with a cut, fewer than were planned)."""
        return len({pick.query for pick in self.picks})

    def of(self, model: str, library: Library, queries: Sequence[RouteQuery]) -> LibraryFigures:
        return figures(model, library.names, queries, self.picks)


def planned_calls(queries: int, runs: int, models: int) -> int:
    """Calls a routing takes: one per query, run and model (plus one tool probe per model, counted by the client)."""
    return queries * runs * models


def route_all(client: LLMClient, models: Sequence[str], library: Library, queries: Sequence[RouteQuery],
              runs: int, shortlist: int = 0) -> Routing:
    """Every query ``runs`` times with each model. ``shortlist``: retrieve-then-choose — each query is shown only the
    ``shortlist`` skills lexically nearest it (0: the whole listing, the same prefix for every call)."""
    names = frozenset(library.names)
    listings = listings_for(library, queries, shortlist)
    jobs = interleaved(models, queries, runs)
    started = time.monotonic()
    done: list[Routed] = []
    stopped = ""
    with ThreadPoolExecutor(max_workers=client.concurrency) as pool:
        futures = [pool.submit(route_once, client, m, listings[q.id], names, q.id, q.text, r) for m, q, r in jobs]
        _finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in futures:
            if future.cancelled() or not future.done():
                future.cancel()
        for future in futures:
            if future.cancelled():
                continue
            try:
                done.append(future.result())
            except BudgetExhausted as err:
                stopped = stopped or f"the call budget ran out after {client.usage.calls} calls: {err}"
    return _summed(done, time.monotonic() - started, stopped)


def interleaved(models: Sequence[str], queries: Sequence[RouteQuery], runs: int) -> list[tuple[str, RouteQuery, int]]:
    """Every (model, query, run) once, in the order a cut leaves fair: the first run of every query before any
    second, and within a run each skill's first query, then each one's second, and so on (queries of no skill —
    requests for none — take a turn of their own)."""
    by_skill: dict[str, list[RouteQuery]] = {}
    for query in queries:
        by_skill.setdefault(query.expected or "", []).append(query)
    turns = [q for turn in zip_longest(*by_skill.values()) for q in turn if q is not None]
    return [(m, q, r) for r in range(runs) for q in turns for m in models]


def listings_for(library: Library, queries: Sequence[RouteQuery], shortlist: int) -> dict[str, str]:
    """Query id → the listing its router sees."""
    if not shortlist:
        return {q.id: library.listing.text for q in queries}
    found = index({s.name: s.description for s in library.skills})
    rendered: dict[tuple[str, ...], str] = {}
    out = {}
    for query in queries:
        names = tuple(sorted(nearest_skills(query.text, found, shortlist)))
        out[query.id] = rendered.setdefault(names, library.listing_of(names))
    return out


def shortlist_recall(library: Library, queries: Sequence[RouteQuery], shortlist: int) -> Rate:
    """Of the queries that belong to a skill, those whose shortlist holds it: the most a shortlisted router can find."""
    found = index({s.name: s.description for s in library.skills})
    own = [q for q in queries if q.expected in set(library.names)]
    return Rate(sum(q.expected in nearest_skills(q.text, found, shortlist) for q in own), len(own))


def agreement(full: Routing, short: Routing, model: str) -> Rate:
    """Queries whose usual first choice (the most frequent over its runs; ties by name) is the same with the whole
    listing and with the shortlist, of the queries answered both ways."""
    one, other = usual_choices(full, model), usual_choices(short, model)
    both = sorted(set(one) & set(other))
    return Rate(sum(one[q] == other[q] for q in both), len(both))


def usual_choices(routing: Routing, model: str) -> dict[str, str]:
    tally: dict[str, Counter[str]] = {}
    for pick in routing.picks:
        if pick.model == model and pick.first is not None:
            tally.setdefault(pick.query, Counter())[pick.first] += 1
    return {q: min(c, key=lambda name: (-c[name], name)) for q, c in tally.items()}


def _summed(done: list[Routed], wall: float, stopped: str) -> Routing:
    channels: dict[str, int] = {}
    for routed in done:
        key = routed.channel or "no answer"
        channels[key] = channels.get(key, 0) + 1
    cost = Cost(len(done), sum(r.tokens_in for r in done), sum(r.tokens_out for r in done),
                sum(r.tokens_cached for r in done), sum(r.seconds for r in done), wall)
    raw = tuple((r.pick.query, r.raw) for r in done if r.raw)
    return Routing(tuple(r.pick for r in done), cost, channels, raw, stopped)
