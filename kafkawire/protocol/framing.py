"""Size-prefixed frames and the request/response headers that open them.

Which header version goes with which API version follows Kafka's ApiKeys: request header v2
and response header v1 exactly where the API version is flexible, request header v1 otherwise
(v0 only for ControlledShutdown v0), and response header v0 for every ApiVersions response,
because a client reads it before it knows which versions the server speaks.

Two families, named by what they take and give:

* ``*_frame`` (``encode_request_frame``, ``decode_request_frame``, ``encode_response_frame``,
  ``decode_response_frame``): a whole frame, the 4-byte size prefix included, both ways; what
  goes on a socket and what ``iter_frames`` splits a stream into (with the prefix removed:
  ``iter_frames`` yields payloads, see there).
* ``decode_request`` / ``decode_response``: a frame's payload, without the size prefix (what
  ``FrameReader`` and ``iter_frames`` yield). ``encode_request`` / ``encode_response`` are the
  older names of the two ``encode_*_frame`` functions and return the prefix too.

Headers and bodies are looked up in the installed message registry (kafkawire.protocol.registry,
which installs the generated codecs of kafkawire.messages on first use); this module never
imports generated code.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import DecodeError
from .primitives import EncodeBuffer
from .registry import installed

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7
_INT32 = struct.Struct(">i")
_REQUEST_PREFIX = struct.Struct(">hhi")

DEFAULT_MAX_FRAME = 100 * 1024 * 1024   # Kafka's socket.request.max.bytes default


def request_header_version(api_key: int, api_version: int) -> int:
    """The RequestHeader version that goes with a request's API key and version (Kafka's ApiKeys);
    KeyError for an API key without a schema."""
    request = installed().by_api_key(api_key, "request")
    if request.is_flexible(api_version):
        return 2
    if api_key == CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return 0
    return 1


def response_header_version(api_key: int, api_version: int) -> int:
    """The ResponseHeader version that goes with a response (0 for every ApiVersions response);
    KeyError for an API key without a schema."""
    if api_key == API_VERSIONS_KEY:
        return 0
    response = installed().by_api_key(api_key, "response")
    return 1 if response.is_flexible(api_version) else 0


__all__ = ["Request", "encode_request_frame", "decode_request_frame", "encode_response_frame",
           "decode_response_frame", "iter_frames", "FrameReader", "encode_request", "encode_response",
           "decode_request", "decode_response", "peek_request_api", "request_header_version",
           "response_header_version", "DEFAULT_MAX_FRAME"]


@dataclass
class Request:
    """A decoded request: its header, its body and the header's key fields.

    ``trailing`` holds bytes after the body, which Kafka's broker ignores (see decode_request).
    """
    header: object    # RequestHeader
    body: object      # the request message
    api_key: int
    api_version: int
    correlation_id: int
    trailing: bytes = b""     # bytes after the body, which Kafka's broker ignores (see decode_request)


def encode_request(body, api_version: int, correlation_id: int, client_id: str | None = "kafkawire",
                   header_tagged_fields=()) -> bytes:
    """A whole frame: size, request header, request body (``encode_request_frame``'s older name)."""
    messages = installed()
    header_cls = messages.by_name("RequestHeader")
    header = header_cls(request_api_key=body.API_KEY, request_api_version=api_version,
                        correlation_id=correlation_id, client_id=client_id)
    if header_tagged_fields:
        header.unknown_tagged_fields = header_tagged_fields
    buf = EncodeBuffer()
    header.encode_into(buf, request_header_version(body.API_KEY, api_version))
    body.encode_into(buf, api_version)
    return buf.getvalue(size_prefix=True)


# A response frame's size and header: v0 is the correlation id, v1 adds an empty tagged-field section.
_FRAME_AND_HEADER = {0: struct.Struct(">ii"), 1: struct.Struct(">iiB")}


def encode_response(body, api_version: int, correlation_id: int, *, file_frame: bool = False) -> bytes:
    """A whole frame: size, response header, response body (``encode_response_frame``'s older name).

    A response without bytes fields is encoded by the C encoder where there is one (the same bytes
    as the generated encoder's, tests/codec/test_native_encode.py): a small answer's encoding was a
    sixth of the server's CPU for it. One with bytes fields (Fetch's records) keeps the buffer that
    sets them aside instead of copying them. With ``file_frame`` (the server's writer), a value
    still in a file (kafkawire.protocol.file_range.FileRange) stays there: the frame is then a
    FileFrame of parts, else bytes as always."""
    native = None if body._HAS_BYTES else body._NATIVE_ENCODERS.get(api_version)
    if native is not None:
        data = native(body)
        if data is not None:
            header_version = response_header_version(body.API_KEY, api_version)
            head = _FRAME_AND_HEADER[header_version]
            size = head.size - 4 + len(data)
            frame = head.pack(size, correlation_id) if header_version == 0 else head.pack(size, correlation_id, 0)
            return frame + data
    messages = installed()
    header = messages.by_name("ResponseHeader")(correlation_id=correlation_id)
    buf = EncodeBuffer()
    header.encode_into(buf, response_header_version(body.API_KEY, api_version))
    body.encode_into(buf, api_version)
    return buf.getframe() if file_frame else buf.getvalue(size_prefix=True)


def peek_request_api(payload: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request frame's payload, before choosing a decoder.

    Every request header version starts with these three fields, which is what lets a server
    answer an unsupported version with an error instead of dropping the connection.
    """
    if len(payload) < 8:
        raise DecodeError("RequestHeader", None, None, 0, f"a request header needs 8 bytes, the frame has {len(payload)}")
    return _REQUEST_PREFIX.unpack_from(payload, 0)


def decode_request(payload: bytes) -> Request:
    """Decode a request frame's payload (without the size prefix)."""
    messages = installed()
    api_key, api_version, correlation_id = peek_request_api(payload)
    try:
        request_cls = messages.by_api_key(api_key, "request")
    except KeyError:
        raise DecodeError("RequestHeader", None, "RequestApiKey", 0, f"unknown API key {api_key}") from None
    header_cls = messages.by_name("RequestHeader")
    header, pos = header_cls.decode(payload, request_header_version(api_key, api_version), partial=True)
    # Kafka's broker reads what the schema asks for and ignores the rest of a request; librdkafka
    # relies on it, sending ApiVersions v0 with an int32 0 after the (empty) body. So trailing
    # bytes are kept aside here, not refused; Message.decode itself stays strict.
    decoder = request_cls._DECODERS.get(api_version)
    if type(payload) is bytes and decoder is not None:
        # The body decoded where it is in the payload: Message.decode would first copy it out
        # (a produce request's records are most of it). A failure is decoded again that way,
        # for the error Message.decode gives, its offsets counted from the body's start.
        try:
            body, end = decoder(payload, pos)
        except Exception:
            pass
        else:
            return Request(header, body, api_key, api_version, correlation_id, payload[end:])
    body, end = request_cls.decode(memoryview(payload)[pos:], api_version, partial=True)
    return Request(header, body, api_key, api_version, correlation_id, bytes(payload[pos + end:]))


def decode_response(payload: bytes, api_key: int, api_version: int):
    """Decode a response frame's payload: (correlation_id, body).

    ``api_key`` and ``api_version`` are those of the request it answers (a response does
    not carry them); an API without a schema here is a DecodeError, as for a request."""
    messages = installed()
    try:
        response_cls = messages.by_api_key(api_key, "response")
    except KeyError:
        raise DecodeError("ResponseHeader", None, "api_key", None,
                          f"unknown API key {api_key}: no response schema for it") from None
    header_cls = messages.by_name("ResponseHeader")
    header, pos = header_cls.decode(payload, response_header_version(api_key, api_version), partial=True)
    try:
        body = response_cls.decode(memoryview(payload)[pos:], api_version)
    except DecodeError:
        if api_key != API_VERSIONS_KEY or api_version == 0:
            raise
        # A broker answers an ApiVersionsRequest of a version it does not know with
        # UNSUPPORTED_VERSION in a version 0 body; Kafka's client (ApiVersionsResponse.parse)
        # falls back the same way, then retries with a version from the list.
        body = response_cls.decode(memoryview(payload)[pos:], 0)
    return header.correlation_id, body


def encode_request_frame(body, api_version: int, correlation_id: int, client_id: str | None = "kafkawire",
                         header_tagged_fields=()) -> bytes:
    """A request as it goes on the wire: the 4-byte size, the request header, the body.

    ``body`` is a request message (``kafkawire.messages.by_name("FetchRequest")(...)``),
    written at ``api_version`` under the header version that version takes; ``client_id`` may
    be None (a null string). ``decode_request_frame`` reads the result back. Raises
    UnsupportedVersionError (an EncodeError) when the body cannot be written at that version.
    """
    return encode_request(body, api_version, correlation_id, client_id, header_tagged_fields)


def encode_response_frame(body, api_version: int, correlation_id: int) -> bytes:
    """A response as it goes on the wire: the 4-byte size, the response header, the body.

    ``api_version`` is that of the request it answers. ``decode_response_frame`` reads the
    result back. Raises UnsupportedVersionError (an EncodeError) as encode_request_frame does.
    """
    return encode_response(body, api_version, correlation_id)


def _payload_of(frame, what: str) -> memoryview:
    """A whole frame's payload, after checking that its size prefix matches its length."""
    view = memoryview(frame).cast("B")
    if len(view) < 4:
        raise DecodeError(what, None, "size", 0, f"a frame starts with a 4-byte size; {len(view)} bytes given")
    (size,) = _INT32.unpack_from(view, 0)
    if size != len(view) - 4:
        raise DecodeError(what, None, "size", 0, f"the size prefix says {size} bytes follow, {len(view) - 4} do "
                          f"(decode_request and decode_response take a payload without the prefix)")
    return view[4:]


def decode_request_frame(frame) -> Request:
    """Decode a whole request frame, its 4-byte size prefix included (what
    ``encode_request_frame`` returns).

    Raises DecodeError (a BadBytesError) when the size prefix does not match the frame's length,
    the API key has no schema, or the header or body cannot be read; bytes after the body are
    kept in ``Request.trailing``, as Kafka's broker ignores them.
    """
    return decode_request(bytes(_payload_of(frame, "RequestHeader")))


def decode_response_frame(frame, api_key: int, api_version: int):
    """Decode a whole response frame, its 4-byte size prefix included: ``(correlation_id, body)``.

    A response does not carry its API: ``api_key`` and ``api_version`` are those of the request
    it answers. Raises DecodeError as decode_request_frame does.
    """
    return decode_response(bytes(_payload_of(frame, "ResponseHeader")), api_key, api_version)


def iter_frames(source, *, max_frame: int = DEFAULT_MAX_FRAME, chunk_size: int = 1 << 16) -> Iterator[bytes]:
    """The payloads (size prefix removed) of the size-prefixed frames in ``source``, in order.

    ``source`` is bytes-like or a binary file object (anything with ``read``; read in chunks of
    ``chunk_size``, so a file of any size costs one frame of memory). Decode each payload with
    ``decode_request`` or ``decode_response``. Raises DecodeError when a size is negative or
    above ``max_frame`` (Kafka's socket.request.max.bytes, 100 MiB) or when the stream ends
    inside a frame.
    """
    reader = FrameReader(max_frame)
    if hasattr(source, "read"):
        chunks = iter(lambda: source.read(chunk_size), b"")
    else:
        chunks = iter((bytes(source),))
    for chunk in chunks:
        yield from reader.feed(chunk)
    if reader.pending:
        raise DecodeError("frame", None, "size", None,
                          f"the stream ends inside a frame ({reader.pending} bytes left over)")


class FrameReader:
    """Splits a byte stream into size-prefixed frames, refusing sizes above max_frame.

    The size is checked before any buffering of the frame, so a hostile size costs nothing.
    A frame longer than what has arrived keeps its body as the chunks that come, joined once
    when it is whole: one copy of each byte, where a growing buffer would be copied again at
    every chunk (a 1 MB produce request arrives in sixteen 64 KiB reads).
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, limit_name: str = "socket.request.max.bytes"):
        self.max_frame = max_frame
        self.limit_name = limit_name        # the setting max_frame comes from, for the error
        self._buffer = bytearray()          # what is not yet in a frame whose size was checked
        self._body: list = []               # the chunks of the frame being read, its size checked
        self._body_size = -1                # that frame's size; -1: none is being read
        self._body_missing = 0

    def feed(self, data: bytes, max_frames: int | None = None) -> list[bytes]:
        """The whole frames buffered so far, at most ``max_frames`` of them (the rest stay
        buffered, their sizes unchecked, for a later call that may have another max_frame)."""
        frames, error = self.take_frames(data, max_frames)
        if error is not None:
            raise error
        return frames

    def take_frames(self, data: bytes | memoryview,
                    max_frames: int | None = None) -> tuple[list[bytes], DecodeError | None]:
        """feed's frames and, instead of raising it, the DecodeError of a bad size that follows
        them: the frames before it are taken, the bad size and what follows stay buffered."""
        frames: list[bytes] = []
        taken = 0       # the bytes of a frame made whole here before the buffer (the error's offset counts them)
        if self._body_size > self.max_frame:        # checked again under a new max_frame (a SASL re-authentication)
            return frames, self._size_error(self._body_size, 0)
        if self._body_size >= 0:
            taken = 4 + self._body_size
            data = self._fill_body(data, frames)
            taken *= len(frames)
        buf = self._buffer
        # Bytes that cannot change (the stream's reads) are split where they are: the body of a
        # frame they start is kept as a slice of them, and only what follows the frames is buffered.
        direct = not buf and (type(data) is bytes or (type(data) is memoryview and data.readonly
                                                      and data.format == "B" and data.ndim == 1))
        if not direct and data:
            buf += data
        pos, error = 0, None
        with memoryview(data if direct else buf) as view:
            length = len(view)
            while length - pos >= 4 and (max_frames is None or len(frames) < max_frames):
                (size,) = _INT32.unpack_from(view, pos)
                if size < 0 or size > self.max_frame:
                    error = self._size_error(size, taken + pos)
                    break
                end = pos + 4 + size
                if end > length:            # the rest comes in later chunks
                    body = view[pos + 4:] if direct else bytes(view[pos + 4:])
                    self._body, self._body_size, self._body_missing = [body], size, end - length
                    pos = length
                    break
                frames.append(bytes(view[pos + 4:end]))
                pos = end
            if direct and pos < length:
                buf += view[pos:]
        if not direct:
            del buf[:pos]
        return frames, error

    def _size_error(self, size: int, offset: int) -> DecodeError:
        return DecodeError("frame", None, "size", offset,
                           f"frame size {size} is outside 0..{self.max_frame} ({self.limit_name})")

    def discard(self) -> None:
        """Drop what is buffered (the reader of a connection closing at a bad size)."""
        self._buffer.clear()
        self._body, self._body_size, self._body_missing = [], -1, 0

    def _fill_body(self, data: bytes | memoryview, frames: list) -> bytes | memoryview:
        """Add ``data`` to the frame being read; what is left of it once that frame is whole."""
        missing = self._body_missing
        if len(data) < missing:
            self._body.append(data if type(data) is bytes else bytes(data))     # the caller may reuse its buffer
            self._body_missing = missing - len(data)
            return b""
        view = memoryview(data)
        self._body.append(view[:missing])
        frames.append(b"".join(self._body))
        self._body, self._body_size, self._body_missing = [], -1, 0
        return view[missing:]

    @property
    def pending(self) -> int:
        """The bytes taken and not yet in a whole frame."""
        if self._body_size >= 0:
            return 4 + self._body_size - self._body_missing + len(self._buffer)
        return len(self._buffer)

    def partial_frame_bytes(self) -> int:
        """What the frame being read will take in memory once whole: its declared size (checked
        when fed) plus the size field, or the bytes of a size field not yet whole."""
        if self._body_size >= 0:
            return self._body_size + 4
        if len(self._buffer) < 4:
            return len(self._buffer)
        return int.from_bytes(self._buffer[:4], "big", signed=True) + 4
