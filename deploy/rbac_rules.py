"""The RBAC rules an installation grants: what the operator calls, delegates, and its workloads need."""

from __future__ import annotations

from install_choices import JSON

CORE, RBAC, NVIDIA, GROVE = "", "rbac.authorization.k8s.io", "nvidia.com", "grove.io"
DRA = "resource.k8s.io"
ADMISSION, EXTENSIONS = "admissionregistration.k8s.io", "apiextensions.k8s.io"
CERT_MANAGER = "cert-manager.io"
READ = ["get", "list", "watch"]


def rule(group: str, resources: list[str], verbs: list[str], names: list[str] | None = None) -> JSON:
    """One PolicyRule; verbs in the order kubectl prints them."""
    out: JSON = {"apiGroups": [group], "resources": resources}
    if names:
        out["resourceNames"] = names
    out["verbs"] = verbs
    return out


# What the operator calls, on any cluster. Reads of watched kinds go to its cache; `get` is for
# kinds it does not watch and for re-reads after a lost race.
OPERATOR_RULES = [
    rule(NVIDIA, ["dynamographdeployments"], ["get", "list", "watch", "update", "patch"]),
    rule(NVIDIA, ["dynamographdeployments/status"], ["patch"]),
    rule(
        NVIDIA,
        ["dynamographdeploymentscalingadapters"],
        ["create", "get", "list", "watch", "patch", "delete"],
    ),
    rule(NVIDIA, ["dynamographdeploymentscalingadapters/status"], ["patch"]),
    rule(NVIDIA, ["dynamocomponentdeployments"], ["create", "get", "list", "watch", "patch", "delete"]),
    # The DCD controller: each DCD's status, and its Deployment (garbage collection deletes it).
    rule(NVIDIA, ["dynamocomponentdeployments/status"], ["patch"]),
    rule("apps", ["deployments"], ["create", "get", "list", "watch", "patch"]),
    # The finalizer looks for a deleted graph's checkpoints even with the checkpoint gate off.
    rule(NVIDIA, ["dynamocheckpoints"], ["list"]),
    rule(CORE, ["services"], ["create", "get", "list", "watch", "patch", "delete"]),
    rule("networking.k8s.io", ["ingresses"], ["create", "get", "list", "watch", "patch", "delete"]),
    # Frontend VirtualServices, while the config names a gateway (not watched: listed to find stale ones).
    rule("networking.istio.io", ["virtualservices"], ["create", "get", "list", "patch", "delete"]),
    rule(CORE, ["configmaps", "serviceaccounts"], ["create", "get", "list", "watch", "patch"]),
    rule(CORE, ["persistentvolumeclaims", "secrets"], ["create", "get"]),
    rule(CORE, ["pods"], ["list", "watch"]),
    rule(RBAC, ["roles"], ["create", "get", "list", "watch", "patch"]),
    rule(RBAC, ["rolebindings"], ["create", "get", "list", "watch", "patch"]),
    rule("events.k8s.io", ["events"], ["create", "patch"]),
    # An endpoint picker's pool, and its Istio DestinationRule (made and watched with the mesh on,
    # removed with it off).
    rule("inference.networking.k8s.io", ["inferencepools"], ["create", "get", "patch"]),
    rule("networking.istio.io", ["destinationrules"], ["create", "get", "list", "watch", "patch", "delete"]),
    # The GPU memory service's claim templates, watched when DRA is served (dgd-domain §7 row 4).
    rule(DRA, ["resourceclaimtemplates"], ["create", "get", "list", "watch", "patch", "delete"]),
]
# Cluster-wide only: the planner's RoleBinding in each namespace is updated when its subjects drift and
# replaced when its ClusterRole changes (a roleRef is immutable).
PLANNER_BINDING_RULES = [rule(RBAC, ["rolebindings"], ["update", "delete"])]
GROVE_RULES = [
    rule(GROVE, ["podcliquesets"], ["create", "get", "list", "watch", "patch"]),
    rule(GROVE, ["podcliques", "podcliquescalinggroups"], ["list", "watch"]),
    rule(GROVE, ["podcliques/scale", "podcliquescalinggroups/scale"], ["get", "update"]),
]
# With Grove off, the operator still looks for a PodCliqueSet a graph controls before it picks the
# graph's pathway (a refused list would fail the reconcile).
NO_GROVE_RULES = [rule(GROVE, ["podcliquesets"], ["list"])]
CHECKPOINT_RULES = [
    rule(NVIDIA, ["dynamocheckpoints"], ["create", "get", "list", "watch", "patch", "delete"]),
]
# What the operator grants: the Kubernetes-discovery Role it writes for every graph's pods.
DELEGATED_RULES = [
    rule(CORE, ["endpoints", "pods"], READ),
    rule("discovery.k8s.io", ["endpointslices"], READ),
    rule(NVIDIA, ["dynamoworkermetadatas"], ["create", "get", "list", "watch", "update", "patch", "delete"]),
]
LEADER_ELECTION_RULES = [rule("coordination.k8s.io", ["leases"], ["create", "get", "update"])]
#: Secure metrics: who a scraper's token belongs to, and whether it may get /metrics.
METRICS_AUTH_RULES = [
    rule("authentication.k8s.io", ["tokenreviews"], ["create"]),
    rule("authorization.k8s.io", ["subjectaccessreviews"], ["create"]),
]
#: What a scraper of the secure metrics needs, bound to it by the user.
METRICS_READER_RULES: list[JSON] = [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
#: The CRDs whose conversion the leader points at its webhook (``dgd.daemon.registration.CONVERTED_CRDS``).
CONVERTED_CRDS = [
    "dynamographdeployments.nvidia.com",
    "dynamocomponentdeployments.nvidia.com",
    "dynamographdeploymentscalingadapters.nvidia.com",
]


def planner_rules() -> list[JSON]:
    """The planner's permissions (supplement §2.3)."""
    return [
        rule(NVIDIA, ["dynamographdeployments"], ["get", "list", "create", "update", "patch"]),
        rule(NVIDIA, ["dynamographdeploymentscalingadapters/scale"], ["patch"]),
        rule("discovery.k8s.io", ["endpointslices"], READ),
        rule(NVIDIA, ["dynamoworkermetadatas"], [*READ, "create", "update", "patch", "delete"]),
    ]


def epp_rules(*, cluster_wide: bool = True) -> list[JSON]:
    """The endpoint picker's permissions (supplement §2.3); restricted, without the two reviews."""
    rules = [
        rule(
            "inference.networking.x-k8s.io",
            ["inferencepools", "inferenceobjectives", "inferencemodelrewrites"],
            READ,
        ),
        rule("inference.networking.k8s.io", ["inferencepools"], READ),
        rule(CORE, ["pods"], READ),
        rule("discovery.k8s.io", ["endpointslices"], READ),
        rule(NVIDIA, ["dynamoworkermetadatas"], [*READ, "create", "update", "patch", "delete"]),
    ]
    if cluster_wide:
        rules += [
            rule("authentication.k8s.io", ["tokenreviews"], ["create"]),
            rule("authorization.k8s.io", ["subjectaccessreviews"], ["create"]),
        ]
    return rules


def workload_cluster_roles(release: str) -> dict[str, list[JSON]]:
    """The ClusterRoles the operator binds per namespace in cluster-wide mode (supplement §2.3)."""
    return {
        f"{release}-planner": planner_rules(),
        f"{release}-epp": epp_rules(),
        # Not specified upstream in our references: read access to the graphs.
        f"{release}-dgdr-profiling": [rule(NVIDIA, ["dynamographdeployments"], READ)],
    }
