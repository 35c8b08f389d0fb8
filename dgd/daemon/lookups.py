"""The validating webhook's live cluster lookups (supplement §4.4 items 7, 12.4, 13), done on the loop.

Before a DGD create or update is handed to a worker thread for the pure rules, the reads those rules need
(``dgd.domain.admission.lookups.wanted``) are made here: the ClusterTopologyBindings named, with a GET
through the operator's cluster client, and whether the InferencePool API group is served, with API
discovery (which every authenticated user may read). Every replica serves admission and only the
leader runs informers, so there is no cache to read. Each read has ``LOOKUP_TIMEOUT`` seconds (the API
server gives the whole webhook 10); a read that fails or times out becomes the reason the rule
reports, so a broken lookup refuses the DGD with a sentence, as upstream's webhook does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import anyio

from dgd.cluster.errors import ClusterError, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CLUSTER_TOPOLOGY_BINDING
from dgd.domain.admission.lookups import (
    INFERENCE_POOL_GROUP,
    BindingRead,
    ClusterLookups,
    binding_levels,
    wanted,
)
from dgd.messages.admission import AdmissionRequest

#: Seconds each lookup may take.
LOOKUP_TIMEOUT = 2.5

#: API discovery: every ``group/version`` the API server serves (``KubeCluster.group_versions``).
Discover = Callable[[], Awaitable[Sequence[str]]]


async def look_up(
    cluster: Cluster, discover: Discover | None, request: AdmissionRequest
) -> ClusterLookups | None:
    """What the rules need read for ``request``: ``None`` for anything but a create or an update of
    an object. Without ``discover``, the InferencePool API counts as served (the check is skipped)."""
    if request.operation not in ("CREATE", "UPDATE") or request.object is None:
        return None
    needed = wanted(request.object)
    served: bool | str = True
    if needed.inference_pool and discover is not None:
        served = await _pool_served(discover)
    bindings = {name: await _binding(cluster, name) for name in needed.bindings}
    return ClusterLookups(inference_pool=served, bindings=bindings)


async def _pool_served(discover: Discover) -> bool | str:
    try:
        with anyio.fail_after(LOOKUP_TIMEOUT):
            group_versions = await discover()
    except TimeoutError:
        return f"API discovery did not answer within {LOOKUP_TIMEOUT:g}s"
    except (ClusterError, OSError) as error:
        return str(error) or type(error).__name__
    return any(gv.rpartition("/")[0] == INFERENCE_POOL_GROUP for gv in group_versions)


async def _binding(cluster: Cluster, name: str) -> BindingRead:
    try:
        with anyio.fail_after(LOOKUP_TIMEOUT):
            found = await cluster.get(CLUSTER_TOPOLOGY_BINDING.key(None, name))
    except TimeoutError:
        return BindingRead(error=f"the API server did not answer within {LOOKUP_TIMEOUT:g}s")
    except NotFound:
        return BindingRead()
    except ClusterError as error:
        return BindingRead(error=str(error) or type(error).__name__)
    return BindingRead(levels=binding_levels(found))
