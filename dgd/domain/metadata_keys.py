"""Label and annotation keys the operator reads and stamps (dgd-domain §15.3–§15.4)."""

from __future__ import annotations

# Labels stamped on children and pods.
SELECTOR = "nvidia.com/selector"
GRAPH_NAME = "nvidia.com/dynamo-graph-deployment-name"
COMPONENT = "nvidia.com/dynamo-component"
COMPONENT_TYPE = "nvidia.com/dynamo-component-type"
SUB_COMPONENT_TYPE = "nvidia.com/dynamo-sub-component-type"
COMPONENT_CLASS = "nvidia.com/dynamo-component-class"
DYNAMO_NAMESPACE = "nvidia.com/dynamo-namespace"
WORKER_HASH = "nvidia.com/dynamo-worker-hash"
BASE_MODEL_HASH = "nvidia.com/dynamo-base-model-hash"
METRICS_ENABLED = "nvidia.com/metrics-enabled"
DISCOVERY_BACKEND = "nvidia.com/dynamo-discovery-backend"
DISCOVERY_ENABLED = "nvidia.com/dynamo-discovery-enabled"

# Annotations a user sets on the DGD (metadata) or on a pod template.
ENABLE_METRICS = "nvidia.com/enable-metrics"
KUBE_DISCOVERY_MODE = "nvidia.com/dynamo-kube-discovery-mode"
ORIGIN_VERSION = "nvidia.com/dynamo-operator-origin-version"
VLLM_EXECUTOR_BACKEND = "nvidia.com/vllm-distributed-executor-backend"
GROVE_UPDATE_STRATEGY = "nvidia.com/grove-update-strategy"
DISABLE_PULL_SECRET_DISCOVERY = "nvidia.com/disable-image-pull-secret-discovery"
RESTART_AT = "nvidia.com/restartAt"
BASE_MODEL = "nvidia.com/dynamo-base-model"
TOPOLOGY_SOURCE_KEYS = ("nvidia.com/topology-label-key", "nvidia.com/topology-cluster-topology-name")

# Conversion preservation.
DGD_SPEC_PAYLOAD = "nvidia.com/dgd-spec"
DCD_SPEC_PAYLOAD = "nvidia.com/dcd-spec"
DCD_STATUS_PAYLOAD = "nvidia.com/dcd-status"

#: DGD metadata annotations copied into every pod template as low-priority defaults (podspec §3.1).
PROPAGATED_ANNOTATIONS = (
    ENABLE_METRICS,
    DISCOVERY_BACKEND,
    KUBE_DISCOVERY_MODE,
    ORIGIN_VERSION,
    VLLM_EXECUTOR_BACKEND,
)

#: The longest value Kubernetes accepts for a label, and for most object names.
MAX_LABEL_VALUE = 63
