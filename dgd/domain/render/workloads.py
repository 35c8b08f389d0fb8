"""The complete desired workload of a DGD: what its program syncs and ``dgd-operator render`` prints.

One pipeline per pathway, and nothing edits what it returns:

* Grove (dgd-domain §9.2): the PodCliqueSet (``render_pcs``), the user's ``providerOverride``
  fragments spliced in, then each checkpointed component's cliques shaped to restore (§10.6);
* Component (§8.2, §10.5): one DCD per component (``render_dcds``), a checkpointed component's spec
  naming its checkpoint (and held at 0 replicas while it waits for it), and a DCD that exists
  keeping the ``backendFramework`` it was created with.

The programs pass what one reconcile observed and resolved; the offline render passes what a first
reconcile of a new DGD has: no live object, no checkpoint, no restart. The same inputs give the
same objects, whichever calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from dgd.domain.checkpoint import CheckpointInfo, gated_components
from dgd.domain.checkpoint_restore import dcd_adjustment, restore_cliques
from dgd.domain.pod_merge import JSON
from dgd.domain.render.dcd import dcd_name, render_dcds
from dgd.domain.render.gpu_count import ClaimTemplates
from dgd.domain.render.pcs import render_pcs
from dgd.domain.render.provider_overrides import apply_provider_overrides
from dgd.messages.config import OperatorConfig
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.grove import PodCliqueSet


def desired_pod_clique_set(
    dgd: DynamoGraphDeployment,
    *,
    config: OperatorConfig,
    existing: PodCliqueSet | None,
    checkpoints: Mapping[str, CheckpointInfo],
    worker_generation_changed: bool = False,
    restart_at: Mapping[str, str] | None = None,
    topology_domains: Sequence[str] = (),
    claim_templates: ClaimTemplates | None = None,
    desired_hash: str | None = None,
) -> JSON:
    """The PodCliqueSet of a defaulted, namespaced DGD on Grove, as JSON, complete.

    ``existing`` is the one observation of the PodCliqueSet (its replicas and clique order are kept,
    its restart stamps carried); ``checkpoints`` the resolved checkpoint of each checkpointed
    component (one waiting for its checkpoint gets 0 replicas; a ready one restores). The other
    arguments are ``render_pcs``'s. ``RenderError`` if the DGD cannot be rendered.
    """
    rendered = render_pcs(
        dgd,
        config=config,
        existing=existing,
        worker_generation_changed=worker_generation_changed,
        restart_at=restart_at,
        gated=gated_components(checkpoints),
        topology_domains=topology_domains,
        claim_templates=claim_templates,
        desired_hash=desired_hash,
    )
    overridden = apply_provider_overrides(msgspec.to_builtins(rendered), dgd)
    return restore_cliques(overridden, checkpoints, config)


def dcd_names(dgd: DynamoGraphDeployment, worker_hash: str) -> list[str]:
    """The names of the DCDs ``desired_dcds`` renders for ``worker_hash``, in component order (to
    observe the live ones before rendering)."""
    return [dcd_name(dgd.metadata.name or "", c, worker_hash) for c in dgd.spec.components or []]


def desired_dcds(
    dgd: DynamoGraphDeployment,
    *,
    worker_hash: str,
    checkpoints: Mapping[str, CheckpointInfo],
    replicas: Mapping[str, int] | None = None,
    restart_at: Mapping[str, str] | None = None,
    live: Mapping[str, DynamoComponentDeployment] | None = None,
) -> list[JSON]:
    """The DCDs of a defaulted, namespaced DGD on the Component pathway, as JSON, complete, one per
    component in component order.

    ``checkpoints``: the resolved checkpoint of each checkpointed component (its DCD names it, and
    waits for it at 0 replicas); ``replicas`` and ``restart_at`` are ``render_dcds``'s; ``live``: the
    DCDs that exist, by name (one keeps its ``backendFramework``). ``RenderError`` if refused.
    """
    bodies: list[JSON] = []
    rendered = render_dcds(
        dgd,
        worker_hash=worker_hash,
        replicas=replicas,
        restart_at=restart_at,
        gated=gated_components(checkpoints),
    )
    for dcd in rendered:
        body = msgspec.to_builtins(dcd)
        info = checkpoints.get(dcd.spec.name or "")
        if info is not None:
            body["spec"] = dcd_adjustment(body["spec"], info)
        existing = (live or {}).get(dcd.metadata.name or "")
        if existing is not None and existing.spec.backend_framework:
            body["spec"]["backendFramework"] = existing.spec.backend_framework
        bodies.append(body)
    return bodies
