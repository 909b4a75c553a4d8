"""docs/rubric.md stays in step with the code: the weights, cue words and patterns it states are the ones scoring uses."""

from __future__ import annotations

import re

from scoring.frontmatter_rules import _FILLER_ENDINGS, NAME_PATTERN, TRIGGER_WORDS, WHEN_CUE
from scoring.model import DIM_NAMES, WEIGHTS
from scoring.structure_rules import CHAPTER_GROUPS, COUNTER_EXAMPLE_CUES, COUNTER_EXAMPLE_WORDS
from scoring.validation import _CODE_SPAN_PATH
from tests.conftest import REPO_ROOT

DOC = (REPO_ROOT / "docs" / "rubric.md").read_text(encoding="utf-8")


def test_the_weights_table_is_the_code_s():
    rows = re.findall(r"^\| (dim\d+) \| ([^|]+?) \| (\d+) \|", DOC, re.MULTILINE)
    assert [(d, n, int(w)) for d, n, w in rows] == [(d, DIM_NAMES[d], WEIGHTS[d]) for d in WEIGHTS]


def test_the_patterns_are_quoted_verbatim():
    for pattern in (WHEN_CUE.pattern, TRIGGER_WORDS.pattern, _CODE_SPAN_PATH.pattern, f"^{NAME_PATTERN.pattern}$"):
        assert f"`{pattern}`" in DOC, pattern


def test_every_cue_word_is_listed():
    for group, words in CHAPTER_GROUPS.items():
        assert f"  - {group}: {', '.join(words)}\n" in DOC
    for cue in (*COUNTER_EXAMPLE_CUES, *COUNTER_EXAMPLE_WORDS, *_FILLER_ENDINGS):
        assert f"`{cue}`" in DOC, cue
