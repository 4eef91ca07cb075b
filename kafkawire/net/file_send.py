"""Sending a response frame whose parts are still in files (kafkawire.protocol.file_range): the
bytes between them through the stream writer, each file range with os.sendfile on the socket.

A range goes by sendfile only once the transport has sent everything written before it (its
buffer empty), so the parts stay in order; the records then go from the page cache to the socket
without passing through the broker's memory, as Kafka's TransferableRecords.writeTo does. When
the socket's buffer is full, the send waits for it to drain on a duplicate of its descriptor (the
event loop refuses to watch the descriptor a transport owns; asyncio's own loop.sendfile is not
there under uvloop, the node's loop). A transport with bytes still queued, or with TLS (the fetch
path makes no ranges for TLS listeners; this is a safety net), gets the range read and written.

A range that sends fewer bytes than it holds (its file was truncated under it) leaves the frame
short of its size prefix: the connection is unusable then, and the error closes it (Kafka's
FileRecords.writeTo fails the same way).
"""
from __future__ import annotations

import asyncio
import os

from kafkawire.protocol.file_range import FileFrame, FileRange

__all__ = ["write_file_frame"]


async def write_file_frame(writer: asyncio.StreamWriter, frame: FileFrame) -> None:
    """Write ``frame``'s parts in order; closes its ranges whatever happens."""
    transport = writer.transport
    sock = writer.get_extra_info("socket")
    plain = sock is not None and writer.get_extra_info("sslcontext") is None and \
        writer.get_extra_info("ssl_object") is None
    try:
        for part in frame:
            if type(part) is not FileRange:
                writer.write(part)
            elif not plain or transport.get_write_buffer_size() or transport.is_closing():
                writer.write(part.read())
            else:
                await _sendfile(sock.fileno(), part)
    finally:
        frame.close()


async def _sendfile(socket_fd: int, part: FileRange) -> None:
    position, left = part.position, part.size
    watched = -1        # a duplicate of the socket's descriptor, for the loop to watch
    try:
        while left > 0:
            try:
                sent = os.sendfile(socket_fd, part.fileno(), position, left)
            except BlockingIOError:
                if watched < 0:
                    watched = os.dup(socket_fd)
                await _writable(watched)
                continue
            if sent == 0:
                raise ConnectionError(f"sent {part.size - left} of a fetch's {part.size} bytes of records from the "
                                      f"log: the segment was truncated under the send")
            position += sent
            left -= sent
    finally:
        if watched >= 0:
            os.close(watched)


async def _writable(fd: int) -> None:
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_writer(fd, lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        loop.remove_writer(fd)
