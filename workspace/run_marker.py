"""Which Prefect flow run owns the records, so a run that Prefect executes again continues instead of starting over.

A checkpoint in a served deployment suspends the root flow run; when it is
answered, Prefect runs the whole flow again from the top with the same flow run
id. Phase 0 finds this marker, takes the ``--resume`` path (same branch or
backups, the recorded baseline, the next round), and the checkpoints already
answered return their stored answers. The marker also says, while the run is
suspended, what it waits for and how to answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workspace.atomic import atomic_write


def marker_path(workspace_root: Path, flow_run_id: str) -> Path:
    return workspace_root / "runs" / f"{flow_run_id}.json"


def load(workspace_root: Path, flow_run_id: str | None) -> dict[str, Any] | None:
    """The marker of this flow run, or None (first execution, or not a Prefect run). A torn marker counts as none."""
    if not flow_run_id:
        return None
    path = marker_path(workspace_root, flow_run_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def save(workspace_root: Path, flow_run_id: str | None, **fields: Any) -> None:
    """Merge ``fields`` into the marker (one atomic write)."""
    if not flow_run_id:
        return
    data = load(workspace_root, flow_run_id) or {"flow_run_id": flow_run_id}
    data.update(fields)
    atomic_write(marker_path(workspace_root, flow_run_id), json.dumps(data, indent=2, sort_keys=True) + "\n")


def close_abandoned(workspace_root: Path, current: str | None, seen: str) -> list[str]:
    """Mark every other run still recorded as running as ``stopped``, and return their ids.

    Called by a run that holds the workspace lock: no other run can be working on this workspace, so a marker
    that still says "running" belongs to a process that was killed or lost its machine. Without this it would
    say "running" for good."""
    closed = []
    for path in sorted((workspace_root / "runs").glob("*.json")):
        flow_run_id = path.stem
        data = load(workspace_root, flow_run_id)
        if flow_run_id != current and data is not None and data.get("state") == "running":
            save(workspace_root, flow_run_id, state="stopped", stopped_seen=seen,
                 stopped_why=f"still marked running when run {current or '(no Prefect run)'} took the workspace lock: "
                             "the process was killed or its machine lost")
            closed.append(flow_run_id)
    return closed


def latest_report_facts(workspace_root: Path, mode: str) -> dict[str, Any] | None:
    """The report facts the newest run of ``mode`` recorded at Phase 5 (branch, backups, notices), or None."""
    return newest(workspace_root, mode, "report_facts")


def newest(workspace_root: Path, mode: str, field: str) -> dict[str, Any] | None:
    """``field`` (a mapping) as the newest run of ``mode`` that recorded it has it, or None."""
    markers = sorted((workspace_root / "runs").glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in markers:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("mode") == mode and isinstance(data.get(field), dict):
            return data[field]
    return None
