"""The durable workload provider of a DGD (dgd-domain §4.1): ``grove`` or ``component``, chosen once.

A DGD carries its provider in the controller-owned annotation ``nvidia.com/workload-provider``.
When the annotation is missing (a DGD the defaulting webhook never saw) the provider is adopted from
the children this DGD controls (controller owner references only; labels are not trusted), and
with no children it is chosen as on create: Grove when the gate is on and the DGD did not opt out.
"""

from __future__ import annotations

from collections.abc import Iterable

from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER, select_provider
from dgd.domain.ownership import controlled_by
from dgd.domain.projection import UNSUPPORTED_WORKLOAD_PROVIDER, Failure
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.meta import ObjectMeta

GROVE = "grove"
COMPONENT = "component"
PROVIDERS = (GROVE, COMPONENT)


class ConflictingProviders(Exception):
    """Both families of children exist: retried, never guessed (no status write)."""


def stored_provider(dgd: DynamoGraphDeployment) -> str | None:
    """The annotated provider, ``None`` if absent; a terminal ``Failure`` for any other value."""
    value = (dgd.metadata.annotations or {}).get(WORKLOAD_PROVIDER)
    if value is None or value in PROVIDERS:
        return value
    raise Failure(
        UNSUPPORTED_WORKLOAD_PROVIDER,
        f'unsupported workload provider "{value}" in annotation {WORKLOAD_PROVIDER}: it must be "grove" or '
        '"component"; the provider cannot change after creation, so recreate the DGD to choose another',
        terminal=True,
    )


def adopt_provider(
    dgd: DynamoGraphDeployment,
    *,
    podcliquesets: Iterable[ObjectMeta],
    component_deployments: Iterable[ObjectMeta],
    grove_enabled: bool,
) -> str:
    """The provider of a DGD without the annotation, from the children it controls."""
    uid = dgd.metadata.uid
    grove = any(controlled_by(meta, uid) for meta in podcliquesets)
    component = any(controlled_by(meta, uid) for meta in component_deployments)
    if grove and component:
        raise ConflictingProviders(
            "conflicting workload providers: this DGD controls both PodCliqueSets and "
            "DynamoComponentDeployments; delete the family that is not wanted"
        )
    if grove:
        return GROVE
    if component:
        return COMPONENT
    return select_provider(dgd.metadata, grove_enabled=grove_enabled)
