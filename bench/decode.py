"""How fast a DGD decodes from JSON: ``msgspec`` into the typed model vs ``json.loads`` into dicts.

Every upstream DGD document (examples, fixtures, golden inputs; found by ``tests.upstream``) is
serialized to JSON bytes once. v1alpha1 documents are first converted to v1beta1 (when
``dgd.domain.conversion.dgd`` is importable), so every document decodes as a v1beta1
``DynamoGraphDeployment``. Then, in the same run, each document and the whole set are decoded many
times with both decoders; each number is the best of several rounds, which filters out most noise
from other processes.

Run from the repository root: ``.venv/bin/python bench/decode.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from typing import Any

import checkout  # noqa: F401  (the repository first on sys.path)
import msgspec
from machine import command, cpu_model, python

from dgd.messages.dgd import API_VERSION_V1ALPHA1, DynamoGraphDeployment
from tests.upstream import UPSTREAM, dgd_documents

Loop = Callable[[list[bytes], int], None]
Convert = Callable[[dict[str, Any]], dict[str, Any]]

#: Shortened in labels: the directory of the golden inputs.
_GOLDEN = "deploy/operator/internal/controller/"


def decode_with_msgspec(blobs: list[bytes], repetitions: int) -> None:
    decode = msgspec.json.decode
    for _ in range(repetitions):
        for data in blobs:
            decode(data, type=DynamoGraphDeployment)


def decode_with_json(blobs: list[bytes], repetitions: int) -> None:
    loads = json.loads
    for _ in range(repetitions):
        for data in blobs:
            loads(data)


def best_seconds(loop: Loop, blobs: list[bytes], repetitions: int, rounds: int) -> float:
    """Seconds for one decode of ``blobs``: the fastest of ``rounds`` rounds of ``repetitions``."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        loop(blobs, repetitions)
        best = min(best, time.perf_counter() - start)
    return best / repetitions


def repetitions_for(blobs: list[bytes], min_round_seconds: float) -> int:
    """Enough repetitions that one round of the faster decoder lasts ``min_round_seconds``."""
    once = best_seconds(decode_with_json, blobs, 20, 3)
    return max(20, int(min_round_seconds / max(once, 1e-9)))


def converter() -> Convert | None:
    """The v1alpha1 -> v1beta1 conversion, ``None`` when ``dgd.domain.conversion.dgd`` is not importable."""
    try:
        from dgd.domain.conversion.dgd import dgd_to_v1beta1
    except ImportError:
        return None
    return dgd_to_v1beta1


def load_blobs() -> tuple[list[tuple[str, bytes]], list[str]]:
    """(label, JSON bytes) of every upstream DGD, and what was converted or skipped on the way."""
    convert = converter()
    blobs: list[tuple[str, bytes]] = []
    notes: list[str] = []
    for path, index, document in dgd_documents():
        label = f"{path.removeprefix('ai-dynamo-dynamo/').replace(_GOLDEN, '')}#{index}"
        if document.get("apiVersion") == API_VERSION_V1ALPHA1:
            if convert is None:
                notes.append(f"skipped (v1alpha1, conversion module not available): {label}")
                continue
            document = convert(document)
            notes.append(f"converted v1alpha1 -> v1beta1 before serializing: {label}")
        data = msgspec.json.encode(document)
        msgspec.json.decode(data, type=DynamoGraphDeployment)  # every input must decode before timing
        blobs.append((label, data))
    return blobs, notes


def ratio_words(msgspec_seconds: float, json_seconds: float) -> str:
    ratio = msgspec_seconds / json_seconds
    if ratio <= 1:
        return f"{ratio:5.2f}  ({1 / ratio:.2f}x faster)"
    return f"{ratio:5.2f}  ({ratio:.2f}x slower)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds per measurement; the best counts")
    parser.add_argument("--round-seconds", type=float, default=0.05, help="minimum length of one round")
    args = parser.parse_args()

    # Inputs: serialized once, outside every timed region.
    blobs, notes = load_blobs()
    every = [data for _, data in blobs]
    total_repetitions = repetitions_for(every, args.round_seconds * 2)

    width = max(len(label) for label, _ in blobs)
    rounds, seconds = args.rounds, args.round_seconds

    print("Method")
    print(f"  command:     {command()}")
    print(f"  python:      {python()}")
    print(f"  msgspec:     {msgspec.__version__}")
    processor, cpus = platform.processor(), os.cpu_count()
    print(f"  machine:     {platform.machine()}, processor() = {processor!r}, cpu_count() = {cpus}")
    print(f"  cpu model:   {cpu_model()}")
    print(f"  system:      {platform.system()} {platform.release()}")
    print(f"  upstream:    {UPSTREAM}")
    print(f"  documents:   {len(blobs)} DGDs, {sum(len(b) for b in every)} JSON bytes in total")
    print("  (a) msgspec: msgspec.json.decode(data, type=DynamoGraphDeployment)  -> validated Structs")
    print("  (b) json:    json.loads(data)                                       -> plain dicts")
    print(f"  timing:      time.perf_counter, best of {rounds} rounds, each round >= ~{seconds}s of")
    print(f"               repeated decodes ({total_repetitions} repetitions of the whole set)")
    for note in notes:
        print(f"  note:        {note}")
    print()

    # Per document, then the whole set in one loop.
    header = f"{'document':<{width}} {'bytes':>6} {'msgspec us':>11} {'json us':>8}  msgspec/json"
    print(header)
    print("-" * len(header))
    for label, data in blobs:
        repetitions = repetitions_for([data], seconds)
        fast = best_seconds(decode_with_msgspec, [data], repetitions, rounds)
        plain = best_seconds(decode_with_json, [data], repetitions, rounds)
        print(row(label, width, len(data), fast, plain))
    fast = best_seconds(decode_with_msgspec, every, total_repetitions, rounds)
    plain = best_seconds(decode_with_json, every, total_repetitions, rounds)
    print("-" * len(header))
    print(row(f"total: {len(blobs)} documents, one pass", width, sum(map(len, every)), fast, plain))


def row(label: str, width: int, size: int, msgspec_seconds: float, json_seconds: float) -> str:
    times = f"{msgspec_seconds * 1e6:>11.1f} {json_seconds * 1e6:>8.1f}"
    return f"{label:<{width}} {size:>6} {times}  {ratio_words(msgspec_seconds, json_seconds)}"


if __name__ == "__main__":
    main()
