"""Objects the operator's model refuses, for the ``poison`` record (a CRD newer or looser than our
Structs would admit them): one spec per kind the operator decodes into a Struct, with a field of the
wrong type."""

from __future__ import annotations

from typing import Any

from dgd.cluster.resources import Resource
from dgd.messages.base import JSONObject

#: Per kind: a spec its model refuses.
POISONED_SPECS: dict[str, JSONObject] = {
    "DynamoGraphDeployment": {"components": "poison"},
    "DynamoGraphDeploymentScalingAdapter": {"replicas": -1, "dgdRef": {"name": "x", "componentName": "x"}},
    "DynamoComponentDeployment": {"replicas": "poison"},
    "PodCliqueSet": {"replicas": "poison", "template": {"cliques": []}},
    "PodClique": {"replicas": "poison"},
    "PodCliqueScalingGroup": {"replicas": "poison"},
}


def poisoned(resource: Resource[Any], namespace: str, name: str) -> JSONObject:
    """An object of ``resource`` the operator's model refuses (``POISONED_SPECS``)."""
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": POISONED_SPECS[resource.kind],
    }


#: The kinds a ``poison`` record may name.
POISONABLE = frozenset(POISONED_SPECS)
