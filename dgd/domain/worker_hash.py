"""The worker hash (v2): one 8-hex token per worker generation (dgd-domain §12.1, podspec §11).

It changes on any edit that reaches a worker's pods and on nothing else: the worker DCDs are
rendered with a placeholder hash, their scaling fields (``replicas``, ``minAvailable``,
``scalingAdapter``, ``runtimeVersionOverride``) and the origin-version annotation are cleared, and
the canonical JSON (keys sorted, compact) of ``{component: {labels, annotations, runtimeVersion,
spec}}`` is hashed with SHA-256. The value is self-consistent, not byte-compatible with the Go
operator's (``docs/decisions.md``).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import msgspec

from dgd.domain.metadata_keys import ORIGIN_VERSION
from dgd.domain.podtemplate import image_tag, main_container
from dgd.domain.render.dcd import render_dcds
from dgd.domain.semver import parse_lenient
from dgd.messages.component import WORKER_TYPES, ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment

PLACEHOLDER = "worker-hash-placeholder"
_HASHED_SINCE = (1, 5, 0)
_STRICT_SEMVER = r"^[vV]?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"


def has_workers(dgd: DynamoGraphDeployment) -> bool:
    return any(c.type in WORKER_TYPES for c in dgd.spec.components or [])


def runtime_version(component: ComponentSpec) -> tuple[int, int, int] | None:
    """The resolved runtime version (supplement §3.2): the override, else the main image's semver tag."""
    if component.runtime_version_override:
        return parse_lenient(component.runtime_version_override)
    found = main_container(component.pod_template)
    image = found[1].get("image") if found else None
    tag = image_tag(image) if isinstance(image, str) else None
    if tag is None or not re.match(_STRICT_SEMVER, tag):
        return None
    return parse_lenient(tag.lstrip("vV"))


def worker_hash(dgd: DynamoGraphDeployment) -> str:
    """The v2 worker hash of a defaulted, namespaced DGD (a constant when it has no workers)."""
    by_name = {c.name: c for c in dgd.spec.components or []}
    workers: dict[str, Any] = {}
    for dcd in render_dcds(dgd, worker_hash=PLACEHOLDER):
        component = by_name[dcd.spec.name or ""]
        if component.type not in WORKER_TYPES:
            continue
        spec = msgspec.structs.replace(
            dcd.spec, replicas=None, min_available=None, scaling_adapter=None, runtime_version_override=None
        )
        encoded = msgspec.to_builtins(spec)
        annotations = (encoded.get("podTemplate") or {}).get("metadata", {}).get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(ORIGIN_VERSION, None)
        entry: dict[str, Any] = {
            "labels": dcd.metadata.labels or {},
            "annotations": dcd.metadata.annotations or {},
            "spec": encoded,
        }
        version = runtime_version(component)
        if version is not None and version >= _HASHED_SINCE:
            entry["runtimeVersion"] = ".".join(str(part) for part in version)
        workers[component.name] = entry
    canonical = json.dumps(workers, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:8]
