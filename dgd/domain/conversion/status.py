"""One service's replica status between the versions (supplement §1.9, and §1.11 for DCDs).

v1alpha1 names the workload twice, ``componentName`` and ``componentNames``; v1beta1 keeps only the
list. A ``componentName`` that is not the last entry of the list cannot be derived back, so the
conversion to v1beta1 saves it for the ``…-status`` annotation, and the way back restores it while
the list still reads as it did.
"""

from __future__ import annotations

import copy
from typing import Any


def component_status_of(service: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The v1beta1 component status for a v1alpha1 service status, and what must be saved of it.

    ``componentNames`` is the v1alpha1 list, or ``[componentName]`` when the list is empty.
    """
    component = {key: copy.deepcopy(value) for key, value in service.items() if key != "componentName"}
    names = list(service.get("componentNames") or [])
    single = service.get("componentName") or ""
    component.pop("componentNames", None)
    if names or single:
        component["componentNames"] = names or [single]
    if (names[-1] if names else "") != single:
        return component, {"componentName": single, "componentNames": names}
    return component, None


def service_status_of(component: dict[str, Any], saved: Any) -> dict[str, Any]:
    """The v1alpha1 service status for a v1beta1 component status.

    ``componentName`` is the last of ``componentNames``. A saved pair (from ``component_status_of``)
    wins while the live list still equals the list it projects to.
    """
    service = copy.deepcopy(component)
    names = list(component.get("componentNames") or [])
    service["componentName"] = names[-1] if names else ""
    if isinstance(saved, dict) and isinstance(saved.get("componentName"), str):
        saved_names = list(saved.get("componentNames") or [])
        projection = saved_names or ([saved["componentName"]] if saved["componentName"] else [])
        if projection == names:
            service["componentName"] = saved["componentName"]
            service.pop("componentNames", None)
            if saved_names:
                service["componentNames"] = saved_names
    return service
