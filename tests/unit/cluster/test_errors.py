"""Port errors read well and survive the trip through a metav1.Status."""

from __future__ import annotations

import copy

import pytest

from dgd.cluster.errors import (
    AlreadyExists,
    Cause,
    ClusterError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    Timeout,
    TooManyRequests,
    error_from_status,
)


def test_message_names_the_reason_the_object_and_what_went_wrong() -> None:
    error = Conflict("the object has been modified", kind="DynamoGraphDeployment", namespace="ns", name="g")

    assert str(error) == "Conflict (409): DynamoGraphDeployment ns/g: the object has been modified"


@pytest.mark.parametrize(
    "error",
    [
        NotFound("x", kind="K", name="n"),
        AlreadyExists("x", kind="K", name="n"),
        Conflict("x", kind="K", name="n"),
        Gone("too old resource version: 1 (5)"),
        Invalid("bad", kind="K", name="n", causes=(Cause("spec.replicas", "must be >= 0"),)),
        Invalid("unparsable", bad_request=True),
        Forbidden("no"),
        TooManyRequests("slow down", retry_after=3),
        ServerError("boom"),
        Timeout("late"),
    ],
)
def test_error_round_trips_through_a_status(error: ClusterError) -> None:
    back = error_from_status(error.to_status())

    assert type(back) is type(error)
    assert (back.message, back.kind, back.name) == (error.message, error.kind, error.name)
    assert str(back).split(":")[0] == str(error).split(":")[0]
    if isinstance(error, Invalid):
        assert isinstance(back, Invalid) and (back.causes, back.bad_request) == (
            error.causes,
            error.bad_request,
        )
    if isinstance(error, TooManyRequests):
        assert isinstance(back, TooManyRequests) and back.retry_after == error.retry_after


def test_unknown_status_becomes_a_server_error() -> None:
    back = error_from_status({"code": 503, "reason": "ServiceUnavailable", "message": "overloaded"})

    assert isinstance(back, ServerError) and back.message == "overloaded"


def test_copies_keep_every_attribute() -> None:
    error = TooManyRequests("slow down", retry_after=7.5, kind="K", namespace="ns", name="n")

    copied = copy.copy(error)

    assert copied is not error
    assert (copied.retry_after, copied.kind, copied.namespace, copied.name) == (7.5, "K", "ns", "n")
