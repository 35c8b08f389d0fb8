"""SIMULATION ONLY: MPI SSH keys drawn from a fixed pool, so a trace and a seed replay byte for byte.

``KeyPool(random.Random(seed))`` is the simulation's ``KeySource``: each call returns one of the
``SIZE`` pre-generated key pairs of ``key_pool.json`` (package data beside this module), chosen by
the seeded generator. It does no cryptography and no I/O on the loop past the first read of the
file, so it takes no virtual time and the same seed gives the same keys.

The pairs are public: they are in the repository. They exist so that simulated multinode graphs get
a Secret in the daemon's formats; the daemon never uses them (it cannot import ``dgd.sim``: the import
contracts forbid it) and makes fresh keys instead (``dgd.daemon.ssh_keys``). ``hack/key_pool.py``
rewrote the file with the daemon's generator.
"""

from __future__ import annotations

import functools
import random
from importlib import resources

import msgspec

from dgd.domain.render.ssh_keys import KeyPair

#: The pool's file, beside this module.
POOL = "key_pool.json"
#: How many pairs the pool holds.
SIZE = 8
#: What the file says about itself.
PURPOSE = (
    "SIMULATION ONLY: public, pre-generated MPI SSH key pairs that dgd.sim.key_pool draws from with the "
    "simulation's seeded generator. Never use them on a real cluster; the daemon makes fresh keys."
)


class Pool(msgspec.Struct, frozen=True):
    """The file's content: what it is for, and the pairs."""

    purpose: str
    pairs: tuple[KeyPair, ...]


class KeyPool:
    """A ``KeySource`` for the simulation (see the module): a pair from the pool, drawn by ``rng``."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    async def __call__(self) -> KeyPair:
        pairs = pool()
        return pairs[self._rng.randrange(len(pairs))]


@functools.cache
def pool() -> tuple[KeyPair, ...]:
    """The pairs of the pool file (read once per process)."""
    data = resources.files("dgd.sim").joinpath(POOL).read_bytes()
    pairs = msgspec.json.decode(data, type=Pool).pairs
    if not pairs:
        raise ValueError(f"{POOL} holds no key pair")
    return pairs
