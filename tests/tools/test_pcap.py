"""`kafkawire pcap` (issue 13, item 3): the reference captures decode and re-encode identically,
a flipped byte is reported with its frame and field, bad input is reported per frame, and the
frames, API keys, versions and correlation ids agree with tshark's Kafka dissector."""
from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import dpkt
import pytest

from kafkawire.protocol import framing
from tests.conftest import REFERENCE, require
from kafkawire.capture import read_capture

REPO = Path(__file__).resolve().parents[2]
PCAPS = REFERENCE / "pcaps"
OURS = REPO / "tests" / "data" / "pcaps"      # real clients against a kafkawire node (make_captures.py)
CAPTURES = (sorted(PCAPS.rglob("*.pcap*")) if PCAPS.exists() else []) + sorted(OURS.glob("*.pcapng"))


def pcap(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "pcap", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def no_traceback(result):
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr


# --- synthetic captures ------------------------------------------------------------------------------
def _packet(src_port, dst_port, seq, payload=b"", flags=dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH):
    tcp = dpkt.tcp.TCP(sport=src_port, dport=dst_port, seq=seq, flags=flags, data=payload)
    client = src_port != 9092
    ip = dpkt.ip.IP(src=bytes([10, 0, 0, 1 if client else 2]), dst=bytes([10, 0, 0, 2 if client else 1]),
                    p=dpkt.ip.IP_PROTO_TCP, data=tcp)
    ip.len = len(bytes(ip))
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, data=ip))


def write_capture(path: Path, packets) -> Path:
    with open(path, "wb") as fh:
        writer = dpkt.pcap.Writer(fh)
        for i, data in enumerate(packets):
            writer.writepkt(data, ts=1_700_000_000 + i / 1000)
    return path


def _api_versions_exchange():
    from kafkawire.messages.api_versions_request import ApiVersionsRequest
    from kafkawire.protocol.apis import api_versions_response
    request = framing.encode_request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3, 7)
    response = framing.encode_response(api_versions_response(), 3, 7)
    return request, response


# --- the reference captures ------------------------------------------------------------------------
@pytest.mark.parametrize("capture", CAPTURES, ids=[f"{p.parent.name}/{p.name}" for p in CAPTURES])
def test_reference_capture_checks_clean(capture):
    result = pcap("--check", capture)
    no_traceback(result)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = re.match(r"(\d+) frames, (\d+) identical, 0 differ, 0 unknown", result.stdout.splitlines()[-1])
    assert summary and summary.group(1) == summary.group(2) != "0", result.stdout


def test_every_reference_frame_is_identical_except_responses_without_requests():
    require(PCAPS)
    frames = [f for path in sorted(PCAPS.rglob("*.pcap*")) for f in read_capture(path, check=True).frames]
    identical = [f for f in frames if f.check == "identical"]
    unpaired = [f for f in frames if f.status == "unpaired"]
    assert len(frames) == 75 and len(identical) == 69 and len(unpaired) == 6
    assert all(f.role == "response" for f in unpaired)


def _produce_capture(tmp_path) -> tuple[Path, int]:
    source = require(PCAPS / "deepflow" / "produce-v9.pcap")
    (frame,) = read_capture(source, check=True).frames
    records = bytes(frame.body.topic_data[0].partition_data[0].records)
    return _flip_last_byte(source, records, tmp_path / "flipped.pcap"), frame.packet


def _flip_last_byte(source: Path, records: bytes, target: Path) -> Path:
    """A copy of the capture with the last byte of ``records`` (the last record's value) flipped."""
    data = source.read_bytes()
    at = data.index(records) + len(records) - 1
    flipped = bytearray(data)
    flipped[at] ^= 0x01
    target.write_bytes(bytes(flipped))
    return target


def test_a_flipped_byte_in_a_record_is_reported_with_its_frame_and_field(tmp_path):
    target, packet = _produce_capture(tmp_path)
    result = pcap("--check", target)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1] == "1 frames, 0 identical, 1 differ, 0 unknown"
    (finding,) = [line for line in result.stdout.splitlines() if line.startswith("  stream")]
    assert f"packet {packet} request Produce v9" in finding
    assert "field ProduceRequest.TopicData[0].PartitionData[0].Records" in finding and "CRC" in finding


