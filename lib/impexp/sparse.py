"""Reading sparse files and the checksum of a transfer (ganeti.impexp).

A regular file's holes are found with SEEK_DATA/SEEK_HOLE and reported
instead of read, so that an empty disk costs nothing to copy; the
checksum then describes the holes rather than hashing them as zeros.
"""

import errno
import hashlib
import os
import struct
from typing import Any

# Bytes read at once (a data frame of the transfer holds at most this)
CHUNK_SIZE = 1024 * 1024


class StreamDigest:
    """The checksum of a transfer: SHA-256 of the data, holes described.

    Holes of a sparse source are not read, so they are not hashed as
    zeros either (that alone would take minutes for a large empty disk):
    the data bytes and the positions of the holes are hashed apart.
    Without holes the checksum is the SHA-256 of the data (what sha256sum
    prints); with holes it is the SHA-256 of both digests. Holes and data
    together determine the content, and both ends see the same frames, so
    both compute the same value.
    """

    def __init__(self):
        self._data = hashlib.sha256()
        self._holes: Any = None

    def Data(self, data: bytes | memoryview) -> None:
        self._data.update(data)

    def Hole(self, offset: int, length: int) -> None:
        if self._holes is None:
            self._holes = hashlib.sha256()
        self._holes.update(struct.pack(">QQ", offset, length))

    def HexDigest(self) -> str:
        if self._holes is None:
            return self._data.hexdigest()
        return hashlib.sha256(b"sparse" + self._data.digest() +
                              self._holes.digest()).hexdigest()


class SparseReader:
    """Reads a regular file extent by extent (SEEK_DATA/SEEK_HOLE), so
    that its holes are skipped rather than read as zeros."""

    def __init__(self, fd: int):
        self._fd = fd
        self._size = os.fstat(fd).st_size
        self._pos = 0
        self._data_end = 0

    def Next(self, buf: memoryview) -> tuple[int, int]:
        """``(count, 0)``: ``count`` bytes read into ``buf``; ``(0,
        length)``: a hole of ``length`` bytes; ``(0, 0)``: the end."""
        pos = self._pos
        if pos >= self._size:
            return 0, 0
        if pos >= self._data_end:
            try:
                data = min(os.lseek(self._fd, pos, os.SEEK_DATA), self._size)
            except OSError as err:
                if err.errno != errno.ENXIO:
                    raise
                # No data from pos on: the rest is a hole
                data = self._size
            if data > pos:
                self._pos = data
                return 0, data - pos
            self._data_end = min(os.lseek(self._fd, pos, os.SEEK_HOLE),
                                 self._size)
        want = min(len(buf), self._data_end - pos)
        count = 0
        while count < want:
            got = os.preadv(self._fd, [buf[count:want]], pos + count)
            if not got:
                # Shrunk while being read: what was read is all there is
                self._size = pos + count
                break
            count += got
        self._pos = pos + count
        return (count, 0) if count else (0, 0)


def FileChecksum(path: str) -> str:
    """The checksum a transfer of the regular file ``path`` reports."""
    digest = StreamDigest()
    buf = memoryview(bytearray(CHUNK_SIZE))
    fd = os.open(path, os.O_RDONLY)
    try:
        reader = SparseReader(fd)
        offset = 0
        while True:
            count, hole = reader.Next(buf)
            if not count and not hole:
                return digest.HexDigest()
            if hole:
                digest.Hole(offset, hole)
            else:
                digest.Data(buf[:count])
            offset += count + hole
    finally:
        os.close(fd)
