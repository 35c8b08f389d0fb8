"""The behaviour an actor implements: private state, a message union, and lifecycle hooks.

An actor is a class ``Counter(Actor[Increment | GetCount])``: the generic parameter is its message
union, checked on every ``tell``/``ask`` to it, and its ``receive`` handles one message at a time.
Instances are built by a :class:`ChildSpec` factory for every start, so a restart always begins from
fresh state (an actor rebuilds what it needs in ``on_start``).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import msgspec

from dgd.runtime.mailbox import MailboxConfig
from dgd.runtime.spec import ChildSpec, Supervision

if TYPE_CHECKING:
    from dgd.runtime.context import Context

M = TypeVar("M", bound=msgspec.Struct)


class Actor(Generic[M]):
    """A behaviour with private state and a mailbox of the msgspec Structs in its union ``M``.

    Guarantees the runtime gives every actor:

    * One message at a time: ``receive`` is never re-entered; state needs no locks.
    * Per-sender order: messages from one sender are handled in the order they were sent
      (coalesced tells excepted, see ``MailboxConfig``).
    * At-most-once delivery: a message is handled once or not at all. A told message that no
      incarnation of the actor takes (it was stopped, crashed, or restarting) goes to the system's
      dead-letter log; an ask that is not answered fails for its caller. The message in hand when
      an incarnation ends counts as taken: it is not dead-lettered (its asker gets the error).
    * Let it crash: an exception out of any hook stops this incarnation. Pending asks fail at once
      with ``ActorCrashed``, queued tells are dead-lettered, the crash is logged with the actor's
      path, and the supervisor decides (restart or not) by the child's spec. Siblings are touched
      only if the supervisor's strategy says so; the system is never brought down by a crash.
    * Graceful stop: the message in hand is finished, then queued tells are dead-lettered and
      queued asks fail with ``ActorStopped``; an actor that does not finish within its spec's
      ``shutdown`` seconds is cancelled.

    Lifecycle of one incarnation: the factory builds it; if ``supervision`` is set, the children
    from ``children()`` start in order; ``on_start`` runs (messages sent meanwhile wait in the
    mailbox); messages are handled; on a graceful stop the message in hand is finished, children stop
    in reverse order, then ``on_stop`` runs. ``on_stop`` is not called after a crash or a kill.
    """

    #: The message classes of ``M``, read from the generic parameter when the class is defined.
    accepts: ClassVar[tuple[type[msgspec.Struct], ...]] = ()
    #: The mailbox this actor gets: capacity, overflow policy, coalescing.
    mailbox: ClassVar[MailboxConfig] = MailboxConfig()
    #: Children come and go at run time (a dynamic supervisor): on shutdown they are all stopped at
    #: once, and a child that ends for good is forgotten rather than kept as stopped.
    dynamic: ClassVar[bool] = False
    #: Set to supervise children (see ``children``); ``None`` for a plain worker.
    supervision: Supervision | None = None
    #: The runtime as this actor sees it (path, refs, clock, random); set before ``on_start``.
    context: Context[M]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = _declared_messages(cls)
        if declared is not None:
            cls.accepts = declared

    def children(self) -> Sequence[ChildSpec[Any]]:
        """The children a supervising actor starts, in order, before its ``on_start``."""
        return ()

    def child_parked(self, id: str, retry_in: float) -> None:
        """A supervising actor's child ``id`` went over its restart intensity and is parked: it starts
        again in ``retry_in`` seconds (``Supervision.park``). Runs in this actor's task."""

    async def on_start(self) -> None:
        """Rebuild state; runs before the first message. Must not ask its own supervisor."""

    async def receive(self, message: M) -> object:
        """Handle one message. For a ``Request[R]``, return the reply (an ``R``)."""
        raise NotImplementedError(f"{type(self).__name__} handles no messages")

    async def on_stop(self) -> None:
        """Release what the actor holds, on a graceful stop (bounded by its shutdown timeout)."""


def _declared_messages(cls: type) -> tuple[type[msgspec.Struct], ...] | None:
    # The first generic base of Actor that names concrete messages; a TypeVar means "inherit".
    for base in cls.__dict__.get("__orig_bases__", ()):
        origin = typing.get_origin(base)
        if isinstance(origin, type) and issubclass(origin, Actor):
            args = typing.get_args(base)
            if args and not isinstance(args[0], TypeVar):
                return _message_classes(cls, args[0])
    return None


def _message_classes(cls: type, union: object) -> tuple[type[msgspec.Struct], ...]:
    if union is typing.Never or union is typing.NoReturn:
        return ()
    members = (
        typing.get_args(union)
        if isinstance(union, types.UnionType) or typing.get_origin(union) is typing.Union
        else (union,)
    )
    out: list[type[msgspec.Struct]] = []
    for member in members:
        if not (isinstance(member, type) and issubclass(member, msgspec.Struct)):
            raise TypeError(f"{cls.__name__}: actor messages must be msgspec Structs, got {member!r}")
        out.append(member)
    return tuple(out)
