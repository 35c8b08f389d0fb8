"""A rendered pod spec in the shape Go's encoder gives it (podspec §15 item 3)."""

from __future__ import annotations

from collections.abc import Sequence

from dgd.domain.pod_merge import JSON

#: Field order of Kubernetes' Container and PodSpec types, which Go's encoder follows.
_CONTAINER_ORDER = [
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
]
_POD_ORDER = [
    "volumes",
    "initContainers",
    "containers",
    "ephemeralContainers",
    "restartPolicy",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "nodeSelector",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "shareProcessNamespace",
    "securityContext",
    "imagePullSecrets",
    "hostname",
    "subdomain",
    "affinity",
    "schedulerName",
    "tolerations",
    "hostAliases",
    "priorityClassName",
    "priority",
    "dnsConfig",
    "readinessGates",
    "runtimeClassName",
    "enableServiceLinks",
    "preemptionPolicy",
    "overhead",
    "topologySpreadConstraints",
    "setHostnameAsFQDN",
    "os",
    "hostUsers",
    "schedulingGates",
    "resourceClaims",
    "resources",
]


def _ordered(value: JSON, order: Sequence[str]) -> JSON:
    rank = {key: index for index, key in enumerate(order)}
    return dict(sorted(value.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])))


def go_shape(pod: JSON) -> JSON:
    """How Go serializes a pod spec: its fields in type order, and every container carries
    ``resources`` (``{}`` when empty) but no empty ``env``."""
    for key in ("initContainers", "containers"):
        containers = []
        for container in pod.get(key) or []:
            container.setdefault("resources", {})
            if not container.get("env"):
                container.pop("env", None)
            containers.append(_ordered(container, _CONTAINER_ORDER))
        if key in pod:
            pod[key] = containers
    return _ordered(pod, _POD_ORDER)
