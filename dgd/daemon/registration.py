"""How the API server is told where to call the webhooks (``--webhook-register``).

``service`` points the webhook configurations and the CRDs' conversion at the chart's Service, ``url``
at ``https://HOST:PORT`` of ``--webhook-addr`` (an API server that can reach this process: a laptop, a
test), ``none`` leaves it to someone else. The leader writes the configurations (supplement §4.1:
names, rules, ``failurePolicy``, ``matchPolicy``, ``sideEffects``, ``timeoutSeconds``; restricted mode
adds the namespace selector and suffix) and the CA bundle into them and into each CRD's conversion
stanza (cluster-wide mode only, §4.8), as upstream's operator injects it.
"""

from __future__ import annotations

import base64
import logging
from functools import partial
from typing import Any, Literal

import msgspec

from dgd.cluster.errors import AlreadyExists, ClusterError, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import (
    CRD,
    MUTATING_WEBHOOK_CONFIGURATION,
    SELF_SUBJECT_REVIEW,
    VALIDATING_WEBHOOK_CONFIGURATION,
)
from dgd.daemon.webhooks import CONVERSION_PATH, POD_RESTORE_PATH
from dgd.messages.base import JSONObject

logger = logging.getLogger("dgd.webhooks")

Registration = Literal["service", "url", "none"]
REGISTRATIONS: tuple[Registration, ...] = ("service", "url", "none")

#: The CRDs whose conversion the webhook serves (supplement §4.8).
CONVERTED_CRDS = (
    "dynamographdeployments.nvidia.com",
    "dynamocomponentdeployments.nvidia.com",
    "dynamographdeploymentscalingadapters.nvidia.com",
)


class WebhookSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The ``run`` flags of the webhooks (see the module). ``address`` ``0``: no webhook server."""

    address: str = ":9443"
    cert_dir: str | None = None
    secret_namespace: str = "dynamo-system"
    secret_name: str = "dynamo-operator-webhook-server-cert"
    register: Registration = "none"
    service_namespace: str = "dynamo-system"
    service_name: str = "dynamo-operator-webhook-service"
    #: Prefix of the configurations' names (``<prefix>-mutating``, ``<prefix>-validating``).
    configuration_prefix: str = "dynamo-operator"
    failure_policy: Literal["Fail", "Ignore"] = "Fail"
    #: The pod checkpoint-restore mutator's (``webhook.podCheckpointRestoreFailurePolicy``): ``Ignore``
    #: creates pods unrestored while the webhook cannot be reached, ``Fail`` holds every pod create.
    pod_restore_failure_policy: Literal["Fail", "Ignore"] = "Ignore"
    #: Who the operator is to admission (§4.6); ``None``: asked of the API server at start.
    operator_principal: str | None = None
    #: Seconds the operator's own serving certificates are valid (renewed at two thirds).
    validity: float = 365 * 24 * 3600.0
    #: Seconds the operator's own CA is valid (rotated at two thirds).
    ca_validity: float = 10 * 365 * 24 * 3600.0

    def service_names(self) -> list[str]:
        """The DNS names the webhook Service answers to."""
        host = f"{self.service_name}.{self.service_namespace}.svc"
        return [host, f"{host}.cluster.local"]


async def operator_principal(cluster: Cluster) -> str | None:
    """Who the API server says this operator is (a SelfSubjectReview), or ``None`` if it will not say."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {}}
    try:
        answered = await cluster.create(SELF_SUBJECT_REVIEW, review)
    except ClusterError as error:
        logger.warning("the API server did not say who this operator is (%s): no principal is exempt", error)
        return None
    username = ((answered.get("status") or {}).get("userInfo") or {}).get("username")
    return username if isinstance(username, str) and username else None


# Registration.

_COMMON: JSONObject = {"admissionReviewVersions": ["v1"], "sideEffects": "None", "timeoutSeconds": 10}


def _client(settings: WebhookSettings, url: str | None, path: str, ca_bundle: bytes) -> JSONObject:
    config: JSONObject
    if url is not None:
        config = {"url": url + path}
    else:
        config = {
            "service": {"namespace": settings.service_namespace, "name": settings.service_name, "path": path}
        }
    if ca_bundle:
        config["caBundle"] = base64.b64encode(ca_bundle).decode()
    return config


def _rule(version: str, resource: str, operations: list[str], group: str = "nvidia.com") -> JSONObject:
    return {"apiGroups": [group], "apiVersions": [version], "operations": operations, "resources": [resource]}


def _webhook(
    settings: WebhookSettings,
    url: str | None,
    ca_bundle: bytes,
    namespaces: tuple[str, ...],
    name: str,
    path: str,
    rule: JSONObject,
) -> JSONObject:
    """One webhook of a configuration (restricted mode: selecting the watched namespaces)."""
    return {
        "name": name,
        "clientConfig": _client(settings, url, path, ca_bundle),
        "rules": [rule],
        "failurePolicy": settings.failure_policy,
        **_COMMON,
        **({"namespaceSelector": namespace_selector(namespaces)} if namespaces else {}),
    }


