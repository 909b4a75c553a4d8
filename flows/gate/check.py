"""`luban score`: score skills on disk and decide the CI gate's exit status.

Kept free of Prefect, openai and pandas (CI runs this on every push); git is
imported only for `--changed`.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from flows.gate.config import RULES, ScoreConfig, Severity
from scoring import SkillScore
from scoring.document import MAX_BYTES, parse
from scoring.hidden_text import strip_hidden
from scoring.library import LibraryEntry, entry_of, library_violations
from scoring.listings import Formats, formats_from, listing_violations
from scoring.model import DimensionScore
from scoring.reference_chains import deep_references, followed, onward_targets
from scoring.rubric import score_document
from workspace.atomic import atomic_write
from workspace.git_revisions import changed_skills
from workspace.skill_source import SkillSource, discover, read_at_most, read_skill, source_text

EXIT_OK, EXIT_GATE, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class ScoreOptions:
    paths: tuple[str, ...]
    config: ScoreConfig = field(default_factory=ScoreConfig)
    changed: bool = False
    base: str | None = None
    allow_regression: bool = False


@dataclass(frozen=True)
class Ignored:
    """A finding the configuration says does not apply here: shown as ignored, with the setting that said so."""

    rule: str
    line: int | None
    message: str
    why: str


@dataclass
class SkillResult:
    """One skill's outcome: a score, or the error that kept it from being scored."""

    source: SkillSource
    score: SkillScore | None = None
    error: str | None = None
    base_score: SkillScore | None = None
    base_error: str | None = None
    base_path: str | None = None
    is_new: bool = False
    gate_failures: list[str] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)
    entry: LibraryEntry | None = None  # what the findings across skills read of it

    @property
    def gated_value(self) -> float | None:
        """What --fail-under and regressions compare: the total once LLM dims are scored."""
        if self.score is None:
            return None
        return self.score.total if self.score.llm_scored else self.score.deterministic_subtotal

    @property
    def regressed(self) -> bool:
        if self.score is None or self.base_score is None:
            return False
        base = self.base_score.total if self.score.llm_scored else self.base_score.deterministic_subtotal
        return self.gated_value is not None and self.gated_value < base


def score_source(source: SkillSource) -> tuple[SkillScore | None, str | None]:
    score, error, _ = scored_entry(source)
    return score, error


def scored_entry(source: SkillSource) -> tuple[SkillScore | None, str | None, LibraryEntry | None]:
    """The skill's score (or why it has none), and what the findings across the library read of it."""
    text, error = source_text(source)
    if text is None:
        return None, error, None
    try:
        doc = parse(text)
        score = with_reference_chains(score_document(doc, source.name, source.files), source)
        return score, None, entry_of(doc, source.path)
    except Exception as err:  # noqa: BLE001 - one skill the scorer cannot read must not stop the gate for the others
        return None, (f"{source.path}: the scorer failed on this file ({type(err).__name__}: {err}); the other skills "
                      "were scored. Please report it with the file attached"), None


def with_reference_chains(score: SkillScore, source: SkillSource) -> SkillScore:
    """The score with a finding for each reference that leads on, more than one level deep from SKILL.md: the
    Markdown files it references are read here (inside the skill's directory, as listed) for their own links."""
    skill_dir, onward = os.path.dirname(source.path), {}
    for name in followed(score.references):
        try:
            data = read_at_most(os.path.join(skill_dir, name), MAX_BYTES)
        except OSError:
            continue  # listed, then gone or unreadable: the reference scan has said what it could
        if b"](" in data or b"`" in data:  # else it links nowhere: not worth decoding
            onward[name] = onward_targets(name, data.decode("utf-8", errors="replace"), source.files)
    deep = deep_references(score.references, onward)
    if not deep:
        return score
    return score.with_violations(tuple(sorted((*score.violations, *deep), key=lambda v: (v.line or 0, v.kind))))


