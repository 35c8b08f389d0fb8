"""The daemon's MPI SSH keys: fresh 2048-bit RSA pairs from ``cryptography``, made off the event loop.

``SecureKeys()`` is the daemon's ``KeySource``: it makes a new pair from the operating system's random
source (OpenSSL's CSPRNG) in a worker thread (``anyio.to_thread``), so the loop keeps serving watches,
reconciles and lease renewals while the key is made (about 0.1 s of CPU; ``cryptography`` releases
the GIL while OpenSSL works). One pair is made at a time: callers that ask while one is being made
get that one. A cluster needs one key pair (one Secret holds it, and the first create wins), and
many key threads at once starve the loop's thread of CPU (``bench/keys.py``). The formats are
``ssh-keygen``'s: the private key PKCS#1 PEM, the public key one OpenSSH ``authorized_keys`` line.
"""

from __future__ import annotations

import anyio
import anyio.to_thread
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from dgd.domain.render.ssh_keys import KeyPair

#: The size of the MPI key, as ``ssh-keygen -t rsa -b 2048``.
BITS = 2048
#: The public exponent every RSA implementation uses (F4).
PUBLIC_EXPONENT = 65537


class _Making:
    """A pair being made: ``done`` once the thread returned; ``pair`` is ``None`` if it failed."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.pair: KeyPair | None = None


class SecureKeys:
    """The daemon's key source (see the module). Guarantees: the key is made on a worker thread, never
    on the event loop; at most one is being made at a time; a call made after another returned gets a
    fresh pair. Use it from one event loop."""

    def __init__(self) -> None:
        self._making: _Making | None = None

    async def __call__(self) -> KeyPair:
        while True:
            making = self._making
            if making is None:
                return await self._make()
            await making.done.wait()
            if making.pair is not None:
                return making.pair
            # The maker failed or was cancelled: make one here.

    async def _make(self) -> KeyPair:
        making = self._making = _Making()
        try:
            making.pair = await anyio.to_thread.run_sync(generate_key_pair)
            return making.pair
        finally:
            self._making = None
            making.done.set()


def generate_key_pair() -> KeyPair:
    """A fresh key pair, made on the calling thread: CPU-bound, never call it on the event loop."""
    key = rsa.generate_private_key(public_exponent=PUBLIC_EXPONENT, key_size=BITS)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return KeyPair(private.decode("ascii"), public.decode("ascii") + "\n")
