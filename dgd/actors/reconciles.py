"""What reconciling actors report about each reconcile, for metrics (controller-runtime's names).

The DGD actor and the DGDSA controller's adapter actors call ``reconcile_started`` when a reconcile
begins and ``reconcile_finished`` when it ends, with its result: ``success`` (converged, waiting for the
next event), ``requeue_after`` (converged, woken at a set time), ``requeue`` (failed in a way a retry may
heal: retried after a backoff) or ``error`` (failed terminally, or crashed). The daemon's metrics
implement the protocol; the simulation passes nothing.
"""

from __future__ import annotations

from typing import Literal, Protocol

Result = Literal["success", "requeue_after", "requeue", "error"]

DGD_CONTROLLER = "dynamographdeployment"
ADAPTER_CONTROLLER = "dynamographdeploymentscalingadapter"


class ReconcileObserver(Protocol):
    """Receives one ``started`` and one ``finished`` per reconcile."""

    def reconcile_started(self, controller: str, namespace: str, name: str) -> None:
        """A reconcile of ``namespace/name`` began."""

    def reconcile_finished(
        self, controller: str, namespace: str, name: str, result: str, seconds: float
    ) -> None:
        """It ended ``seconds`` later with ``result`` (see the module)."""
