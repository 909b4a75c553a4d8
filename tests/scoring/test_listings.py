"""What a router sees: each client's listing of a library rendered as that client renders it, at the budgets of
common context windows, and the findings where a description's trigger words or the skill itself do not survive."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flows.gate.check import listing_formats
from scoring.document import parse
from scoring.library import LibraryEntry, entry_of
from scoring.listings import ListedSkill, budget, formats_from, listing_violations, listings, render, trigger_cues
from tests.conftest import CORPUS, REPO_ROOT, write_skill
from tests.support.score_runs import run_score

FORMATS = listing_formats()
CLIENTS = {c.name: c for c in FORMATS.clients}
CODEX, CLAUDE = CLIENTS["codex"], CLIENTS["claude-code"]


def skill(name: str, description: str, path: str = "p") -> ListedSkill:
    return ListedSkill(name, description, path)


def test_each_client_s_budget_is_its_share_of_the_window_or_its_fallback():
    assert budget(CODEX, None, 4) == (8000, "characters") and budget(CODEX, 128_000, 4) == (2560, "tokens")
    assert budget(CLAUDE, None, 4) == (8000, "characters") and budget(CLAUDE, 128_000, 4) == (5120, "characters")
    assert budget(CLIENTS["agent-skills"], 1_000_000, 4) == (None, "none")


def test_a_library_that_fits_is_listed_whole_in_each_client_s_format():
    library = [skill("b-skill", "Does b. Use when the user says \"b\".", "skills/b/SKILL.md"), skill("a-skill", "Does a.")]
    by_client = {(listing.client, listing.window): listing for listing in listings(FORMATS, library)}
    codex = by_client[("codex", "unknown")]
    assert codex.text.splitlines() == ["### Available skills", "- a-skill: Does a. (file: p)",
                                       "- b-skill: Does b. Use when the user says \"b\". (file: skills/b/SKILL.md)"]
    assert by_client[("claude-code", "unknown")].text.splitlines()[1:] == ["- a-skill: Does a.",
                                                                           "- b-skill: Does b. Use when the user says \"b\"."]
    xml = by_client[("agent-skills", "unknown")].text
    assert xml.startswith("<available_skills>\n<skill>\n<name>\na-skill\n</name>") and "&quot;b&quot;" in xml
    assert all(s.kept == s.length and s.listed for listing in by_client.values() for s in listing.shown)


def test_codex_hands_out_description_characters_round_robin_as_render_rs_does():
    """Bare lines '- a: (file: p)' cost 15 characters each with their newline; 10 left: the first character of a
    description costs 2 (the space before it), each next one 1, handed out a, b, a, b … until nothing is left."""
    formats = formats_from(json.dumps(_with_codex_budget(40)))
    listing = render(next(c for c in formats.clients if c.name == "codex"), [skill("a", "x" * 10), skill("b", "y" * 10)],
                     "unknown", formats)
    assert [(s.kept, s.length) for s in listing.shown] == [(4, 10), (4, 10)]
    assert listing.text.splitlines()[1:] == ["- a: xxxx (file: p)", "- b: yyyy (file: p)"]
    assert sum(len(line) + 1 for line in listing.text.splitlines()[1:]) == 40


def test_codex_gives_a_short_description_its_all_and_the_rest_to_the_longer_ones():
    formats = formats_from(json.dumps(_with_codex_budget(100)))
    listing = render(next(c for c in formats.clients if c.name == "codex"),
                     [skill("a", "short"), skill("b", "b" * 200), skill("c", "c" * 200)], "unknown", formats)
    kept = {s.name: s.kept for s in listing.shown}
    assert kept["a"] == 5 and abs(kept["b"] - kept["c"]) <= 1 and kept["b"] < 200
    assert sum(len(line) + 1 for line in listing.text.splitlines()[1:]) <= 100


def test_codex_leaves_skills_out_from_the_end_when_even_bare_lines_overflow():
    formats = formats_from(json.dumps(_with_codex_budget(50)))
    listing = render(next(c for c in formats.clients if c.name == "codex"),
                     [skill(name, "d") for name in ("alpha", "beta", "gamma", "delta")], "unknown", formats)
    assert [(s.name, s.listed, s.kept) for s in listing.shown] == [
        ("alpha", True, 0), ("beta", True, 0), ("gamma", False, 0), ("delta", False, 0)]
    assert "gamma" not in listing.text and "- beta: (file: p)" in listing.text


def test_claude_code_keeps_every_name_and_drops_descriptions_from_the_end():
    library = [skill(f"s{i:02d}", f"Does thing {i:02d}. " + "word " * 60) for i in range(40)]
    listing = render(CLAUDE, library, "128k", FORMATS)
    assert all(f"- s{i:02d}" in listing.text for i in range(40))
    kept = [s.kept for s in listing.shown]
    assert kept[0] == library[0].description.__len__() and kept[-1] == 0
    assert kept == sorted(kept, reverse=True) and len(listing.text) - len(CLAUDE.header) - 1 <= 5120


def test_claude_code_caps_each_entry():
    listing = render(CLAUDE, [skill("long", "w" * 2000)], "1M", FORMATS)
    assert listing.shown[0].kept == 1536 and listing.shown[0].length == 2000


def test_trigger_cues_are_the_when_cues_trigger_words_and_quoted_phrases_dim1_reads():
    text = 'Reviews pull requests. Use when the user says "review my PR" or mentions a diff.'
    cues = [text[a:b] for a, b in trigger_cues(text)]
    assert "use when" in [c.lower() for c in cues] and '"review my PR"'[1:] in cues and "says" in cues
    quoted = 'Writes audits for auditors: say "audit".'
    assert [quoted[a:b] for a, b in trigger_cues(quoted)] == ['audit"']  # the quoted one, not the word in "audits"
    assert trigger_cues("Formats dates.") == []


def test_a_description_whose_trigger_words_come_last_is_found_cut_and_one_that_leads_with_them_is_not():
    late = "Formats quarterly financial statements for auditors, " + "with care " * 30 + 'use when the user says "audit".'
    early = 'Use when the user says "ledger". ' + "Keeps the general ledger balanced " * 8
    entries = [LibraryEntry(f"lib/{n}/SKILL.md", n, d, 2, 3) for n, d in
               [("audit-formatter", late), ("aa-ledger", early)] + [(f"filler-{i:03d}", early) for i in range(60)]]
    found = listing_violations(FORMATS, entries)
    cut = found["lib/audit-formatter/SKILL.md"]
    assert [v.kind for v in cut] == ["listing_cut"] and cut[0].line == 3
    assert "codex at 128k (2560 tokens)" in cut[0].message and "characters shown" in cut[0].message
    assert "lib/aa-ledger/SKILL.md" not in found  # listed first, its trigger words first: seen by every client


def test_a_library_too_large_for_its_names_has_skills_left_out():
    entries = [LibraryEntry(f"lib/skill-{i:04d}/SKILL.md", f"skill-{i:04d}", "Use when the user says go.", 2, 3)
               for i in range(400)]
    found = listing_violations(FORMATS, entries)
    dropped = [p for p, vs in found.items() if any(v.kind == "listing_dropped" for v in vs)]
    assert dropped and "lib/skill-0000/SKILL.md" not in dropped and "lib/skill-0399/SKILL.md" in dropped
    assert "codex at 128k" in next(v for v in found["lib/skill-0399/SKILL.md"] if v.kind == "listing_dropped").message


def test_the_data_file_says_its_version_and_a_source_for_every_client():
    data = json.loads((REPO_ROOT / "scoring" / "skill_listings.json").read_text(encoding="utf-8"))
    assert re.fullmatch(r"\d{4}-\d{2}", data["version"])
    assert all(spec["source"].startswith(("[V]", "[3P]")) for spec in data["clients"].values())
    broken = dict(data, clients={"codex": dict(data["clients"]["codex"], colour="blue")})
    with pytest.raises(ValueError, match=r"client 'codex'.*colour"):
        formats_from(json.dumps(broken))


def test_luban_score_reports_a_cut_description_at_its_line_and_fails_only_when_strict(tmp_path: Path):
    late = "Formats quarterly statements, " + "with care " * 40 + 'use when the user says "audit".'
    write_skill(tmp_path, "audit", f"---\nname: audit\ndescription: {late}\n---\n# Audit\n\nFormat the statements.\n")
    for i in range(70):
        body = f"Keeps ledger {i} balanced. " + "Checks every entry " * 6
        write_skill(tmp_path, f"ledger-{i:02d}", f"---\nname: ledger-{i:02d}\ndescription: Use when the user says "
                    f"\"ledger {i}\". {body}\n---\n# Ledger\n\nBalance it.\n")
    status, out, _ = run_score(str(tmp_path), "--json")
    report = {s["skill"]: s for s in json.loads(out)["skills"]}
    findings = [v for v in report["audit"]["violations"] if v["kind"] == "listing_cut"]
    assert findings and findings[0]["line"] == 3 and "trigger words first" in findings[0]["message"]
    assert status == 0
    assert run_score(str(tmp_path), "--strict", "--json")[0] == 1
    status, out, err = run_score(str(tmp_path), "--strict", "--ignore", "listing_cut", "--ignore", "similar_description",
                                 "--json")
    left = {v["kind"] for s in json.loads(out)["skills"] for v in s.get("violations", [])}
    assert status == 0, (left, err[-500:])


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"public skill corpus not found at {CORPUS}; set LUBAN_CORPUS")
def test_the_public_corpus_as_one_library_loses_little_and_says_where():
    """32 real skills: they fit every client's listing but Claude Code's at a 128k window, where the descriptions
    listed last are dropped: data not tuned on, read for what the findings say."""
    entries = [entry_of(parse(p.read_text(encoding="utf-8")), str(p)) for p in sorted(CORPUS.rglob("SKILL.md"))]
    found = listing_violations(FORMATS, entries)
    assert len(entries) >= 30 and len(found) <= 3
    assert all("claude-code at 128k" in v.message and "over that budget" in v.message for vs in found.values() for v in vs)


def _with_codex_budget(characters: int) -> dict:
    data = json.loads((REPO_ROOT / "scoring" / "skill_listings.json").read_text(encoding="utf-8"))
    data["clients"]["codex"]["unknown_window_budget"] = characters
    return data


NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1, max_size=12)
DESCRIPTIONS = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=120)


def codex_line(s: ListedSkill, chars: int) -> str:
    """render.rs's line, written out here: the oracle the rendering is checked against."""
    return f"- {s.name}: {s.description[:chars]} (file: {s.path})" if chars else f"- {s.name}: (file: {s.path})"


