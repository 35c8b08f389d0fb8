"""Which object controls another: **the** "this DGD controls it" predicate (dgd-domain §4.1, §13).

An object is controlled by the one its owner reference with ``controller: true`` names, by uid.
Labels are never trusted for this. Every decision that asks whether the DGD owns a child (provider
adoption, deleting an orphaned scaling adapter) asks ``controlled_by`` and nothing else.
"""

from __future__ import annotations

from dgd.messages.meta import ObjectMeta


def controlled_by(meta: ObjectMeta, uid: str | None) -> bool:
    """Whether ``meta`` names the object ``uid`` as its controller (never for a ``None`` uid)."""
    return uid is not None and any(ref.controller and ref.uid == uid for ref in meta.owner_references or ())
