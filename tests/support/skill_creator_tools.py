"""skill-creator's own aggregator and viewer (vendored in ``tests/support/skill_creator``), run as their users run
them, and the shapes its ``references/schemas.md`` gives each file: what Luban's eval records must open in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema

TOOLS = Path(__file__).parent / "skill_creator"

_NUMBER_OR_NULL = {"type": ["number", "null"]}
_STATS = {"type": "object", "required": ["mean", "stddev"], "properties": {k: _NUMBER_OR_NULL for k in ("mean", "stddev", "min", "max")}}
_EXPECTATION = {"type": "object", "required": ["text", "passed", "evidence"],
                "properties": {"text": {"type": "string"}, "passed": {"type": ["boolean", "null"]}, "evidence": {"type": "string"}}}
_RESULT = {"type": "object", "required": ["pass_rate", "passed", "total", "time_seconds", "tokens", "errors"],
           "properties": {"pass_rate": {"type": "number"}}}
_RUN = {"type": "object", "required": ["eval_id", "eval_name", "configuration", "run_number", "result"],
        "properties": {"configuration": {"enum": ["with_skill", "without_skill"]}, "run_number": {"type": "integer"},
                       "result": _RESULT}}
_CONFIGURATION = {"type": "object", "required": ["pass_rate", "time_seconds", "tokens"],
                  "properties": {k: _STATS for k in ("pass_rate", "time_seconds", "tokens")}}
# references/schemas.md, with the fields its readers use required and typed ("the viewer reads these field names exactly")
SCHEMAS = {
    "grading.json": {"type": "object", "required": ["expectations", "summary"], "properties": {
        "expectations": {"type": "array", "items": _EXPECTATION},
        "assertion_results": {"type": "array", "items": _EXPECTATION},
        "summary": {"type": "object", "required": ["passed", "failed", "total", "pass_rate"], "properties": {
            "passed": {"type": "integer"}, "failed": {"type": "integer"}, "total": {"type": "integer"},
            "pass_rate": _NUMBER_OR_NULL}},
        "timing": {"type": "object", "properties": {"executor_duration_seconds": {"type": "number"}}},
        "execution_metrics": {"type": "object", "properties": {
            "tool_calls": {"type": "object", "additionalProperties": {"type": "integer"}},
            "total_tool_calls": {"type": "integer"}, "errors_encountered": {"type": "integer"},
            "output_chars": {"type": "integer"}}}}},
    "timing.json": {"type": "object", "required": ["total_tokens"], "properties": {
        "total_tokens": {"type": "integer"}, "duration_ms": {"type": "integer"},
        "total_duration_seconds": {"type": "number"}, "executor_duration_seconds": {"type": "number"}}},
    "eval_metadata.json": {"type": "object", "required": ["eval_id", "eval_name", "prompt", "assertions"], "properties": {
        "eval_id": {"type": "integer"}, "eval_name": {"type": "string"}, "prompt": {"type": "string"},
        "assertions": {"type": "array", "items": {"type": "string"}}}},
    "benchmark.json": {"type": "object", "required": ["metadata", "runs", "run_summary"], "properties": {
        "metadata": {"type": "object", "required": ["skill_name", "timestamp", "evals_run", "runs_per_configuration"]},
        "runs": {"type": "array", "items": _RUN},
        "run_summary": {"type": "object", "properties": {c: _CONFIGURATION for c in ("with_skill", "without_skill")}},
        "notes": {"type": "array", "items": {"type": "string"}}}},
}


def check_shapes(evals: Path) -> int:
    """Validate every file of the layout that schemas.md describes; how many were checked."""
    checked = 0
    for path in sorted(evals.rglob("*.json")):
        schema = SCHEMAS.get(path.name)
        if schema is not None:
            jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), schema)
            checked += 1
    return checked


def aggregate(evals: Path, out: Path) -> dict:
    """``aggregate_benchmark.py <evals> --output <out>``: the benchmark it computes from the run folders alone."""
    out.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, str(TOOLS / "aggregate_benchmark.py"), str(evals), "--output", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def viewer_runs(evals: Path, html: Path) -> list[dict]:
    """``generate_review.py <evals> --static <html>``: the runs its page lists, as embedded in the page."""
    done = subprocess.run([sys.executable, str(TOOLS / "generate_review.py"), str(evals), "--static", str(html)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    page = html.read_text(encoding="utf-8")
    start = page.index("const EMBEDDED_DATA = ") + len("const EMBEDDED_DATA = ")
    data, _ = json.JSONDecoder().raw_decode(page, start)
    return data["runs"]
