"""The requests a router is tested on (pure): whose they are, where they should go, and which split reads them.

Each skill has its own set: positives it should be chosen for, near-misses it should not (drawn from its nearest
neighbours in the library, so they test the line between two skills), and requests no skill of the library is for.
A query's split is a hash of its owner and text, so it never moves: the sealed test set stays sealed however many
queries are added later, and a re-run reads the same split as the run before it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

NONE = "(none)"  # the answer "none of these skills"; not a valid skill name, so it cannot collide with one
MAX_QUERY = 2000  # characters of one query: a long task with the request buried in it fits, a pasted file does not


class Kind(StrEnum):
    AUTHOR = "author"  # the skill's own evals/triggers.json (or --eval-set)
    EXPLICIT = "explicit"  # asks for what the skill does, in its words
    IMPLICIT = "implicit"  # needs the skill without naming what it does
    BURIED = "buried"  # the need is one part of a longer task
    NEAR_MISS = "near_miss"  # close to the skill, but another skill's (or no skill's)
    NONE = "none"  # for no skill of the library


class Split(StrEnum):
    TRAIN = "train"  # the routing rounds' keep decisions read these
    VALIDATION = "validation"  # choose among kept versions, and `luban route`'s report
    TEST = "test"  # sealed: read once, by the final check of a routing run


SPLIT_SHARES = ((Split.TRAIN, 0.6), (Split.VALIDATION, 0.2), (Split.TEST, 0.2))


@dataclass(frozen=True)
class RouteQuery:
    """One request, in the set of ``owner``. ``expected`` is where it should go: a skill's name, ``NONE``, or None when
    only "not the owner" is known (an author's negative)."""

    owner: str
    text: str
    should_trigger: bool
    kind: Kind
    expected: str | None = None

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise ValueError(f"a query of {self.owner!r} is empty")
        if len(self.text) > MAX_QUERY:
            raise ValueError(f"a query of {self.owner!r} has {len(self.text)} characters; at most {MAX_QUERY}")
        if self.should_trigger and self.expected not in (None, self.owner):
            raise ValueError(f"a query that should trigger {self.owner!r} cannot be expected to go to {self.expected!r}")
        if not self.should_trigger and self.expected == self.owner:
            raise ValueError(f"a query that should not trigger {self.owner!r} cannot be expected to go to it")
        if self.should_trigger and self.expected is None:
            object.__setattr__(self, "expected", self.owner)

    @property
    def id(self) -> str:
        return hashlib.sha256(f"{self.owner}\n{self.text}".encode()).hexdigest()[:12]

    @property
    def split(self) -> Split:
        return split_of(self.owner, self.text)


def split_of(owner: str, text: str) -> Split:
    """Train, validation or test, by a hash of the owner and the text: fixed for ever, whatever else is added."""
    bucket = int(hashlib.sha256(f"split\n{owner}\n{normal(text)}".encode()).hexdigest()[:8], 16) / 0x1_0000_0000
    for split, share in SPLIT_SHARES:
        if bucket < share:
            return split
        bucket -= share
    return Split.TEST


def normal(text: str) -> str:
    """Case and white space folded: two spellings of one request are one query."""
    return " ".join(text.casefold().split())


def deduplicated(queries: Sequence[RouteQuery]) -> list[RouteQuery]:
    """The first of each (owner, request): a designer that repeats itself does not weigh a request twice."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for query in queries:
        key = (query.owner, normal(query.text))
        if key not in seen:
            seen.add(key)
            kept.append(query)
    return kept


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 2}


def nearest(descriptions: Mapping[str, str], count: int = 3) -> dict[str, tuple[str, ...]]:
    """Each skill's ``count`` nearest neighbours by their descriptions' words (Jaccard over words of 3+ letters): the
    skills a router is most likely to confuse it with, from whose side its near-misses are drawn."""
    bags = {name: words(text) for name, text in descriptions.items()}
    index: dict[str, set[str]] = {}
    for name, bag in bags.items():
        for word in bag:
            index.setdefault(word, set()).add(name)
    out = {}
    for name, bag in bags.items():
        shared: dict[str, int] = {}
        for word in bag:
            for other in index[word]:
                if other != name:
                    shared[other] = shared.get(other, 0) + 1
        alike = sorted(shared, key=lambda o: (-shared[o] / len(bag | bags[o]), o))
        out[name] = tuple(alike[:count])
    return out
