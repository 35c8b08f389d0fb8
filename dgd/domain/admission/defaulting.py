"""What upstream's mutating admission webhook fills in (supplement §4.2), as a pure function.

The operator applies these defaults in memory before validating or rendering and never writes them
back to the DGD spec.
"""

from __future__ import annotations

from msgspec import structs

from dgd.domain.roles import is_multinode, uses_pcsg
from dgd.messages.component import ComponentSpec, Multinode, ProviderOverride, RoleOverride
from dgd.messages.config import COMPATIBLE_UPSTREAM_VERSION
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.meta import ObjectMeta

WORKLOAD_PROVIDER = "nvidia.com/workload-provider"
ENABLE_GROVE = "nvidia.com/enable-grove"
ORIGIN_VERSION = "nvidia.com/dynamo-operator-origin-version"
GROVE_API_VERSION = "grove.io/v1alpha1"


def select_provider(meta: ObjectMeta, *, grove_enabled: bool) -> str:
    """The workload provider chosen at creation: Grove unless disabled or opted out."""
    opt_out = (meta.annotations or {}).get(ENABLE_GROVE, "").lower() == "false"
    return "grove" if grove_enabled and not opt_out else "component"


def default_dgd(
    dgd: DynamoGraphDeployment, *, grove_enabled: bool, operator_version: str | None, create: bool
) -> DynamoGraphDeployment:
    """The DGD as upstream admission would store it: provider, override targets, replicas, minAvailable."""
    annotations = dict(dgd.metadata.annotations or {})
    # The provider is chosen once, at creation; later it is known only if the annotation exists.
    if create:
        annotations[WORKLOAD_PROVIDER] = select_provider(dgd.metadata, grove_enabled=grove_enabled)
        if operator_version is not None:
            annotations.setdefault(ORIGIN_VERSION, operator_version)
    provider = annotations.get(WORKLOAD_PROVIDER)
    components = [_default_component(c, provider) for c in dgd.spec.components or []]
    spec = structs.replace(
        dgd.spec,
        components=components if dgd.spec.components is not None else None,
        provider_override=_target(dgd.spec.provider_override, "PodCliqueSet", provider),
    )
    metadata = structs.replace(dgd.metadata, annotations=annotations or None)
    return structs.replace(dgd, metadata=metadata, spec=spec)


def _default_component(component: ComponentSpec, provider: str | None) -> ComponentSpec:
    target = "PodCliqueScalingGroupConfig" if uses_pcsg(component) else "PodCliqueTemplateSpec"
    multinode = component.multinode
    if multinode is not None and is_multinode(component) and not _inter_pod_gms(component):
        multinode = _default_roles(multinode, provider)
    return structs.replace(
        component,
        replicas=1 if component.replicas is None else component.replicas,
        min_available=1
        if component.min_available is None and provider == "grove"
        else component.min_available,
        provider_override=_target(component.provider_override, target, provider),
        multinode=multinode,
    )


def _default_roles(multinode: Multinode, provider: str | None) -> Multinode:
    def role(override: RoleOverride | None) -> RoleOverride | None:
        if override is None:
            return None
        return structs.replace(
            override, provider_override=_target(override.provider_override, "PodCliqueTemplateSpec", provider)
        )

    return structs.replace(multinode, leader=role(multinode.leader), worker=role(multinode.worker))


def _inter_pod_gms(component: ComponentSpec) -> bool:
    experimental = component.experimental
    gms = experimental.gpu_memory_service if experimental else None
    return gms is not None and gms.mode == "InterPod"


def _target(override: ProviderOverride | None, target: str, provider: str | None) -> ProviderOverride | None:
    # Only a Grove provider with the Grove API version has a derivable target.
    if (
        override is None
        or override.target
        or provider != "grove"
        or override.api_version != GROVE_API_VERSION
    ):
        return override
    return structs.replace(override, target=target)


def default_in_memory(dgd: DynamoGraphDeployment, *, grove_enabled: bool) -> DynamoGraphDeployment:
    """The DGD as rendering sees it: upstream's webhook defaults, applied in memory, never written back.

    A DGD the webhook never saw gets them too: its provider is chosen as on create, and with no
    origin-version annotation it counts as created by the upstream release we are compatible with
    (``COMPATIBLE_UPSTREAM_VERSION``), so origin-version gates behave as they would there.
    """
    annotations = dict(dgd.metadata.annotations or {})
    annotations.setdefault(WORKLOAD_PROVIDER, select_provider(dgd.metadata, grove_enabled=grove_enabled))
    annotations.setdefault(ORIGIN_VERSION, COMPATIBLE_UPSTREAM_VERSION)
    known = structs.replace(dgd, metadata=structs.replace(dgd.metadata, annotations=annotations))
    return default_dgd(known, grove_enabled=grove_enabled, operator_version=None, create=False)
