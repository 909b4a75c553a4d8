"""References more than one level deep from SKILL.md: found at the SKILL.md line that starts the chain."""

from __future__ import annotations

import json
from pathlib import Path

from scoring.model import Reference
from scoring.reference_chains import deep_references, followed, onward_targets
from tests.conftest import write_skill
from tests.support.score_runs import run_score
from tests.support.skill_texts import GOOD

FILES = frozenset({"SKILL.md", "references/advanced.md", "references/details.md", "scripts/run.py"})


def test_a_file_that_links_on_to_one_skill_md_does_not_reference_is_found_where_skill_md_references_it():
    refs = [Reference("references/advanced.md", 12, "exists"), Reference("https://x.org", 13, "exists")]
    onward = {"references/advanced.md": onward_targets("references/advanced.md",
                                                       "See [details](details.md) and `scripts/run.py`.", FILES)}
    assert onward == {"references/advanced.md": ["references/details.md", "scripts/run.py"]}
    (found,) = deep_references(refs, onward)
    assert (found.kind, found.line) == ("deep_reference", 12)
    assert "references/advanced.md links on to references/details.md, scripts/run.py" in found.message


def test_what_skill_md_references_itself_or_lies_outside_the_skill_is_no_chain():
    refs = [Reference("references/advanced.md", 12, "exists"), Reference("./references/details.md", 14, "exists")]
    text = "[d](references/details.md) [back](../SKILL.md) [web](https://example.org/x.md) [a](#top) [gone](nope.md)"
    onward = {"references/advanced.md": onward_targets("references/advanced.md", text, FILES)}
    assert deep_references(refs, onward) == []
    assert followed([*refs, Reference("scripts/run.py", 3, "exists"), Reference("missing.md", 4, "missing")]) == [
        "references/advanced.md", "references/details.md"]


def test_luban_score_reads_the_referenced_files_and_reports_the_chain(tmp_path: Path, monkeypatch):
    text = GOOD.format(name="chained").replace("See [guide](references/guide.md).", "See [the guide](references/guide.md).")
    write_skill(tmp_path, "chained", text, {"references/guide.md": "# Guide\n\nThe rest is in [more](more.md).\n",
                                             "references/more.md": "# More\n"})
    monkeypatch.chdir(tmp_path)
    _, out, _ = run_score("chained", "--json")
    found = [v for v in json.loads(out)["skills"][0]["violations"] if v["kind"] == "deep_reference"]
    line = text.split("\n").index("See [the guide](references/guide.md).") + 1
    assert [(v["line"], v["message"].split(",")[0]) for v in found] == [
        (line, "references/guide.md links on to references/more.md")]
