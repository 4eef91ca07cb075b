"""TCP reassembly: each direction of each connection as contiguous runs of bytes.

Neither dpkt nor scapy reassembles TCP in a way that says where bytes are missing (scapy's
TCPSession hands reassembled payloads only to protocols it knows and hides gaps), and a
conformance check must tell "a gap in the capture" from "bad Kafka bytes". So this is ours:
segments are ordered by sequence number relative to the SYN (or to the first segment when the
capture starts mid-connection, wrapping mod 2**32); bytes already seen (retransmits, overlaps)
are dropped; a hole (bytes never captured, or cut by the snapshot length) ends a run.

``reassemble(segments, fast=True)`` does each direction's ordering and filling in the C extension
(kafkawire/_native_src/reassemble.c) when it is built; these Python functions stay its oracle,
and reassemble any direction the C code leaves to them.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from operator import itemgetter

from kafkawire import _native

from .packets import TCP_ACK, TCP_SYN, Segment

_AT = itemgetter(0)


@dataclass
class Run:
    """Contiguous bytes of one direction, and the packet each byte came from."""
    start: int                                          # stream offset of the first byte
    data: bytearray = field(default_factory=bytearray)
    packets: list = field(default_factory=list)         # (offset in data, packet index), ascending

    def packet_at(self, offset: int) -> int:
        """The packet of the byte at offset (the last packet starting at or before it)."""
        return self.packets[bisect_right(self.packets, offset, key=_AT) - 1][1]


@dataclass
class Direction:
    src: tuple
    dst: tuple
    stream: int                 # the connection's number, 0-based in order of first packet (tshark's tcp.stream)
    first_packet: int
    saw_syn: bool = False       # this side sent a SYN
    syn_ack: bool = False       # ... with ACK set (the server's answer)
    runs: list = field(default_factory=list)
    retransmitted: int = 0
    gaps: list = field(default_factory=list)    # (stream offset, bytes missing, packet index after the gap)


def _relative(segments: list[Segment]) -> list[tuple[int, Segment]]:
    syns = [s for s in segments if s.flags & TCP_SYN]
    if syns:
        base = syns[0].seq + 1
    else:
        first = segments[0].seq
        base = min((s.seq for s in segments if s.payload), default=first, key=lambda q: (q - first) % 2**32)
    out = []
    for s in segments:
        if s.payload or s.length:
            offset = (s.seq - base) % 2**32
            out.append((offset - 2**32 if offset >= 2**31 else offset, s))
    out.sort(key=lambda item: (item[0], item[1].index))
    return out


def _fill(direction: Direction, ordered: list[tuple[int, Segment]]) -> None:
    run, end = None, None       # end: the stream offset up to which bytes are known (or known missing)
    for offset, s in ordered:
        if end is not None and offset + s.length <= end:
            direction.retransmitted += 1
            continue
        if run is None or offset > end:
            if end is not None and offset > end:
                direction.gaps.append((end, offset - end, s.index))
            run = Run(offset if end is None else max(end, offset))
            direction.runs.append(run)
            end = run.start
        payload = s.payload[end - offset:]
        run.packets.append((len(run.data), s.index))
        run.data += payload
        if len(s.payload) < s.length:       # the snapshot cut this segment: its tail is a gap
            direction.gaps.append((offset + len(s.payload), s.length - len(s.payload), s.index))
            end, run = offset + s.length, None
        else:
            end += len(payload)


def reassemble(segments: list[Segment], fast: bool = False) -> list[Direction]:
    """Every direction that carried data or a SYN, in order of the connection's first packet.
    ``fast``: in C when the extension is built (the same directions)."""
    native = _native.records.reassemble_direction if fast and _native.records is not None else None
    by_key: dict[tuple, list[Segment]] = {}
    for s in segments:
        by_key.setdefault((s.src, s.dst), []).append(s)
    streams: dict[frozenset, int] = {}
    for key in by_key:          # in order of each direction's first segment, so of each connection's
        streams.setdefault(frozenset(key), len(streams))
    out = []
    for (src, dst), segs in by_key.items():
        direction = Direction(src, dst, streams[frozenset((src, dst))], segs[0].index)
        done = native(segs, Run, Segment) if native is not None else None
        if done is not None:
            direction.runs, direction.gaps, direction.retransmitted, direction.saw_syn, direction.syn_ack = done
            out.append(direction)
            continue
        syns = [s for s in segs if s.flags & TCP_SYN]
        direction.saw_syn = bool(syns)
        direction.syn_ack = any(s.flags & TCP_ACK for s in syns)
        _fill(direction, _relative(segs))
        out.append(direction)
    return sorted(out, key=lambda d: (d.stream, d.first_packet))
