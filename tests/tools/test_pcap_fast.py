"""`kafkawire pcap` read the fast way (kafkawire.capture.fast_packets, fast_check: issue 26) says
exactly what the first way (dpkt per packet, the JSON walk, record objects), kept as the oracle,
says: the same summary lines, frames, problems and check verdicts, on every reference capture and
on odd ones (retransmissions, out-of-order and snapshot-cut segments, truncated files, non-Kafka
traffic, VLAN tags, IP and TCP options, fragments, IPv6, raw-IP and Linux cooked links, pcapng
with options and in big-endian, nanosecond pcap) and on randomly damaged ones."""
from __future__ import annotations

import random
import struct
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafkawire.capture import CaptureError, read_capture
from kafkawire.capture.check import error_codes
from kafkawire.capture.fast_check import body_error_codes
from kafkawire.protocol import framing
from kafkawire.tools.pcap import check_summary, summary_line
from tests.conftest import REFERENCE
from tests.tools.test_pcap import CAPTURES, REPO, _api_versions_exchange, damaged

SYN, FIN, PSH, ACK = 0x02, 0x01, 0x08, 0x10


def report(path: Path, fast: bool) -> list:
    """Everything `kafkawire pcap --check` prints about a capture, and every field of every frame."""
    try:
        capture = read_capture(path, check=True, fast=fast)
    except CaptureError as exc:
        return ["error", str(exc)]
    frames = capture.frames
    out = [summary_line(f, fast) for f in frames] + capture.problems + ["summary: " + check_summary(frames)[0]]
    out += [(f.packet, f.time, f.stream, f.src, f.dst, f.role, f.payload, f.api_key, f.api_version, f.correlation_id,
             f.client_id, f.trailing, f.status, f.problem, f.check, f.difference) for f in frames]
    return out


def assert_same(path: Path) -> list:
    old, new = report(path, fast=False), report(path, fast=True)
    assert new == old, path.name
    return new


# --- writing captures -------------------------------------------------------------------------------
def tcp(sport, dport, seq, flags, payload=b"", options=b""):
    off = (20 + len(options)) // 4
    return struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 0, off << 4, flags, 65535, 0, 0) + options + payload


def ipv4(src, dst, segment, proto=6, options=b"", fragment=0x4000, total=None):
    header = 20 + len(options)
    size = header + len(segment) if total is None else total
    return struct.pack(">BBHHHBBH4s4s", 0x40 | header // 4, 0, size, 0, fragment, 64, proto, 0,
                       bytes(src), bytes(dst)) + options + segment


def ipv6(src, dst, segment, next_header=6):
    return struct.pack(">IHBB16s16s", 6 << 28, len(segment), next_header, 64, bytes(src), bytes(dst)) + segment


def ethernet(packet, kind=0x0800, vlan=None):
    tag = b"" if vlan is None else struct.pack(">HH", 0x8100, vlan)
    return b"\x02" * 6 + b"\x04" * 6 + tag + struct.pack(">H", kind) + packet


