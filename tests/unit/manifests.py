"""Small DGDs and components shared by tests: a DGD as YAML text (one frontend on a vLLM runtime image),
and endpoint-picker components as JSON."""

from __future__ import annotations

FRONTEND_DGD = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: demo
spec:
  backendFramework: vllm
  components:
    - name: Frontend
      type: frontend
      podTemplate:
        spec:
          containers:
            - name: main
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0
"""

#: An endpoint picker with an inline configuration, as upstream's gaie example has one.
EPP_INLINE = {
    "name": "Epp",
    "type": "epp",
    "replicas": 1,
    "eppConfig": {
        "config": {
            "plugins": [{"type": "max-score-picker"}],
            "schedulingProfiles": [{"name": "default", "plugins": [{"pluginRef": "max-score-picker"}]}],
        }
    },
    "podTemplate": {"spec": {"containers": [{"name": "main", "image": "epp:1.5.0"}]}},
}
#: An endpoint picker reading a ConfigMap of the user's.
EPP_CONFIG_MAP_REF = {
    "name": "epp",
    "type": "epp",
    "eppConfig": {"configMapRef": {"name": "c", "key": "k"}},
    "podTemplate": {"spec": {"containers": [{"name": "main", "image": "epp:1.4.0"}]}},
}
