"""Admission rules for one component of a DGD (supplement §4.3 CEL rules and §4.4 item 10)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from dgd.domain.admission.errors import FieldError, show
from dgd.domain.naming import GROVE_POD_NAME_BUDGET
from dgd.domain.podtemplate import (
    MAIN_CONTAINER,
    containers,
    gpu_limit,
    image_tag,
    main_container,
    template_annotations,
)
from dgd.domain.quantity import parse_quantity
from dgd.domain.roles import failover_mode, forces_scaling_group, gms_mode, is_multinode, roles, uses_pcsg
from dgd.messages.component import ComponentSpec, SharedComponentSpec

POWER_LIMIT = "dynamo.nvidia.com/gpu-power-limit"
EXECUTOR_BACKEND = "nvidia.com/vllm-distributed-executor-backend"
_MAIN_GPU_LIMIT = "podTemplate.spec.containers[main].resources.limits.nvidia.com/gpu"
_STRICT_SEMVER = re.compile(
    r"^[vV]?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
)


def check_component(
    component: ComponentSpec,
    path: str,
    *,
    grove_refusal: str | None,
    dgd_name: str,
    pcs_name: str,
    backend: str | None,
) -> Iterator[FieldError]:
    """Every problem of one (defaulted) component; ``grove_refusal`` is ``None`` on the Grove pathway."""
    yield from _replicas(component, path, grove_refusal)
    yield from _grove_only(component, path, grove_refusal, dgd_name, pcs_name)
    yield from _shared_memory(component, path)
    yield from _epp(component, path)
    yield from _frontend_sidecar(component, path)
    yield from _gpu_memory_service(component, path, grove_refusal, backend)
    yield from _failover(component, path)
    yield from _checkpoint(component, path)
    yield from _power_limit(component, path)
    yield from _images(component, path)
    yield from _template_annotations(component, path)


def runtime_version_warnings(component: SharedComponentSpec, path: str) -> Iterator[FieldError]:
    """Upstream's create-time rule on the main image's tag (supplement §4.4 item 10.13), as warnings.

    Upstream refuses, on create, a main image without a semver tag when there is no
    ``runtimeVersionOverride``. We only warn: upstream's own examples use ``my-tag`` placeholders; see
    docs/decisions.md. A missing main image is an error (:func:`main_image_problems`).
    """
    if not any(main_image_problems(component, path)):
        for problem in _tag_problems(component, path):
            yield FieldError(problem.path, f"{problem.message} (upstream admission refuses this on create)")


def main_image_problems(component: SharedComponentSpec, path: str) -> Iterator[FieldError]:
    """A component's ``main`` container must have an image: the API server refuses a pod without one,
    so the component could never run (upstream refuses it at the DCD, supplement §4.4 item 10.13)."""
    found = main_container(component.pod_template)
    if found is None:
        yield FieldError(
            f"{path}.podTemplate.spec.containers",
            'is required: a container named "main" with a non-empty image (no pod runs without one)',
        )
    elif main_image(component) is None:
        given = found[1].get("image")
        said = "is required" if given is None else f"{show(given)} is not allowed"
        yield FieldError(
            f"{path}.podTemplate.spec.containers[{found[0]}].image",
            f"{said}: the main container must specify a non-empty image",
        )


def runtime_version_problems(
    component: SharedComponentSpec, path: str, *, override_required: bool
) -> Iterator[FieldError]:
    """What upstream's runtime-version rule finds: no ``main`` image, or (when ``override_required``)
    a main image without a semver tag and no ``runtimeVersionOverride``."""
    missing = list(main_image_problems(component, path))
    yield from missing
    if not missing and override_required:
        yield from _tag_problems(component, path)


def _tag_problems(component: SharedComponentSpec, path: str) -> Iterator[FieldError]:
    image = main_image(component)
    if image is None or component.runtime_version_override is not None:
        return
    tag = image_tag(image)
    if tag is None or not _STRICT_SEMVER.fullmatch(tag):
        yield FieldError(
            f"{path}.runtimeVersionOverride",
            f"is required when the main container image {show(image)} has no semantic-version tag",
        )


def main_image(component: SharedComponentSpec) -> str | None:
    """The image of the ``main`` container, ``None`` when there is none (or it is empty)."""
    found = main_container(component.pod_template)
    image = found[1].get("image") if found else None
    return image if isinstance(image, str) and image else None


def _replicas(component: ComponentSpec, path: str, grove_refusal: str | None) -> Iterator[FieldError]:
    replicas, least = component.replicas, component.min_available
    if least is None:
        return
    if grove_refusal is not None:
        yield FieldError(
            f"{path}.minAvailable",
            f"{least} is not allowed: minAvailable is currently supported only for Grove-backed "
            f"DynamoGraphDeployment components ({grove_refusal})",
        )
    elif replicas is not None and replicas != 0 and least > replicas:
        yield FieldError(
            f"{path}.minAvailable",
            f"{least} is more than replicas ({replicas}): minAvailable must be less than or equal to "
            "replicas unless replicas is 0",
        )


def _grove_only(
    component: ComponentSpec, path: str, grove_refusal: str | None, dgd_name: str, pcs_name: str
) -> Iterator[FieldError]:
    if grove_refusal is not None:
        if forces_scaling_group(component):
            yield FieldError(
                f"{path}.experimental.grove.forceScalingGroup", f"true is not allowed: {grove_refusal}"
            )
        return
    # Grove pod names concatenate the PCS, scaling-group and clique names within 45 characters.
    name = component.name.lower()
    if uses_pcsg(component):
        longest = max((r.name for r in roles(component)), key=len)
        length = len(pcs_name) + len(name) + len(longest)
        detail = f'PCS name + PCSG name + longest PodClique name "{longest}"'
    else:
        length, detail = len(pcs_name) + len(name), "PCS name + component name"
    if length > GROVE_POD_NAME_BUDGET:
        yield FieldError(
            f"{path}.name",
            f"combined resource name length {length} exceeds the {GROVE_POD_NAME_BUDGET}-character pod-name "
            f'limit ({detail}); shorten DynamoGraphDeployment name "{dgd_name}" or component name '
            f'"{component.name}"',
        )


def _shared_memory(component: ComponentSpec, path: str) -> Iterator[FieldError]:
    size = component.shared_memory_size
    value = parse_quantity(size) if size is not None else None
    if value is not None and value < 0:
        yield FieldError(f"{path}.sharedMemorySize", f"{show(size)} is negative: must be non-negative")


def _epp(component: ComponentSpec, path: str) -> Iterator[FieldError]:
    config = component.epp_config
    if component.type != "epp":
        if config is not None:
            yield FieldError(
                f"{path}.eppConfig",
                f"eppConfig may only be set when type is epp (type is {show(component.type)})",
            )
        return
    if is_multinode(component):
        yield FieldError(f"{path}.multinode", "EPP component cannot be multinode")
    if component.replicas is not None and component.replicas != 1:
        yield FieldError(
            f"{path}.replicas",
            f"{component.replicas} is not allowed: EPP component must have exactly 1 replica",
        )
    if config is None:
        yield FieldError(f"{path}.eppConfig", "is required for EPP components")
        return
    if (config.config_map_ref is None) == (config.config is None):
        yield FieldError(f"{path}.eppConfig", "exactly one of configMapRef or config must be specified")
    if config.config_map_ref is not None and not config.config_map_ref.name:
        yield FieldError(f"{path}.eppConfig.configMapRef.name", "is required")
    if config.config is not None:
        for key in ("plugins", "schedulingProfiles"):
            if not isinstance(config.config.get(key), list):
                yield FieldError(f"{path}.eppConfig.config.{key}", "is required (a list)")


def _frontend_sidecar(component: ComponentSpec, path: str) -> Iterator[FieldError]:
    sidecar = component.frontend_sidecar
    if sidecar is None:
        return
    if component.pod_template is None:
        yield FieldError(f"{path}.podTemplate.spec.containers", "is required when frontendSidecar is set")
    elif sidecar == "":
        yield FieldError(f"{path}.frontendSidecar", "must not be empty")
    elif sidecar not in {c.get("name") for c in containers(component.pod_template)}:
        names = ", ".join(str(c.get("name")) for c in containers(component.pod_template))
        yield FieldError(
            f"{path}.frontendSidecar",
            f"{show(sidecar)} must match a podTemplate.spec.containers name ({names})",
        )


def _gpu_memory_service(
    component: ComponentSpec, path: str, grove_refusal: str | None, backend: str | None
) -> Iterator[FieldError]:
    experimental = component.experimental
    gms = experimental.gpu_memory_service if experimental else None
    if gms is None:
        return
    where = f"{path}.experimental.gpuMemoryService"
    mode = gms_mode(component)
    # CEL rules of the CRD: each client list belongs to one mode.
    if gms.extra_client_containers and mode != "IntraPod":
        yield FieldError(
            f"{where}.extraClientContainers", "extraClientContainers is only supported with mode=IntraPod"
        )
    if gms.extra_client_pods:
        if mode != "InterPod":
            yield FieldError(
                f"{where}.extraClientPods", "extraClientPods is only supported with mode=InterPod"
            )
        yield FieldError(
            f"{where}.extraClientPods",
            "extraClientPods is reserved for inter-pod GMS and is not implemented yet",
        )
    if mode == "InterPod":
        if grove_refusal is not None:
            yield FieldError(f"{where}.mode", f'"InterPod" is not allowed: {grove_refusal}')
        elif backend != "vllm":
            yield FieldError(
                f"{where}.mode",
                "the inter-pod GMS layout is currently supported only for vLLM "
                f"(detected backend: {backend or '<unset>'})",
            )
    if component.type not in ("worker", "prefill", "decode"):
        yield FieldError(
            where, "GPU memory service is only supported for worker, prefill, or decode components"
        )
    if not _has_main_gpu(component):
        yield FieldError(where, f"GPU memory service requires {_MAIN_GPU_LIMIT} >= 1")
    names = {c.get("name") for c in containers(component.pod_template)}
    seen: set[str] = set()
    for index, name in enumerate(gms.extra_client_containers or []):
        item = f"{where}.extraClientContainers[{index}]"
        if name in seen:
            yield FieldError(item, f"{show(name)} is listed twice")
        elif name not in names:
            yield FieldError(item, f"{show(name)} does not name a container in podTemplate.spec.containers")
        seen.add(name)


def _failover(component: ComponentSpec, path: str) -> Iterator[FieldError]:
    mode = failover_mode(component)
    if mode is None:
        return
    where = f"{path}.experimental.failover"
    gms = gms_mode(component)
    if gms is None:
        yield FieldError(where, f'gpuMemoryService is required when failover mode is "{mode}"')
    elif gms != mode:
        yield FieldError(f"{where}.mode", f'"{mode}" must match gpuMemoryService.mode "{gms}"')
    if mode == "InterPod":
        if not _has_main_gpu(component):
            yield FieldError(where, f"GMS failover requires at least 1 GPU in {_MAIN_GPU_LIMIT}")
        if component.type in ("epp", "frontend", "planner"):
            yield FieldError(where, f'GMS failover is not supported for component type "{component.type}"')


def _has_main_gpu(component: ComponentSpec) -> bool:
    """The main container's GPU limit is at least one."""
    found = main_container(component.pod_template)
    gpus = gpu_limit(found[1]) if found else None
    return gpus is not None and gpus >= 1


