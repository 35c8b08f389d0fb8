"""The operator's invariants, checked against every change a simulated cluster stores.

``Invariants(sim)`` hears every change the API server stores (``MemoryCluster.observe``: no fault
rule applies to it, nothing is missed when watches drop), with the actor that made it (the actor
runtime's ``current_actor``: ``/operator/...``, ``/world/...``, or ``None`` for the trace's user).
``start(group)`` begins listening (it stops when ``group`` is cancelled); ``check()`` judges what was
heard since the last call, in resourceVersion order, and appends what breaks to ``violations``;
``liveness(since, bound)`` judges convergence. The invariants (``NAMES``):

* ``one-status-writer`` — a DGD's status is changed only by its DGD actor (``/operator/dgds/<ns>/<name>``)
  or by the trace itself;
* ``observed-generation-monotonic`` — a DGD's ``status.observedGeneration`` never decreases;
* ``ready-means-current`` — a status an actor writes with ``Ready=True`` has ``observedGeneration`` equal to
  the DGD's generation, and every workload its readiness stands on that is not being deleted — its
  DCDs; its PodCliqueSet, and that set's PodCliques and scaling groups — reports
  ``status.observedGeneration`` equal to its own generation, at that moment;
* ``events-follow-status`` — a status-transition event (``invariants_judge.TRANSITIONS``) about a DGD
  is recorded only when the DGD's persisted status carries that transition, and only once per status
  write;
* ``child-created-once`` — an object a DGD controls is created again (same kind, namespace, name and
  owner) only if its previous incarnation was deleted by someone else than the operator, or the DGD's
  generation changed since it was created;
* ``one-replicas-owner`` — while a scaling adapter exists for a component, only that adapter's actor
  (``/operator/adapters/<ns>/<adapter>``) changes the component's ``replicas`` (the trace may too);
* ``one-serving-generation`` — a status the DGD actor writes that says ``successful`` at the DGD's
  generation with no rollout active finds each worker component's live DCDs in one worker generation
  (``invariants_generations``);
* ``bounded-liveness`` — (``liveness``) every DGD is stable — ``successful`` or ``failed``, with
  ``observedGeneration`` equal to its generation — by ``since + bound``, and has stayed so.

A violation records the cluster time (seconds since the simulation started) it was seen at. This
module hears and orders the changes; a ``Judge`` (``invariants_judge``) judges them, and holds what
is known of the cluster as of the last change judged.
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio.abc

from dgd.cluster.memory.store import Change
from dgd.runtime.ref import current_actor
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.invariants_judge import Heard, Judge, Violation

NAMES = (
    "one-status-writer",
    "observed-generation-monotonic",
    "ready-means-current",
    "events-follow-status",
    "child-created-once",
    "one-replicas-owner",
    "one-serving-generation",
    "bounded-liveness",
    "failures-contained",
)


class Invariants:
    """Watches a running ``SimulatedCluster`` (see the module). Start it once, on the cluster's loop."""

    def __init__(self, sim: SimulatedCluster) -> None:
        self._sim = sim
        self._judge = Judge()
        self._heard: list[Heard] = []

    # -- the interface ---------------------------------------------------------------------------

    async def start(self, group: anyio.abc.TaskGroup) -> None:
        """Learn what exists now, then hear every change until ``group`` is cancelled."""
        for obj in self._sim.cluster.snapshot():
            self._judge.learn(obj, self._sim.elapsed())
        self._sim.observe(group, self._hear)

    def check(self) -> None:
        """Judge every change heard since the last call, oldest first."""
        heard, self._heard = self._heard, []
        heard.sort(key=lambda item: item.change.rv)
        judge = self._judge.judge
        for item in heard:
            judge(item)

    def liveness(self, since: float, bound: float, excused: frozenset[str] = frozenset()) -> None:
        """Every DGD that exists is stable, and has been since ``since + bound`` at the latest.

        Call it at or after ``since + bound`` (cluster seconds since the start), e.g. ``since`` the
        end of the last fault; a DGD not stable when it is called is a violation. ``excused``: the
        names of DGDs a fault breaks on purpose for ever (one the operator cannot read, one whose
        reconcile always raises): the others must converge regardless.
        """
        self.check()
        self._judge.liveness(self._sim.elapsed(), since, bound, excused)

    def contained(self, restarts: Mapping[str, int], *, killed: bool) -> None:
        """No actor of ``OPERATOR_CORE`` (``invariants_judge``) was restarted (``restarts``: by path),
        unless the trace kills actors on purpose (``killed``: a kill below the core may restart it
        through its supervisor)."""
        self._judge.contained(restarts, killed=killed, now=self._sim.elapsed())

    @property
    def violations(self) -> list[Violation]:
        """Every invariant broken so far, in the order judged."""
        return self._judge.violations

    @property
    def ok(self) -> bool:
        return not self.violations

    # -- hearing (synchronous, on every stored change) --------------------------------------------

    def _hear(self, change: Change) -> None:
        cell = current_actor.get()
        writer = cell.path if cell is not None else None
        self._heard.append(Heard(change, change.obj.data, writer, self._sim.elapsed()))
