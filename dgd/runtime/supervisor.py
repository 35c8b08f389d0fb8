"""Supervision: restart children by their specs and a strategy, within a restart intensity.

Guarantees (Erlang/OTP's, plus backoff):

* Children start one at a time in spec order (each after the previous one's ``on_start``) and stop
  in reverse order, each within its ``shutdown`` seconds, after which it is cancelled. A dynamic
  supervisor stops all its children at once.
* A child that ends is restarted by its restart type (permanent: always; transient: after an
  abnormal end; temporary: never, and it is forgotten) and by the strategy: ``ONE_FOR_ONE``
  restarts only it, ``ONE_FOR_ALL`` stops the others (in reverse order) and restarts all, and
  ``REST_FOR_ONE`` does the same for the children started after it. Temporary children stopped by
  a strategy are not restarted.
* Every restart waits the child's backoff (see ``Backoff``); children of one restart start in
  spec order. A child whose restart fails (its ``on_start`` raised) counts as failing again.
* More than ``intensity`` restarts within ``period`` seconds: the supervisor stops all its children
  and fails to its parent with ``RestartIntensityExceeded`` (escalation); the root fails the system.
  A parking supervisor (``Supervision.park``) counts each child's restarts on their own and parks a
  child over them instead: it restarts after its backoff, and ``restart_now`` ends the wait early.
* All of this happens in the supervising actor's own task, between its messages, so it never races
  with its ``receive``.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Never, TypeVar

from anyio.abc import TaskGroup

from dgd.runtime.actor import Actor
from dgd.runtime.cell import ActorCell, State
from dgd.runtime.clock import Timer
from dgd.runtime.errors import RestartIntensityExceeded, StartFailed
from dgd.runtime.spec import ChildSpec, Restart, Strategy, Supervision

if TYPE_CHECKING:
    from dgd.runtime.system import ActorSystem

C = TypeVar("C")

logger = logging.getLogger("dgd.actors")

# A signal: a child's incarnation ended (cell, generation, reason), or the backoff of the restart
# with this stamp ran out (int).
_Signal = tuple[ActorCell[Any], int, BaseException | None] | int


class Supervisor(Actor[Never]):
    """An actor that only supervises: ``Supervisor(children, Supervision(...))``."""

    def __init__(self, children: Sequence[ChildSpec[Any]], supervision: Supervision | None = None) -> None:
        self._specs = tuple(children)
        self.supervision = supervision or Supervision()
        ids = [spec.id for spec in self._specs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"child ids must be unique, got {ids}")

    def children(self) -> Sequence[ChildSpec[Any]]:
        return self._specs


class Children:
    """The children of one supervising cell, for one incarnation of it."""

    def __init__(
        self,
        owner: ActorCell[Any],
        tg: TaskGroup,
        policy: Supervision,
        *,
        dynamic: bool,
        on_parked: Callable[[str, float], None] = lambda id, retry_in: None,
    ) -> None:
        if dynamic and policy.strategy is not Strategy.ONE_FOR_ONE:
            raise ValueError("a dynamic supervisor restarts one for one")
        self._owner = owner
        self._on_parked = on_parked
        #: Each child's recent restarts, when the policy parks (else ``_restarts`` counts them all).
        self._windows: dict[str, deque[float]] = {}
        self._system: ActorSystem = owner.system
        self._tg = tg
        self._policy = policy
        self._dynamic = dynamic
        self._slots: dict[str, ActorCell[Any]] = {}
        self._signals: deque[_Signal] = deque()
        self._restarts: deque[float] = deque()
        self._timers: dict[int, Timer] = {}
        self._due: dict[int, list[ActorCell[Any]]] = {}
        self._stamps = itertools.count()
        self._closing = False

    @property
    def pending(self) -> bool:
        return bool(self._signals)

    def __len__(self) -> int:
        return len(self._slots)

    def get(self, id: str) -> ActorCell[Any] | None:
        return self._slots.get(id)

    def ids(self) -> list[str]:
        return list(self._slots)

    def cells(self) -> list[ActorCell[Any]]:
        return list(self._slots.values())

    # -- starting and stopping on request --------------------------------------------------------

    async def start(self, spec: ChildSpec[C]) -> ActorCell[C]:
        """Add a child after the others and start it; ``StartFailed`` leaves no trace of it."""
        if spec.id in self._slots:
            raise ValueError(f"{self._owner.path} already has a child {spec.id!r}")
        base = "" if self._owner.path == "/" else self._owner.path
        cell: ActorCell[C] = ActorCell(self._system, spec, f"{base}/{spec.id}", self)
        self._system.register(cell)
        self._slots[spec.id] = cell
        try:
            await cell.begin(self._tg)
        except StartFailed:
            self._forget(cell)
            raise
        cell.up_since = self._system.clock.now()
        return cell

    async def start_all(self, specs: Sequence[ChildSpec[Any]]) -> None:
        """Start children in order; if one fails, stop those started (reverse order) and raise."""
        for spec in specs:
            try:
                await self.start(spec)
            except StartFailed:
                await self.stop_all()
                raise

    async def stop(self, id: str) -> bool:
        """Stop one child gracefully and forget it."""
        cell = self._slots.get(id)
        if cell is None:
            return False
        await self._stop(cell)
        self._forget(cell)
        return True

    async def stop_all(self) -> None:
        """Stop every child: in reverse start order, or all at once for a dynamic supervisor."""
        self._closing = True
        self._cancel_timers()
        cells = list(reversed(self._slots.values()))
        if not self._dynamic:
            for cell in cells:
                await self._stop(cell)
            return
        clock = self._system.clock
        started = clock.now()
        for cell in cells:
            cell.awaiting_decision = False
            if cell.running:
                cell.request_stop(brutal=cell.spec.shutdown <= 0)
        # Wait for them by deadline, so each is cancelled as soon as its own time is up.
        for cell in sorted(cells, key=lambda cell: cell.spec.shutdown):
            if cell.running:
                await cell.wait_stopped(max(0.0, started + cell.spec.shutdown - clock.now()))
            cell.state = State.STOPPED

    def close(self) -> None:
        """Forget every child (synchronous: also runs while a cancellation unwinds)."""
        self._closing = True
        self._cancel_timers()
        for cell in self._slots.values():
            self._system.unregister(cell)
        self._slots.clear()

    # -- reacting to children --------------------------------------------------------------------

    def child_exited(self, cell: ActorCell[Any], generation: int, reason: BaseException | None) -> None:
        if self._closing:
            return
        self._signals.append((cell, generation, reason))
        self._owner.wake()

    async def process(self) -> None:
        """Handle every pending signal; raises ``RestartIntensityExceeded`` to escalate."""
        while self._signals:
            signal = self._signals.popleft()
            if isinstance(signal, int):
                await self._restart_due(signal)
                continue
            cell, generation, reason = signal
            if (
                cell.awaiting_decision
                and cell.generation == generation
                and self._slots.get(cell.spec.id) is cell
            ):
                cell.awaiting_decision = False
                await self._decide(cell, reason)

    async def _decide(self, cell: ActorCell[Any], reason: BaseException | None) -> None:
        restart = cell.spec.restart
        if restart is Restart.TEMPORARY or (restart is Restart.TRANSIENT and reason is None):
            # Done for good: a temporary or dynamic child is forgotten, a static one stays stopped.
            if restart is Restart.TEMPORARY or self._dynamic:
                self._forget(cell)
            return
        await self._restart(cell)

    def restart_now(self, id: str) -> bool:
        """End the wait of the child ``id`` for its restart (a parked child, say, whose object changed):
        it starts at once, its failures forgotten. ``False`` if it was not waiting."""
        cell = self._slots.get(id)
        if cell is None or cell.state is not State.RESTARTING:
            return False
        stamp = cell.restart_stamp
        timer = self._timers.pop(stamp, None)
        if timer is None:
            return False  # due already: its signal is queued
        timer.cancel()
        cell.failures = 0
        self._windows.pop(id, None)
        self._signals.append(stamp)
        self._owner.wake()
        return True

    async def _restart(self, cell: ActorCell[Any]) -> None:
        if self._policy.park:
            self._restart_or_park(cell)
            return
        # Count the restart against the intensity first: past it, escalate instead.
        now = self._system.clock.now()
        if self._counted(self._restarts, now) > self._policy.intensity:
            self._system.metrics.escalated(self._owner.path)
            logger.error(
                "%s: more than %d restarts in %gs; stopping its children and escalating",
                self._owner.path,
                self._policy.intensity,
                self._policy.period,
            )
            raise RestartIntensityExceeded(self._owner.path, self._policy.intensity, self._policy.period)
        # Stop the rest of the group in reverse order; then all of it restarts after one backoff.
        group = self._group(cell)
        for other in reversed(group):
            if other is not cell:
                await self._stop(other)
        delay = self._backoff(cell, now, fresh=now - cell.failed_at > self._policy.period)
        stamp = next(self._stamps)
        members: list[ActorCell[Any]] = []
        for member in group:
            if member is not cell and member.spec.restart is Restart.TEMPORARY:
                self._forget(member)
                continue
            member.state = State.RESTARTING
            member.restart_stamp = stamp
            members.append(member)
        logger.info("%s restarts %s in %.3fs", self._owner.path, [m.spec.id for m in members], delay)
        self._due[stamp] = members
        self._schedule(delay, stamp)

    def _restart_or_park(self, cell: ActorCell[Any]) -> None:
        # One for one, each child against its own intensity: over it, the child is parked (told to the
        # supervising actor); either way it restarts after its backoff, which grows until it stays up.
        now = self._system.clock.now()
        recent = self._counted(self._windows.setdefault(cell.spec.id, deque()), now)
        delay = self._backoff(cell, now, fresh=now - cell.up_since > self._policy.period)
        stamp = next(self._stamps)
        cell.state = State.RESTARTING
        cell.restart_stamp = stamp
        self._due[stamp] = [cell]
        self._schedule(delay, stamp)
        if recent > self._policy.intensity:
            self._system.metrics.parked(cell.path)
            logger.warning(
                "%s: more than %d restarts in %gs; parked, restarts in %.1fs",
                cell.path, self._policy.intensity, self._policy.period, delay,
            )  # fmt: skip
            self._on_parked(cell.spec.id, delay)
        else:
            logger.info("%s restarts %s in %.3fs", self._owner.path, [cell.spec.id], delay)

    def _counted(self, window: deque[float], now: float) -> int:
        """Count one more restart at ``now`` in ``window``; how many it holds within the period."""
        window.append(now)
        while window[0] <= now - self._policy.period:
            window.popleft()
        return len(window)

    def _backoff(self, cell: ActorCell[Any], now: float, *, fresh: bool) -> float:
        """The wait before ``cell``'s restart, one more failure in a row (``fresh``: the first again)."""
        if fresh:
            cell.failures = 0
        delay = self._policy.backoff.delay(cell.failures, self._system.random)
        cell.failures += 1
        cell.failed_at = now
        return delay

    def _group(self, cell: ActorCell[Any]) -> list[ActorCell[Any]]:
        # The children one failure restarts, in spec order (one for one stays O(1) for many).
        if self._policy.strategy is Strategy.ONE_FOR_ONE:
            return [cell]
        cells = list(self._slots.values())
        if self._policy.strategy is Strategy.REST_FOR_ONE:
            return cells[cells.index(cell) :]
        return cells

    def _schedule(self, delay: float, stamp: int) -> None:
        def due() -> None:
            self._timers.pop(stamp, None)
            if not self._closing:
                self._signals.append(stamp)
                self._owner.wake()

        if delay <= 0:
            due()
        else:
            self._timers[stamp] = self._system.clock.call_later(delay, due)

    async def _restart_due(self, stamp: int) -> None:
        # Start, in spec order, the children of this restart (a later failure may have re-stamped
        # some of them: they wait for their new restart).
        for cell in self._due.pop(stamp, []):
            if cell.state is not State.RESTARTING or cell.restart_stamp != stamp:
                continue
            if self._slots.get(cell.spec.id) is not cell:
                continue
            try:
                await cell.begin(self._tg)
            except StartFailed:
                await self._restart(cell)
                continue
            cell.restarts += 1
            cell.up_since = self._system.clock.now()
            self._system.metrics.restarted(cell.path, cell.restarts)

    async def _stop(self, cell: ActorCell[Any]) -> None:
        # A child that already ended (its signal not yet handled) is simply taken as stopped.
        cell.awaiting_decision = False
        if cell.running:
            await cell.stop_gracefully(cell.spec.shutdown)
        cell.state = State.STOPPED

    def _forget(self, cell: ActorCell[Any]) -> None:
        if self._slots.get(cell.spec.id) is cell:
            del self._slots[cell.spec.id]
            self._windows.pop(cell.spec.id, None)
        self._system.unregister(cell)

    def _cancel_timers(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._due.clear()
