"""What the configured orchestrators offer a DGD: one predicate per rule (dgd-domain §4.1, §8.1, §17).

``grove_disabled``: the operator configuration turns Grove off, so no DGD may run on it (a Grove
DGD fails ``selected_workload_provider_unavailable``, rendering refuses it, create picks the
Component pathway). ``lacks_multinode_orchestrator``: a component spans several nodes and, on the
Component pathway, nothing can run it because LeaderWorkerSet is off.

Both read the gates as configured: ``false`` is off, and an unset gate follows what the cluster
serves. The operator runs on the *effective* configuration (``dgd.domain.gates.effective_config``),
where every gate is an explicit boolean; only an offline render, which reads no cluster, sees an
unset gate, and then assumes the orchestrator is there.
"""

from __future__ import annotations

from dgd.domain.roles import is_multinode
from dgd.messages.component import ComponentSpec
from dgd.messages.config import OperatorConfig


def grove_disabled(config: OperatorConfig) -> bool:
    """Whether the configuration turns Grove off (``orchestrators.grove.enabled: false``)."""
    return config.orchestrators.grove.enabled is False


def lacks_multinode_orchestrator(component: ComponentSpec, config: OperatorConfig) -> bool:
    """Whether ``component`` spans several nodes while LeaderWorkerSet, the Component pathway's only
    multinode orchestrator, is off (``orchestrators.lws.enabled: false``)."""
    return is_multinode(component) and config.orchestrators.lws.enabled is False
