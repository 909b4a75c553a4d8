"""`luban score` for the tools CI already reads: JUnit XML (Jenkins, GitLab, most dashboards), SARIF 2.1.0 (GitHub
code scanning), and the Markdown table a reviewer reads on a pull request (--changed).

Both files validate against their schemas (tests/flows/gate/test_score_formats.py): JUnit against the junit-10.xsd that
pytest and Jenkins' xunit plugin use, SARIF against the OASIS 2.1.0 JSON schema. Levels follow the gate: an error
finding, an unreadable file or a gate failure is an error; a warning is an error only under strict.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TextIO
from urllib.parse import quote

from flows.gate.check import ScoreOptions, SkillResult, severity
from flows.gate.config import RULES, UNREADABLE, Severity

GATE = "gate"  # fail-under, a regression, an error-level finding: the gate's own verdict on the skill
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")  # what XML 1.0 cannot hold


def _xml_text(text: str) -> str:
    """Text XML 1.0 can carry: a hostile file's control characters shown as \\xNN, never an unparseable report."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def breakdown(result: SkillResult) -> str:
    """The rubric as a reader of the CI log wants it: each dimension, the findings, what was ignored."""
    if result.score is None:
        return result.error or "could not be scored"
    score = result.score
    lines = [f"{score.skill}: {score.explained}; deterministic {score.deterministic_subtotal}/31"]
    for dim in score.dims:
        value = "unscored" if dim.score is None else f"{dim.score:g}/10"
        lines.append(f"  {dim.dim:<5} {dim.name:<34} {value:>9}  {dim.source:<8} {dim.reasons[0] if dim.reasons else ''}")
    lines += [f"  {severity(v.kind).value} {v.kind} line {v.line or '-'}: {v.message}" for v in score.violations]
    lines += [f"  ignored {i.rule} line {i.line or '-'} ({i.why}): {i.message}" for i in result.ignored]
    lines += [f"  gate: {failure}" for failure in result.gate_failures]
    return "\n".join(lines)


def write_junit(results: list[SkillResult], status: int, out: TextIO, options: ScoreOptions | None = None) -> None:
    """One testsuite for the run, one testcase per skill: a failure per gate failure, an error for an unreadable
    skill, and the rubric breakdown in system-out."""
    failed = sum(1 for r in results if r.score is not None and r.gate_failures)
    errors = sum(1 for r in results if r.score is None)
    suites = ET.Element("testsuites", name="luban score", tests=str(len(results)), failures=str(failed),
                        errors=str(errors), time="0")
    suite = ET.SubElement(suites, "testsuite", name="luban score", tests=str(len(results)), failures=str(failed),
                          errors=str(errors), skipped="0", time="0",
                          timestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    for result in results:
        case = ET.SubElement(suite, "testcase", classname="luban.score", name=_xml_text(result.source.path), time="0")
        if result.score is None:
            ET.SubElement(case, "error", type=UNREADABLE, message=_xml_text(result.error or "could not be scored"))
        for failure in result.gate_failures:
            ET.SubElement(case, "failure", type=GATE, message=_xml_text(failure)).text = _xml_text(breakdown(result))
        ET.SubElement(case, "system-out").text = _xml_text(breakdown(result))
    ET.indent(suites)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n")


def _rules() -> list[dict[str, Any]]:
    described = {**{rule: help_text for rule, (_, help_text) in RULES.items()},
                 UNREADABLE: "The file could not be read or decoded (not UTF-8, too large, a link out of the skill, "
                             "not a regular file): it cannot be scored. The message says which and the fix.",
                 GATE: "The skill fails the gate: under fail-under, worse than at the base revision, or holding an "
                       "error-level finding."}
    levels = {rule: level.value for rule, (level, _) in RULES.items()} | {UNREADABLE: "error", GATE: "error"}
    return [{"id": rule, "name": rule.replace(".", "_"), "shortDescription": {"text": text.split(". ")[0].rstrip(".") + "."},
             "fullDescription": {"text": text}, "help": {"text": text},
             "defaultConfiguration": {"level": levels[rule]}} for rule, text in described.items()]


def _location(path: str, line: int | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": quote(path) if not path.startswith("/") else f"file://{quote(path)}"}}
    if not path.startswith("/"):
        physical["artifactLocation"]["uriBaseId"] = "%SRCROOT%"
    if line:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


Finding = tuple[str, int | None, str, str | None, tuple[str, int | None] | None]


def _findings(result: SkillResult) -> list[Finding]:
    """(rule, line, message, why ignored or None, the other skill's place or None) for every finding of the skill,
    failing dim1 checks included."""
    if result.score is None:
        return [(UNREADABLE, None, result.error or "could not be scored", None, None)]
    found: list[Finding] = [(v.kind, v.line, v.message, None, v.related) for v in result.score.violations]
    found += [(f"dim1.{c.name}", 1, f"dim1 check '{c.name}' fails: {c.reason}", None, None)
              for c in result.score.dim("dim1").checks if not c.passed and f"dim1.{c.name}" not in
              {i.rule for i in result.ignored}]
    found += [(i.rule, i.line, i.message, i.why, None) for i in result.ignored]
    found += [(GATE, None, failure, None, None) for failure in result.gate_failures]
    return found


def write_sarif(results: list[SkillResult], status: int, out: TextIO, options: ScoreOptions | None = None) -> None:
    """SARIF 2.1.0: one rule per rubric check and finding kind (with help), one result per finding at its file and
    line, ignored ones as suppressed results."""
    strict = bool(options and options.config.strict)
    rules = _rules()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    sarif_results = []
    for result in results:
        for rule, line, message, why, related in _findings(result):
            level = "error" if rule in (UNREADABLE, GATE) or severity(rule) is Severity.ERROR or strict else "warning"
            level = "note" if why is not None else level  # ignored: shown, and fails nothing
            entry: dict[str, Any] = {"ruleId": rule, "ruleIndex": index[rule], "level": level,
                                     "message": {"text": message}, "locations": [_location(result.source.path, line)]}
            if related is not None:  # a finding across skills: the other skill is where it is also true
                entry["relatedLocations"] = [{"id": 1, **_location(*related), "message": {"text": "the other skill"}}]
            if why is not None:
                entry["suppressions"] = [{"kind": "external", "justification": f"ignored by {why}"}]
            sarif_results.append(entry)
    try:
        tool_version = version("luban")
    except PackageNotFoundError:
        tool_version = "0+checkout"
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "luban", "version": tool_version, "rules": rules}},
                  "invocations": [{"executionSuccessful": True, "exitCode": status}],
                  "results": sarif_results}],
    }
    out.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
