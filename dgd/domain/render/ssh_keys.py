"""The MPI SSH key pair: the value the operator stores in the MPI Secret when the cluster has none.

The domain knows what a key pair is, not how one is made: a ``KeySource`` is passed in. The daemon's
(``dgd.daemon.ssh_keys.SecureKeys``) makes a fresh 2048-bit RSA pair with ``cryptography`` in a
worker thread; the simulation's (``dgd.sim.key_pool.KeyPool``) draws from a fixed pool with its seeded
generator, so runs replay. Either way the private key is PKCS#1 PEM (``-----BEGIN RSA PRIVATE
KEY-----``), as ``ssh-keygen -t rsa -m PEM`` writes it, and the public key one OpenSSH
``authorized_keys`` line.
"""

from __future__ import annotations

from typing import Protocol

import msgspec


class KeyPair(msgspec.Struct, frozen=True):
    """A private key (PEM) and its public key (an OpenSSH line ending in a newline)."""

    private_pem: str
    public_openssh: str


class KeySource(Protocol):
    """Where key pairs come from. Guarantee of every source: awaiting it never blocks the event loop
    (CPU-bound work runs in a worker thread, or there is none)."""

    async def __call__(self) -> KeyPair:
        """A key pair for a new MPI Secret."""
        ...
