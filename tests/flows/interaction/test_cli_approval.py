"""`luban optimize --approval cli` in a real terminal (a pseudo-terminal): the checkpoints are asked and obeyed."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tests.support.terminal import Terminal
from workspace.results_tsv import ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")
BIN = Path(sys.executable).parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_cli_approval_asks_in_the_terminal_and_a_no_restores_the_original(example_skills: Path):
    """Also what a person sees: the prompts themselves at test-prompts, and a question the progress bar does not
    redraw over (it did, ten times a second, under `choose one of …`: the screen looked frozen)."""
    from prefect.settings import PREFECT_API_URL

    original = (example_skills / "pr-review" / "SKILL.md").read_bytes()
    env = dict(os.environ, PREFECT_API_URL=PREFECT_API_URL.value(), COLUMNS="120")
    terminal = Terminal([str(BIN / "luban"), "optimize", "pr-review", "--skills-dir", str(example_skills),
                         "--mode", "quick", "--approval", "cli", "--max-rounds", "1"], env)
    try:
        terminal.expect(r"CHECKPOINT test-prompts")
        terminal.expect(r"\(main\)|\(edge\)|\(error\)")  # the prompts are listed, not only counted
        terminal.expect(r"approve\? \[Y/n\]")
        terminal.send("y")
        terminal.expect(r"CHECKPOINT baseline")
        terminal.expect(r"approve\? \[Y/n\]")
        terminal.send("y")
        terminal.expect(r"CHECKPOINT max-rounds-pr-review")
        terminal.expect(r"choose one of one more round, exploratory rewrite, finish")  # asked while the bar is live
        quiet = terminal.read_for(1.5)
        assert ANSI.sub("", quiet).strip() == "", f"the screen changed under the prompt: {quiet[:300]!r}"
        terminal.send("finish")
        terminal.expect(r"CHECKPOINT skill-pr-review")
        terminal.expect(r"\| dim7 Overall architecture \|")  # what is approved: dimensions by name, and the diff
        terminal.expect(r"```diff")
        terminal.expect(r"approve\? \[Y/n\]")
        terminal.send("n")
        terminal.expect(r"report: \S+")
    finally:
        status = terminal.close()
    assert status == 0
    assert (example_skills / "pr-review" / "SKILL.md").read_bytes() == original
    rows = ResultsFile(example_skills.parent / "luban-workspace" / "quick" / "pr-review" / "results.tsv").rows()
    assert rows[-1].status == "revert" and rows[-1].stop == "user_rejected"
    assert any(r.status == "keep" for r in rows)  # there was a kept edit to undo
