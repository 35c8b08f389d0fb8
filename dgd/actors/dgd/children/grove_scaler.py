"""The grove-scaler child of a Grove DGD: component replicas through the scale subresource (dgd-domain §9.4).

For every component it drives the PodClique (or, for a component Grove scales as a group, the
PodCliqueScalingGroup) ``<pcs>-0-<component>`` to the component's replicas, through the scale
subresource only: a replica edit never touches the PodCliqueSet spec, so it never rolls pods. A
child Grove has not created yet is skipped (its creation will nudge the DGD again). The cached
child answers "already there" without an API call; otherwise ``Syncer.scale`` reads the scale and,
when it differs, replaces it at the resourceVersion read (a concurrent change is a conflict,
retried), and records ``Update<Kind>`` "… (scaled from A to B replicas)" on the DGD (upstream
records none, ``docs/decisions.md``). The answer says which children it scaled, from and to what:
the Grove program's readiness read of the same reconcile sees those as the write left them
(``dgd.domain.readiness.rescaled``); the scaler reads the shared cache and never writes it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.errors import ClusterError
from dgd.cluster.resources import PCLQ, PCSG, ObjectKey
from dgd.domain.readiness import child_name
from dgd.domain.roles import uses_pcsg
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.runtime import Actor, Request


class ScaleChange(msgspec.Struct, frozen=True):
    """One child scaled: its component, kind and name, from and to how many replicas."""

    component: str
    kind: str
    name: str
    before: int
    after: int


class Scaled(msgspec.Struct, frozen=True):
    """Every child that was scaled (empty: all were at their targets or not created yet)."""

    changes: tuple[ScaleChange, ...] = ()


class Scale(Request[Scaled | StepFailed], frozen=True):
    """Drive every component of ``dgd`` (defaulted) to its replicas; those in ``gated`` wait for a
    checkpoint at 0 (``dgd.domain.checkpoint.is_gated``)."""

    dgd: DynamoGraphDeployment
    gated: frozenset[str] = frozenset()


class GroveScaler(Actor[Scale]):
    """Answers ``Scale``; the only writer of Grove children's replicas."""

    def __init__(self, *, reader: Reader, syncer: Syncer) -> None:
        self._reader = reader
        self._syncer = syncer

    async def receive(self, message: Scale) -> Scaled | StepFailed:
        dgd = message.dgd
        namespace = dgd.metadata.namespace or ""
        changes: list[ScaleChange] = []
        for component in dgd.spec.components or []:
            target = 0 if component.name in message.gated else component.replicas
            if target is None:
                continue
            resource: Any = PCSG if uses_pcsg(component) else PCLQ
            key: ObjectKey[Any] = resource.key(namespace, child_name(dgd, component))
            try:
                change = await self._scale(key, target, dgd)
            except ClusterError as error:
                return StepFailed(f"failed to scale {resource.kind} {key.name} to {target}: {error}")
            if change is not None:
                changes.append(ScaleChange(component.name, resource.kind, key.name, *change))
        return Scaled(tuple(changes))

    async def _scale(
        self, key: ObjectKey[Any], target: int, owner: DynamoGraphDeployment
    ) -> tuple[int, int] | None:
        if target < 0:
            raise ValueError(f"negative replicas {target} for {key}")
        if self._reader.watches(key.resource):
            cached = await self._reader.get(key)
            if cached is None:
                return None  # not created yet (or its creation not seen yet: that event nudges the DGD)
            if cached.spec.replicas == target:
                return None
        written = await self._syncer.scale(key, target, owner=owner)
        if written is None:
            return None
        before, _ = written
        return before, target
