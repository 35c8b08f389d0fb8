"""Every child object of a DCD, rendered purely (dcd-controller §2.2-§2.3): what the DCD controller
syncs, what it removes, in the order of its reconcile steps.

``render_dcd_children`` is a function of the DCD, the operator config, the gates and the few live
objects the contract says matter (the workload and Service that exist, for the legacy worker
selector of §2.5; the legacy per-replica LeaderWorkerSets and PodGroups of §2.3.3; the labelled
ServiceAccounts of §2.4 step 10). The same inputs give the same children, whoever calls:
the controller syncs them with ``domain.sync`` (each body carries no owner reference or
bookkeeping: ``plan_sync`` adds them at creation), ``dgd-operator render --dcd`` prints them.

Not rendered here (the controller's, since it needs a read): checkpoint restore shaping (§2.4 steps 4,
6, 9), whether the storage PVC exists, ownership of what is to be removed.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from dgd.domain.checkpoint import storage_pvc
from dgd.domain.gates import Gates
from dgd.domain.naming import normalize
from dgd.domain.pod_merge import JSON
from dgd.domain.render.dcd_exposure import exposure_objects
from dgd.domain.render.dcd_identity import Identity, as_component, identify
from dgd.domain.render.dcd_pod_template import render_pod_template
from dgd.domain.render.dcd_services import component_service, model_service, wants_component_service
from dgd.domain.render.dcd_workload import (
    LEGACY_INSTANCE_LABEL,
    Removal,
    legacy_cleanup,
    lws_name,
    render_deployment,
    render_lws,
)
from dgd.domain.render.dcd_workload_type import Legacy, workload_type
from dgd.domain.render.errors import RenderError
from dgd.domain.roles import gms_mode
from dgd.domain.sync import content_hash
from dgd.messages.config import OperatorConfig
from dgd.messages.dcd import API_VERSION, KIND, DynamoComponentDeployment
from dgd.messages.meta import controller_reference

#: A DCD none of whose workload or Service exists (a first reconcile, an offline render).
NOTHING_LIVE = Legacy()
INTER_POD_SNAPSHOT = "Snapshot with gpuMemoryService.mode=InterPod is unsupported"
FAILOVER_SNAPSHOT = "Snapshot with active/passive failover is temporarily unsupported"


class Child(msgspec.Struct, frozen=True, kw_only=True):
    """One object to sync. ``owned``: it gets a controller owner reference to the DCD (the shared
    checkpoint PVC does not); ``create_only``: an existing one is left as it is (the per-model Service,
    the PVC); ``may_create``: ``False`` for a PVC that must exist already (``pvc.create`` false)."""

    body: JSON
    last_applied_hash: str
    owned: bool = True
    create_only: bool = False
    may_create: bool = True


class DCDChildren(msgspec.Struct, frozen=True, kw_only=True):
    """What one reconcile of a DCD syncs (``children``, in step order) and removes (``removals``).

    ``refused``: the checkpoint preflight's violations (§2.2 step 3); when any, nothing else is
    rendered and nothing is touched. ``unlabel``: the LeaderWorkerSet to take the legacy
    ``instance-id`` label off. ``workload_type`` and ``runtime_namespace`` go into the status."""

    refused: tuple[str, ...] = ()
    children: tuple[Child, ...] = ()
    removals: tuple[Removal, ...] = ()
    unlabel: str | None = None
    workload_type: str = ""
    runtime_namespace: str = ""


def owner_reference(dcd: DynamoComponentDeployment) -> JSON:
    """The controller owner reference every owned child gets."""
    return controller_reference(API_VERSION, KIND, dcd.metadata.name, dcd.metadata.uid)


def checkpoint_violations(dcd: DynamoComponentDeployment) -> tuple[str, ...]:
    """§2.2 step 3, whatever the Checkpoint gate: a checkpointed DCD may use neither inter-pod GPU memory
    sharing nor failover."""
    experimental = dcd.spec.experimental
    checkpoint = experimental.checkpoint if experimental is not None else None
    if checkpoint is None or not checkpoint.enabled:
        return ()
    component = as_component(dcd, dcd.spec.name or dcd.metadata.name or "")
    found = []
    if gms_mode(component) == "InterPod":
        found.append(INTER_POD_SNAPSHOT)
    if experimental is not None and experimental.failover is not None:
        found.append(FAILOVER_SNAPSHOT)
    return tuple(found)


def _child(body: JSON, **flags: bool) -> Child:
    return Child(body=body, last_applied_hash=content_hash(body), **flags)


def _storage(dcd: DynamoComponentDeployment, config: OperatorConfig, gates: Gates) -> list[Child]:
    """§2.3.9: the shared, unowned storage PVC of a checkpointed DCD (Checkpoint gate on)."""
    experimental = dcd.spec.experimental
    checkpoint = experimental.checkpoint if experimental is not None else None
    if not gates.checkpoint or checkpoint is None or not checkpoint.enabled:
        return []
    wanted = storage_pvc(config, dcd.metadata.namespace or "")
    if wanted is None:
        return []
    _, create, body = wanted
    return [_child(body, owned=False, create_only=True, may_create=create)]


def render_dcd_children(
    dcd: DynamoComponentDeployment,
    config: OperatorConfig,
    *,
    gates: Gates,
    live: Legacy = NOTHING_LIVE,
    legacy_objects: Sequence[JSON] = (),
    service_accounts: Sequence[str] = (),
) -> DCDChildren:
    """The children of ``dcd`` (defaulted, namespaced) under ``config`` and ``gates``.

    ``live``: what exists of its workload and Service (§2.5); ``legacy_objects``: the LeaderWorkerSets
    and PodGroups of the namespace labelled ``instance-id`` (§2.3.3; read only on the LWS path);
    ``service_accounts``: the labelled ServiceAccounts of §2.4 step 10. ``RenderError`` if refused
    (the checkpoint storage configuration's ``StorageError`` too).
    """
    refused = checkpoint_violations(dcd)
    if refused:
        return DCDChildren(refused=refused)
    identity = identify(dcd, config)
    lws = gates.lws and identity.multinode
    kind = workload_type(identity.spec_type, dcd.metadata.labels or {}, live, lws_gate=gates.lws)
    # Step 7: checkpoint storage first, so that rendering stays read-only.
    children = _storage(dcd, config, gates)
    # Step 8: the workload, and on the LWS path the legacy per-replica objects it replaces.
    children.append(_child(_workload(dcd, identity, config, kind, lws, service_accounts)))
    removals = legacy_cleanup(identity, legacy_objects) if lws else []
    unlabel = _unlabel(live, identity) if lws else None
    # Step 9: the component Service, or its name removed. Departure (§2.13 #9): only LWS leaders are
    # selected by role; a multinode DCD on a Deployment has no role label on its pods.
    if wants_component_service(identity):
        children.append(_child(component_service(identity, kind, leader_only=lws)))
    else:
        removals.append(Removal(api_version="v1", kind="Service", name=normalize(identity.name)))
    # Step 10: the model's headless Service, created by the first user of the model.
    model = dcd.spec.model_ref.name if dcd.spec.model_ref is not None else ""
    if model:
        children.append(_child(model_service(model, identity.namespace), create_only=True))
    # Step 11: the Ingress, then the VirtualService while the config names a gateway.
    exposed, unwanted = exposure_objects(identity, config)
    children += [_child(body) for body in exposed]
    removals += [Removal(api_version=a, kind=k, name=normalize(identity.name)) for a, k in unwanted]
    return DCDChildren(
        children=tuple(children),
        removals=tuple(removals),
        unlabel=unlabel,
        workload_type=kind,
        runtime_namespace=identity.runtime_namespace,
    )


def _workload(
    dcd: DynamoComponentDeployment,
    identity: Identity,
    config: OperatorConfig,
    kind: str,
    lws: bool,
    service_accounts: Sequence[str],
) -> JSON:
    if not lws:
        template = render_pod_template(
            dcd, identity, config, role="main", workload_type=kind, service_accounts=service_accounts
        )
        return render_deployment(identity, dcd.spec.replicas, template)
    templates = []
    for role in ("leader", "worker"):
        try:
            templates.append(
                render_pod_template(
                    dcd, identity, config, role=role, workload_type=kind, service_accounts=service_accounts
                )
            )
        except RenderError as error:
            raise RenderError(
                error.path, f"failed to generate {role} pod template: {error.message}"
            ) from error
    return render_lws(identity, dcd.spec.replicas, templates[0], templates[1], kind)


def _unlabel(live: Legacy, identity: Identity) -> str | None:
    """The adopted LeaderWorkerSet, when it still has the legacy ``instance-id`` label."""
    if live.lws is None:
        return None
    labels = (live.lws.get("metadata") or {}).get("labels") or {}
    return lws_name(identity.name) if LEGACY_INSTANCE_LABEL in labels else None