def test_a_flipped_byte_in_a_fetched_record_is_reported_with_its_frame_and_field(tmp_path):
    """The same on one of the repo's captures (kafka-python fetching from a kafkawire node): the
    one Fetch response with records differs, every other frame stays identical."""
    source = OURS / "kafka-python.pcapng"
    frames = read_capture(source, check=True).frames
    (frame,) = [f for f in frames if f.role == "response" and f.api_key == 1
                and f.body.responses and f.body.responses[0].partitions[0].records]
    target = _flip_last_byte(source, bytes(frame.body.responses[0].partitions[0].records), tmp_path / "f.pcapng")
    result = pcap("--check", target)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1] == f"{len(frames)} frames, {len(frames) - 1} identical, 1 differ, 0 unknown"
    (finding,) = [line for line in result.stdout.splitlines() if line.startswith("  stream")]
    assert f"packet {frame.packet} response Fetch v{frame.api_version}" in finding
    assert "field FetchResponse.Responses[0].Partitions[0].Records" in finding and "CRC" in finding, finding


def test_a_flipped_length_is_reported_as_a_decode_failure_naming_the_field(tmp_path):
    request, response = _api_versions_exchange()
    broken = bytearray(request)
    broken[4 + 20] = 0x7F     # after the v2 header (client id "kafkawire"): ClientSoftwareName's compact length
    target = write_capture(tmp_path / "broken.pcap", [
        _packet(40000, 9092, 1, bytes(broken)), _packet(9092, 40000, 1, response)])
    result = pcap("--check", target)
    no_traceback(result)
    assert result.returncode == 1
    assert "1 differ" in result.stdout.splitlines()[-1]
    (finding,) = [line for line in result.stdout.splitlines() if line.startswith("  stream")]
    assert "ApiVersions v3" in finding and "ClientSoftwareName" in finding
    assert "ApiVersions v3 Response corr=7" in result.stdout      # the rest is still decoded


def test_our_client_captures_are_all_identical():
    captures = sorted(OURS.glob("*.pcapng"))
    assert {p.stem for p in captures} == {"kafka-python", "confluent-kafka", "kcat", "aiokafka"}
    for path in captures:
        capture = read_capture(path, check=True)
        frames, problems = capture.frames, capture.problems
        assert frames and all(f.check == "identical" for f in frames) and not problems, path.name
        assert {f.role for f in frames} == {"request", "response"}


# --- bad input -----------------------------------------------------------------------------------
def test_unknown_api_key_is_unknown_and_fails_the_check(tmp_path):
    frame = struct.pack(">hhih", 999, 0, 5, 1) + b"x" + b"\x00"
    target = write_capture(tmp_path / "unknown.pcap", [_packet(40000, 9092, 1, struct.pack(">i", len(frame)) + frame)])
    result = pcap("--check", target)
    no_traceback(result)
    assert result.returncode == 1 and "1 frames, 0 identical, 0 differ, 1 unknown" in result.stdout
    assert "API key 999 is not in schemas/" in result.stdout


def test_truncated_capture_keeps_what_was_read(tmp_path):
    request, response = _api_versions_exchange()
    full = write_capture(tmp_path / "full.pcap", [_packet(40000, 9092, 1, request), _packet(9092, 40000, 1, response)])
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(full.read_bytes()[:-20])
    result = pcap(cut)
    no_traceback(result)
    assert result.returncode == 0
    assert "ApiVersions v3 Request corr=7" in result.stdout
    # dpkt hands over the cut packet as it is: the missing tail is a gap at the end of the stream.
    assert "frame cut short" in result.stderr and "TCP gap of 20 bytes" in result.stderr
    header_cut = tmp_path / "header-cut.pcap"
    header_cut.write_bytes(full.read_bytes()[:24 + 16 + len(_packet(40000, 9092, 1, request)) + 7])
    result = pcap(header_cut)
    no_traceback(result)
    assert "ApiVersions v3 Request corr=7" in result.stdout and result.returncode == 0


