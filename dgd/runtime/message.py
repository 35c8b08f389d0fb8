"""What travels between actors: messages, requests that name their reply, envelopes, dead letters.

A message is a msgspec Struct (frozen, by convention, since it is a value). A message that expects
an answer subclasses :class:`Request` with its reply type, e.g.
``class GetCount(Request[Count], frozen=True)``, so ``await ref.ask(GetCount())`` is typed ``Count``
and the runtime checks the actor's answer against ``Count``.
"""

from __future__ import annotations

import asyncio
import types
import typing
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

import msgspec

R = TypeVar("R")


class Request(msgspec.Struct, Generic[R], frozen=True):
    """A message that is answered with a value of type ``R`` (see ``Ref.ask``); frozen, a value."""


class Envelope(msgspec.Struct):
    """One message in a mailbox, with who sent it and where its answer goes.

    ``sender`` is the path of the sending actor (``None`` from outside any actor); ``reply`` is the
    asker's future (``None`` for a tell); ``key`` is the coalescing key of a coalesced tell.
    Envelopes are the runtime's own: actors only ever see the message. They take part in garbage
    collection: an ask whose handler crashed leaves a cycle (the future's exception, its traceback, the
    frames, the envelope) that only the collector can free.
    """

    message: Any
    sender: str | None
    reply: asyncio.Future[Any] | None
    key: Hashable | None = None


class DeadLetter(msgspec.Struct, frozen=True):
    """A told message that no actor took: its target was stopped, crashed, or restarting.

    Kept in the system's dead-letter log and passed to the metrics hook. ``at`` is the system
    clock's time.
    """

    sender: str | None
    target: str
    message_type: str
    reason: str
    at: float


_reply_types: dict[type, tuple[type, ...]] = {}


def reply_type(request: type) -> tuple[type, ...]:
    """The classes an answer to ``request`` may be an instance of (``()``: not checked)."""
    known = _reply_types.get(request)
    if known is None:
        known = _resolve_reply_type(request)
        _reply_types[request] = known
    return known


def _resolve_reply_type(request: type) -> tuple[type, ...]:
    for klass in request.__mro__:
        for base in klass.__dict__.get("__orig_bases__", ()):
            if typing.get_origin(base) is Request:
                return _runtime_classes(typing.get_args(base)[0])
    return ()


def _runtime_classes(annotation: object) -> tuple[type, ...]:
    # A union checks against each member; a generic alias against its origin; a TypeVar not at all.
    if annotation is None or annotation is type(None):
        return (type(None),)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        out: tuple[type, ...] = ()
        for member in typing.get_args(annotation):
            members = _runtime_classes(member)
            if not members:
                return ()
            out += members
        return out
    origin = typing.get_origin(annotation)
    if isinstance(origin, type):
        return (origin,)
    if isinstance(annotation, type):
        return (annotation,)
    return ()