def _checkpoint(component: ComponentSpec, path: str) -> Iterator[FieldError]:
    experimental = component.experimental
    checkpoint = experimental.checkpoint if experimental else None
    if checkpoint is None:
        return
    where = f"{path}.experimental.checkpoint"
    if checkpoint.job is not None and checkpoint.checkpoint_ref:
        yield FieldError(f"{where}.job", "checkpoint.job cannot be set when checkpointRef is specified")
    gms = gms_mode(component)
    if checkpoint.job is not None and checkpoint.job.gms_client_containers:
        if gms is None:
            yield FieldError(f"{where}.job.gmsClientContainers", "requires gpuMemoryService to be set")
        elif gms == "InterPod":
            yield FieldError(
                f"{where}.job.gmsClientContainers", "is only supported with gpuMemoryService.mode=IntraPod"
            )
    if checkpoint.enabled and gms == "InterPod":
        yield FieldError(where, "Snapshot with gpuMemoryService.mode=InterPod is unsupported")
    if checkpoint.enabled and failover_mode(component) is not None:
        yield FieldError(where, "Snapshot with active/passive failover is temporarily unsupported")


def _power_limit(component: ComponentSpec, path: str) -> Iterator[FieldError]:
    value = template_annotations(component.pod_template).get(POWER_LIMIT)
    if value is None:
        return
    where = f"{path}.podTemplate.metadata.annotations[{POWER_LIMIT}]"
    if not isinstance(value, str) or not value.isdigit():
        yield FieldError(where, f"{show(value)} must be a decimal integer")
    elif int(value) <= 0:
        yield FieldError(where, f"{show(value)} must be greater than zero")
    if gms_mode(component) is not None:
        yield FieldError(
            f"{path}.experimental.gpuMemoryService",
            f'cannot be combined with annotation "{POWER_LIMIT}": power-aware planning does not support '
            "DRA-backed device allocation",
        )


