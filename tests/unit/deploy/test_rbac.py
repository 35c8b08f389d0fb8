"""Least-privilege RBAC: the committed rules grant exactly what the operator's own API calls need.

What the operator needs is derived, not listed: the real daemon (leader election, informers, the
operator's actor tree) runs on the simulated cluster through a recording decorator of the cluster
port while representative stories play out — Grove and Component graphs created, scaled through
their adapters, rolled out, restarted, checkpointed, tampered with, deleted — once as is and once
with each write failing once, so recovery paths count too (``exercise.py``). Every recorded call is
named as the API server's authorizer names it (verb, group, resource[/subresource]; the object name
for a cluster-scoped object), and Kubernetes' escalation rules add what the operator hands out:
the rules of every Role it writes, and ``bind`` on every ClusterRole it binds.

Then each granted set must equal its derived set: a missing permission fails (the operator would be
refused), and so does an extra one (it would hold more than it uses).

The daemon runs with the webhooks of the installation's Deployment (its own certificates, registered
through the Service): their calls are derived apart, as the roles that grant them are — the
registration's (the webhook configurations and the CRDs' conversion, narrowed to their names), the
certificates' Secret in the operator's namespace (narrowed to its name), and the SelfSubjectReview that
says who the operator is, which Kubernetes grants every authenticated user (``system:basic-user``), as
it grants API discovery (``system:discovery``): no rule of ours is needed for either.

The secure metrics server runs as the installation's Deployment and configuration run it, scraped by a
reader, by someone else and by a stranger: its TokenReviews and SubjectAccessReviews must be exactly what
the operator's metrics ClusterRole grants, and the access those reviews ask about for the reader exactly
what the ``metrics-reader`` ClusterRole grants.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import functools
import random
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import msgspec
import pytest
import yaml
from prometheus_client import CollectorRegistry

from dgd.cli.run import add_command, options
from dgd.cli.run_webhooks import webhook_settings
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CRD, DEFAULT_RESOURCES, MUTATING_WEBHOOK_CONFIGURATION, Resource
from dgd.daemon import certificates
from dgd.daemon.admission import WebhookService
from dgd.daemon.metrics_serving import SecureMetrics
from dgd.daemon.registration import CONVERTED_CRDS, WebhookSettings
from dgd.daemon.servers import Server, metrics_app
from dgd.domain.admission.config import load_config
from dgd.domain.admission.webhooks import AdmissionSettings
from dgd.domain.crds import all_crds, owned_crds
from dgd.messages.config import OperatorConfig
from tests.unit.daemon.reviews import OTHER, READER, ReviewingCluster, service_account
from tests.unit.deploy.exercise import (
    OPERATOR_NS,
    SERVED,
    USER_NS,
    Story,
    checkpointed_graphs,
    component_graph,
    endpoint_picker,
    endpoint_picker_in_a_mesh,
    exercise,
    gpu_memory_service,
    grove_graph,
    kv_transfer_graph,
    legacy_claims,
    multinode_graph,
    tampered_children,
    tampered_planner_binding,
    webhook_certificates,
)
from tests.unit.deploy.generator import committed, find, generate
from tests.unit.deploy.recording import Call, Permission, RecordingCluster, permissions
from tests.upstream import GROVE_CRD_DIR, load_documents

RBAC = "rbac.authorization.k8s.io"
LEASES = "leases"
RELEASE = generate.RELEASE
COMPONENT_STORIES: tuple[Story, ...] = (component_graph, legacy_claims)
#: Every story but the checkpoints'; the planner's binding exists only in cluster-wide mode.
RESTRICTED_STORIES: tuple[Story, ...] = (
    grove_graph,
    multinode_graph,
    *COMPONENT_STORIES,
    gpu_memory_service,
    tampered_children,
    webhook_certificates,
    endpoint_picker,
)
#: Cluster-wide only: the ClusterTopologyBinding a KV-transfer policy names is cluster-scoped.
ALL_STORIES: tuple[Story, ...] = (*RESTRICTED_STORIES, tampered_planner_binding, kv_transfer_graph)
RESOURCES: dict[tuple[str, str], Resource[Any]] = {(r.group, r.plural): r for r in SERVED}
ADMISSION, EXTENSIONS = "admissionregistration.k8s.io", "apiextensions.k8s.io"
REGISTRATION = {
    (ADMISSION, "mutatingwebhookconfigurations"),
    (ADMISSION, "validatingwebhookconfigurations"),
    (EXTENSIONS, "customresourcedefinitions"),
}
IDENTITY = ("authentication.k8s.io", "selfsubjectreviews")
#: Cluster-scoped kinds read by whatever name a DGD gives: granted without resourceNames.
ANY_NAME = {("grove.io", "clustertopologybindings")}
#: Real time, for the certificates a replica serves.
START = time.time()
#: The webhooks' Secret, as the committed installations name it.
WEBHOOK_SECRET = generate.CLUSTER_WIDE.webhook_secret_name


class Needs(msgspec.Struct, frozen=True):
    """What one exercise of the operator needs, by the role that must grant it."""

    #: the operator's own calls, but the lease's
    calls: frozenset[Permission]
    #: the lease calls of leader election
    lease: frozenset[Permission]
    #: what Kubernetes requires to hand out the Roles and bindings the operator wrote
    delegated: frozenset[Permission]
    #: the namespaces of the operator's calls (``None``: cluster-scoped or every namespace), the lease's apart
    namespaces: frozenset[str | None]
    lease_namespaces: frozenset[str | None]
    #: the webhooks' registration: their configurations and the CRDs' conversion, by name
    registration: frozenset[Permission]
    #: the Secret of the operator's own webhook certificates, by name, and the namespaces it was called in
    certificates: frozenset[Permission]
    certificate_namespaces: frozenset[str | None]
    #: who the operator is (a SelfSubjectReview)
    identity: frozenset[Permission]


def named(call: Call) -> Permission:
    """The call's permission narrowed to the object it names, if the authorizer sees a name: a create's
    name is in its body, so ``resourceNames`` cannot narrow it."""
    if not call.name or call.verb == "create":
        return call.permission
    return msgspec.structs.replace(call.permission, name=call.name)


def user_named(call: Call) -> bool:
    """A cluster-scoped object whose name the user's DGD chooses (the DeviceClass of a GPU memory
    service): its rule cannot be narrowed to names the installation knows."""
    return (call.group, call.resource) == ("resource.k8s.io", "deviceclasses")


def needs(calls: list[Call]) -> Needs:
    """What ``calls`` need (see the module)."""
    called: set[Permission] = set()
    lease: set[Permission] = set()
    delegated: set[Permission] = set()
    namespaces: set[str | None] = set()
    lease_namespaces: set[str | None] = set()
    registration: set[Permission] = set()
    secret: set[Permission] = set()
    secret_namespaces: set[str | None] = set()
    identity: set[Permission] = set()
    for call in calls:
        permission = call.permission
        cluster_scoped = not RESOURCES[(call.group, call.resource)].namespaced
        if (
            cluster_scoped
            and call.name
            and (call.group, call.resource) not in ANY_NAME
            and not user_named(call)
        ):
            permission = msgspec.structs.replace(permission, name=call.name)
        if call.resource == LEASES:
            lease.add(permission)
            lease_namespaces.add(call.namespace)
        elif (call.group, call.resource) in REGISTRATION:
            registration.add(named(call))
        elif (call.group, call.resource) == IDENTITY:
            identity.add(call.permission)
        elif call.resource == "secrets" and call.name == WEBHOOK_SECRET:
            secret.add(named(call))
            secret_namespaces.add(call.namespace)
        else:
            called.add(permission)
            namespaces.add(call.namespace)
        body = call.body if isinstance(call.body, dict) else {}
        # Escalation prevention: a Role's rules must be held by whoever writes it ...
        if call.group == RBAC and call.resource == "roles" and "rules" in body:
            delegated |= permissions(body["rules"])
        # ... and a ClusterRole bound needs the `bind` verb on it.
        role = body.get("roleRef") or {}
        if call.group == RBAC and call.resource == "rolebindings" and role.get("kind") == "ClusterRole":
            delegated.add(Permission(RBAC, "clusterroles", "bind", role["name"]))
    return Needs(
        frozenset(called),
        frozenset(lease),
        frozenset(delegated),
        frozenset(namespaces),
        frozenset(lease_namespaces),
        frozenset(registration),
        frozenset(secret),
        frozenset(secret_namespaces),
        frozenset(identity),
    )


def config(install: Any, **extra: Any) -> OperatorConfig:
    """The configuration the installation's ConfigMap gives the operator, with ``extra`` keys merged in."""
    text = install.config_map()["data"]["config.yaml"]
    return load_config(yaml.safe_dump({**yaml.safe_load(text), **extra}))


