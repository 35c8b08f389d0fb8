"""Hypothesis strategies for the conversion round trips (supplement §1.12), as plain JSON values.

``alpha_dgds`` draws v1alpha1 DGDs in the shapes §1.12 promises to keep: every v1alpha1-only field,
the pod-level fields in both their dedicated and their ``extraPodSpec.mainContainer`` form, and
status. It leaves out the three known limits §1.12 lists: ``componentType: prefill|decode`` without
a sub-type, an ``extraPodSpec.containers`` entry named ``main``, and unparseable quantities.

``beta_dgds`` draws the valid v1beta1 DGDs of ``tests.strategies`` and adds what only v1beta1 can
say: a compilation cache, mount details, container orders without ``main`` first, template
metadata, a frontend sidecar by name, experimental blocks and status.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from tests.strategies import (
    Document,
    annotation_maps,
    component_names,
    dns_labels,
    env_vars,
    label_maps,
    valid_dgds,
)

_coin = st.booleans()
_quarter = st.integers(0, 3).map(lambda n: n == 0)
_images = st.sampled_from(["nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0.0", "busybox"])
_quantities = st.sampled_from(["1", "500m", "2", "4Gi", "2048Mi", "1.5Gi", "0"])
_modes = st.sampled_from(["intraPod", "interPod", "somethingElse"])
_probes = st.builds(
    lambda path, period: {"httpGet": {"path": path, "port": 8000}, "periodSeconds": period},
    st.sampled_from(["/live", "/ready", "/health"]),
    st.integers(1, 30),
)
_mount_names = st.sampled_from(["cache", "data", "models", "scratch"])
_paths = st.sampled_from(["", "/cache", "/data", "/root/.cache"])


def _optional(
    draw: st.DrawFn, fields: dict[str, st.SearchStrategy[Any]], odds: st.SearchStrategy[bool]
) -> Document:
    return {key: draw(strategy) for key, strategy in fields.items() if draw(odds)}


@st.composite
def _resource_items(draw: st.DrawFn) -> Document:
    item = _optional(draw, {"cpu": _quantities, "memory": _quantities, "gpu": _quantities}, _coin)
    if "gpu" in item and draw(_quarter):
        item["gpuType"] = "gpu.intel.com/xe"
    if draw(_quarter):
        item["custom"] = {"ephemeral-storage": draw(_quantities)}
    return item


@st.composite
def _alpha_resources(draw: st.DrawFn) -> Document:
    resources = _optional(draw, {"requests": _resource_items(), "limits": _resource_items()}, _coin)
    if draw(_quarter):
        resources["claims"] = [{"name": "gpus"}]
    return resources


@st.composite
def _flat_mounts(draw: st.DrawFn) -> list[Document]:
    names = draw(st.lists(_mount_names, max_size=3, unique=True))
    # Distinct mount points: a pod whose container mounts two volumes at one path is refused by the
    # API server ("must be unique"), so such a manifest is not an admissible shape to round-trip.
    points = draw(st.lists(_paths.filter(bool), min_size=len(names), max_size=len(names), unique=True))
    mounts = []
    for name, point in zip(names, points, strict=True):
        mount: Document = {"name": name, "mountPoint": point}
        if draw(_quarter):
            mount["useAsCompilationCache"] = True
        mounts.append(mount)
    return mounts


@st.composite
def _main_containers(draw: st.DrawFn) -> Document:
    fields: dict[str, st.SearchStrategy[Any]] = {
        "image": _images,
        "command": st.just(["python3", "-m", "dynamo.vllm"]),
        "args": st.just(["--model", "Qwen/Qwen3-0.6B"]),
        "workingDir": st.just("/workspace"),
        "env": env_vars,
        "envFrom": st.just([{"configMapRef": {"name": "settings"}}]),
        "resources": st.builds(lambda n: {"limits": {"cpu": n}}, _quantities),
        "volumeMounts": st.builds(
            lambda name, ro: [{"name": name, "mountPath": "/x", "readOnly": ro}], _mount_names, _coin
        ),
        "startupProbe": _probes,
        "livenessProbe": _probes,
    }
    return _optional(draw, fields, _quarter)


@st.composite
def _extra_pod_specs(draw: st.DrawFn) -> Document:
    fields: dict[str, st.SearchStrategy[Any]] = {
        "mainContainer": _main_containers(),
        "containers": st.just([{"name": "helper", "image": "busybox:1.36"}]),
        "nodeSelector": st.just({"gpu": "h100"}),
        "terminationGracePeriodSeconds": st.sampled_from([0, 30]),
    }
    return _optional(draw, fields, _coin)


@st.composite
def _shared_memory(draw: st.DrawFn) -> Document:
    return draw(
        st.sampled_from(
            [
                {"size": "16Gi"},
                {"disabled": True},
                {"disabled": True, "size": "1Gi"},
                {"disabled": False},
                {"disabled": False, "size": "8Gi"},
            ]
        )
    )


@st.composite
def _component_types(draw: st.DrawFn) -> Document:
    # prefill/decode as a componentType without a sub-type is a known normalization (§1.12): left out.
    component_type = draw(st.sampled_from(["frontend", "worker", "planner", "main", "default", ""]))
    out: Document = {"componentType": component_type} if component_type else {}
    if component_type == "worker" and draw(_coin):
        out["subComponentType"] = draw(st.sampled_from(["prefill", "decode", "router"]))
    elif draw(_quarter):
        out["subComponentType"] = "router"
    return out


@st.composite
def alpha_services(draw: st.DrawFn, key: str) -> Document:
    """One v1alpha1 service under map key ``key``."""
    service = draw(_component_types())
    fields: dict[str, st.SearchStrategy[Any]] = {
        # A serviceName equal to its key reads back empty (§1.4); test_conversion_from shows it.
        "serviceName": st.just(key + "-svc"),
        "replicas": st.integers(0, 4),
        "envs": env_vars,
        "envFromSecret": st.sampled_from(["hf-token-secret", ""]),
        "resources": _alpha_resources(),
        "volumeMounts": _flat_mounts(),
        "livenessProbe": _probes,
        "readinessProbe": _probes,
        "extraPodMetadata": st.fixed_dictionaries(
            {}, optional={"labels": label_maps, "annotations": annotation_maps}
        ),
        "extraPodSpec": _extra_pod_specs(),
        "sharedMemory": _shared_memory(),
        "scalingAdapter": st.builds(lambda on: {"enabled": on}, _coin),
        "dynamoNamespace": dns_labels,
        "annotations": annotation_maps,
        "labels": label_maps,
        "ingress": st.builds(lambda host: {"enabled": True, "host": host}, dns_labels),
        "autoscaling": st.just({"enabled": False, "minReplicas": 1, "maxReplicas": 3}),
        "gpuMemoryService": st.builds(lambda on, mode: {"enabled": on, "mode": mode}, _coin, _modes),
        "failover": st.builds(
            lambda on, n: {"enabled": on, "mode": "intraPod", "numShadows": n}, _coin, st.integers(1, 2)
        ),
        "checkpoint": st.builds(lambda on: {"enabled": on, "mode": "Auto"}, _coin),
        "frontendSidecar": st.builds(
            lambda secret: {
                "image": "frontend:1",
                "args": ["-m", "dynamo.frontend"],
                "envFromSecret": secret,
            },
            st.sampled_from(["", "hf-token-secret"]),
        ),
        "multinode": st.just({"nodeCount": 2}),
        "modelRef": st.just({"name": "qwen", "revision": "main"}),
        "globalDynamoNamespace": st.just(True),
        "runtimeVersionOverride": st.just("1.0.0"),
    }
    service.update(_optional(draw, fields, _quarter))
    return service


@st.composite
def _alpha_status(draw: st.DrawFn, keys: list[str]) -> Document:
    services: Document = {}
    for key in keys:
        names = draw(st.sampled_from([[], [f"g-{key}"], [f"g-{key}-a", f"g-{key}-b"]]))
        single = draw(st.sampled_from(["", f"g-{key}", f"g-{key}-b", "stale"]))
        entry: Document = {
            "componentKind": "Deployment",
            "componentName": single,
            "replicas": 1,
            "updatedReplicas": 1,
        }
        if names:
            entry["componentNames"] = names
        services[key] = entry
    status: Document = {"state": draw(st.sampled_from(["pending", "successful"])), "services": services}
    if draw(_coin):
        status["rollingUpdate"] = {"phase": "InProgress", "updatedServices": keys[:1]}
    return status


@st.composite
def alpha_dgds(draw: st.DrawFn) -> Document:
    """A v1alpha1 DGD in a shape the v1alpha1 → v1beta1 → v1alpha1 round trip keeps (§1.12)."""
    keys = draw(st.lists(component_names, min_size=1, max_size=4, unique=True))
    spec: Document = {"services": {key: draw(alpha_services(key)) for key in keys}}
    fields: dict[str, st.SearchStrategy[Any]] = {
        "pvcs": st.just(
            [{"name": "model-cache", "create": True, "size": "100Gi", "storageClass": "standard"}]
        ),
        "envs": env_vars,
        "backendFramework": st.sampled_from(["vllm", "sglang"]),
        "labels": label_maps,
        "annotations": annotation_maps,
        "priorityClassName": st.just("high"),
        "topologyConstraint": st.just({"topologyProfile": "rack-topology", "packDomain": "rack"}),
    }
    spec.update(_optional(draw, fields, _quarter))
    if draw(_quarter):
        spec["services"]["gone"] = None
    document: Document = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "graph", "namespace": "ns"},
        "spec": spec,
    }
    if draw(_quarter):
        document["status"] = draw(_alpha_status(keys))
    return document


@st.composite
def _beta_extras(draw: st.DrawFn, component: Document) -> Document:
    """``component`` with some of what only v1beta1 can say."""
    component = copy.deepcopy(component)
    template = component["podTemplate"]
    containers = template["spec"]["containers"]
    main = next(item for item in containers if item["name"] == "main")
    if draw(_quarter):
        component["compilationCache"] = {
            "pvcName": draw(_mount_names),
            **({"mountPath": "/cache"} if draw(_coin) else {}),
        }
    if draw(_quarter):
        main["volumeMounts"] = [
            {"name": draw(_mount_names), "mountPath": "/data", "readOnly": True, "subPath": "x"}
        ]
    elif draw(_quarter):
        main["volumeMounts"] = [{"name": draw(_mount_names), "mountPath": draw(_paths.filter(bool))}]
    if draw(_quarter):
        main["livenessProbe"] = draw(_probes)
    if draw(_quarter):
        main["envFrom"] = [{"secretRef": {"name": "hf-token-secret"}}]
    if draw(_quarter):
        template.setdefault("metadata", {})["name"] = "pod-template"
    sidecar = next((item for item in containers if item["name"] == "sidecar"), None)
    if sidecar is not None and draw(_coin):
        sidecar["name"] = "sidecar-frontend"
        component["frontendSidecar"] = "sidecar-frontend"
    elif sidecar is not None and draw(_quarter):
        component["frontendSidecar"] = "sidecar"
    if sidecar is not None and draw(_quarter):
        containers.remove(main)
    experimental = _optional(
        draw,
        {
            "gpuMemoryService": st.just({"mode": "IntraPod", "deviceClassName": "gpu.nvidia.com"}),
            "failover": st.just({"mode": "InterPod", "numShadows": 1}),
            "checkpoint": st.just({"enabled": False, "mode": "Auto"}),
            "grove": st.just({"forceScalingGroup": True}),
        },
        _quarter,
    )
    if experimental:
        component["experimental"] = experimental
    return component


@st.composite
def beta_dgds(draw: st.DrawFn) -> Document:
    """A v1beta1 DGD with v1beta1-only shapes and sometimes a status."""
    document = draw(valid_dgds())
    components = document["spec"]["components"]
    document["spec"]["components"] = [draw(_beta_extras(component)) for component in components]
    if draw(_quarter):
        names = [component["name"] for component in components]
        document["status"] = {
            "state": "successful",
            "components": {
                name: {"componentKind": "PodClique", "componentNames": [f"g-{name}"], "replicas": 1}
                for name in names
            },
            "rollingUpdate": {"phase": "Completed", "updatedComponents": names},
        }
    return document
