"""dim4, dim7 and dim9 exactly as RUBRIC.md defines them."""

from __future__ import annotations

import re
import string
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from scoring.document import Heading
from scoring.structure_rules import (
    _NOT_ALNUM,
    CHAPTER_GROUPS,
    COUNTER_EXAMPLE_CUES,
    COUNTER_EXAMPLE_WORDS,
    LEADING_NUMBERING,
    chapter_groups,
    find_cues,
    normalize,
)
from tests.scoring.helpers import score, skill_text


def counter_example_cues(text: str) -> list[tuple[int, str]]:
    """Counter-example cues in ``text``, ignoring case, as the rules find them."""
    return find_cues(text.lower(), COUNTER_EXAMPLE_CUES, COUNTER_EXAMPLE_WORDS)


FULL_CHAPTERS = "# T\n\n## Overview\n\n## Workflow\n\n## Rules\n"


def dim(body: str, which: str):
    return score(skill_text(body)).dim(which)


# --- dim4 -------------------------------------------------------------------

@pytest.mark.parametrize(
    "body, expected",
    [
        ("Ask, then STOP and wait.\n", 10),
        ("⛔ before deleting\n", 10),
        ("🛑 wait\n", 10),
        ("```\nSTOP\n```\n", 10),  # code counts
        ("🔴 CHECKPOINT: confirm\n", 5),
        ("CHECKPOINT\n", 5),
        ("🔴 confirm\n", 5),
        ("stop here\n", 0),  # lower case is not the STOP level
        ("checkpoint\n", 0),
        ("STOPPED early\n", 0),  # \bSTOP\b
        ("NONSTOP\n", 0),
        ("Plain text.\n", 0),
        ("CHECKPOINT then STOP\n", 10),
    ],
)
def test_dim4_levels(body, expected):
    assert dim(body, "dim4").score == expected


def test_dim4_ignores_frontmatter():
    text = '---\nname: demo-skill\ndescription: "STOP 🛑 CHECKPOINT"\n---\nbody\n'
    assert score(text).dim("dim4").score == 0


def test_dim4_reason_names_the_line():
    d = dim("a\n\nb 🛑\n", "dim4")
    assert "line 7" in d.reasons[0]  # 4 frontmatter lines + body line 3


# --- dim7 -------------------------------------------------------------------

def test_dim7_full_marks():
    assert dim(FULL_CHAPTERS, "dim7").score == 10


@pytest.mark.parametrize(
    "body, jumps",
    [
        ("# A\n### B\n", 1),
        ("## A\n#### B\n", 1),
        ("### First is never a jump\n", 0),
        ("# A\n## B\n### C\n# D\n### E\n", 1),
        ("# A\n### B\n##### C\n", 2),
        ("# A\n## B\n# C\n## D\n", 0),
    ],
)
def test_dim7_heading_jumps(body, jumps):
    d = dim(FULL_CHAPTERS + body, "dim7")
    assert d.score == 10 - 2 * jumps
    assert dict(d.details)["jumps"] == jumps


def test_dim7_jump_inside_code_is_not_counted():
    assert dim(FULL_CHAPTERS + "```\n##### no\n```\n", "dim7").score == 10


@pytest.mark.parametrize(
    "headings, groups",
    [
        (["设计哲学", "执行流程", "约束规则", "评估 Rubric"], 4),
        (["Philosophy", "Usage", "Best Practices"], 3),
        (["About", "How to use"], 2),
        (["Principles"], 1),
        (["Intro", "Notes"], 0),
        (["OVERVIEW", "STEPS", "LIMITATIONS", "SUCCESS CRITERIA"], 4),
        (["概述", "用法", "注意事项", "检查清单"], 4),
        (["Quality checklist"], 1),  # two words of one group count once
    ],
)
def test_dim7_required_chapter_groups(headings, groups):
    body = "# T\n" + "".join(f"## {h}\n" for h in headings)
    d = dim(body, "dim7")
    assert len(dict(d.details)["groups"]) == groups
    assert d.score == max(0, 10 - 3 * max(0, 3 - groups))


