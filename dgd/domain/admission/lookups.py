"""Admission's live cluster lookups (supplement §4.4 item 7 first bullet, items 12.4 and 13), as data.

The validating webhook reads the cluster for three rules: whether the InferencePool API group is
served (an EPP component needs it), and the Grove ClusterTopologyBinding that
``spec.topologyConstraint.clusterTopologyName`` and ``spec.experimental.kvTransferPolicy
.clusterTopologyName`` name (their domains must be its levels). The reads are the caller's: the
daemon's webhook server GETs them through the API before it hands the request to a worker thread,
the simulation reads its store, and the offline commands read nothing (``lookups=None``: the rules
are skipped). ``wanted`` says what to read; ``ClusterLookups`` is what was read; ``lookup_errors``
are the rules, pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from dgd.domain.admission.errors import FieldError, show
from dgd.messages.dgd import DynamoGraphDeployment

INFERENCE_POOL_GROUP = "inference.networking.k8s.io"
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class BindingRead(msgspec.Struct, frozen=True):
    """One ClusterTopologyBinding as admission read it: its levels' domains, broad to narrow, or
    ``levels=None`` when there is none (``error``: why it could not be read; ``None``: not found)."""

    levels: tuple[str, ...] | None = None
    error: str | None = None


class ClusterLookups(msgspec.Struct, frozen=True, kw_only=True):
    """What admission of one DGD read from the cluster.

    ``inference_pool`` is ``True`` when the InferencePool API group is served, ``False`` when it is
    not, or why the check failed; ``bindings`` hold the ClusterTopologyBindings read, by name. A
    binding not among them was not looked up, and its rules are skipped.
    """

    inference_pool: bool | str = True
    bindings: Mapping[str, BindingRead] = msgspec.field(default_factory=dict)


class Wanted(msgspec.Struct, frozen=True):
    """What to read for a DGD: whether the InferencePool API matters, and which bindings, by name."""

    inference_pool: bool
    bindings: tuple[str, ...]


def wanted(document: Any) -> Wanted:
    """What admission of ``document`` (a DGD as JSON, possibly invalid) should read: only what a rule
    uses, and only names that are valid object names (no other is ever read)."""
    spec = document.get("spec") if isinstance(document, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    components = spec.get("components")
    epp = isinstance(components, list) and any(
        isinstance(c, dict) and c.get("type") == "epp" for c in components
    )
    names: list[str] = []
    for holder in (spec.get("topologyConstraint"), (spec.get("experimental") or {}).get("kvTransferPolicy")):
        name = holder.get("clusterTopologyName") if isinstance(holder, dict) else None
        if isinstance(name, str) and len(name) <= 253 and _NAME.fullmatch(name) and name not in names:
            names.append(name)
    return Wanted(inference_pool=epp, bindings=tuple(names))


def binding_levels(binding: Any) -> tuple[str, ...]:
    """The domains of a ClusterTopologyBinding's levels (as JSON), in order."""
    spec = binding.get("spec") if isinstance(binding, dict) else None
    levels = spec.get("levels") if isinstance(spec, dict) else None
    return tuple(
        str(level["domain"]) for level in levels or [] if isinstance(level, dict) and level.get("domain")
    )


def lookup_errors(
    dgd: DynamoGraphDeployment, lookups: ClusterLookups, *, grove_refusal: str | None
) -> Iterator[FieldError]:
    """The problems of a defaulted DGD the lookups show. The binding rules apply on the Grove pathway
    (``grove_refusal`` ``None``) and only while ``metadata.generation`` is unset or 1 (a create, or a
    metadata-only write right after it: upstream gates on the generation, not on the operation)."""
    for index, component in enumerate(dgd.spec.components or []):
        if component.type == "epp" and lookups.inference_pool is not True:
            yield FieldError(f"spec.components[{index}].type", _pool_problem(lookups.inference_pool))
    if grove_refusal is not None or (dgd.metadata.generation or 0) > 1:
        return
    yield from _constraint_errors(dgd, lookups)
    policy = dgd.spec.experimental.kv_transfer_policy if dgd.spec.experimental else None
    name = policy.cluster_topology_name if policy is not None else None
    if policy is None or not name or name not in lookups.bindings:
        return
    path = "spec.experimental.kvTransferPolicy"
    read = lookups.bindings[name]
    if read.levels is None:
        yield FieldError(f"{path}.clusterTopologyName", _unread(name, read))
    elif policy.domain not in read.levels:
        yield FieldError(
            f"{path}.domain", _absent(policy.domain, "ClusterTopologyBinding", name, read.levels)
        )


def _constraint_errors(dgd: DynamoGraphDeployment, lookups: ClusterLookups) -> Iterator[FieldError]:
    constraint = dgd.spec.topology_constraint
    if constraint is None or constraint.cluster_topology_name not in lookups.bindings:
        return
    name = constraint.cluster_topology_name
    read = lookups.bindings[name]
    if read.levels is None:
        yield FieldError("spec.topologyConstraint.clusterTopologyName", _unread(name, read))
        return
    levels = read.levels
    pack = constraint.pack_domain
    if pack and pack not in levels:
        where = "spec.topologyConstraint.packDomain"
        yield FieldError(where, _absent(pack, "ClusterTopologyBinding", name, levels))
    for index, component in enumerate(dgd.spec.components or []):
        domain = component.topology_constraint.pack_domain if component.topology_constraint else None
        if not domain:
            continue
        where = f"spec.components[{index}].topologyConstraint.packDomain"
        # Upstream's wording names the kind "ClusterTopology" here (supplement §4.4 item 12.4).
        if domain not in levels:
            yield FieldError(where, _absent(domain, "ClusterTopology", name, levels))
        elif pack and pack in levels and levels.index(domain) < levels.index(pack):
            yield FieldError(
                where,
                f"{show(domain)} must be equal to or narrower than the deployment-level domain {show(pack)}",
            )


def _pool_problem(served: bool | str) -> str:
    if served is False:
        why = (
            f"InferencePool API group ({INFERENCE_POOL_GROUP}) is not available in the cluster; install the "
            "Gateway API Inference Extension before deploying EPP components"
        )
    else:
        group = INFERENCE_POOL_GROUP
        why = f"failed to check whether the InferencePool API group ({group}) is served: {served}"
    return f"cannot deploy EPP component: {why}"


def _unread(name: str, read: BindingRead) -> str:
    if read.error is not None:
        return f"{show(name)}: failed to read ClusterTopologyBinding: {read.error}"
    return f"{show(name)} references a ClusterTopologyBinding resource that was not found"


def _absent(domain: str, kind: str, name: str, levels: tuple[str, ...]) -> str:
    available = " ".join(sorted(levels))
    return f"{show(domain)} does not exist in {kind} {show(name)}; available domains: [{available}]"
