"""One read of each Grove child of a DGD's components, classified (dgd-domain §9.6).

The Grove program reads them for readiness and the restart child for restart progress: both read the
PodClique, or the scaling group of a component Grove scales as a group, from the cache, once each.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dgd.actors.machinery.reader import Reader
from dgd.cluster.resources import PCLQ, PCSG
from dgd.domain.readiness import ChildReadiness, child_name, observe_pcsg, observe_podclique, rescaled_child
from dgd.domain.roles import uses_pcsg
from dgd.messages.component import ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment


async def observe_children(
    reader: Reader,
    dgd: DynamoGraphDeployment,
    components: Iterable[ComponentSpec],
    rescaled: Mapping[str, int] | None = None,
) -> dict[str, ChildReadiness]:
    """Each of ``components`` (of ``dgd``, defaulted) by name, as its Grove child shows it now;
    ``rescaled``: the replicas this reconcile's scale writes gave some of them, by component (the read
    may predate the write: ``dgd.domain.readiness.rescaled`` says what it left)."""
    namespace = dgd.metadata.namespace or ""
    children: dict[str, ChildReadiness] = {}
    for component in components:
        name = child_name(dgd, component)
        resource: Any = PCSG if uses_pcsg(component) else PCLQ
        child = await reader.get(resource.key(namespace, name))
        replicas = (rescaled or {}).get(component.name)
        if child is not None and replicas is not None:
            child = rescaled_child(child, replicas)
        observe = observe_pcsg if resource is PCSG else observe_podclique
        children[component.name] = observe(name, child)
    return children
