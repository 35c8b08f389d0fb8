"""The errors of the actor runtime: what a sender, an asker or a supervisor can be told.

Every error is an :class:`ActorError`. The ones a caller handles in normal operation are
:class:`ActorStopped` (and its :class:`ActorCrashed`), :class:`AskTimeout` and :class:`MailboxFull`;
the others name programming errors (:class:`UnknownMessage`, :class:`BadReply`) or are the *reasons*
an actor or a supervisor ended (:class:`Killed`, :class:`RestartIntensityExceeded`,
:class:`StartFailed`), as seen in logs, in :class:`ActorCrashed.cause` and by the parent supervisor.
"""

from __future__ import annotations


class ActorError(Exception):
    """Base of every error the runtime raises."""


class ActorNotFound(ActorError, LookupError):
    """No actor lives at this path (never started, or stopped for good and removed)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"no actor at {path}")
        self.path = path


class ActorStopped(ActorError):
    """The actor is not running, or it stopped before it replied.

    Raised by ``ask`` when the target is stopped, stopping, or waiting to be restarted, and given to
    every ask still queued when an actor stops. A later ask may succeed once the supervisor restarted
    the actor.
    """

    def __init__(self, path: str, detail: str = "is not running") -> None:
        super().__init__(f"actor {path} {detail}")
        self.path = path


class ActorCrashed(ActorStopped):
    """The actor crashed before it replied; ``cause`` is the exception that ended it.

    Every ask in flight or queued at the crash fails with this error at once (nothing waits for its
    timeout). The supervisor decides separately whether the actor is restarted.
    """

    def __init__(self, path: str, cause: BaseException) -> None:
        super().__init__(path, f"crashed: {type(cause).__name__}: {cause}")
        self.cause = cause
        self.__cause__ = cause


class AskTimeout(ActorError, TimeoutError):
    """No reply arrived within the ask's timeout. The request may still be handled later."""

    def __init__(self, path: str, message_type: str, timeout: float) -> None:
        super().__init__(f"ask {message_type} to {path} got no reply within {timeout:g}s")
        self.path = path
        self.timeout = timeout


class MailboxFull(ActorError):
    """The target's mailbox stayed full: at once (policy ``FAIL``, or ``tell_nowait``) or for longer
    than its block timeout (policy ``BLOCK``). The message was not enqueued."""

    def __init__(self, path: str, capacity: int) -> None:
        super().__init__(f"mailbox of {path} is full ({capacity} messages)")
        self.path = path
        self.capacity = capacity


class UnknownMessage(ActorError, TypeError):
    """A programming error: the message is not in the target actor's declared message union.

    Raised to the sender at ``tell``/``ask`` time, never dropped silently.
    """

    def __init__(self, path: str, message: object, accepted: tuple[type, ...]) -> None:
        names = ", ".join(t.__name__ for t in accepted) or "no messages"
        super().__init__(f"{path} does not accept {type(message).__name__} (it accepts {names})")
        self.path = path


class BadReply(ActorError, TypeError):
    """A programming error in an actor: it answered a request with a value of the wrong type.

    The actor crashes with this error, so its asker gets :class:`ActorCrashed`.
    """


class Killed(ActorError):
    """The reason an actor ended when it was stopped by force.

    ``kill(path)`` ends an actor with this reason as if it had crashed (its supervisor restarts it
    by its policy); a child that outlives its shutdown timeout is cancelled with it; so are the
    descendants of an actor that was killed. ``incidental``: it ended only because its supervisor
    did (whose own end is what gets reported).
    """

    def __init__(self, path: str, why: str = "killed", *, incidental: bool = False) -> None:
        super().__init__(f"actor {path} {why}")
        self.path = path
        self.incidental = incidental


class StartFailed(ActorError):
    """A child could not be started: its factory or its ``on_start`` raised ``__cause__``."""

    def __init__(self, path: str, cause: BaseException) -> None:
        super().__init__(f"actor {path} failed to start: {type(cause).__name__}: {cause}")
        self.path = path
        self.__cause__ = cause


class RestartIntensityExceeded(ActorError):
    """The reason a supervisor fails to its own parent (escalation).

    More than ``intensity`` restarts happened among its children within ``period`` seconds: the
    supervisor stopped all its children and ended with this error.
    """

    def __init__(self, path: str, intensity: int, period: float) -> None:
        super().__init__(
            f"supervisor {path} exceeded its restart intensity ({intensity} restarts in {period:g}s)"
        )
        self.path = path
        self.intensity = intensity
        self.period = period
