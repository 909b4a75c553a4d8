"""`luban score`: score skills on disk and decide the CI gate's exit status.

Kept free of Prefect, openai and pandas (CI runs this on every push); git is
imported only for `--changed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from scoring import SkillScore, UnreadableSkill
from scoring.document import decode, parse
from scoring.rubric import score_document
from workspace.skill_source import SkillSource, discover, read_skill

EXIT_OK, EXIT_GATE, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class ScoreOptions:
    paths: tuple[str, ...]
    fail_under: float | None = None
    strict: bool = False
    changed: bool = False
    base: str | None = None
    allow_regression: bool = False


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


def source_text(source: SkillSource) -> tuple[str | None, str | None]:
    """(the skill's text, None), or (None, why it cannot be scored): unreadable, too large, not UTF-8, empty."""
    if source.error is not None or source.data is None:
        return None, source.error or f"{source.path}: could not be read"
    try:
        return decode(source.data), None
    except UnreadableSkill as err:
        return None, f"{source.path}: {err}"


def score_source(source: SkillSource) -> tuple[SkillScore | None, str | None]:
    text, error = source_text(source)
    if text is None:
        return None, error
    try:
        return score_document(parse(text), source.name, source.files), None
    except Exception as err:  # noqa: BLE001 - one skill the scorer cannot read must not stop the gate for the others
        return None, (f"{source.path}: the scorer failed on this file ({type(err).__name__}: {err}); the other skills "
                      "were scored. Please report it with the file attached")


def collect(options: ScoreOptions) -> list[SkillResult]:
    """Score every skill the options name; with --changed, also each one's version at base."""
    if options.changed:
        return _collect_changed(options)
    results = []
    for item in discover(list(options.paths)):
        source = item if isinstance(item, SkillSource) else read_skill(item)
        score, error = score_source(source)
        results.append(SkillResult(source, score, error))
    return results


def _collect_changed(options: ScoreOptions) -> list[SkillResult]:
    from workspace.git_revisions import changed_skills

    scopes = [Path(p) for p in options.paths]
    results = []
    for change in changed_skills(Path.cwd(), options.base or "HEAD", scopes or None):
        if change.deleted:
            continue
        source = read_skill(change.path)
        score, error = score_source(source)
        result = SkillResult(source, score, error, is_new=change.at_base is None)
        if change.at_base is not None:
            result.base_path = change.at_base.path
            result.base_score, result.base_error = score_source(change.at_base)
        results.append(result)
    return results


def apply_gates(results: list[SkillResult], options: ScoreOptions) -> int:
    """Record each skill's gate failures and return the exit status (2 beats 1 beats 0)."""
    status = EXIT_OK
    for result in results:
        if result.score is None:
            status = EXIT_ERROR
            continue
        value = result.gated_value
        what = "total" if result.score.llm_scored else "deterministic subtotal"
        if options.fail_under is not None and value is not None and value < options.fail_under:
            result.gate_failures.append(f"{what} {value} is under --fail-under {options.fail_under}")
        if options.strict and result.score.violations:
            result.gate_failures.append(f"{len(result.score.violations)} violation(s) with --strict")
        if options.changed and not options.allow_regression and result.regressed:
            assert result.base_score is not None
            base = result.base_score.total if result.score.llm_scored else result.base_score.deterministic_subtotal
            result.gate_failures.append(f"{what} fell from {base} to {value} since {options.base}")
        if result.gate_failures and status == EXIT_OK:
            status = EXIT_GATE
    return status