def with_library(results: list[SkillResult]) -> list[SkillResult]:
    """Each result with the findings across every skill scored with it (duplicate names, colliding descriptions,
    a directory off its siblings' convention, a skill the clients' listings cut or leave out)."""
    entries = [r.entry for r in results if r.entry is not None]
    found = library_violations(entries) if len(results) > 1 else {}
    for path, listed in listing_violations(listing_formats(), entries).items():
        found[path] = [*found.get(path, []), *listed]
    for result in results:
        extra = found.get(result.entry.path, []) if result.entry is not None else []
        if extra and result.score is not None:
            ordered = sorted((*result.score.violations, *extra), key=lambda v: (v.line or 0, v.kind))
            result.score = result.score.with_violations(tuple(ordered))
    return results


def fix_hidden(options: ScoreOptions) -> list[str]:
    """--fix: the zero-width and bidi characters the scanner flags removed from each SKILL.md the options name (one
    atomic write per file that changes; nothing else in it is rewritten: line breaks and a BOM stay). What changed,
    a line per removal."""
    if options.changed:
        files = [c.path for c in changed_skills(Path.cwd(), options.base or "HEAD", [Path(p) for p in options.paths] or None)
                 if not c.deleted]
    else:
        files = [item for item in discover(list(options.paths)) if isinstance(item, Path)]
    said = []
    for path in files:
        source = read_skill(path)  # read as the scorer reads it: no FIFO, no link out of the skill, no 50 MB
        try:
            text = source.data.decode("utf-8") if source.data is not None and source.error is None else None
        except UnicodeDecodeError:
            text = None
        if text is None:
            continue  # scored next, and reported there as unreadable
        fixed, changes = strip_hidden(text)
        if changes:
            atomic_write(path, fixed.encode("utf-8"))
            said += [f"{relative(str(path), options.config.root)}: {change}" for change in changes]
    return said


def collect(options: ScoreOptions) -> list[SkillResult]:
    """Score every skill the options name (with --changed, also each one's version at base); paths shown relative
    to the configuration's root, and its ignores applied."""
    if options.changed:
        results = _collect_changed(options)
    else:
        results = []
        for item in discover(list(options.paths)):
            source = item if isinstance(item, SkillSource) else read_skill(item)
            score, error, entry = scored_entry(source)
            results.append(SkillResult(replace(source, data=None), score, error, entry=entry))  # bytes not needed again
    shown = [shown_relative(r, options.config.root) for r in results]
    return [with_config(r, options.config) for r in with_library(shown)]


def _collect_changed(options: ScoreOptions) -> list[SkillResult]:
    scopes = [Path(p) for p in options.paths]
    results = []
    for change in changed_skills(Path.cwd(), options.base or "HEAD", scopes or None):
        if change.deleted:
            continue
        source = read_skill(change.path)
        score, error, entry = scored_entry(source)
        result = SkillResult(source, score, error, is_new=change.at_base is None, entry=entry)
        if change.at_base is not None:
            result.base_path = change.at_base.path
            result.base_score, result.base_error = score_source(change.at_base)
        results.append(result)
    return results


def relative(path: str, root: str) -> str:
    """``path`` relative to ``root`` when it lies inside it (what GitHub, SARIF and JUnit readers place on a diff)."""
    absolute = os.path.abspath(path)
    inside = os.path.commonpath([absolute, os.path.abspath(root)]) == os.path.abspath(root)
    return Path(os.path.relpath(absolute, root)).as_posix() if inside else path


def shown_relative(result: SkillResult, root: str) -> SkillResult:
    shown = relative(result.source.path, root)
    if shown == result.source.path:
        return result
    error = result.error.replace(result.source.path, shown, 1) if result.error else None
    entry = replace(result.entry, path=shown) if result.entry is not None else None
    return replace(result, source=replace(result.source, path=shown), error=error, entry=entry)


def with_config(result: SkillResult, config: ScoreConfig) -> SkillResult:
    """The result with what the configuration ignores for its path set aside (as ``ignored``): violations of an
    ignored kind or naming a placeholder, and ignored dim1 checks (dim1 then scores as if they passed). With
    --changed, the base version is read under the same configuration, so an ignore never shows as a change."""
    if result.score is None:
        return result
    ignoring = config.ignored_for(result.source.path)
    score, ignored = _without(result.score, ignoring, config)
    base = _without(result.base_score, ignoring, config)[0] if result.base_score is not None else None
    if score is result.score and base is result.base_score:
        return result
    return replace(result, score=score, ignored=ignored, base_score=base)