#: Seconds the operator's own serving certificates are valid in the exercise, so that the leader renews
#: them (at two thirds) while the stories play.
VALIDITY = 120.0


def webhooks(install: Any) -> WebhookSettings:
    """The webhook settings the installation's Deployment runs the daemon with, but served on a free
    local port and with short-lived certificates (``VALIDITY``)."""
    (container,) = install.deployment()["spec"]["template"]["spec"]["containers"]
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    settings = webhook_settings(parser.parse_args(container["args"]), install.namespace)
    assert settings is not None and settings.register == "service", "the installation's webhooks are off"
    return msgspec.structs.replace(settings, address="127.0.0.1:0", validity=VALIDITY)


#: Cluster-wide with an ingress class and a virtual-service gateway, so the frontends' Ingresses and
#: VirtualServices are written too (any installation may configure them: the permissions cannot depend
#: on it).
INGRESS = {"ingress": {"controllerClassName": "nginx", "virtualServiceGateway": "istio-system/gateway"}}


#: The Istio mesh on, on a cluster that serves DestinationRules: any installation may configure it.
MESH = {"serviceMesh": {"provider": "istio", "istio": {}}}
ISTIO_GROUP_VERSION = "networking.istio.io/v1beta1"


def in_a_mesh(install: Any) -> list[Call]:
    """The calls of the endpoint picker's graphs in a mesh, which the same installation makes when its
    configuration turns the mesh on."""
    mesh = config(install, **MESH)
    return exercise(mesh, (endpoint_picker_in_a_mesh,), webhooks(install), served=(ISTIO_GROUP_VERSION,))


