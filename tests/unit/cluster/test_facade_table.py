"""Server-side printing for kubectl get: the JSONPath subset, ages, and Table rows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dgd.sim.apiserver.table import Printer, find, human_duration, render_table

NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC).timestamp()

DGD = {
    "apiVersion": "nvidia.com/v1beta1",
    "kind": "DynamoGraphDeployment",
    "metadata": {"name": "demo", "namespace": "default", "creationTimestamp": "2026-06-01T11:55:30Z"},
    "spec": {"backendFramework": "vllm", "components": [{"name": "a", "replicas": 2}, {"name": "b"}]},
    "status": {
        "state": "successful",
        "conditions": [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}],
    },
}
COLUMNS = [
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "State", "type": "string", "jsonPath": ".status.state"},
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.components[0].replicas", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".status.state", ["successful"]),
        ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
        (".status.conditions[?(@.type=='Other')].status", ["False"]),
        (".spec.components[*].name", ["a", "b"]),
        (".spec.components[-1].name", ["b"]),
        (".spec.components[?(@.replicas)].name", ["a"]),
        ("{.metadata['name']}", ["demo"]),
        (".status.missing.field", []),
    ],
)
def test_find_evaluates_the_jsonpath_subset_of_printer_columns(path: str, expected: list[object]) -> None:
    assert find(DGD, path) == expected


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (42, "42s"),
        (130, "2m10s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (400 * 86400, "400d"),
        (3 * 365 * 86400 + 86400, "3y1d"),
    ],
)
def test_ages_print_as_kubectl_prints_them(seconds: float, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_table_has_the_name_column_then_the_printer_columns() -> None:
    # when a DGD is printed with its CRD's columns
    table = render_table(COLUMNS, [DGD], now=NOW, resource_version="7")

    # then the columns are Name then the CRD's, and the row holds the evaluated cells and the metadata
    assert [column["name"] for column in table["columnDefinitions"]] == [
        "Name",
        "Ready",
        "State",
        "Replicas",
        "Age",
    ]
    assert table["columnDefinitions"][3]["priority"] == 1
    assert table["rows"][0]["cells"] == ["demo", "True", "successful", 2, "4m30s"]
    assert table["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": DGD["metadata"],
    }
    assert (table["kind"], table["apiVersion"], table["metadata"]) == (
        "Table",
        "meta.k8s.io/v1",
        {"resourceVersion": "7"},
    )


def test_kind_without_printer_columns_shows_its_age_and_missing_cells_are_null() -> None:
    # given an object without status
    bare = {"metadata": {"name": "x", "creationTimestamp": "2026-06-01T11:59:00Z"}}

    # when printed without columns, and with a column it lacks
    plain = render_table([], [bare], now=NOW)
    missing = render_table(COLUMNS[:1], [bare], now=NOW)

    # then the default is Name and Age, and the missing cell is null (kubectl shows <none>)
    assert [column["name"] for column in plain["columnDefinitions"]] == ["Name", "Age"]
    assert plain["rows"][0]["cells"] == ["x", "60s"]
    assert missing["rows"][0]["cells"] == ["x", None]


def test_printer_includes_the_whole_object_or_none_as_asked() -> None:
    # given printers asked for whole objects and for none
    whole = Printer(COLUMNS, include="Object", clock=lambda: NOW)
    nothing = Printer(COLUMNS, include="None", clock=lambda: NOW)

    # when each prints one row
    with_object = whole.row(DGD)["rows"][0]
    without = nothing.row(DGD)["rows"][0]

    # then the row carries the object, or no object
    assert with_object["object"] == DGD
    assert "object" not in without