def namespace_selector(namespaces: tuple[str, ...]) -> JSONObject:
    """The namespace selector of a restricted operator's webhooks: upstream's ``matchLabels`` for its one
    namespace; for an operator watching several (``run --namespace A --namespace B``), each of them."""
    key = "kubernetes.io/metadata.name"
    if len(namespaces) == 1:
        return {"matchLabels": {key: namespaces[0]}}
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(namespaces)}]}


def configurations(
    settings: WebhookSettings,
    ca_bundle: bytes,
    *,
    url: str | None,
    namespaces: tuple[str, ...],
    pod_restore: bool = False,
) -> list[tuple[Any, JSONObject]]:
    """The webhook configurations of supplement §4.1 for the handlers served, pointing at ``url``
    (``url`` registration) or the Service; ``namespaces``: those a namespace-restricted operator watches
    (empty: cluster-wide); ``pod_restore``:
    the pod checkpoint-restore mutator too (registered under the checkpoint gate only, so a cluster
    that restores nothing does not send every pod create to the operator)."""
    suffix = f"-{settings.secret_namespace}" if namespaces else ""
    labels = {
        "app.kubernetes.io/part-of": "dynamo-operator",
        "nvidia.com/dynamo-operator-namespace": settings.secret_namespace,
    }
    dgd, dcd = "dynamographdeployments", "dynamocomponentdeployments"
    hook = partial(_webhook, settings, url, ca_bundle, namespaces)
    create_update = ["CREATE", "UPDATE"]

    def configuration(kind: str, role: str, webhooks: list[JSONObject]) -> JSONObject:
        name = f"{settings.configuration_prefix}-{role}{suffix}"
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name, "labels": labels},
            "webhooks": webhooks,
        }

    mutating = configuration(
        "MutatingWebhookConfiguration",
        "mutating",
        [
            hook(
                "mdynamographdeployment.kb.io",
                f"/mutate/nvidia.com/v1beta1/{dgd}",
                _rule("v1beta1", dgd, create_update),
            ),
            {
                **hook(
                    "mdynamocomponentdeploymentv1beta1.kb.io",
                    "/mutate-nvidia-com-v1beta1-dynamocomponentdeployment",
                    _rule("v1beta1", dcd, create_update),
                ),
                "matchPolicy": "Exact",
            },
        ],
    )
    if pod_restore:
        pods = _rule("v1", "pods", ["CREATE"], group="")
        restore = hook("mpodcheckpointrestore.kb.io", POD_RESTORE_PATH, pods)
        mutating["webhooks"].append({**restore, "failurePolicy": settings.pod_restore_failure_policy})
    validating = configuration(
        "ValidatingWebhookConfiguration",
        "validating",
        [
            hook(
                "vdynamographdeployment.kb.io",
                f"/validate/nvidia.com/v1beta1/{dgd}",
                _rule("v1beta1", dgd, create_update),
            ),
            hook(
                "vdynamocomponentdeployment.kb.io",
                f"/validate/nvidia.com/v1beta1/{dcd}",
                _rule("v1beta1", dcd, create_update),
            ),
            hook(
                "vdynamocheckpoint.kb.io",
                "/validate-nvidia-com-v1alpha1-dynamocheckpoint",
                _rule("v1alpha1", "dynamocheckpoints", create_update),
            ),
        ],
    )
    return [(MUTATING_WEBHOOK_CONFIGURATION, mutating), (VALIDATING_WEBHOOK_CONFIGURATION, validating)]


def conversion_patch(settings: WebhookSettings, ca_bundle: bytes, *, url: str | None) -> JSONObject:
    """The merge patch that points a CRD's conversion at this webhook (§4.8)."""
    client = _client(settings, url, CONVERSION_PATH, ca_bundle)
    # A merge patch: the other way of reaching the webhook is removed.
    client.setdefault("url", None)
    client.setdefault("service", None)
    return {
        "spec": {
            "conversion": {
                "strategy": "Webhook",
                "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": client},
            }
        }
    }


async def register(
    cluster: Cluster,
    settings: WebhookSettings,
    ca_bundle: bytes,
    *,
    url: str | None,
    namespaces: tuple[str, ...],
    pod_restore: bool = False,
) -> None:
    """Write the webhook configurations and (cluster-wide) the CRDs' conversion, with ``ca_bundle``
    (``pod_restore``: with the pod checkpoint-restore mutator)."""
    for resource, wanted in configurations(
        settings, ca_bundle, url=url, namespaces=namespaces, pod_restore=pod_restore
    ):
        await _create_or_replace(cluster, resource, wanted)
    if namespaces:
        return
    patch = conversion_patch(settings, ca_bundle, url=url)
    for name in CONVERTED_CRDS:
        try:
            await cluster.patch(CRD.key(None, name), patch)
        except NotFound:
            logger.warning("CRD %s is not installed: its conversion is not registered", name)
    logger.info(
        "registered the webhooks (%s)", url or f"Service {settings.service_namespace}/{settings.service_name}"
    )


async def _create_or_replace(cluster: Cluster, resource: Any, wanted: JSONObject) -> None:
    try:
        await cluster.create(resource, wanted)
    except AlreadyExists:
        live = await cluster.get(resource.key(None, wanted["metadata"]["name"]))
        replacement = {
            **wanted,
            "metadata": {**wanted["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]},
        }
        await cluster.replace(resource, replacement)
