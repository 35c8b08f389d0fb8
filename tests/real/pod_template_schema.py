"""The structural schema of a Kubernetes ``PodTemplateSpec``, made from a real API server's OpenAPI v3.

``python -m tests.real.pod_template_schema --kubeconfig FILE`` reads ``/openapi/v3/api/v1`` from the
server (with the control plane's own kubectl) and writes ``dgd/messages/schemas/`` ``POD_TEMPLATE_FILE``;
the real-server tier regenerates it from its running server and fails when the committed file differs.

``structural_pod_template`` converts the way controller-gen embeds a core type in a CRD: every
``$ref`` resolved in place (the field's own description wins over its type's), ``Quantity`` and
``IntOrString`` as the int-or-string forms, ``ObjectMeta`` as the five fields a template may carry,
and only what a CRD schema may hold: ``x-kubernetes-patch-*``, ``x-kubernetes-unions`` and the GVK
markers dropped, ``enum`` dropped (an enum there refuses values Kubernetes accepts, as ``""`` for a
toleration's ``effect``), and defaults dropped except where a list-map key needs one (the API server
refuses a map key that is neither required nor defaulted). A key it does not know fails, so a new
Kubernetes release that says something new is looked at instead of being dropped silently.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from dgd.messages.base import QUANTITY_PATTERN
from dgd.messages.pod_template import POD_TEMPLATE_FILE, SCHEMA_DIR

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "dgd" / "messages" / SCHEMA_DIR / POD_TEMPLATE_FILE

_PREFIX = "#/components/schemas/"
_CORE = "io.k8s.api.core.v1."
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

#: The ObjectMeta fields a pod template keeps (controller-gen's embedded ObjectMeta).
_TEMPLATE_META = ("annotations", "finalizers", "labels", "name", "namespace")

#: Kept as they are; every other key is either dropped (``_DROPPED``) or an error.
_KEPT = ("description", "type", "format", "required", "x-kubernetes-list-type", "x-kubernetes-map-type")
_DROPPED = (
    "enum",
    "default",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-unions",
    "x-kubernetes-group-version-kind",
)

JSON = dict[str, Any]


class UnexpectedOpenAPI(ValueError):
    """The OpenAPI document says something this conversion does not know how to carry into a CRD."""


def structural_pod_template(openapi: JSON) -> JSON:
    """The structural ``PodTemplateSpec`` schema of an ``/openapi/v3/api/v1`` document, keys sorted."""
    schemas: JSON = openapi["components"]["schemas"]
    return _Converter(schemas).reference(f"{_CORE}PodTemplateSpec", {}, frozenset(), frozenset())


class _Converter:
    def __init__(self, schemas: JSON) -> None:
        self.schemas = schemas

    def reference(self, name: str, outer: JSON, seen: frozenset[str], keys: frozenset[str]) -> JSON:
        """The schema of the named type where a field refers to it; the field's description wins."""
        if name in seen:
            raise UnexpectedOpenAPI(f"{name} refers to itself: a CRD schema cannot say that")
        described = {"description": outer["description"]} if "description" in outer else {}
        if name in (_QUANTITY, _INT_OR_STRING):
            pattern = {"pattern": QUANTITY_PATTERN} if name == _QUANTITY else {}
            int_or_string = {"anyOf": [{"type": "integer"}, {"type": "string"}], **pattern}
            return {**described, **int_or_string, "x-kubernetes-int-or-string": True}
        target = dict(self.schemas[name])
        if name == _OBJECT_META:
            target["properties"] = {key: target["properties"][key] for key in _TEMPLATE_META}
        return self.node({**target, **described}, seen | {name}, keys)

    def node(self, node: JSON, seen: frozenset[str], keys: frozenset[str] = frozenset()) -> JSON:
        """``keys``: the list-map keys of the list whose item ``node`` is (their defaults are kept)."""
        # A field of a named type is `$ref`, or `allOf [$ref]` beside the field's own description.
        ref = _reference(node)
        if ref is not None:
            return self.reference(ref, node, seen, keys)
        out: JSON = {}
        for key, value in sorted(node.items()):
            if key in _KEPT:
                out[key] = value
            elif key == "x-kubernetes-list-map-keys":
                out[key] = list(value)
            elif key == "properties":
                out[key] = {name: self.node(child, seen) for name, child in value.items()}
            elif key == "items":
                out[key] = self.node(value, seen, frozenset(node.get("x-kubernetes-list-map-keys", ())))
            elif key == "additionalProperties":
                out[key] = self.node(value, seen)
            elif key not in _DROPPED:
                raise UnexpectedOpenAPI(f"{key!r} in {json.dumps(node)[:200]}")
        # The API server refuses a list-map key that is neither required nor defaulted.
        for key in sorted(keys - set(out.get("required", ()))):
            if "default" not in node["properties"][key]:
                raise UnexpectedOpenAPI(f"list-map key {key!r} is neither required nor defaulted")
            out["properties"][key]["default"] = node["properties"][key]["default"]
        return out


def _reference(node: JSON) -> str | None:
    if "$ref" in node:
        return str(node["$ref"]).removeprefix(_PREFIX)
    all_of = node.get("allOf")
    if all_of is not None:
        if len(all_of) != 1 or "$ref" not in all_of[0]:
            raise UnexpectedOpenAPI(f"allOf other than one reference: {all_of}")
        return str(all_of[0]["$ref"]).removeprefix(_PREFIX)
    return None


def fetch_openapi(kubectl: str, kubeconfig: str) -> JSON:
    """The server's ``/openapi/v3/api/v1`` document, read with ``kubectl get --raw``."""
    raw = subprocess.run(
        [kubectl, "--kubeconfig", kubeconfig, "get", "--raw", "/openapi/v3/api/v1"],
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    document: JSON = json.loads(raw)
    return document


def render(schema: JSON) -> str:
    """The committed file's text: indented, keys sorted, one final newline."""
    return json.dumps(schema, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.real.pod_template_schema", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--kubectl", default="kubectl")
    parser.add_argument("--output", type=Path, default=TARGET)
    args = parser.parse_args(argv)
    schema = structural_pod_template(fetch_openapi(args.kubectl, args.kubeconfig))
    args.output.write_text(render(schema), encoding="utf-8")
    print(f"wrote {args.output} ({args.output.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
