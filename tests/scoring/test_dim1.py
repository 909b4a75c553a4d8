"""dim1 — every one of the seven frontmatter checks, English and Chinese."""

from __future__ import annotations

import pytest

from tests.scoring.helpers import GOOD_DESCRIPTION, score, skill_text


def checks(text: str, name: str = "demo-skill") -> dict[str, bool]:
    dim1 = score(text, name).dim("dim1")
    return {c.name: c.passed for c in dim1.checks}


def dim1(text: str, name: str = "demo-skill"):
    return score(text, name).dim("dim1")


def test_all_checks_pass_gives_ten_with_every_check_named():
    d = dim1(skill_text("# Body\n"))
    assert d.score == 10 and d.source == "rules"
    assert [c.name for c in d.checks] == ["frontmatter", "name", "description", "what", "when", "triggers", "no_filler"]
    assert all(c.passed for c in d.checks)


def test_one_failed_check_gives_zero_and_names_it():
    d = dim1(skill_text("# Body\n", description="Formats SQL queries to the team style, always and everywhere."))
    assert d.score == 0
    assert any(r.startswith("when:") for r in d.reasons)


def test_missing_frontmatter_fails_everything():
    c = checks("# Just a body\n")
    assert c == {k: False for k in c}


def test_frontmatter_list_is_not_a_mapping():
    assert checks("---\n- a\n---\nbody")["frontmatter"] is False


@pytest.mark.parametrize(
    "name, dirname, ok",
    [
        ("demo-skill", "demo-skill", True),
        ("a", "a", True),
        ("x" * 64, "x" * 64, True),
        ("x" * 65, "x" * 65, False),
        ("Demo-Skill", "Demo-Skill", False),
        ("demo--skill", "demo--skill", False),
        ("-demo", "-demo", False),
        ("demo-", "demo-", False),
        ("demo_skill", "demo_skill", False),
        ("demo-skill", "other-dir", False),
        ("v2-tool", "v2-tool", True),
        ("周报", "周报", False),
    ],
)
def test_name_rule(name, dirname, ok):
    assert checks(skill_text("b", name=name), dirname)["name"] is ok


def test_name_trailing_newline_does_not_slip_past_the_pattern():
    text = '---\nname: "demo-skill\\n"\ndescription: x\n---\n'
    assert checks(text)["name"] is False


def test_name_must_be_a_string():
    assert checks("---\nname: 123\ndescription: Formats things well. Use when asked.\n---\n", "123")["name"] is False


@pytest.mark.parametrize(
    "description, ok",
    [
        (GOOD_DESCRIPTION, True),
        ("", False),
        ("   ", False),
        ("a" * 1024, True),
        ("a" * 1025, False),
    ],
)
def test_description_rule(description, ok):
    assert checks(skill_text("b", description=description))["description"] is ok


def test_description_must_be_a_string():
    assert checks("---\nname: demo-skill\ndescription: [a, b]\n---\n")["description"] is False


@pytest.mark.parametrize(
    "description, ok",
    [
        ("Formats SQL. Use when the user asks.", True),  # 'FormatsSQL': 10 non-space characters
        ("Do it. Use when the user asks.", False),
        ("Formats SQL queries. Use when the user asks.", True),
        ("Use when the user wants SQL formatted to the house style.", False),
        ("格式化SQL语句。当用户需要时使用。", True),
        ("格式化。当用户需要时使用。", False),
        ("Tidy SQL; use when asked", False),
        ("Tidy up SQL!Use it for SQL", True),
    ],
)
def test_what_rule_needs_a_non_when_sentence_of_8_chars(description, ok):
    assert checks(skill_text("b", description=description))["what"] is ok


@pytest.mark.parametrize(
    "description, ok",
    [
        ("Formats SQL. Use when the user asks.", True),
        ("Formats SQL. Use this skill whenever SQL appears.", True),
        ("Formats SQL. Use it for reviews.", True),
        ("Formats SQL. USE IF needed.", True),
        ("Formats SQL. When you see a query, format it.", True),
        ("Formats SQL. Triggered by queries.", True),
        ("Formats SQL. Invoke on save.", True),
        ("Formats SQL for the team.", False),
        ("Formats SQL. Useful when needed.", False),
        ("格式化 SQL。适用于代码评审。", True),
        ("格式化 SQL。当需要统一风格时。", True),
        ("格式化 SQL，评审时使用。", True),
        ("格式化 SQL，用户提到 SQL 就用。", True),
        ("格式化 SQL。使用场景：评审。", True),
        ("格式化 SQL 语句。", False),
    ],
)
def test_when_rule(description, ok):
    assert checks(skill_text("b", description=description))["when"] is ok


