"""The pod spec of one role of one component (podspec §3), shared by both pathways.

``render_pod_spec`` follows the upstream algorithm step by step, in its order, over raw JSON: the
component's defaults (§4), the user's ``main`` container merged over them (§5.2), infra env, the
backend's changes (§7), the user's pod-level fields (§5.4), security context, service account,
compilation cache, shared memory, sidecars and volume order. The component is expected to have its
graph-level defaults applied already (``template_defaults.apply_template_defaults``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from functools import partial
from urllib.parse import urlsplit

from dgd.domain.metadata_keys import (
    DISABLE_PULL_SECRET_DISCOVERY,
    DISCOVERY_BACKEND,
    KUBE_DISCOVERY_MODE,
    WORKER_HASH,
)
from dgd.domain.naming import dynamo_namespace
from dgd.domain.pod_merge import JSON, merge, merge_env, value_env, without_nulls
from dgd.domain.quantity import canonical_quantity, is_zero_quantity
from dgd.domain.render import component_defaults as defaults
from dgd.domain.render.backends import Backend, RenderRole, update_container, update_pod_spec
from dgd.domain.render.errors import RenderError
from dgd.domain.render.failover import apply_intra_pod_failover, uses_intra_pod_failover
from dgd.domain.render.gms import apply_intra_pod_gms, gms_layout, uses_intra_pod_gms
from dgd.domain.render.gpu_count import ClaimTemplates, container_gpus
from dgd.domain.render.multinode_hosts import Deployer
from dgd.domain.render.pod_serialization import go_shape
from dgd.domain.render.template_defaults import template_metadata
from dgd.domain.roles import node_count
from dgd.messages.component import WORKER_TYPES, ComponentSpec
from dgd.messages.config import OperatorConfig

SHARED_MEMORY, SHM_PATH, DEFAULT_SHM = "shared-memory", "/dev/shm", "8Gi"
VLLM_CACHE_PATH = "/root/.cache/vllm"
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")

#: Registry host -> names of the pull Secrets for it in the namespace (``None``: no discovery).
PullSecrets = Mapping[str, Sequence[str]]


def discovery_backend(pod_template: JSON, config: OperatorConfig) -> str:
    """The effective discovery backend: the pod-template annotation, else the operator config."""
    return template_metadata(pod_template, "annotations").get(DISCOVERY_BACKEND) or config.discovery.backend


def render_pod_spec(
    component: ComponentSpec,
    *,
    role: RenderRole,
    backend: Backend,
    deployer: Deployer,
    namespace: str,
    parent_dgd_name: str,
    config: OperatorConfig,
    pull_secrets: PullSecrets | None = None,
    claim_templates: ClaimTemplates | None = None,
) -> JSON:
    """The pod spec of ``component`` in ``role`` (``main`` single node, ``leader``/``worker`` multinode).

    ``claim_templates`` are the namespace's ResourceClaimTemplates by name: a multinode launch counts
    the GPUs of a main container that claims them through DRA (podspec §2)."""
    template: JSON = without_nulls(copy.deepcopy(component.pod_template or {}))
    user_spec: JSON = dict(template.get("spec") or {})
    user_containers = [c for c in user_spec.get("containers") or [] if isinstance(c, dict)]
    annotations = template_metadata(template, "annotations")
    nodes = node_count(component)

    # Context (§2): Dynamo namespace, discovery, and the env every Dynamo container starts from.
    dyn_ns, discovery, common = _context(component, template, namespace, parent_dgd_name, config)

    # Steps 3-7: the main container before the backend's changes.
    main = _main_container(component, template, user_containers, common, dyn_ns, namespace, parent_dgd_name)
    cache_path = _cache_mount_path(component, backend)
    if cache_path is not None and component.compilation_cache is not None:
        main = _with_cache_mount(main, component.compilation_cache.pvc_name, cache_path)
    _check_mounts(main)
    main["env"] = merge_env(_infra_env(config), main.get("env") or [])
    mounts_before_backend = list(main.get("volumeMounts") or [])

    # Step 8: the backend's changes to the main container.
    main = update_container(
        backend,
        main,
        role=role,
        nodes=nodes,
        service=component.name,
        deployer=deployer,
        annotations=annotations,
        cache_mount_path=component.compilation_cache.mount_path if component.compilation_cache else None,
        mpi_secret=config.mpi.ssh_secret_name,
        count_gpus=partial(
            container_gpus, pod_claims=user_spec.get("resourceClaims"), templates=claim_templates
        ),
        gms_layout=gms_layout(component),
    )

    # Steps 10-15: pod defaults and the user's pod fields, then shared memory as the last volume.
    pod = _pod_fields(component, user_spec, parent_dgd_name, discovery, cache_path)
    pod, main = _with_shared_memory(pod, main, component.shared_memory_size)

    # Steps 16-17: containers are main then the user's sidecars; a frontend sidecar gets frontend defaults.
    sidecars = [copy.deepcopy(c) for c in user_containers if c.get("name") != defaults.MAIN_CONTAINER]
    if component.frontend_sidecar:
        frontend = component.frontend_sidecar
        context = (mounts_before_backend, common, dyn_ns, parent_dgd_name, namespace, config)
        sidecars = _frontend_sidecar(sidecars, frontend, *context)
    pod["containers"] = [main, *sidecars]

    # Steps 18-20: backend pod changes, volume order, image pull secrets.
    pod = update_pod_spec(
        backend,
        pod,
        role=role,
        nodes=nodes,
        service=component.name,
        deployer=deployer,
        parent_dgd_name=parent_dgd_name,
        mpi_secret=config.mpi.ssh_secret_name,
    )
    pod = _ordered(pod)
    if pull_secrets is not None and annotations.get(DISABLE_PULL_SECRET_DISCOVERY) != "true":
        pod = _with_pull_secrets(pod, pull_secrets)
    return go_shape(_with_gpu_sharing(pod, component, backend, nodes, parent_dgd_name))


def _with_gpu_sharing(pod: JSON, component: ComponentSpec, backend: Backend, nodes: int, dgd: str) -> JSON:
    """Step 21: the GPU memory service inside the pod, then the failover engines cloned from main."""
    if uses_intra_pod_gms(component):
        pod = apply_intra_pod_gms(pod, component, dgd_name=dgd)
    if uses_intra_pod_failover(component):
        pod = apply_intra_pod_failover(pod, component, backend=backend, nodes=nodes)
    return pod


def _context(
    component: ComponentSpec, template: JSON, namespace: str, parent_dgd_name: str, config: OperatorConfig
) -> tuple[str, str, list[JSON]]:
    """The Dynamo namespace, the discovery backend and the env every Dynamo container starts from."""
    global_namespace = bool(component.global_dynamo_namespace)
    dyn_ns = dynamo_namespace(namespace, parent_dgd_name, global_namespace=global_namespace)
    discovery = discovery_backend(template, config)
    common = defaults.common_env(
        component.type or "",
        dynamo_namespace=dyn_ns,
        parent_dgd_name=parent_dgd_name,
        namespace=namespace,
        discovery_backend=discovery,
        discovery_mode=template_metadata(template, "annotations").get(KUBE_DISCOVERY_MODE) or "pod",
    )
    return dyn_ns, discovery, common


def _ordered(pod: JSON) -> JSON:
    """Step 19: the volumes in the order upstream writes them (none: no ``volumes`` key)."""
    volumes = _ordered_volumes(pod["containers"][0], pod.get("volumes") or [])
    out = {**pod, "volumes": volumes}
    if not volumes:
        del out["volumes"]
    return out


def _main_container(
    component: ComponentSpec,
    template: JSON,
    user_containers: list[JSON],
    common: list[JSON],
    dyn_ns: str,
    namespace: str,
    parent_dgd_name: str,
) -> JSON:
    """Steps 3-4: the type's base container, then the user's main container over it."""
    component_type = component.type or ""
    labels = template_metadata(template, "labels")
    base = defaults.base_container(
        component_type,
        env=common,
        dynamo_namespace=dyn_ns,
        worker_hash=labels.get(WORKER_HASH) if component_type in WORKER_TYPES else None,
        dgd_name=parent_dgd_name,
        namespace=namespace,
    )
    user_main = next((c for c in user_containers if c.get("name") == defaults.MAIN_CONTAINER), None)
    return _merge_container(base, user_main, defaults.MAIN_CONTAINER) if user_main is not None else base


def _check_mounts(main: JSON) -> None:
    """Step 6: every mount of the main container names its volume and path."""
    for index, mount in enumerate(main.get("volumeMounts") or []):
        if not mount.get("name") or not mount.get("mountPath"):
            raise RenderError(
                f"podTemplate.spec.containers[main].volumeMounts[{index}]", "name and mountPath are required"
            )


def _pod_fields(
    component: ComponentSpec, user_spec: JSON, parent_dgd_name: str, discovery: str, cache_path: str | None
) -> JSON:
    """Steps 10-14: pod defaults, the user's pod fields, security context, service account, cache PVC."""
    pod = merge(
        defaults.base_pod_spec(
            component.type or "",
            dgd_name=parent_dgd_name,
            epp_config_map=_epp_ref(component, "name"),
            epp_config_key=_epp_ref(component, "key"),
        ),
        {k: v for k, v in user_spec.items() if k != "containers"},
    )
    if user_spec.get("securityContext") is None:
        pod["securityContext"] = {"fsGroup": defaults.DEFAULT_FS_GROUP}
    if discovery == "kubernetes" and not pod.get("serviceAccountName"):
        pod["serviceAccountName"] = f"{parent_dgd_name}-k8s-service-discovery"
    if cache_path is not None and component.compilation_cache is not None:
        pod = _with_cache_volume(pod, component.compilation_cache.pvc_name)
    return pod


