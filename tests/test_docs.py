"""The documentation holds together: every link inside the repository leads to a file, and every ``#anchor`` to a
heading of it; the README is an entrance that links to every page of docs/; nothing points outside the clone."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", REPO_ROOT / "RELIABILITY.md", REPO_ROOT / "benchmarks" / "README.md",
         *sorted((REPO_ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercased, punctuation but ``-`` and ``_`` dropped, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def broken_links(page: Path, root: Path = REPO_ROOT) -> list[str]:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or root.resolve() not in linked.parents:
            broken.append(f"{page.name}: {target} (no such file in the repository)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{page.name}: {target} (no heading #{anchor} in {linked.name})")
    return broken


def test_every_link_leads_to_a_file_and_a_heading():
    assert [b for page in PAGES for b in broken_links(page)] == []


def test_the_readme_is_an_entrance_to_every_page():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(LINK.findall(readme))
    assert {f"docs/{p.name}" for p in (REPO_ROOT / "docs").glob("*.md")} <= linked
    assert len(readme.splitlines()) < 300 and "## Contents" in readme
    assert "make demo" in readme and "make test" in readme


def test_nothing_points_outside_the_clone():
    for page in PAGES:
        assert "../shared" not in page.read_text(encoding="utf-8"), page


def test_the_checks_can_fail(tmp_path: Path):
    assert slug("`luban optimize`: the ratchet as a Prefect flow") == "luban-optimize-the-ratchet-as-a-prefect-flow"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "gate.md").write_text("# The gate\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("# Out\n", encoding="utf-8")
    page = tmp_path / "docs" / "page.md"
    page.write_text("# Here\n[a](gate.md#no-such-heading) [b](missing.md) [c](#here) [d](https://x.org/y) "
                    "[e](gate.md#the-gate) [f](../outside.md)\n", encoding="utf-8")
    assert broken_links(page, tmp_path / "docs") == [
        "page.md: gate.md#no-such-heading (no heading #no-such-heading in gate.md)",
        "page.md: missing.md (no such file in the repository)", "page.md: ../outside.md (no such file in the repository)"]
