"""The offline proposer's strategies: deterministic edits, one per dimension, from the design's P0–P3 library.

Each strategy reads the skill and returns candidate edits (most targeted
first); ``offline_proposer`` checks them. Inserted text is Chinese for Chinese
skills and English otherwise. No strategy adds a file or changes what the skill
is for: they add checkpoints, counter-examples, fallback tables and missing
chapter headings, fix the frontmatter and heading levels, remove repeats and
dead links, and make runtime-bound wording neutral.
"""

from __future__ import annotations

import json
import re

from judges.prompt_design import is_chinese
from scoring.document import SkillDocument
from scoring.edits import Edit
from scoring.frontmatter_rules import WHEN_CUE, quoted_phrases
from scoring.structure_rules import chapter_groups, counter_example_cues, duplicate_headings, duplicate_paragraphs, heading_jumps

IRREVERSIBLE = re.compile(
    r"\b(deploy|delete|drop|merge|publish|send|push|release|overwrite|production|rm)\b|发送|删除|发布|合并|上线|覆盖|推送",
    re.IGNORECASE,
)
RUNTIME_BOUND = re.compile(r"\bin Claude Code\b|~/\.claude/skills/[\w./-]*|在 ?Claude Code ?(里|中)", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^(\s*(?:\d+[.)]|[-*+])\s+)")
_FILLER_TAIL = re.compile(r"(\.\.\.|…|等等|等|之类|以及更多|,? ?etc\.?|,? ?and (more|so on|others))[\s.。!！;；,，]*$", re.IGNORECASE)

TEXT = {
    "en": {
        "stop": "🛑 STOP: confirm with the user before this step; it cannot be undone. ",
        "checkpoint": "\n🛑 STOP: show the result to the user and wait for confirmation before continuing.\n",
        "rules": "Rules",
        "counter": ["- Do not skip or reorder steps without telling the user.",
                    "- Never invent facts, file paths or results; say what is missing instead.",
                    "- Avoid irreversible actions until the user has confirmed them."],
        "fallback": ("\n## Failure handling\n\n| trigger | first fix | still failing |\n|---|---|---|\n"
                     "| an input the step needs is missing | ask the user for it | stop and report what is missing |\n"
                     "| a command or tool fails | read the error, fix the cause, retry once | stop, show the error, ask how to proceed |\n"),
        "headings": {"philosophy": "Overview", "workflow": "Workflow", "constraints": "Rules", "evaluation": "Checklist"},
        "checklist": "\n- [ ] Every step above was completed or its gap reported.\n",
        "when": ' Use when the user says "{t}".', "triggers": ' Trigger words: "{t}".',
    },
    "zh": {
        "stop": "🛑 STOP：执行这一步前先征得用户确认，它不可撤销。",
        "checkpoint": "\n🛑 STOP：把结果给用户看，等用户确认后再继续。\n",
        "rules": "约束",
        "counter": ["- 不要跳过或调换步骤而不告知用户。", "- 禁止编造事实、文件路径或结果；缺信息时直接说明。",
                    "- 切勿在用户确认前执行不可撤销的操作。"],
        "fallback": ("\n## 失败处理\n\n| 触发条件 | 一线修复 | 仍失败兜底 |\n|---|---|---|\n"
                     "| 缺少步骤需要的输入 | 向用户索要 | 停下并说明缺什么 |\n| 命令或工具失败 | 读错误信息、修正后重试一次 | 停下、展示错误、询问用户 |\n"),
        "headings": {"philosophy": "概述", "workflow": "执行流程", "constraints": "约束", "evaluation": "检查清单"},
        "checklist": "\n- [ ] 每一步都已完成，或已说明缺口。\n",
        "when": "当用户说「{t}」时使用。", "triggers": "触发词：「{t}」。",
    },
}


def language(doc: SkillDocument) -> str:
    return "zh" if is_chinese(doc.text) else "en"


def _lines(doc: SkillDocument) -> list[str]:
    return doc.text.split("\n")


# --- P0: runtime binding ------------------------------------------------------------------

