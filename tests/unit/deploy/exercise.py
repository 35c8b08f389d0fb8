"""The operator put through its paces on the simulated cluster, every API call it makes recorded.

``exercise(config, stories)`` runs the real daemon (``dgd.daemon.run.Daemon``: leader election on
a Lease, then the operator's actor tree with its informers) against a ``SimulatedCluster`` through a
``RecordingCluster``, plays each story as a user would (apply, edit, scale, delete), stops the daemon
gracefully (it releases its lease) and returns every call the daemon made. Stories wait for what the
user would see, so each one really happened: a story that does not complete fails the run.

Each exercise runs twice: once as is, then again with every write of the first run failing once (a
create as ``AlreadyExists``, an update, patch or delete as ``Conflict``), so the operator's recovery
paths — re-reads after a lost race — are exercised and recorded too.

Given ``webhooks`` (the settings an installation's Deployment runs with), the daemon serves its
webhooks too, on a free local port, and its leader registers them with the simulated API server, which
then serves the registration's kinds and holds the CRDs of ``deploy/crds`` (as a cluster the CRDs were
applied to): the Secret of its own certificates, its configurations, the CRDs' conversion and who it is
are recorded with the rest.

Everything runs on the virtual clock: minutes of cluster time take a second or two.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec

from dgd.actors.machinery.owners import owner_reference
from dgd.cluster.errors import AlreadyExists, Conflict, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import (
    CLUSTER_TOPOLOGY_BINDING,
    CONFIG_MAP,
    CRD,
    DCD,
    DEFAULT_RESOURCES,
    DESTINATION_RULE,
    DGD,
    DGDSA,
    EVENT,
    INFERENCE_POOL,
    INGRESS,
    LEASE,
    MUTATING_WEBHOOK_CONFIGURATION,
    PCS,
    PVC,
    REGISTRATION_RESOURCES,
    RESOURCE_CLAIM_TEMPLATE,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
    VIRTUAL_SERVICE,
    Resource,
)
from dgd.daemon.registration import CONVERTED_CRDS, WebhookSettings
from dgd.daemon.run import Daemon, DaemonSettings
from dgd.domain.conversion.dgd import dgd_to_v1beta1
from dgd.domain.gates import effective_config, resolve_gates, served_apis
from dgd.domain.sync import LAST_APPLIED_HASH
from dgd.messages.config import RELEASE_NAMESPACE, OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.sim import SimulatedCluster, WorldSettings, run
from dgd.sim.key_pool import KeyPool
from tests.scenarios.graphs import SNAPSHOT, model_cache
from tests.scenarios.grove.stage import upstream
from tests.unit.deploy.generator import DEPLOY, committed
from tests.unit.deploy.recording import Call, RecordingCluster

#: Where users put their graphs, and where the operator runs (its Lease, its MPI key Secret).
USER_NS = "default"
OPERATOR_NS = RELEASE_NAMESPACE

AGG = "ai-dynamo-dynamo/examples/backends/vllm/deploy/agg.yaml"
MULTINODE = "ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg-multinode.yaml"
GAIE = "ai-dynamo-dynamo/examples/backends/vllm/deploy/gaie/agg.yaml"
FAILOVER = "ai-dynamo-dynamo/examples/backends/vllm/deploy/v1beta1/agg_failover.yaml"
WORKER = "VllmDecodeWorker"
#: Generous limits in cluster seconds (the world's pods are ready 30 s after they are created).
WAIT = 900.0


class User:
    """What a story does to the cluster, through a client of its own (not recorded)."""

    def __init__(self, sim: SimulatedCluster) -> None:
        self.sim = sim
        self.client: Cluster = sim.cluster.client()

    async def apply(self, document: dict[str, Any]) -> str:
        document["metadata"]["namespace"] = document["metadata"].get("namespace") or USER_NS
        await self.client.create(DGD.as_raw(), document)
        return str(document["metadata"]["name"])

    async def dgd(self, name: str) -> DynamoGraphDeployment | None:
        try:
            return await self.client.get(DGD.key(USER_NS, name))
        except NotFound:
            return None

    async def until(self, name: str, check: Callable[[DynamoGraphDeployment], bool]) -> None:
        async def holds() -> bool:
            dgd = await self.dgd(name)
            return dgd is not None and check(dgd)

        await self.sim.until(holds, timeout=WAIT)

    async def until_successful(self, name: str) -> None:
        await self.until(name, lambda d: d.status is not None and d.status.state == "successful")

    async def until_gone(self, key: Any) -> None:
        """Wait until the object ``key`` names is gone (the operator deleted it)."""

        async def gone() -> bool:
            try:
                await self.client.get(key)
            except NotFound:
                return True
            return False

        await self.sim.until(gone, timeout=WAIT)

    async def edit(self, name: str, change: Callable[[dict[str, Any]], None]) -> None:
        """Read, change and write the DGD's spec back (again on a conflict), as kubectl edit does."""
        while True:
            dgd = await self.dgd(name)
            assert dgd is not None, f"DGD {name} is gone"
            spec = msgspec.to_builtins(dgd.spec)
            change(spec)
            try:
                await self.client.replace(
                    DGD, msgspec.structs.replace(dgd, spec=msgspec.convert(spec, type(dgd.spec)))
                )
                return
            except Conflict:
                continue

    async def scale_adapter(self, name: str, replicas: int) -> None:
        """Write the adapter's scale subresource as an autoscaler does (again on a conflict)."""
        key = DGDSA.key(USER_NS, name)
        while True:
            scale = await self.client.get_scale(key)
            try:
                await self.client.replace_scale(
                    key,
                    msgspec.structs.replace(
                        scale, spec=msgspec.structs.replace(scale.spec, replicas=replicas)
                    ),
                )
                return
            except Conflict:
                continue

    async def delete_all(self) -> None:
        """Delete every DGD and wait until the operator has finalized them all."""
        for dgd in (await self.client.list(DGD, namespace=USER_NS)).items:
            await self.client.delete(DGD.key(USER_NS, dgd.metadata.name or ""))

        async def gone() -> bool:
            return not (await self.client.list(DGD, namespace=USER_NS)).items

        await self.sim.until(gone, timeout=WAIT)


