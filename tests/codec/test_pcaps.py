"""Real Kafka traffic: every frame captured from real clients and brokers decodes and re-encodes
to the identical bytes.

The captures are in ../shared/reference/pcaps (DeepFlow's and nDPI's test captures: librdkafka,
the Java console producer/consumer, kafka-python and AdminClient against real brokers; see
SOURCE.md there). tests/codec/pcap_reader.py parses them in pure Python, reassembles each TCP
direction, cuts it into size-prefixed frames and tells requests from responses.

- A request frame is decoded with framing.decode_request; its header (in the header version
  its API version implies) and its body are encoded again and must give back the frame.
- A response frame takes its API key and version from the request with the same correlation id
  on the same connection; decoded with framing.decode_response, re-encoded likewise.
- Frames of an API or version we have no schema for, and responses whose request is not in the
  capture (it started mid-connection), are skipped with the reason; they are not failures.
"""
from __future__ import annotations

import csv
import re
import struct
from pathlib import Path

import pytest

from kafkawire import messages
from kafkawire.protocol import framing
from tests.codec.pcap_reader import Packet, kafka_capture, looks_like_request, read_packets, reassemble, \
    split_frames, tcp_segment
from tests.conftest import REFERENCE, require

PCAPS = REFERENCE / "pcaps"


def _api_names():
    names = {}
    for tsv in (REFERENCE / "kafka-schemas" / "api-keys.tsv", REFERENCE / "kafka-schemas-3.9" / "api-keys.tsv"):
        if tsv.exists():
            with tsv.open() as fh:
                for row in csv.DictReader(fh, delimiter="\t"):
                    names.setdefault(int(row["api_key"]), row["name"])
    return names


def _capture_files():
    if not PCAPS.exists():
        return []
    return sorted(p for p in PCAPS.rglob("*") if p.suffix in (".pcap", ".pcapng"))


CAPTURES = {f"{p.parent.name}/{p.name}": kafka_capture(p) for p in _capture_files()}
API_NAMES = _api_names()


def _api(key, version):
    return f"{API_NAMES.get(key, f'api{key}')} v{version}"


# librdkafka (before its KIP-511 ApiVersions v3 support) writes ApiVersionsRequest v0 with a body
# of int32 0, "Empty array: request all APIs" (rd_kafka_ApiVersionRequest, from the KIP-35 draft),
# although v0 has no fields. Kafka's broker ignores the 4 bytes and answers (the capture holds its
# responses); decode_request keeps them aside in Request.trailing. Every other frame has none.
def _expected_trailing(payload):
    """The bytes librdkafka adds after an ApiVersionsRequest v0 header, or b"" for any other frame."""
    key, version = struct.unpack_from(">hh", payload)
    if (key, version) != (18, 0):
        return b""
    _, end = messages.by_name("RequestHeader").decode(payload, 1, partial=True)
    return payload[end:] if payload[end:] == b"\0\0\0\0" else b""


def _cases():
    cases = []
    for cap_name, cap in CAPTURES.items():
        requests = {}
        for f in cap.requests:
            key, version, corr = struct.unpack_from(">hhi", f.payload)
            requests.setdefault((f.connection, corr), (key, version))
            cases.append(pytest.param(f, key, version, id=f"{cap_name}#{f.packet}-request-{_api(key, version)}-corr{corr}"))
        for f in cap.responses:
            corr = struct.unpack_from(">i", f.payload)[0]
            key, version = requests.get((f.connection, corr), (None, None))
            api = _api(key, version) if key is not None else "unmatched"
            cases.append(pytest.param(f, key, version, id=f"{cap_name}#{f.packet}-response-{api}-corr{corr}"))
    if not cases:
        cases = [pytest.param(None, None, None, id="no-captures", marks=pytest.mark.skip(
            reason=f"reference material not available: {PCAPS} is missing (it lives in ../shared beside the repo)"))]
    return cases


def _covered(key, version, kind):
    """None if we have a schema for this API key and version, else why not."""
    try:
        cls = messages.by_api_key(key, kind)
    except KeyError:
        return f"{_api(key, version)} (API key {key}): kafkawire has no {kind} schema for this API"
    if version not in cls.versions():
        return f"{_api(key, version)}: kafkawire's {cls.NAME} has versions {cls.versions().start}-{cls.versions().stop - 1}"
    return None


@pytest.mark.parametrize("frame,api_key,api_version", _cases())
def test_frame_round_trips(frame, api_key, api_version):
    payload = frame.payload
    if frame.role == "request":
        why = _covered(api_key, api_version, "request")
        if why:
            pytest.skip(why)
        request = framing.decode_request(payload)
        assert (request.api_key, request.api_version) == (api_key, api_version)
        header_version = framing.request_header_version(api_key, api_version)
        again = request.header.encode(header_version) + request.body.encode(api_version)
        # Bytes a client adds beyond the schema, which a broker ignores, are kept aside.
        assert request.trailing == _expected_trailing(payload)
        again += request.trailing
    else:
        if api_key is None:
            pytest.skip("response without its request in the capture (it starts mid-connection): API unknown")
        why = _covered(api_key, api_version, "response")
        if why:
            pytest.skip(why)
        correlation_id, body = framing.decode_response(payload, api_key, api_version)
        header_version = framing.response_header_version(api_key, api_version)
        header, _ = messages.by_name("ResponseHeader").decode(payload, header_version, partial=True)
        assert header.correlation_id == correlation_id == struct.unpack_from(">i", payload)[0]
        again = header.encode(header_version) + body.encode(api_version)
    assert again == payload, (f"{frame.capture} packet {frame.packet}: {frame.role} re-encodes differently; first "
                              f"difference at byte {next((i for i, (a, b) in enumerate(zip(again, payload)) if a != b), min(len(again), len(payload)))}"
                              f" of {len(payload)} (re-encoded {len(again)})")