def _without(score: SkillScore, ignoring: dict[str, str], config: ScoreConfig) -> tuple[SkillScore, list[Ignored]]:
    ignored, kept = [], []
    placeholders = {(r.line, r.target) for r in score.references if r.status == "missing" and config.is_placeholder(r.target)}
    for violation in score.violations:
        placeholder = violation.kind == "missing_reference" and any(line == violation.line and f"'{target}'" in
                                                                    violation.message for line, target in placeholders)
        if violation.kind in ignoring or placeholder:
            why = ignoring.get(violation.kind) or f"a placeholder ({config.origins.get('placeholders', 'default')})"
            ignored.append(Ignored(violation.kind, violation.line, violation.message, why))
        else:
            kept.append(violation)
    dim1, dropped = _dim1_without(score.dim("dim1"), ignoring)
    ignored += dropped
    if not ignored:
        return score, []
    return SkillScore(score.skill, tuple(dim1 if d.dim == "dim1" else d for d in score.dims), tuple(kept),
                      score.references, score.warnings), ignored


def _dim1_without(dim1: DimensionScore, ignoring: dict[str, str]) -> tuple[DimensionScore, list[Ignored]]:
    """dim1 scored without the checks the configuration ignores (10 when every other check passes)."""
    dropped = [c for c in dim1.checks if not c.passed and f"dim1.{c.name}" in ignoring]
    if not dropped:
        return dim1, []
    failed = [c for c in dim1.checks if not c.passed and c not in dropped]
    reasons = tuple(f"{c.name}: {c.reason}" for c in failed) or (
        f"all frontmatter checks pass but {len(dropped)} ignored by configuration",)
    return (DimensionScore("dim1", 0 if failed else 10, dim1.source, reasons, dim1.checks, dim1.details),
            [Ignored(f"dim1.{c.name}", None, c.reason, ignoring[f"dim1.{c.name}"]) for c in dropped])


def severity(kind: str) -> Severity:
    return RULES[kind][0] if kind in RULES else Severity.ERROR


def apply_gates(results: list[SkillResult], options: ScoreOptions) -> int:
    """Record each skill's gate failures and return the exit status (2 beats 1 beats 0): an unreadable skill is 2;
    an error-level finding (a merge marker), a score under fail-under, a regression, or with --strict any finding
    is 1."""
    status = EXIT_OK
    config = options.config
    for result in results:
        if result.score is None:
            status = EXIT_ERROR
            continue
        value = result.gated_value
        what = "total" if result.score.llm_scored else "deterministic subtotal"
        if config.fail_under is not None and value is not None and value < config.fail_under:
            result.gate_failures.append(f"{what} {value} is under fail-under {config.fail_under:g} "
                                        f"({config.origins.get('fail-under')})")
        errors = [v for v in result.score.violations if severity(v.kind) is Severity.ERROR]
        if errors:
            result.gate_failures.append(f"{len(errors)} error-level finding(s): {', '.join(sorted({v.kind for v in errors}))}")
        if config.strict and len(result.score.violations) > len(errors):
            result.gate_failures.append(f"{len(result.score.violations) - len(errors)} warning(s) with strict "
                                        f"({config.origins.get('strict')})")
        if options.changed and not options.allow_regression and result.regressed:
            assert result.base_score is not None
            base = result.base_score.total if result.score.llm_scored else result.base_score.deterministic_subtotal
            result.gate_failures.append(f"{what} fell from {base} to {value} since {options.base}")
        if result.gate_failures and status == EXIT_OK:
            status = EXIT_GATE
    return status


@functools.cache
def listing_formats() -> Formats:
    """How clients list skills (scoring/skill_listings.json, shipped with the package)."""
    return formats_from(resources.files("scoring").joinpath("skill_listings.json").read_text(encoding="utf-8"))
