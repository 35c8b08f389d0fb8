"""What Grove makes of a PodCliqueSet: its PodCliques and scaling groups, their names, labels and hashes.

Pure functions of the PodCliqueSet (and, for a scaling group's member cliques, of the group). Names
follow Grove: a standalone clique of set replica ``i`` is ``<pcs>-<i>-<clique>``; a scaling group
is ``<pcs>-<i>-<group>`` and its member clique of group replica ``j`` is ``<group>-<j>-<clique>``.
Children carry Grove's labels, the DGD-name label of their set, and the template hash their pods
are made from; replicas are copied only when a child is created (afterwards they belong to the scale
subresource).
"""

from __future__ import annotations

import hashlib

import msgspec

from dgd.domain.metadata_keys import GRAPH_NAME
from dgd.messages.grove import (
    API_VERSION,
    PCS_KIND,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueTemplateSpec,
)
from dgd.messages.grove_children import PCSG_KIND, PodClique, PodCliqueScalingGroup, PodCliqueScalingGroupSpec
from dgd.messages.meta import ObjectMeta, OwnerReference

MANAGED_BY = "app.kubernetes.io/managed-by"
GROVE_OPERATOR = "grove-operator"
PART_OF = "app.kubernetes.io/part-of"
COMPONENT = "app.kubernetes.io/component"
PODCLIQUE = "grove.io/podclique"
PODGANG = "grove.io/podgang"
SCALING_GROUP = "grove.io/podcliquescalinggroup"
SCALING_GROUP_REPLICA = "grove.io/podcliquescalinggroup-replica-index"
SET_REPLICA = "grove.io/podcliqueset-replica-index"
POD_TEMPLATE_HASH = "grove.io/pod-template-hash"
SET_FINALIZER = "grove.io/podcliqueset.grove.io"

#: Selects everything Grove made (cliques, scaling groups, pods).
GROVE_SELECTOR = f"{MANAGED_BY}={GROVE_OPERATOR}"


def template_hash(clique: PodCliqueTemplateSpec) -> str:
    """The hash of what a clique's pods are made from (not its replica counts)."""
    return _digest(
        [clique.name, clique.labels, clique.annotations, clique.spec.role_name, clique.spec.pod_spec]
    )


def template_hashes(pcs: PodCliqueSet) -> list[str]:
    """The hash of each clique template of the set, in template order: computed once per pass, as
    the set's generation hash and every PodClique made from a template carry it."""
    return [template_hash(clique) for clique in pcs.spec.template.cliques]


def generation_hash(pcs: PodCliqueSet, hashes: list[str]) -> str:
    """The PodCliqueSet's generation hash (``hashes``: its ``template_hashes``): changes when any
    clique's pods must be replaced."""
    template = pcs.spec.template
    cliques = sorted((clique.name, hashed) for clique, hashed in zip(template.cliques, hashes, strict=True))
    groups = sorted((group.name, group.clique_names) for group in template.pod_clique_scaling_groups or [])
    return _digest([cliques, groups])


def scaling_groups(pcs: PodCliqueSet) -> list[PodCliqueScalingGroup]:
    """The scaling groups of every set replica, as created (replicas from the template)."""
    out = []
    for index in range(_set_replicas(pcs)):
        for config in pcs.spec.template.pod_clique_scaling_groups or []:
            name = f"{pcs.metadata.name}-{index}-{config.name}"
            labels = _grove_labels(pcs, index) | {COMPONENT: "pcs-podcliquescalinggroup"}
            spec = PodCliqueScalingGroupSpec(
                clique_names=list(config.clique_names),
                replicas=1 if config.replicas is None else config.replicas,
                min_available=config.min_available,
            )
            out.append(PodCliqueScalingGroup(API_VERSION, _meta(pcs, name, labels, None, _owner(pcs)), spec))
    return out


