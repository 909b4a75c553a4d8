"""`luban optimize --approval cli` in a real terminal (a pseudo-terminal): the checkpoints are asked and obeyed."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workspace.results_tsv import ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")
BIN = Path(sys.executable).parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal:
    """A child process on a pseudo-terminal; ``expect`` reads until a pattern shows, ``send`` types a line."""

    def __init__(self, args: list[str], env: dict[str, str]):
        master, slave = os.openpty()
        self.master, self.seen = master, ""
        self.process = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)

    def expect(self, pattern: str, timeout: float = 120) -> re.Match:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = re.search(pattern, ANSI.sub("", self.seen))
            if found:
                self.seen = ANSI.sub("", self.seen)[found.end():]
                return found
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536).decode("utf-8", "replace")
                except OSError:  # the child closed the terminal
                    break
        raise AssertionError(f"no {pattern!r} within {timeout} s; the terminal showed:\n{ANSI.sub('', self.seen)[-3000:]}")

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> int:
        try:
            return self.process.wait(60)
        finally:
            os.close(self.master)


def test_cli_approval_asks_in_the_terminal_and_a_no_restores_the_original(example_skills: Path):
    from prefect.settings import PREFECT_API_URL

    original = (example_skills / "pr-review" / "SKILL.md").read_bytes()
    env = dict(os.environ, PREFECT_API_URL=PREFECT_API_URL.value(), COLUMNS="120")
    terminal = Terminal([str(BIN / "luban"), "optimize", "pr-review", "--skills-dir", str(example_skills),
                         "--mode", "quick", "--approval", "cli", "--max-rounds", "1"], env)
    try:
        terminal.expect(r"CHECKPOINT test-prompts")
        terminal.expect(r"approve\? \[Y/n\]")
        terminal.send("y")
        terminal.expect(r"CHECKPOINT baseline")
        terminal.expect(r"approve\? \[Y/n\]")
        terminal.send("y")
        terminal.expect(r"CHECKPOINT max-rounds-pr-review")
        terminal.expect(r"choose one of one more round, exploratory rewrite, finish")
        terminal.send("finish")
        terminal.expect(r"CHECKPOINT skill-pr-review")
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
