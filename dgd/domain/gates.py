"""Feature gates, resolved once at start-up from the config and the APIs the cluster serves (dgd-domain §17).

``resolve(configured, available)``: unset follows availability, ``false`` is off, ``true`` needs
the API (else the operator refuses to start, with a message naming the config key and the API).
``effective_config`` writes the resolved gates back into the config as explicit booleans, so
everything downstream (rendering, the programs) reads one settled configuration.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

import msgspec
from msgspec import structs

from dgd.messages.config import GateConfig, OperatorConfig

# The API each gate needs, as ``group/version/plural``.
GROVE_API = "grove.io/v1alpha1/podcliquesets"
LWS_API = "leaderworkerset.x-k8s.io/v1/leaderworkersets"
VOLCANO_API = "scheduling.volcano.sh/v1beta1/queues"
KAI_API = "scheduling.run.ai/v2/queues"
DRA_API = "resource.k8s.io/v1/resourceclaimtemplates"
ISTIO_API = "networking.istio.io/v1beta1/destinationrules"
CHECKPOINT_API = "nvidia.com/v1alpha1/podsnapshots"

#: Every API a gate depends on (what start-up discovery must ask the cluster about).
GATE_APIS = (GROVE_API, LWS_API, VOLCANO_API, KAI_API, DRA_API, ISTIO_API, CHECKPOINT_API)


class GateError(ValueError):
    """A gate the config turns on whose API the cluster does not serve: the operator cannot start."""


class Gates(msgspec.Struct, frozen=True):
    """Which optional integrations this process uses, fixed for its lifetime."""

    grove: bool = False
    lws: bool = False
    volcano_scheduler: bool = False
    kai_scheduler: bool = False
    dra: bool = False
    istio: bool = False
    checkpoint: bool = False


def served_apis(group_versions: Iterable[str]) -> frozenset[str]:
    """The gate APIs served by a cluster that serves these ``group/version`` s (a resource counts as
    served with its group and version: the resolution API discovery gives at group level)."""
    served = set(group_versions)
    return frozenset(api for api in GATE_APIS if api.rpartition("/")[0] in served)


def _resolve(configured: bool | None, available: bool, key: str, needs: str) -> bool:
    if configured is None:
        return available
    if configured and not available:
        raise GateError(f"{key} is true, but the cluster does not serve {needs}: install it or unset {key}")
    return configured


def resolve_gates(config: OperatorConfig, served: Set[str]) -> Gates:
    """The gates for ``config`` on a cluster serving the APIs in ``served`` (``GATE_APIS`` entries)."""
    orchestrators = config.orchestrators
    lws_available = LWS_API in served and VOLCANO_API in served
    return Gates(
        grove=_resolve(
            orchestrators.grove.enabled, GROVE_API in served, "orchestrators.grove.enabled", GROVE_API
        ),
        lws=_resolve(
            orchestrators.lws.enabled,
            lws_available,
            "orchestrators.lws.enabled",
            f"{LWS_API} and {VOLCANO_API}",
        ),
        volcano_scheduler=_resolve(
            orchestrators.volcano_scheduler.enabled,
            VOLCANO_API in served,
            "orchestrators.volcanoScheduler.enabled",
            VOLCANO_API,
        ),
        kai_scheduler=_resolve(
            orchestrators.kai_scheduler.enabled,
            KAI_API in served,
            "orchestrators.kaiScheduler.enabled",
            KAI_API,
        ),
        dra=_resolve(config.dra.enabled, DRA_API in served, "dra.enabled", DRA_API),
        # The mesh counts only with the Istio provider (upstream's ``ServiceMeshConfiguration.IsEnabled``).
        istio=mesh_provider_istio(config)
        and _resolve(config.service_mesh.enabled, ISTIO_API in served, "serviceMesh.enabled", ISTIO_API),
        # The checkpoint gate is off unless the config turns it on, and then the API must exist.
        checkpoint=_resolve(
            config.checkpoint.enabled,
            CHECKPOINT_API in served,
            "checkpoint.enabled",
            CHECKPOINT_API,
        ),
    )


def mesh_provider_istio(config: OperatorConfig) -> bool:
    """``serviceMesh.provider`` is ``istio`` and ``serviceMesh.enabled`` is not ``false``."""
    return config.service_mesh.provider == "istio" and config.service_mesh.enabled is not False


def effective_config(config: OperatorConfig, gates: Gates) -> OperatorConfig:
    """``config`` with every gate written as the explicit boolean it resolved to."""
    orchestrators = structs.replace(
        config.orchestrators,
        grove=structs.replace(config.orchestrators.grove, enabled=gates.grove),
        lws=GateConfig(enabled=gates.lws),
        volcano_scheduler=GateConfig(enabled=gates.volcano_scheduler),
        kai_scheduler=GateConfig(enabled=gates.kai_scheduler),
    )
    return structs.replace(
        config,
        orchestrators=orchestrators,
        dra=GateConfig(enabled=gates.dra),
        service_mesh=structs.replace(config.service_mesh, enabled=gates.istio),
        checkpoint=structs.replace(config.checkpoint, enabled=gates.checkpoint),
    )


def gates_of(config: OperatorConfig) -> Gates:
    """The gates an *effective* configuration (``effective_config``) resolved to."""
    orchestrators = config.orchestrators
    return Gates(
        grove=orchestrators.grove.enabled is True,
        lws=orchestrators.lws.enabled is True,
        volcano_scheduler=orchestrators.volcano_scheduler.enabled is True,
        kai_scheduler=orchestrators.kai_scheduler.enabled is True,
        dra=config.dra.enabled is True,
        istio=config.service_mesh.enabled is True,
        checkpoint=config.checkpoint.enabled is True,
    )