def test_tcp_gap_and_a_non_kafka_stream_on_a_kafka_port(tmp_path):
    request, response = _api_versions_exchange()
    http = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    target = write_capture(tmp_path / "gap.pcap", [
        _packet(40000, 9092, 1, request[:10]),                      # the rest of the request never captured
        _packet(40000, 9092, 1 + len(request), request),           # a second copy after the gap
        _packet(9092, 40000, 1, response),
        _packet(40001, 9093, 1, http)])
    result = pcap("--check", target)
    no_traceback(result)
    assert "TCP gap of" in result.stderr and "10.0.0.2:9093, packet 4, stream offset 0: not a Kafka frame" in result.stderr
    assert "ApiVersions v3 Response corr=7" in result.stdout


def test_not_a_capture_and_bad_options(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello\n" * 10)
    for args, message in (([text], "neither pcap nor pcapng"), ([tmp_path / "missing.pcap"], "cannot open"),
                          ([text, "--port", "x"], "--port 'x'"), ([text, "--api", "Nope"], "no API named 'Nope'")):
        result = pcap(*args)
        no_traceback(result)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)


# --- output ----------------------------------------------------------------------------------------
def test_json_api_filter_and_decoded_records():
    capture = require(PCAPS / "deepflow" / "mixed-with-unsupported.pcap")
    result = pcap("--json", "--api", "Heartbeat,8", capture)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert {line["apiName"] for line in lines} == {"Heartbeat", "OffsetCommit"} and len(lines) == 4
    heartbeat = next(line for line in lines if line["apiName"] == "Heartbeat" and line["role"] == "request")
    assert heartbeat["body"]["groupId"] and heartbeat["header"]["correlationId"] == heartbeat["correlationId"]

    produce = pcap("--json", "--decode-records", require(PCAPS / "deepflow" / "produce-v9.pcap"))
    (frame,) = [json.loads(line) for line in produce.stdout.splitlines()]
    (field,) = frame["records"]
    records = [r for batch in field["batches"] for r in batch["records"]]
    assert records and all("value" in r for r in records) and field["topic"]


def test_json_api_filter_and_decoded_records_on_a_capture_of_the_repo():
    """The same on kafka-python fetching from a kafkawire node: --api by name and by key, the
    header's correlation id, and the fetched records of __cluster_metadata decoded, each with its
    offset and its value or why its value is no metadata record (the node appends raw bytes)."""
    capture = OURS / "kafka-python.pcapng"
    result = pcap("--json", "--decode-records", "--api", "Fetch,18", capture)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert {line["apiName"] for line in lines} == {"Fetch", "ApiVersions"}
    assert all(line["header"]["correlationId"] == line["correlationId"] for line in lines if line["role"] == "request")
    records = [r for line in lines for field in line.get("records", []) for batch in field["batches"]
               for r in batch["records"]]
    assert len(records) >= 20 and all("offset" in r and ("value" in r or "error" in r) for r in records)


def test_coordinator_records_decode():
    from kafkawire.capture.records import decode_coordinator_record
    from kafkawire.messages.offset_commit_key import OffsetCommitKey
    from kafkawire.messages.offset_commit_value import OffsetCommitValue
    key = struct.pack(">h", 1) + OffsetCommitKey(group="g", topic="t", partition=3).encode(0)
    value = struct.pack(">h", 3) + OffsetCommitValue(offset=42, metadata="m", commit_timestamp=5).encode(3)
    decoded = decode_coordinator_record("__consumer_offsets", key, value)
    assert decoded["keyType"] == "OffsetCommitKey" and decoded["key"] == {"group": "g", "topic": "t", "partition": 3}
    assert decoded["valueVersion"] == 3 and decoded["value"]["offset"] == 42
    assert decode_coordinator_record("__consumer_offsets", key, None)["value"] is None


