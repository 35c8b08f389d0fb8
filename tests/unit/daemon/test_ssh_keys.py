"""The daemon's MPI SSH keys: fresh RSA-2048 pairs from ``cryptography``, made off the event loop."""

from __future__ import annotations

import base64
import threading
from typing import Any

import anyio
import anyio.from_thread
import pytest

from dgd.cluster.errors import NotFound
from dgd.cluster.resources import SECRET, ObjectKey
from dgd.daemon import ssh_keys
from dgd.domain.render.ssh_keys import KeyPair
from tests.keypairs import assert_matching_rsa_2048
from tests.unit.actors.operator.harness import Harness, running_operator
from tests.unit.actors.operator.test_shared_resources import multinode

pytestmark = pytest.mark.anyio


async def stored(op: Harness, key: ObjectKey[Any]) -> Any:
    """The object at ``key`` once the operator has written it (the key is made on a worker thread,
    which ``settle`` cannot see: the loop is given real time until the thread is done)."""
    while True:
        try:
            return await op.cluster.get(key)
        except NotFound:
            await anyio.sleep(0.01)
            await op.settle()


def observed_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The threads the daemon's generator runs on, from now on (it still makes real keys)."""
    threads: list[int] = []
    generate = ssh_keys.generate_key_pair

    def observed() -> KeyPair:
        threads.append(threading.get_ident())
        return generate()

    monkeypatch.setattr(ssh_keys, "generate_key_pair", observed)
    return threads


async def test_a_key_is_made_on_a_worker_thread_never_on_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given the daemon's key source, its generator watched
    threads = observed_threads(monkeypatch)
    loop = threading.get_ident()

    # when two keys are asked for, one after the other
    source = ssh_keys.SecureKeys()
    first, second = await source(), await source()

    # then each was made off the loop's thread, and each is a fresh, valid pair
    assert len(threads) == 2 and loop not in threads
    assert first != second
    for pair in (first, second):
        assert_matching_rsa_2048(pair)


async def test_callers_that_ask_while_a_key_is_made_share_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # given the daemon's key source, its generator watched
    threads = observed_threads(monkeypatch)
    source = ssh_keys.SecureKeys()

    # when three reconciles ask for a key at once
    pairs: list[KeyPair] = []

    async def ask() -> None:
        pairs.append(await source())

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(ask)

    # then one key was made, on one worker thread, and all three got it (one Secret will hold it)
    assert len(threads) == 1
    assert len(pairs) == 3 and len(set(pairs)) == 1


async def test_when_making_a_key_fails_those_waiting_for_it_make_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given the daemon's key source, whose first key fails once the test lets it go on
    started, release = anyio.Event(), threading.Event()
    generate = ssh_keys.generate_key_pair
    made: list[KeyPair] = []

    def failing_first() -> KeyPair:
        if not started.is_set():
            anyio.from_thread.run_sync(started.set)
            release.wait()
            raise RuntimeError("the random source failed")
        made.append(generate())
        return made[-1]

    monkeypatch.setattr(ssh_keys, "generate_key_pair", failing_first)
    source = ssh_keys.SecureKeys()
    got: list[KeyPair] = []

    async def ask() -> None:
        got.append(await source())

    async def ask_and_fail() -> None:
        with pytest.raises(RuntimeError, match="random source"):
            await source()

    async with anyio.create_task_group() as tg:
        # and one reconcile making a key while another waits for it
        tg.start_soon(ask_and_fail)
        await started.wait()
        tg.start_soon(ask)
        await anyio.wait_all_tasks_blocked()

        # when making the first key fails
        release.set()

    # then the one waiting made a key of its own, and got it
    assert len(made) == 1
    assert got == made


def test_a_key_pair_is_rsa_2048_pkcs1_pem_and_its_openssh_public_key() -> None:
    # when the generator makes a pair
    pair = ssh_keys.generate_key_pair()

    # then cryptography reads it back: PKCS#1 PEM, one authorized_keys line, the same key
    assert_matching_rsa_2048(pair)


async def test_a_multinode_graph_without_an_mpi_secret_gets_a_key_made_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads = observed_threads(monkeypatch)
    loop = threading.get_ident()
    async with running_operator(mpi_secret=False, keys=ssh_keys.SecureKeys()) as op:
        # given a cluster without the MPI SSH key Secret, and the daemon's key source
        # when a multinode graph is applied (and the worker thread has had time to make the key)
        await op.apply(multinode())
        source = await stored(op, SECRET.key("dynamo-system", "mpi-run-ssh-secret"))

    # then the key was made on a worker thread, and the Secret holds a valid pair
    assert len(threads) == 1 and loop not in threads
    data = {name: base64.b64decode(value).decode() for name, value in source["data"].items()}
    assert_matching_rsa_2048(KeyPair(data["private.key"], data["private.key.pub"]))
