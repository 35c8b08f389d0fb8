"""The shared-resources child of a DGD: what must exist before its pods (dgd-domain §7, in order).

Asked twice per reconcile, around the checkpoints (step 5, the checkpoint-storage child):

``EnsureShared``, before them:
1. RBAC (cluster-wide mode only): the planner ServiceAccount and its RoleBinding to the planner
   ClusterRole, and the endpoint picker's pair when the DGD has an EPP component, per namespace and
   owned by no DGD. Each ClusterRole must exist.
2. Legacy v1alpha1 ``spec.pvcs``: each claim must exist; one marked ``create`` is created (owned by
   the DGD).
3. Kubernetes discovery RBAC: the DGD's ServiceAccount, Role and RoleBinding (synced, owned).
4. GPU memory service (DRA gate): per component the ResourceClaimTemplate ``<dgd>-<component>-gpu``,
   synced (owned) for GMS components once their DeviceClass is found to exist, deleted (when this
   DGD owns it) for the others. With the DRA gate off, a component using GMS or inter-pod failover
   fails this step.

``EnsureSharedAfterCheckpoints``, after them (a failure keeps the checkpoint statuses):
6. The EPP component's ConfigMap, InferencePool and Istio DestinationRule (synced, owned).
7. Multinode graphs: the wait-for-leader ConfigMap (synced, owned).
8. Multinode graphs: the MPI SSH key Secret, generated once in the operator's namespace and
   replicated into the DGD's (owned by no DGD).

(Checkpoints, step 5, are not this actor's.) Every write records its event on the DGD; a failure
answers ``StepFailed`` naming the step.
"""

from __future__ import annotations

import base64
import logging

import msgspec

from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.actors.machinery.owners import owner_reference
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer, as_json
from dgd.cluster.errors import ClusterError
from dgd.cluster.resources import (
    CLUSTER_ROLE,
    CONFIG_MAP,
    DESTINATION_RULE,
    DEVICE_CLASS,
    INFERENCE_POOL,
    PVC,
    RESOURCE_CLAIM_TEMPLATE,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
    Resource,
)
from dgd.domain.pod_merge import JSON
from dgd.domain.render.epp import epp_component, epp_objects, render_destination_rule
from dgd.domain.render.gms import claim_template_name, device_class, needs_dra, render_claim_template
from dgd.domain.render.shared_objects import (
    PRIVATE_KEY,
    PUBLIC_KEY,
    discovery_enabled,
    discovery_rbac,
    epp_rbac,
    legacy_pvc,
    legacy_pvcs,
    mpi_secret,
    needs_wait_leader,
    planner_rbac,
    wait_leader_config_map,
)
from dgd.domain.render.ssh_keys import KeySource
from dgd.domain.sync import Patch, plan_sync
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.meta import controller_of
from dgd.runtime import Actor, Request

logger = logging.getLogger("dgd.shared")

_BY_KIND: dict[str, Resource[JSON]] = {
    "ServiceAccount": SERVICE_ACCOUNT,
    "Role": ROLE,
    "RoleBinding": ROLE_BINDING,
    "ConfigMap": CONFIG_MAP,
    "InferencePool": INFERENCE_POOL,
    "DestinationRule": DESTINATION_RULE,
}


#: Seconds a planner or EPP ClusterRole found to exist is taken to exist without reading it again.
ROLE_CHECK_PERIOD = 60.0
#: Seconds a DeviceClass found to exist is taken to exist without reading it again.
DEVICE_CLASS_CHECK_PERIOD = 60.0
#: Seconds an MPI key Secret (the source or a replica) found to exist is taken to exist.
SECRET_CHECK_PERIOD = 60.0


class SharedEnsured(msgspec.Struct, frozen=True):
    """The shared resources are in place; ``objects`` names what this DGD needs (``Kind name``)."""

    objects: tuple[str, ...] = ()


class EnsureShared(Request[SharedEnsured | StepFailed], frozen=True):
    """Ensure steps 1–3 for ``dgd`` (defaulted); ``owner`` is the stored DGD children point at."""

    dgd: DynamoGraphDeployment
    owner: DynamoGraphDeployment


class EnsureSharedAfterCheckpoints(Request[SharedEnsured | StepFailed], frozen=True):
    """Ensure steps 6–8 for ``dgd`` (defaulted), once its checkpoints are resolved."""

    dgd: DynamoGraphDeployment
    owner: DynamoGraphDeployment