def runtime_bound(doc: SkillDocument, skill_name: str) -> bool:
    """Wording or install paths tied to one runtime, unless the skill's name binds it there."""
    if re.search(r"claude", skill_name, re.IGNORECASE):
        return False
    mentions_other = re.search(r"\bcodex\b|\bcursor\b", doc.body, re.IGNORECASE)
    return bool(RUNTIME_BOUND.search(doc.body)) and not mentions_other


def runtime_neutral(doc: SkillDocument, skill_name: str) -> list[Edit]:
    if not runtime_bound(doc, skill_name):
        return []
    line = next(l for l in _lines(doc) if RUNTIME_BOUND.search(l))
    new = re.sub(r"\bin Claude Code\b", "in your agent runtime", line)
    new = re.sub(r"在 ?Claude Code ?(里|中)", "在你使用的 agent runtime 中", new)
    new = re.sub(r"`?~/\.claude/skills/[\w./-]*`?", "your runtime's skills directory (`~/.claude/skills/` for Claude Code, "
                 "`~/.codex/skills/` for Codex, or your runtime's equivalent)", new, count=1)
    return [Edit("dim6", line, new, "P0 runtime binding: make install wording runtime-neutral", 1.0, strategy="runtime-neutral")]


# --- dim1: frontmatter ----------------------------------------------------------------------

def _trigger(doc: SkillDocument, skill_name: str) -> str:
    title = next((h.text for h in doc.headings if h.text), skill_name.replace("-", " "))
    return title[:40].strip() or skill_name


def fix_frontmatter(doc: SkillDocument, skill_name: str) -> list[Edit]:
    lang = TEXT[language(doc)]
    trigger = _trigger(doc, skill_name)
    if doc.frontmatter is None:
        if doc.frontmatter_present:
            return []  # broken YAML: a person should fix it (the violation says where)
        what = f"{trigger}." if language(doc) == "en" else f"{trigger}。"
        description = what + lang["when"].format(t=trigger)
        block = f"---\nname: {skill_name}\ndescription: {json.dumps(description, ensure_ascii=False)}\n---\n"
        first = _lines(doc)[0]
        return [Edit("dim1", first, block + first, "add frontmatter with name and a description that says what and when",
                     2.0, strategy="frontmatter-add")] if doc.text.count(first) == 1 else []
    edits = []
    lines = _lines(doc)
    name = doc.frontmatter.get("name")
    if name != skill_name:
        line = next((l for l in lines[1:] if l.startswith("name:")), None)
        if line and doc.text.count(line) == 1:
            edits.append(Edit("dim1", line, f"name: {skill_name}", "name must equal the directory name", 1.0, strategy="frontmatter-name"))
    description = doc.frontmatter.get("description")
    span = _description_span(lines)
    if isinstance(description, str) and span:
        better = improve_description(description, trigger, language(doc))
        if better != description.strip():
            old = "\n".join(span)
            edits.append(Edit("dim1", old, f"description: {json.dumps(better, ensure_ascii=False)}",
                              "description: say what and when, name trigger words, no filler ending", 2.0, strategy="frontmatter-description"))
    return edits


def _description_span(lines: list[str]) -> list[str]:
    end = next((i for i in range(1, len(lines)) if lines[i] in ("---", "...")), len(lines))
    for i in range(1, end):
        if lines[i].startswith("description:"):
            j = i + 1
            while j < end and (lines[j].startswith((" ", "\t")) or not lines[j].strip()):
                j += 1
            return lines[i:j]
    return []


def improve_description(description: str, trigger: str, lang_code: str) -> str:
    lang = TEXT[lang_code]
    d = _FILLER_TAIL.sub("", " ".join(description.split())).strip()
    d = d.rstrip(" .。;；,，")
    d += "。" if lang_code == "zh" else "."
    if not WHEN_CUE.search(d):
        d += lang["when"].format(t=trigger)
    elif not quoted_phrases(d) and not re.search(r"触发词|关键词|trigger word|keyword|mentions|says|asks for|提到|说", d, re.IGNORECASE):
        d += lang["triggers"].format(t=trigger)
    return d[:1024]


