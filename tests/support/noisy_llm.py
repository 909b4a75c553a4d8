"""Judges with noise: each call scores a text's true quality plus N(0, σ), reproducibly.

The k-th judge call on a given text gets the k-th draw of a random stream seeded
by that text, so a run's samples are the same whatever order concurrent calls
arrive in. The editor proposes what a test plants: a sentence, appended, whose
true effect on one dimension the responder knows (``plant``).
"""

from __future__ import annotations

import hashlib
import random
import re
import threading

from tests.support.openai_server import Request, Scripted, reply
from tests.support.scripted_llm import LubanResponder, a_quote, skill_in

JUDGED = ("dim2", "dim3", "dim5", "dim6")


class NoisyJudges(LubanResponder):
    def __init__(self, sigma: float, base: dict[str, float] | None = None, seed: int = 1):
        super().__init__()
        self.sigma, self.seed = sigma, seed
        self.base = base or {"dim2": 6.0, "dim3": 5.0, "dim5": 6.0, "dim6": 7.0}
        self.planted: list[tuple[str, str, float]] = []  # (sentence, dimension, true effect), proposed in turn
        self._streams: dict[str, random.Random] = {}
        self._noise_lock = threading.Lock()

    def plant(self, sentence: str, dim: str, effect: float) -> None:
        self.planted.append((sentence, dim, effect))

    def quality(self, text: str) -> dict[str, float]:
        quality = dict(self.base)
        for sentence, dim, effect in self.planted:
            if sentence in text and dim in quality:  # a rule dimension (dim4, dim9) is the rules' to score
                quality[dim] += effect
        return quality

    def _noise(self, text: str) -> float:
        with self._noise_lock:
            key = hashlib.sha256(text.encode()).hexdigest()
            stream = self._streams.setdefault(key, random.Random(f"{self.seed}-{key}"))
            return stream.gauss(0, self.sigma)

    def _judge(self, request: Request) -> Scripted:
        skill = skill_in(request)
        quality = self.quality(skill)
        dims = {d: {"score": round(min(10.0, max(1.0, quality[d] + self._noise(skill))), 2), "rationale": "noisy",
                    "quotes": [a_quote(skill)]} for d in JUDGED}
        return reply({"dims": dims, "safety_red_line": False, "safety_reason": ""})

    def _propose(self, request: Request) -> Scripted:
        skill = skill_in(request)
        waiting = [(s, d) for s, d, _ in self.planted if s not in skill and not self._rejected(s, request)]
        if not waiting:
            return reply({"target_dim": "dim5", "old": "", "new": "", "rationale": "nothing left"})
        sentence, dim = waiting[0]
        return reply({"target_dim": dim, "old": "", "anchor": "", "new": f"\n\n{sentence}\n", "rationale": sentence[:40],
                      "expected_gain": 1.0})

    @staticmethod
    def _rejected(sentence: str, request: Request) -> bool:
        """Whether the proposer's prompt lists this sentence among the rejected edits (so it is not proposed again)."""
        user = request.body["messages"][1]["content"]
        listed = user.split("Rejected before (do not repeat):", 1)[1] if "Rejected before" in user else ""
        return sentence[:60] in re.sub(r"\s+", " ", listed)