@functools.cache
def derived(run: str) -> Needs:
    """What the operator needs in each exercised installation (each runs once per test session)."""
    if run == "cluster-wide":
        install = generate.CLUSTER_WIDE
        calls = exercise(config(install, **INGRESS), ALL_STORIES, webhooks(install))
        return needs(calls + in_a_mesh(install))
    if run == "checkpoint":
        install = generate.Install(checkpoint=True)
        return needs(exercise(config(install), (checkpointed_graphs,), webhooks(install)))
    if run == "no-grove":
        install = generate.Install(grove=False)
        return needs(exercise(config(install, **INGRESS), COMPONENT_STORIES, webhooks(install)))
    assert run == "restricted"
    install = generate.Install(watch=(USER_NS,))
    calls = exercise(config(install, **INGRESS), RESTRICTED_STORIES, webhooks(install))
    return needs(calls + in_a_mesh(install))


def granted(documents: list[dict[str, Any]], kind: str, name: str) -> frozenset[Permission]:
    return frozenset(permissions(find(documents, kind, name)["rules"]))


def difference(needed: frozenset[Permission], given: frozenset[Permission]) -> str:
    missing = sorted(str(p) for p in needed - given)
    extra = sorted(str(p) for p in given - needed)
    return f"missing: {missing}; extra: {extra}"


CLUSTER_WIDE_RBAC = "rbac/cluster-wide.yaml"
RESTRICTED_RBAC = "rbac/namespace-restricted.yaml"


def test_the_cluster_wide_operator_role_grants_exactly_the_calls_the_operator_makes() -> None:
    # given what the operator called, cluster-wide, and the ClusterRole its ServiceAccount is bound to
    need = derived("cluster-wide").calls
    given = granted(committed(CLUSTER_WIDE_RBAC), "ClusterRole", RELEASE)
    # then they are the same permissions
    assert need == given, difference(need, given)


def test_the_delegated_role_grants_exactly_what_the_operator_hands_to_graphs_and_planners() -> None:
    # given the rules of the Roles the operator wrote and the ClusterRoles it bound
    need = derived("cluster-wide").delegated
    given = granted(committed(CLUSTER_WIDE_RBAC), "ClusterRole", f"{RELEASE}-delegated")
    # then the delegated ClusterRole grants exactly those, `bind` only on the planner's and the
    # endpoint picker's ClusterRoles
    assert need == given, difference(need, given)
    assert Permission(RBAC, "clusterroles", "bind", f"{RELEASE}-planner") in given
    assert Permission(RBAC, "clusterroles", "bind", f"{RELEASE}-epp") in given


