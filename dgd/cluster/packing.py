"""``Packing``: the bytes of many similar objects, kept deflated against a dictionary of their kind.

Objects of one kind share most of their bytes (field names, label keys, pod templates, the example a
fleet was made from), so a raw deflate stream (zlib) that may refer back into one such object from
its first byte keeps little more than what differs: a simulated pod of 3.4 kB packs into some
hundred bytes, where deflate alone makes 1.3 kB of it. The memory API server's store packs the
versions it keeps (``dgd.cluster.memory.store``) and the informer cache the objects it holds
(``dgd.actors.machinery.packed_kind``), one ``Packing`` per kind. Packing a few kB costs tens of
µs, unpacking a few: less than decoding what was unpacked.

The dictionary is the first thing packed (its last 32 KiB, deflate's window), fixed from then on,
since everything packed needs it to be unpacked again; a first object unlike the ones after it only
packs them less well. Deterministic: the same bytes packed in the same order give the same output.
"""

from __future__ import annotations

import zlib

#: Deflate's window: a dictionary longer than this helps no more.
WINDOW = 32 * 1024
#: zlib's compression level: against a dictionary, 3 packs nearly as well as 9, much faster.
LEVEL = 3
#: Raw deflate (no zlib header or checksum): the bytes are never kept anywhere else.
_RAW = -15


class Packing:
    """Packs and unpacks the bytes of one kind of object (see the module). Not thread-safe."""

    __slots__ = ("_dictionary",)

    def __init__(self) -> None:
        self._dictionary: bytes | None = None

    def pack(self, data: bytes) -> bytes:
        """``data``, deflated against the dictionary (``data`` itself becomes it, if it is the first)."""
        if self._dictionary is None:
            self._dictionary = data[-WINDOW:]
        compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, _RAW, zdict=self._dictionary)
        return compressor.compress(data) + compressor.flush()

    def unpack(self, packed: bytes) -> bytes:
        """The bytes ``pack`` was given."""
        assert self._dictionary is not None, "unpack of bytes this packing never packed"
        decompressor = zlib.decompressobj(_RAW, zdict=self._dictionary)
        return decompressor.decompress(packed) + decompressor.flush()
