"""The actor kernel: supervised asyncio actors that talk in typed msgspec messages.

It knows nothing about Kubernetes. The model is Erlang/OTP supervision on anyio structured
concurrency: every actor task lives in its supervisor's task group, inside one ``ActorSystem``
block. It runs on anyio's asyncio backend, plain or with uvloop (its hot paths use asyncio futures,
so trio is not supported), and needs anyio 4.14 or later (task handles).

* :class:`Actor` — a behaviour: private state, a declared message union, lifecycle hooks; it sees
  the runtime through its :class:`Context`.
* :class:`Ref` — ``tell`` (fire and forget) and ``ask`` (typed reply, timeout) by path.
* :class:`Request` — a message that names its reply type.
* :class:`ChildSpec`, :class:`Restart`, :class:`Strategy`, :class:`Supervision`, :class:`Backoff`
  — supervision as data; :class:`Supervisor` and :class:`DynamicSupervisor` run it.
* :class:`MailboxConfig`, :class:`Overflow` — bounded mailboxes, overflow policy, coalescing.
* :class:`ActorSystem` — the root: ``ref(path)``, ``kill(path)``, ``tree()``, ``shutdown()``,
  the dead-letter log.
* :class:`Clock` (:class:`LoopClock`, :class:`ManualClock`) and :class:`Metrics` — injected.
"""

from dgd.runtime.actor import Actor
from dgd.runtime.cell import ActorCell, State
from dgd.runtime.clock import Clock, LoopClock, ManualClock, Timer, settle
from dgd.runtime.context import Context
from dgd.runtime.dynamic import (
    ChildIds,
    DynamicSupervisor,
    RestartChildNow,
    StartChild,
    Started,
    StartRefused,
    StopChild,
    Stopped,
    WhichChildren,
)
from dgd.runtime.errors import (
    ActorCrashed,
    ActorError,
    ActorNotFound,
    ActorStopped,
    AskTimeout,
    BadReply,
    Killed,
    MailboxFull,
    RestartIntensityExceeded,
    StartFailed,
    UnknownMessage,
)
from dgd.runtime.mailbox import MailboxConfig, Overflow
from dgd.runtime.message import DeadLetter, Envelope, Request
from dgd.runtime.metrics import CountingMetrics, Metrics, NullMetrics
from dgd.runtime.ref import ASK_TIMEOUT, Ref
from dgd.runtime.spec import NO_BACKOFF, Backoff, ChildSpec, Restart, Strategy, Supervision
from dgd.runtime.supervisor import Supervisor
from dgd.runtime.system import ActorInfo, ActorSystem

__all__ = [
    "ASK_TIMEOUT",
    "NO_BACKOFF",
    "Actor",
    "ActorCell",
    "ActorCrashed",
    "ActorError",
    "ActorInfo",
    "ActorNotFound",
    "ActorStopped",
    "ActorSystem",
    "AskTimeout",
    "Backoff",
    "BadReply",
    "ChildIds",
    "ChildSpec",
    "Clock",
    "Context",
    "CountingMetrics",
    "DeadLetter",
    "DynamicSupervisor",
    "Envelope",
    "Killed",
    "LoopClock",
    "MailboxConfig",
    "MailboxFull",
    "ManualClock",
    "Metrics",
    "NullMetrics",
    "Overflow",
    "Ref",
    "Request",
    "Restart",
    "RestartChildNow",
    "RestartIntensityExceeded",
    "StartChild",
    "StartFailed",
    "StartRefused",
    "Started",
    "State",
    "StopChild",
    "Stopped",
    "Strategy",
    "Supervision",
    "Supervisor",
    "Timer",
    "UnknownMessage",
    "WhichChildren",
    "settle",
]
