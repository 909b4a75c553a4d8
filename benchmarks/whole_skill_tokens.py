"""What each role reads of a skill, before and after the judges and the target read the skill's files (issue 38).

Usage (from a clean clone): .venv/bin/python benchmarks/whole_skill_tokens.py [SKILLS_DIR ...]

Default: the public corpus at ../shared/corpus when present, else the shipped examples in skills/. For each skill
(SKILL.md and its other text files, evals/ excluded), with the default budgets:

- before: a judge call got SKILL.md and its references' names; a target run got SKILL.md and the directory's names;
- after: a judge call gets ``scoring.skill_view`` within LUBAN_JUDGE_CONTEXT_TOKENS (12 000); a target run that makes
  tool calls gets SKILL.md and reads what SKILL.md references (at most LUBAN_TARGET_TOOL_READS = 6 files); one that
  makes none gets the referenced files inline within LUBAN_TARGET_CONTEXT_TOKENS (6 000).

Printed: tokens per call (median, 90th percentile, max) and the share of the skill's text each role sees (median and
the share of skills it sees whole), counted with the judges' tokenizer (judges/tokens.py). No model is called.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judges.settings import Settings  # noqa: E402 - after the sys.path set-up above
from judges.tokens import count_tokens  # noqa: E402 - as above
from scoring.document import parse  # noqa: E402 - as above
from scoring.skill_view import skill_view  # noqa: E402 - as above
from scoring.validation import scan_references  # noqa: E402 - as above
from workspace.skill_source import list_files, read_sources  # noqa: E402 - as above

MODEL = "gpt-4o-mini"


def tokens(text: str) -> int:
    return count_tokens(text, MODEL)[0]


def measure(skill_md: Path, settings: Settings) -> dict[str, float]:
    text = skill_md.read_text(encoding="utf-8", errors="replace")
    files = list_files(skill_md.parent)
    sources = tuple(s for s in read_sources(skill_md.parent, files) if not s.path.startswith("evals/"))
    refs = [r for r in scan_references(parse(text), files) if r.status == "exists"]
    referenced = tuple(r.target for r in refs)
    whole = tokens(text) + sum(tokens(s.text) for s in sources if s.text)
    names = "\n".join(f"- {f}" for f in sorted(files))
    judge_view = skill_view(text, sources, referenced, settings.judge_context_tokens, tokens)
    inline_view = skill_view(text, sources, referenced, settings.target_context_tokens, tokens)
    by_path = {s.path: s.text for s in sources if s.text}
    reads = [p for p in dict.fromkeys(referenced) if p in by_path][:settings.target_tool_reads]
    judge_after = sum(tokens(t) for t in judge_view.texts().values())
    return {
        "judge_before": tokens(text) + tokens("\n".join(f"- {r.target}" for r in refs)),
        "judge_after": judge_after,
        "target_before": tokens(text) + tokens(names),
        "target_tools": tokens(text) + tokens(names) + sum(tokens(by_path[p]) for p in reads),
        "target_inline": sum(tokens(t) for t in inline_view.texts().values()) + tokens(names),
        "share_before": tokens(text) / whole,
        "share_judge": judge_after / whole,
        "share_tools": (tokens(text) + sum(tokens(by_path[p]) for p in reads)) / whole,
        "share_inline": sum(tokens(t) for t in inline_view.texts().values()) / whole,
        "has_files": float(bool(sources)),
    }


def main() -> None:
    folders = [Path(a) for a in sys.argv[1:]] or [p for p in (ROOT.parent / "shared" / "corpus", ROOT / "skills")
                                                   if p.is_dir()][:1]
    settings = Settings()
    rows = [measure(path, settings) for folder in folders for path in sorted(folder.rglob("SKILL.md"))]
    if not rows:
        sys.exit(f"no SKILL.md under {', '.join(map(str, folders))}")
    print(f"{len(rows)} skills from {', '.join(map(str, folders))}; {sum(r['has_files'] for r in rows):.0f} ship files "
          "beside SKILL.md (evals/ excluded)\n")
    print(f"{'tokens per call':32} {'median':>8} {'p90':>8} {'max':>8}")
    for key, label in (("judge_before", "judge, before (SKILL.md + names)"), ("judge_after", "judge, after"),
                       ("target_before", "target, before"), ("target_tools", "target, after (tool reads)"),
                       ("target_inline", "target, after (inline fallback)")):
        values = sorted(r[key] for r in rows)
        print(f"{label:32} {statistics.median(values):8.0f} {values[int(0.9 * (len(values) - 1))]:8.0f} {values[-1]:8.0f}")
    print(f"\n{'share of the skill text seen':32} {'median':>8} {'whole':>8}")
    for key, label in (("share_before", "any role, before"), ("share_judge", "judge, after"),
                       ("share_tools", "target, after (tool reads)"), ("share_inline", "target, after (inline)")):
        values = [r[key] for r in rows]
        print(f"{label:32} {statistics.median(values):8.0%} {sum(v > 0.999 for v in values) / len(values):8.0%}")
    ratio = statistics.median(r["judge_after"] / r["judge_before"] for r in rows)
    print(f"\njudge call, after / before: {ratio:.2f}x (median over skills)")


if __name__ == "__main__":
    main()