# --- dim4: checkpoints --------------------------------------------------------------------

def add_checkpoint(doc: SkillDocument) -> list[Edit]:
    lang = TEXT[language(doc)]
    lines = _lines(doc)[doc.body_first_line - 1:]
    if "CHECKPOINT" in doc.body or "🔴" in doc.body:
        marker = "🔴 CHECKPOINT" if "🔴 CHECKPOINT" in doc.body else ("CHECKPOINT" if "CHECKPOINT" in doc.body else "🔴")
        if doc.text.count(marker) == 1:
            return [Edit("dim4", marker, f"{marker} · 🛑 STOP", "raise the checkpoint to STOP level", 3.0, strategy="checkpoint-stop")]
    edits = []
    for line in lines:
        if IRREVERSIBLE.search(line) and not line.lstrip().startswith(("#", "|", "```")) and doc.text.count(line) == 1:
            marker = _LIST_MARKER.match(line)
            prefix = marker.group(1) if marker else ""
            edits.append(Edit("dim4", line, prefix + lang["stop"] + line[len(prefix):],
                              "insert 🛑 STOP before the irreversible step", 6.0, strategy="stop-before-irreversible"))
            break
    ordered = [l for l in lines if re.match(r"^\s*\d+[.)]\s", l)]
    if ordered and doc.text.count(ordered[-1]) == 1:
        edits.append(Edit("dim4", "", lang["checkpoint"], "add a STOP checkpoint after the workflow", 6.0,
                          anchor=ordered[-1], strategy="stop-after-workflow"))
    edits.append(Edit("dim4", "", lang["checkpoint"], "add a STOP checkpoint", 6.0, strategy="stop-at-end"))
    return edits


# --- dim7: architecture -------------------------------------------------------------------

def fix_architecture(doc: SkillDocument) -> list[Edit]:
    lines = _lines(doc)
    edits: list[Edit] = []
    jumps = heading_jumps(doc.headings)
    if jumps:
        before, heading = jumps[0]
        line = lines[heading.line - 1]
        shift = heading.level - before.level - 1
        if doc.text.count(line) == 1:
            edits.append(Edit("dim7", line, line[shift:], f"heading jump H{before.level}→H{heading.level}: close the gap",
                              2.0, strategy="heading-jump"))
    for repeat, _first in duplicate_paragraphs(doc):
        para = next(p for p in doc.paragraphs if p.line == repeat)
        block = "\n".join(lines[para.line - 1:para.end_line])
        if doc.text.count("\n\n" + block) == 1:
            edits.append(Edit("dim7", "\n\n" + block, "", "remove the repeated paragraph", 2.0, strategy="dedupe-paragraph"))
    for dup in duplicate_headings(doc.headings):
        line = lines[dup.line - 1]
        if doc.text.count("\n" + line + "\n") == 1:
            edits.append(Edit("dim7", "\n" + line + "\n", "\n", "merge the duplicate section into the one before", 2.0, strategy="merge-duplicate-heading"))
    edits += _missing_chapters(doc)
    return edits


