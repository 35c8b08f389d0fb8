"""Probes over HTTP: liveness from the heartbeat and the informers, readiness from the role and caches."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import anyio
import pytest

from dgd.daemon.probes import Health, Role
from dgd.daemon.servers import Server, probes_app
from dgd.runtime import ManualClock
from tests.unit.daemon.harness import advance, daemon, installed, running

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def serving(health: Health) -> AsyncIterator[int]:
    server = await Server.start(probes_app(health), "127.0.0.1", 0)
    try:
        yield server.port
    finally:
        await server.stop()


async def probe(port: int | None, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}") as response:
        return response.status, await response.text()


async def test_readiness_follows_the_role_and_the_leaders_caches() -> None:
    health = Health(ManualClock())
    synced = False
    async with serving(health) as port:
        # given a process that has not decided its role yet: not ready
        status, body = await probe(port, "/readyz")
        assert (status, body) == (
            503,
            "[+]ping ok\n[-]role failed: starting: the leader election has not decided yet\n"
            "readyz check failed\n",
        )

        # when it stands by: ready
        health.role = Role.STANDBY
        assert await probe(port, "/readyz") == (200, "ok")

        # when it leads with its caches still filling: not ready; once filled: ready
        health.role = Role.LEADER
        health.operator_started(["pods"], lambda: synced)
        status, body = await probe(port, "/readyz")
        assert status == 503 and "[-]caches failed" in body
        synced = True
        assert await probe(port, "/readyz") == (200, "ok")

        # when it shuts down: not ready, so no new traffic is sent its way
        health.role = Role.STOPPING
        status, body = await probe(port, "/readyz")
        assert status == 503 and "[-]role failed: shutting down" in body


async def test_liveness_fails_when_the_heartbeat_is_late() -> None:
    clock = ManualClock()
    health = Health(clock, interval=1.0, max_lag=5.0)
    async with serving(health) as port, anyio.create_task_group() as tg:
        # given a beating heart: alive
        tg.start_soon(health.heartbeat)
        await advance(clock, 3.0)
        assert await probe(port, "/healthz") == (200, "ok")

        # when the heartbeat task stops beating for longer than the allowed lag
        tg.cancel_scope.cancel()
    async with serving(health) as port:
        await clock.advance(7.0)

        # then liveness fails and says why
        status, body = await probe(port, "/healthz")
        assert status == 503
        assert "[-]event-loop failed: the heartbeat is 6.0s late" in body


async def test_liveness_fails_when_a_watched_kind_shows_no_life_for_too_long() -> None:
    clock = ManualClock()
    health = Health(clock, stall_after=600.0)
    async with serving(health) as port, anyio.create_task_group() as tg:
        tg.start_soon(health.heartbeat)
        # given an operator watching pods and services
        health.operator_started(["pods", "services"], lambda: True)

        # when services see activity, but pods none for more than ten minutes
        await advance(clock, 300.0, step=1.0)
        health.activity("services")
        await advance(clock, 301.0, step=1.0)

        # then liveness fails, naming pods
        status, body = await probe(port, "/healthz?verbose")
        assert status == 503
        assert "[-]informers failed: no list or watch activity for more than 600s: pods\n" in body

        # when pods show life again, it is alive
        health.activity("pods")
        assert await probe(port, "/healthz") == (200, "ok")
        tg.cancel_scope.cancel()


async def test_a_running_leader_and_its_standby_are_both_alive_and_ready() -> None:
    clock, server = await installed()
    a, b = daemon(server.client(), clock, "a"), daemon(server.client(), clock, "b")
    async with running(a, b):
        await advance(clock, 2.0)
        # when both are probed
        for one in (a, b):
            # then each is alive and ready (the leader with its caches filled, the standby by design)
            assert await probe(one.probe_port, "/healthz") == (200, "ok")
            assert await probe(one.probe_port, "/readyz") == (200, "ok")
        status, body = await probe(a.probe_port, "/readyz?verbose")
        assert status == 200
        assert body == "[+]ping ok\n[+]role ok\n[+]caches ok\nreadyz check passed\n"
