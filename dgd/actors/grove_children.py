"""One read of each Grove child of a DGD's components, classified (dgd-domain §9.6).

The Grove program reads them for readiness and the restart child for restart progress: both read the
PodClique, or the scaling group of a component Grove scales as a group, from the cache, once each.
"""

from __future__ import annotations

from collections.abc import Iterable

from dgd.actors.cache import Reader
from dgd.cluster.resources import PCLQ, PCSG
from dgd.domain.readiness import ChildReadiness, child_name, observe_pcsg, observe_podclique
from dgd.domain.roles import uses_pcsg
from dgd.messages.component import ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment


async def observe_children(
    reader: Reader, dgd: DynamoGraphDeployment, components: Iterable[ComponentSpec]
) -> dict[str, ChildReadiness]:
    """Each of ``components`` (of ``dgd``, defaulted) by name, as its Grove child shows it now."""
    namespace = dgd.metadata.namespace or ""
    children: dict[str, ChildReadiness] = {}
    for component in components:
        name = child_name(dgd, component)
        if uses_pcsg(component):
            group = await reader.get(PCSG.key(namespace, name))
            children[component.name] = observe_pcsg(name, group)
        else:
            clique = await reader.get(PCLQ.key(namespace, name))
            children[component.name] = observe_podclique(name, clique)
    return children
