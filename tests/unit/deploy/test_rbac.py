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
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec
import pytest
import yaml

from dgd.cluster.resources import DEFAULT_RESOURCES, Resource
from dgd.domain.crds import all_crds
from dgd.messages.config import OperatorConfig, load_config
from tests.unit.deploy.exercise import (
    OPERATOR_NS,
    USER_NS,
    Story,
    checkpointed_graphs,
    component_graph,
    exercise,
    grove_graph,
    legacy_claims,
    multinode_graph,
    tampered_children,
    tampered_planner_binding,
)
from tests.unit.deploy.generator import committed, find, generate
from tests.unit.deploy.recording import Call, Permission, permissions

RBAC = "rbac.authorization.k8s.io"
LEASES = "leases"
RELEASE = generate.RELEASE
COMPONENT_STORIES: tuple[Story, ...] = (component_graph, legacy_claims)
#: Every story but the checkpoints'; the planner's binding exists only in cluster-wide mode.
RESTRICTED_STORIES: tuple[Story, ...] = (grove_graph, multinode_graph, *COMPONENT_STORIES, tampered_children)
ALL_STORIES: tuple[Story, ...] = (*RESTRICTED_STORIES, tampered_planner_binding)
RESOURCES: dict[tuple[str, str], Resource[Any]] = {(r.group, r.plural): r for r in DEFAULT_RESOURCES}


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


def needs(calls: list[Call]) -> Needs:
    """What ``calls`` need (see the module)."""
    called: set[Permission] = set()
    lease: set[Permission] = set()
    delegated: set[Permission] = set()
    namespaces: set[str | None] = set()
    lease_namespaces: set[str | None] = set()
    for call in calls:
        permission = call.permission
        if not RESOURCES[(call.group, call.resource)].namespaced and call.name:
            permission = msgspec.structs.replace(permission, name=call.name)
        if call.resource == LEASES:
            lease.add(permission)
            lease_namespaces.add(call.namespace)
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
    )


def config(install: Any, **extra: Any) -> OperatorConfig:
    """The configuration the installation's ConfigMap gives the operator, with ``extra`` keys merged in."""
    text = install.config_map()["data"]["config.yaml"]
    return load_config(yaml.safe_dump({**yaml.safe_load(text), **extra}))


#: Cluster-wide with an ingress class, so the frontends' Ingresses are written too (any installation
#: may configure one: the permissions cannot depend on it).
INGRESS = {"ingress": {"controllerClassName": "nginx"}}


@functools.cache
def derived(run: str) -> Needs:
    """What the operator needs in each exercised installation (each runs once per test session)."""
    if run == "cluster-wide":
        return needs(exercise(config(generate.CLUSTER_WIDE, **INGRESS), ALL_STORIES))
    if run == "checkpoint":
        install = generate.Install(checkpoint=True)
        return needs(exercise(config(install), (checkpointed_graphs,)))
    if run == "no-grove":
        return needs(exercise(config(generate.Install(grove=False), **INGRESS), COMPONENT_STORIES))
    assert run == "restricted"
    install = generate.Install(watch=(USER_NS,))
    return needs(exercise(config(install, **INGRESS), RESTRICTED_STORIES))


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
    # then the delegated ClusterRole grants exactly those, `bind` only on the planner's ClusterRole
    assert need == given, difference(need, given)
    assert Permission(RBAC, "clusterroles", "bind", f"{RELEASE}-planner") in given


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
    assert not [d for d in documents if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    roles = [d for d in documents if d["kind"] in ("Role", "RoleBinding")]
    assert {d["metadata"]["namespace"] for d in roles} == {generate.NAMESPACE}


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
    # given the subresources the operator called, and the CRDs in deploy/crds
    called = {p.resource for p in derived(run).calls if "/" in p.resource}
    served = set()
    for crd in committed_crds():
        plural = crd["spec"]["names"]["plural"]
        for version in crd["spec"]["versions"]:
            served |= {f"{plural}/{sub}" for sub in version.get("subresources") or {}}
    # then every one of them is served
    assert called, "the operator called no subresource"
    assert called <= served, sorted(called - served)


def committed_crds() -> list[dict[str, Any]]:
    return [d for path in sorted((generate.DEPLOY / "crds").glob("*.yaml")) for d in committed(str(path))]


def test_our_crds_serve_the_status_and_scale_subresources_the_port_expects() -> None:
    # given the committed CRDs and the port's registry of the same kinds
    crds = {crd["spec"]["names"]["plural"]: crd for crd in committed_crds()}
    assert sorted(crds) == sorted(c["spec"]["names"]["plural"] for c in all_crds())
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
