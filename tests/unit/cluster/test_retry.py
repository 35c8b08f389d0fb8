"""The retrying proxy: transient answers are retried, everything else reaches the caller at once."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from dgd.cluster.errors import ClusterError, NotFound, ServerError, Timeout, TooManyRequests
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.protocol import Cluster
from dgd.cluster.proxy import APICall, ClusterProxy
from dgd.cluster.resources import CONFIG_MAP
from dgd.cluster.retry import RetryingCluster

pytestmark = pytest.mark.anyio
R = TypeVar("R")
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}}


class Answers(ClusterProxy):
    """Fails the first calls with ``errors``, in order, then forwards; counts the calls."""

    def __init__(self, inner: Cluster, errors: list[ClusterError]) -> None:
        super().__init__(inner)
        self.errors = errors
        self.calls = 0

    async def forward(self, call: APICall, send: Callable[[], Awaitable[R]]) -> R:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return await send()


@pytest.mark.parametrize(
    "transient",
    [
        TooManyRequests("storage is (re)initializing", retry_after=0.0),
        ServerError("etcd leader changed"),
        Timeout("slow"),
    ],
    ids=["429", "500", "504"],
)
async def test_a_transient_answer_is_retried_until_the_call_succeeds(transient: ClusterError) -> None:
    # given a server that answers "not now" twice
    answers = Answers(MemoryCluster(rng=random.Random(1)), [transient, transient])
    cluster = RetryingCluster(answers, max_wait=0.01)

    # when the caller creates an object
    created = await cluster.create(CONFIG_MAP, CM)

    # then it was created on the third try, and the caller saw no error
    assert created["metadata"]["name"] == "cm"
    assert answers.calls == 3


async def test_an_error_that_is_not_transient_reaches_the_caller_at_once() -> None:
    # given a server that answers NotFound
    answers = Answers(MemoryCluster(rng=random.Random(1)), [NotFound("no such thing")])
    cluster = RetryingCluster(answers, max_wait=0.01)

    # then the caller sees it after one call
    with pytest.raises(NotFound):
        await cluster.get(CONFIG_MAP.key("default", "cm"))
    assert answers.calls == 1


async def test_a_transient_answer_reaches_the_caller_once_the_retries_give_up() -> None:
    # given a server that keeps answering 503
    answers = Answers(MemoryCluster(rng=random.Random(1)), [ServerError("down")] * 1000)
    cluster = RetryingCluster(answers, give_up_after=0.05, max_wait=0.01)

    # then, after retrying for the allowed time, the caller sees the last answer
    with pytest.raises(ServerError):
        await cluster.get(CONFIG_MAP.key("default", "cm"))
    assert answers.calls > 1