def _images(component: ComponentSpec, path: str) -> Iterator[FieldError]:
    """Every container but ``main`` needs an image (CRD rule; ``main`` is checked as a warning)."""
    where = f"{path}.podTemplate.spec"
    spec = (component.pod_template or {}).get("spec")
    for field, kind in (("containers", "sidecar containers"), ("initContainers", "init containers")):
        items = spec.get(field) if isinstance(spec, dict) else None
        for index, container in enumerate(items if isinstance(items, list) else []):
            image = container.get("image") if isinstance(container, dict) else None
            is_main = (
                field == "containers"
                and isinstance(container, dict)
                and container.get("name") == MAIN_CONTAINER
            )
            if not is_main and not (isinstance(image, str) and image):
                yield FieldError(
                    f"{where}.{field}[{index}].image", f"is required: {kind} must specify a non-empty image"
                )


def _template_annotations(component: ComponentSpec, path: str) -> Iterator[FieldError]:
    value = template_annotations(component.pod_template).get(EXECUTOR_BACKEND)
    if value is not None and (not isinstance(value, str) or value.lower() not in ("mp", "ray")):
        yield FieldError(
            f"{path}.podTemplate.metadata.annotations[{EXECUTOR_BACKEND}]",
            f'{show(value)} is not allowed: must be "mp" or "ray"',
        )