def test_leader_election_is_granted_exactly_its_lease_calls_in_the_operators_namespace() -> None:
    # given the lease calls of a daemon that led, renewed and released its lease
    run = derived("cluster-wide")
    given = granted(committed(CLUSTER_WIDE_RBAC), "Role", f"{RELEASE}-leader-election")
    # then they were made in the operator's namespace only, and its Role grants exactly them there
    assert run.lease_namespaces == {OPERATOR_NS}
    assert run.lease == given, difference(run.lease, given)
    role = find(committed(CLUSTER_WIDE_RBAC), "Role", f"{RELEASE}-leader-election")
    assert role["metadata"]["namespace"] == generate.NAMESPACE


def test_every_operator_permission_is_bound_to_its_service_account() -> None:
    # given the committed cluster-wide RBAC
    documents = committed(CLUSTER_WIDE_RBAC)
    account = {"kind": "ServiceAccount", "name": RELEASE, "namespace": generate.NAMESPACE}
    # then each of the operator's roles is bound to the operator's ServiceAccount, and only to it
    for kind, name in (
        ("ClusterRoleBinding", RELEASE),
        ("ClusterRoleBinding", f"{RELEASE}-delegated"),
        ("RoleBinding", f"{RELEASE}-leader-election"),
        ("ClusterRoleBinding", f"{RELEASE}-webhook"),
        ("RoleBinding", f"{RELEASE}-webhook"),
        ("ClusterRoleBinding", f"{RELEASE}-metrics-auth"),
    ):
        binding = find(documents, kind, name)
        assert binding["subjects"] == [account]
        assert binding["roleRef"]["name"] == name


def test_the_checkpoint_gate_adds_exactly_the_checkpoint_calls() -> None:
    # given the operator with checkpoints on, and the rules the generator grants it then
    need = derived("checkpoint").calls
    given = frozenset(permissions(generate.Install(checkpoint=True).operator_rules()))
    # then whatever the checkpoint stories called is granted, and the checkpoint rules are all used
    assert need <= given, difference(need, given)
    checkpoints = frozenset(permissions(generate.CHECKPOINT_RULES))
    assert checkpoints <= need, difference(checkpoints, need & checkpoints)
    # and without the gate only the finalizer's lookup of a graph's checkpoints is granted
    without = frozenset(permissions(generate.CLUSTER_WIDE.operator_rules()))
    assert {p for p in without if p.resource == "dynamocheckpoints"} == {
        Permission("nvidia.com", "dynamocheckpoints", "list")
    }


def test_without_grove_the_operator_is_granted_only_the_grove_lookup_it_still_makes() -> None:
    # given an operator with Grove off, put through the Component-pathway stories
    need = derived("no-grove").calls
    given = frozenset(permissions(generate.Install(grove=False).operator_rules()))
    # then whatever it called is granted
    assert need <= given, difference(need, given)
    # and of Grove's API only the list it still makes before choosing a graph's pathway
    lookup = {Permission("grove.io", "podcliquesets", "list")}
    assert {p for p in need if p.group == "grove.io"} == lookup
    assert {p for p in given if p.group == "grove.io"} == lookup
    # and everything else is what the full cluster-wide exercise proved it uses
    full = granted(committed(CLUSTER_WIDE_RBAC), "ClusterRole", RELEASE)
    assert {p for p in given if p.group != "grove.io"} == {p for p in full if p.group != "grove.io"}


def test_the_restricted_roles_grant_exactly_the_calls_made_in_the_watched_namespace() -> None:
    # given an operator restricted to one namespace
    run = derived("restricted")
    documents = committed(RESTRICTED_RBAC)
    # then it called nothing cluster-scoped and nothing outside that namespace but its lease
    assert run.namespaces == {USER_NS}
    assert run.lease_namespaces == {OPERATOR_NS}
    # and its Roles grant exactly its calls and what it hands out, with no cluster-scoped rule anywhere
    calls = granted(documents, "Role", RELEASE)
    assert run.calls == calls, difference(run.calls, calls)
    delegated = granted(documents, "Role", f"{RELEASE}-delegated")
    assert run.delegated == delegated, difference(run.delegated, delegated)
    assert run.lease == granted(documents, "Role", f"{RELEASE}-leader-election")
    # and nothing cluster-scoped is granted but the webhooks' registration (their configurations are) and
    # the secure metrics' reviews (so are they), beside the role scrapers are bound to
    cluster_scoped = {
        (d["kind"], d["metadata"]["name"]) for d in documents if "namespace" not in d["metadata"]
    }
    webhook = generate.RESTRICTED.webhook_cluster_role_name
    reviews = generate.RESTRICTED.metrics_auth_cluster_role_name
    assert cluster_scoped == {
        ("ClusterRole", webhook),
        ("ClusterRoleBinding", webhook),
        ("ClusterRole", reviews),
        ("ClusterRoleBinding", reviews),
        ("ClusterRole", generate.RESTRICTED.metrics_reader_cluster_role_name),
    }
    roles = [d for d in documents if d["kind"] in ("Role", "RoleBinding")]
    assert {d["metadata"]["namespace"] for d in roles} == {generate.NAMESPACE}


