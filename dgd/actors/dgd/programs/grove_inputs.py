"""What the PodCliqueSet of a graph is rendered from besides the graph itself, read on every run.

The levels of the ClusterTopologyBinding a KV-transfer policy names (dgd-domain §9.3), and the
ResourceClaimTemplates whose devices multinode components' GPU counts read (podspec §2).
"""

from __future__ import annotations

from dgd.actors.machinery.reader import Reader
from dgd.cluster.errors import ClusterError
from dgd.cluster.resources import CLUSTER_TOPOLOGY_BINDING, RESOURCE_CLAIM_TEMPLATE
from dgd.domain.pod_merge import JSON
from dgd.domain.projection import FAILED_TO_RECONCILE, Failure
from dgd.domain.render import kv_transfer
from dgd.domain.render.gpu_count import counted_templates
from dgd.domain.roles import is_multinode
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment


async def topology_domains(reader: Reader, dgd: DynamoGraphDeployment) -> tuple[str, ...]:
    """The levels of the ClusterTopologyBinding the KV-transfer policy names (none without one),
    read on every run: a binding edited since the last sync changes the workers' topology files."""
    policy = kv_transfer.policy_of(dgd)
    if policy is None or not policy.cluster_topology_name:
        return ()
    key = CLUSTER_TOPOLOGY_BINDING.key(None, policy.cluster_topology_name)
    try:
        binding = await reader.get(key)
    except ClusterError as error:
        why = f'failed to read ClusterTopologyBinding "{key.name}" for kvTransferPolicy: {error}'
        raise Failure(FAILED_TO_RECONCILE, why) from error
    return kv_transfer.binding_domains(policy, binding)


async def claim_templates(
    reader: Reader, config: OperatorConfig, dgd: DynamoGraphDeployment
) -> dict[str, JSON]:
    """The ResourceClaimTemplates multinode components' GPU counts read (podspec §2), from the
    cache: none unless a multinode main container claims its GPUs through DRA."""
    if config.dra.enabled is not True:
        return {}
    names = {
        n for c in dgd.spec.components or [] if is_multinode(c) for n in counted_templates(c.pod_template)
    }
    namespace = dgd.metadata.namespace or ""
    found: dict[str, JSON] = {}
    for name in sorted(names):
        template = await reader.get(RESOURCE_CLAIM_TEMPLATE.key(namespace, name))
        if template is not None:
            found[name] = template
    return found
