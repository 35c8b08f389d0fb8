"""Kinds served at a version other than the one stored: every body converted in, every answer out.

A CustomResourceDefinition may serve several versions and store one. The API server converts each
object it is sent at a served version to the storage version before admission and storage (so
webhooks registered for the storage version see that version), and converts each object it answers
with — a get, a list, a watch event, the written object — to the version the client asked for. A
patch is applied to the object as the client sees it (converted to the request's version), and the
result converted back for storage. The facade does the same, through ``Converted``.

How a version is converted is the CRD's ``spec.conversion.strategy``: ``None`` changes only the
``apiVersion``; ``Webhook`` calls the conversion webhook, which the facade is given as a
``Conversion`` callable (``sim serve`` wires the operator's own, in process). Without one, versions
converted by a webhook are not served. A conversion that fails is a 500, worded as the API server
words a webhook's refusal.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

from dgd.cluster.errors import Invalid, ServerError
from dgd.cluster.resources import Resource
from dgd.messages.base import JSONObject

#: A conversion webhook: the object (of any served version) as the desired apiVersion; a
#: ``ValueError`` saying why not if it cannot be converted.
Conversion = Callable[[JSONObject, str], JSONObject]


@dataclass(frozen=True)
class Converted:
    """One kind served as ``shown`` and stored as ``stored``; ``webhook`` converts (``None``: the
    CRD's strategy is ``None``, only the apiVersion changes)."""

    stored: Resource[JSONObject]
    shown: Resource[JSONObject]
    webhook: Conversion | None

    def to_stored(self, obj: JSONObject) -> JSONObject:
        """A body sent at the served version, as it is stored (an absent apiVersion or kind is the
        request's, as the API server defaults them from the URL)."""
        sent = dict(obj)
        sent.setdefault("apiVersion", self.shown.api_version)
        sent.setdefault("kind", self.shown.kind)
        if sent["apiVersion"] not in (self.shown.api_version, self.stored.api_version):
            raise Invalid(
                f"the API version in the data ({sent['apiVersion']}) does not match the expected API "
                f"version ({self.shown.api_version})",
                bad_request=True,
            )
        return self._convert(sent, self.stored.api_version)

    def to_shown(self, obj: JSONObject) -> JSONObject:
        """A stored object as the client asked for it."""
        return self._convert(obj, self.shown.api_version)

    def _convert(self, obj: JSONObject, to: str) -> JSONObject:
        if obj.get("apiVersion") == to:
            return obj
        if self.webhook is None:
            return {**copy.deepcopy(obj), "apiVersion": to}
        try:
            return self.webhook(obj, to)
        except ValueError as error:
            kind = f"{obj.get('apiVersion')}, Kind={obj.get('kind')}"
            raise ServerError(
                f"Internal error occurred: conversion webhook for {kind} returned failure: {error}"
            ) from None
