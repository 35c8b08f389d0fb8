"""The children of the DGD actor both workload programs ask, started on first use.

Each program module composes itself (its ``compose`` function): it starts, through ``spawn`` (the DGD
actor's on-demand children, by name), the children its pathway uses, in a fixed order, and builds the
program from them and the capabilities it is handed: a ``Reader`` to observe with, the ``Syncer`` that
writes children, the ``DGDAnnotator`` that records the worker hash, the ``Recorder`` of events. The
children both ask are started here (``shared_parts``). ``checkpoint_storage`` is the one child the
DGD actor also asks itself (its finalizer).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from dgd.actors.dgd.children.checkpoint_storage import (
    CheckpointStorage,
    FinalizeCheckpoints,
    ResolveCheckpoints,
)
from dgd.actors.dgd.children.restart import RestartResolver
from dgd.actors.dgd.children.scaling_adapters import ScalingAdapters
from dgd.actors.dgd.children.shared_resources import SharedResources
from dgd.actors.dgd.programs.conclusion import Conclusion
from dgd.actors.dgd.programs.provisioning import Provisioning
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer
from dgd.domain.render.ssh_keys import KeySource
from dgd.messages.config import OperatorConfig
from dgd.runtime import Actor, Ref

#: Starts (or finds running) the DGD actor's child of that name, built by the factory on first use.
Spawn = Callable[[str, Callable[[], Actor[Any]]], Awaitable[Ref[Any]]]


async def checkpoint_storage(
    spawn: Spawn, *, reader: Reader, syncer: Syncer, recorder: Recorder, config: OperatorConfig
) -> Ref[ResolveCheckpoints | FinalizeCheckpoints]:
    """The checkpoint-storage child (both programs ask it, and the DGD actor's finalizer)."""
    return await spawn(
        "checkpoint-storage",
        lambda: CheckpointStorage(reader=reader, syncer=syncer, recorder=recorder, config=config),
    )


async def shared_parts(
    spawn: Spawn,
    *,
    reader: Reader,
    syncer: Syncer,
    recorder: Recorder,
    config: OperatorConfig,
    keys: KeySource,
    now: Callable[[], str],
) -> tuple[Provisioning, Ref[Any], Conclusion]:
    """The children both programs ask, in their start order: shared resources, checkpoint storage,
    restart, scaling adapters."""
    shared = await spawn(
        "shared-resources", lambda: SharedResources(reader=reader, syncer=syncer, config=config, keys=keys)
    )
    checkpoints = await checkpoint_storage(
        spawn, reader=reader, syncer=syncer, recorder=recorder, config=config
    )
    restart = await spawn("restart", lambda: RestartResolver(reader=reader))
    adapters = await spawn("scaling-adapters", lambda: ScalingAdapters(reader=reader, syncer=syncer))
    return Provisioning(shared, checkpoints), restart, Conclusion(adapters, now)
