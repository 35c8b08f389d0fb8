"""A minimal kopf operator for DynamoGraphDeployments: the other side of ``bench/real.py --operator kopf``.

It does a fifth of the upstream contract, what issue 18's comparison table describes for kopf, and
nothing more. For each DGD:

- **a finalizer**: kopf's own (``kopf.zalando.org/KopfFinalizerMarker``), which kopf puts on because
  there is a deletion handler and a daemon (both need to see the DGD go);
- **the provider annotation** ``nvidia.com/workload-provider: grove``, written with kopf's own
  bookkeeping annotation (``kopf.zalando.org/last-handled-configuration``) in one PATCH;
- **one PodCliqueSet** named after the DGD: per component one clique named after the component
  (lower-cased) with its replicas and pod spec, the DGD-name label, owned by the DGD (``kopf.adopt``):
  what the stand-in Grove (``bench/standin_grove.py``) needs to make and ready one PodClique
  ``<set>-0-<clique>`` per clique. No Services, no RBAC, no rendering of the upstream pod spec;
- **two status writes**: ``state: pending`` (with ``observedGeneration``) by the create handler, and
  ``state: successful`` by a daemon that kopf starts once the DGD's status says ``pending`` and that
  waits until every PodClique of the DGD reports ready (``readyReplicas >= spec.replicas`` for its
  generation). The PodCliques are followed by an event handler (kopf's watch of PodCliques, no
  requests per DGD), which wakes the DGD's daemon; the daemon's patch is applied by kopf as it exits.

Kubernetes Events are off (``settings.posting.enabled = False``; kopf posts one per handler outcome
by default), and kopf's diff base leaves the provider annotation out (else kopf takes the annotation
for a change of the DGD and writes its bookkeeping annotation once more); the rest of kopf's settings
are its defaults. So the writes per DGD are: the finalizer (a JSON patch), the annotations (a merge
patch), the two statuses (merge patches of ``/status``) and the PodCliqueSet create: 5.

The PodCliqueSet is created with kubernetes-asyncio (kopf is not a client library and its
documentation points at one), whose user agent is set to ``kopf-agg`` so that the benchmark's audit
count (user agents starting with ``kopf``) takes in both kopf's own requests (``kopf/<version>``) and
these.

Run by ``bench/real.py --operator kopf`` from its own virtualenv (``bench/.kopf-venv``, built on first
use from ``bench/kopf-constraints.txt``), never imported by the project::

    KUBECONFIG=... bench/.kopf-venv/bin/kopf run --standalone --all-namespaces bench/kopf_agg.py
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import kopf
from kubernetes_asyncio import client, config

DGD_GROUP, DGD_VERSION, DGD_PLURAL = "nvidia.com", "v1beta1", "dynamographdeployments"
GROVE_GROUP, GROVE_VERSION = "grove.io", "v1alpha1"
#: The same keys the project uses (``dgd.domain``); this file runs without the project installed.
GRAPH_NAME = "nvidia.com/dynamo-graph-deployment-name"
WORKLOAD_PROVIDER = "nvidia.com/workload-provider"
USER_AGENT = "kopf-agg/1"

#: The ready PodCliques by (namespace, DGD name), and the daemons' wake-ups under the same keys.
READY: dict[tuple[str, str], set[str]] = {}
WAKE: dict[tuple[str, str], asyncio.Event] = {}
CLIENT: dict[str, client.ApiClient] = {}


@kopf.on.startup()
async def start(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = False
    # kopf's own diff base (the default storage) without the provider annotation: otherwise the
    # annotation this operator writes looks like a change to kopf, which then writes its
    # last-handled-configuration annotation once more (a third PATCH of the DGD).
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        ignored_fields=[("metadata", "annotations", WORKLOAD_PROVIDER)]
    )
    await config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    api = client.ApiClient()
    api.user_agent = USER_AGENT
    CLIENT["api"] = api


@kopf.on.cleanup()
async def stop(**_: Any) -> None:
    if (api := CLIENT.pop("api", None)) is not None:
        await api.close()


def clique_name(component: dict[str, Any]) -> str:
    return str(component["name"]).lower()


def podcliqueset(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The smallest PodCliqueSet the stand-in Grove turns into ready PodCliques: a clique per component."""
    cliques = [
        {
            "name": clique_name(component),
            "labels": {"nvidia.com/dynamo-component": component["name"]},
            "spec": {
                "roleName": clique_name(component),
                "replicas": int(component.get("replicas", 1)),
                "podSpec": (component.get("podTemplate") or {}).get("spec") or {"containers": []},
            },
        }
        for component in spec.get("components") or []
    ]
    return {
        "apiVersion": f"{GROVE_GROUP}/{GROVE_VERSION}",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "labels": {GRAPH_NAME: name}},
        "spec": {"replicas": 1, "template": {"cliques": cliques}},
    }