def test_one_heading_can_count_for_two_groups():
    d = dim("# Workflow and rules\n## Overview\n", "dim7")
    assert sorted(dict(d.details)["groups"]) == ["constraints", "philosophy", "workflow"]
    assert d.score == 10


_HEADING_WORDS = st.sampled_from([w for words in CHAPTER_GROUPS.values() for w in words]
                                  + ["RULE", "Ru", "le", "how to", "use", " ", "İ", "Σ", "\n", "note", "第"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_HEADING_WORDS, max_size=4).map("".join), max_size=8))
@example(["How to", "use it", "Ru", "le"])  # no group word across two headings
def test_chapter_groups_is_the_first_heading_naming_each_group(texts):
    """chapter_groups searches all headings at once; it finds what checking each heading for each word finds."""
    headings = tuple(Heading(2, text, line) for line, text in enumerate(texts, start=1))
    expected = {}
    for heading in headings:
        for group, words in CHAPTER_GROUPS.items():
            if group not in expected and any(w in heading.text.lower() for w in words):
                expected[group] = heading
    assert chapter_groups(headings) == expected


def test_dim7_duplicate_sibling_headings():
    body = FULL_CHAPTERS + "### Example\n### 2. Example!\n## Other\n### Example\n"
    d = dim(body, "dim7")
    # '### Example' twice under '## Rules' (numbering and punctuation normalised away) = 1;
    # the third is under a different parent, so not a sibling.
    assert dict(d.details)["duplicates"] == 1
    assert d.score == 8


def test_dim7_same_text_at_other_level_is_not_a_duplicate():
    assert dim(FULL_CHAPTERS + "### Rules\n", "dim7").score == 10


def test_dim7_each_extra_occurrence_counts():
    d = dim(FULL_CHAPTERS + "## Rules\n## rules\n", "dim7")
    assert dict(d.details)["duplicates"] == 2


def test_dim7_top_level_siblings_share_the_root():
    assert dict(dim("# A\n# A\n" + FULL_CHAPTERS, "dim7").details)["duplicates"] == 1


def test_dim7_empty_normalized_heading_is_never_duplicate():
    assert dim(FULL_CHAPTERS + "## 🚀\n## 🚀\n## 1.\n## 2.\n", "dim7").score == 10


def test_dim7_duplicate_paragraphs_need_40_normalized_chars():
    long = "Always run the formatter before committing any change at all."
    short = "Run the formatter first."
    body = FULL_CHAPTERS + f"{long}\n\n{short}\n\n{short}\n\n- {long.upper()}\n"
    d = dim(body, "dim7")
    assert dict(d.details)["duplicates"] == 1
    assert any("repeats" in r for r in d.reasons)


def test_dim7_paragraph_of_39_normalized_chars_is_not_a_duplicate():
    just_short = "a" * 39 + " !!!"
    just_long = "b" * 40
    d = dim(FULL_CHAPTERS + f"{just_short}\n\n{just_short}\n\n{just_long}\n\n{just_long}\n", "dim7")
    assert dict(d.details)["duplicates"] == 1


def test_dim7_chinese_duplicate_paragraph():
    para = "每条工作项都要写结果而不是写过程例如完成支付接口压测把九十九分位延迟从八百毫秒降到三百毫秒"
    assert len(normalize(para)) >= 40
    d = dim(FULL_CHAPTERS + f"{para}\n\n1. {para}\n", "dim7")
    assert dict(d.details)["duplicates"] == 1


