"""What the simulated API server checks a custom resource against: its CRD schema, as a real one does.

The CRDs are generated from the same Structs whose schema ``dgd.domain.admission.schema.check``
walks for ``validate``, so the simulated cluster refuses exactly what ``validate`` reports (an
unknown field in a pod template, a quantity Kubernetes' grammar refuses), before any webhook runs.
"""

from __future__ import annotations

from dgd.domain.admission.schema import check
from dgd.messages.base import JSONObject, Model


def crd_schema_check(model: type[Model], document: JSONObject) -> list[tuple[str, str]]:
    """(field path, message) of every problem of ``document`` against ``model``'s schema."""
    return [(error.path or "<root>", error.message) for error in check(document, model)]