# --- against tshark ----------------------------------------------------------------------------------
def _tshark_frames(capture: Path, ports) -> set:
    args = ["tshark", "-r", str(capture), "-Y", "kafka", "-T", "fields", "-e", "frame.number", "-e", "kafka.request_key",
            "-e", "kafka.api_version", "-e", "kafka.correlation_id"]
    for port in ports:
        args[3:3] = ["-d", f"tcp.port=={port},kafka"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    found = set()
    for line in out.stdout.splitlines():
        number, keys, versions, corrs = (line.split("\t") + ["", "", ""])[:4]
        keys, versions = keys.split(","), versions.split(",")
        for i, corr in enumerate(corrs.split(",")):
            key = keys[i] if i < len(keys) and keys[i] else None
            found.add((int(number), int(corr), int(key) if key else None,
                       int(versions[i]) if key and i < len(versions) else None))
    return found


@pytest.mark.parametrize("capture", CAPTURES, ids=[f"{p.parent.name}/{p.name}" for p in CAPTURES])
def test_same_frames_keys_versions_and_correlation_ids_as_tshark(capture):
    if shutil.which("tshark") is None:
        from tests.conftest import unavailable
        unavailable("tshark is not installed (Debian package tshark)")
    frames = read_capture(capture, check=False).frames
    ports = sorted({f.dst[1] for f in frames if f.role == "request"})
    ours = {(f.packet, f.correlation_id, f.api_key if f.role == "request" else None,
             f.api_version if f.role == "request" else None) for f in frames}
    theirs = _tshark_frames(capture, ports)
    assert ours == theirs


def test_decode_records_reads_cluster_metadata_and_consumer_offsets(tmp_path):
    from kafkawire.messages.fetch_request import FetchRequest
    from kafkawire.messages.fetch_response import FetchableTopicResponse, FetchResponse, PartitionData
    from kafkawire.messages.offset_commit_key import OffsetCommitKey
    from kafkawire.messages.offset_commit_value import OffsetCommitValue
    from kafkawire.messages.topic_record import TopicRecord
    from kafkawire.metadata.frame import encode_metadata_record
    from kafkawire.records.batch import build_batch
    import uuid
    metadata = build_batch([(None, encode_metadata_record(TopicRecord(name="orders", topic_id=uuid.UUID(int=7)), 0))])
    offsets = build_batch([(struct.pack(">h", 1) + OffsetCommitKey(group="g", topic="t", partition=0).encode(0),
                            struct.pack(">h", 3) + OffsetCommitValue(offset=9, metadata="").encode(3))])
    response = FetchResponse(responses=[
        FetchableTopicResponse(topic=name, partitions=[PartitionData(partition_index=0, records=batch)])
        for name, batch in (("__cluster_metadata", metadata), ("__consumer_offsets", offsets))])
    target = write_capture(tmp_path / "fetch.pcap", [
        _packet(40000, 9092, 1, framing.encode_request(FetchRequest(max_wait_ms=1), 12, 3)),
        _packet(9092, 40000, 1, framing.encode_response(response, 12, 3))])
    result = pcap("--json", "--decode-records", "--check", target)
    no_traceback(result)
    assert result.returncode == 0, result.stderr
    frame = json.loads(result.stdout.splitlines()[1])
    by_topic = {field["topic"]: field["batches"][0]["records"][0] for field in frame["records"]}
    assert by_topic["__cluster_metadata"]["type"] == "TopicRecord"
    assert by_topic["__cluster_metadata"]["data"]["name"] == "orders"
    assert by_topic["__consumer_offsets"]["keyType"] == "OffsetCommitKey"
    assert by_topic["__consumer_offsets"]["value"]["offset"] == 9


def damaged(rng, data: bytes) -> bytes:
    """data with 1-4 of: a bit flipped, up to 50 bytes deleted, the rest cut off."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not data:
            break
        at, op = rng.randrange(len(data)), rng.random()
        if op < 0.7:
            data[at] ^= 1 << rng.randrange(8)
        elif op < 0.85:
            del data[at:at + rng.randint(1, 50)]
        else:
            data = data[:at]
    return bytes(data)


def test_mutated_captures_are_reported_never_raised(tmp_path):
    """Flipped bits, cut and deleted bytes anywhere in a capture (file header, packet records, IP,
    TCP, Kafka): the analysis reports what it can and never raises past CaptureError."""
    import random
    from kafkawire.capture.packets import CaptureError
    from kafkawire.tools.pcap import frame_json, summary_line
    assert CAPTURES      # the in-repo captures (tests/data/pcaps), and ../shared's when present
    rng = random.Random(13)
    for i in range(80):
        path = tmp_path / f"mutated-{i}.pcap"
        path.write_bytes(damaged(rng, rng.choice(CAPTURES).read_bytes()))
        try:
            frames = read_capture(path, check=True).frames
        except CaptureError:
            continue
        for f in frames:
            summary_line(f)
            frame_json(f, True)
