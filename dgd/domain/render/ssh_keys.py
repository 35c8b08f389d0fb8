"""The MPI SSH key pair: 2048-bit RSA, as ``ssh-keygen -t rsa -b 2048`` would write it.

``rsa_key_pair(rng)`` is a function of its random source: the daemon passes ``random.SystemRandom()``
(the operating system's CSPRNG); the simulation passes its seeded generator, so runs replay. The
private key is PKCS#1 PEM (``-----BEGIN RSA PRIVATE KEY-----``), the public key one OpenSSH
``authorized_keys`` line.
"""

from __future__ import annotations

import base64
import math
import random

import msgspec

_E = 65537
_SMALL_PRIMES = [p for p in range(3, 2000, 2) if all(p % d for d in range(3, math.isqrt(p) + 1, 2))]


class KeyPair(msgspec.Struct, frozen=True):
    """A private key (PEM) and its public key (an OpenSSH line ending in a newline)."""

    private_pem: str
    public_openssh: str


def _probably_prime(n: int, rng: random.Random, rounds: int = 40) -> bool:
    if any(n % p == 0 for p in _SMALL_PRIMES):
        return n in _SMALL_PRIMES
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for _ in range(rounds):
        x = pow(rng.randrange(2, n - 1), d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(bits: int, rng: random.Random) -> int:
    while True:
        # Top two bits set (the product has the full size), odd, and e must be invertible mod p-1.
        candidate = rng.getrandbits(bits) | (3 << (bits - 2)) | 1
        if (candidate - 1) % _E and _probably_prime(candidate, rng):
            return candidate


def _der_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    raw = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def _der_integer(value: int) -> bytes:
    raw = value.to_bytes(value.bit_length() // 8 + 1, "big")
    return b"\x02" + _der_length(len(raw)) + raw


def _ssh_string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _ssh_mpint(value: int) -> bytes:
    return _ssh_string(value.to_bytes(value.bit_length() // 8 + 1, "big"))


def rsa_key_pair(rng: random.Random, bits: int = 2048) -> KeyPair:
    """A fresh RSA key pair drawn from ``rng``."""
    while True:
        p, q = _prime(bits // 2, rng), _prime(bits // 2, rng)
        if p != q and (p * q).bit_length() == bits:
            break
    n = p * q
    d = pow(_E, -1, math.lcm(p - 1, q - 1))
    fields = (0, n, _E, d, p, q, d % (p - 1), d % (q - 1), pow(q, -1, p))
    content = b"".join(_der_integer(value) for value in fields)
    der = b"\x30" + _der_length(len(content)) + content
    encoded = base64.b64encode(der).decode("ascii")
    lines = [encoded[i : i + 64] for i in range(0, len(encoded), 64)]
    private = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----\n"
    blob = _ssh_string(b"ssh-rsa") + _ssh_mpint(_E) + _ssh_mpint(n)
    public = f"ssh-rsa {base64.b64encode(blob).decode('ascii')}\n"
    return KeyPair(private, public)
