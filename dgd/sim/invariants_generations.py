"""The ``one-serving-generation`` invariant: once a rollout has ended, one worker generation serves.

A worker *generation* is the set of worker DCDs that carry one ``nvidia.com/dynamo-worker-hash``
label (dgd-domain §12). While a rollout runs, a worker component has an old generation and a new
one; once it has ended, only one. So a status the operator writes that says the DGD is
``successful`` at its generation, with no rollout active (``status.rollingUpdate`` absent or
``Completed``), must find each worker component's live DCDs — those the DGD controls and that are not
being deleted — in one generation. A DGD that forgets its old generation (an update that dropped the
worker-hash annotation, issue 32 / #13495) breaks it: a new worker DCD beside the old one, no
rollout, and ``successful``.
"""

from __future__ import annotations

from collections.abc import Iterable

from dgd.domain.metadata_keys import WORKER_HASH
from dgd.domain.rollout import FAILED, IN_PROGRESS, PENDING
from dgd.messages.base import JSONObject

#: The rollout phases that say a rollout runs (``dgd.domain.rollout.rollout_active``).
ACTIVE_PHASES = frozenset({PENDING, IN_PROGRESS, FAILED})


def several_generations(dgd: JSONObject, dcds: Iterable[JSONObject]) -> str | None:
    """What breaks the invariant for ``dgd`` (as stored) and the DCDs it controls (``None``: nothing).

    Judged only when the DGD is ``successful`` at its generation with no rollout active."""
    metadata, status = dgd.get("metadata") or {}, dgd.get("status") or {}
    phase = (status.get("rollingUpdate") or {}).get("phase")
    settled = status.get("state") == "successful" and status.get("observedGeneration") == metadata.get(
        "generation"
    )
    if not settled or phase in ACTIVE_PHASES or metadata.get("deletionTimestamp"):
        return None
    generations: dict[str, set[str]] = {}
    for dcd in dcds:
        dcd_meta = dcd.get("metadata") or {}
        worker_hash = (dcd_meta.get("labels") or {}).get(WORKER_HASH)
        if (
            dcd.get("kind") != "DynamoComponentDeployment"
            or not worker_hash
            or dcd_meta.get("deletionTimestamp")
        ):
            continue
        component = str((dcd.get("spec") or {}).get("name") or dcd_meta.get("name"))
        generations.setdefault(component, set()).add(str(worker_hash))
    several = {component: hashes for component, hashes in sorted(generations.items()) if len(hashes) > 1}
    if not several:
        return None
    where = f"{metadata.get('namespace')}/{metadata.get('name')}"
    found = "; ".join(f"{component}: {', '.join(sorted(hashes))}" for component, hashes in several.items())
    return f"{where}: successful with no rollout active, but several worker generations serve ({found})"
