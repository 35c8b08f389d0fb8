"""What this operator refuses to reconcile, and the checkpoint compatibility check.

``unsupported(dgd, config)`` lists every reason a defaulted DGD cannot be rendered here, each as a
``RenderError`` naming the field: a name too long for the labels it becomes, a pod template of a
shape the renderer cannot take, checkpoints while the checkpoint gate is off, Grove or
LeaderWorkerSet disabled for a graph that needs it. A DGD refused fails terminally and is retried
only when its spec changes. The operator's programs and ``dgd-operator render`` both ask it.

``checkpoint_preflight`` is the compatibility check of dgd-domain §5 step 4, which runs before the
finalizer is added.
"""

from __future__ import annotations

from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER
from dgd.domain.checkpoint import checkpoint_refused
from dgd.domain.metadata_keys import MAX_LABEL_VALUE
from dgd.domain.naming import dynamo_namespace
from dgd.domain.orchestrators import grove_disabled, lacks_multinode_orchestrator
from dgd.domain.render.errors import RenderError
from dgd.domain.render.pod_template_shape import shape_errors
from dgd.domain.roles import gms_mode
from dgd.messages.component import ComponentSpec
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment

#: The path suffix of the refusal a multinode component gets without LeaderWorkerSet.
MULTINODE_FIELD = ".multinode"


def unsupported(dgd: DynamoGraphDeployment, config: OperatorConfig) -> list[RenderError]:
    """Every feature of ``dgd`` this release cannot reconcile, in field order (empty: none)."""
    problems: list[RenderError] = []
    name, namespace = dgd.metadata.name or "", dgd.metadata.namespace or ""
    grove = (dgd.metadata.annotations or {}).get(WORKLOAD_PROVIDER) == "grove"
    if len(name) > MAX_LABEL_VALUE:
        problems.append(
            RenderError(
                "metadata.name",
                f"is {len(name)} characters; as the value of label nvidia.com/dynamo-graph-deployment-name "
                f"it allows at most {MAX_LABEL_VALUE}",
            )
        )
    if grove and grove_disabled(config):
        problems.append(
            RenderError(
                "metadata.annotations[nvidia.com/workload-provider]", "Grove is disabled in the config"
            )
        )
    for index, component in enumerate(dgd.spec.components or []):
        problems += _component_refusals(component, index, config, grove, name, namespace)
    return problems


def _component_refusals(
    component: ComponentSpec, index: int, config: OperatorConfig, grove: bool, name: str, namespace: str
) -> list[RenderError]:
    at = f"spec.components[{index}]"
    problems = [
        RenderError(where, what) for where, what in shape_errors(component.pod_template, f"{at}.podTemplate")
    ]
    dyn_ns = dynamo_namespace(namespace, name, global_namespace=bool(component.global_dynamo_namespace))
    if len(dyn_ns) > MAX_LABEL_VALUE:
        problems.append(
            RenderError(
                at,
                f'its Dynamo namespace "{dyn_ns}" is {len(dyn_ns)} characters; as the value of label '
                f"nvidia.com/dynamo-namespace it allows at most {MAX_LABEL_VALUE}: shorten the namespace or "
                "the DGD name, or set globalDynamoNamespace",
            )
        )
    if checkpoint_refused(component, config):
        problems.append(
            RenderError(
                f"{at}.experimental.checkpoint",
                f"component {component.name}: checkpoint functionality is disabled in the operator "
                "configuration (checkpoint.enabled)",
            )
        )
    if not grove and lacks_multinode_orchestrator(component, config):
        problems.append(
            RenderError(
                f"{at}{MULTINODE_FIELD}", "no multinode orchestrator available (LeaderWorkerSet is disabled)"
            )
        )
    return problems


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
