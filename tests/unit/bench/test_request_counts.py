"""The pure helpers of ``bench/real.py``: request counts from the API server's metrics and audit log,
the writes issue 18's table counts, and percentiles. No numbers of the benchmark itself are asserted
anywhere."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from bench.request_counts import (
    TABLE_WRITES,
    Request,
    clients,
    difference,
    from_audit,
    from_metrics,
    percentile,
    writes,
)

METRICS = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="grove.io",resource="podcliquesets",scope="resource",subresource="",verb="POST",version="v1alpha1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="nvidia.com",resource="dynamographdeployments",scope="resource",subresource="status",verb="PATCH",version="v1beta1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 9
# HELP apiserver_request_duration_seconds x
# TYPE apiserver_request_duration_seconds counter
apiserver_request_duration_seconds{resource="pods",verb="GET",code="200"} 1
"""  # noqa: E501


def _audit(agent: str, verb: str, resource: str, code: int, *, stage: str = "ResponseComplete") -> str:
    event = {
        "stage": stage,
        "userAgent": agent,
        "verb": verb,
        "objectRef": {"resource": resource, "namespace": "bench"},
        "responseStatus": {"code": code},
    }
    return json.dumps(event)


def test_metrics_give_the_resource_requests_by_verb_resource_subresource_and_code() -> None:
    # given a /metrics page with two resource request counters, a non-resource one and another metric
    # when it is read
    counts = from_metrics(METRICS)

    # then only the two resource counters are kept, keyed as the audit log keys them
    assert counts == Counter(
        {
            Request("POST", "podcliquesets", "", "201"): 3,
            Request("PATCH", "dynamographdeployments", "status", "200"): 2,
        }
    )


def test_difference_keeps_only_what_grew() -> None:
    # given two reads of the counters, one counter unchanged and one new
    post, patch = Request("POST", "services", "", "201"), Request("PATCH", "leases", "", "200")
    get = Request("GET", "clusterroles", "", "200")
    before = Counter({post: 2, patch: 5})
    after = Counter({post: 6, patch: 5, get: 1})

    # when they are compared
    grown = difference(before, after)

    # then the grown and the new counters remain, with their growth
    assert grown == Counter({post: 4, get: 1})


def test_audit_counts_the_completed_requests_of_one_user_agent_with_metric_verbs() -> None:
    # given audit lines of the operator (two completed, one only started) and of another client
    lines = [
        _audit("OpenAPI-Generator/33.3.0/python", "create", "podcliquesets", 201),
        _audit("OpenAPI-Generator/33.3.0/python", "patch", "podcliquesets", 200),
        _audit("OpenAPI-Generator/33.3.0/python", "watch", "pods", 200, stage="ResponseStarted"),
        _audit("kube-controller-manager/v1.36.5", "get", "podcliquesets", 200),
        "",
    ]

    # when the operator's requests are counted
    counts = from_audit(lines, "OpenAPI-Generator/")

    # then its two completed requests count, with the verbs apiserver_request_total uses
    assert counts == Counter(
        {Request("POST", "podcliquesets", "", "201"): 1, Request("PATCH", "podcliquesets", "", "200"): 1}
    )
    # and every client's completed requests are counted by its agent's name
    assert clients(lines) == Counter({"OpenAPI-Generator": 2, "kube-controller-manager": 1})


def test_the_kopf_prefix_takes_in_kopf_and_the_client_of_its_handlers() -> None:
    # given audit lines of kopf itself, of the kopf operator's client, and of the benchmark
    lines = [
        _audit("kopf/1.45.2", "patch", "dynamographdeployments", 200),
        _audit("kopf-agg/1", "create", "podcliquesets", 201),
        _audit("dgd-bench-real", "create", "dynamographdeployments", 201),
    ]

    # when the kopf operator's requests are counted, then both of its agents count and nothing else
    assert from_audit(lines, "kopf") == Counter(
        {
            Request("PATCH", "dynamographdeployments", "", "200"): 1,
            Request("POST", "podcliquesets", "", "201"): 1,
        }
    )


def test_table_writes_count_every_write_of_dgds_sets_and_events_and_nothing_else() -> None:
    # given an operator's requests: writes of the table's resources (one refused), reads, other writes
    counts = Counter(
        {
            Request("PATCH", "dynamographdeployments", "", "200"): 2,
            Request("PATCH", "dynamographdeployments", "status", "200"): 3,
            Request("POST", "podcliquesets", "", "201"): 1,
            Request("POST", "podcliquesets", "", "409"): 1,
            Request("POST", "events", "", "201"): 6,
            Request("GET", "podcliquesets", "", "200"): 4,
            Request("WATCH", "dynamographdeployments", "", "200"): 1,
            Request("POST", "services", "", "201"): 2,
            Request("POST", "rolebindings", "", "201"): 1,
        }
    )

    # when the table's writes are summed, then the status subresource and the refused create count,
    # and reads, watches, Services and RBAC objects do not
    assert writes(counts, TABLE_WRITES) == 2 + 3 + 1 + 1 + 6
    # and another set of resources counts only its own writes
    assert writes(counts, {"services"}) == 2


def test_percentiles_interpolate_between_ranks() -> None:
    # given ten latencies 1..10
    values = [float(v) for v in range(10, 0, -1)]

    # when percentiles are taken, then they interpolate linearly between the nearest ranks
    assert percentile(values, 50) == 5.5
    assert percentile(values, 95) == pytest.approx(9.55)
    assert percentile(values, 100) == 10.0
    assert percentile([4.0], 95) == 4.0
    # and no values give NaN
    assert math.isnan(percentile([], 50))
