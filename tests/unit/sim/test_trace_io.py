"""Trace files: what reads, what is refused (naming the line), and that writing is deterministic."""

from __future__ import annotations

import pytest

from dgd.messages.trace import (
    VERSION,
    ApiFault,
    Apply,
    Expect,
    Header,
    Kill,
    ObjectRef,
    Patch,
    Trace,
    write_trace,
)
from dgd.sim.trace_io import TraceError, read_trace, world_settings

HEADER = '{"kind": "trace", "version": 1}'
DGD = ObjectRef("nvidia.com/v1beta1", "DynamoGraphDeployment", "demo", "default")


def lines(*records: str) -> str:
    return "\n".join((HEADER, *records)) + "\n"


def refusal(text: str) -> TraceError:
    with pytest.raises(TraceError) as caught:
        read_trace(text)
    return caught.value


def test_a_written_trace_reads_back_equal_and_writes_the_same_bytes() -> None:
    # given a trace with a user action, a fault and an expectation
    trace = Trace(
        Header(version=VERSION, seed=3, settings={"ready_delay": 5.0}, description="demo"),
        (
            Apply(at=0.0, object={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            Kill(at=2.5, path="/operator/dgds/**"),
            ApiFault(at=3.0, verb="patch", error="Conflict", count=2),
            Expect(at=4.0, by=10.0, target=DGD, state="successful", name="up"),
        ),
    )

    # when it is written and read back
    data = write_trace(trace)

    # then it is JSON Lines, one record a line after the header, and reads back equal
    assert data.count(b"\n") == 5 and data.startswith(b'{"kind":"trace","version":1')
    assert read_trace(data) == trace
    assert write_trace(read_trace(data)) == data


def test_object_keys_are_written_sorted_so_equal_traces_give_equal_bytes() -> None:
    manifest_a = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "c"},
        "data": {"b": "1", "a": "2"},
    }
    manifest_b = {
        "apiVersion": "v1",
        "data": {"a": "2", "b": "1"},
        "metadata": {"name": "c"},
        "kind": "ConfigMap",
    }
    one = write_trace(Trace(Header(version=VERSION), (Apply(object=manifest_a),)))
    two = write_trace(Trace(Header(version=VERSION), (Apply(object=manifest_b),)))
    assert one == two


def test_an_unknown_record_kind_is_refused_naming_its_line_and_the_known_kinds() -> None:
    error = refusal(lines('{"kind": "kill", "path": "/operator"}', '{"kind": "explode", "at": 1}'))
    assert error.line == 3
    assert str(error).startswith("line 3: unknown record kind 'explode'; the kinds are apply, delete, patch")


def test_a_bad_field_is_refused_naming_its_line_and_the_field() -> None:
    error = refusal(lines('{"kind": "kill", "at": "soon", "path": "/operator"}'))
    assert str(error) == "line 2: kill: Expected `float`, got `str` - at `$.at`"
    error = refusal(lines('{"kind": "capacity", "pods": 3, "nodes": 2}'))
    assert str(error) == "line 2: capacity: Object contains unknown field `nodes`"


def test_a_negative_time_is_refused() -> None:
    error = refusal(lines('{"kind": "capacity", "at": -1, "pods": 3}'))
    assert error.line == 2 and "$.at" in error.message


def test_a_trace_from_a_newer_release_is_refused_saying_which_version_this_release_reads() -> None:
    error = refusal('{"kind": "trace", "version": 99, "newField": true}\n')
    assert str(error) == (
        "line 1: this trace is format version 99, from a newer release of dgd-operator; "
        f"this release reads version {VERSION}"
    )


def test_the_header_must_come_first_and_only_once() -> None:
    assert refusal('{"kind": "capacity", "pods": 3}\n').message.startswith(
        "the first line must be the trace header"
    )
    assert refusal(lines(HEADER)).message == "a second header: the header is the first line only"
    assert refusal("").message.startswith("the trace is empty")