def write_pcap(path, packets, link=1, big_endian=False, nano=False):
    """packets: data or (data, captured length) for a snapshot cut."""
    order = ">" if big_endian else "<"
    with open(path, "wb") as out:
        out.write(struct.pack(order + "IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0, 65535, link))
        for i, packet in enumerate(packets):
            data, caplen = packet if isinstance(packet, tuple) else (packet, len(packet))
            out.write(struct.pack(order + "IIII", 1_700_000_000 + i, 123_456_789 if nano else 250_000 + i, caplen,
                                  len(data)) + data[:caplen])
    return path


def write_pcapng(path, packets, link=1, big_endian=False, options=False):
    order = ">" if big_endian else "<"

    def block(kind, body):
        body += b"\0" * (-len(body) % 4)
        return struct.pack(order + "II", kind, len(body) + 12) + body + struct.pack(order + "I", len(body) + 12)
    with open(path, "wb") as out:
        out.write(block(0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1)))
        tsresol = struct.pack(order + "HH", 9, 1) + b"\x09\0\0\0" + struct.pack(order + "HH", 0, 0) if options else b""
        out.write(block(1, struct.pack(order + "HHI", link, 0, 65535) + tsresol))
        for i, data in enumerate(packets):
            stamp = 1_700_000_000_000_000 + i * 1_000
            comment = struct.pack(order + "HH", 1, 5) + b"hello\0\0\0" + struct.pack(order + "HH", 0, 0) \
                if options and i % 2 else b""
            padded = data + b"\0" * (-len(data) % 4)
            out.write(block(6, struct.pack(order + "IIIII", 0, stamp >> 32, stamp & 0xFFFFFFFF, len(data), len(data))
                            + padded + comment))
            if i == 1:
                out.write(block(4, b"\0\0\0\0"))           # a name resolution block: skipped
    return path


CLIENT, BROKER = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
CLIENT6, BROKER6 = bytes(15) + b"\x01", bytes([0x20, 0x01, 0x0d, 0xb8] + [0] * 11 + [2])


def conversation():
    """(from the client, bytes) of an ApiVersions, a Metadata and a Produce exchange with a batch."""
    from kafkawire.messages.metadata_request import MetadataRequest
    from kafkawire.messages.metadata_response import MetadataResponse, MetadataResponseTopic
    from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
    from kafkawire.messages.produce_response import ProduceResponse, TopicProduceResponse
    from kafkawire.records import build_batch
    request, response = _api_versions_exchange()
    batch = build_batch([(b"k%d" % i, b"value %d" % i, [("h", b"v")]) for i in range(20)])
    produce = ProduceRequest(acks=1, timeout_ms=100, topic_data=[TopicProduceData(name="t", partition_data=[
        PartitionProduceData(index=0, records=batch)])])
    return [(True, request), (False, response),
            (True, framing.encode_request(MetadataRequest(topics=None), 12, 8)),
            (False, framing.encode_response(MetadataResponse(topics=[MetadataResponseTopic(error_code=3, name="x")]), 12, 8)),
            (True, framing.encode_request(produce, 9, 9)),
            (False, framing.encode_response(ProduceResponse(responses=[TopicProduceResponse(name="t")]), 9, 9))]


def segments(mss=60, sport=40000, dport=9092):
    """(from the client, TCP header and payload) of the conversation: handshake, data in mss pieces."""
    seq = {True: 1000, False: 50000}
    out = [(True, tcp(sport, dport, seq[True] - 1, SYN)), (False, tcp(dport, sport, seq[False] - 1, SYN | ACK))]
    for client, data in conversation():
        for at in range(0, len(data), mss):
            piece = data[at:at + mss]
            out.append((client, tcp(*((sport, dport) if client else (dport, sport)), seq[client], PSH | ACK, piece)))
            seq[client] += len(piece)
    return out


def v4(segs, **ip):
    return [ethernet(ipv4(*((CLIENT, BROKER) if client else (BROKER, CLIENT)), s, **ip)) for client, s in segs]


# --- the reference captures ----------------------------------------------------------------------------
@pytest.mark.parametrize("capture", CAPTURES, ids=[f"{p.parent.name}/{p.name}" for p in CAPTURES])
def test_fast_way_reports_what_the_first_way_reports_on_every_reference_capture(capture):
    assert_same(capture)


def test_error_codes_without_json_are_the_json_walks_codes(tmp_path):
    """The summary's error codes, found along the field plans, equal the JSON form's on every frame."""
    paths = CAPTURES + [write_pcap(tmp_path / "codes.pcap", v4(segments()))]
    frames = [f for path in paths for f in read_capture(path).frames if f.body is not None]
    assert any(body_error_codes(f.body, f.api_version) for f in frames)
    for f in frames:
        assert sorted(body_error_codes(f.body, f.api_version)) == sorted(error_codes(f.body.to_json(f.api_version)))


# --- odd captures ---------------------------------------------------------------------------------------
def _odd_captures(tmp: Path) -> dict[str, Path]:
    segs = segments()
    plain = v4(segs)
    retransmitted = plain[:6] + plain[4:8] + plain[6:]
    swapped = plain[:5] + [plain[6], plain[5]] + plain[7:]
    cut = [(p, len(p) - 7) if i % 5 == 3 else p for i, p in enumerate(plain)]
    udp = ethernet(ipv4(CLIENT, BROKER, struct.pack(">HHHH", 53, 53, 12, 0) + b"dns!", proto=17))
    arp = ethernet(b"\0" * 28, kind=0x0806)
    http = [ethernet(ipv4(CLIENT, BROKER, tcp(41000, port, 1, PSH | ACK, b"GET / HTTP/1.1\r\n\r\n"))) for port in (8080, 9092)]
    others = plain[:4] + [udp, arp] + http + plain[4:] + [ethernet(ipv4(CLIENT, BROKER, b"\x08\0" * 10, proto=1))]
    tagged = [ethernet(p[14:], vlan=5) if i % 3 == 0 else p for i, p in enumerate(plain)]
    ip_options = v4(segs, options=b"\x01\x01\x01\x00")
    tcp_options = v4([(c, s[:12] + bytes([8 << 4]) + s[13:20] + b"\x01\x01\x08\x0a" + bytes(8) + s[20:]) for c, s in segs])
    fragments = plain[:3] + v4(segs[3:5], fragment=0x2000) + v4(segs[5:6], fragment=0x0010) + plain[3:]
    wrong_total = plain[:3] + v4(segs[3:4], total=30) + v4(segs[4:5], total=0) + plain[3:]
    six = [ethernet(ipv6(*((CLIENT6, BROKER6) if c else (BROKER6, CLIENT6)), s), kind=0x86DD) for c, s in segs]
    raw = [p[14:] for p in plain[: len(plain) // 2]] + [p[14:] for p in six[len(six) // 2:]]
    sll = [struct.pack(">HHH8sH", 0, 1, 6, b"\x02" * 6 + b"\0\0", 0x0800) + p[14:] for p in plain]
    tiny = [p[:random.Random(i).randint(0, 60)] for i, p in enumerate(plain)]
    captures = {
        "plain.pcap": write_pcap(tmp / "plain.pcap", plain),
        "retransmitted.pcap": write_pcap(tmp / "retransmitted.pcap", retransmitted),
        "out-of-order.pcap": write_pcap(tmp / "out-of-order.pcap", swapped),
        "snapshot-cut.pcap": write_pcap(tmp / "snapshot-cut.pcap", cut),
        "not-kafka.pcap": write_pcap(tmp / "not-kafka.pcap", others),
        "vlan.pcap": write_pcap(tmp / "vlan.pcap", tagged),
        "ip-options.pcap": write_pcap(tmp / "ip-options.pcap", ip_options),
        "tcp-options.pcap": write_pcap(tmp / "tcp-options.pcap", tcp_options),
        "fragments.pcap": write_pcap(tmp / "fragments.pcap", fragments),
        "ip-total-lengths.pcap": write_pcap(tmp / "ip-total-lengths.pcap", wrong_total),
        "ipv6.pcap": write_pcap(tmp / "ipv6.pcap", six),
        "raw-ip.pcap": write_pcap(tmp / "raw-ip.pcap", raw, link=101),
        "linux-cooked.pcap": write_pcap(tmp / "linux-cooked.pcap", sll, link=113),
        "cut-headers.pcap": write_pcap(tmp / "cut-headers.pcap", plain[:3] + tiny + plain[3:]),
        "big-endian-nano.pcap": write_pcap(tmp / "big-endian-nano.pcap", plain, big_endian=True, nano=True),
        "options.pcapng": write_pcapng(tmp / "options.pcapng", plain, options=True),
        "big-endian.pcapng": write_pcapng(tmp / "big-endian.pcapng", six, big_endian=True),
    }
    whole = captures["plain.pcap"].read_bytes()
    for cut_at in (len(whole) - 5, len(whole) - 40, 24 + 16 + len(plain[0]) + 9, 30, 24):
        captures[f"truncated-{cut_at}.pcap"] = tmp / f"truncated-{cut_at}.pcap"
        captures[f"truncated-{cut_at}.pcap"].write_bytes(whole[:cut_at])
    ng = captures["options.pcapng"].read_bytes()
    for cut_at in (len(ng) - 3, len(ng) - 30, 100):
        captures[f"truncated-{cut_at}.pcapng"] = tmp / f"truncated-{cut_at}.pcapng"
        captures[f"truncated-{cut_at}.pcapng"].write_bytes(ng[:cut_at])
    return captures


@pytest.mark.parametrize("c_loop", [True, False], ids=["c-packet-loop", "python-packet-loop"])
def test_fast_way_reports_what_the_first_way_reports_on_odd_captures(tmp_path, monkeypatch, c_loop):
    """Both of the fast way's packet loops: the C one (capture.c) and the Python one it leaves odd records to."""
    if not c_loop:
        monkeypatch.setattr("kafkawire.capture.fast_packets._native", SimpleNamespace(records=None))
    captures = _odd_captures(tmp_path)
    reports = {name: assert_same(path) for name, path in captures.items()}
    # the captures are what they say: Kafka decoded where the packets carry it, problems where they are odd
    for name in ("plain.pcap", "retransmitted.pcap", "out-of-order.pcap", "vlan.pcap", "ip-options.pcap",
                 "tcp-options.pcap", "ipv6.pcap", "options.pcapng", "big-endian.pcapng", "big-endian-nano.pcap",
                 "linux-cooked.pcap"):
        assert "summary: 6 frames, 6 identical, 0 differ, 0 unknown" in reports[name], name
    assert has(reports["snapshot-cut.pcap"], "TCP gap")
    assert has(reports["not-kafka.pcap"], "not a Kafka frame") and has(reports["not-kafka.pcap"], "Produce v9 Request")
    assert has(reports["cut-headers.pcap"], "headers cut short")
    assert any(has(lines, "truncated or corrupt") and has(lines, "at byte") for name, lines in reports.items()
               if name.startswith("truncated-"))


def has(lines: list, text: str) -> bool:
    return any(isinstance(line, str) and text in line for line in lines)


def test_fast_way_reports_what_the_first_way_reports_on_damaged_captures(tmp_path):
    """Bits flipped, bytes cut and deleted anywhere (file header, records, link, IP, TCP, Kafka)."""
    sources = [p for p in CAPTURES if p.stat().st_size < 20_000]
    sources += list(_odd_captures(tmp_path).values())[:6]
    rng = random.Random(26)
    for i in range(150):
        path = tmp_path / f"damaged-{i}.pcap"
        path.write_bytes(damaged(rng, rng.choice(sources).read_bytes()))
        assert_same(path)


def test_cli_prints_the_same_both_ways(tmp_path):
    """The command's whole output, the fast way and with KAFKAWIRE_PURE=1 (the first way)."""
    captures = _odd_captures(tmp_path)
    path = captures["not-kafka.pcap"]
    runs = [subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "pcap", "--check", str(path)], cwd=REPO,
                           capture_output=True, text=True, timeout=120, env={**__import__("os").environ, **env})
            for env in ({}, {"KAFKAWIRE_PURE": "1"})]
    assert runs[0].stdout == runs[1].stdout and runs[0].stderr == runs[1].stderr
    assert runs[0].returncode == runs[1].returncode == 0 and "Kafka Produce v9 Request" in runs[0].stdout


def test_a_file_that_cannot_be_mapped_is_read_by_dpkt_with_the_same_report(tmp_path, monkeypatch):
    """A pipe cannot be mapped: the fast way then reads the whole file the first way."""
    path = write_pcap(tmp_path / "plain.pcap", v4(segments()))
    expected = report(path, fast=False)

    def unmappable(*args, **kwargs):
        raise OSError("not mappable")
    monkeypatch.setattr("kafkawire.capture.fast_packets.mmap.mmap", unmappable)
    assert report(path, fast=True) == expected and "summary: 6 frames, 6 identical, 0 differ, 0 unknown" in expected


def test_batches_with_bad_records_and_a_good_crc_get_the_same_verdict(tmp_path):
    """Record bytes changed and the batch's CRC-32C written again, so that only the record parser
    can tell: the C parser's verdict without record objects (check_records) and the record
    objects' give the same report, the difference named by the first way's words."""
    from crc32c import crc32c
    from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
    from kafkawire.records import build_batch
    batch = build_batch([(b"k%d" % i, b"v" * i, [("h", b"x")] if i % 2 else []) for i in range(6)])
    rng = random.Random(7)
    verdicts = set()
    for n in range(120):
        bad = bytearray(batch)
        at = rng.randrange(61, len(bad))
        bad[at] = rng.choice((0x00, 0x7F, 0x80, 0xFF, bad[at] ^ 1))
        bad[17:21] = struct.pack(">I", crc32c(bytes(bad[21:])))
        request = ProduceRequest(acks=1, timeout_ms=1, topic_data=[TopicProduceData(name="t", partition_data=[
            PartitionProduceData(index=0, records=bytes(bad))])])
        frame = framing.encode_request(request, 9, n)
        path = write_pcap(tmp_path / f"records-{n}.pcap", v4([(True, tcp(40000, 9092, 1, PSH | ACK, frame))]))
        lines = assert_same(path)
        verdicts.add(next(line for line in lines if isinstance(line, str) and line.startswith("summary:")))
    assert {"summary: 1 frames, 1 identical, 0 differ, 0 unknown",
            "summary: 1 frames, 0 identical, 1 differ, 0 unknown"} <= verdicts