@kopf.on.create(DGD_GROUP, DGD_VERSION, DGD_PLURAL)
async def create(
    name: str, namespace: str, spec: kopf.Spec, meta: kopf.Meta, patch: kopf.Patch, **_: Any
) -> None:
    body = podcliqueset(name, dict(spec))
    kopf.adopt(body)
    try:
        await client.CustomObjectsApi(CLIENT["api"]).create_namespaced_custom_object(
            GROVE_GROUP, GROVE_VERSION, namespace, "podcliquesets", body
        )
    except client.ApiException as error:
        if error.status != 409:  # a retried handler finds the set it made
            raise
    patch.metadata.annotations[WORKLOAD_PROVIDER] = "grove"
    patch.status["state"] = "pending"
    patch.status["observedGeneration"] = meta.get("generation")


def _pending(status: kopf.Status, **_: Any) -> bool:
    return status.get("state") == "pending"


@kopf.daemon(DGD_GROUP, DGD_VERSION, DGD_PLURAL, when=_pending, cancellation_timeout=1.0)
async def successful(
    name: str, namespace: str, spec: kopf.Spec, meta: kopf.Meta, patch: kopf.Patch, **_: Any
) -> None:
    """Wait for every PodClique of the DGD to be ready, then say ``successful`` (kopf patches it)."""
    key = (namespace, name)
    wanted = {f"{name}-0-{clique_name(component)}" for component in spec.get("components") or []}
    wake = WAKE.setdefault(key, asyncio.Event())
    while not wanted <= READY.get(key, set()):
        await wake.wait()
        wake.clear()
    patch.status["state"] = "successful"
    patch.status["observedGeneration"] = meta.get("generation")


@kopf.on.delete(DGD_GROUP, DGD_VERSION, DGD_PLURAL)
async def deleted(name: str, namespace: str, **_: Any) -> None:
    """Forget the DGD (its PodCliqueSet goes by its owner reference)."""
    READY.pop((namespace, name), None)
    WAKE.pop((namespace, name), None)


@kopf.on.event(GROVE_GROUP, GROVE_VERSION, "podcliques", labels={GRAPH_NAME: kopf.PRESENT})
async def podclique(
    type: str | None,
    name: str,
    namespace: str,
    labels: kopf.Labels,
    spec: kopf.Spec,
    meta: kopf.Meta,
    status: kopf.Status,
    **_: Any,
) -> None:
    """Note whether the PodClique is ready, and wake its DGD's daemon when it is."""
    key = (namespace, labels[GRAPH_NAME])
    ready = (
        type != "DELETED"
        and status.get("observedGeneration") == meta.get("generation")
        and int(status.get("readyReplicas", 0)) >= int(spec.get("replicas", 1))
    )
    if not ready:
        if key in READY:
            READY[key].discard(name)
        return
    READY.setdefault(key, set()).add(name)
    if (wake := WAKE.get(key)) is not None:
        wake.set()
