"""A bytes field's value that stays in a file until it is sent: Kafka's FileRecords slice.

A consumer's Fetch answers stored batches as they are in the segment file. Kafka sends them from
the file with sendfile (TransferableRecords), so the broker never copies them through its heap;
kafkawire does the same on plaintext connections: the fetch path puts a FileRange in a
partition's ``records``, the response encoder (kafkawire.protocol.primitives.EncodeBuffer) sets
it aside like any large bytes value, and the connection's writer sends the frame's bytes around
it with the range between them by ``loop.sendfile`` (kafkawire.net.connection). Anything else
that encodes the message gets the bytes read from the file (``bytes(range)``).

The range holds its own descriptor (a ``dup`` of the segment's, taken when the fetch read the
log), so a segment deleted or closed before the answer goes out is still sent as it was when
read: the file's data stay until the last descriptor is closed. The descriptor is closed once the
range is sent, or when the range is dropped unsent (a long poll's earlier read, a throttled
answer, a connection gone).
"""
from __future__ import annotations

import os

__all__ = ["FileRange", "FileFrame"]


class FileRange:
    """``size`` bytes of an open file from ``position``; owns ``fd`` (closed by ``close``)."""
    __slots__ = ("fd", "position", "size")
    # The most ranges open at once in the process: each holds a descriptor until its answer is
    # sent, and a fetch of many partitions to many consumers must not take the descriptors a
    # segment roll or a new connection needs (EMFILE there is a storage error or a refused
    # client); past it a read is answered from memory.
    MAX_OPEN = 256
    open_ranges = 0

    def __init__(self, fd: int, position: int, size: int):
        self.fd, self.position, self.size = fd, position, size
        FileRange.open_ranges += 1

    @classmethod
    def of(cls, fileno: int, position: int, size: int) -> "FileRange | None":
        """A range of the file open as ``fileno``, with a descriptor of its own; None when
        MAX_OPEN ranges are open already."""
        if cls.open_ranges >= cls.MAX_OPEN:
            return None
        return cls(os.dup(fileno), position, size)

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return self.read()

    def __repr__(self) -> str:
        return f"FileRange(fd={self.fd}, position={self.position}, size={self.size})"

    def fileno(self) -> int:
        """For loop.sendfile, which sends from this descriptor at the offsets it is given."""
        if self.fd < 0:
            raise ValueError("the file range was closed")
        return self.fd

    def read(self) -> bytes:
        """The range's bytes; OSError when the file is shorter now (truncated under it)."""
        data = os.pread(self.fileno(), self.size, self.position)
        if len(data) != self.size:
            raise OSError(f"a file range of {self.size} bytes from {self.position} read {len(data)}: "
                          f"the file was truncated under it")
        return data

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            FileRange.open_ranges -= 1
            os.close(fd)

    def __del__(self):
        self.close()


class FileFrame(list):
    """A response frame as parts: bytes (or memoryviews) and FileRanges, in order."""
    __slots__ = ()

    def close(self) -> None:
        for part in self:
            if type(part) is FileRange:
                part.close()
