"""The design's L4 events as Prefect events, so Prefect Automations can notify on them.

Resource: the skill (``luban.skill.<name>``). Payloads follow the design's table:
rollback {skill_path, from_version, to_version, reason}; freeze {skill_path,
freeze_scope, reason, duration_rounds}; budget_tighten {new_budget_percent,
reason, triggered_by_skill}; alert {event_type, severity, detail}.
"""

from __future__ import annotations

from typing import Any

EVENTS = ("luban.rollback", "luban.freeze", "luban.budget_tighten", "luban.alert")


def emit(event: str, skill: str, payload: dict[str, Any]) -> None:
    if event not in EVENTS:
        raise ValueError(f"unknown Luban event {event!r}")
    from prefect.events import emit_event

    emit_event(event=event, resource={"prefect.resource.id": f"luban.skill.{skill}", "prefect.resource.name": skill},
               payload=payload)