def _missing_chapters(doc: SkillDocument) -> list[Edit]:
    groups = chapter_groups(doc.headings)
    if len(groups) >= 3:
        return []
    lang = TEXT[language(doc)]
    level = min((h.level for h in doc.headings), default=1)
    sub = "#" * min(6, level + 1) if doc.headings and doc.headings[0].level == level and sum(h.level == level for h in doc.headings) == 1 else "#" * level
    lines = _lines(doc)
    edits = []
    if "philosophy" not in groups and doc.headings:
        h1 = lines[doc.headings[0].line - 1]
        if doc.text.count(h1) == 1:
            edits.append(Edit("dim7", "", f"\n\n{sub} {lang['headings']['philosophy']}", "add the overview chapter heading",
                              3.0, anchor=h1, strategy="chapter-philosophy"))
    if "workflow" not in groups:
        first = next((l for l in lines[doc.body_first_line - 1:] if re.match(r"^\d+[.)]\s", l)), None)
        if first and doc.text.count(first) == 1:
            edits.append(Edit("dim7", first, f"{sub} {lang['headings']['workflow']}\n\n{first}", "add the workflow chapter heading",
                              3.0, strategy="chapter-workflow"))
    if "constraints" not in groups:
        counter = next((l for l in lines[doc.body_first_line - 1:] if counter_example_cues(l) and not l.startswith("#")), None)
        if counter and doc.text.count(counter) == 1:
            edits.append(Edit("dim7", counter, f"{sub} {lang['headings']['constraints']}\n\n{counter}", "add the rules chapter heading",
                              3.0, strategy="chapter-constraints"))
        else:
            edits.append(Edit("dim7", "", f"\n{sub} {lang['headings']['constraints']}\n\n" + "\n".join(lang["counter"]) + "\n",
                              "add a rules chapter with counter-examples", 3.0, strategy="chapter-constraints-new"))
    if "evaluation" not in groups:
        edits.append(Edit("dim7", "", f"\n{sub} {lang['headings']['evaluation']}\n{lang['checklist']}", "add a checklist chapter",
                          3.0, strategy="chapter-evaluation"))
    return edits


# --- dim9, dim3, dim5, dim6 ------------------------------------------------------------------

def add_counter_examples(doc: SkillDocument) -> list[Edit]:
    lang = TEXT[language(doc)]
    have = {l.strip() for l in doc.body.split("\n") if counter_example_cues(l)}
    needed = [c for c in lang["counter"] if c.strip() not in have][: max(0, 3 - len(have))]
    if not needed:
        return []
    text = "\n".join(needed)
    rules = next((h for h in doc.headings if "constraints" in chapter_groups((h,))), None)
    edits = []
    if rules is not None:
        line = _lines(doc)[rules.line - 1]
        if doc.text.count(line) == 1:
            edits.append(Edit("dim9", "", f"\n\n{text}", "add counter-examples under the rules", 4.0, anchor=line, strategy="counter-examples"))
    edits.append(Edit("dim9", "", f"\n## {lang['rules']}\n\n{text}\n", "add a rules section with counter-examples", 4.0,
                      strategy="counter-examples-section"))
    return edits


def add_fallback_table(doc: SkillDocument) -> list[Edit]:
    if re.search(r"\|\s*(trigger|触发条件)\s*\|", doc.body, re.IGNORECASE):
        return []
    return [Edit("dim3", "", TEXT[language(doc)]["fallback"], "add a trigger / first fix / still failing table", 3.0,
                 strategy="fallback-table")]


_SOFTENERS = [("可以考虑", ""), ("根据情况", ""), ("适当", ""), ("建议", "必须"), ("consider ", ""), (" if needed", ""),
              (" as appropriate", ""), ("maybe ", ""), ("possibly ", "")]


def firm_up_wording(doc: SkillDocument) -> list[Edit]:
    for line in doc.body.split("\n"):
        new = line
        for soft, firm in _SOFTENERS:
            new = new.replace(soft, firm)
        if new != line and new.strip() and doc.text.count(line) == 1:
            return [Edit("dim5", line, new, "replace soft wording with a firm instruction", 1.0, strategy="firm-wording")]
    return []


def remove_dead_references(doc: SkillDocument, missing: list[str]) -> list[Edit]:
    for target in missing:
        link = re.search(r"\[([^\]]*)\]\(<?" + re.escape(target) + r"[^)]*\)", doc.text)
        if link and doc.text.count(link.group(0)) == 1:
            return [Edit("dim6", link.group(0), link.group(1), f"unlink the dead reference {target}", 1.0, strategy="dead-link")]
        for line in doc.text.split("\n"):
            if f"`{target}`" in line and doc.text.count(line) == 1:
                sentences = re.split(r"(?<=[.。])\s+", line)
                kept = " ".join(s for s in sentences if f"`{target}`" not in s)
                return [Edit("dim6", line, kept, f"drop the sentence that points at the missing {target}", 1.0, strategy="dead-reference")]
    return []
