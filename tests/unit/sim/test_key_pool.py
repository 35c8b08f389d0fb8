"""The simulation's MPI SSH keys: drawn from a fixed pool by the seeded generator, so runs replay."""

from __future__ import annotations

import base64
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from dgd.cluster.resources import DGD, SECRET
from dgd.domain.render.ssh_keys import KeyPair
from dgd.messages.config import OperatorConfig
from dgd.sim import WorldSettings
from dgd.sim.key_pool import SIZE, KeyPool, pool
from dgd.sim.operator import simulated_operator
from tests.keypairs import assert_matching_rsa_2048

ROOT = Path(__file__).resolve().parents[3]
MPI = OperatorConfig().mpi


def test_every_pair_of_the_pool_is_a_distinct_valid_rsa_2048_pair() -> None:
    # given the pool shipped with the simulation; then it holds SIZE distinct pairs cryptography reads
    pairs = pool()
    assert len(pairs) == SIZE == len({pair.private_pem for pair in pairs})
    for pair in pairs:
        assert_matching_rsa_2048(pair)


@pytest.mark.anyio
async def test_the_same_seed_draws_the_same_keys_and_other_seeds_other_ones() -> None:
    # when two sources with the same seed, and sources with other seeds, each draw a few pairs
    async def draws(seed: int) -> list[KeyPair]:
        source = KeyPool(random.Random(seed))
        return [await source() for _ in range(4)]

    # then the same seed gives the same pairs, from the pool, and the seed decides which
    first, again = await draws(1), await draws(1)
    others = [await draws(seed) for seed in range(2, 6)]
    assert first == again
    assert set(first) <= set(pool())
    assert any(other != first for other in others)


def multinode() -> dict[str, Any]:
    """The aggregated example with a worker over two nodes (it needs the MPI SSH key)."""
    document: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "agg.yaml").read_text())
    document["metadata"]["namespace"] = "default"
    worker = next(c for c in document["spec"]["components"] if c["type"] == "worker")
    worker["multinode"] = {"nodeCount": 2}
    return document


async def simulated_key(seed: int) -> KeyPair:
    """The MPI key the simulated operator makes for a multinode graph on a cluster without one."""
    sim = simulated_operator(WorldSettings(), seed=seed, config=OperatorConfig())
    async with sim:
        user = sim.cluster.client()
        await user.delete(SECRET.key(MPI.ssh_secret_namespace, MPI.ssh_secret_name))
        await user.create(DGD.as_raw(), multinode())
        await sim.run_for(30)
        secret = await user.get(SECRET.key(MPI.ssh_secret_namespace, MPI.ssh_secret_name))
    data = {name: base64.b64decode(value).decode() for name, value in secret["data"].items()}
    return KeyPair(data["private.key"], data["private.key.pub"])


@pytest.mark.anyio
async def test_a_simulated_run_makes_its_mpi_key_from_the_pool_the_same_for_the_same_seed() -> None:
    # when the simulated operator runs a multinode graph twice with one seed, on a cluster without a key
    first, again = await simulated_key(3), await simulated_key(3)

    # then both runs stored the same pair, one of the pool's
    assert first == again
    assert first in pool()