def test_the_webhook_cluster_role_grants_exactly_the_registration_the_leader_makes() -> None:
    # given what the leader's registration called, cluster-wide, and the ClusterRole that grants it
    need = derived("cluster-wide").registration
    given = granted(committed(CLUSTER_WIDE_RBAC), "ClusterRole", f"{RELEASE}-webhook")
    # then they are the same permissions
    assert need == given, difference(need, given)
    # and the configurations were made, then read and replaced by name when the CA changed
    for kind, name in (
        ("mutatingwebhookconfigurations", f"{RELEASE}-mutating"),
        ("validatingwebhookconfigurations", f"{RELEASE}-validating"),
    ):
        assert {p for p in need if p.resource == kind} == {
            Permission(ADMISSION, kind, "create"),
            Permission(ADMISSION, kind, "get", name),
            Permission(ADMISSION, kind, "update", name),
        }
    # and only the converted CRDs are patched (their conversion), nothing else of theirs touched
    crds = {p for p in need if p.group == EXTENSIONS}
    assert crds == {Permission(EXTENSIONS, "customresourcedefinitions", "patch", n) for n in CONVERTED_CRDS}


def test_the_webhook_role_grants_exactly_the_certificate_secrets_calls_in_the_operators_namespace() -> None:
    # given the calls on the Secret of the operator's own certificates: made, read, renewed, made anew
    run = derived("cluster-wide")
    given = granted(committed(CLUSTER_WIDE_RBAC), "Role", f"{RELEASE}-webhook")
    # then they were made in the operator's namespace only, and the Role there grants exactly them
    assert run.certificate_namespaces == {OPERATOR_NS}
    assert run.certificates == given, difference(run.certificates, given)
    assert find(committed(CLUSTER_WIDE_RBAC), "Role", f"{RELEASE}-webhook")["metadata"]["namespace"] == (
        generate.NAMESPACE
    )
    # and the leader's renewal was among them
    assert Permission("", "secrets", "update", WEBHOOK_SECRET) in run.certificates


@pytest.mark.parametrize("run", ["cluster-wide", "restricted"])
def test_who_the_operator_is_is_asked_with_a_review_every_authenticated_user_may_create(run: str) -> None:
    # given the calls that ask the API server who the operator is
    identity = derived(run).identity
    # then they are one kind of call, which Kubernetes' system:basic-user grants every authenticated
    # user (as system:discovery grants discovery): no committed role grants it
    review = Permission("authentication.k8s.io", "selfsubjectreviews", "create")
    assert identity == {review}
    for path in (CLUSTER_WIDE_RBAC, RESTRICTED_RBAC):
        for document in committed(path):
            assert review not in permissions(document.get("rules") or []), document["metadata"]["name"]


def test_a_restricted_leader_registers_its_own_configurations_and_leaves_the_crds_alone() -> None:
    # given what a namespace-restricted leader's registration and certificates called
    run = derived("restricted")
    documents = committed(RESTRICTED_RBAC)
    suffix = f"-{generate.NAMESPACE}"
    # then the webhook ClusterRole grants exactly that: its configurations, named apart, and no CRD
    given = granted(documents, "ClusterRole", f"{RELEASE}-webhook{suffix}")
    assert run.registration == given, difference(run.registration, given)
    assert {p.name for p in given if p.name} == {
        f"{RELEASE}-mutating{suffix}",
        f"{RELEASE}-validating{suffix}",
    }
    assert not [p for p in given if p.group == EXTENSIONS]
    # and the Secret of its certificates is in the operator's namespace, granted there exactly
    assert run.certificate_namespaces == {OPERATOR_NS}
    secret = granted(documents, "Role", f"{RELEASE}-webhook")
    assert run.certificates == secret, difference(run.certificates, secret)


