"""What the probes answer: liveness (``/healthz``) and readiness (``/readyz``), as named checks.

Liveness fails when restarting the process is the cure:

* ``event-loop``: a heartbeat task sleeps ``interval`` seconds at a time and measures how late it
  wakes. A loop that is blocked (or starved by a task that never waits) wakes it late, or not at all;
  either fails the check past ``max_lag``. (A loop blocked outright cannot answer the probe at all,
  which the kubelet's probe timeout catches.)
* ``informers``: while the operator runs, every watched kind must show a sign of life (a list, a
  watch opened, an event or a bookmark) at least every ``stall_after`` seconds. An idle watch gets
  bookmarks, and a watch the informer gave up on is reopened, so silence that long means a stalled
  informer.

Readiness fails while the process cannot do its job: before it knows its role, while the lease
cannot be taken (its namespace missing, its credentials refused: the reason says what to change),
while it leads but its caches are not yet filled, and once it is shutting down. A standby that sees
another leader is ready by design: it is doing its job, which is to wait.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable

import msgspec

from dgd.runtime import Clock


class Role(enum.Enum):
    """Where the process is in its life, as readiness sees it."""

    STARTING = "starting"
    STANDBY = "standby"
    LEADER = "leader"
    STOPPING = "stopping"


class Check(msgspec.Struct, frozen=True):
    """One named check: passed or not, and why not."""

    name: str
    ok: bool
    reason: str = ""


class Health:
    """The state both probes read; the run loop and the rest client keep it current.

    All times are the injected clock's.
    """

    def __init__(
        self, clock: Clock, *, interval: float = 1.0, max_lag: float = 5.0, stall_after: float = 600.0
    ) -> None:
        self._clock = clock
        self.interval = interval
        self.max_lag = max_lag
        self.stall_after = stall_after
        self.role = Role.STARTING
        self._beat = clock.now()
        self._lag = 0.0
        self._watched: dict[str, float] = {}
        self._synced: Callable[[], bool] | None = None
        self._lease_problem: str | None = None

    # The heartbeat.

    async def heartbeat(self) -> None:
        """Beat forever (run it as a task); each beat records how late it woke."""
        while True:
            due = self._clock.now() + self.interval
            await self._clock.sleep(self.interval)
            now = self._clock.now()
            self._lag = max(0.0, now - due)
            self._beat = now

    # What the run loop and the rest client report.

    def operator_started(self, resources: Iterable[str], synced: Callable[[], bool]) -> None:
        """The operator tree runs: ``resources`` must show life; ``synced`` says if its caches are full."""
        now = self._clock.now()
        self._watched = dict.fromkeys(resources, now)
        self._synced = synced

    def operator_stopped(self) -> None:
        self._watched = {}
        self._synced = None

    def lease_problem(self, problem: str | None) -> None:
        """Why the lease cannot be taken (the elector's ``on_problem``); ``None`` once it can."""
        self._lease_problem = problem

    def activity(self, resource: str) -> None:
        """A list or watch of ``resource`` showed a sign of life (the rest client's activity sink)."""
        if resource in self._watched:
            self._watched[resource] = self._clock.now()

    # The probes.

    def liveness(self) -> list[Check]:
        now = self._clock.now()
        checks = [Check("ping", True)]
        late = max(self._lag, now - self._beat - self.interval)
        if late > self.max_lag:
            checks.append(Check("event-loop", False, f"the heartbeat is {late:.1f}s late"))
        else:
            checks.append(Check("event-loop", True))
        stalled = sorted(r for r, seen in self._watched.items() if now - seen > self.stall_after)
        if stalled:
            why = f"no list or watch activity for more than {self.stall_after:g}s: {', '.join(stalled)}"
            checks.append(Check("informers", False, why))
        else:
            checks.append(Check("informers", True))
        return checks

    def readiness(self) -> list[Check]:
        checks = [Check("ping", True)]
        role = self.role
        if role is Role.STARTING:
            checks.append(Check("role", False, "starting: the leader election has not decided yet"))
        elif role is Role.STOPPING:
            checks.append(Check("role", False, "shutting down"))
        elif role is Role.STANDBY and self._lease_problem is not None:
            checks.append(Check("lease", False, self._lease_problem))
        else:
            checks.append(Check("role", True, role.value))
        if role is Role.LEADER:
            synced = self._synced is not None and self._synced()
            checks.append(
                Check("caches", synced, "" if synced else "the informers' caches are not filled yet")
            )
        return checks


def report(checks: list[Check], probe: str, *, verbose: bool) -> tuple[bool, str]:
    """Whether every check passed, and the body to answer with (Kubernetes' healthz format)."""
    ok = all(check.ok for check in checks)
    if ok and not verbose:
        return True, "ok"
    lines = []
    for check in checks:
        if check.ok:
            lines.append(f"[+]{check.name} ok")
        else:
            lines.append(f"[-]{check.name} failed: {check.reason}")
    lines.append(f"{probe} check passed" if ok else f"{probe} check failed")
    return ok, "\n".join(lines) + "\n"
