"""How a DCD is exposed outside the cluster (dcd-controller §2.3.7-§2.3.8): an Ingress, an Istio
VirtualService, or neither.

The settings are the DCD's preserved v1alpha1 ``ingress`` (any type); otherwise a frontend with a
parent DGD gets the operator configuration's, for host ``<dgd>.<hostSuffix | "local">``. Both route
``/`` to Service normalize(DCD name) on port 8000. The VirtualService is considered only while the
configuration names a gateway (``manages_virtual_services``).
"""

from __future__ import annotations

from dgd.domain.naming import normalize
from dgd.domain.pod_merge import JSON
from dgd.domain.render.dcd_identity import Identity
from dgd.domain.render.frontend_exposure import (
    FRONTEND_PORT,
    Exposure,
    configured,
    from_alpha,
    manages_virtual_services,
    virtual_service,
)
from dgd.messages.config import OperatorConfig


def settings(identity: Identity, config: OperatorConfig) -> Exposure | None:
    """The DCD's ingress settings, ``None`` when it has none at all."""
    alpha = identity.alpha.get("ingress")
    if isinstance(alpha, dict):
        return from_alpha(alpha)
    if identity.spec_type != "frontend" or not identity.graph:
        return None
    return configured(identity.graph, config)


def ingress(identity: Identity, exposure: Exposure) -> JSON:
    """The Ingress: one rule, ``/`` of the host to the component Service; no labels or annotations."""
    name = normalize(identity.name)
    backend = {"service": {"name": name, "port": {"number": FRONTEND_PORT}}}
    spec: JSON = {
        "ingressClassName": exposure.class_name,
        "rules": [
            {
                "host": exposure.host,
                "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},
            }
        ],
    }
    if exposure.tls_secret:
        spec["tls"] = [{"hosts": [exposure.host], "secretName": exposure.tls_secret}]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name, "namespace": identity.namespace},
        "spec": spec,
    }


def exposure_objects(identity: Identity, config: OperatorConfig) -> tuple[list[JSON], list[tuple[str, str]]]:
    """The Ingress and VirtualService wanted, and the ``(apiVersion, kind)`` of those not wanted, whose
    name normalize(DCD name) is to be removed."""
    wanted = settings(identity, config)
    objects: list[JSON] = []
    unwanted: list[tuple[str, str]] = []
    if wanted is not None and wanted.ingress:
        objects.append(ingress(identity, wanted))
    else:
        unwanted.append(("networking.k8s.io/v1", "Ingress"))
    if manages_virtual_services(config):
        if wanted is not None and wanted.virtual_service:
            objects.append(virtual_service(normalize(identity.name), identity.namespace, wanted))
        else:
            unwanted.append(("networking.istio.io/v1beta1", "VirtualService"))
    return objects, unwanted
