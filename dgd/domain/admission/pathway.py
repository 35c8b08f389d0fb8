"""Which workload pathway a DGD is on, as admission sees it (supplement §4.4 "Grove pathway" test)."""

from __future__ import annotations

from dgd.domain.admission.defaulting import ENABLE_GROVE, WORKLOAD_PROVIDER
from dgd.messages.meta import ObjectMeta


def grove_refusal(meta: ObjectMeta, *, grove_enabled: bool) -> str | None:
    """``None`` on the Grove pathway; otherwise why a Grove-only field is refused here."""
    annotations = meta.annotations or {}
    provider = annotations.get(WORKLOAD_PROVIDER)
    if provider == "grove":
        return None
    if provider == "component":
        return 'requires the Grove pathway, but workload provider "component" is selected'
    if provider is not None:
        return (
            f'requires the Grove pathway, but annotation "{WORKLOAD_PROVIDER}" '
            f'has unsupported value "{provider}"'
        )
    if not grove_enabled:
        return "requires the Grove pathway, but Grove is disabled in the operator configuration"
    opt_out = annotations.get(ENABLE_GROVE)
    if opt_out is not None and opt_out.lower() == "false":
        return (
            f'requires the Grove pathway; remove or unset annotation "{ENABLE_GROVE}" (currently "{opt_out}")'
        )
    return None
