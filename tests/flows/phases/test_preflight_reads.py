"""What the checks before a run read of the skills: only what `luban score` would read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flows.phases.preflight import Scope, routed
from tests.conftest import write_skill


@pytest.mark.timeout(30)  # the router opened a FIFO SKILL.md plainly and waited for a writer forever
def test_the_mode_router_skips_a_fifo_and_a_link_out_of_the_skill(tmp_path: Path):
    skills = tmp_path / "skills"
    write_skill(skills, "alpha", "---\nname: alpha\ndescription: Does alpha things. Use when asked.\n---\n# Alpha\n")
    (skills / "fifo").mkdir()
    os.mkfifo(skills / "fifo" / "SKILL.md")
    outside = tmp_path / "outside.md"  # would route to full if read: payments, passwords and personal data
    outside.write_text("---\nname: linked\n---\n" + "Handle payment card numbers, passwords, SSN and medical records.\n" * 20)
    (skills / "linked").mkdir()
    (skills / "linked" / "SKILL.md").symlink_to(outside)
    alone = routed(Scope(skills, ("alpha",)), 0)
    assert routed(Scope(skills, ("alpha", "fifo", "linked")), 0) == alone
    (skills / "linked" / "SKILL.md").unlink()
    (skills / "linked" / "SKILL.md").write_text(outside.read_text())
    assert routed(Scope(skills, ("alpha", "linked")), 0).m > alone.m  # the same text inside the skill is read


@pytest.mark.timeout(30)
def test_the_mode_router_with_no_readable_skill_reads_nothing_into_its_decision(tmp_path: Path):
    (tmp_path / "skills" / "fifo").mkdir(parents=True)
    os.mkfifo(tmp_path / "skills" / "fifo" / "SKILL.md")
    decision = routed(Scope(tmp_path / "skills", ("fifo",)), 0)  # Phase 0 then names the skill and goes on without it
    assert decision.contributions["pii"] == 0 and decision.contributions["file_scale"] == 0


def test_the_mode_router_reads_the_referenced_files_and_the_revert_history(tmp_path: Path):
    """It was given 0 and 0 for both, so its hard-full band (five referenced files, reverts) was unreachable."""
    from workspace.results_tsv import ResultRow, ResultsFile

    skills, root = tmp_path / "skills", tmp_path / "luban-workspace"
    links = "".join(f"- [part {i}](references/part-{i}.md)\n" for i in range(5)) + "- [gone](references/missing.md)\n"
    write_skill(skills, "alpha", "---\nname: alpha\ndescription: Does alpha. Use when asked.\n---\n# Alpha\n" + links,
                {f"references/part-{i}.md": "text\n" for i in range(5)})
    for round_no in (1, 2, 3):
        ResultsFile(root / "full" / "alpha" / "results.tsv").append(
            ResultRow(f"2026-12-01T10:0{round_no}:00+00:00", "alpha", round_no, "revert", "full"))
    bare = routed(Scope(skills, ("alpha",)), 50)
    read = routed(Scope(skills, ("alpha",)), 50, root)
    assert "5 referenced files" in " ".join(read.reasons) and "3 revert(s)" in " ".join(read.reasons)
    assert read.contributions["revert_history"] > bare.contributions["revert_history"] == 0
    assert routed(Scope(skills, ("alpha",)), 50, root, domain_factor=0.5).contributions["domain"] <= read.contributions["domain"]


def test_two_overrides_the_same_way_halve_the_routers_domain_weight(tmp_path: Path):
    from flows.phases.governance import _remember_override
    from workspace import profile

    path = tmp_path / "luban-profile.json"
    _remember_override(path, "full", "quick")
    assert profile.load(path).inference_exemptions["domain"].weight_factor == 1.0
    _remember_override(path, "full", "quick")
    assert profile.load(path).inference_exemptions["domain"].weight_factor == 0.5