@pytest.mark.anyio
async def test_with_cert_managers_certificates_the_operator_touches_no_secret_and_is_granted_none(
    tmp_path: Path,
) -> None:
    # given an installation whose certificates cert-manager makes, mounted where its Deployment says
    install = generate.Install(cert_manager=True)
    now = datetime.datetime.fromtimestamp(START, datetime.UTC)
    made = certificates.issue(WebhookSettings().service_names(), [], now=now)
    for name, data in (("tls.crt", made.cert), ("tls.key", made.key), ("ca.crt", made.ca_cert)):
        (tmp_path / name).write_bytes(data)
    (container,) = install.deployment()["spec"]["template"]["spec"]["containers"]
    args = [str(tmp_path) if a == generate.WEBHOOK_CERT_DIR else a for a in container["args"]]
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    settings = webhook_settings(parser.parse_args(args), install.namespace)
    assert settings is not None and settings.cert_dir == str(tmp_path)
    cluster = MemoryCluster(resources=SERVED, rng=random.Random(5))
    for crd in all_crds():
        await cluster.create(CRD, crd)
    calls: list[Call] = []
    service = WebhookService(
        RecordingCluster(cluster, calls),
        msgspec.structs.replace(settings, address="127.0.0.1:0"),
        AdmissionSettings(),
        restricted=(),
        wall=lambda: START,
        converter=None,
    )

    # when a replica serves the mounted certificates and, leading, registers them
    async with AsyncExitStack() as stack, anyio.create_task_group() as tg:
        await service.start(stack)
        tg.start_soon(service.run)
        tg.start_soon(service.lead)
        with anyio.fail_after(10):  # a guard against a hang
            while not (await cluster.list(MUTATING_WEBHOOK_CONFIGURATION)).items:
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()

    # then it called no Secret, and the installation grants it none: only the registration's ClusterRole
    run = needs(calls)
    assert run.certificates == frozenset() and not [c for c in calls if c.resource == "secrets"]
    documents = install.rbac()
    assert not [d for d in documents if d["metadata"]["name"] == f"{RELEASE}-webhook" and d["kind"] == "Role"]
    given = frozenset(permissions(find(documents, "ClusterRole", f"{RELEASE}-webhook")["rules"]))
    # the registration made its configurations (the CA came from the mounted ca.crt): granted, with the rest
    assert run.registration <= given, difference(run.registration, given)
    bundle = (await cluster.list(MUTATING_WEBHOOK_CONFIGURATION)).items[0]["webhooks"][0]["clientConfig"]
    assert base64.b64decode(bundle["caBundle"]) == made.ca_cert


def test_the_workload_cluster_roles_the_operator_binds_are_installed_with_upstreams_rules() -> None:
    # given the ClusterRoles a simulated cluster starts with (upstream's chart, supplement §2.3)
    from dgd.cluster.memory.adapter import MemoryCluster
    from dgd.cluster.resources import CLUSTER_ROLE
    from dgd.sim import WorldSettings, run
    from dgd.sim.world.bootstrap import bootstrap

    async def bootstrapped() -> dict[str, Any]:
        cluster = MemoryCluster()
        await bootstrap(cluster, WorldSettings(), OperatorConfig())
        return {r["metadata"]["name"]: r["rules"] for r in (await cluster.list(CLUSTER_ROLE)).items}

    expected = run(bootstrapped)
    # then the committed cluster-wide RBAC installs the same ones, named as the config names them
    documents = committed(CLUSTER_WIDE_RBAC)
    rbac = OperatorConfig().rbac
    for name in (
        rbac.planner_cluster_role_name,
        rbac.epp_cluster_role_name,
        rbac.dgdr_profiling_cluster_role_name,
    ):
        assert find(documents, "ClusterRole", name)["rules"] == expected[name]


@pytest.mark.parametrize("run", ["cluster-wide", "restricted"])
def test_every_subresource_the_operator_calls_is_served_by_the_committed_crds(run: str) -> None:
    # given the subresources the operator called, and the CRDs in deploy/crds with Grove's own
    called = {p.resource for p in derived(run).calls if "/" in p.resource}
    served = set()
    for crd in [*committed_crds(), *grove_crds()]:
        plural = crd["spec"]["names"]["plural"]
        for version in crd["spec"]["versions"]:
            served |= {f"{plural}/{sub}" for sub in version.get("subresources") or {}}
    # then every one of them is served
    assert called, "the operator called no subresource"
    assert called <= served, sorted(called - served)