class SharedResources(Actor[EnsureShared | EnsureSharedAfterCheckpoints]):
    """Answers both requests; steps in the order of dgd-domain §7."""

    def __init__(self, *, reader: Reader, syncer: Syncer, config: OperatorConfig, keys: KeySource) -> None:
        self._reader = reader
        self._syncer = syncer
        self._config = config
        self._keys = keys

    async def receive(
        self, message: EnsureShared | EnsureSharedAfterCheckpoints
    ) -> SharedEnsured | StepFailed:
        if isinstance(message, EnsureSharedAfterCheckpoints):
            return await self._after_checkpoints(message.dgd, message.owner)
        dgd, owner = message.dgd, message.owner
        namespace = dgd.metadata.namespace or ""
        ensured: list[str] = []
        cluster_wide = not self._config.namespace.restricted
        try:
            # 1. Planner RBAC, per namespace, only when the operator watches the whole cluster.
            if cluster_wide:
                role = self._config.rbac.planner_cluster_role_name
                if not role:
                    raise _Missing("planner ClusterRole name is required in cluster-wide mode")
                ensured += await self._bind_cluster_role(owner, role, planner_rbac(namespace, role))
        except (ClusterError, _Missing) as error:
            return StepFailed(f"failed to ensure planner RBAC: {error}")
        if cluster_wide and epp_component(dgd) is not None:
            # 1. The endpoint picker's identity, the same way, when the graph has one.
            role = self._config.rbac.epp_cluster_role_name
            if not role:
                return StepFailed(
                    "EPP ClusterRole name is required in cluster-wide mode when EPP service is present"
                )
            try:
                ensured += await self._bind_cluster_role(owner, role, epp_rbac(namespace, role))
            except (ClusterError, _Missing) as error:
                return StepFailed(f"failed to ensure EPP RBAC: {error}")
        try:
            # 2. Claims the v1alpha1 manifest declared must exist before pods mount them.
            ensured += await self._legacy_pvcs(dgd, owner)
        except (ClusterError, _Missing) as error:
            return StepFailed(f"failed to reconcile top-level PVCs: {error}")
        try:
            # 3. The discovery identity of the DGD's pods.
            if discovery_enabled(dgd, self._config):
                ensured += await self._sync_all(discovery_rbac(dgd), owner)
        except ClusterError as error:
            return StepFailed(f"failed to reconcile the Kubernetes discovery RBAC: {error}")
        try:
            # 4. The GPUs a GPU memory service pod claims through DRA.
            ensured += await self._claim_templates(dgd, owner)
        except (ClusterError, _Missing) as error:
            return StepFailed(f"failed to reconcile GMS ResourceClaimTemplates: {error}")
        return SharedEnsured(tuple(ensured))

    async def _after_checkpoints(
        self, dgd: DynamoGraphDeployment, owner: DynamoGraphDeployment
    ) -> SharedEnsured | StepFailed:
        namespace = dgd.metadata.namespace or ""
        ensured: list[str] = []
        try:
            # 6. The endpoint picker's configuration, its pool and the mesh's way to it.
            ensured += await self._epp(dgd, owner)
        except ClusterError as error:
            return StepFailed(f"failed to reconcile EPP resources: {error}")
        if needs_wait_leader(dgd):
            try:
                # 7. Multinode workers wait for their leader with this script.
                ensured += await self._sync_all([wait_leader_config_map(dgd)], owner)
            except ClusterError as error:
                return StepFailed(f"failed to reconcile the wait-for-leader ConfigMap: {error}")
            try:
                # 8. Multinode pods reach each other over SSH with one key pair per cluster.
                ensured += await self._mpi_secret(namespace, owner)
            except (ClusterError, _Missing) as error:
                return StepFailed(f"failed to ensure the MPI SSH key Secret: {error}")
        return SharedEnsured(tuple(ensured))

    async def _epp(self, dgd: DynamoGraphDeployment, owner: DynamoGraphDeployment) -> list[str]:
        component = epp_component(dgd)
        if component is None:
            return []
        mesh = self._config.service_mesh
        objects = epp_objects(dgd, component, mesh, istio=bool(mesh.enabled))
        # With the Istio gate off, a DestinationRule this DGD made while it was on goes (none is read
        # where the API is not served: the GET answers "not found").
        if not mesh.enabled:
            rule = render_destination_rule(dgd, component, mesh)
            meta = rule["metadata"]
            live = await self._reader.get(DESTINATION_RULE.key(meta["namespace"], meta["name"]))
            controller = controller_of(live) if live is not None else None
            if controller is not None and controller.uid == owner.metadata.uid:
                await self._syncer.delete(
                    DESTINATION_RULE, live, owner=owner, why="the Istio service mesh is off"
                )
        return await self._sync_all(objects, owner)

    async def _sync_all(self, objects: list[JSON], owner: DynamoGraphDeployment) -> list[str]:
        names = []
        for desired in objects:
            resource = _BY_KIND[desired["kind"]]
            meta = desired["metadata"]
            live = await self._reader.get(resource.key(meta["namespace"], meta["name"]))
            await self._syncer.sync(resource, desired, live, owner=owner)
            names.append(f"{desired['kind']} {meta['name']}")
        return names

    async def _claim_templates(self, dgd: DynamoGraphDeployment, owner: DynamoGraphDeployment) -> list[str]:
        components = dgd.spec.components or []
        if self._config.dra.enabled is not True:
            for component in components:
                if needs_dra(component):
                    raise _Missing(
                        f'component "{component.name}" uses the GPU memory service or inter-pod failover, '
                        "which requires DRA (resource.k8s.io/v1, Kubernetes >= 1.34): the operator has DRA "
                        "disabled (dra.enabled, or the API is not served)"
                    )
            return []
        name, namespace = dgd.metadata.name or "", dgd.metadata.namespace or ""
        now = self.context.clock.now()
        ensured = []
        for component in components:
            key = RESOURCE_CLAIM_TEMPLATE.key(namespace, claim_template_name(name, component.name))
            live = await self._reader.get(key)
            if component.experimental is None or component.experimental.gpu_memory_service is None:
                # A template this DGD made for a component that no longer uses GMS goes.
                controller = controller_of(live) if live is not None else None
                if controller is not None and controller.uid == owner.metadata.uid:
                    await self._syncer.delete(
                        RESOURCE_CLAIM_TEMPLATE, live, owner=owner, why="its component no longer uses GMS"
                    )
                continue
            # Read at most once per period for all DGDs: the operator may get DeviceClasses, not watch
            # them. A namespace-restricted operator reads nothing cluster-scoped: it does not check.
            device = device_class(component)
            if not self._config.namespace.restricted and not await self._reader.exists(
                DEVICE_CLASS.key(None, device), now=now, fresh_for=DEVICE_CLASS_CHECK_PERIOD
            ):
                raise _Missing(
                    f'DeviceClass "{device}" not found: ensure the GPU DRA driver is installed and the '
                    "device class is registered"
                )
            desired = render_claim_template(component, dgd_name=name, namespace=namespace)
            plan = plan_sync(desired, as_json(live) if live is not None else None, owner_reference(owner))
            if live is not None and isinstance(plan, Patch) and plan.spec:
                # A template's spec cannot change (the API server refuses it): it is made anew.
                why = "its device request changed and a ResourceClaimTemplate's spec is immutable"
                await self._syncer.delete(RESOURCE_CLAIM_TEMPLATE, live, owner=owner, why=why)
                live = None
            await self._syncer.sync(RESOURCE_CLAIM_TEMPLATE, desired, live, owner=owner)
            ensured.append(f"ResourceClaimTemplate {key.name}")
        return ensured

    async def _bind_cluster_role(
        self, owner: DynamoGraphDeployment, role: str, identity: tuple[JSON, JSON]
    ) -> list[str]:
        """A ServiceAccount and its RoleBinding to the ClusterRole ``role``, which must exist."""
        # Read at most once per ROLE_CHECK_PERIOD for all DGDs: the operator's RBAC lets it get this one
        # ClusterRole, not watch it.
        now = self.context.clock.now()
        if not await self._reader.exists(CLUSTER_ROLE.key(None, role), now=now, fresh_for=ROLE_CHECK_PERIOD):
            why = "ensure it is created by Helm before deploying components"
            raise _Missing(f'cluster role "{role}" does not exist: {why}')
        account, binding = identity
        namespace = account["metadata"]["namespace"]
        # Every DGD of the namespace ensures the same two objects: one at a time, so only the first
        # creates them and the others find them (in the cache, which observed the create).
        account_name, binding_name = account["metadata"]["name"], binding["metadata"]["name"]
        async with self._syncer.exclusive(SERVICE_ACCOUNT, namespace, account_name):
            if await self._reader.get(SERVICE_ACCOUNT.key(namespace, account_name)) is None:
                await self._syncer.create(SERVICE_ACCOUNT, account, owner=owner)
        async with self._syncer.exclusive(ROLE_BINDING, namespace, binding_name):
            await self._binding(namespace, binding, owner)
        return [f"ServiceAccount {account_name}", f"RoleBinding {binding_name}"]

    async def _binding(self, namespace: str, binding: JSON, owner: DynamoGraphDeployment) -> None:
        live = await self._reader.get(ROLE_BINDING.key(namespace, binding["metadata"]["name"]))
        if live is None:
            await self._syncer.create(ROLE_BINDING, binding, owner=owner)
        elif live.get("roleRef") != binding["roleRef"]:
            # A RoleBinding's roleRef is immutable: replace the binding.
            await self._syncer.delete(ROLE_BINDING, live, owner=owner, why="its ClusterRole changed")
            await self._syncer.create(ROLE_BINDING, binding, owner=owner)
        elif live.get("subjects") != binding["subjects"]:
            await self._syncer.replace(ROLE_BINDING, {**live, "subjects": binding["subjects"]}, owner=owner)

    async def _legacy_pvcs(self, dgd: DynamoGraphDeployment, owner: DynamoGraphDeployment) -> list[str]:
        names = []
        for pvc in legacy_pvcs(dgd):
            if not pvc.name:
                logger.warning(
                    "%s/%s: a v1alpha1 pvcs entry has no name; skipped",
                    dgd.metadata.namespace,
                    dgd.metadata.name,
                )
                continue
            if await self._reader.get(PVC.key(dgd.metadata.namespace, pvc.name)) is None:
                if not pvc.create:
                    raise _Missing(
                        f'PersistentVolumeClaim "{pvc.name}" does not exist and create is not enabled for it'
                    )
                body = legacy_pvc(dgd, pvc)
                body["metadata"]["ownerReferences"] = [owner_reference(owner)]
                await self._syncer.create(PVC, body, owner=owner)
            names.append(f"PersistentVolumeClaim {pvc.name}")
        return names

    async def _mpi_secret(self, namespace: str, owner: DynamoGraphDeployment) -> list[str]:
        name, source = self._config.mpi.ssh_secret_name, self._config.mpi.ssh_secret_namespace
        now = self.context.clock.now()
        # One key pair per cluster, replicated per namespace, each made by one DGD at a time. Secrets
        # are not watched: one found (or made) is taken to exist for SECRET_CHECK_PERIOD by every DGD
        # (one deleted is made again that much later), instead of two GETs per reconcile.
        made: JSON | None = None
        async with self._syncer.exclusive(SECRET, source, name):
            if not await self._reader.exists(
                SECRET.key(source, name), now=now, fresh_for=SECRET_CHECK_PERIOD
            ):
                made = await self._make_source(source, name, owner)
                self._reader.found(SECRET.key(source, name), now=now)
        if namespace != source:
            async with self._syncer.exclusive(SECRET, namespace, name):
                key = SECRET.key(namespace, name)
                if not await self._reader.exists(key, now=now, fresh_for=SECRET_CHECK_PERIOD):
                    await self._replicate(made, source, namespace, name, owner)
                    self._reader.found(key, now=now)
        return [f"Secret {name}"]

    async def _make_source(self, source: str, name: str, owner: DynamoGraphDeployment) -> JSON | None:
        """Generate the key pair and create its Secret; ``None`` if someone else (another operator, a
        user) created it first: then theirs is the key pair."""
        # Made off the event loop (the source's guarantee): a key is ~0.1 s of CPU.
        pair = await self._keys()
        data = {
            PRIVATE_KEY: base64.b64encode(pair.private_pem.encode()).decode("ascii"),
            PUBLIC_KEY: base64.b64encode(pair.public_openssh.encode()).decode("ascii"),
        }
        return await self._syncer.create(SECRET, mpi_secret(name, source, data), owner=owner)

    async def _replicate(
        self, made: JSON | None, source: str, namespace: str, name: str, owner: DynamoGraphDeployment
    ) -> None:
        # The key pair as stored (read fresh, since it is copied), unless this reconcile just made it.
        original = made
        if original is None:
            original = await self._reader.get(SECRET.key(source, name))
        if original is None:
            raise _Missing(f"Secret {source}/{name} vanished while it was being replicated")
        replica = mpi_secret(name, namespace, dict(original.get("data") or {}), original.get("type"))
        await self._syncer.create(SECRET, replica, owner=owner)


class _Missing(Exception):
    """A precondition of a step does not hold (the message says what to do)."""