@pytest.mark.parametrize(
    "description, ok",
    [
        ('Formats SQL. Use when the user says "format".', True),
        ("Formats SQL. Use when asked for “format sql”.", True),
        ("格式化 SQL。当用户要求「格式化」时使用。", True),
        ("格式化 SQL。当用户要求『格式化』时使用。", True),
        ("Formats SQL. Use on ‘format’.", True),
        ("Formats SQL. Use on `fmt`.", True),
        ("Formats SQL. Use on 'format'.", False),  # ASCII apostrophes are not quotes
        ("Formats SQL. Use when someone mentions SQL.", True),
        ("Formats SQL. Keywords: sql, format.", True),
        ("格式化 SQL。触发词：格式化。", True),
        ("Formats SQL for the team.", False),
        ('Formats SQL. "' + "x" * 41 + '" too long.', False),
        ('Formats SQL. "" empty.', False),
        ('Formats SQL. An unclosed "fmt', False),
        ("Formats SQL. An unclosed `fmt", False),
        ('Formats SQL. A "very long phrase that is more than forty characters" then "fmt".', True),
    ],
)
def test_triggers_rule(description, ok):
    assert checks(skill_text("b", description=description))["triggers"] is ok


def test_trigger_quote_pairs_do_not_bridge_between_phrases():
    # The closing quote of a too-long phrase must not open a new one (' and ' would be 5 chars).
    description = 'Formats. "' + "x" * 45 + '" and "' + "y" * 45 + '".'
    assert checks(skill_text("b", description=description))["triggers"] is False


@pytest.mark.parametrize(
    "description, ok",
    [
        ("Formats SQL and more", False),
        ("Formats SQL, and so on.", False),
        ("Formats SQL etc.", False),
        ("Formats SQL, ETC", False),
        ("Formats SQL and others!", False),
        ("Formats SQL...", False),
        ("Formats SQL…  ", False),
        ("格式化 SQL、JSON 等", False),
        ("格式化 SQL、JSON 等等。", False),
        ("格式化 SQL 之类", False),
        ("格式化 SQL 以及更多；", False),
        ("Formats SQL.", True),
        ("格式化 SQL 语句。", True),
    ],
)
def test_no_filler_rule(description, ok):
    assert checks(skill_text("b", description=description))["no_filler"] is ok


def test_chinese_description_passes_all_checks():
    text = skill_text("b", name="zh-skill", description="把会议纪要整理成中文周报。当用户说「写周报」时使用。")
    assert dim1(text, "zh-skill").score == 10


@pytest.mark.parametrize("phrase", ["Trigger phrase: review my pull request",
                                    "Triggers include review requests from the team",
                                    "Triggers: review, audit, check"])
def test_trigger_keywords_added_by_the_amended_rubric(phrase):
    description = f"Reviews pull requests against the team checklist. Use when reviewing code. {phrase}"
    assert checks(skill_text("# Body\n", description=description))["triggers"]


@pytest.mark.parametrize("description, check, passes", [
    # "ſ" (long s) matches "s" under re.IGNORECASE, but str.lower() leaves it: not the word "says"
    ("Formats SQL queries to the team style. Use when the user ſays format.", "triggers", False),
    ("Formats SQL queries to the team style. Use when the user SAYS format.", "triggers", True),
    # the Kelvin sign lower-cases to "k": the rubric's str.lower() reads "Keyword" as "keyword"
    ("Formats SQL queries to the team style. Use when asked. \u212aeyword format.", "triggers", True),
    ("Formats SQL queries to the team ſtyle. Uſe when the uſer aſks.", "when", False),
])
def test_case_insensitive_means_str_lower(description, check, passes):
    assert checks(skill_text("# Body\n", description=description))[check] is passes


@pytest.mark.parametrize("description", ["   ", "\t\n  ", "\u3000"])
def test_a_whitespace_only_description_is_empty(description):
    result = checks(skill_text("# Body\n", description=description))
    assert result["description"] is False
