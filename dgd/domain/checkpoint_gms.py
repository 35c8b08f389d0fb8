"""Checkpoints of components that use the GPU memory service inside their pods (dgd-domain §10.3).

An automatic checkpoint of an intra-pod GMS component records the GMS configuration the checkpoint
was taken with (``spec.gpuMemoryService``, the v1alpha1 shape: ``enabled``, ``mode: intraPod``, the
device class, and the Job's extra GMS clients), and its Job claims its GPUs from a ResourceClaimTemplate
of its own, ``checkpoint-<id>-worker-gpu``, controlled by the DynamoCheckpoint (so it lives as long as
the checkpoint, not the DGD). The Job pod is prepared here, as upstream's DynamoCheckpoint controller
does not add GMS or DRA wiring itself: the pod renderer's intra-pod GMS step already gave it the
server sidecar and the claim; this points the claim at the checkpoint's template and wires the Job's
``gmsClientContainers``. Restores of an intra-pod failover component target its engine containers.
"""

from __future__ import annotations

import copy

from dgd.domain.pod_merge import JSON
from dgd.domain.render.errors import RenderError
from dgd.domain.render.failover import engine_names
from dgd.domain.render.gms import CLAIM, device_class, render_claim_template, uses_intra_pod_gms, with_clients
from dgd.messages.component import ComponentCheckpoint, ComponentSpec
from dgd.messages.meta import controller_reference


def claim_template_name(identifier: str) -> str:
    """The checkpoint Job's ResourceClaimTemplate (dgd-domain §18)."""
    return f"checkpoint-{identifier}-worker-gpu"


def gms_spec(component: ComponentSpec, config: ComponentCheckpoint) -> JSON | None:
    """``spec.gpuMemoryService`` of the component's automatic checkpoint (intra-pod GMS only)."""
    if not uses_intra_pod_gms(component):
        return None
    spec: JSON = {"enabled": True, "mode": "intraPod", "deviceClassName": device_class(component)}
    clients = list(config.job.gms_client_containers or []) if config.job is not None else []
    if clients:
        spec["extraClientContainers"] = clients
    return spec


def prepare_job(
    template: JSON, component: ComponentSpec, config: ComponentCheckpoint, identifier: str
) -> JSON:
    """The checkpoint Job's pod template, its GPUs claimed from the checkpoint's own template and its
    ``job.gmsClientContainers`` wired as GMS clients (a name that is no container of the Job is refused)."""
    if not uses_intra_pod_gms(component):
        return template
    template = copy.deepcopy(template)
    spec = template["spec"]
    for claim in spec.get("resourceClaims") or []:
        if claim.get("name") == CLAIM:
            claim["resourceClaimTemplateName"] = claim_template_name(identifier)
    clients = list(config.job.gms_client_containers or []) if config.job is not None else []
    names = [str(c.get("name")) for c in spec.get("containers") or []]
    for index, name in enumerate(clients):
        if name not in names:
            raise RenderError(
                f"experimental.checkpoint.job.gmsClientContainers[{index}]",
                f"{name!r} does not name a container of the checkpoint Job's pod ({', '.join(names)})",
            )
    template["spec"] = with_clients(spec, clients)
    return template


def checkpoint_claim_template(
    component: ComponentSpec, identifier: str, namespace: str, checkpoint: JSON
) -> JSON:
    """The checkpoint Job's ResourceClaimTemplate: the component's GPUs, controlled by the checkpoint."""
    template = render_claim_template(component, dgd_name="", namespace=namespace)
    template["metadata"] = {
        "name": claim_template_name(identifier),
        "namespace": namespace,
        "ownerReferences": [checkpoint_reference(checkpoint)],
    }
    return template


def checkpoint_reference(checkpoint: JSON) -> JSON:
    """The controller owner reference to the DynamoCheckpoint ``checkpoint`` (raw JSON)."""
    metadata = checkpoint.get("metadata") or {}
    api_version = checkpoint.get("apiVersion", "nvidia.com/v1alpha1")
    kind = checkpoint.get("kind", "DynamoCheckpoint")
    return controller_reference(api_version, kind, metadata.get("name"), metadata.get("uid"))


def restore_targets(component: ComponentSpec, config: ComponentCheckpoint) -> tuple[str, ...]:
    """The containers a restore targets: intra-pod failover's engines, else ``targetContainerName``."""
    engines = engine_names(component)
    if engines:
        return tuple(engines)
    return (config.target_container_name,) if config.target_container_name else ()