def test_every_captured_api_and_version_has_a_schema():
    """Since schemas/ has every API (issue 13), no captured frame is skipped for want of one:
    69 of the 75 frames round-trip, the other 6 are responses whose request was not captured."""
    require(PCAPS)
    cases = [c.values for c in _cases()]
    uncovered = [(key, version, f.role) for f, key, version in cases
                 if key is not None and _covered(key, version, f.role)]
    unmatched = [f for f, key, _ in cases if key is None]
    assert len(cases) == 75 and not uncovered and len(unmatched) == 6


# --- the extraction itself ------------------------------------------------------------------------
_SOURCE_LINE = re.compile(r"^\s+(request|response)\s+(?:\S+ v(\d+) \(api_key=(\d+)\) )?corr=(-?\d+)")


def _source_listing(folder: Path):
    """What SOURCE.md says each capture holds: {file: {(role, api_key, version, corr)}} (a set:
    SOURCE.md lists TCP retransmits as repeated lines, which reassembly rightly drops)."""
    listing, current = {}, None
    for line in (folder / "SOURCE.md").read_text().splitlines():
        head = re.match(r"^(\S+\.pcap(?:ng)?) \(", line)
        if head:
            current = listing.setdefault(head.group(1), set())
            continue
        m = _SOURCE_LINE.match(line)
        if m and current is not None:
            role, version, key, corr = m.groups()
            current.add((role, int(key) if key else None, int(version) if version else None, int(corr)))
    return listing


def test_frames_match_the_captures_descriptions():
    """Reassembly and request/response sides agree with the frames SOURCE.md lists per capture."""
    require(PCAPS)
    folders = sorted({p.parent for p in _capture_files()})
    assert len(CAPTURES) >= 14 and folders
    for folder in folders:
        for file_name, expected in _source_listing(folder).items():
            cap = CAPTURES[f"{folder.name}/{file_name}"]
            found = {("request", *struct.unpack_from(">hhi", f.payload)) for f in cap.requests}
            found |= {("response", None, None, struct.unpack_from(">i", f.payload)[0]) for f in cap.responses}
            assert found == expected, f"{folder.name}/{file_name}"
            assert cap.incomplete == 0 and cap.holes == 0, f"{folder.name}/{file_name}: frames cut short"
            assert all(looks_like_request(f.payload) for f in cap.requests)


# --- the reader on synthetic captures: split frames, several per segment, retransmits, reordering ---
def _tcp_packet(index, src_port, dst_port, seq, payload, flags=0x18):
    tcp = struct.pack(">HHIIBBHHH", src_port, dst_port, seq, 0, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0,
                     bytes([10, 0, 0, 1 if src_port != 9092 else 2]), bytes([10, 0, 0, 2 if src_port != 9092 else 1]))
    eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
    data = eth + ip + tcp
    return Packet(index, 1, data, len(data))


def test_reader_reassembles_split_and_coalesced_frames():
    frames = [struct.pack(">i", len(body)) + body for body in (b"\x00\x12\x00\x00\x00\x00\x00\x07\xff\xff",
                                                              b"x" * 300, b"\x00\x03\x00\x01\x00\x00\x00\x08\x00\x00")]
    stream = b"".join(frames)
    isn = 2**32 - 100                             # the sequence number wraps inside the stream
    cuts = [0, 3, 14, 200, 310, len(stream)]      # frames split across segments, segments spanning frames
    segs = [(isn + 1 + a, stream[a:b]) for a, b in zip(cuts, cuts[1:])]
    order = [segs[0], segs[2], segs[1], segs[2], segs[3], segs[4], segs[3]]   # reordered, retransmitted
    packets = [_tcp_packet(1, 40000, 9092, isn, b"", flags=0x02)]
    packets += [_tcp_packet(i + 2, 40000, 9092, seq % 2**32, data) for i, (seq, data) in enumerate(order)]
    directions = reassemble([tcp_segment(p) for p in packets])
    (direction,) = directions.values()
    assert direction.retransmitted == 2 and direction.holes == 0 and len(direction.runs) == 1
    found, left = split_frames(direction.runs[0], "synthetic", 1, "request")
    assert [f.payload for f in found] == [f[4:] for f in frames] and left == 0


def test_reader_reads_both_container_formats():
    for path in _capture_files():
        packets = read_packets(path)
        assert packets and all(p.linktype == 1 for p in packets), path
    if not _capture_files():
        pytest.skip(f"reference material not available: {PCAPS} is missing (it lives in ../shared beside the repo)")
