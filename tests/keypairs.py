"""Checks of an MPI SSH key pair with ``cryptography``: the formats ``ssh-keygen`` writes, matching halves."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from dgd.domain.render.ssh_keys import KeyPair


def parsed(pair: KeyPair) -> tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey]:
    """The two halves of ``pair``, parsed; fails unless the private key is unencrypted PKCS#1 PEM and
    the public key one OpenSSH ``authorized_keys`` line ending in a newline, both RSA."""
    assert pair.private_pem.startswith("-----BEGIN RSA PRIVATE KEY-----\n")
    assert pair.private_pem.endswith("-----END RSA PRIVATE KEY-----\n")
    assert pair.public_openssh.startswith("ssh-rsa ") and pair.public_openssh.endswith("\n")
    assert pair.public_openssh.count("\n") == 1
    private = serialization.load_pem_private_key(pair.private_pem.encode(), password=None)
    public = serialization.load_ssh_public_key(pair.public_openssh.encode())
    assert isinstance(private, rsa.RSAPrivateKey) and isinstance(public, rsa.RSAPublicKey)
    return private, public


def assert_matching_rsa_2048(pair: KeyPair) -> None:
    """``pair`` parses (``parsed``), is 2048-bit RSA, and its public key is its private key's."""
    private, public = parsed(pair)
    assert private.key_size == 2048
    assert public.public_numbers() == private.public_key().public_numbers()