def _with_shared_memory(pod: JSON, main: JSON, size: str | int | None) -> tuple[JSON, JSON]:
    """Step 15: shared memory as the last volume and the main container's last mount (none for ``0``)."""
    if size is not None and is_zero_quantity(size):
        return pod, main
    size_text = DEFAULT_SHM if size is None else canonical_quantity(size) or str(size)
    volumes = [v for v in pod.get("volumes") or [] if v.get("name") != SHARED_MEMORY]
    volumes.append({"name": SHARED_MEMORY, "emptyDir": {"medium": "Memory", "sizeLimit": size_text}})
    mounts = [
        m
        for m in main.get("volumeMounts") or []
        if m.get("name") != SHARED_MEMORY and m.get("mountPath") != SHM_PATH
    ]
    return {**pod, "volumes": volumes}, {
        **main,
        "volumeMounts": [*mounts, {"name": SHARED_MEMORY, "mountPath": SHM_PATH}],
    }


def _merge_container(base: JSON, user: JSON, name: str) -> JSON:
    """The user's container over the defaults (§5.2): env merged by name, probes replaced whole."""
    merged = merge(base, {**user, "name": name})
    merged["env"] = merge_env(base.get("env") or [], user.get("env") or [])
    for probe in _PROBES:
        if user.get(probe) is not None:
            merged[probe] = copy.deepcopy(user[probe])
    return merged


