"""The operator on the simulated cluster, for scenario tests: apply, wait, look.

``on_stage(settings)`` starts a ``SimulatedCluster`` with the operator's actor tree beside the world
models (simulated Grove, scheduler, kubelets), on the virtual clock the scenario conftest provides.
``Stage`` applies manifests as a user would, waits in cluster time, and reads what a user would
read: the DGD status and the events about it, in the order they were recorded. ``writes`` counts
every mutating API call the *operator* made (the world models use a client of their own).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import yaml
from hypothesis import HealthCheck, settings

from dgd.actors.machinery.loop import Nudge
from dgd.actors.tree import DGDS
from dgd.cluster.errors import Conflict
from dgd.cluster.memory.faults import Delay, FaultRule
from dgd.cluster.resources import DGD, EVENT
from dgd.domain.conversion.dgd import dgd_to_v1beta1
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DGDStatus, DynamoGraphDeployment
from dgd.messages.meta import Condition
from dgd.runtime import Ref
from dgd.sim import SimulatedCluster, WorldSettings
from dgd.sim.operator import simulated_operator
from tests.upstream import UPSTREAM

NS = "default"
RAW_DGD = DGD.as_raw()

#: A change a user makes to a raw DGD document.
Edit = Callable[[dict[str, Any]], None]


def upstream(path: str) -> dict[str, Any]:
    """The first DGD of an upstream file (relative to ``../shared/upstream``), as v1beta1."""
    with (UPSTREAM / path).open(encoding="utf-8") as f:
        documents = [
            d
            for d in yaml.safe_load_all(f)
            if isinstance(d, dict) and d.get("kind") == "DynamoGraphDeployment"
        ]
    return v1beta1(documents[0])


def v1beta1(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` converted if it is v1alpha1, in namespace ``default`` unless it names one."""
    if document.get("apiVersion") == "nvidia.com/v1alpha1":
        document = dgd_to_v1beta1(document)
    document["metadata"]["namespace"] = document["metadata"].get("namespace") or NS
    return document


def scenario_settings(max_examples: int) -> settings:
    """Hypothesis settings for a property whose examples are scenarios on the simulated cluster: the
    same examples on every run (derandomized, no example database), no deadline, slow draws allowed."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


class Stage:
    """A running simulated cluster with the operator, and what a scenario reads from it."""

    def __init__(self, sim: SimulatedCluster, writes: FaultRule) -> None:
        self.sim = sim
        self._writes = writes
        #: The user's own client ("kubectl"): its writes are not the operator's.
        self.user = sim.cluster.client()

    @property
    def writes(self) -> int:
        """Mutating API calls the operator made so far."""
        return self._writes.fired

    async def apply(self, document: dict[str, Any]) -> str:
        """Store a DGD manifest; returns its name."""
        await self.user.create(DGD.as_raw(), document)
        return str(document["metadata"]["name"])

    async def dgd(self, name: str, namespace: str = NS) -> DynamoGraphDeployment:
        return await self.sim.cluster.get(DGD.key(namespace, name))

    async def ready(self, name: str, namespace: str = NS) -> Condition:
        """The DGD's Ready condition (its first)."""
        dgd = await self.dgd(name, namespace)
        assert dgd.status is not None and dgd.status.conditions, f"{name} has no conditions"
        return dgd.status.conditions[0]

    async def until(
        self, name: str, check: Callable[[DynamoGraphDeployment], bool], *, timeout: float = 600.0
    ) -> float:
        """Cluster seconds until ``check`` holds for the DGD ``name`` (``TimeoutError`` otherwise)."""

        async def holds() -> bool:
            return check(await self.dgd(name))

        return await self.sim.until(holds, timeout=timeout)

    async def until_state(self, name: str, state: str, *, timeout: float = 600.0) -> float:
        return await self.until(
            name, lambda d: d.status is not None and d.status.state == state, timeout=timeout
        )

    async def until_successful(
        self,
        name: str,
        generation: int,
        check: Callable[[DGDStatus], bool] = lambda status: True,
        *,
        timeout: float = 600.0,
    ) -> float:
        """Cluster seconds until the DGD ``name`` is ``successful`` having observed ``generation``, and
        ``check`` holds of its status."""

        def holds(dgd: DynamoGraphDeployment) -> bool:
            status = dgd.status
            return (
                status is not None
                and status.observed_generation == generation
                and status.state == "successful"
                and check(status)
            )

        return await self.until(name, holds, timeout=timeout)

    async def edit(self, name: str, change: Edit, namespace: str = NS) -> int:
        """Read-modify-replace the raw DGD as a user would (again on a conflict); the generation written."""
        while True:
            document = await self.user.get(RAW_DGD.key(namespace, name))
            change(document)
            try:
                written = await self.user.replace(RAW_DGD, document)
            except Conflict:
                continue
            return int(written["metadata"]["generation"])

    async def events(self, name: str, namespace: str = NS) -> list[tuple[str, str, str]]:
        """(type, reason, note) of every event about the DGD ``name``, in the order recorded."""
        listed = (await self.sim.cluster.list(EVENT, namespace=namespace)).items
        mine = [e for e in listed if e.regarding is not None and e.regarding.name == name]
        mine.sort(key=lambda e: int(e.metadata.resource_version or 0))
        return [(e.type or "", e.reason or "", e.note or "") for e in mine]

    def nudge(self, name: str, namespace: str = NS) -> None:
        """Wake the DGD's actor, as a watch event would."""
        actor: Ref[Nudge] = self.sim.system.ref(f"{DGDS}/{namespace}/{name}")
        actor.tell_nowait(Nudge())


@asynccontextmanager
async def on_stage(
    settings: WorldSettings | None = None,
    *,
    seed: int = 0,
    config: OperatorConfig | None = None,
    admission: bool = True,
) -> AsyncIterator[Stage]:
    """The simulated cluster with the operator running on it (see the module); ``admission=False``:
    without its webhooks, to play what only a cluster without them lets through."""
    # The operator as `sim apply` runs it, with no bound on concurrent reconciles.
    sim = simulated_operator(
        settings or WorldSettings(),
        seed=seed,
        config=config or OperatorConfig(),
        workers=None,
        admission=admission,
    )
    async with sim:
        # Counts the operator's writes: a rule that fires on each of them and does nothing.
        writes = sim.cluster.faults.add(Delay(0.0), verb=("create", "update", "patch", "delete"))
        yield Stage(sim, writes)