Story = Callable[[User], Awaitable[None]]


def _components(document: dict[str, Any]) -> list[dict[str, Any]]:
    components: list[dict[str, Any]] = document["spec"]["components"]
    return components


def _component(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in spec["components"] if c["name"] == name)


def _agg(name: str, *, grove: bool) -> dict[str, Any]:
    """The aggregated vLLM example, its worker with a scaling adapter."""
    document = upstream(AGG)
    document["metadata"]["name"] = name
    document["metadata"]["annotations"] = {} if grove else {"nvidia.com/enable-grove": "false"}
    _component(document["spec"], WORKER)["scalingAdapter"] = {}
    return document


async def grove_graph(user: User) -> None:
    """A Grove graph: created, scaled through its adapter, restarted."""
    name = await user.apply(_agg("grove-agg", grove=True))
    await user.until_successful(name)
    await user.scale_adapter(f"{name}-{WORKER.lower()}", 2)
    await user.until(
        name, lambda d: _replicas(d, WORKER) == 2 and d.status is not None and d.status.state == "successful"
    )
    await user.edit(name, _restart("grove-restart"))
    await user.until(name, _restarted)


async def kv_transfer_graph(user: User) -> None:
    """A Grove graph whose KV-transfer policy names a ClusterTopologyBinding an admin created first:
    the operator reads it on every reconcile (and its webhook on the create)."""
    binding = {
        "apiVersion": CLUSTER_TOPOLOGY_BINDING.api_version,
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": "exercise-topology"},
        "spec": {"levels": [{"domain": "zone", "key": "example.com/zone"}, {"domain": "rack", "key": "r"}]},
    }
    await user.client.create(CLUSTER_TOPOLOGY_BINDING, binding)
    document = _agg("kv-agg", grove=True)
    policy = {"clusterTopologyName": "exercise-topology", "domain": "rack"}
    document["spec"]["experimental"] = {"kvTransferPolicy": policy}
    name = await user.apply(document)
    await user.until_successful(name)