def _infra_env(config: OperatorConfig) -> list[JSON]:
    infra = config.infrastructure
    pairs = (
        ("NATS_SERVER", infra.nats_address),
        ("ETCD_ENDPOINTS", infra.etcd_address),
        ("MODEL_EXPRESS_URL", infra.model_express_url),
        ("PROMETHEUS_ENDPOINT", infra.prometheus_endpoint),
    )
    return [value_env(name, value) for name, value in pairs if value]


def _epp_ref(component: ComponentSpec, field: str) -> str | None:
    ref = component.epp_config.config_map_ref if component.epp_config else None
    if ref is None:
        return None
    return ref.name if field == "name" else ref.key


def _cache_mount_path(component: ComponentSpec, backend: Backend) -> str | None:
    cache = component.compilation_cache
    if cache is None:
        return None
    if cache.mount_path:
        return cache.mount_path
    if backend == "vllm":
        return VLLM_CACHE_PATH
    raise RenderError(
        "compilationCache.mountPath",
        f"is required: backend {backend!r} has no default compilation cache path (only vllm has one)",
    )


def _with_cache_mount(container: JSON, pvc: str, path: str) -> JSON:
    mounts = [dict(m) for m in container.get("volumeMounts") or []]
    for mount in mounts:
        if mount.get("name") != pvc and mount.get("mountPath") == path:
            raise RenderError(
                "compilationCache.mountPath",
                f"{path!r} is already the mount path of volume {mount.get('name')!r}",
            )
    named = [m for m in mounts if m.get("name") == pvc]
    for mount in named:
        if mount.get("readOnly"):
            raise RenderError(
                "compilationCache.pvcName", f"the compilation cache mount {pvc!r} must not be read-only"
            )
        if not mount.get("mountPath"):
            mount["mountPath"] = path
    if not named:
        mounts.append({"name": pvc, "mountPath": path})
    return {**container, "volumeMounts": mounts}


