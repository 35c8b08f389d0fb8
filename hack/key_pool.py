"""Write ``dgd/sim/key_pool.json``: the simulation's fixed pool of MPI SSH key pairs.

Run once, from the repository root: ``.venv/bin/python hack/key_pool.py``. The pairs are made by the
daemon's own generator (``dgd.daemon.ssh_keys.generate_key_pair``, ``cryptography``), so they have the
daemon's formats. They are public test data: the simulation hands them out (``dgd.sim.key_pool``) so
that a trace and a seed replay byte for byte; no real cluster must ever use them.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from dgd.daemon.ssh_keys import generate_key_pair
from dgd.sim.key_pool import POOL, PURPOSE, SIZE, Pool


def main() -> None:
    pool = Pool(purpose=PURPOSE, pairs=tuple(generate_key_pair() for _ in range(SIZE)))
    target = Path(__file__).resolve().parents[1] / "dgd" / "sim" / POOL
    target.write_bytes(msgspec.json.format(msgspec.json.encode(pool), indent=2) + b"\n")
    print(f"wrote {SIZE} key pairs to {target}")


if __name__ == "__main__":
    main()