def standalone_cliques(pcs: PodCliqueSet, hashes: list[str]) -> list[PodClique]:
    """The PodCliques of every set replica for the cliques that belong to no scaling group
    (``hashes``: the set's ``template_hashes``)."""
    grouped = {
        name for group in pcs.spec.template.pod_clique_scaling_groups or [] for name in group.clique_names
    }
    out = []
    for index in range(_set_replicas(pcs)):
        for clique, hashed in zip(pcs.spec.template.cliques, hashes, strict=True):
            if clique.name not in grouped:
                name = f"{pcs.metadata.name}-{index}-{clique.name}"
                extra = {COMPONENT: "pcs-podclique", PODGANG: f"{pcs.metadata.name}-{index}"}
                labels = _grove_labels(pcs, index) | extra
                out.append(_clique(pcs, clique, hashed, name, labels, _owner(pcs)))
    return out


def member_cliques(pcs: PodCliqueSet, group: PodCliqueScalingGroup, hashes: list[str]) -> list[PodClique]:
    """The member PodCliques of every replica a scaling group has now (``hashes``: the set's
    ``template_hashes``)."""
    config = _config(pcs, group)
    if config is None:
        return []
    cliques = pcs.spec.template.cliques
    templates = {clique.name: (clique, hashed) for clique, hashed in zip(cliques, hashes, strict=True)}
    labels = group.metadata.labels or {}
    index = int(labels.get(SET_REPLICA, "0"))
    base = group.spec.min_available or 1
    owner = OwnerReference(
        API_VERSION, PCSG_KIND, group.metadata.name or "", group.metadata.uid or "", True, True
    )
    out = []
    for replica in range(group.spec.replicas):
        # Replicas up to minAvailable join the set's base gang; the rest get gangs of their own.
        gang = f"{pcs.metadata.name}-{index}" if replica < base else f"{group.metadata.name}-{replica - base}"
        extra = {
            COMPONENT: "pcsg-podclique",
            SCALING_GROUP: group.metadata.name or "",
            SCALING_GROUP_REPLICA: str(replica),
            PODGANG: gang,
        }
        for clique_name in config.clique_names:
            found = templates.get(clique_name)
            if found is not None:
                name = f"{group.metadata.name}-{replica}-{clique_name}"
                out.append(_clique(pcs, *found, name, _grove_labels(pcs, index) | extra, owner))
    return out


def _clique(
    pcs: PodCliqueSet,
    clique: PodCliqueTemplateSpec,
    hashed: str,
    name: str,
    labels: dict[str, str],
    owner: OwnerReference,
) -> PodClique:
    labels = (clique.labels or {}) | labels | {PODCLIQUE: name, POD_TEMPLATE_HASH: hashed}
    spec = clique.spec
    if spec.min_available is None:
        spec = msgspec.structs.replace(spec, min_available=spec.replicas)
    return PodClique(API_VERSION, _meta(pcs, name, labels, clique.annotations, owner), spec)


def _config(pcs: PodCliqueSet, group: PodCliqueScalingGroup) -> PodCliqueScalingGroupConfig | None:
    index = (group.metadata.labels or {}).get(SET_REPLICA, "0")
    for config in pcs.spec.template.pod_clique_scaling_groups or []:
        if group.metadata.name == f"{pcs.metadata.name}-{index}-{config.name}":
            return config
    return None


def _grove_labels(pcs: PodCliqueSet, index: int) -> dict[str, str]:
    labels = {MANAGED_BY: GROVE_OPERATOR, PART_OF: pcs.metadata.name or "", SET_REPLICA: str(index)}
    graph = (pcs.metadata.labels or {}).get(GRAPH_NAME)
    if graph is not None:
        labels[GRAPH_NAME] = graph
    return labels


def _meta(
    pcs: PodCliqueSet,
    name: str,
    labels: dict[str, str],
    annotations: dict[str, str] | None,
    owner: OwnerReference,
) -> ObjectMeta:
    return ObjectMeta(
        name=name,
        namespace=pcs.metadata.namespace,
        labels=dict(sorted(labels.items())),
        annotations=dict(sorted(annotations.items())) if annotations else None,
        owner_references=[owner],
    )


def _owner(pcs: PodCliqueSet) -> OwnerReference:
    return OwnerReference(API_VERSION, PCS_KIND, pcs.metadata.name or "", pcs.metadata.uid or "", True, True)


def _set_replicas(pcs: PodCliqueSet) -> int:
    return 1 if pcs.spec.replicas is None else pcs.spec.replicas


def _digest(value: object) -> str:
    return hashlib.sha256(msgspec.json.encode(value, order="sorted")).hexdigest()[:20]
