"""The MPI SSH key pair the operator generates when the cluster has none."""

from __future__ import annotations

import base64
import random

from dgd.domain.render.ssh_keys import rsa_key_pair


def test_a_key_pair_is_a_2048_bit_rsa_pkcs1_key_and_its_openssh_public_key() -> None:
    # given a seeded source; when a key pair is drawn from it
    pair = rsa_key_pair(random.Random(42))
    # then the private key is PKCS#1 PEM and the public key an authorized_keys line for the same modulus
    assert pair.private_pem.startswith("-----BEGIN RSA PRIVATE KEY-----\n")
    assert pair.private_pem.endswith("-----END RSA PRIVATE KEY-----\n")
    kind, blob = pair.public_openssh.split()
    assert kind == "ssh-rsa"
    raw = base64.b64decode(blob)
    e_len = int.from_bytes(raw[11:15], "big")
    n_len = int.from_bytes(raw[15 + e_len : 19 + e_len], "big")
    modulus = int.from_bytes(raw[19 + e_len : 19 + e_len + n_len], "big")
    assert modulus.bit_length() == 2048
    der = base64.b64decode("".join(pair.private_pem.splitlines()[1:-1]))
    assert modulus.to_bytes(256, "big") in der


def test_the_same_seed_gives_the_same_keys() -> None:
    assert rsa_key_pair(random.Random(1), bits=512) == rsa_key_pair(random.Random(1), bits=512)
