"""Admission of a DGD, as upstream's CRD schema, CEL rules and validating webhook would decide it.

The rules are pure (supplement §4.3-§4.4): a DGD is checked as a **create**, after the defaults of
``dgd.domain.admission.defaulting`` are applied in memory, and every independent problem is reported,
not just the first. The few rules that need the cluster take what the caller read
(``dgd.domain.admission.lookups``), and are skipped when it read nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec

from dgd.domain.admission.components import check_component, main_image_problems, runtime_version_warnings
from dgd.domain.admission.defaulting import GROVE_API_VERSION, ORIGIN_VERSION, WORKLOAD_PROVIDER, default_dgd
from dgd.domain.admission.errors import FieldError, show
from dgd.domain.admission.lookups import ClusterLookups, lookup_errors
from dgd.domain.admission.pathway import grove_refusal
from dgd.domain.admission.schema import check
from dgd.domain.naming import component_budget, pcs_name
from dgd.domain.roles import failover_mode, roles, uses_pcsg
from dgd.domain.semver import parse_lenient
from dgd.messages.component import ComponentSpec, ProviderOverride
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.meta_validation import annotation_problems, label_problems

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
PLACEHOLDER = re.compile(r"<[^<>]+>|\$\{[^}]+\}|\{\{[^}]+\}\}")
SUBDOMAIN_WORDS = (
    "at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
)

#: Annotations whose values admission restricts: key -> (allowed values, case-insensitive?).
_ANNOTATION_VALUES: dict[str, tuple[tuple[str, ...], bool]] = {
    "nvidia.com/vllm-distributed-executor-backend": (("mp", "ray"), True),
    "nvidia.com/grove-update-strategy": (("RollingRecreate", "OnDelete"), False),
    "nvidia.com/dynamo-kube-discovery-mode": (("pod", "container"), False),
    WORKLOAD_PROVIDER: (("component", "grove"), False),
}
DISCOVERY_MODE = "nvidia.com/dynamo-kube-discovery-mode"


class Verdict(msgspec.Struct, frozen=True):
    """The outcome of admitting one document: the decoded, defaulted DGD when there are no errors."""

    errors: list[FieldError]
    warnings: list[FieldError]
    dgd: DynamoGraphDeployment | None = None


def admit(
    document: object,
    *,
    grove_enabled: bool = True,
    operator_version: str | None = None,
    lookups: ClusterLookups | None = None,
) -> Verdict:
    """Check a v1beta1 DGD document (plain JSON values) as a create; ``lookups``: what the caller read
    from the cluster for it (``None``: nothing, and the rules that need the cluster are skipped)."""
    if not isinstance(document, dict):
        return Verdict(errors=[FieldError("", f"{show(document)} is not an object")], warnings=[])
    errors = check(document, DynamoGraphDeployment)
    if errors:
        return Verdict(errors=errors, warnings=[])
    try:
        decoded = msgspec.convert(document, DynamoGraphDeployment)
    except msgspec.ValidationError as exc:  # the schema walk and msgspec disagree: still a clear error
        return Verdict(errors=[FieldError("", str(exc))], warnings=[])
    dgd = default_dgd(decoded, grove_enabled=grove_enabled, operator_version=operator_version, create=True)
    errors = list(validate_create(dgd, grove_enabled=grove_enabled))
    if lookups is not None:
        refusal = grove_refusal(dgd.metadata, grove_enabled=grove_enabled)
        errors += lookup_errors(dgd, lookups, grove_refusal=refusal)
    errors.sort(key=document_order)
    warnings = list(metadata_warnings(dgd))
    warnings += [
        w
        for i, c in enumerate(dgd.spec.components or [])
        for w in runtime_version_warnings(c, component_path(i))
    ]
    return Verdict(errors=errors, warnings=warnings, dgd=None if errors else dgd)


def validate_create(dgd: DynamoGraphDeployment, *, grove_enabled: bool) -> Iterator[FieldError]:
    """Every create-time problem of a defaulted DGD (the image-tag rule is a warning, see ``admit``)."""
    return validate_stateless(dgd, grove_enabled=grove_enabled, create=True)


def validate_stateless(
    dgd: DynamoGraphDeployment, *, grove_enabled: bool, create: bool
) -> Iterator[FieldError]:
    """Every problem of a defaulted DGD that needs no older version of it (supplement §4.4).

    On an update (``create=False``) a restart request is allowed: ``spec.restart`` is how one is asked for.
    """
    refusal = grove_refusal(dgd.metadata, grove_enabled=grove_enabled)
    yield from _metadata(dgd)
    yield from _graph(dgd, refusal, create=create)
    yield from _topology(dgd, refusal)
    components = dgd.spec.components or []
    name = pcs_name(dgd.metadata.name or "", max((_budget(c) for c in components), default=0))
    for index, component in enumerate(components):
        yield from check_component(
            component,
            component_path(index),
            grove_refusal=refusal,
            dgd_name=dgd.metadata.name or "",
            pcs_name=name,
            backend=dgd.spec.backend_framework,
        )
        yield from _component_overrides(component, component_path(index), dgd)
        # On update the image rule is ratcheted instead (update.py): an image already missing stays allowed.
        if create:
            yield from main_image_problems(component, component_path(index))


def component_path(index: int) -> str:
    """The path of the component at ``index`` of ``spec.components``."""
    return f"spec.components[{index}]"


def _budget(component: ComponentSpec) -> int:
    names = [r.name for r in roles(component)] if uses_pcsg(component) else []
    return component_budget(component.name, names)


def _metadata(dgd: DynamoGraphDeployment) -> Iterator[FieldError]:
    meta = dgd.metadata
    if not meta.name:
        yield FieldError("metadata.name", "is required")
    elif not _is_subdomain(meta.name):
        yield FieldError("metadata.name", f"{show(meta.name)} is not allowed: use {SUBDOMAIN_WORDS}")
    if (
        meta.namespace is not None
        and not DNS_LABEL.fullmatch(meta.namespace)
        and not _placeholder(meta.namespace)
    ):
        yield FieldError("metadata.namespace", f"{show(meta.namespace)} is not a valid namespace name")
    # The API server's own rules first: what it refuses never reaches the webhook.
    yield from (FieldError(field, why) for field, why in label_problems(meta.labels or {}))
    annotations = meta.annotations or {}
    yield from (FieldError(field, why) for field, why in annotation_problems(annotations))
    origin = annotations.get(ORIGIN_VERSION)
    if origin is not None and parse_lenient(origin) is None:
        yield FieldError(f"metadata.annotations[{ORIGIN_VERSION}]", f"{show(origin)} must be valid semver")
    for key, (allowed, fold) in _ANNOTATION_VALUES.items():
        value = annotations.get(key)
        if value is not None and (value.lower() if fold else value) not in allowed:
            choices = " or ".join(f'"{a}"' for a in allowed)
            yield FieldError(
                f"metadata.annotations[{key}]", f"{show(value)} is not allowed: must be {choices}"
            )
    intra_pod = any(failover_mode(c) == "IntraPod" for c in dgd.spec.components or [])
    mode = annotations.get(DISCOVERY_MODE)
    if intra_pod and mode != "container":
        yield FieldError(
            f"metadata.annotations[{DISCOVERY_MODE}]",
            f'{"is missing" if mode is None else "is " + show(mode)}: it must be "container" when intra-pod '
            "failover is configured",
        )


def metadata_warnings(dgd: DynamoGraphDeployment) -> Iterator[FieldError]:
    """Template placeholders left in metadata (``<your-namespace>``, ``${NAMESPACE}``)."""
    namespace = dgd.metadata.namespace
    if namespace is not None and _placeholder(namespace):
        yield FieldError(
            "metadata.namespace",
            f"{show(namespace)} looks like a template placeholder: replace it with a namespace name "
            "before applying",
        )


def _placeholder(value: str) -> bool:
    return PLACEHOLDER.search(value) is not None


def _graph(dgd: DynamoGraphDeployment, refusal: str | None, *, create: bool) -> Iterator[FieldError]:
    spec = dgd.spec
    if create and spec.restart is not None:
        yield FieldError(
            "spec.restart",
            "spec.restart must be unset on create; set spec.restart.id after creation to request a restart",
        )
    if spec.priority_class_name and refusal is not None:
        yield FieldError(
            "spec.priorityClassName", f"{show(spec.priority_class_name)} is not allowed: {refusal}"
        )
    components = spec.components or []
    if not components:
        yield FieldError("spec.components", "must have at least one component")
    # Names are identities: unique case-insensitively, since Kubernetes names use the lowercase form.
    first: dict[str, int] = {}
    for index, component in enumerate(components):
        key = component.name.lower()
        if key in first:
            earlier = components[first[key]].name
            where = component_path(first[key])
            yield FieldError(
                f"{component_path(index)}.name",
                f"{show(component.name)} duplicates {where}.name {show(earlier)}: component names "
                "must be unique case-insensitively",
            )
        else:
            first[key] = index
    epps = [i for i, c in enumerate(components) if c.type == "epp"]
    for index in epps[1:]:
        yield FieldError(
            f"{component_path(index)}.type",
            f"at most one component may have type epp (also {component_path(epps[0])})",
        )
    if spec.provider_override is not None:
        yield from _override(spec.provider_override, "spec.providerOverride", dgd, "PodCliqueSet")
    if spec.restart is not None:
        yield from _restart_order(dgd)


def _restart_order(dgd: DynamoGraphDeployment) -> Iterator[FieldError]:
    strategy = dgd.spec.restart.strategy if dgd.spec.restart else None
    order = strategy.order if strategy else None
    if not order or strategy is None:
        return
    path = "spec.restart.strategy.order"
    names = sorted(c.name for c in dgd.spec.components or [])
    if strategy.type == "Parallel":
        yield FieldError(path, "cannot be specified when strategy is parallel")
    elif len(set(order)) != len(order):
        yield FieldError(path, "must be unique")
    elif len(order) != len(names):
        yield FieldError(path, "must have the same number of unique components as the deployment")
    for index, name in enumerate(order):
        if name not in names:
            yield FieldError(f"{path}[{index}]", f"{show(name)} is not one of {', '.join(names)}")


def _topology(dgd: DynamoGraphDeployment, refusal: str | None) -> Iterator[FieldError]:
    spec = dgd.spec
    policy = spec.experimental.kv_transfer_policy if spec.experimental else None
    if policy is not None:
        path = "spec.experimental.kvTransferPolicy"
        if (policy.label_key is None) == (policy.cluster_topology_name is None):
            yield FieldError(path, "exactly one of labelKey or clusterTopologyName is required")
        preferred = policy.enforcement == "preferred"
        if preferred and policy.preferred_weight is None:
            yield FieldError(
                f"{path}.preferredWeight", "preferredWeight is required when enforcement is preferred"
            )
        if not preferred and policy.preferred_weight is not None:
            yield FieldError(
                f"{path}.preferredWeight", "preferredWeight may only be set when enforcement is preferred"
            )
        if (
            policy.label_key is not None
            and "/" in policy.label_key
            and len(policy.label_key.split("/")[0]) > 253
        ):
            yield FieldError(f"{path}.labelKey", "labelKey prefix must be 253 characters or less")
        name = policy.cluster_topology_name
        if name is not None:
            if not _is_subdomain(name):
                yield FieldError(
                    f"{path}.clusterTopologyName", f"{show(name)} is not allowed: use {SUBDOMAIN_WORDS}"
                )
            elif refusal is not None:
                yield FieldError(f"{path}.clusterTopologyName", f"{show(name)} is not allowed: {refusal}")
    # Typed topology: a component constraint needs a deployment-level one, which needs a domain.
    constrained = [i for i, c in enumerate(spec.components or []) if c.topology_constraint is not None]
    if spec.topology_constraint is None:
        for index in constrained:
            yield FieldError(
                "spec.topologyConstraint",
                f"is required when any component topology constraint is set "
                f"({component_path(index)}.topologyConstraint)",
            )
            break
    elif spec.topology_constraint.pack_domain is None and not constrained:
        yield FieldError(
            "spec.topologyConstraint.packDomain", "is required when no component topologyConstraint is set"
        )
    typed = spec.topology_constraint is not None or bool(constrained)
    if typed and _writes_topology(dgd):
        yield FieldError(
            "spec.topologyConstraint",
            "cannot be combined with provider-native Grove topology overrides (providerOverride); use "
            "either the typed topology API or provider-native Grove topology overrides",
        )


def _writes_topology(dgd: DynamoGraphDeployment) -> bool:
    overrides = [dgd.spec.provider_override]
    for c in dgd.spec.components or []:
        overrides.append(c.provider_override)
        if c.multinode is not None:
            overrides += [
                r.provider_override for r in (c.multinode.leader, c.multinode.worker) if r is not None
            ]
    return any(o is not None for o in overrides)


def _component_overrides(
    component: ComponentSpec, path: str, dgd: DynamoGraphDeployment
) -> Iterator[FieldError]:
    target = "PodCliqueScalingGroupConfig" if uses_pcsg(component) else "PodCliqueTemplateSpec"
    if component.provider_override is not None:
        yield from _override(component.provider_override, f"{path}.providerOverride", dgd, target)
    if component.multinode is not None:
        for role, override in (
            ("leader", component.multinode.leader),
            ("worker", component.multinode.worker),
        ):
            if override is not None and override.provider_override is not None:
                where = f"{path}.multinode.{role}.providerOverride"
                yield from _override(override.provider_override, where, dgd, "PodCliqueTemplateSpec")


def _override(
    override: ProviderOverride, path: str, dgd: DynamoGraphDeployment, target: str
) -> Iterator[FieldError]:
    """Provider overrides are Grove-only and may set nothing but a topology constraint (§4.4 item 7)."""
    provider = (dgd.metadata.annotations or {}).get(WORKLOAD_PROVIDER)
    if provider is None:
        yield FieldError(
            path,
            f'requires controller-owned annotation "{WORKLOAD_PROVIDER}" to be materialized; '
            "wait for controller adoption and retry",
        )
    elif provider != "grove":
        yield FieldError(path, f'requires workload provider "grove", but "{provider}" is selected')
    elif override.api_version != GROVE_API_VERSION:
        yield FieldError(
            f"{path}.apiVersion", f'{show(override.api_version)} is not one of "{GROVE_API_VERSION}"'
        )
    elif override.target != target:
        yield FieldError(
            f"{path}.target", f'{show(override.target)} must match the provider-context target "{target}"'
        )
    else:
        allowed = "spec" if target == "PodCliqueSet" else "topologyConstraint"
        for key in override.value:
            if key != allowed:
                yield FieldError(
                    f"{path}.value.{key}", "is Dynamo-owned or not enabled for provider override"
                )
        if target == "PodCliqueSet":
            spec = override.value.get("spec")
            template = spec.get("template") if isinstance(spec, dict) else None
            extra = [k for k in template if k != "topologyConstraint"] if isinstance(template, dict) else []
            for key in extra:
                yield FieldError(
                    f"{path}.value.spec.template.{key}",
                    "is Dynamo-owned or not enabled for provider override",
                )
            if not isinstance(template, dict) or "topologyConstraint" not in template:
                yield FieldError(f"{path}.value.spec.template.topologyConstraint", "is required")
        elif allowed not in override.value:
            yield FieldError(f"{path}.value.topologyConstraint", "is required")


def document_order(error: FieldError) -> tuple[int, str]:
    """Errors in the order their fields appear: metadata first, then spec, list indexes as numbers."""
    rank = 0 if error.path.startswith("metadata") else 1
    return rank, re.sub(r"\[(\d+)\]", lambda m: f"[{int(m.group(1)):04d}]", error.path)


def _is_subdomain(name: str) -> bool:
    return len(name) <= 253 and DNS_SUBDOMAIN.fullmatch(name) is not None
