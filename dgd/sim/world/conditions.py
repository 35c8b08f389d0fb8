"""Conditions as controllers write them: a transition time that moves only when the status does."""

from __future__ import annotations

from dgd.domain.projection import condition_at, upsert_condition
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
    """``conditions`` with ``type`` set (``meta.SetStatusCondition``), sorted by type: its
    ``last_transition_time`` is ``now`` if the status changed or the condition is new, else kept;
    other conditions are kept."""
    updated = condition_at(type, status, reason, message, now=now, generation=observed_generation)
    return sorted(upsert_condition(conditions, updated), key=lambda condition: condition.type)


def without_condition(conditions: list[Condition] | None, type: str) -> list[Condition] | None:
    """``conditions`` without ``type`` (``None`` when none is left)."""
    out = [condition for condition in conditions or [] if condition.type != type]
    return out or None
