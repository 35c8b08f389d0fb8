"""The worker hash (v2): one 8-hex token per worker generation (dgd-domain §12.1, podspec §11).

It is upstream's ``ComputeDGDWorkersSpecHash`` byte for byte, so a graph upstream's operator started
keeps its generation when this operator takes it over. The worker DCDs are rendered with the
placeholder hash; for each, keyed by component name, the hash covers the workload labels and
annotations (``dcd_workload_metadata``), the resolved runtime version when it is 1.5.0 or later, and
the DCD spec with ``replicas``, ``minAvailable``, ``scalingAdapter`` and ``runtimeVersionOverride``
cleared. That map is written as Go's ``encoding/json`` writes the Go values (``dgd.domain.gojson``),
hashed with SHA-256, and the first 8 hex characters are the hash.
"""

from __future__ import annotations

import hashlib
import re

import msgspec

from dgd.domain.gojson.encode import encode, string
from dgd.domain.podtemplate import image_tag, main_container
from dgd.domain.render.dcd import render_dcds
from dgd.domain.render.dcd_workload_metadata import kube_annotations, kube_labels
from dgd.domain.semver import parse_lenient
from dgd.messages.component import WORKER_TYPES, ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment

PLACEHOLDER = "worker-hash-placeholder"
#: The Go struct each worker's entry is (labels, annotations, runtimeVersion, spec).
ENTRY_TYPE = "struct:dynamo/internal.workerHashEntry"
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


def hash_input(dgd: DynamoGraphDeployment) -> str:
    """The exact bytes (as text) upstream hashes for a defaulted, namespaced DGD."""
    by_name = {c.name: c for c in dgd.spec.components or []}
    entries: dict[str, str] = {}
    for dcd in render_dcds(dgd, worker_hash=PLACEHOLDER):
        component = by_name[dcd.spec.name or ""]
        if component.type not in WORKER_TYPES:
            continue
        spec = msgspec.structs.replace(
            dcd.spec, replicas=None, min_available=None, scaling_adapter=None, runtime_version_override=None
        )
        version = runtime_version(component)
        entry = {
            "labels": kube_labels(dgd, component, dcd),
            "annotations": kube_annotations(dgd, component, dcd),
            "runtimeVersion": ".".join(map(str, version))
            if version is not None and version >= _HASHED_SINCE
            else "",
            "spec": msgspec.to_builtins(spec),
        }
        entries[component.name] = encode(entry, ENTRY_TYPE)
    return "{" + ",".join(f"{string(name)}:{entries[name]}" for name in sorted(entries)) + "}"


def worker_hash(dgd: DynamoGraphDeployment) -> str:
    """The v2 worker hash of a defaulted, namespaced DGD (a constant when it has no workers)."""
    return hashlib.sha256(hash_input(dgd).encode("utf-8")).hexdigest()[:8]
