"""How a frontend is exposed outside the cluster (dgd-domain §9.5 item 4, supplement §1.10): a
Kubernetes Ingress, an Istio VirtualService, or both.

The settings come from the component's preserved v1alpha1 ``ingress`` when it has one, else from the
operator configuration's ``ingress`` (enabled when a virtual-service gateway or an ingress class is
set; host ``<dgd>.<hostSuffix | "local">``). An Ingress needs a controller class; a VirtualService
needs ``useVirtualService`` (implied by a configured gateway) and a gateway. Both route ``/`` to the
component's Service on port 8000. The Grove program considers the VirtualService at all only while
the operator configuration names a gateway (``manages_virtual_services``), as upstream does.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.domain.conversion.alpha_view import alpha_ingress
from dgd.domain.pod_merge import JSON
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment

FRONTEND_PORT = 8000
VIRTUAL_SERVICE_API = "networking.istio.io/v1beta1"


class Exposure(msgspec.Struct, frozen=True, kw_only=True):
    """A frontend's resolved ingress settings; nothing is exposed unless ``enabled``."""

    enabled: bool
    host: str
    class_name: str | None = None
    tls_secret: str | None = None
    gateway: str | None = None
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    annotations: dict[str, str] = msgspec.field(default_factory=dict)

    @property
    def ingress(self) -> bool:
        """Whether a Kubernetes Ingress is wanted."""
        return self.enabled and self.class_name is not None

    @property
    def virtual_service(self) -> bool:
        """Whether an Istio VirtualService is wanted."""
        return self.enabled and self.gateway is not None


def manages_virtual_services(config: OperatorConfig) -> bool:
    """Whether the operator configuration uses a virtual-service gateway: only then are frontend
    VirtualServices created, or deleted when a frontend wants none."""
    return bool(config.ingress.virtual_service_gateway)


def exposure(dgd: DynamoGraphDeployment, component_name: str, config: OperatorConfig) -> Exposure:
    """The ingress settings of a frontend: its preserved v1alpha1 ``ingress``, else the config's."""
    alpha = alpha_ingress(dgd, component_name)
    if alpha is not None:
        return from_alpha(alpha)
    return configured(dgd.metadata.name or "", config)


def configured(graph: str, config: OperatorConfig) -> Exposure:
    """The operator configuration's ingress settings for a frontend of the graph named ``graph``:
    enabled by a virtual-service gateway or an ingress class, host ``<graph>.<hostSuffix | "local">``."""
    ingress = config.ingress
    return Exposure(
        enabled=bool(ingress.virtual_service_gateway or ingress.controller_class_name),
        host=f"{graph}.{ingress.host_suffix or 'local'}",
        class_name=ingress.controller_class_name or None,
        tls_secret=ingress.controller_tls_secret_name or None,
        gateway=ingress.virtual_service_gateway or None,
    )


def from_alpha(alpha: dict[str, Any]) -> Exposure:
    """The settings a preserved v1alpha1 ``ingress`` gives."""
    gateway = alpha.get("virtualServiceGateway")
    use = bool(alpha.get("useVirtualService")) and isinstance(gateway, str)
    return Exposure(
        enabled=bool(alpha.get("enabled")),
        host=f"{alpha.get('hostPrefix') or ''}{alpha.get('host') or ''}.{alpha.get('hostSuffix') or 'local'}",
        class_name=alpha.get("ingressControllerClassName") or None,
        tls_secret=(alpha.get("tls") or {}).get("secretName"),
        gateway=gateway if use else None,
        labels=dict(alpha.get("labels") or {}),
        annotations=dict(alpha.get("annotations") or {}),
    )


def virtual_service(name: str, namespace: str, settings: Exposure) -> JSON:
    """The VirtualService routing ``settings.host`` through the gateway to Service ``name``:8000
    (upstream ``GenerateComponentVirtualService``: name and namespace only, no labels)."""
    destination = {"host": name, "port": {"number": FRONTEND_PORT}}
    return {
        "apiVersion": VIRTUAL_SERVICE_API,
        "kind": "VirtualService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "hosts": [settings.host],
            "gateways": [settings.gateway],
            "http": [{"match": [{"uri": {"prefix": "/"}}], "route": [{"destination": destination}]}],
        },
    }
