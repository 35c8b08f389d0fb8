"""Who is exempt from which admission rule (supplement §4.6)."""

from __future__ import annotations

import pytest

from dgd.domain.admission.principals import Requester, may_change_scaled_replicas, may_materialize_provider

OPERATOR = "system:serviceaccount:dynamo-system:dynamo-operator-controller-manager"


@pytest.mark.parametrize(
    ("username", "allowed"),
    [
        (OPERATOR, True),
        ("system:serviceaccount:team-a:planner-serviceaccount", True),
        ("system:serviceaccount:team-b:planner-serviceaccount", True),
        ("planner-serviceaccount", False),  # a user, not a ServiceAccount
        ("system:serviceaccount::planner-serviceaccount", False),  # no namespace
        ("system:serviceaccount:team-a:planner-serviceaccount:x", False),  # not a ServiceAccount name
        ("system:serviceaccount:team-a:other-serviceaccount", False),
        ("system:serviceaccount:dynamo-system:default", False),
        ("alice", False),
    ],
)
def test_scaled_replicas_may_be_changed_by_the_operator_and_any_planner(username: str, allowed: bool) -> None:
    """§4.6: the operator principal and any ``planner-serviceaccount`` ServiceAccount are exempt."""
    # given a requester and the operator principal
    requester = Requester(username)

    # when asked whether it may change the replicas an adapter owns
    verdict = may_change_scaled_replicas(requester, OPERATOR)

    # then only the exempt principals may
    assert verdict is allowed


def test_scaled_replicas_check_fails_closed_without_user_info() -> None:
    """§4.5 rule 3: no admission user info means nobody is exempt, principal known or not."""
    # when a request without user info asks
    # then it may not, even when the operator principal is unknown
    assert may_change_scaled_replicas(None, OPERATOR) is False
    assert may_change_scaled_replicas(None, None) is False


def test_groups_do_not_make_a_user_exempt() -> None:
    """§4.6: exemption is by username; a user in the service-accounts group is still a user."""
    # given a user that claims the service-accounts group
    requester = Requester("mallory", ("system:serviceaccounts", "system:serviceaccounts:team-a"))

    # then it is not exempt
    assert may_change_scaled_replicas(requester, OPERATOR) is False


def test_only_the_operator_may_materialize_the_provider() -> None:
    """§4.6: first materialization of the provider annotation is the operator principal's alone."""
    # then the operator may, a planner, a user, or a request without user info may not
    assert may_materialize_provider(Requester(OPERATOR), OPERATOR) is True
    assert (
        may_materialize_provider(Requester("system:serviceaccount:a:planner-serviceaccount"), OPERATOR)
        is False
    )
    assert may_materialize_provider(Requester("alice"), OPERATOR) is False
    assert may_materialize_provider(None, OPERATOR) is False


@pytest.mark.parametrize("principal", [None, ""])
def test_everyone_may_materialize_the_provider_when_the_principal_is_unknown(principal: str | None) -> None:
    """§4.6: with the operator principal unknown, the restriction does not apply."""
    # then anyone may, even without user info
    assert may_materialize_provider(Requester("alice"), principal) is True
    assert may_materialize_provider(None, principal) is True
