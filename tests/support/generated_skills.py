"""Skills written by a seeded generator, for the checks the public corpus also runs: data nobody tuned on.

Each skill mixes the shapes that trip an editor (fenced and indented code with `#` lines, pipe
tables, HTML blocks, lists, CJK text, links, placeholder references to folders that exist) with the
defects an honest offline backend may fix (a filler ending, a heading-level jump, an exact repeated
paragraph, a link to a file that moved into ``references/``). Change the seed and the set changes.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

WORDS = ("table", "migration", "report", "review", "schema", "deploy", "token", "cache", "index", "query", "branch",
         "release", "budget", "owner", "timeout", "retry", "fixture", "ledger", "invoice", "summary")
CJK = ("检查每个字段的类型与默认值。", "先备份数据库，再执行迁移脚本。", "不要在周五下午发布。", "输出中文周报，按项目分组。")
SECTIONS = ("Overview", "Workflow", "Steps", "Rules", "Checklist", "Examples", "Troubleshooting", "注意事项", "执行流程", "About")


def sentence(rng: random.Random, low: int = 6, high: int = 14) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random) -> str:
    parts = [sentence(rng) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.3:
        parts.append(rng.choice(CJK))
    if rng.random() < 0.3:
        parts.insert(1, f"Run `{rng.choice(WORDS)} --check` first.")
    return " ".join(parts)


def block(rng: random.Random, references: list[str]) -> str:
    kind = rng.choice(("paragraph", "paragraph", "list", "numbered", "fence", "indented", "table", "html", "quote", "link"))
    if kind == "list":
        return "\n".join(f"- {sentence(rng, 3, 8)}" for _ in range(rng.randint(2, 4)))
    if kind == "numbered":
        return "\n".join(f"{i}. {sentence(rng, 3, 8)}" for i in range(1, rng.randint(3, 5)))
    if kind == "fence":
        lang = rng.choice(("python", "bash", ""))
        body = [f"# {sentence(rng, 2, 4)}", f"{rng.choice(WORDS)}_id = load('{rng.choice(WORDS)}')", "obj.delete()"]
        return f"```{lang}\n" + "\n".join(body) + "\n```"
    if kind == "indented":
        return "    # not a heading\n    make " + rng.choice(WORDS)
    if kind == "table":
        rows = [f"| {rng.choice(WORDS)} | {sentence(rng, 2, 5)} |" for _ in range(rng.randint(2, 3))]
        return "| name | meaning |\n|---|---|\n" + "\n".join(rows)
    if kind == "html":
        return f"<details>\n<summary>{rng.choice(WORDS)}</summary>\n\n{sentence(rng)}\n\n</details>"
    if kind == "quote":
        return f"> {sentence(rng)}"
    if kind == "link" and references:
        return f"See [{rng.choice(WORDS)}]({rng.choice(references)}) for the details. {sentence(rng)}"
    return paragraph(rng)


def skill(rng: random.Random, name: str) -> tuple[str, dict[str, str]]:
    """One skill's SKILL.md and its other files, with zero to three defects an offline fix is right for."""
    files = {f"references/{w}.md": f"# {w}\n" for w in rng.sample(WORDS, 2)}
    files["references/styles/plain.md"] = "# plain\n"
    references = [p for p in files if "styles" not in p] + ["references/styles/<style>.md"]
    moved = rng.random() < 0.25  # one link written before its file moved into references/
    description = f"{sentence(rng)} Use when the user says \"{rng.choice(WORDS)} this\"."
    if rng.random() < 0.3:
        description = description[:-1] + rng.choice((", etc.", " and more.", "等。"))
    lines = ["---", f"name: {name}", f"description: {json.dumps(description, ensure_ascii=False)}", "---", "", f"# {name}", ""]
    repeated = paragraph(rng) + " " + sentence(rng)
    jump, repeat = rng.random() < 0.3, rng.random() < 0.35
    titles = rng.sample(SECTIONS, rng.randint(3, 5))
    for index, title in enumerate(titles):
        lines += [f"## {title}", ""]
        if jump and index == 1:
            lines += [f"#### {rng.choice(WORDS).capitalize()} details", ""]
        for _ in range(rng.randint(1, 4)):
            lines += [block(rng, references), ""]
        if index == 0 or (repeat and index == len(titles) - 1):
            lines += [repeated, ""]  # the second copy is an exact repeat a fix may remove
    if moved:
        lines += [f"Read [the notes]({Path(next(iter(files))).name}).", ""]
    return "\n".join(lines), files


def write_generated(root: Path, count: int = 24, seed: int = 7) -> Path:
    """``count`` generated skills under ``root/generated/<name>/``: the corpus's layout."""
    rng = random.Random(seed)
    for number in range(count):
        name = f"gen-{seed}-{number:02d}"
        text, files = skill(rng, name)
        folder = root / "generated" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(text, encoding="utf-8")
        for relative, content in files.items():
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_text(content, encoding="utf-8")
    return root
