"""The Kubernetes ``PodTemplateSpec`` as raw JSON that carries its schema.

A pod template stays a plain JSON object in the models (nothing unknown to us is dropped, and the
renderer merges it as JSON), but its schema is Kubernetes' own: the committed structural schema of
the pinned Kubernetes release (``schemas/`` ``POD_TEMPLATE_FILE``, regenerated from a real API server's
``/openapi/v3`` by ``python -m tests.real.pod_template_schema``). ``msgspec.json.schema`` puts it where
the field is, so the CRDs, ``validate`` and the simulated API server check the same fields, lists
and quantities as a real API server does.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Annotated, Any

import msgspec

#: The folder of the committed schemas, inside this package.
SCHEMA_DIR = "schemas"
#: The schema of ``io.k8s.api.core.v1.PodTemplateSpec`` of the pinned Kubernetes release.
POD_TEMPLATE_FILE = "pod_template_spec.v1.36.json"


def pod_template_schema() -> dict[str, Any]:
    """A fresh copy of the committed structural ``PodTemplateSpec`` schema."""
    text = resources.files("dgd.messages").joinpath(SCHEMA_DIR, POD_TEMPLATE_FILE).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


#: A pod template: raw JSON, described (and checked at the edge) by Kubernetes' own schema.
PodTemplateSpec = Annotated[dict[str, Any], msgspec.Meta(extra_json_schema=pod_template_schema())]
