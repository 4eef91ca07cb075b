"""A small pure-Python reader of packet captures, enough to pull Kafka frames out of them.

- Containers: libpcap (either byte order, micro- or nanosecond magic) and pcapng (section header,
  interface description, enhanced and simple packet blocks; every other block is skipped). The
  container is chosen by magic number, not by file name (nDPI's kafka.pcap is pcapng).
- Link layers: Ethernet (with 802.1Q/QinQ tags), Linux cooked v1/v2, raw IP, BSD loopback.
- Network/transport: IPv4 (non-fragmented) and IPv6 (without extension headers), TCP.
- TCP: each direction of each connection is reassembled by sequence number, relative to its
  SYN (or its first segment when the capture starts mid-connection). Bytes already seen
  (retransmits, overlaps) are dropped; a hole (bytes never captured, or a truncated snapshot)
  splits the direction into separate contiguous runs.
- Kafka: each run is cut into size-prefixed frames; a run ending inside a frame leaves that
  frame incomplete (reported, never decoded). Responses are matched to requests by correlation
  id within the connection; the client side is the one that sent the SYN, or else the side
  whose port is not the lower of the two (brokers listen on a fixed, usually lower, port).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": ("<", 1e-6), b"\xa1\xb2\xc3\xd4": (">", 1e-6),
               b"\x4d\x3c\xb2\xa1": ("<", 1e-9), b"\xa1\xb2\x3c\x4d": (">", 1e-9)}
PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"

LINK_ETHERNET, LINK_RAW, LINK_RAW_ALT, LINK_LOOP, LINK_SLL, LINK_SLL2 = 1, 101, 12, 0, 113, 276

TCP_FIN, TCP_SYN, TCP_RST, TCP_ACK = 0x01, 0x02, 0x04, 0x10


@dataclass
class Packet:
    index: int          # 1-based, in capture order
    linktype: int
    data: bytes
    orig_len: int


@dataclass
class Segment:
    index: int
    src: tuple          # (address bytes, port)
    dst: tuple
    seq: int
    flags: int
    payload: bytes      # the bytes captured
    length: int         # the bytes the segment carried (more than payload if truncated)


# --- containers ----------------------------------------------------------------------------------
def read_packets(path: Path) -> list[Packet]:
    data = Path(path).read_bytes()
    if data[:4] == PCAPNG_SHB:
        return list(_pcapng(data))
    if data[:4] in PCAP_MAGICS:
        return list(_pcap(data))
    raise ValueError(f"{path}: neither pcap nor pcapng (magic {data[:4].hex()})")


def _pcap(data):
    endian, _ = PCAP_MAGICS[data[:4]]
    linktype = struct.unpack_from(endian + "I", data, 20)[0] & 0x0FFFFFFF
    pos, index = 24, 0
    record = struct.Struct(endian + "IIII")
    while pos + 16 <= len(data):
        _, _, incl, orig = record.unpack_from(data, pos)
        pos += 16
        index += 1
        yield Packet(index, linktype, data[pos:pos + incl], orig)
        pos += incl


def _pcapng(data):
    pos, index = 0, 0
    endian = "<"
    interfaces = []
    while pos + 12 <= len(data):
        if data[pos:pos + 4] == PCAPNG_SHB:
            bom = data[pos + 8:pos + 12]
            endian = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
            interfaces = []
        block_type, length = struct.unpack_from(endian + "II", data, pos)
        if length < 12 or pos + length > len(data):
            raise ValueError(f"pcapng: bad block length {length} at offset {pos}")
        body = data[pos + 8:pos + length - 4]
        if block_type == 1:                       # interface description
            interfaces.append(struct.unpack_from(endian + "H", body, 0)[0])
        elif block_type == 6:                     # enhanced packet
            iface, _, _, incl, orig = struct.unpack_from(endian + "IIIII", body, 0)
            index += 1
            yield Packet(index, interfaces[iface], body[20:20 + incl], orig)
        elif block_type == 3:                     # simple packet
            orig = struct.unpack_from(endian + "I", body, 0)[0]
            index += 1
            payload = body[4:4 + orig]
            yield Packet(index, interfaces[0], payload, orig)
        pos += length


# --- link, network, transport ----------------------------------------------------------------------
def _network(packet: Packet):
    """(ethertype, bytes of the network layer) or None."""
    d, lt = packet.data, packet.linktype
    if lt == LINK_ETHERNET:
        pos, ethertype = 14, struct.unpack_from(">H", d, 12)[0]
        while ethertype in (0x8100, 0x88A8, 0x9100):
            ethertype = struct.unpack_from(">H", d, pos + 2)[0]
            pos += 4
        return ethertype, d[pos:]
    if lt in (LINK_RAW, LINK_RAW_ALT):
        return (0x0800 if d[0] >> 4 == 4 else 0x86DD), d
    if lt == LINK_LOOP:
        family = struct.unpack_from("<I", d, 0)[0]
        if family > 0xFFFF:
            family = struct.unpack_from(">I", d, 0)[0]
        return (0x0800 if family == 2 else 0x86DD), d[4:]
    if lt == LINK_SLL:
        return struct.unpack_from(">H", d, 14)[0], d[16:]
    if lt == LINK_SLL2:
        return struct.unpack_from(">H", d, 0)[0], d[20:]
    return None


def tcp_segment(packet: Packet) -> Segment | None:
    net = _network(packet)
    if net is None:
        return None
    ethertype, d = net
    if ethertype == 0x0800:
        if len(d) < 20 or d[9] != 6:
            return None
        ihl = (d[0] & 0x0F) * 4
        total = struct.unpack_from(">H", d, 2)[0]
        frag = struct.unpack_from(">H", d, 6)[0]
        if frag & 0x3FFF:                         # a fragment: not handled
            return None
        src, dst = d[12:16], d[16:20]
        ip_end = total if total else len(d)
        seg = d[ihl:ip_end]
        missing = ip_end - len(d)
    elif ethertype == 0x86DD:
        if len(d) < 40 or d[6] != 6:
            return None
        plen = struct.unpack_from(">H", d, 4)[0]
        src, dst = d[8:24], d[24:40]
        seg = d[40:40 + plen]
        missing = 40 + plen - len(d)
    else:
        return None
    sport, dport, seq = struct.unpack_from(">HHI", seg, 0)
    offset = (seg[12] >> 4) * 4
    flags = seg[13]
    payload = bytes(seg[offset:])
    length = len(payload) + max(missing, 0)
    return Segment(packet.index, (src, sport), (dst, dport), seq, flags, payload, length)


# --- TCP reassembly --------------------------------------------------------------------------------
@dataclass
class Run:
    """Contiguous bytes of one direction: data, and the packet index where each byte came from."""
    data: bytearray = field(default_factory=bytearray)
    packets: list = field(default_factory=list)    # (offset in data, packet index), ascending


@dataclass
class Direction:
    src: tuple
    dst: tuple
    saw_syn: bool = False
    syn_ack: bool = False
    runs: list = field(default_factory=list)
    retransmitted: int = 0      # segments whose bytes had all been seen already
    holes: int = 0


def reassemble(segments: list[Segment]) -> dict[tuple, Direction]:
    """Directions keyed by (src, dst), each as contiguous runs of stream bytes."""
    by_dir: dict[tuple, list[Segment]] = {}
    for s in segments:
        by_dir.setdefault((s.src, s.dst), []).append(s)
    out = {}
    for key, segs in by_dir.items():
        direction = Direction(*key)
        syns = [s for s in segs if s.flags & TCP_SYN]
        direction.saw_syn = bool(syns)
        direction.syn_ack = any(s.flags & TCP_ACK for s in syns)
        base = (syns[0].seq + 1) if syns else min(
            (s.seq for s in segs if s.payload), default=0, key=lambda q: (q - segs[0].seq) % 2**32)
        # Relative offsets, mod 2**32 around the base (a capture may span a wrap of the sequence).
        data_segs = [((s.seq - base) % 2**32, s) for s in segs if s.payload]
        data_segs = [(off if off < 2**31 else off - 2**32, s) for off, s in data_segs]
        data_segs.sort(key=lambda item: (item[0], item[1].index))
        run, end = None, None       # end: the stream offset up to which bytes have been seen
        for off, s in data_segs:
            if end is not None and off + s.length <= end:
                direction.retransmitted += 1
                continue
            if run is None or off > end:
                if direction.runs:
                    direction.holes += 1
                run = Run()
                direction.runs.append(run)
                end = off if end is None else max(end, off)
            payload = s.payload[end - off:]
            run.packets.append((len(run.data), s.index))
            run.data += payload
            if len(s.payload) < s.length:   # truncated: the rest of this segment was never captured
                end = off + s.length
                run = None
            else:
                end += len(payload)
        out[key] = direction
    return out


# --- Kafka frames ----------------------------------------------------------------------------------
@dataclass
class Frame:
    capture: str
    connection: int         # 1-based, in order of first appearance
    role: str               # "request" or "response"
    payload: bytes          # without the 4-byte size
    packet: int             # capture index of the packet holding the frame's first byte


MAX_FRAME = 100 * 1024 * 1024


def split_frames(run: Run, capture, connection, role) -> tuple[list[Frame], int]:
    """The complete frames of a run, and how many bytes at its end belong to an incomplete one."""
    frames, pos, data = [], 0, run.data
    while len(data) - pos >= 4:
        size = struct.unpack_from(">i", data, pos)[0]
        if size < 0 or size > MAX_FRAME:
            return frames, len(data) - pos
        if len(data) - pos - 4 < size:
            break
        packet = next(idx for off, idx in reversed(run.packets) if off <= pos)
        frames.append(Frame(capture, connection, role, bytes(data[pos + 4:pos + 4 + size]), packet))
        pos += 4 + size
    return frames, len(data) - pos


@dataclass
class Capture:
    name: str
    packets: int
    connections: int
    requests: list          # Frame
    responses: list         # Frame
    incomplete: int         # bytes left over in incomplete frames, over every run
    retransmitted: int
    holes: int


def looks_like_request(payload: bytes) -> bool:
    """Does a frame open with a plausible request header (api key, version, correlation id,
    then a null or printable client id that fits in the frame)?"""
    if len(payload) < 10:
        return False
    key, version, _, n = struct.unpack_from(">hhih", payload, 0)
    if not (0 <= key < 200 and 0 <= version < 64 and -1 <= n <= len(payload) - 10):
        return False
    return n <= 0 or all(32 <= c < 127 for c in payload[10:10 + n])


def _request_side(a: Direction, b: Direction | None, frames_a, frames_b) -> bool:
    """Is a the client-to-broker direction of its connection?

    In order: who sent the first SYN; which assignment pairs more request correlation ids
    (bytes 4-8 of a request) with response correlation ids (bytes 0-4 of a response); which
    side's frames look like request headers; else the side with the higher (ephemeral) port.
    """
    if a.saw_syn and not a.syn_ack:
        return True
    if b is not None and b.saw_syn and not b.syn_ack:
        return False

    def pairs(reqs, resps):
        ids = {f.payload[4:8] for f in reqs if len(f.payload) >= 8}
        return sum(1 for f in resps if f.payload[:4] in ids)
    a_first, b_first = pairs(frames_a, frames_b), pairs(frames_b, frames_a)
    if a_first != b_first:
        return a_first > b_first

    def score(frames):
        return sum(map(looks_like_request, (f.payload for f in frames))) / len(frames) if frames else 0.5
    if score(frames_a) != score(frames_b):
        return score(frames_a) > score(frames_b)
    return a.src[1] > a.dst[1]


def kafka_capture(path: Path) -> Capture:
    packets = read_packets(path)
    segments = [s for s in map(tcp_segment, packets) if s is not None]
    directions = reassemble(segments)
    order = {}
    for s in segments:
        order.setdefault(frozenset((s.src, s.dst)), len(order) + 1)
    requests, responses, incomplete, retrans, holes = [], [], 0, 0, 0
    frames = {}
    for key, direction in directions.items():
        conn = order[frozenset(key)]
        retrans += direction.retransmitted
        holes += direction.holes
        frames[key] = []
        for run in direction.runs:
            found, left = split_frames(run, Path(path).name, conn, None)
            incomplete += left
            frames[key].extend(found)
    for key, direction in directions.items():
        back = (key[1], key[0])
        role = "request" if _request_side(direction, directions.get(back), frames[key], frames.get(back, [])) else "response"
        for f in frames[key]:
            f.role = role
        (requests if role == "request" else responses).extend(frames[key])
    requests.sort(key=lambda f: f.packet)
    responses.sort(key=lambda f: f.packet)
    return Capture(Path(path).name, len(packets), len(order), requests, responses, incomplete, retrans, holes)
