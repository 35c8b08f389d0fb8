"""The runtime's slot for one child: it runs each incarnation of the actor and reports its end.

A cell outlives the incarnations it runs: the supervisor restarts a child in the same cell, so refs
keep working. An incarnation is one task in the supervisor's task group: start (factory, children,
``on_start``), the message loop, and an end that always settles every pending message (how, and
who hears of it: :mod:`~dgd.runtime.ending`).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import math
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel
from anyio import TaskHandle
from anyio.abc import TaskGroup

from dgd.runtime.actor import Actor
from dgd.runtime.context import Context
from dgd.runtime.ending import Parent, ends_within, report, resolve, running, settle
from dgd.runtime.errors import BadReply, Killed, MailboxFull, StartFailed, UnknownMessage
from dgd.runtime.mailbox import Mailbox, MailboxConfig
from dgd.runtime.message import Envelope, reply_type
from dgd.runtime.ref import Ref, current_actor
from dgd.runtime.spec import ChildSpec, Supervision

if TYPE_CHECKING:
    from dgd.runtime.supervisor import Children
    from dgd.runtime.system import ActorSystem

M = TypeVar("M")
C = TypeVar("C")

logger = logging.getLogger("dgd.actors")

#: Messages an actor handles back to back before it lets other tasks run.
FAIRNESS = 128


class State(enum.Enum):
    """Where a cell is in its life (as shown by ``ActorSystem.tree``)."""

    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    RESTARTING = "restarting"  #: down, waiting for its restart (backoff)
    CRASHED = "crashed"  #: down, its supervisor has not decided yet
    STOPPED = "stopped"


_LIVE = (State.STARTING, State.RUNNING, State.STOPPING)
_CLOSED = Mailbox(MailboxConfig(capacity=1))


_exact_by_class: dict[type, frozenset[type]] = {}


def _exact_types(kind: type[Actor[Any]]) -> frozenset[type]:
    # The accepted classes as a set, shared by every cell running this actor class.
    exact = _exact_by_class.get(kind)
    if exact is None:
        exact = _exact_by_class[kind] = frozenset(kind.accepts)
    return exact


class ActorCell(Context[M]):
    """One child slot: its spec, its current incarnation, its mailbox and restart history.

    Only the runtime uses it; the actor inside sees it through its :class:`Context` part.
    """

    __slots__ = (
        "__weakref__",
        "_actor",
        "_children",
        "_current",
        "_end_waiters",
        "_exact",
        "_handle",
        "_kill_reason",
        "_mailbox",
        "_parent",
        "_started",
        "_stop_requested",
        "_stopping",
        "actor_type",
        "awaiting_decision",
        "failed_at",
        "failures",
        "generation",
        "kind",
        "path",
        "restart_stamp",
        "restarts",
        "retired",
        "spec",
        "state",
        "system",
        "up_since",
    )

    def __init__(self, system: ActorSystem, spec: ChildSpec[M], path: str, parent: Parent) -> None:
        self.system = system
        self.spec = spec
        self.path = path
        self._parent = parent
        self.state = State.STOPPED
        self.kind = "-"
        self.actor_type: type[Actor[Any]] | None = None
        self.generation = 0
        self.restarts = 0
        self.retired = False
        # Supervisor bookkeeping (see supervisor.Children).
        self.awaiting_decision = False
        self.restart_stamp = -1
        self.failures = 0
        self.failed_at = -math.inf
        self.up_since = -math.inf
        self._actor: Actor[Any] | None = None
        self._exact: frozenset[type] = frozenset()
        self._mailbox = _CLOSED
        self._children: Children | None = None
        self._handle: TaskHandle[None] | None = None
        self._current: Envelope | None = None
        #: Who waits for the running incarnation to end (``wait_stopped``): told ``True`` when it does
        #: (``None`` while nobody waits: an idle actor keeps no list).
        self._end_waiters: list[asyncio.Future[bool]] | None = None
        self._started: asyncio.Future[None] | None = None
        self._kill_reason: BaseException | None = None
        self._stop_requested = False
        self._stopping = False

    @property
    def ref(self) -> Ref[M]:
        return Ref(self.system, self.path, self)

    def _stop_self(self) -> None:
        self._stopping = True
        self._mailbox.wake()

    # -- what senders and the system use --------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.state in _LIVE

    @property
    def mailbox_now(self) -> Mailbox:
        """The current incarnation's mailbox (a closed one while the actor is down)."""
        return self._mailbox

    @property
    def mailbox_depth(self) -> int:
        return len(self._mailbox)

    @property
    def down_reason(self) -> str:
        return f"actor {self.state.value}"

    @property
    def children(self) -> Children | None:
        return self._children

    def check(self, message: object) -> None:
        """Raise ``UnknownMessage`` unless the actor's union accepts ``message`` (also while the
        actor is down between two incarnations: its last class decides)."""
        if type(message) in self._exact or self.actor_type is None:
            return
        accepts = self.actor_type.accepts
        if not isinstance(message, accepts):
            raise UnknownMessage(self.path, message, accepts)

    def wake(self) -> None:
        """Wake the actor's loop (a supervisor signal is pending)."""
        self._mailbox.wake()

    def refuse(self, message: object) -> None:
        raise MailboxFull(self.path, self._mailbox.config.capacity)

    def kill(self) -> bool:
        """End the running incarnation as if it crashed with ``Killed``; ``False`` if not running."""
        if self.state not in _LIVE or self._handle is None:
            return False
        self._force(Killed(self.path))
        return True

    async def stop_gracefully(self, timeout: float) -> None:
        """Ask the incarnation to stop and wait; cancel it if it is not done within ``timeout``
        (at once when ``timeout`` is 0: OTP's ``brutal_kill``, no ``on_stop``)."""
        if self.state not in _LIVE or self._handle is None:
            return
        self.request_stop(brutal=timeout <= 0)
        await self.wait_stopped(timeout)

    def request_stop(self, *, brutal: bool = False) -> None:
        """Ask the incarnation to stop after the message in hand, or cancel it (``brutal``).

        Either way its supervisor expects the end: it is not a crash to decide on.
        """
        self._stop_requested = True
        if self.state in _LIVE:
            self.state = State.STOPPING
        if brutal and self._handle is not None:
            self._force(Killed(self.path, "cancelled on stop (shutdown=0)"))
        else:
            self._stopping = True
            self._mailbox.wake()

    async def wait_stopped(self, timeout: float) -> None:
        """Wait for a stop already requested; after ``timeout`` seconds cancel the incarnation."""
        handle = self._handle
        if handle is None:
            return
        if timeout <= 0:
            if self._kill_reason is None and self.state is State.STOPPING:
                self._force(Killed(self.path, "cancelled: its shutdown time was up"))
        elif timeout != math.inf and running(handle):
            if self._end_waiters is None:
                self._end_waiters = []
            in_time = await ends_within(self._end_waiters, self.system.clock, timeout)
            if not in_time and self.state is State.STOPPING:
                logger.warning("%s did not stop within %gs; cancelling it", self.path, timeout)
                self._force(Killed(self.path, f"cancelled: did not stop within {timeout:g}s"))
        if running(handle):
            await handle.wait()

    def _force(self, reason: BaseException) -> None:
        self._kill_reason = reason
        assert self._handle is not None
        self._handle.cancel()

    # -- one incarnation ------------------------------------------------------------------------

    def begin(self, tg: TaskGroup) -> asyncio.Future[None]:
        """Start a new incarnation in ``tg``; the future is done once ``on_start`` is.

        The future fails with ``StartFailed`` if the factory or ``on_start`` raised (or the
        incarnation was killed while starting); the parent is then not told separately.
        """
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.generation += 1
        self.awaiting_decision = False
        self._kill_reason = None
        self._stop_requested = self._stopping = False
        try:
            actor = self.spec.factory()
        except Exception as exc:
            self.state = State.CRASHED
            logger.error("%s failed to start: %r", self.path, exc, exc_info=exc)
            started.set_exception(StartFailed(self.path, exc))
            return started
        actor.context = self
        self._actor = actor
        self.actor_type = type(actor)
        self.kind = type(actor).__name__
        self._exact = _exact_types(type(actor))
        self._mailbox = Mailbox(actor.mailbox)
        self._mailbox.open()
        self.state = State.STARTING
        self._started = started
        self._handle = tg.start_soon(self._run, name=self.path)
        if actor.supervision is None and type(actor).on_start is Actor.on_start:
            # Nothing to wait for: a plain worker without an ``on_start`` is up once its task exists
            # (what is sent to it meanwhile waits in its mailbox), so its starter goes on at once.
            self._mark_running()
        return started

    async def _run(self) -> None:
        # One incarnation, start to end. A plain worker runs here directly (one frame fewer per
        # idle actor); a supervising actor runs its children in a task group of its own.
        current_actor.set(self)
        reason: BaseException | None = None
        actor = self._actor
        assert actor is not None
        try:
            if actor.supervision is None:
                if self._started is not None:
                    await actor.on_start()
                    self._mark_running()
                await self._serve()
            else:
                await self._supervise(actor, actor.supervision)
            await actor.on_stop()
        except Exception as exc:
            reason = exc
        except BaseException:
            # Cancelled: by kill(), by a shutdown timeout, or with a supervisor that went down.
            reason = self._kill_reason or Killed(self.path, "cancelled with its supervisor", incidental=True)
            raise
        finally:
            self._exit(reason)

    async def _supervise(self, actor: Actor[Any], supervision: Supervision) -> None:
        from dgd.runtime.supervisor import Children

        # The failure is kept out of the task group, which would wrap it in an ExceptionGroup.
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            children = Children(self, tg, supervision, dynamic=actor.dynamic, on_parked=actor.child_parked)
            self._children = children
            try:
                await children.start_all(actor.children())
                await actor.on_start()
                self._mark_running()
                await self._serve()
            except Exception as exc:
                failure = exc
            finally:
                try:
                    await children.stop_all()
                finally:
                    children.close()
        if failure is not None:
            raise failure

    def _mark_running(self) -> None:
        if self.state is State.STARTING:
            self.state = State.RUNNING
        started = self._started
        self._started = None
        if started is not None and not started.done():
            started.set_result(None)

    async def _serve(self) -> None:
        # The message loop: supervisor signals first, then messages in order, FAIRNESS at a time.
        actor = self._actor
        assert actor is not None
        receive = actor.receive
        mailbox = self._mailbox
        children = self._children
        metrics = self.system.metrics
        path = self.path
        handled = 0
        while not self._stopping:
            if children is not None and children.pending:
                await children.process()
                continue
            envelope = mailbox.pop()
            if envelope is None:
                await mailbox.waiter()
                metrics.mailbox_depth(path, len(mailbox))
                continue
            reply = envelope.reply
            if reply is not None and reply.done():
                continue  # the asker gave up before we got to it
            self._current = envelope
            answer = await receive(envelope.message)
            if reply is not None:
                self._answer(envelope.message, reply, answer)
            self._current = None
            metrics.message_processed(path, type(envelope.message))
            handled += 1
            if handled == FAIRNESS:
                handled = 0
                await anyio.lowlevel.checkpoint()

    def _answer(self, request: object, reply: asyncio.Future[Any], answer: object) -> None:
        expected = reply_type(type(request))
        if expected and not isinstance(answer, expected):
            names = " | ".join(t.__name__ for t in expected)
            raise BadReply(
                f"{self.path} answered {type(request).__name__} with {type(answer).__name__}, not {names}"
            )
        if not reply.done():
            reply.set_result(answer)

    def _exit(self, reason: BaseException | None) -> None:
        # Synchronous, so it runs even while a cancellation unwinds: nothing is left waiting.
        left = self._mailbox.close()
        current = self._current
        self._current = None
        if current is not None and current.reply is not None:
            left.insert(0, current)  # the message in hand was taken: only its asker must hear
        settle(self.system, self.path, left, reason)
        self._actor = None
        self._children = None
        waiters, self._end_waiters = self._end_waiters, None
        for waiter in waiters or ():
            resolve(waiter, True)
        if reason is not None:
            report(self.system, self.path, reason, stopping=self._stop_requested)
        started = self._started
        if started is not None:
            self._started = None
            self.state = State.CRASHED
            started.set_exception(StartFailed(self.path, reason or Killed(self.path, "stopped")))
            return
        if self._stop_requested:
            self.state = State.STOPPED
            return
        self.state = State.CRASHED if reason is not None else State.STOPPED
        self.awaiting_decision = True
        self._parent.child_exited(self, self.generation, reason)
