"""The daemon's informers lose no update when the API server drops their watches or answers 410 Gone."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable

import pytest

from dgd.cluster.resources import PCLQ
from tests.e2e.eventually import eventually
from tests.e2e.harness import DGDS, NS, ServedCluster, agg
from tests.e2e.operators import Operators

pytestmark = pytest.mark.anyio

NAMES = ("edit-0", "edit-1", "edit-2")
#: How many times every fault is injected.
PASSES = 3


async def drop(served: ServedCluster) -> None:
    """End every watch stream: the informers resume from the last resourceVersion they saw."""
    await served.facade.drop_watches()


async def expire(served: ServedCluster) -> None:
    """End every watch stream with a 410 Gone: the informers list again."""
    await served.facade.expire_watches()


async def compact_then_drop(served: ServedCluster) -> None:
    """Forget the watch history, then end every stream: resuming gets 410 Gone, the informers list again."""
    served.cluster.compact()
    await served.facade.drop_watches()


async def drop_then_flap(served: ServedCluster) -> None:
    """End every stream, and end each of the next 20 watches again after its first event."""
    served.cluster.faults.drop_watch(after_events=1, times=20)
    await served.facade.drop_watches()


async def drop_then_expire_again(served: ServedCluster) -> None:
    """End every stream, and answer the next 20 watches 410 Gone at once."""
    served.cluster.faults.expire_watch(after_events=0, times=20)
    await served.facade.drop_watches()


FAULTS: tuple[Callable[[ServedCluster], Awaitable[None]], ...] = (
    drop,
    expire,
    compact_then_drop,
    drop_then_flap,
    drop_then_expire_again,
)


async def test_every_dgd_converges_to_its_latest_spec_through_dropped_and_expired_watches(
    served: ServedCluster, operators: Operators
) -> None:
    # given a daemon that took three DGDs to successful, its informers watching through the facade
    # (a client rate limit above the default 20/s, so that relisting every informer fifteen times
    # does not make the test slow)
    operator = await operators.start("only", flags=("--qps", "200", "--burst", "400"))
    for name in NAMES:
        await served.apply(agg(name))
    await eventually(lambda: served.converged(*NAMES), timeout=60, what="the DGDs are successful")
    watches = served.facade.open_watches
    assert watches > 0

    # when, round after round, once the daemon watches again, a DGD's frontend is rescaled, every
    # watch is ended by one of the faults, and another DGD is rescaled before the daemon can watch
    # again (the first edit may be in flight to the daemon, the second lands in the gap)
    latest = dict.fromkeys(NAMES, 1)
    edited = itertools.cycle(NAMES)

    async def edit(name: str) -> None:
        latest[name] += 1
        await scale_frontend(served, name, latest[name])

    for fault in FAULTS * PASSES:
        await eventually(
            lambda: served.facade.open_watches >= watches, timeout=30, what="the daemon watches again"
        )
        await edit(next(edited))
        await fault(served)
        await edit(next(edited))

    # then every DGD converges to its latest edit: the operator saw each DGD's last generation
    # and scaled its frontend to it; and the faults really made the informers list again
    async def settled() -> bool:
        replicas = {name: await frontend_replicas(served, name) for name in NAMES}
        return await served.converged(*NAMES) and replicas == {n: (r, r) for n, r in latest.items()}

    await eventually(settled, timeout=60, what=f"every DGD converges to its last edit {latest}")
    assert await served.converged(*NAMES)
    for name in NAMES:
        assert await frontend_replicas(served, name) == (latest[name], latest[name]), name
    assert latest == dict.fromkeys(NAMES, 1 + 2 * len(FAULTS) * PASSES // len(NAMES))
    relists = [message for message in operator.messages() if message.endswith("listing again")]
    assert len(relists) >= 2 * PASSES * watches


async def scale_frontend(served: ServedCluster, name: str, replicas: int) -> None:
    """Set the DGD's Frontend component to ``replicas`` (a merge patch of its components), written
    on the API server directly so that it lands before the daemon's next request is served."""
    components = (await served.dgd(name))["spec"]["components"]
    for component in components:
        if component["name"] == "Frontend":
            component["replicas"] = replicas
    await served.observer.patch(DGDS.key(NS, name), {"spec": {"components": components}})


async def frontend_replicas(served: ServedCluster, name: str) -> tuple[int, int]:
    """The replicas of the DGD's frontend PodClique (the operator scales it through its scale
    subresource), and the ready replicas the DGD's status reports for its Frontend."""
    clique = await served.observer.get(PCLQ.as_raw().key(NS, f"{name}-0-frontend"))
    status = (await served.dgd(name))["status"]["components"]["Frontend"]
    return clique["spec"]["replicas"], status["readyReplicas"]