async def component_graph(user: User) -> None:
    """A Component-pathway graph: created, scaled through its adapter, rolled to a new image, restarted."""
    name = await user.apply(_agg("component-agg", grove=False))
    await user.until_successful(name)
    await user.scale_adapter(f"{name}-{WORKER.lower()}", 2)
    await user.until(name, lambda d: _replicas(d, WORKER) == 2)

    def new_image(spec: dict[str, Any]) -> None:
        container = _component(spec, WORKER)["podTemplate"]["spec"]["containers"][0]
        container["image"] = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.1"

    await user.edit(name, new_image)
    await user.until(name, _rolled_out)
    await user.edit(name, _restart("component-restart"))
    await user.until(name, _restarted)
    # The adapter's labels are stripped: the operator puts them back.
    adapter = DGDSA.key(USER_NS, f"{name}-{WORKER.lower()}")
    await user.client.patch(adapter, {"metadata": {"labels": None}})
    await _nudge(user, name)

    async def relabelled() -> bool:
        return bool((await user.client.get(adapter)).metadata.labels)

    await user.sim.until(relabelled, timeout=WAIT)

    # The worker no longer asks for an adapter: the operator deletes it.
    def no_adapter(spec: dict[str, Any]) -> None:
        _component(spec, WORKER).pop("scalingAdapter", None)

    await user.edit(name, no_adapter)

    await user.until_gone(adapter)


async def multinode_graph(user: User) -> None:
    """A multinode graph on Grove: the wait-for-leader ConfigMap and the MPI SSH key Secret, then scaled."""
    document = upstream(MULTINODE)
    document["metadata"]["annotations"] = {}
    name = await user.apply(document)
    await user.until_successful(name)

    # Its multinode decode workers are scaled: through their scaling group's scale subresource.
    def more_decoders(spec: dict[str, Any]) -> None:
        _component(spec, "decode")["replicas"] = 2

    await user.edit(name, more_decoders)
    await user.until(
        name,
        lambda d: (
            d.status is not None
            and d.status.state == "successful"
            and d.metadata.generation == d.status.observed_generation
        ),
    )


async def legacy_claims(user: User) -> None:
    """A v1alpha1 graph whose top-level claim the operator creates."""
    alpha = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "legacy", "namespace": USER_NS},
        "spec": {
            "backendFramework": "vllm",
            "pvcs": [
                {"name": "legacy-cache", "create": True, "size": "1Gi", "volumeAccessMode": "ReadWriteMany"}
            ],
            "services": {
                "Frontend": {
                    "componentType": "frontend",
                    "extraPodSpec": {
                        "mainContainer": {"image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0"}
                    },
                }
            },
        },
    }
    name = await user.apply(dgd_to_v1beta1(alpha))
    await user.until_successful(name)
    assert (await user.client.get(PVC.key(USER_NS, "legacy-cache")))["metadata"]["name"] == "legacy-cache"


async def _endpoint_pickers(user: User) -> list[str]:
    """The gaie example (an endpoint picker and a decode worker) on both pathways, each successful."""
    names = []
    for grove in (True, False):
        document = upstream(GAIE)
        document["metadata"]["name"] = f"epp-{'grove' if grove else 'component'}"
        document["metadata"]["annotations"] = {} if grove else {"nvidia.com/enable-grove": "false"}
        names.append(await user.apply(document))
    for name in names:
        await user.until_successful(name)
    return names


async def _repaired(
    user: User, resource: Resource[Any], name: str, field: str, value: Any, owner: str
) -> None:
    """Someone sets a field of the child's spec: the operator (nudged through ``owner``) puts it back."""
    key = resource.as_raw().key(USER_NS, name)
    wanted = (await user.client.get(key))["spec"][field]
    await user.client.patch(key, {"spec": {field: value}})
    await _nudge(user, owner)

    async def restored() -> bool:
        return bool((await user.client.get(key))["spec"][field] == wanted)

    await user.sim.until(restored, timeout=WAIT)


async def endpoint_picker(user: User) -> None:
    """Graphs with an endpoint picker, the Istio mesh off: their EPP RBAC, ConfigMap and pool made,
    a pool edited is repaired, and a DestinationRule a graph controls (left from when the mesh was
    on) is deleted."""
    grove, _ = await _endpoint_pickers(user)
    await _repaired(user, INFERENCE_POOL, f"{grove}-pool", "targetPorts", [{"number": 9999}], grove)
    owner = await user.dgd(grove)
    assert owner is not None
    reference = owner_reference(owner)
    rule = {
        "apiVersion": "networking.istio.io/v1beta1",
        "kind": "DestinationRule",
        "metadata": {"name": f"{grove}-epp", "namespace": USER_NS, "ownerReferences": [reference]},
        "spec": {"host": f"{grove}-epp"},
    }
    await user.client.create(DESTINATION_RULE.as_raw(), rule)
    await _nudge(user, grove)

    await user.until_gone(DESTINATION_RULE.as_raw().key(USER_NS, f"{grove}-epp"))


