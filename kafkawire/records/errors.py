"""The one exception the records package raises for bad bytes.

Callers (log recovery, the fetch path, tools) need a single type to catch and a message
that says what is wrong and where, so a human can find the byte in a hex dump. It is a
BadBytesError (a ValueError): the input, not the program, is at fault.
"""

from __future__ import annotations

from kafkawire.protocol.errors import BadBytesError


class CorruptRecordError(BadBytesError):
    """Bytes that are not a valid Kafka record batch / message set.

    ``reason`` says what is wrong, ``position`` is the byte offset in the caller's buffer
    (or ``None`` when it is not known, e.g. inside a compressed stream), ``file`` the file
    name when the caller gave one.
    """

    def __init__(self, reason: str, position: int | None = None, file: str | None = None):
        self.reason = reason
        self.position = position
        self.file = file
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.position is not None:
            where.append(f"at byte {self.position}")
        if self.file is not None:
            where.append(f"in {self.file}")
        return f"{self.reason} ({' '.join(where)})" if where else self.reason

    def located(self, position: int | None = None, file: str | None = None) -> CorruptRecordError:
        """A copy with the position/file filled in where they were missing.

        Lower layers (a decompressor, a varint reader) do not know where their input sits
        in the file; the batch reader does and adds it on the way up.
        """
        return CorruptRecordError(
            self.reason,
            self.position if self.position is not None else position,
            self.file if self.file is not None else file,
        )
