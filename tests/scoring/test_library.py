"""Findings across a library: the same name twice, descriptions a router cannot tell apart, a directory off its
siblings' convention — each naming the other skill."""

from __future__ import annotations

from scoring.document import parse
from scoring.library import SIMILAR_AT, entry_of, library_violations, similarity

SQL = "Formats SQL queries to the team style. Use when the user says format this SQL or asks for a query review."


def entry(path: str, name: str, description: str):
    return entry_of(parse(f"---\nname: {name}\ndescription: {description}\n---\n# T\n"), path)


def test_the_same_name_twice_is_an_error_on_both_naming_the_other():
    found = library_violations([entry("a/sql-format/SKILL.md", "sql-format", SQL),
                                entry("b/sql-format/SKILL.md", "sql-format", "Draws charts from CSV files.")])
    (first,), (second,) = found["a/sql-format/SKILL.md"], found["b/sql-format/SKILL.md"]
    assert (first.kind, first.line, first.related) == ("duplicate_name", 2, ("b/sql-format/SKILL.md", 2))
    assert "also the name of b/sql-format/SKILL.md" in first.message and second.related == ("a/sql-format/SKILL.md", 2)


def test_descriptions_a_router_cannot_tell_apart_are_flagged_and_distinct_ones_are_not():
    reworded = SQL.replace("team style", "house style").replace("query review", "review of a query")
    found = library_violations([entry("s/sql-format/SKILL.md", "sql-format", SQL),
                                entry("s/sql-style/SKILL.md", "sql-style", reworded),
                                entry("s/csv-charts/SKILL.md", "csv-charts", "Draws bar and line charts from CSV files. "
                                      "Use when the user asks for a chart of a spreadsheet.")])
    assert set(found) == {"s/sql-format/SKILL.md", "s/sql-style/SKILL.md"}
    (flagged,) = found["s/sql-style/SKILL.md"]
    assert flagged.kind == "similar_description" and flagged.line == 3 and flagged.related == ("s/sql-format/SKILL.md", 3)
    assert f"{similarity(SQL, reworded):.0f} % alike sql-format's" in flagged.message and similarity(SQL, reworded) >= SIMILAR_AT


def test_a_directory_named_off_its_siblings_convention_is_flagged_once_two_follow_it():
    skills = [entry("lib/pdf/SKILL.md", "pdf", "Fills PDF forms."), entry("lib/docx/SKILL.md", "docx", "Edits Word files."),
              entry("lib/sheets/SKILL.md", "xlsx", "Edits spreadsheets.")]
    assert [(v.kind, v.line) for v in library_violations(skills)["lib/sheets/SKILL.md"]] == [("name_convention", 2)]
    assert library_violations(skills[1:]) == {}  # one sibling is no convention
    assert library_violations([*skills, entry("lib/slides/SKILL.md", "pptx", "Edits decks.")]) == {}  # two ways: none


def test_one_skill_alone_or_skills_without_frontmatter_give_nothing():
    bare = entry_of(parse("# No frontmatter\n"), "x/SKILL.md")
    assert library_violations([bare, bare]) == {} and library_violations([entry("a/a/SKILL.md", "a", SQL)]) == {}


def test_a_library_of_near_copies_gets_a_few_findings_a_skill_and_the_count_of_the_rest():
    copies = [entry(f"l/sql-{i}/SKILL.md", f"sql-{i}", SQL.replace("team", f"team {i}")) for i in range(6)]
    same = [entry(f"v{i}/csv/SKILL.md", "csv", f"Reads CSV files of kind {i * 'x'}.") for i in range(4)]
    found = library_violations(copies + same)
    similar = found["l/sql-0/SKILL.md"]
    assert [v.kind for v in similar] == ["similar_description"] * 3 and "(and 2 more skills' as alike)" in similar[-1].message
    (duplicate,) = [v for v in found["v0/csv/SKILL.md"] if v.kind == "duplicate_name"]
    assert "also the name of v1/csv/SKILL.md (and of 2 more)" in duplicate.message
    assert not [v for v in found["v0/csv/SKILL.md"] if v.kind == "similar_description"]  # the same name says it already


def test_only_a_descriptions_first_1024_characters_are_compared_as_the_specification_allows_no_more():
    """A hostile 2 MB description must not make the comparison cost the product of two such lengths."""
    from scoring.library import COMPARED

    head = SQL + " " + "x" * COMPARED
    found = library_violations([entry("a/one/SKILL.md", "one", head + "a" * 200_000),
                                entry("a/two/SKILL.md", "two", head + "b" * 200_000)])
    assert [v.kind for v in found["a/one/SKILL.md"]] == ["similar_description"]
    assert "100 % alike two's" in found["a/one/SKILL.md"][0].message
