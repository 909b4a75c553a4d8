"""Does dim1 agree with `skills-ref validate` on `name` and `description`?

skills-ref (the Agent Skills reference library) checks frontmatter only, so
the comparison is per field: Luban's dim1 ``name`` and ``description`` checks
against whether skills-ref reported an error about that field (a frontmatter
it cannot parse fails both). Each disagreement is named with its cause, one of
the known differences between RUBRIC.md and the reference library, or
flagged UNEXPLAINED for someone to look at.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skills_ref.errors import ParseError
from skills_ref.parser import parse_frontmatter
from skills_ref.validator import validate_metadata

from scoring import score_skill
from scoring.document import normalize_text, parse

# Known differences, each a probe on the raw frontmatter and what it explains.
KNOWN_CAUSES = (
    ("name", "non-ASCII name", lambda name: isinstance(name, str) and not name.isascii(),
     "skills-ref admits any Unicode letter in a name (i18n); RUBRIC.md allows only a-z, 0-9 and '-'"),
    ("name", "padded name", lambda name: isinstance(name, str) and name != name.strip(),
     "skills-ref strips white space around the name first; RUBRIC.md checks the value as written"),
    ("name", "non-string name", lambda name: name is not None and not isinstance(name, str),
     "strictyaml reads every scalar as a string; RUBRIC.md's YAML safe loader reads 123 or true as a number or boolean"),
)


@dataclass(frozen=True)
class FieldVerdict:
    skill: str
    field: str
    luban_passed: bool
    luban_reason: str
    skills_ref_passed: bool
    skills_ref_errors: tuple[str, ...]
    cause: str = ""

    @property
    def agrees(self) -> bool:
        return self.luban_passed == self.skills_ref_passed


def skills_ref_errors(text: str, skill_dir: Path) -> list[str]:
    """What `skills-ref validate` reports for this text in this directory, without re-reading it."""
    try:
        metadata, _ = parse_frontmatter(text)
    except ParseError as err:
        return [str(err)]
    return validate_metadata(metadata, skill_dir)


def _field_errors(errors: list[str], field: str) -> tuple[str, ...]:
    if any(e.startswith("SKILL.md") or e.startswith("Invalid YAML") for e in errors):
        return tuple(errors)  # unparsable frontmatter: neither field was accepted
    words = {"name": ("'name'", "name:", "Skill name", "Directory name"), "description": ("description",)}[field]
    return tuple(e for e in errors if any(w in e for w in words))


def compare(skill_md: Path) -> list[FieldVerdict]:
    text = skill_md.read_bytes().decode("utf-8")
    errors = skills_ref_errors(text, skill_md.parent)
    checks = {c.name: c for c in score_skill(text, skill_md.parent.name).dim("dim1").checks}
    verdicts = []
    for field in ("name", "description"):
        field_errors = _field_errors(errors, field)
        verdict = FieldVerdict(skill_md.parent.name, field, checks[field].passed, checks[field].reason,
                               not field_errors, field_errors)
        if not verdict.agrees:
            verdict = FieldVerdict(**{**verdict.__dict__, "cause": _cause(text, field)})
        verdicts.append(verdict)
    return verdicts


def _cause(text: str, field: str) -> str:
    frontmatter = parse(normalize_text(text)).frontmatter or {}  # the values as Luban read them
    value = frontmatter.get(field)
    for cause_field, label, probe, why in KNOWN_CAUSES:
        if cause_field == field and probe(value):
            return f"{label}: {why}"
    if any("---" in str(v) for v in frontmatter.values()):
        return ("'---' inside a frontmatter value: skills-ref cuts the file at the first '---' anywhere; "
                "RUBRIC.md closes the frontmatter only at a line that is exactly '---'")
    return "UNEXPLAINED: compare the two reasons and add the cause here"


# Crafted skills, one per known difference, so each cause is seen even when the corpus has none.
EDGE_CASES = {
    "café-helper": ("café-helper", "Formats receipts for the café. Use when the user says \"print the receipt\"."),
    "padded-name": (" padded-name ", "Pads text. Use when the user says \"pad this\"."),
    "123": (123, "Counts to three. Use when the user says \"count\"."),
    "dashes-in-description": ("dashes-in-description", "--- marks split it. Use when the user says \"split\"."),
}


def write_edge_cases(dest: Path) -> list[Path]:
    import yaml

    paths = []
    for directory, (name, description) in EDGE_CASES.items():
        skill_dir = dest / directory
        skill_dir.mkdir(parents=True)
        front = yaml.safe_dump({"name": name, "description": description}, allow_unicode=True, sort_keys=False)
        if isinstance(name, int):
            front = front.replace("'123'", "123")
        (skill_dir / "SKILL.md").write_text(f"---\n{front}---\n\n# Body\n\nSteps.\n", encoding="utf-8")
        paths.append(skill_dir / "SKILL.md")
    return paths


def report(verdicts: list[FieldVerdict], title: str) -> int:
    """Print the agreement line and each disagreement; returns how many are unexplained."""
    agree = sum(v.agrees for v in verdicts)
    print(f"{title}: dim1 agrees with skills-ref on {agree}/{len(verdicts)} field verdicts "
          f"({len(verdicts) // 2} skills x name, description)")
    unexplained = 0
    for v in verdicts:
        if v.agrees:
            continue
        unexplained += v.cause.startswith("UNEXPLAINED")
        print(f"  - {v.skill} {v.field}: luban {'pass' if v.luban_passed else 'fail'} ({v.luban_reason}); "
              f"skills-ref {'pass' if v.skills_ref_passed else 'fail'} {[e.splitlines()[0] for e in v.skills_ref_errors]}")
        print(f"      cause: {v.cause}")
    return unexplained
