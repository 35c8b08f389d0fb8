"""Properties of supervision under random crashes and kills (hypothesis).

For any tree, any policy and any sequence of crashes, kills and clock moves:
* no task is left behind once the system has ended (normally, or failed by escalation);
* a supervisor escalates exactly when a reference model of restart intensity says it must:
  never more than ``intensity`` restarts within ``period`` without escalating, never an escalation
  without that;
* every permanent child runs again once the backoffs have passed (unless the system failed).
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgd.runtime import (
    ActorNotFound,
    Backoff,
    ChildSpec,
    ManualClock,
    NullMetrics,
    Restart,
    RestartIntensityExceeded,
    Strategy,
    Supervision,
    Supervisor,
    settle,
)

from .cast import Crash, Journal, running, worker

pytestmark = pytest.mark.anyio

WORKERS = ("/sup/w0", "/sup/w1", "/sup/w2", "/solo")
TARGETS = (*WORKERS, "/sup")
BACKOFF = Backoff(initial=0.1, maximum=1.0, multiplier=2.0, jitter=0.5)


@dataclass
class Recorder(NullMetrics):
    """Metrics hooks that keep the order and the clock time of every supervision event."""

    clock: ManualClock
    events: list[tuple[str, str, float, str]] = field(default_factory=list)

    def crashed(self, path: str, reason: BaseException) -> None:
        self.events.append(("crashed", path, self.clock.now(), str(reason)))

    def restarted(self, path: str, restarts: int) -> None:
        self.events.append(("restarted", path, self.clock.now(), ""))

    def escalated(self, path: str) -> None:
        self.events.append(("escalated", path, self.clock.now(), ""))


def expected_escalations(
    events: list[tuple[str, str, float, str]],
    policies: dict[str, Supervision],
    restart_types: dict[str, Restart],
) -> list[tuple[str, float]]:
    """The reference model: replay crashes into per-supervisor windows and say who must escalate."""
    windows: dict[str, list[float]] = defaultdict(list)
    out: list[tuple[str, float]] = []
    for kind, path, at, why in events:
        if kind == "restarted" and path in policies:
            windows[path] = []  # a new incarnation of a supervisor starts with no history
            continue
        if kind != "crashed" or path == "/" or "cancelled with its supervisor" in why:
            continue
        if restart_types[path] is Restart.TEMPORARY:
            continue  # never restarted, so never counted
        parent = path.rsplit("/", 1)[0] or "/"
        policy = policies[parent]
        window = [t for t in windows[parent] if t > at - policy.period] + [at]
        windows[parent] = window
        if len(window) > policy.intensity:
            out.append((parent, at))
            windows[parent] = []
    return out


restart_types_st = st.sampled_from([Restart.PERMANENT, Restart.TRANSIENT, Restart.TEMPORARY])
policy_st = st.builds(
    lambda strategy, intensity, period: Supervision(
        strategy, intensity=intensity, period=period, backoff=BACKOFF
    ),
    st.sampled_from(list(Strategy)),
    st.integers(min_value=0, max_value=3),
    st.sampled_from([0.5, 2.0, 10.0]),
)
op_st = st.one_of(
    st.tuples(st.just("crash"), st.sampled_from(WORKERS)),
    st.tuples(st.just("kill"), st.sampled_from(TARGETS)),
    st.tuples(st.just("advance"), st.sampled_from([0.05, 0.3, 1.0, 2.5])),
)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    root_policy=policy_st,
    sup_policy=policy_st,
    types=st.tuples(restart_types_st, restart_types_st, restart_types_st),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    ops=st.lists(op_st, max_size=25),
)
async def test_random_crashes_and_kills_keep_the_supervision_contract(
    root_policy: Supervision,
    sup_policy: Supervision,
    types: tuple[Restart, Restart, Restart],
    seed: int,
    ops: list[tuple[str, str | float]],
) -> None:
    # Given a root over a nested supervisor of three workers (restart types drawn) and a solo worker
    journal = Journal()
    clock = ManualClock()
    recorder = Recorder(clock)
    restart_types = {f"/sup/w{n}": kind for n, kind in enumerate(types)}
    restart_types |= {"/sup": Restart.PERMANENT, "/solo": Restart.PERMANENT}
    nested = [worker(f"w{n}", journal, restart=kind, shutdown=1) for n, kind in enumerate(types)]
    children = [
        ChildSpec("sup", lambda: Supervisor(nested, sup_policy), shutdown=1),
        worker("solo", journal, shutdown=1),
    ]
    tasks_before = set(asyncio.all_tasks())
    failed = False
    final_tree: dict[str, str] = {}

    # When the operations run, each followed by the system settling
    try:
        async with running(
            children, clock=clock, random=random.Random(seed), metrics=recorder, supervision=root_policy
        ) as system:
            for op, arg in ops:
                if op == "advance":
                    await clock.advance(float(arg))
                    continue
                try:
                    if op == "kill":
                        system.kill(str(arg))
                    else:
                        await system.ref(str(arg)).tell(Crash())
                except ActorNotFound:
                    pass  # its supervisor is down and waiting for its own restart
                await settle()
            await clock.advance(30)  # let every backoff run out
            final_tree = {info.path: info.state for info in system.tree()}
    except RestartIntensityExceeded as failure:
        failed = True
        assert failure.path == "/"

    # Then no task is left
    assert set(asyncio.all_tasks()) == tasks_before

    # And the supervisors escalated exactly when the intensity model says so
    policies = {"/": root_policy, "/sup": sup_policy}
    expected = expected_escalations(recorder.events, policies, restart_types)
    actual = [(path, at) for kind, path, at, _ in recorder.events if kind == "escalated"]
    assert actual == expected
    assert failed == ("/" in {path for path, _ in expected})

    # And every permanent child runs again in the end
    if not failed:
        permanent = [path for path, kind in restart_types.items() if kind is Restart.PERMANENT]
        assert {path: final_tree.get(path) for path in permanent} == dict.fromkeys(permanent, "running")
