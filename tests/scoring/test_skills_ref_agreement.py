"""Every problem the reference validator (`skills-ref validate`, the Agent Skills specification's own) reports,
`luban score` reports too — on real skills, generated ones, and mutations of both that break each rule it checks.

Where they differ on purpose (Luban is stricter, or reads YAML as every client does), the difference is listed in
KNOWN with its reason, and docs/gate.md says why."""

from __future__ import annotations

import random
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from scoring import score_skill
from scoring.model import SkillScore

validator = pytest.importorskip("skills_ref.validator", reason="skills-ref is in the test extras: pip install -e '.[test]'")

# Each mutation rewrites a SKILL.md's frontmatter (the text between the first two '---' lines) or its directory.
MUTATIONS: dict[str, Callable[[str, str], str]] = {
    "unknown key": lambda fm, name: fm + "version: 1.0.0\n",
    "client key": lambda fm, name: fm + "disable-model-invocation: true\n",
    "typo of description": lambda fm, name: fm.replace("description:", "descripton:", 1),
    "description removed": lambda fm, name: re.sub(r"(?ms)^description:.*?(?=^\S|\Z)", "", fm),
    "description too long": lambda fm, name: re.sub(r"(?m)^description:.*$", "description: " + "word " * 220, fm, count=1),
    "name uppercase": lambda fm, name: fm.replace(f"name: {name}", f"name: {name.upper()}", 1),
    "name with double hyphen": lambda fm, name: fm.replace(f"name: {name}", f"name: {name}--x", 1),
    "name starts with hyphen": lambda fm, name: fm.replace(f"name: {name}", f"name: -{name}", 1),
    "name too long": lambda fm, name: fm.replace(f"name: {name}", f"name: {name}-{'a' * 64}", 1),
    "name removed": lambda fm, name: fm.replace(f"name: {name}\n", "", 1),
    "compatibility too long": lambda fm, name: fm + "compatibility: " + "x" * 501 + "\n",
    "not a mapping": lambda fm, name: "- a list\n- not a map\n",
    "invalid YAML": lambda fm, name: fm + "license: 'unclosed\n",
    "key given twice": lambda fm, name: fm + f"name: {name}\n",
    "flow-style list": lambda fm, name: fm + "allowed-tools: [Read, Bash]\n",
}
KNOWN = {  # skills-ref error (a pattern) → why Luban does not report it the same way
    "disallowed JSONesque flow": "strictyaml refuses YAML's flow style ([a, b], {a: b}); YAML 1.2 and the clients "
                                 "read it, so Luban reads it too and checks the field's type (field_invalid here)",
}


def luban_reports(error: str, score: SkillScore) -> bool:
    """Whether Luban's score reports the problem skills-ref's ``error`` names."""
    failed = {c.name for c in score.dim("dim1").checks if not c.passed}
    kinds = {v.kind: v.message for v in score.violations}
    if error.startswith("Unexpected fields in frontmatter: "):
        fields = error.removeprefix("Unexpected fields in frontmatter: ").split(". Only")[0].split(", ")
        reported = {m.split("'")[1] for v in score.violations if v.kind == "unknown_key" for m in [v.message]}
        return set(fields) <= reported
    if "Duplicate key" in error:
        return "duplicate_key" in kinds
    if "Compatibility" in error or "'compatibility'" in error:
        return "field_invalid" in kinds and "'compatibility'" in kinds["field_invalid"]
    if re.search(r"[Nn]ame|Directory name", error) and "description" not in error:
        return "name" in failed
    if "description" in error.lower():
        return "description" in failed
    return "frontmatter" in failed or "frontmatter_invalid" in kinds  # it could not read the frontmatter


def skill_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("SKILL.md"))


def mutated(source: Path, target: Path, mutation: str) -> Path | None:
    """A copy of the skill at ``source`` with ``mutation`` applied, or None when it does not apply to it."""
    text = (source / "SKILL.md").read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?\n)---\n", text, re.DOTALL)
    name_match = re.search(r"(?m)^name: (\S+)$", match.group(1)) if match else None
    if not match or not name_match:
        return None
    frontmatter = MUTATIONS[mutation](match.group(1), name_match.group(1))
    if frontmatter == match.group(1):
        return None
    shutil.copytree(source, target)
    (target / "SKILL.md").write_text(f"---\n{frontmatter}---\n{text[match.end():]}", encoding="utf-8")
    return target


def disagreements(skill_dir: Path) -> list[str]:
    """What skills-ref reports of this skill that Luban does not, each with the skill."""
    errors = validator.validate(skill_dir)
    data = (skill_dir / "SKILL.md").read_bytes()
    files = frozenset(str(p.relative_to(skill_dir).as_posix()) for p in skill_dir.rglob("*") if p.is_file())
    score = score_skill(data, skill_dir.name, files)
    return [f"{skill_dir.name}: {error}" for error in errors
            if not luban_reports(error, score) and not any(re.search(k, error) for k in KNOWN)]


def test_every_problem_skills_ref_reports_luban_reports_on_the_collection_and_its_mutations(skill_collection: Path,
                                                                                           tmp_path: Path):
    rng = random.Random(29)
    missed, checked, reported = [], 0, 0
    originals = skill_dirs(skill_collection)
    for source in originals:
        missed += disagreements(source)
        checked += 1
    for mutation in MUTATIONS:
        for source in rng.sample(originals, min(6, len(originals))):
            target = mutated(source, tmp_path / mutation.replace(" ", "-") / source.name, mutation)
            if target is None:
                continue
            errors = validator.validate(target)
            assert errors, f"{mutation} on {source.name}: skills-ref found nothing (the mutation did not break a rule)"
            missed += disagreements(target)
            checked, reported = checked + 1, reported + len(errors)
    assert reported >= len(MUTATIONS) and missed == [], "\n".join(missed)
    print(f"\n{checked} skills, {reported} skills-ref problems on the mutations: every one reported by Luban")


def test_a_directory_not_named_as_its_skill_is_reported_by_both(skill_collection: Path, tmp_path: Path):
    source = skill_dirs(skill_collection)[0]
    target = tmp_path / f"{source.name}-renamed"
    shutil.copytree(source, target)
    assert any("must match skill name" in e for e in validator.validate(target))
    assert disagreements(target) == []
