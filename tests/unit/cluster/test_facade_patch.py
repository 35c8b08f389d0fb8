"""The facade's PATCH flavours: RFC 6902 JSON patch and the strategic merge patch approximation."""

from __future__ import annotations

import pytest

from dgd.cluster.errors import Invalid
from dgd.sim.apiserver.patch import json_patch, strategic_merge


def test_json_patch_applies_every_operation_in_order() -> None:
    # given a document
    document = {"a": {"b": 1}, "list": [1, 2], "gone": True}

    # when add, replace, remove, move, copy and test run in order
    patched = json_patch(
        document,
        [
            {"op": "add", "path": "/a/c", "value": 2},
            {"op": "replace", "path": "/a/b", "value": 10},
            {"op": "remove", "path": "/gone"},
            {"op": "add", "path": "/list/-", "value": 3},
            {"op": "add", "path": "/list/0", "value": 0},
            {"op": "move", "from": "/a/c", "path": "/moved"},
            {"op": "copy", "from": "/a", "path": "/copied"},
            {"op": "test", "path": "/moved", "value": 2},
        ],
    )

    # then the result holds every change and the input is untouched
    assert patched == {"a": {"b": 10}, "list": [0, 1, 2, 3], "moved": 2, "copied": {"b": 10}}
    assert document == {"a": {"b": 1}, "list": [1, 2], "gone": True}


def test_json_patch_escapes_slash_and_tilde_in_pointers() -> None:
    # given keys holding '/' and '~' (as label and annotation keys do)
    document = {"metadata": {"labels": {"app.kubernetes.io/name": "x", "a~b": "y"}}}

    # when they are replaced through escaped pointers
    patched = json_patch(
        document,
        [
            {"op": "replace", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "z"},
            {"op": "remove", "path": "/metadata/labels/a~0b"},
        ],
    )

    # then the right keys changed
    assert patched == {"metadata": {"labels": {"app.kubernetes.io/name": "z"}}}


@pytest.mark.parametrize(
    "operations",
    [
        [{"op": "test", "path": "/a", "value": 2}],
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "remove", "path": "/list/5"}],
        [{"op": "frobnicate", "path": "/a"}],
        {"op": "add", "path": "/a", "value": 1},
    ],
)
def test_json_patch_that_cannot_apply_is_invalid(operations: object) -> None:
    # given a document and a patch that fails (failed test, missing path, bad index, bad op, not a list)
    document = {"a": 1, "list": [1]}

    # when / then it is refused as Invalid
    with pytest.raises(Invalid):
        json_patch(document, operations)


def test_strategic_merge_merges_containers_by_name_and_keeps_their_other_fields() -> None:
    # given a pod spec with two containers
    spec = {
        "containers": [
            {"name": "main", "image": "a:1", "command": ["run"]},
            {"name": "sidecar", "image": "s:1"},
        ]
    }

    # when kubectl's strategic patch changes one image (with its element-order directive)
    patched = strategic_merge(
        spec,
        {
            "$setElementOrder/containers": [{"name": "main"}, {"name": "sidecar"}],
            "containers": [{"name": "main", "image": "a:2"}],
        },
    )

    # then that container keeps its command and the other container stays
    assert patched == {
        "containers": [
            {"name": "main", "image": "a:2", "command": ["run"]},
            {"name": "sidecar", "image": "s:1"},
        ]
    }


def test_strategic_merge_honours_delete_replace_and_primitive_list_directives() -> None:
    # given an object with env entries, finalizers and a map
    target = {
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "finalizers": ["x", "y"],
        "args": ["--a", "--b"],
        "selector": {"app": "web", "tier": "front"},
        "gone": 1,
    }

    # when entries are deleted, the map replaced, a finalizer added and a list value removed
    patched = strategic_merge(
        target,
        {
            "env": [{"name": "A", "$patch": "delete"}],
            "finalizers": ["z"],
            "$deleteFromPrimitiveList/args": ["--a"],
            "selector": {"$patch": "replace", "app": "api"},
            "gone": None,
        },
    )

    # then each directive took effect
    assert patched == {
        "env": [{"name": "B", "value": "2"}],
        "finalizers": ["x", "y", "z"],
        "args": ["--b"],
        "selector": {"app": "api"},
    }


def test_strategic_merge_replaces_lists_without_a_known_merge_key() -> None:
    # given a list of objects the approximation knows no key for (tolerations)
    target = {"tolerations": [{"key": "a"}, {"key": "b"}]}

    # when a patch sets it
    patched = strategic_merge(target, {"tolerations": [{"key": "c"}]})

    # then the list is replaced whole, as a JSON merge patch does
    assert patched == {"tolerations": [{"key": "c"}]}
