"""Retrieve-then-choose for very large libraries (pure): the few skills whose descriptions are lexically nearest a
request, so the router chooses among them instead of a listing the client's budget has cut to names.

Nearness is the sum, over the words a request shares with a skill's name and description, of each word's inverse
document frequency across the library (a word every description has says nothing; one only this skill has says
much), divided by the square root of the description's distinct words, so a long description does not win by length
alone. Ties go by name: a shortlist is the same on every run.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from scoring.route_queries import words


@dataclass(frozen=True)
class Index:
    bags: dict[str, frozenset[str]]
    idf: dict[str, float]


def index(descriptions: Mapping[str, str]) -> Index:
    bags = {name: frozenset(words(f"{name.replace('-', ' ')} {text}")) for name, text in descriptions.items()}
    seen = Counter(word for bag in bags.values() for word in bag)
    total = len(bags)
    return Index(bags, {word: math.log(1 + total / n) for word, n in seen.items()})


def shortlist(request: str, library: Index, count: int) -> tuple[str, ...]:
    """The ``count`` skills nearest ``request``, nearest first."""
    asked = words(request)
    score = {name: sum(library.idf[w] for w in asked & bag) / math.sqrt(len(bag) or 1) for name, bag in library.bags.items()}
    return tuple(sorted(score, key=lambda name: (-score[name], name))[:count])