async def endpoint_picker_in_a_mesh(user: User) -> None:
    """Graphs with an endpoint picker, the Istio mesh on: their DestinationRules made, one edited is
    repaired."""
    grove, _ = await _endpoint_pickers(user)
    await _repaired(user, DESTINATION_RULE, f"{grove}-epp", "host", "elsewhere", grove)


async def checkpointed_graphs(user: User) -> None:
    """The snapshot/restore example on both pathways: automatic checkpoints, gating, restore."""
    await user.client.create(PVC.as_raw(), model_cache(USER_NS))
    names = []
    for grove in (True, False):
        document = upstream(SNAPSHOT)
        document["metadata"]["name"] = f"snapshot-{'grove' if grove else 'component'}"
        document["metadata"]["annotations"] = {} if grove else {"nvidia.com/enable-grove": "false"}
        if not grove:
            # Its checkpoints outlive it: the finalizer detaches them instead of deleting them.
            worker = _component(document["spec"], "TRTLLMWorker")
            worker["experimental"]["checkpoint"]["deletionPolicy"] = "Retain"
        names.append(await user.apply(document))
    for name in names:
        await user.until_successful(name)


async def gpu_memory_service(user: User) -> None:
    """The failover example (GPU memory service through DRA) on both pathways: each worker's
    ResourceClaimTemplate is made; then one worker drops GMS and failover, and its template goes."""
    names = []
    for grove in (True, False):
        document = upstream(FAILOVER)
        document["metadata"]["name"] = f"failover-{'grove' if grove else 'component'}"
        document["metadata"]["annotations"]["nvidia.com/enable-grove"] = "true" if grove else "false"
        names.append(await user.apply(document))
    for name in names:
        await user.until_successful(name)
    template = RESOURCE_CLAIM_TEMPLATE.key(USER_NS, f"{names[0]}-vllmworker-gpu")
    assert (await user.client.get(template))["metadata"]["name"] == template.name

    def without_gms(spec: dict[str, Any]) -> None:
        _component(spec, "VllmWorker").pop("experimental", None)

    await user.edit(names[0], without_gms)

    await user.until_gone(template)


async def webhook_certificates(user: User) -> None:
    """The operator's own webhook certificates: the leader renews the serving certificate before it
    expires (under the same CA); then someone deletes their Secret (a CA replaced by hand), the
    operator makes a new CA, and the leader registers it again in its configurations (replaced) and,
    cluster-wide, in the CRDs' conversion."""
    secret = await _webhook_secret(user)

    async def renewed() -> bool:
        now = await _webhook_secret(user)
        return bool(now["data"]["tls.crt"] != secret["data"]["tls.crt"])

    await user.sim.until(renewed, timeout=WAIT)
    old = secret["data"]["ca.crt"]
    await user.client.delete(SECRET.key(OPERATOR_NS, secret["metadata"]["name"]))

    async def registered_again() -> bool:
        hooks = [
            hook
            for configuration in (await user.client.list(MUTATING_WEBHOOK_CONFIGURATION)).items
            for hook in configuration["webhooks"]
        ]
        bundles = {hook["clientConfig"].get("caBundle") for hook in hooks}
        # A namespace-restricted leader leaves the CRDs alone: their bundle stays absent.
        for name in CONVERTED_CRDS:
            conversion = (await user.client.get(CRD.key(None, name)))["spec"].get("conversion") or {}
            bundles.add(((conversion.get("webhook") or {}).get("clientConfig") or {}).get("caBundle"))
        return bool(hooks) and old not in bundles

    await user.sim.until(registered_again, timeout=WAIT)


async def _webhook_secret(user: User) -> dict[str, Any]:
    """The Secret of the operator's own webhook certificates (the only TLS Secret of its namespace)."""
    secrets = (await user.client.list(SECRET.as_raw(), namespace=OPERATOR_NS)).items
    (secret,) = [s for s in secrets if s.get("type") == "kubernetes.io/tls"]
    return secret


#: The kinds the operator syncs as children of a DGD (their drift is repaired).
SYNCED: tuple[Resource[Any], ...] = (
    SERVICE,
    INGRESS,
    VIRTUAL_SERVICE,
    CONFIG_MAP,
    RESOURCE_CLAIM_TEMPLATE,
    SERVICE_ACCOUNT,
    ROLE,
    ROLE_BINDING,
    PCS,
    DCD,
)
PLANNER_BINDING = "planner-serviceaccount-binding"


