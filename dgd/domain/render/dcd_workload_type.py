"""The workload component type of a DCD: legacy worker selector compatibility (dcd-controller §2.5).

A DCD converted from v1alpha1 (``componentType: worker`` + ``subComponentType: prefill|decode``) is
``type: prefill|decode`` in v1beta1. Rendering the new type would change its pods' labels and its
Service's selector, and roll every worker; so such a DCD keeps rendering as ``worker`` while its own
labels, or the workload or Service that exists for it, still say ``worker``. The type feeds the pod
labels, ``DYN_COMPONENT`` and the Service selector; the Deployment selector never changes.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from dgd.domain.metadata_keys import COMPONENT_TYPE, GRAPH_NAME, SUB_COMPONENT_TYPE, WORKER_HASH
from dgd.domain.pod_merge import JSON
from dgd.messages.component import WORKER_TYPES

_SPLIT_TYPES = ("prefill", "decode")


class Legacy(msgspec.Struct, frozen=True, kw_only=True):
    """What exists of a DCD's workload and Service, read for §2.5 (``None``: not found): the Deployment
    named like the DCD, the LeaderWorkerSet ``<dcd>-0``, the Service normalize(DCD name)."""

    deployment: JSON | None = None
    lws: JSON | None = None
    service: JSON | None = None


def _legacy(labels: Mapping[str, str], spec_type: str) -> bool:
    """The legacy selector predicate: labelled ``worker`` with an empty or matching sub-type."""
    sub_type = labels.get(SUB_COMPONENT_TYPE) or ""
    return (
        labels.get(COMPONENT_TYPE) == "worker" and spec_type in _SPLIT_TYPES and sub_type in ("", spec_type)
    )


def _template_labels(template: object) -> dict[str, str]:
    if not isinstance(template, dict):
        return {}
    labels = (template.get("metadata") or {}).get("labels")
    return dict(labels) if isinstance(labels, dict) else {}


def _live_label_sets(live: Legacy, lws_gate: bool) -> list[dict[str, str]]:
    """The label sets of the live objects, in the order upstream reads them."""
    sets: list[dict[str, str]] = []
    if live.deployment is not None:
        sets.append(_template_labels((live.deployment.get("spec") or {}).get("template")))
    if lws_gate and live.lws is not None:
        templates = (live.lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
        sets.append(_template_labels(templates.get("leaderTemplate")))
        sets.append(_template_labels(templates.get("workerTemplate")))
    if live.service is not None:
        selector = (live.service.get("spec") or {}).get("selector")
        sets.append(dict(selector) if isinstance(selector, dict) else {})
    return sets


def workload_type(spec_type: str, labels: Mapping[str, str], live: Legacy, *, lws_gate: bool) -> str:
    """The type a DCD of ``spec_type`` with object ``labels`` renders as, given what exists of it."""
    # 1. A DGD-generated legacy worker says so on its own labels.
    if GRAPH_NAME in labels and WORKER_HASH in labels and _legacy(labels, spec_type):
        return "worker"
    # 2. Only a prefill or decode DCD can be a legacy worker.
    if spec_type == "worker" or spec_type not in WORKER_TYPES:
        return spec_type
    # 3.-4. Its own labels, then what exists of it (the LeaderWorkerSet only with the LWS gate on).
    if _legacy(labels, spec_type) or any(
        _legacy(found, spec_type) for found in _live_label_sets(live, lws_gate)
    ):
        return "worker"
    return spec_type
