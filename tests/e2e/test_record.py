"""`dgd-operator run --record`: a user's session, replayed to the same end by `sim replay`."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import msgspec
import pytest

from dgd.cluster.resources import DGDSA
from dgd.messages.trace import Apply, Delete, Expect, Patch
from dgd.sim.trace_io import read_trace
from tests.e2e.eventually import eventually
from tests.e2e.harness import DGDS, NS, ServedCluster, agg, component_disagg
from tests.e2e.operators import EXECUTABLE, Operators

pytestmark = pytest.mark.anyio


async def test_a_recorded_session_holds_only_the_users_changes_and_replays_to_the_same_end(
    served: ServedCluster, operators: Operators, tmp_path: Path
) -> None:
    # given a daemon recording while a user applies two graphs, scales one's adapter as an autoscaler
    # would, and deletes the other
    trace_file = tmp_path / "session.trace.jsonl"
    operator = await operators.start("recorder", flags=("--record", str(trace_file)))
    await served.apply(agg("kept"))
    await served.apply(component_disagg("dropped"))
    await eventually(lambda: served.converged("kept", "dropped"), timeout=60, what="both DGDs successful")
    key = DGDSA.key(NS, "kept-worker")
    scale = await served.kube.get_scale(key)
    wanted = msgspec.structs.replace(scale, spec=msgspec.structs.replace(scale.spec, replicas=3))
    await served.kube.replace_scale(key, wanted)

    async def scaled() -> bool:
        dgd = await served.dgd("kept")
        worker = next(c for c in dgd["spec"]["components"] if c["name"] == "Worker")
        return worker["replicas"] == 3 and await served.converged("kept")

    await eventually(scaled, timeout=60, what="the scaled graph is successful with 3 workers")
    await served.kube.delete(DGDS.key(NS, "dropped"))

    async def gone() -> bool:
        names = {d["metadata"]["name"] for d in (await served.observer.list(DGDS, namespace=NS)).items}
        return "dropped" not in names

    await eventually(gone, timeout=60, what="the deleted graph is gone")

    # when the daemon is stopped
    operator.kill(signal.SIGTERM)
    assert await operator.exit_code(timeout=30) == 0

    # then the trace holds the user's four changes, in order, and none of the operator's own writes
    trace = read_trace(trace_file.read_bytes())
    changes = [r for r in trace.records if not isinstance(r, Expect)]
    assert [type(r).__name__ for r in changes] == ["Apply", "Apply", "Patch", "Delete"], changes
    applied = [r for r in changes if isinstance(r, Apply)]
    # (both may be found by the informers' first list, at one instant, in name order)
    assert sorted(a.object["metadata"]["name"] for a in applied) == ["dropped", "kept"]
    (patch,) = [r for r in changes if isinstance(r, Patch)]
    assert (patch.target.kind, patch.target.name, patch.patch) == (
        "DynamoGraphDeploymentScalingAdapter",
        "kept-worker",
        {"spec": {"replicas": 3}},
    )
    (delete,) = [r for r in changes if isinstance(r, Delete)]
    assert (delete.target.kind, delete.target.name) == ("DynamoGraphDeployment", "dropped")
    expects = [r for r in trace.records if isinstance(r, Expect)]
    assert [(e.target.name, e.state) for e in expects] == [("kept", "successful")]

    # and the simulated cluster, replaying it, ends the same way
    replay = subprocess.run(
        [str(EXECUTABLE), "sim", "replay", str(trace_file)], capture_output=True, text=True, timeout=300
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
