"""Two hundred graphs, half of which crash on every reconcile: the other half converge as fast as they
would alone, and each crashing graph backs off (issue 17's acceptance, in cluster time).

The crash is an exception that is no API error (a ``Bug`` fault) at the graph's status write, from the
start and for ever: its every reconcile does its work and then raises, as a bug would.
"""

from __future__ import annotations

import copy
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from dgd.cluster.resources import DGD
from dgd.messages.trace import VERSION, ApiFault, Apply, Header, Record, Trace
from dgd.sim import journal
from dgd.sim.replay import run_replay

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = 200
#: Cluster seconds the replay runs.
HORIZON = 1800.0


def _graph(name: str) -> dict[str, Any]:
    document = copy.deepcopy(yaml.safe_load((ROOT / "examples" / "agg.yaml").read_text(encoding="utf-8")))
    document["metadata"] = {"name": name, "namespace": "default"}
    for component in document["spec"]["components"]:
        component.pop("scalingAdapter", None)
    return document


def _trace(healthy: list[str], crashing: list[str]) -> Trace:
    records: list[Record] = [Apply(at=0.0, object=_graph(name)) for name in healthy + crashing]
    records += [
        ApiFault(at=0.0, verb="patch", resource=str(DGD), subresource="status", name=name, error="Bug")
        for name in crashing
    ]
    # The replay runs to its last record: an empty user action at the horizon.
    records.append(Apply(at=HORIZON, object={**_graph(healthy[0])}))
    return Trace(Header(version=VERSION, seed=11, description="half of the graphs crash"), tuple(records))


def _replay(trace: Trace, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, float], Counter[str]]:
    """When each graph first became successful (cluster seconds), and how many reconciles each began."""
    reconciles: Counter[str] = Counter()
    started = journal.ReconcileCounter.reconcile_started

    def counting(self: journal.ReconcileCounter, controller: str, namespace: str, name: str) -> None:
        reconciles[name] += 1
        started(self, controller, namespace, name)

    monkeypatch.setattr(journal.ReconcileCounter, "reconcile_started", counting)
    report = run_replay(trace)
    monkeypatch.undo()
    successful: dict[str, float] = {}
    for change in report.timeline:
        if change.state == "successful":
            successful.setdefault(change.name, change.at)
    return successful, reconciles


@pytest.mark.timeout(900)
def test_half_the_graphs_crashing_slows_the_other_half_by_under_a_tenth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    healthy = [f"ok-{n:03d}" for n in range(GRAPHS // 2)]
    crashing = [f"bad-{n:03d}" for n in range(GRAPHS // 2)]

    # given the healthy half alone, and then beside the crashing half
    alone, _ = _replay(_trace(healthy, []), monkeypatch)
    beside, reconciles = _replay(_trace(healthy, crashing), monkeypatch)

    # then every healthy graph converged both times, and beside the crashing ones within a tenth more
    # cluster time than alone
    assert set(alone) >= set(healthy) and set(beside) >= set(healthy)
    slowest_alone = max(alone[name] for name in healthy)
    slowest_beside = max(beside[name] for name in healthy)
    print(f"slowest alone {slowest_alone}s, beside {slowest_beside}s")
    assert slowest_beside <= 1.1 * slowest_alone, (slowest_alone, slowest_beside)
    # and no crashing graph ever did, each reconciling at most as often as its backoff allows
    assert not set(beside) & set(crashing)
    bound = math.ceil(math.log2(HORIZON / 0.5)) + HORIZON / 1000 + 1
    most = max(reconciles[name] for name in crashing)
    print(f"most reconciles of a crashing graph {most} (bound {bound})")
    assert 2 <= most <= bound, (most, bound)
