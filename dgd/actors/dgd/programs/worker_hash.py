"""The desired worker hash of a DGD (dgd-domain §12.1), computed once per spec and metadata."""

from __future__ import annotations

import msgspec

from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER
from dgd.domain.worker_generation import CURRENT_WORKER_HASH, CURRENT_WORKER_HASH_V2
from dgd.domain.worker_hash import worker_hash
from dgd.messages.dgd import DynamoGraphDeployment

#: DGD annotations the operator writes that the worker hash does not read.
_OWN_ANNOTATIONS = frozenset({CURRENT_WORKER_HASH, CURRENT_WORKER_HASH_V2, WORKLOAD_PROVIDER})

_PACK = msgspec.msgpack.Encoder()


def _without_replicas(dgd: DynamoGraphDeployment) -> bytes:
    """The DGD's spec, its components' replicas left out, as bytes to compare."""
    components = [msgspec.structs.replace(c, replicas=None) for c in dgd.spec.components or []]
    return _PACK.encode(msgspec.structs.replace(dgd.spec, components=components))


class DesiredWorkerHash:
    """The desired worker hash of one DGD, remembered with a digest of what it was computed from (a
    few bytes per DGD): the hash is the costliest render, and most reconciles do not change its
    inputs. The annotations the operator writes itself (the worker hashes and the provider) are not
    among its inputs, so recording them does not compute it again; nor are the components' replicas,
    which the hash leaves out by definition (``dgd.domain.worker_hash``), so a scale does not."""

    def __init__(self) -> None:
        self._inputs: int | None = None
        self._hash = ""

    def of(self, dgd: DynamoGraphDeployment) -> str:
        """The desired worker hash of ``dgd`` (defaulted); pure in effect."""
        annotations = {k: v for k, v in (dgd.metadata.annotations or {}).items() if k not in _OWN_ANNOTATIONS}
        inputs = hash((_without_replicas(dgd), msgspec.json.encode(annotations)))
        if inputs != self._inputs:
            self._hash, self._inputs = worker_hash(dgd), inputs
        return self._hash
