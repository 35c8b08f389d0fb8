"""The daemon's MPI SSH keys: fresh 2048-bit RSA pairs from ``cryptography``, made off the event loop.

``secure_keys`` is the daemon's ``KeySource``: each call makes a new pair from the operating system's
random source (OpenSSL's CSPRNG) in a worker thread (``anyio.to_thread``), so the loop keeps serving
watches, reconciles and lease renewals while the key is made (about 0.1 s of CPU a key; OpenSSL
releases the GIL while it searches for primes). The formats are ``ssh-keygen``'s: the private key
PKCS#1 PEM, the public key one OpenSSH ``authorized_keys`` line.
"""

from __future__ import annotations

import anyio.to_thread
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from dgd.domain.render.ssh_keys import KeyPair

#: The size of the MPI key, as ``ssh-keygen -t rsa -b 2048``.
BITS = 2048
#: The public exponent every RSA implementation uses (F4).
PUBLIC_EXPONENT = 65537


async def secure_keys() -> KeyPair:
    """A fresh key pair, made in a worker thread (the loop is free meanwhile)."""
    return await anyio.to_thread.run_sync(generate_key_pair)


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