async def tampered_children(user: User) -> None:
    """Someone edits the graphs' children behind the operator's back: it repairs them, and deletes
    children a graph controls but no longer renders."""
    # Drift: the bookkeeping annotation goes missing on every synced child.
    tampered: list[tuple[Resource[Any], str]] = []
    for resource in SYNCED:
        raw = resource.as_raw()
        for obj in (await user.client.list(raw, namespace=USER_NS)).items:
            if LAST_APPLIED_HASH in (obj["metadata"].get("annotations") or {}):
                name = obj["metadata"]["name"]
                await user.client.patch(
                    raw.key(USER_NS, name), {"metadata": {"annotations": {LAST_APPLIED_HASH: None}}}
                )
                tampered.append((raw, name))

    async def repaired() -> bool:
        for raw, name in tampered:
            obj = await user.client.get(raw.key(USER_NS, name))
            if LAST_APPLIED_HASH not in (obj["metadata"].get("annotations") or {}):
                return False
        return True

    await user.sim.until(repaired, timeout=WAIT)
    # Strays: a Service, an Ingress and a VirtualService the Grove graph controls but does not render.
    owner = await user.dgd("grove-agg")
    assert owner is not None
    reference = owner_reference(owner)
    stray_service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "stray", "namespace": USER_NS, "ownerReferences": [reference]},
        "spec": {"ports": [{"port": 80}]},
    }
    stray_ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "stray", "namespace": USER_NS, "ownerReferences": [reference]},
        "spec": {"rules": [{"host": "stray.local"}]},
    }
    stray_virtual_service = {
        "apiVersion": VIRTUAL_SERVICE.api_version,
        "kind": "VirtualService",
        "metadata": {"name": "stray", "namespace": USER_NS, "ownerReferences": [reference]},
        "spec": {"hosts": ["stray.local"]},
    }
    await user.client.create(SERVICE, stray_service)
    await user.client.create(INGRESS, stray_ingress)
    await user.client.create(VIRTUAL_SERVICE, stray_virtual_service)

    async def strays_gone() -> bool:
        for resource in (SERVICE, INGRESS, VIRTUAL_SERVICE):
            try:
                await user.client.get(resource.key(USER_NS, "stray"))
            except NotFound:
                continue
            return False
        return True

    await user.sim.until(strays_gone, timeout=WAIT)


async def tampered_planner_binding(user: User) -> None:
    """The per-namespace planner RoleBinding is edited (its subjects), then replaced with one bound
    to another ClusterRole: the operator updates the first, deletes and recreates the second."""
    key = ROLE_BINDING.key(USER_NS, PLANNER_BINDING)
    binding = await user.client.get(key)
    wanted_subjects, wanted_role = binding["subjects"], binding["roleRef"]
    binding["subjects"] = [{"kind": "ServiceAccount", "name": "someone-else", "namespace": USER_NS}]
    await user.client.replace(ROLE_BINDING, binding)
    await _nudge(user, "grove-agg")

    async def subjects_restored() -> bool:
        return bool((await user.client.get(key))["subjects"] == wanted_subjects)

    await user.sim.until(subjects_restored, timeout=WAIT)
    await user.client.delete(key)
    other = {k: v for k, v in binding.items() if k != "metadata"}
    other["metadata"] = {"name": PLANNER_BINDING, "namespace": USER_NS}
    other["subjects"] = wanted_subjects
    other["roleRef"] = {**wanted_role, "name": "someone-elses-role"}
    await user.client.create(ROLE_BINDING, other)
    await _nudge(user, "grove-agg")

    async def role_restored() -> bool:
        try:
            return bool((await user.client.get(key))["roleRef"] == wanted_role)
        except NotFound:
            return False

    await user.sim.until(role_restored, timeout=WAIT)


async def _nudge(user: User, name: str) -> None:
    """Make the graph reconcile again: a user annotates it."""
    dgd = await user.dgd(name)
    assert dgd is not None
    await user.client.patch(
        DGD.key(USER_NS, name), {"metadata": {"annotations": {"touched": str(user.sim.now())}}}
    )


def _replicas(dgd: DynamoGraphDeployment, component: str) -> int | None:
    return next((c.replicas for c in dgd.spec.components or [] if c.name == component), None)


def _restart(identifier: str) -> Callable[[dict[str, Any]], None]:
    def change(spec: dict[str, Any]) -> None:
        spec["restart"] = {"id": identifier}

    return change