def test_header_settings_and_config_are_validated_on_line_one() -> None:
    assert str(refusal('{"kind": "trace", "version": 1, "settings": {"readyDelay": -5}}')) == (
        "line 1: header: settings: Expected `float` >= 0.0 - at `$.ready_delay`"
    )
    error = refusal('{"kind": "trace", "version": 1, "config": {"checkpoint": {"enabled": "yes"}}}')
    assert error.line == 1 and 'config: checkpoint.enabled: "yes" is not true or false' in error.message
    error = refusal('{"kind": "trace", "version": 1, "config": {"checkpont": {"enabled": true}}}')
    assert error.line == 1 and '"checkpont" (did you mean "checkpoint"?)' in error.message


def test_header_settings_read_in_camel_or_snake_case() -> None:
    header = read_trace(
        '{"kind": "trace", "version": 1, "settings": {"readyDelay": 5, "schedule_delay": 2}}'
    ).header
    settings = world_settings(header)
    assert (settings.ready_delay, settings.schedule_delay) == (5.0, 2.0)


def test_a_blank_line_between_records_is_refused_but_trailing_ones_are_not() -> None:
    assert refusal(lines('{"kind": "capacity", "pods": 3}', "", '{"kind": "capacity"}')).line == 3
    assert len(read_trace(lines('{"kind": "capacity", "pods": 3}') + "\n\n").records) == 1


def test_records_the_simulated_cluster_cannot_replay_are_refused() -> None:
    statefulset = '{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"}}'
    unserved = f'{{"kind": "apply", "object": {statefulset}}}'
    assert (
        refusal(lines(unserved)).message == "apply: the simulated cluster does not serve apps/v1 StatefulSet"
    )
    nameless = '{"kind": "apply", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}}'
    assert refusal(lines(nameless)).message == "apply: the object needs metadata.name"
    unknown = '{"kind": "watch_drop", "resource": "widgets"}'
    assert refusal(lines(unknown)).message.startswith(
        "watch_drop: unknown resource 'widgets'; use plural.group"
    )
    relative = '{"kind": "kill", "path": "operator/dgds"}'
    assert refusal(lines(relative)).message == "kill: an actor path starts with '/': 'operator/dgds'"
    both = '{"kind": "api_fault", "count": 2, "rate": 0.5}'
    assert refusal(lines(both)).message == "api_fault: give count or rate, not both"


def test_a_scale_patch_must_say_only_how_many_replicas() -> None:
    adapter = (
        '{"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeploymentScalingAdapter", "name": "a"}'
    )
    target = f'"target": {adapter}'
    bad = f'{{"kind": "patch", {target}, "subresource": "scale", "patch": {{"spec": {{"replicas": -1}}}}}}'
    assert refusal(lines(bad)).message == 'patch: a scale patch is {"spec": {"replicas": N}}'
    good = f'{{"kind": "patch", {target}, "subresource": "scale", "patch": {{"spec": {{"replicas": 3}}}}}}'
    (record,) = read_trace(lines(good)).records
    assert isinstance(record, Patch) and record.patch == {"spec": {"replicas": 3}}


def test_an_expectation_must_check_something_it_can_read() -> None:
    target = '"target": {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment", "name": "d"}'
    nothing = f'{{"kind": "expect", {target}}}'
    assert refusal(lines(nothing)).message.startswith("expect: an expectation checks something")
    bad_path = f'{{"kind": "expect", {target}, "path": "$.status..state", "equals": 1}}'
    assert refusal(lines(bad_path)).message.startswith("expect: cannot read '$.status..state' from '..state'")
    no_status = f'{{"kind": "expect", {target}, "condition": "Ready"}}'
    assert refusal(lines(no_status)).message == "expect: give the status the condition Ready should have"
    early = f'{{"kind": "expect", {target}, "at": 10, "by": 5, "state": "pending"}}'
    assert refusal(lines(early)).message == "expect: by (5) is before at (10)"
