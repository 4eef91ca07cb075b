"""Size-prefixed frames and the request/response headers that open them.

Which header version goes with which API version follows Kafka's ApiKeys: request header v2
and response header v1 exactly where the API version is flexible, request header v1 otherwise
(v0 only for ControlledShutdown v0), and response header v0 for every ApiVersions response,
because a client reads it before it knows which versions the server speaks.

Headers and bodies are looked up in the installed message registry (kafkawire.protocol.registry:
kafkawire.messages installs its own when imported); this module never imports generated code.
"""
from __future__ import annotations

import struct
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
    request = installed().by_api_key(api_key, "request")
    if request.is_flexible(api_version):
        return 2
    if api_key == CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return 0
    return 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    response = installed().by_api_key(api_key, "response")
    return 1 if response.is_flexible(api_version) else 0


@dataclass
class Request:
    header: object    # RequestHeader
    body: object      # the request message
    api_key: int
    api_version: int
    correlation_id: int
    trailing: bytes = b""     # bytes after the body, which Kafka's broker ignores (see decode_request)


def encode_request(body, api_version: int, correlation_id: int, client_id: str | None = "kafkawire",
                   header_tagged_fields=()) -> bytes:
    """A whole frame: size, request header, request body."""
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


def encode_response(body, api_version: int, correlation_id: int) -> bytes:
    messages = installed()
    header = messages.by_name("ResponseHeader")(correlation_id=correlation_id)
    buf = EncodeBuffer()
    header.encode_into(buf, response_header_version(body.API_KEY, api_version))
    body.encode_into(buf, api_version)
    return buf.getvalue(size_prefix=True)


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


class FrameReader:
    """Splits a byte stream into size-prefixed frames, refusing sizes above max_frame.

    The size is checked before any buffering of the frame, so a hostile size costs nothing.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, limit_name: str = "socket.request.max.bytes"):
        self.max_frame = max_frame
        self.limit_name = limit_name        # the setting max_frame comes from, for the error
        self._buffer = bytearray()

    def feed(self, data: bytes, max_frames: int | None = None) -> list[bytes]:
        """The whole frames buffered so far, at most ``max_frames`` of them (the rest stay
        buffered, their sizes unchecked, for a later call that may have another max_frame)."""
        self._buffer += data
        frames: list[bytes] = []
        buf = self._buffer
        pos = 0
        while len(buf) - pos >= 4 and (max_frames is None or len(frames) < max_frames):
            (size,) = _INT32.unpack_from(buf, pos)
            if size < 0 or size > self.max_frame:
                raise DecodeError("frame", None, "size", pos,
                                  f"frame size {size} is outside 0..{self.max_frame} ({self.limit_name})")
            if len(buf) - pos - 4 < size:
                break
            frames.append(bytes(buf[pos + 4: pos + 4 + size]))
            pos += 4 + size
        del buf[:pos]
        return frames

    @property
    def pending(self) -> int:
        return len(self._buffer)
