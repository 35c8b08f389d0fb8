"""The pure part of ``bench/operators.py``: how the kopf operator is started. Nothing is run."""

from __future__ import annotations

from pathlib import Path

from bench.operators import KOPF_SCRIPT, kopf_argv


def test_kopf_runs_the_bench_operator_for_every_namespace_without_peering_on_a_loopback_probe() -> None:
    # given the kopf executable of the benchmark's virtualenv and a free port
    kopf = Path("/venv/bin/kopf")

    # when the command line is built
    argv = kopf_argv(kopf, 41234)

    # then it runs bench/kopf_agg.py standalone, cluster-wide, its liveness endpoint on that port
    assert argv[:2] == [str(kopf), "run"]
    assert argv[-1] == str(KOPF_SCRIPT)
    assert KOPF_SCRIPT.name == "kopf_agg.py"
    assert set(argv[2:-1]) == {
        "--standalone",
        "--all-namespaces",
        "--liveness=http://127.0.0.1:41234/healthz",
    }
