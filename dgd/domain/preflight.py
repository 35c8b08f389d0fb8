"""What this operator refuses to reconcile, and the checkpoint compatibility check.

``unsupported(dgd, config)`` lists every reason a defaulted DGD cannot be rendered here, each as a
``RenderError`` naming the field: a name too long for the labels it becomes, checkpoints while the
checkpoint gate is off, Grove or LeaderWorkerSet disabled for a graph that needs it. A DGD refused
fails terminally and is retried only when its spec changes.

``checkpoint_preflight`` is the compatibility check of dgd-domain §5 step 4, which runs before the
finalizer is added.
"""

from __future__ import annotations

from dgd.domain.render.errors import RenderError
from dgd.domain.render.offline import refusals
from dgd.domain.roles import gms_mode
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment


def unsupported(dgd: DynamoGraphDeployment, config: OperatorConfig) -> list[RenderError]:
    """Every feature of ``dgd`` this release cannot reconcile, in field order (empty: none)."""
    return list(refusals(dgd, config))


def checkpoint_preflight(dgd: DynamoGraphDeployment) -> list[str]:
    """Checkpoint compatibility errors, one per component and problem (empty: compatible)."""
    errors: list[str] = []
    for component in dgd.spec.components or []:
        experimental = component.experimental
        checkpoint = experimental.checkpoint if experimental is not None else None
        if checkpoint is None or not checkpoint.enabled:
            continue
        if gms_mode(component) == "InterPod":
            errors.append(
                f'component "{component.name}": Snapshot with gpuMemoryService.mode=InterPod is unsupported'
            )
        if experimental is not None and experimental.failover is not None:
            what = "Snapshot with active/passive failover is temporarily unsupported"
            errors.append(f'component "{component.name}": {what}')
    return errors
