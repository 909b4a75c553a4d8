"""`luban optimize` in a real terminal: the first Ctrl-C, and log lines above the progress bar (prompts: test_cli_approval)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import git
import pytest

from tests.support.openai_server import Request, Scripted, ScriptedOpenAI
from tests.support.scripted_llm import LubanResponder, kind_of
from tests.support.terminal import ANSI, Terminal
from workspace.results_tsv import ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")
BIN = Path(sys.executable).parent
NOISE = ("Traceback", "EventsWorker", "Unable to connect", "Connection refused", "CancelledError")


class SlowResponder(LubanResponder):
    """Valid replies, each after ``latency`` seconds from the first call of kind ``slow_from`` on (every call, without
    one): a run long enough to be interrupted in the middle, which gets there without waiting on the calls before."""

    def __init__(self, latency: float, slow_from: str | None = None):
        super().__init__()
        self.latency, self.slow_from, self.slow = latency, slow_from, slow_from is None

    def __call__(self, request: Request) -> Scripted:
        scripted = super().__call__(request)
        self.slow = self.slow or kind_of(request) == self.slow_from
        scripted.delay = self.latency if self.slow else 0.0
        return scripted


def online_env(server: ScriptedOpenAI) -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    return dict(os.environ, PREFECT_API_URL=PREFECT_API_URL.value(), OPENAI_BASE_URL=server.base_url, COLUMNS="120",
                OPENAI_API_KEY="sk-luban-test-terminal-0001", LUBAN_JUDGE_MODEL="judge-a", LUBAN_TARGET_MODEL="target-m",
                LUBAN_EDITOR_MODEL="editor-e", LUBAN_MAX_RETRIES="0")


def wait_for_request(server: ScriptedOpenAI, kind: str, timeout: float = 180) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(kind_of(r) == kind for r in server.chat_requests()):
            return
        time.sleep(0.2)
    raise AssertionError(f"no {kind} request within {timeout} s")


def test_the_first_ctrl_c_stops_at_once_says_what_was_kept_and_resume_finishes(example_skills: Path):
    """Before: 2 min 20 s to exit, ~490 event-worker lines, and `[Errno 111] Connection refused` at the end."""
    command = [str(BIN / "luban"), "optimize", "pr-review", "--skills-dir", str(example_skills), "--mode", "full",
               "--init-git", "--approval", "auto", "--max-rounds", "3"]
    server = ScriptedOpenAI()
    server.responder = SlowResponder(latency=0.3, slow_from="propose")
    with server:
        terminal = Terminal(command, online_env(server))
        try:
            wait_for_request(server, "propose")  # Phase 2 is under way: baseline measured, an edit being proposed
            terminal.interrupt()
            pressed = time.monotonic()
            status = terminal.process.wait(30)
            took = time.monotonic() - pressed
            shown = ANSI.sub("", terminal.seen + terminal.read_for(0.5))
        finally:
            terminal.close()
    assert status == 130, shown[-3000:]
    assert took < 5, f"{took:.1f} s from Ctrl-C to exit"  # 2 s is the aim; the margin is for a loaded CI machine
    assert "luban optimize: interrupted;" in shown and "--resume --skills-dir" in shown, shown[-3000:]
    assert [n for n in NOISE if n in shown] == [], shown[-3000:]
    rerun = [*command[:-2], "--resume"]
    fast = ScriptedOpenAI()
    fast.responder = LubanResponder()
    with fast:
        import subprocess

        done = subprocess.run(rerun, env=online_env(fast), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    repo = git.Repo(example_skills)
    assert not repo.is_dirty(untracked_files=False)  # the interrupted round's candidate was rolled back or committed
    rows = ResultsFile(example_skills.parent / "luban-workspace" / "full" / "pr-review" / "results.tsv").rows()
    assert rows and all(r.status in ("baseline", "keep", "revert", "skip", "no_edit", "error") for r in rows)


def test_log_lines_print_above_the_bar_through_its_console_and_the_handlers_come_back():
    """Prefect's console handler prints through a rich Console bound to the real stderr: through the bar, not above."""
    import io
    import logging

    from rich.console import Console

    from flows.interaction.progress import _logs_above

    class ConsoleHandler(logging.StreamHandler):  # Prefect's PrefectConsoleHandler prints through self.console
        def __init__(self) -> None:
            super().__init__(sys.__stderr__)
            self.console = Console(file=io.StringIO())

    logger = logging.getLogger("luban-test-logs-above")
    rich_handler, plain_handler = ConsoleHandler(), logging.StreamHandler(sys.__stderr__)
    logger.addHandler(rich_handler)
    logger.addHandler(plain_handler)
    live_console = Console(file=io.StringIO())
    try:
        with _logs_above(live_console):
            assert rich_handler.console is live_console
            assert plain_handler.stream is sys.stderr
        assert rich_handler.console is not live_console and plain_handler.stream is sys.__stderr__
    finally:
        logger.removeHandler(rich_handler)
        logger.removeHandler(plain_handler)


