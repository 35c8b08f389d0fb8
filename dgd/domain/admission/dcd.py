"""Admission of a DynamoComponentDeployment, create and update (supplement §4.7).

A DCD is one component outside any graph: the component rules of a DGD apply to it as on the
Component pathway (a DCD is never on the Grove pathway), its main container needs an image (but,
unlike a DGD, no runtime version), and it cannot carry provider overrides, which only a DGD can lower.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
from msgspec import structs

from dgd.domain.admission.component_updates import (
    BACKEND_WARNING,
    backend_change,
    check_component_update,
    runtime_version_ratchet,
)
from dgd.domain.admission.components import check_component, runtime_version_problems
from dgd.domain.admission.errors import FieldError
from dgd.domain.admission.validation import document_order
from dgd.messages.component import ComponentSpec, SharedComponentSpec
from dgd.messages.dcd import DCDSpec, DynamoComponentDeployment

NOT_GROVE = "requires the Grove pathway, which a DynamoComponentDeployment never takes"
NO_PROVIDER_OVERRIDES = (
    "provider overrides are supported only for components embedded in a DynamoGraphDeployment"
)
_SHARED = tuple(f.name for f in structs.fields(SharedComponentSpec))


class DCDVerdict(msgspec.Struct, frozen=True):
    """The outcome of admitting one DCD: the DCD itself when there are no errors."""

    errors: list[FieldError]
    warnings: list[FieldError]
    dcd: DynamoComponentDeployment | None = None


def validate_dcd(new: DynamoComponentDeployment, old: DynamoComponentDeployment | None = None) -> DCDVerdict:
    """Admit ``new`` as a create (``old`` is ``None``) or as an update of the stored ``old``.

    As for a DGD, the new DCD is checked alone first, and only when it passes is it compared with the
    old one; a DCD being deleted is always allowed.
    """
    if old is not None and new.metadata.deletion_timestamp is not None:
        return DCDVerdict(errors=[], warnings=[], dcd=new)
    component = as_component(new)
    errors = sorted(_stateless(component, new.spec, create=old is None), key=document_order)
    if errors or old is None:
        return DCDVerdict(errors=errors, warnings=[], dcd=None if errors else new)
    before = as_component(old)
    errors = list(check_component_update(before, component, "spec"))
    errors += runtime_version_ratchet(before, component, "spec", override_required=False)
    backend = backend_change(old.spec.backend_framework, new.spec.backend_framework)
    errors += [backend] if backend else []
    errors.sort(key=document_order)
    warnings = [BACKEND_WARNING] if backend else []
    return DCDVerdict(errors=errors, warnings=warnings, dcd=None if errors else new)


def as_component(dcd: DynamoComponentDeployment) -> ComponentSpec:
    """The DCD's spec as a graph component, named like the DCD when its spec has no name."""
    name = dcd.spec.name or dcd.metadata.name or ""
    return ComponentSpec(**{field: getattr(dcd.spec, field) for field in _SHARED}, name=name)


def _stateless(component: ComponentSpec, spec: DCDSpec, *, create: bool) -> Iterator[FieldError]:
    yield from check_component(
        component,
        "spec",
        grove_refusal=NOT_GROVE,
        dgd_name="",
        pcs_name="",
        backend=spec.backend_framework,
    )
    yield from _provider_overrides(component)
    # On update the image rule is ratcheted instead (an image already missing stays allowed).
    if create:
        yield from runtime_version_problems(component, "spec", override_required=False)


def _provider_overrides(component: ComponentSpec) -> Iterator[FieldError]:
    if component.provider_override is not None:
        yield FieldError("spec.providerOverride", NO_PROVIDER_OVERRIDES)
    multinode = component.multinode
    for role, override in (
        ("leader", multinode.leader if multinode else None),
        ("worker", multinode.worker if multinode else None),
    ):
        if override is not None and override.provider_override is not None:
            yield FieldError(f"spec.multinode.{role}.providerOverride", NO_PROVIDER_OVERRIDES)
