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
