"""Kafka frames out of reassembled TCP streams: requests paired with responses, decoded, checked.

A connection is Kafka's if one of its ports is a Kafka port, or (when no port is named) if its
first bytes parse as a Kafka request. The client side is the one whose destination port is the
Kafka port, else the one that sent the first SYN, else the one whose frames look like request
headers. Each response takes its API key and version from the request with the same
correlation id on the same connection. Checking a frame means decoding header and body and
encoding them again: the bytes must be identical.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafkawire import messages
from kafkawire.protocol import framing

from .streams import Direction, Run

DEFAULT_PORTS = (9092, 9093, 9094, 19092, 29092)
MAX_FRAME = 100 * 1024 * 1024


@dataclass
class Frame:
    """One Kafka frame of a capture: where it was (packet, time since the first packet, TCP
    stream, endpoints), its role ("request" or "response"), its payload (without the size
    prefix) and, once decoded, its API, header and body. ``status`` is "decoded", "unknown" (an
    API or version we have no schema for), "unpaired" (a response whose request is not in the
    capture) or "bad" (bytes that do not decode; ``problem`` says what and where)."""
    packet: int             # packet holding the frame's first byte
    time: float
    stream: int
    src: tuple
    dst: tuple
    role: str               # "request" or "response"
    payload: bytes          # without the size prefix
    api_key: int | None = None
    api_version: int | None = None
    correlation_id: int | None = None
    client_id: str | None = None
    header: object = None
    body: object = None
    trailing: bytes = b""       # bytes after a request body, which Kafka's broker ignores
    status: str = "decoded"     # decoded | unknown | unpaired | bad
    problem: str | None = None  # why not decoded: what and where
    check: str | None = None    # identical | differs (when checked)
    difference: str | None = None

    @property
    def api_name(self) -> str:
        try:
            name = messages.by_api_key(self.api_key, "request").NAME
            return name[: -len("Request")]
        except (KeyError, TypeError):
            return f"ApiKey{self.api_key}" if self.api_key is not None else "Unknown"


@dataclass
class Report:
    frames: list = field(default_factory=list)
    problems: list = field(default_factory=list)    # str, about streams and the file


def looks_like_request(payload: bytes) -> bool:
    """A plausible request header: API key, version, correlation id, then a null or printable client id."""
    if len(payload) < 10:
        return False
    key, version, _, n = struct.unpack_from(">hhih", payload, 0)
    if not (0 <= key < 1000 and 0 <= version < 100 and -1 <= n <= len(payload) - 10):
        return False
    return n <= 0 or all(32 <= c < 127 for c in payload[10:10 + n])


def split_frames(run: Run, direction: Direction, times: dict, report: Report, keep: bool = True) -> list[Frame]:
    """The complete size-prefixed frames of a run; what is left over is reported. With keep
    False only the problems are: no frame is made."""
    frames, pos, data = [], 0, run.data
    with memoryview(data) as view:
        while len(data) - pos >= 4:
            size = struct.unpack_from(">i", data, pos)[0]
            if size < 0 or size > MAX_FRAME:
                report.problems.append(f"stream {direction.stream} {endpoint_text(direction.src)} -> "
                                       f"{endpoint_text(direction.dst)}, packet {run.packet_at(pos)}, stream offset "
                                       f"{run.start + pos}: not a Kafka frame (size {size}); "
                                       f"{len(data) - pos} bytes of this direction skipped")
                return frames
            if len(data) - pos - 4 < size:
                break
            if keep:
                packet = run.packet_at(pos)
                frames.append(Frame(packet, times[packet], direction.stream, direction.src, direction.dst, "",
                                    bytes(view[pos + 4:pos + 4 + size])))
            pos += 4 + size
    if pos < len(data):
        report.problems.append(f"stream {direction.stream} {endpoint_text(direction.src)} -> {endpoint_text(direction.dst)}, "
                               f"stream offset {run.start + pos}: frame cut short ({len(data) - pos} bytes, "
                               f"the capture ends or has a gap here)")
    return frames


def endpoint_text(address: tuple) -> str:
    """host:port, with an IPv6 host in brackets."""
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _client_side(a: Direction, b: Direction | None, frames_a, frames_b, ports) -> bool:
    if a.dst[1] in ports and a.src[1] not in ports:
        return True
    if a.src[1] in ports and a.dst[1] not in ports:
        return False
    if a.saw_syn and not a.syn_ack:
        return True
    if b is not None and b.saw_syn and not b.syn_ack:
        return False

    def score(frames):
        return sum(looks_like_request(f.payload) for f in frames) / len(frames) if frames else 0.5
    if score(frames_a) != score(frames_b):
        return score(frames_a) > score(frames_b)
    return a.src[1] > a.dst[1]


def kafka_frames(directions: list[Direction], times: dict, ports, any_port: bool, report: Report) -> list[Frame]:
    """Every frame of the Kafka connections, in packet order, with its role set."""
    by_key = {(d.src, d.dst): d for d in directions}
    frames_of = {}
    for d in directions:
        frames_of[(d.src, d.dst)] = [f for run in d.runs for f in split_frames(run, d, times, Report())]
    out = []
    for (src, dst), d in by_key.items():
        back = by_key.get((dst, src))
        mine, theirs = frames_of[(src, dst)], frames_of.get((dst, src), [])
        client = _client_side(d, back, mine, theirs, ports)
        client_frames = mine if client else theirs
        on_port = src[1] in ports or dst[1] in ports
        if not on_port and not (any_port and client_frames and looks_like_request(client_frames[0].payload)):
            continue
        if on_port and client and mine and not looks_like_request(mine[0].payload):
            report.problems.append(f"stream {d.stream} {endpoint_text(src)} -> {endpoint_text(dst)}: on a Kafka port but "
                                   f"its first bytes are not a Kafka request ({mine[0].payload[:12].hex(' ')}); skipped")
            continue
        for run in d.runs:                     # again, now that the stream counts: its problems are reported
            split_frames(run, d, times, report, keep=False)
        for gap in d.gaps:
            report.problems.append(f"stream {d.stream} {endpoint_text(src)} -> {endpoint_text(dst)}: TCP gap of {gap[1]} bytes "
                                   f"at stream offset {gap[0]} (before packet {gap[2]}); frames across it are lost")
        for f in mine:
            f.role = "request" if client else "response"
        out += mine
    return sorted(out, key=lambda f: (f.packet, f.role != "request"))


def decode_frames(frames: list[Frame]) -> None:
    """Decode every frame in place; a response takes its API from its request."""
    pending: dict[tuple, tuple[int, int]] = {}
    for f in frames:
        if f.role == "request":
            _decode_request(f)
            if f.correlation_id is not None:
                pending[(f.stream, f.correlation_id)] = (f.api_key, f.api_version)
        else:
            _decode_response(f, pending)


def _decode_request(f: Frame) -> None:
    if len(f.payload) < 8:
        f.status, f.problem = "bad", f"request of {len(f.payload)} bytes: too short for a request header"
        return
    f.api_key, f.api_version, f.correlation_id = struct.unpack_from(">hhi", f.payload)
    try:
        cls = messages.by_api_key(f.api_key, "request")
    except KeyError:
        f.status, f.problem = "unknown", f"API key {f.api_key} is not in schemas/"
        return
    if f.api_version not in cls.versions():
        f.status = "unknown"
        f.problem = f"{cls.NAME} v{f.api_version} is not a version we know ({_range(cls)})"
        return
    try:
        request = framing.decode_request(f.payload)
    except Exception as exc:         # any bad byte is a report about this frame, never a crash
        f.status, f.problem = "bad", _why(exc)
        return
    f.header, f.body = request.header, request.body
    f.client_id = request.header.client_id
    f.trailing = request.trailing


def _decode_response(f: Frame, pending: dict) -> None:
    if len(f.payload) < 4:
        f.status, f.problem = "bad", f"response of {len(f.payload)} bytes: too short for a response header"
        return
    f.correlation_id = struct.unpack_from(">i", f.payload)[0]
    api = pending.pop((f.stream, f.correlation_id), None)
    if api is None:
        f.status, f.problem = "unpaired", "its request is not in the capture: API and version unknown"
        return
    f.api_key, f.api_version = api
    try:
        cls = messages.by_api_key(f.api_key, "response")
    except KeyError:
        f.status, f.problem = "unknown", f"API key {f.api_key} is not in schemas/"
        return
    if f.api_version not in cls.versions():
        f.status, f.problem = "unknown", f"{cls.NAME} v{f.api_version} is not a version we know ({_range(cls)})"
        return
    try:
        header_version = framing.response_header_version(f.api_key, f.api_version)
        f.header, _ = messages.by_name("ResponseHeader").decode(f.payload, header_version, partial=True)
        _, f.body = framing.decode_response(f.payload, f.api_key, f.api_version)
    except Exception as exc:         # any bad byte is a report about this frame, never a crash
        f.status, f.problem = "bad", _why(exc)


def _range(cls) -> str:
    versions = cls.versions()
    return f"{cls.NAME} has {versions.start}-{versions.stop - 1}"


def _why(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
