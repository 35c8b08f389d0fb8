"""Conditions as controllers write them: a transition time that moves only when the status does."""

from __future__ import annotations

from dgd.messages.meta import Condition, ConditionStatus


def set_condition(
    conditions: list[Condition] | None,
    type: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    *,
    now: str,
    observed_generation: int | None = None,
) -> list[Condition]:
    """``conditions`` with ``type`` set (``meta.SetStatusCondition``): its ``last_transition_time`` is
    ``now`` if the status changed or the condition is new, else kept; other conditions are kept."""
    existing = [condition for condition in conditions or [] if condition.type == type]
    since = existing[0].last_transition_time if existing and existing[0].status == status else now
    updated = Condition(
        type=type,
        status=status,
        last_transition_time=since,
        reason=reason,
        message=message,
        observed_generation=observed_generation,
    )
    out = [condition for condition in conditions or [] if condition.type != type]
    out.append(updated)
    return sorted(out, key=lambda condition: condition.type)


def without_condition(conditions: list[Condition] | None, type: str) -> list[Condition] | None:
    """``conditions`` without ``type`` (``None`` when none is left)."""
    out = [condition for condition in conditions or [] if condition.type != type]
    return out or None
