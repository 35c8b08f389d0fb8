"""Who asked the API server for what: request counts from ``apiserver_request_total`` and from the
API server's audit log, and the percentiles ``real.py`` reports.

Pure functions of their text arguments (no I/O), so the unit tests can check them. Imported as
``request_counts`` by ``bench/real.py`` (run as a script, its folder first on ``sys.path``) and as
``bench.request_counts`` by the tests.

A request is keyed by :class:`Request`: the verb as ``apiserver_request_total`` names it (``GET``,
``LIST``, ``WATCH``, ``POST``, ``PUT``, ``PATCH``, ``APPLY``, ``DELETE``), the resource, the
subresource (``""`` for none) and the HTTP code, so counts from both sources line up.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from prometheus_client.parser import text_string_to_metric_families

METRIC = "apiserver_request_total"
#: The audit log's verbs, as ``apiserver_request_total`` names them.
AUDIT_VERBS = {
    "get": "GET",
    "list": "LIST",
    "watch": "WATCH",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETE",
}


class Request(NamedTuple):
    """One kind of request: verb, resource, subresource (``""``: none) and HTTP code."""

    verb: str
    resource: str
    subresource: str
    code: str

    def describe(self) -> str:
        what = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return f"{self.verb} {what} {self.code}"


def from_metrics(text: str) -> Counter[Request]:
    """The ``apiserver_request_total`` counters of a ``/metrics`` page, resource requests only (a
    non-resource URL such as ``/metrics`` itself has no resource label)."""
    counts: Counter[Request] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name != METRIC or not sample.labels.get("resource"):
                continue
            labels = sample.labels
            key = Request(labels["verb"], labels["resource"], labels.get("subresource", ""), labels["code"])
            counts[key] += int(sample.value)
    return counts


def difference(before: Counter[Request], after: Counter[Request]) -> Counter[Request]:
    """What the counters grew by between two reads (keys that did not grow are left out)."""
    grown = Counter({key: after[key] - before.get(key, 0) for key in after})
    return Counter({key: count for key, count in grown.items() if count > 0})


def from_audit(lines: Iterable[str], user_agent_prefix: str) -> Counter[Request]:
    """The completed resource requests of an audit log (JSON lines, ``ResponseComplete`` stage) whose
    user agent starts with ``user_agent_prefix``; other lines and stages are skipped."""
    counts: Counter[Request] = Counter()
    for line in lines:
        if not line.strip():
            continue
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        if (
            event.get("stage") != "ResponseComplete"
            or not ref.get("resource")
            or not str(event.get("userAgent", "")).startswith(user_agent_prefix)
        ):
            continue
        verb = str(event["verb"])
        code = str((event.get("responseStatus") or {}).get("code", ""))
        counts[
            Request(AUDIT_VERBS.get(verb, verb.upper()), ref["resource"], ref.get("subresource", ""), code)
        ] += 1
    return counts


#: The verbs that write (``APPLY`` is a server-side apply PATCH).
WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "APPLY", "DELETE"})
#: What issue 18's table counts as "DGD + PCS + Event writes": writes of DGDs and their status,
#: of PodCliqueSets and of Events (Services and RBAC objects left out).
TABLE_WRITES = frozenset({"dynamographdeployments", "podcliquesets", "events"})


def writes(counts: Mapping[Request, int], resources: Collection[str]) -> int:
    """The write requests (any subresource, any code: every write sent) to ``resources``."""
    return sum(
        count for key, count in counts.items() if key.verb in WRITE_VERBS and key.resource in resources
    )


def clients(lines: Iterable[str]) -> Counter[str]:
    """Completed requests of an audit log by client: the user agent up to its first ``/``."""
    counts: Counter[str] = Counter()
    for line in lines:
        if line.strip():
            event = json.loads(line)
            if event.get("stage") == "ResponseComplete":
                counts[str(event.get("userAgent", "?")).split("/", 1)[0]] += 1
    return counts


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, interpolated linearly between the two nearest
    ranks (as numpy's default); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
