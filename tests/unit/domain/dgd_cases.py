"""Small DGD documents shared by the admission tests: a frontend and a one-GPU vLLM worker."""

from __future__ import annotations

from typing import Any

from dgd.messages.dgd import API_VERSION


def runtime_image(tag: str = "1.5.0") -> str:
    """A Dynamo vLLM runtime image with ``tag``."""
    return f"nvcr.io/nvidia/ai-dynamo/vllm-runtime:{tag}"


def small_dgd(
    *, annotations: dict[str, str] | None = None, namespace: str | None = None, **worker: Any
) -> dict[str, Any]:
    """A small valid v1beta1 DGD (a frontend and a one-GPU worker); ``worker`` sets worker fields."""
    metadata: dict[str, Any] = {"name": "demo"}
    if namespace is not None:
        metadata["namespace"] = namespace
    if annotations is not None:
        metadata["annotations"] = annotations
    main = {"name": "main", "image": runtime_image(), "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return {
        "apiVersion": API_VERSION,
        "kind": "DynamoGraphDeployment",
        "metadata": metadata,
        "spec": {
            "backendFramework": "vllm",
            "components": [
                {
                    "name": "Frontend",
                    "type": "frontend",
                    "podTemplate": {"spec": {"containers": [{"name": "main", "image": runtime_image()}]}},
                },
                {
                    "name": "Worker",
                    "type": "worker",
                    "podTemplate": {"spec": {"containers": [main]}},
                    **worker,
                },
            ],
        },
    }
