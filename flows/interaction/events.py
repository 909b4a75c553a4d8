"""The design's L4 events as Prefect events, so Prefect Automations can notify on them.

Resource: the skill (``luban.skill.<name>``), or the library for its own alerts (``luban.library``). Payloads follow the design's table:
rollback {skill_path, from_version, to_version, reason}; freeze {skill_path,
freeze_scope, reason, duration_rounds}; budget_tighten {new_budget_percent,
reason, triggered_by_skill}; alert {event_type, severity, detail}.
"""

from __future__ import annotations

from typing import Any

from scoring.governance.library_alerts import LIBRARY

EVENTS = ("luban.rollback", "luban.freeze", "luban.budget_tighten", "luban.alert")


def emit(event: str, skill: str, payload: dict[str, Any]) -> None:
    if event not in EVENTS:
        raise ValueError(f"unknown Luban event {event!r}")
    from prefect.events import emit_event

    emit_event(event=event, resource=resource(skill), payload=payload)


def resource(skill: str) -> dict[str, str]:
    """What an event is about, for an Automation to match: one skill, or the whole library (``LIBRARY``)."""
    if skill == LIBRARY:
        return {"prefect.resource.id": "luban.library", "prefect.resource.name": "the library"}
    return {"prefect.resource.id": f"luban.skill.{skill}", "prefect.resource.name": skill}