def _with_cache_volume(pod: JSON, pvc: str) -> JSON:
    volumes = list(pod.get("volumes") or [])
    declared = next((v for v in volumes if v.get("name") == pvc), None)
    if declared is None:
        volumes.append({"name": pvc, "persistentVolumeClaim": {"claimName": pvc}})
        return {**pod, "volumes": volumes}
    claim = declared.get("persistentVolumeClaim") or {}
    if claim.get("claimName") != pvc or claim.get("readOnly"):
        raise RenderError(
            "compilationCache.pvcName",
            f"volume {pvc!r} must be a writable persistentVolumeClaim of claim {pvc!r}",
        )
    return pod


def _frontend_sidecar(
    sidecars: list[JSON],
    name: str,
    main_mounts: list[JSON],
    common: list[JSON],
    dyn_ns: str,
    dgd_name: str,
    namespace: str,
    config: OperatorConfig,
) -> list[JSON]:
    """The named sidecar with the frontend's defaults and the main container's mounts (podspec §10)."""
    index = next((i for i, c in enumerate(sidecars) if c.get("name") == name), None)
    if index is None:
        raise RenderError("frontendSidecar", f"{name!r} does not name a container of the pod template")
    env = [value_env("DYN_COMPONENT", "frontend") if e["name"] == "DYN_COMPONENT" else e for e in common]
    base = defaults.base_container(
        "frontend", env=env, dynamo_namespace=dyn_ns, worker_hash=None, dgd_name=dgd_name, namespace=namespace
    )
    sidecar = _merge_container(base, sidecars[index], name)
    sidecar["env"] = merge_env(_infra_env(config), sidecar["env"])
    present = {m.get("name") for m in sidecar.get("volumeMounts") or []}
    extra = [copy.deepcopy(m) for m in main_mounts if m.get("name") not in present]
    if extra:
        sidecar["volumeMounts"] = [*(sidecar.get("volumeMounts") or []), *extra]
    return [*sidecars[:index], sidecar, *sidecars[index + 1 :]]


def _ordered_volumes(main: JSON, volumes: list[JSON]) -> list[JSON]:
    """Volumes in main-container mount order (a mount without a volume gets its PVC), then the rest."""
    by_name = {v.get("name"): v for v in volumes}
    ordered: list[JSON] = []
    seen: set[str] = set()
    for mount in main.get("volumeMounts") or []:
        name = str(mount.get("name"))
        if name in seen:
            continue
        seen.add(name)
        ordered.append(by_name.get(name) or {"name": name, "persistentVolumeClaim": {"claimName": name}})
    ordered += [v for v in volumes if v.get("name") not in seen]
    return ordered


def registry_host(image: str) -> str:
    """The registry part of an image reference, as upstream reads it (``registry.example``)."""
    return urlsplit(image if "://" in image else f"dummy://{image}").netloc


def _with_pull_secrets(pod: JSON, pull_secrets: PullSecrets) -> JSON:
    entries = list(pod.get("imagePullSecrets") or [])
    seen = {e.get("name") for e in entries}
    for container in pod.get("containers") or []:
        image = container.get("image")
        if not image:
            continue
        for name in sorted(set(pull_secrets.get(registry_host(str(image)), ()))):
            if name not in seen:
                seen.add(name)
                entries.append({"name": name})
    return {**pod, "imagePullSecrets": entries} if entries else pod
