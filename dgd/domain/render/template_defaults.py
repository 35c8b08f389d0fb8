"""Graph-level values every component's pod template inherits (podspec §3.1, §2 backend framework).

Applied to a copy of each component before its pod spec is rendered (Grove) and baked into each
generated DCD (Component pathway). Component values always win over graph-level ones.
"""

from __future__ import annotations

from typing import Any

from msgspec import structs

from dgd.domain.metadata_keys import PROPAGATED_ANNOTATIONS
from dgd.domain.pod_merge import JSON, merge_env
from dgd.domain.podtemplate import main_container, with_main_container
from dgd.domain.render.backends import Backend
from dgd.domain.render.command_line import DetectionError, detect_framework
from dgd.domain.render.errors import RenderError
from dgd.messages.base import copy_json
from dgd.messages.component import WORKER_TYPES, ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment


def template_metadata(pod_template: JSON, key: str) -> dict[str, str]:
    """``labels`` or ``annotations`` of a pod template (empty when absent)."""
    metadata = pod_template.get("metadata")
    values = metadata.get(key) if isinstance(metadata, dict) else None
    return {str(k): str(v) for k, v in values.items()} if isinstance(values, dict) else {}


def with_template_metadata(pod_template: JSON, key: str, values: dict[str, str]) -> JSON:
    """A copy of the pod template whose ``labels``/``annotations`` are ``values`` (dropped when empty).

    Only the top level and ``metadata`` are new: the rest (its ``spec``) is the template's own, so a
    caller that changes it must own that template (every caller renders from a fresh copy)."""
    out = dict(pod_template)
    metadata = dict(out.get("metadata") or {})
    if values:
        metadata[key] = dict(values)
    else:
        metadata.pop(key, None)
    if metadata:
        out["metadata"] = metadata
    else:
        out.pop("metadata", None)
    return out


def apply_template_defaults(component: ComponentSpec, dgd: DynamoGraphDeployment) -> ComponentSpec:
    """The component with the DGD's env, propagated annotations, and spec labels/annotations merged in."""
    template: JSON = copy_json(component.pod_template or {})
    # Graph env goes under the main container's env (created first in the list if missing).
    if dgd.spec.env:
        spec, main = with_main_container(template)
        main["env"] = merge_env(dgd.spec.env, main.get("env") or [])
        template["spec"] = spec
    # Low-priority metadata: propagated DGD annotations, then the graph's annotations and labels.
    labels = template_metadata(template, "labels")
    for key, value in (dgd.spec.labels or {}).items():
        labels.setdefault(key, value)
    template = with_template_metadata(template, "annotations", inherited_annotations(component, dgd))
    template = with_template_metadata(template, "labels", labels)
    return structs.replace(component, pod_template=template or None)


def inherited_annotations(component: ComponentSpec, dgd: DynamoGraphDeployment) -> dict[str, str]:
    """The pod-template annotations ``apply_template_defaults`` gives the component: its own, then,
    where it sets none, the DGD annotations upstream propagates and the graph's ``spec.annotations``."""
    annotations = template_metadata(component.pod_template or {}, "annotations")
    graph_annotations = dgd.metadata.annotations or {}
    for key in PROPAGATED_ANNOTATIONS:
        if key in graph_annotations:
            annotations.setdefault(key, graph_annotations[key])
    for key, value in (dgd.spec.annotations or {}).items():
        annotations.setdefault(key, value)
    return annotations


def _detected(component: ComponentSpec, path: str) -> str | None:
    found = main_container(component.pod_template)
    if found is None:
        return None
    try:
        return detect_framework(found[1])
    except DetectionError as exc:
        raise RenderError(f"{path}.podTemplate.spec.containers[{found[0]}]", str(exc)) from exc


def component_backend(component: ComponentSpec, explicit: str | None, path: str) -> Backend:
    """The backend a component's pod is rendered for (podspec §2).

    Detected beats explicit (they must agree), an ambiguous command line is an error only when
    nothing explicit decides, and non-workers never get backend processing.
    """
    if component.type not in WORKER_TYPES:
        return "noop"
    try:
        detected = _detected(component, path)
    except RenderError:
        if not explicit:
            raise
        detected = None
    if detected is not None and explicit and detected != explicit:
        raise RenderError(
            f"{path}.podTemplate",
            f'the command runs dynamo.{detected}, but spec.backendFramework is "{explicit}"',
        )
    chosen: Any = detected or explicit or "noop"
    backend: Backend = chosen
    return backend


def graph_backend(dgd: DynamoGraphDeployment) -> str | None:
    """The DCD ``backendFramework``: the DGD's, else the one framework all workers run (podspec §2)."""
    if dgd.spec.backend_framework:
        return dgd.spec.backend_framework
    found: dict[str, str] = {}
    for index, component in enumerate(dgd.spec.components or []):
        if component.type in WORKER_TYPES:
            detected = _detected(component, f"spec.components[{index}]")
            if detected is not None:
                found.setdefault(detected, component.name)
    if len(found) > 1:
        which = ", ".join(f"{name} runs {fw}" for fw, name in found.items())
        raise RenderError("spec.backendFramework", f"workers run different backend frameworks ({which})")
    return next(iter(found), None)