def cost(unit: str, lines: list[str]) -> int:
    if unit == "tokens":
        return sum(math.ceil(len((line + "\n").encode("utf-8")) / 4) for line in lines)
    return sum(len(line) + 1 for line in lines)


@given(library=st.lists(st.tuples(NAMES, DESCRIPTIONS), min_size=1, max_size=12), limit=st.integers(20, 2000),
       tokens=st.booleans())
@settings(max_examples=150, deadline=None)
def test_codex_never_overspends_and_leaves_no_character_it_could_still_afford(library, limit, tokens):
    """Whatever the library and budget: the listing's lines are render.rs's, cost no more than the budget, and no
    description could take one more character with what is left (the round-robin ran out); when even bare lines
    overflow, a skill is left out only when its bare line no longer fits after those before it."""
    data = _with_codex_budget(limit)
    if tokens:
        data["clients"]["codex"]["unknown_window_unit"] = "tokens"
    formats = formats_from(json.dumps(data))
    codex = next(c for c in formats.clients if c.name == "codex")
    skills = sorted((skill(name, description, f"r0/{name}/SKILL.md") for name, description in library), key=lambda s: s.name)
    listing = render(codex, skills, "unknown", formats)
    unit = "tokens" if tokens else "characters"
    lines = [codex_line(s, shown.kept) for s, shown in zip(skills, listing.shown, strict=True) if shown.listed]
    assert listing.text.split("\n")[1:] == lines
    if all(shown.listed for shown in listing.shown):
        assert cost(unit, lines) <= limit or all(shown.kept == 0 for shown in listing.shown)
        left = limit - cost(unit, lines)
        for s, shown in zip(skills, listing.shown, strict=True):
            if shown.kept < shown.length:
                grown = cost(unit, [codex_line(s, shown.kept + 1)]) - cost(unit, [codex_line(s, shown.kept)])
                assert grown > left, (s.name, shown, left)
    else:
        used = 0
        for s, shown in zip(skills, listing.shown, strict=True):
            bare = cost(unit, [codex_line(s, 0)])
            assert shown.listed == (used + bare <= limit) and shown.kept == 0
            used += bare if shown.listed else 0
