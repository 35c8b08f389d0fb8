"""Admission of a DGD update, as upstream's validating webhook decides it (supplement §4.5-§4.6).

An update is checked in two stages. First the new DGD alone, as on create (without the runtime-version
rule, and with a restart request allowed); if that fails, its errors are the answer. Only then is the
new DGD compared with the old one, so the two kinds of errors are never reported together.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from msgspec import structs

from dgd.domain.admission.component_updates import (
    BACKEND_WARNING,
    backend_change,
    check_component_update,
    frozen_topology,
    immutable,
    runtime_version_ratchet,
)
from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER, default_dgd
from dgd.domain.admission.errors import FieldError, show
from dgd.domain.admission.lookups import ClusterLookups, lookup_errors
from dgd.domain.admission.pathway import grove_refusal
from dgd.domain.admission.principals import Requester, may_change_scaled_replicas, may_materialize_provider
from dgd.domain.admission.validation import Verdict, component_path, document_order, validate_stateless
from dgd.domain.rollout import rollout_active
from dgd.messages.component import ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment, KvTransferPolicy


def validate_update(
    old: DynamoGraphDeployment,
    new: DynamoGraphDeployment,
    *,
    requester: Requester | None,
    operator_principal: str | None,
    grove_enabled: bool,
    lookups: ClusterLookups | None = None,
) -> Verdict:
    """Admit ``new`` as an update of the stored ``old``.

    ``requester`` is the request's user info (``None`` when it had none); ``operator_principal`` is the
    operator's own username (``None`` when unknown). When allowed, the verdict carries ``new`` as the
    mutating webhook leaves it (its defaults applied in memory, which is a no-op when they already are).
    A DGD being deleted is always allowed, so its finalizers can be removed. ``lookups``: what the
    caller read from the cluster (as on create: the binding rules only while ``generation`` is 1).
    """
    if new.metadata.deletion_timestamp is not None:
        return Verdict(errors=[], warnings=[], dgd=new)
    dgd = default_dgd(new, grove_enabled=grove_enabled, operator_version=None, create=False)
    stateless = list(validate_stateless(dgd, grove_enabled=grove_enabled, create=False))
    if lookups is not None:
        refusal = grove_refusal(dgd.metadata, grove_enabled=grove_enabled)
        stateless += lookup_errors(dgd, lookups, grove_refusal=refusal)
    stateless.sort(key=document_order)
    if stateless:
        return Verdict(errors=stateless, warnings=[])
    may_scale = may_change_scaled_replicas(requester, operator_principal)
    errors = list(_provider_annotation(old, dgd, may_materialize_provider(requester, operator_principal)))
    errors += _component_set(old, dgd)
    errors += _graph_fields(old, dgd)
    backend = backend_change(old.spec.backend_framework, dgd.spec.backend_framework)
    errors += [backend] if backend else []
    warnings = [BACKEND_WARNING] if backend else []
    for path, before, after in _surviving_components(old, dgd):
        errors += check_component_update(before, after, path)
        errors += _scaled_replicas(before, after, path, may_scale=may_scale)
        ratcheted = list(runtime_version_ratchet(before, after, path, override_required=True))
        # A main image removed is an error (no pod could run); a tag without a version, a warning.
        errors += [p for p in ratcheted if p.path != f"{path}.runtimeVersionOverride"]
        warnings += _runtime_version_warnings(
            p for p in ratcheted if p.path == f"{path}.runtimeVersionOverride"
        )
    errors.sort(key=document_order)
    return Verdict(errors=errors, warnings=warnings, dgd=None if errors else dgd)


def _provider_annotation(
    old: DynamoGraphDeployment, new: DynamoGraphDeployment, may_materialize: bool
) -> Iterator[FieldError]:
    """The workload provider is recorded once, by the operator, and never changes afterwards."""
    path = f"metadata.annotations[{WORKLOAD_PROVIDER}]"
    before = (old.metadata.annotations or {}).get(WORKLOAD_PROVIDER)
    after = (new.metadata.annotations or {}).get(WORKLOAD_PROVIDER)
    if before is None:
        if after is not None and not may_materialize:
            yield FieldError(
                path, f"{show(after)} is not allowed: may only be materialized by the Dynamo operator"
            )
    elif after != before:
        yield immutable(path, before, after)


def _component_set(old: DynamoGraphDeployment, new: DynamoGraphDeployment) -> Iterator[FieldError]:
    """Components can be changed but not added or removed (names are their identities)."""
    before = {c.name for c in old.spec.components or []}
    after = {c.name for c in new.spec.components or []}
    added, removed = sorted(after - before), sorted(before - after)
    if not added and not removed:
        return
    parts = [f"components added: {_go_list(added)}"] if added else []
    parts += [f"components removed: {_go_list(removed)}"] if removed else []
    yield FieldError(
        "spec.components",
        "component topology is immutable and cannot be modified after creation: " + ", ".join(parts),
    )


def _go_list(names: list[str]) -> str:
    """Names as upstream prints a list: ``[a b]``."""
    return "[" + " ".join(names) + "]"


def _surviving_components(
    old: DynamoGraphDeployment, new: DynamoGraphDeployment
) -> Iterator[tuple[str, ComponentSpec, ComponentSpec]]:
    """(path in ``new``, old version, new version) of each component present in both, matched by name."""
    before = {c.name: c for c in old.spec.components or []}
    for index, component in enumerate(new.spec.components or []):
        if component.name in before:
            yield component_path(index), before[component.name], component


def _scaled_replicas(
    old: ComponentSpec, new: ComponentSpec, path: str, *, may_scale: bool
) -> Iterator[FieldError]:
    """A scaling adapter (in either version) owns the replicas: only it, or the planner, changes them."""
    if old.scaling_adapter is None and new.scaling_adapter is None:
        return
    before = 1 if old.replicas is None else old.replicas
    after = 1 if new.replicas is None else new.replicas
    if before != after and not may_scale:
        yield immutable(
            f"{path}.replicas",
            before,
            after,
            "cannot be modified directly when scaling adapter is enabled; scale or update the related "
            "DynamoGraphDeploymentScalingAdapter instead",
        )


def _runtime_version_warnings(problems: Iterable[FieldError]) -> Iterator[FieldError]:
    """The ratcheted image-tag rule, as a warning like its create-time form (docs/decisions.md)."""
    for problem in problems:
        yield FieldError(problem.path, f"{problem.message} (upstream admission refuses this change)")


def _graph_fields(old: DynamoGraphDeployment, new: DynamoGraphDeployment) -> Iterator[FieldError]:
    """The graph-level topology fixed at creation, and a restart request held back during a rollout."""
    if old.spec.topology_constraint != new.spec.topology_constraint:
        yield frozen_topology("spec.topologyConstraint", "topology constraints")
    if _kv_policy(old) != _kv_policy(new):
        yield frozen_topology("spec.experimental.kvTransferPolicy", "the KV transfer policy")
    yield from _restart_during_rollout(old, new)


def _kv_policy(dgd: DynamoGraphDeployment) -> KvTransferPolicy | None:
    """The KV transfer policy with its enforcement defaulted (unset means ``required``)."""
    policy = dgd.spec.experimental.kv_transfer_policy if dgd.spec.experimental else None
    if policy is None or policy.enforcement:
        return policy
    return structs.replace(policy, enforcement="required")


def _restart_during_rollout(old: DynamoGraphDeployment, new: DynamoGraphDeployment) -> Iterator[FieldError]:
    """A new restart request waits until the rolling update the old status reports has ended."""
    rolling = old.status.rolling_update if old.status else None
    if rolling is None or not rollout_active(rolling):
        return
    phase = rolling.phase
    before = old.spec.restart.id if old.spec.restart else None
    after = new.spec.restart.id if new.spec.restart else None
    if before != after:
        yield immutable(
            "spec.restart.id", before, after, f"cannot be changed while a rolling update is {phase}"
        )
