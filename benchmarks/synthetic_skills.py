"""A reproducible set of synthetic skills shaped like the corpus, for throughput runs.

Sizes are drawn from the corpus's own SKILL.md sizes (with a ±30 % jitter), and
the text is built from the corpus's vocabulary in the structures real skills
use: frontmatter, chaptered headings, numbered steps, bullet lists, fenced
code, links into references/, a Chinese skill in every five. Same seed, same
bytes, so two runs measure the same work.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

_WORD = re.compile(r"[A-Za-z]{3,12}")
_CHINESE = "技能用户需要检查文件流程步骤规则输出结果确认提交代码测试评审文档格式数据分析模板生成"


def corpus_profile(skill_files: list[Path]) -> tuple[list[int], list[str]]:
    """The byte sizes of the corpus skills and the words they use."""
    sizes, words = [], set()
    for path in skill_files:
        data = path.read_bytes()
        sizes.append(len(data))
        words.update(w.lower() for w in _WORD.findall(data.decode("utf-8", "replace")))
    return sizes, sorted(words)


def write_skills(dest: Path, count: int, sizes: list[int], words: list[str], seed: int = 8) -> list[Path]:
    """``count`` skill directories under ``dest``; returns their SKILL.md paths."""
    rng = random.Random(seed)
    paths = []
    for index in range(count):
        name = f"synthetic-{index:04d}"
        target = int(rng.choice(sizes) * rng.uniform(0.7, 1.3))
        skill_dir = dest / name
        (skill_dir / "references").mkdir(parents=True)
        (skill_dir / "references" / "guide.md").write_text("# Guide\n", encoding="utf-8")
        text = _skill_text(rng, name, target, words, chinese=index % 5 == 4)
        (skill_dir / "SKILL.md").write_text(text, encoding="utf-8")
        paths.append(skill_dir / "SKILL.md")
    return paths


def _sentence(rng: random.Random, words: list[str], chinese: bool) -> str:
    if chinese:
        return "".join(rng.choice(_CHINESE) for _ in range(rng.randint(12, 40))) + "。"
    return " ".join(rng.choice(words) for _ in range(rng.randint(8, 22))).capitalize() + "."


def _skill_text(rng: random.Random, name: str, target: int, words: list[str], chinese: bool) -> str:
    description = _sentence(rng, words, chinese).rstrip(".。") + ". Use when the user asks to \"" + name + "\"."
    parts = [f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n"]
    chapters = ["## 概述", "## 执行流程", "## 规则", "## 检查清单"] if chinese else [
        "## Overview", "## Workflow", "## Rules", "## Checklist"]
    size, chapter = len(parts[0].encode()), 0
    while size < target:
        if chapter < len(chapters) and rng.random() < 0.3:
            block = chapters[chapter] + "\n"
            chapter += 1
        else:
            block = _block(rng, words, chinese)
        parts.append(block)
        size += len(block.encode()) + 1
    return "\n".join(parts)


def _block(rng: random.Random, words: list[str], chinese: bool) -> str:
    kind = rng.random()
    if kind < 0.35:
        return " ".join(_sentence(rng, words, chinese) for _ in range(rng.randint(2, 5))) + "\n"
    if kind < 0.55:
        return "".join(f"{i}. {_sentence(rng, words, chinese)}\n" for i in range(1, rng.randint(3, 7)))
    if kind < 0.75:
        return "".join(f"- **{rng.choice(words)}**: {_sentence(rng, words, chinese)}\n" for _ in range(rng.randint(2, 6)))
    if kind < 0.85:
        body = "\n".join(f"{rng.choice(words)} --{rng.choice(words)} {rng.choice(words)}" for _ in range(rng.randint(2, 8)))
        return f"```bash\n{body}\n```\n"
    if kind < 0.92:
        return f"Do not {' '.join(rng.choice(words) for _ in range(6))}; see [the guide](references/guide.md).\n"
    return f"### {rng.choice(words).capitalize()} {rng.choice(words)}\n"