def _restarted(dgd: DynamoGraphDeployment) -> bool:
    restart = dgd.status.restart if dgd.status is not None else None
    return restart is not None and restart.phase == "Completed"


def _rolled_out(dgd: DynamoGraphDeployment) -> bool:
    status = dgd.status
    rolling = status.rolling_update if status is not None else None
    return (
        status is not None
        and status.state == "successful"
        and rolling is not None
        and rolling.phase == "Completed"
    )


def _inject_faults(sim: SimulatedCluster, clean: list[Call]) -> None:
    """Fail, once each, every distinct write the operator made in a run without faults: a create as
    ``AlreadyExists``, an update, patch or delete as ``Conflict`` (not the lease's: the election's
    retries are its own tests' business)."""
    resources = {(r.group, r.plural): r for r in SERVED}
    errors = {"create": AlreadyExists("injected: created by someone else")}
    seen: set[tuple[str, str, str, str, str | None, str | None]] = set()
    for call in clean:
        resource = resources[(call.group, call.resource)]
        if (
            call.verb not in ("create", "update", "patch", "delete")
            or resource in (LEASE, EVENT)
            or not call.name
        ):
            continue
        target = (call.verb, call.group, call.resource, call.subresource, call.namespace, call.name)
        if target in seen:
            continue
        seen.add(target)
        error = errors.get(call.verb, Conflict("injected: changed by someone else"))
        sim.cluster.faults.fail(
            error,
            verb=call.verb,
            resource=resource,
            subresource=call.subresource,
            namespace=call.namespace,
            name=call.name,
            times=1,
        )


#: What the simulated API server serves: the webhooks' registration kinds too.
SERVED: tuple[Resource[Any], ...] = (*DEFAULT_RESOURCES, *REGISTRATION_RESOURCES)


async def _exercise(
    config: OperatorConfig,
    stories: tuple[Story, ...],
    clean: list[Call] | None,
    webhooks: WebhookSettings | None,
    served: tuple[str, ...],
) -> list[Call]:
    calls: list[Call] = []
    served_groups = (*WorldSettings().served_groups, *served)
    settings = WorldSettings(checkpoint_delay=60.0, namespaces=(USER_NS,), served_groups=served_groups)
    # The daemon runs the DCD controller: the world plays kube-controller-manager, not a DCD controller.
    async with SimulatedCluster(settings, seed=11, config=config, resources=SERVED, deployments=True) as sim:
        # The CRDs applied, as before any install (their conversion not yet pointed at the operator).
        for path in sorted((DEPLOY / "crds").glob("*.yaml")):
            for crd in committed(str(path)):
                await sim.cluster.client().create(CRD, crd)
        gates = resolve_gates(config, served_apis(sim.discovery.group_versions))
        daemon = Daemon(
            RecordingCluster(sim.cluster, calls),
            config=effective_config(config, gates),
            settings=DaemonSettings(
                instance="rbac-probe",
                metrics_address="0",
                probe_address="0",
                lease_namespace=OPERATOR_NS,
                webhooks=webhooks,
            ),
            wall=sim.now,
            random=random.Random(3),
            keys=KeyPool(random.Random(5)),
        )
        # A fresh cluster has no MPI key yet: the operator generates it.
        await sim.cluster.client().delete(
            SECRET.key(config.mpi.ssh_secret_namespace, config.mpi.ssh_secret_name)
        )
        if clean is not None:
            _inject_faults(sim, clean)
        exit_codes: list[int] = []

        async def run_daemon() -> None:
            exit_codes.append(await daemon.run())

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_daemon)
            user = User(sim)
            for story in stories:
                await story(user)
            await user.delete_all()
            daemon.stop()
        assert exit_codes == [0], f"the daemon exited {exit_codes}"
    return calls


def exercise(
    config: OperatorConfig,
    stories: tuple[Story, ...],
    webhooks: WebhookSettings | None = None,
    served: tuple[str, ...] = (),
) -> list[Call]:
    """Every API call the daemon made while ``stories`` were played, then every graph deleted: in a
    run without faults, then in a run where each of the first run's writes fails once; with
    ``webhooks``, the daemon's webhooks served and registered; ``served``: API groups the cluster's
    discovery shows besides the simulation's own (``group/version``), which the gates probe."""
    clean = run(_exercise, config, stories, None, webhooks, served)
    return clean + run(_exercise, config, stories, clean, webhooks, served)
