"""The first Ctrl-C, or a SIGTERM, ends a local run at once — as a kill would — and says what was kept and how to go on.

SIGTERM is what ``timeout``, a cancelled CI job, systemd and Kubernetes send; it
gets the same handler as Ctrl-C. Prefect's flow engine puts its own SIGTERM
handler in place when a flow starts (it raises into the flow, marks the run
Crashed and leaves the LLM calls in flight to finish before the process can
exit), so the flows put the luban command's handler back first thing
(``keep_terminal_handler``); a flow a worker runs keeps Prefect's.

Every write Luban makes is atomic and every round is recoverable from the records (the same guarantee that makes
``kill -9`` safe, RELIABILITY.md), so there is nothing to wind down: waiting for Prefect's engine, its event worker
and a temporary API server that the same Ctrl-C has already stopped is what took minutes and printed hundreds of
connection errors. The handler reports from the records — a line on stderr, and the run's one JSON document on stdout (a scheduler
reading ``run.json`` learns how the run stopped, what it kept and how to resume it) —, stops the processes this one
started, and exits 130.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from workspace.layout import MODES, newest_mode
from workspace.results_tsv import ResultsFile, Status


def exit_at_first_interrupt(describe: Callable[[str], str], document: Callable[[str], dict] | None = None) -> None:
    """On SIGINT or SIGTERM: write ``describe(how)`` to stderr and ``document(how)`` as JSON to stdout, stop this
    process's children, exit 128 + the signal."""

    def stop(signum: int, frame: object) -> None:
        how = "interrupted" if signum == signal.SIGINT else f"terminated ({signal.Signals(signum).name})"
        try:
            message = describe(how)
            summary = document(how) if document is not None else None
        except Exception as err:  # noqa: BLE001 - the exit must happen whatever the records say
            message = f"{how} (the records could not be read for a summary: {err})"
            summary = {"stopped": how, "error": message} if document is not None else None
        os.write(2, f"\n{message}\n".encode())
        if summary is not None:
            os.write(1, (json.dumps(summary, indent=2, ensure_ascii=False) + "\n").encode())
        _stop_children()
        os._exit(128 + signum)

    stop.luban_interrupt = True  # type: ignore[attr-defined]  # how keep_terminal_handler recognises it
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def keep_terminal_handler() -> None:
    """Inside a flow started by the luban command: SIGTERM back to the command's handler, which Prefect's engine
    replaced with its own as the flow started (a worker's flow has no such handler, and keeps Prefect's)."""
    ours = signal.getsignal(signal.SIGINT)
    if getattr(ours, "luban_interrupt", False) and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, ours)


def kept_since(workspace_root: Path, started: datetime) -> dict[str, int]:
    """Edits kept (committed and recorded) since ``started``, per skill, from every results.tsv of the workspace."""
    kept: dict[str, int] = {}
    for mode in MODES:
        for path in sorted((workspace_root / mode).glob("*/results.tsv")):
            for row in ResultsFile(path).rows():
                if row.status == Status.KEEP and datetime.fromisoformat(row.timestamp) >= started:
                    kept[row.skill] = kept.get(row.skill, 0) + 1
    return kept


def interrupted_summary(workspace_root: Path, started: datetime, resume_command: str, how: str = "interrupted") -> str:
    kept = kept_since(workspace_root, started)
    done = (f"kept {sum(kept.values())} edit(s), committed and recorded ({', '.join(f'{s} {n}' for s, n in sorted(kept.items()))})"
            if kept else "no edit was kept yet")
    return (f"luban optimize: {how}; {done}. Anything unfinished is rolled back on resume. "
            f"Continue with: {resume_command}")


def interrupted_document(workspace_root: Path, started: datetime, resume_command: str, how: str) -> dict:
    """The run's JSON document when a signal ended it: how it stopped, what it kept, how to go on."""
    kept = kept_since(workspace_root, started)
    return {"stopped": how, "kept": kept, "resume": resume_command, "report": None,
            "notices": [f"{how}: anything unfinished is rolled back on resume"]}


def evaluated_summary(workspace_root: Path, started: datetime, command: str, how: str) -> str:
    """What an interrupted ``luban evaluate`` recorded: the baselines written since it started (each row is atomic)."""
    done: list[str] = []
    for mode in MODES:
        for path in sorted((workspace_root / mode).glob("*/results.tsv")):
            done += [r.skill for r in ResultsFile(path).rows()
                     if r.status == Status.BASELINE and datetime.fromisoformat(r.timestamp) >= started]
    recorded = f"baselines recorded for {', '.join(sorted(set(done)))}" if done else "no baseline was recorded yet"
    return f"luban evaluate: {how}; {recorded}. Evaluate again with: {command}"


def resume_command(skills_dir: str, workspace: str | None, mode: str, workspace_root: Path) -> str:
    chosen = mode if mode in MODES else (newest_mode(workspace_root) or "quick")
    extra = f" --workspace {workspace}" if workspace else ""
    return f"luban optimize --resume --skills-dir {skills_dir} --mode {chosen}{extra}"


def _stop_children() -> None:
    """SIGTERM to every process this one started (a temporary Prefect server): os._exit would orphan them."""
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me:
            with contextlib.suppress(OSError):
                os.kill(int(stat.parent.name), signal.SIGTERM)
