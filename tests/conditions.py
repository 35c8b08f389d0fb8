"""Conditions as tests expect them: one builder for every expected status (dgd-domain §6.2)."""

from __future__ import annotations

from dgd.domain.projection import condition_at
from dgd.messages.meta import Condition, ConditionStatus


def condition(
    type: str, status: ConditionStatus, reason: str, message: str, *, at: str, generation: int | None = None
) -> Condition:
    """A condition of ``type`` last flipped at ``at`` (for ``generation``, when it records one)."""
    return condition_at(type, status, reason, message, now=at, generation=generation)


def ready_condition(
    status: ConditionStatus, reason: str, message: str, *, at: str, generation: int = 1
) -> Condition:
    """The DGD's ``Ready`` condition, as observed at ``generation``."""
    return condition("Ready", status, reason, message, at=at, generation=generation)
