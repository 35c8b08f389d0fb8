"""List: label selectors (equality- and set-based) and namespaces."""

from __future__ import annotations

import pytest

from dgd.cluster.errors import Invalid
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CONFIG_MAP
from tests.conformance.builders import config_map

pytestmark = pytest.mark.anyio


@pytest.fixture
async def labelled(cluster: Cluster) -> Cluster:
    """Four ConfigMaps in team-a: a (tier=web, env=prod), b (tier=db, env=prod), c (tier=web), d (none)."""
    for name, labels in {
        "a": {"tier": "web", "env": "prod"},
        "b": {"tier": "db", "env": "prod"},
        "c": {"tier": "web"},
        "d": {},
    }.items():
        await cluster.create(CONFIG_MAP, config_map(name, labels=labels))
    return cluster


async def names(cluster: Cluster, selector: str | None, namespace: str | None = "team-a") -> list[str]:
    listed = await cluster.list(CONFIG_MAP, namespace=namespace, label_selector=selector)
    return [item["metadata"]["name"] for item in listed.items]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=web", ["a", "c"]),
        ("tier==web", ["a", "c"]),
        ("tier!=web", ["b", "d"]),
        ("tier=web,env=prod", ["a"]),
        ("", ["a", "b", "c", "d"]),
    ],
)
async def test_equality_selectors(labelled: Cluster, selector: str, expected: list[str]) -> None:
    """`k=v` and `k==v` need the label with that value; `k!=v` also matches objects without it;
    commas AND the requirements; an empty selector matches everything."""
    assert await names(labelled, selector) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier in (web,db)", ["a", "b", "c"]),
        ("tier notin (web)", ["b", "d"]),
        ("env", ["a", "b"]),
        ("!env", ["c", "d"]),
        ("tier in (web), !env", ["c"]),
        ("tier in ()", []),
        ("tier notin ()", ["a", "b", "c", "d"]),
    ],
)
async def test_set_based_selectors(labelled: Cluster, selector: str, expected: list[str]) -> None:
    """`in`/`notin` test membership (`notin` also matches without the label; an empty set matches
    nothing, or everything); `k` needs the label to exist, `!k` needs it absent."""
    assert await names(labelled, selector) == expected


@pytest.mark.parametrize("selector", ["tier in web", "tier in (web", "=web", "tier=a b", "bad key=v"])
async def test_malformed_selector_is_rejected(labelled: Cluster, selector: str) -> None:
    """A selector that does not parse: 400 BadRequest (raised as Invalid)."""
    with pytest.raises(Invalid):
        await names(labelled, selector)


async def test_list_is_scoped_to_one_namespace_or_all(cluster: Cluster) -> None:
    """namespace=X lists only X; no namespace lists every namespace, ordered by namespace, name."""
    await cluster.create(CONFIG_MAP, config_map("z", namespace="team-b"))
    await cluster.create(CONFIG_MAP, config_map("y", namespace="team-a"))
    await cluster.create(CONFIG_MAP, config_map("x", namespace="team-b"))

    everywhere = await cluster.list(CONFIG_MAP)
    ours = [
        (i["metadata"]["namespace"], i["metadata"]["name"])
        for i in everywhere.items
        if i["metadata"]["namespace"] in ("team-a", "team-b")
    ]

    assert await names(cluster, None, namespace="team-b") == ["x", "z"]
    assert ours == [("team-a", "y"), ("team-b", "x"), ("team-b", "z")]


async def test_list_returns_the_current_resource_version(cluster: Cluster) -> None:
    """The list's resourceVersion is at least that of every object in it."""
    created = await cluster.create(CONFIG_MAP, config_map("a"))

    listed = await cluster.list(CONFIG_MAP)

    assert int(listed.resource_version) >= int(created["metadata"]["resourceVersion"])