def test_dim7_clamps_at_zero():
    body = "# A\n### B\n##### C\n# A\n### B\n##### C\n"
    assert dim(body, "dim7").score == 0


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1. Install", "install"),
        ("1.2.3) Install", "install"),
        ("2、安装", "安装"),
        ("三、安装", "安装"),
        ("Step 3: Install", "install"),
        ("STEP 3.1 - Install", "install"),
        ("phase 2) Deploy", "deploy"),
        ("第二步：安装", "安装"),
        ("第3章 安装", "安装"),
        ("🚀 Ship it!", "shipit"),
        ("Use `git` — carefully", "usegitcarefully"),
        ("1999 was a year", "wasayear"),  # leading digits are numbering by the regex
    ],
)
def test_normalize(text, expected):
    assert normalize(text) == expected


# --- dim9 -------------------------------------------------------------------

@pytest.mark.parametrize(
    "lines, expected",
    [
        ([], 0),
        (["Do not push to main."], 3),
        (["Do not push.", "Never force."], 7),
        (["Do not push.", "Never force.", "Avoid rebases."], 10),
        (["Do not push.", "Do not push.", "  Do not push.  "], 3),  # identical after strip: once
        (["DON'T push", "don’t pull", "MUST NOT merge"], 10),
        (["不要直接推送", "禁止强推", "反例：跳过测试"], 10),
        (["不允许", "不得", "切勿", "严禁"], 10),
        (["anti-pattern: god objects", "forbidden words"], 7),
        (["nevertheless fine", "avoidance is fine", "donut"], 0),
        (["```", "never in code either", "```"], 3),
    ],
)
def test_dim9_counts_distinct_lines(lines, expected):
    assert dim("\n".join(lines) + "\n", "dim9").score == expected


def test_dim9_ignores_frontmatter():
    text = '---\nname: demo-skill\ndescription: "Never. Do not. Avoid."\n---\nbody\n'
    assert score(text).dim("dim9").score == 0


def test_dim9_one_line_with_several_keywords_counts_once():
    assert dim("Do not, never, avoid.\n", "dim9").score == 3


# --- the fast matchers agree with the plain regexes RUBRIC.md's wording suggests ---------------

_FRAGMENTS = [*COUNTER_EXAMPLE_CUES, *COUNTER_EXAMPLE_WORDS, "STOP", "STOPS", "_", "x", "é", " ", "\n", "Don", "'t", "不", "NEVER"]


def test_not_alnum_pattern_is_str_isalnum_over_all_of_unicode():
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert _NOT_ALNUM.sub("", every) == "".join(filter(str.isalnum, every))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80) | st.text(alphabet=string.printable, max_size=80))
def test_normalize_fast_paths_equal_the_regex(text):
    """ASCII text through a byte table; other text through the table on its UTF-8, then a regex: as the regex alone."""
    stripped = LEADING_NUMBERING.sub("", text.lower(), count=1)
    assert normalize(text) == _NOT_ALNUM.sub("", stripped)


def _regex_cues(text: str) -> set[tuple[int, str]]:
    """Each cue where a regex finds it: literals anywhere, words between \\b boundaries."""
    found = set()
    for cue in COUNTER_EXAMPLE_CUES + COUNTER_EXAMPLE_WORDS:
        pattern = rf"(?=\b{re.escape(cue)}\b)" if cue in COUNTER_EXAMPLE_WORDS else f"(?={re.escape(cue)})"
        found |= {(m.start(), cue) for m in re.finditer(pattern, text)}
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=30).map("".join))
def test_counter_example_cues_match_a_regex_per_cue(text):
    assert set(counter_example_cues(text)) == _regex_cues(text.lower())
    assert bool(counter_example_cues(text)) == bool(re.search(
        "|".join(map(re.escape, COUNTER_EXAMPLE_CUES)) + r"|\b(?:" + "|".join(map(re.escape, COUNTER_EXAMPLE_WORDS)) + r")\b",
        text, re.IGNORECASE))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=30).map("".join))
def test_stop_word_is_whole_word_and_case_sensitive(text):
    found = [offset for offset, _ in find_cues(text, (), ("STOP",))]
    assert found == [m.start() for m in re.finditer(r"\bSTOP\b", text)]