def test_sigterm_ends_evaluate_within_two_seconds_with_one_line_and_no_process_left(example_skills: Path):
    """What `timeout`, a cancelled CI job, systemd and Kubernetes send. Before: evaluate had no handler; the phase task
    crashed, and the process stayed alive for minutes while its LLM calls finished."""
    import signal

    command = [str(BIN / "luban"), "evaluate", "pr-review", "api-changelog", "--skills-dir", str(example_skills),
               "--mode", "full"]
    status, out, err, took = terminated(command, latency=5.0, when="with_skill")  # every call in flight at the signal
    assert status == 128 + signal.SIGTERM, err[-3000:]
    assert took < 2.5, f"{took:.1f} s from SIGTERM to exit"  # 2 s is the aim; the margin is for a loaded machine
    assert out == ""  # no half JSON document on stdout
    last = err.strip().splitlines()[-1]
    assert last.startswith("luban evaluate: terminated (SIGTERM);") and "Evaluate again with: luban evaluate" in last, err[-2000:]
    assert [n for n in NOISE if n in err] == [], err[-3000:]


def test_sigterm_in_the_middle_of_phase_2_stops_like_ctrl_c_and_resume_finishes(example_skills: Path):
    import signal
    import subprocess

    command = [str(BIN / "luban"), "optimize", "pr-review", "--skills-dir", str(example_skills), "--mode", "full",
               "--init-git", "--approval", "auto", "--max-rounds", "3"]
    status, out, err, took = terminated(command, latency=0.3, when="propose")  # Phase 2 under way
    assert status == 128 + signal.SIGTERM and took < 2.5, (took, err[-3000:])
    assert "luban optimize: terminated (SIGTERM);" in err and "--resume --skills-dir" in err, err[-3000:]
    document = json.loads(out)  # a scheduler reading run.json still gets the run's one document
    assert document["stopped"] == "terminated (SIGTERM)" and "--resume --skills-dir" in document["resume"], out
    assert document["kept"] == {} and document["report"] is None
    fast = ScriptedOpenAI()
    fast.responder = LubanResponder()
    with fast:
        done = subprocess.run([*command[:-2], "--resume"], env=online_env(fast), capture_output=True, text=True,
                              timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not git.Repo(example_skills).is_dirty(untracked_files=False)
    rows = ResultsFile(example_skills.parent / "luban-workspace" / "full" / "pr-review" / "results.tsv").rows()
    assert rows[0].status == "baseline" and rows[-1].round >= 1


def terminated(command: list[str], latency: float, when: str) -> tuple[int, str, str, float]:
    """The command against a server answering every call from the first of kind ``when`` on after ``latency`` s, sent
    SIGTERM once that call arrives: (status, stdout, stderr, seconds from the signal to the exit)."""
    import signal
    import subprocess

    server = ScriptedOpenAI()
    server.responder = SlowResponder(latency=latency, slow_from=when)
    with server:
        process = subprocess.Popen(command, env=online_env(server), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_request(server, when)
            process.send_signal(signal.SIGTERM)
            sent = time.monotonic()
            out, err = process.communicate(timeout=30)
            return process.returncode, out, err, time.monotonic() - sent
        finally:
            if process.poll() is None:
                process.kill()
