"""Packing a kind's bytes against its first object: what is packed unpacks to the same bytes, and
objects like the first pack into far fewer bytes than they have."""

from __future__ import annotations

import json
import zlib

from dgd.cluster.packing import Packing


def pod(name: str, phase: str) -> bytes:
    document = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name, "tier": "worker"}},
        "spec": {"containers": [{"name": "main", "image": "vllm-runtime:1.5.0", "args": ["--port", "8000"]}]},
        "status": {"phase": phase},
    }
    return json.dumps(document).encode()


def test_what_is_packed_unpacks_to_the_same_bytes() -> None:
    # given a packing that has packed a first object
    packing = Packing()
    first = pod("graph-00000-worker", "Pending")
    packed_first = packing.pack(first)

    # when objects of the same kind are packed after it, then each unpacks to its own bytes
    others = [pod(f"graph-{index:05d}-worker", "Running") for index in range(1, 20)]
    packed = [packing.pack(other) for other in others]
    assert packing.unpack(packed_first) == first
    assert [packing.unpack(each) for each in packed] == others


def test_objects_like_the_first_pack_into_fewer_bytes_than_deflate_alone_makes_of_them() -> None:
    # given a packing whose dictionary is a first pod
    packing = Packing()
    packing.pack(pod("graph-00000-worker", "Pending"))

    # when a pod differing in its name and phase is packed
    other = pod("graph-04217-worker", "Running")
    packed = packing.pack(other)

    # then it keeps less than a quarter of deflate's own output (what differs, mostly)
    assert len(packed) * 4 < len(zlib.compress(other, 9))


def test_the_same_bytes_packed_in_the_same_order_give_the_same_output() -> None:
    # given two packings fed the same objects in the same order
    objects = [pod(f"graph-{index:05d}-worker", "Running") for index in range(5)]
    one, two = Packing(), Packing()

    # then they pack them to the same bytes
    assert [one.pack(each) for each in objects] == [two.pack(each) for each in objects]
