"""Who may make the few DGD changes that admission allows only some principals (supplement §4.6).

Every other update rule applies to everyone, the operator included: its own writes must satisfy them.
"""

from __future__ import annotations

import msgspec

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
PLANNER_SERVICE_ACCOUNT = "planner-serviceaccount"


class Requester(msgspec.Struct, frozen=True):
    """Who sent an admission request: the request's ``userInfo`` (username and groups)."""

    username: str
    groups: tuple[str, ...] = ()


def may_change_scaled_replicas(requester: Requester | None, operator_principal: str | None) -> bool:
    """Whether ``requester`` may change the replicas of a component that has a scaling adapter.

    The operator (its DGDSA controller writes them) and any ServiceAccount named
    ``planner-serviceaccount``, in any namespace, may. A request without user info may not (fail closed).
    """
    if requester is None:
        return False
    if operator_principal and requester.username == operator_principal:
        return True
    return _service_account_name(requester.username) == PLANNER_SERVICE_ACCOUNT


def may_materialize_provider(requester: Requester | None, operator_principal: str | None) -> bool:
    """Whether ``requester`` may add the workload-provider annotation to a DGD that lacks it.

    Only the operator may (it adopts DGDs made before the annotation existed); when the operator's own
    principal is unknown, everyone may, since nobody could be told apart from it.
    """
    if not operator_principal:
        return True
    return requester is not None and requester.username == operator_principal


def _service_account_name(username: str) -> str | None:
    """The name part of ``system:serviceaccount:<namespace>:<name>``; ``None`` for any other user."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, sep, name = username.removeprefix(SERVICE_ACCOUNT_PREFIX).partition(":")
    if not sep or not namespace or not name or ":" in name:
        return None
    return name
