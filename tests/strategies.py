"""Hypothesis strategies for valid v1beta1 DynamoGraphDeployment documents, as plain JSON values.

Every document drawn here is one that upstream admission accepts as a create on the Grove pathway
(the default), so a test that breaks one field of it can expect exactly one problem, at that field.

Lengths keep the Grove pod-name budget (45 characters, ``dgd.domain.naming``) satisfiable: a
component adds its name (single node) or twice its name plus ``-ldr`` (multinode) to pod names, at
most 2 * 16 + 4 = 36 characters, so the PodCliqueSet name keeps a budget of at least 9, and a longer
DGD name (they reach 62 characters) is shortened with a hash rather than refused.

Strategies are built once, at import: building them inside ``@composite`` functions on every draw
makes Hypothesis re-validate them each time and is several times slower.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from dgd.messages.component import BACKEND_FRAMEWORKS, COMPONENT_TYPES
from dgd.messages.dgd import API_VERSION, KIND

Document = dict[str, Any]

_DIGITS = "0123456789"
_LOWER = "abcdefghijklmnopqrstuvwxyz" + _DIGITS
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_MIXED = _LOWER + _UPPER

#: Longest component name drawn: keeps multinode components within the Grove name budget.
MAX_COMPONENT_NAME = 16

#: Quantities for ``sharedMemorySize``: zero, binary and decimal suffixes, a fraction, an exponent, ints.
SHARED_MEMORY_SIZES = ("0", "8Gi", "512Mi", "1G", "1.5Gi", "100M", "2e9", 1073741824, 0)

#: Main-container images: semver tags, a pre-release, a registry port, a non-semver tag, no tag.
IMAGES = (
    "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.9.1",
    "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.0.0",
    "registry.example.com:5000/dynamo/trtllm-runtime:1.5.0-rc1",
    "my-registry/my-image:my-tag",
    "busybox",
)

RUNTIME_VERSIONS = ("0.9.1", "1.5.0", "10.0.9999")


def _token(edge: str, inner: str, max_size: int) -> st.SearchStrategy[str]:
    """1 to ``max_size`` characters: ``edge`` characters at both ends, ``inner`` ones between."""
    ends = st.sampled_from(edge)
    middle = st.text(alphabet=inner, max_size=max_size - 2)
    return ends | st.builds(lambda a, m, b: a + m + b, ends, middle, ends)


#: DNS-1123 labels: lowercase letters, digits and '-', starting and ending with a letter or digit.
dns_labels = _token(_LOWER, _LOWER + "-", 12)

#: DNS-1123 subdomains: 1 to 3 dot-separated labels, at most 62 characters (long ones are shortened).
dgd_names = st.lists(dns_labels | _token(_LOWER, _LOWER + "-", 20), min_size=1, max_size=3).map(".".join)

#: Component names: letters of either case, digits and '-', starting and ending with a letter or digit.
component_names = _token(_MIXED, _MIXED + "-", MAX_COMPONENT_NAME)

#: Any short text, mostly typical values (drawing characters one by one is slow).
_free_text = st.sampled_from(
    ["", "true", "1", "debug", "http://localhost:8000", "a b\nc", "ünïcødé"]
) | st.text(max_size=8)

#: Label and annotation keys outside ``nvidia.com``, so none of them means anything to admission.
label_keys = st.builds(
    lambda prefix, name: prefix + name,
    st.sampled_from(["", "example.com/", "team.example.org/"]),
    _token(_MIXED, _MIXED + "-_.", 12),
)

label_maps = st.dictionaries(label_keys, st.just("") | _token(_MIXED, _MIXED + "-_.", 12), max_size=3)

annotation_maps = st.dictionaries(label_keys, _free_text, max_size=3)

#: Container env: distinct upper-case names with string values.
env_vars = st.lists(
    st.builds(lambda n, v: {"name": n, "value": v}, _token(_UPPER, _UPPER + _DIGITS + "_", 16), _free_text),
    max_size=3,
    unique_by=lambda e: e["name"],
)

_args = st.lists(st.sampled_from(["--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "2"]), max_size=4)
_gpus = st.sampled_from(["1", "2", 4])
_coin = st.booleans()
_quarter = st.integers(0, 3).map(lambda n: n == 0)
_images = st.sampled_from(IMAGES)
_replicas = st.none() | st.integers(0, 8)
_node_counts = st.integers(2, 4)
_shared_memory_sizes = st.sampled_from(SHARED_MEMORY_SIZES)
_runtime_versions = st.sampled_from(RUNTIME_VERSIONS)
_non_epp_types = st.sampled_from([t for t in COMPONENT_TYPES if t != "epp"])
_backends = st.sampled_from(BACKEND_FRAMEWORKS)


#: The optional fields of a main container, a DGD's metadata and its spec, and how each is drawn.
_OPTIONAL_IN_MAIN: dict[str, st.SearchStrategy[Any]] = {
    "env": env_vars,
    "args": _args,
    "resources": _gpus.map(lambda n: {"limits": {"nvidia.com/gpu": n}}),
}
_OPTIONAL_IN_METADATA: dict[str, st.SearchStrategy[Any]] = {
    "namespace": dns_labels,
    "labels": label_maps,
    "annotations": annotation_maps,
}
_OPTIONAL_IN_SPEC: dict[str, st.SearchStrategy[Any]] = {
    "backendFramework": _backends,
    "env": env_vars,
    "labels": label_maps,
    "annotations": annotation_maps,
}


def _some_of(draw: st.DrawFn, fields: dict[str, st.SearchStrategy[Any]]) -> Document:
    """Each of ``fields``, drawn from its strategy, or left out on the toss of a coin."""
    return {key: draw(strategy) for key, strategy in fields.items() if draw(_coin)}


@st.composite
def pod_templates(draw: st.DrawFn) -> Document:
    """A pod template with a ``main`` container that has an image, and sometimes a sidecar."""
    main: Document = {"name": "main", "image": draw(_images), **_some_of(draw, _OPTIONAL_IN_MAIN)}
    containers = [main]
    if draw(_coin):
        containers.insert(draw(_coin.map(int)), {"name": "sidecar", "image": "busybox:1.36"})
    template: Document = {"spec": {"containers": containers}}
    if draw(_quarter):
        template["metadata"] = {"labels": draw(label_maps), "annotations": draw(annotation_maps)}
    return template


#: Exactly one of a ConfigMap reference or an inline config (which needs plugins and profiles).
epp_configs = st.builds(
    lambda name, key: {"configMapRef": {"name": name, "key": key}},
    dns_labels,
    st.sampled_from(["config.yaml", "epp.yaml"]),
) | st.builds(
    lambda: {
        "config": {
            "plugins": [{"type": "single-profile-handler"}],
            "schedulingProfiles": [{"name": "default", "plugins": []}],
        }
    }
)


@st.composite
def components(draw: st.DrawFn, name: str, type_: str) -> Document:
    """One valid component of the given name and type."""
    component: Document = {"name": name, "type": type_}
    # An EPP has exactly one replica, is never multinode and needs its config.
    if type_ == "epp":
        if draw(_coin):
            component["replicas"] = 1
        component["eppConfig"] = draw(epp_configs)
    else:
        replicas = draw(_replicas)
        if replicas is not None:
            component["replicas"] = replicas
        if draw(_quarter):
            component["multinode"] = {"nodeCount": draw(_node_counts)}
    # minAvailable (Grove only) must not exceed replicas unless replicas is 0.
    if draw(_quarter):
        component["minAvailable"] = draw(st.integers(1, max(1, component.get("replicas", 1))))
    if draw(_coin):
        component["sharedMemorySize"] = draw(_shared_memory_sizes)
    if draw(_coin):
        component["scalingAdapter"] = {}
    if draw(_quarter):
        component["runtimeVersionOverride"] = draw(_runtime_versions)
    component["podTemplate"] = draw(pod_templates())
    return component


@st.composite
def component_lists(draw: st.DrawFn) -> list[Document]:
    """1 to 6 components with names unique case-insensitively and at most one ``epp``."""
    names = draw(st.lists(component_names, min_size=1, max_size=6, unique_by=str.lower))
    types: list[str] = [draw(_non_epp_types) for _ in names]
    if draw(_quarter):
        types[draw(st.integers(0, len(types) - 1))] = "epp"
    return [draw(components(name, type_)) for name, type_ in zip(names, types, strict=True)]


@st.composite
def valid_dgds(draw: st.DrawFn) -> Document:
    """A v1beta1 DGD that admission accepts as a create on the Grove pathway."""
    metadata: Document = {"name": draw(dgd_names), **_some_of(draw, _OPTIONAL_IN_METADATA)}
    spec: Document = {"components": draw(component_lists()), **_some_of(draw, _OPTIONAL_IN_SPEC)}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}