def committed_crds() -> list[dict[str, Any]]:
    return [d for path in sorted((generate.DEPLOY / "crds").glob("*.yaml")) for d in committed(str(path))]


def grove_crds() -> list[dict[str, Any]]:
    """Grove's real CRDs (a cluster with Grove has these; deploy/crds does not carry them)."""
    return [d for path in sorted(GROVE_CRD_DIR.glob("grove.io_*.yaml")) for d in load_documents(path)]


def test_our_crds_serve_the_status_and_scale_subresources_the_port_expects() -> None:
    # given the committed CRDs and the port's registry of the same kinds
    crds = {crd["spec"]["names"]["plural"]: crd for crd in committed_crds()}
    assert sorted(crds) == sorted(c["spec"]["names"]["plural"] for c in owned_crds())
    for plural in (
        "dynamographdeployments",
        "dynamocomponentdeployments",
        "dynamographdeploymentscalingadapters",
    ):
        resource = next(r for r in DEFAULT_RESOURCES if r.plural == plural)
        (version,) = [v for v in crds[plural]["spec"]["versions"] if v["storage"]]
        subresources = version.get("subresources") or {}
        # then each has a status subresource, and a scale one exactly where the port scales it, with its paths
        assert resource.status and "status" in subresources
        if resource.scale is None:
            assert "scale" not in subresources
        else:
            assert subresources["scale"] == {
                "specReplicasPath": resource.scale.spec_replicas,
                "statusReplicasPath": resource.scale.status_replicas,
                "labelSelectorPath": resource.scale.selector,
            }


async def scrape(port: int, token: str) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"https://127.0.0.1:{port}/metrics", headers=headers, ssl=False) as response,
    ):
        return response.status


@pytest.mark.anyio
@pytest.mark.parametrize("path", [CLUSTER_WIDE_RBAC, RESTRICTED_RBAC])
async def test_the_metrics_roles_grant_exactly_the_reviews_a_scrape_needs_and_what_it_is_asked(
    path: str, tmp_path: Path
) -> None:
    # given the metrics server as the installation's Deployment and configuration run it
    install = generate.RESTRICTED if path == RESTRICTED_RBAC else generate.CLUSTER_WIDE
    (container,) = install.deployment()["spec"]["template"]["spec"]["containers"]
    config = tmp_path / "config.yaml"
    config.write_text(install.config_map()["data"]["config.yaml"], encoding="utf-8")
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    args = [str(config) if a == generate.CONFIG_PATH else a for a in container["args"]]
    settled = options(parser.parse_args(args)).settings
    assert settled.metrics_secure, "the installation's metrics are not secure"
    calls: list[Call] = []
    api = ReviewingCluster(
        tokens={"reader": service_account(READER), "other": service_account(OTHER)},
        grants={(READER, "/metrics", "get")},
    )
    secure = SecureMetrics(RecordingCluster(api, calls), cert_dir=settled.metrics_cert_dir, wall=time.time)

    # when a reader, someone else and a stranger scrape it
    async with AsyncExitStack() as stack:
        context = await secure.start(stack)
        app = metrics_app(CollectorRegistry(), secure.access.middleware())
        server = await Server.start(app, "127.0.0.1", 0, tls=context)
        stack.push_async_callback(server.stop)
        assert [await scrape(server.port, token) for token in ("reader", "other", "stranger")] == [
            200,
            403,
            401,
        ]

    # then the operator's calls are exactly what its metrics ClusterRole grants
    documents = committed(path)
    need = frozenset(call.permission for call in calls)
    given = granted(documents, "ClusterRole", install.metrics_auth_cluster_role_name)
    assert need == given, difference(need, given)
    # and the reader's ClusterRole grants exactly the access the SubjectAccessReviews asked about
    asked = frozenset(
        Permission("", attributes["path"], attributes["verb"])
        for call in calls
        if call.resource == "subjectaccessreviews"
        for attributes in [call.body["spec"]["nonResourceAttributes"]]
    )
    reader = granted(documents, "ClusterRole", install.metrics_reader_cluster_role_name)
    assert asked == reader, difference(asked, reader)
