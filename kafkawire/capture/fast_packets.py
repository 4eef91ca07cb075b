"""TCP segments out of a pcap or pcapng file without a dpkt object per packet (issue 26).

``read_segments_fast`` gives what ``packets.read_segments`` gives, segment for segment and problem
for problem: dpkt still opens the file (so a file that is not a capture fails with the same
CaptureError), then the packet records are cut out of the file's bytes with struct, and the
Ethernet (or raw IP), IPv4/IPv6 and TCP headers read at their offsets. Only what is plainly
well formed is read here: an IPv4 header of 20 bytes, an IPv6 header followed by TCP, a whole TCP
header, a packet record inside the file. Anything else (VLAN tags, IP options, fragments, UDP,
cut headers, other link types) is handed to the dpkt path for that packet, and a container record
that is odd (cut short, lengths that disagree) hands the rest of the file to dpkt's own
iteration, so that both paths always say the same thing.
"""
from __future__ import annotations

import ipaddress
import mmap
import struct

from kafkawire import _native
from kafkawire._extras import require

from .packets import _NEEDS_DPKT, Packets, Segment, add_segment, dpkt, open_capture, read_packets

__all__ = ["read_segments_fast"]

_LE_RECORD, _BE_RECORD = struct.Struct("<IIII"), struct.Struct(">IIII")
_LE_BLOCK, _BE_BLOCK = struct.Struct("<II"), struct.Struct(">II")
_LE_EPB, _BE_EPB = struct.Struct("<IIIII"), struct.Struct(">IIIII")   # iface, ts high, ts low, caplen, len
_TCP = struct.Struct(">HHI")
_H = struct.Struct(">H")
_EPB, _PCAPNG_MIN_EPB = 6, 32
_ETHERNET, _RAW = 1, (12, 14, 101)
_IPV4, _IPV6 = b"\x08\x00", b"\x86\xdd"
_HAND_OVER = object()       # the packet is not plainly well formed: dpkt reads it


class _Addresses(dict):
    """Address bytes -> the text ``ipaddress`` gives them (the dpkt path's spelling)."""

    def __missing__(self, raw: bytes) -> str:
        text = self[raw] = str(ipaddress.ip_address(raw))
        return text


class _Endpoints(dict):
    """An IPv4 header's addresses and a TCP header's ports (12 bytes) -> (src, dst) as Segment has them."""

    def __init__(self, addresses: _Addresses):
        super().__init__()
        self.addresses = addresses

    def __missing__(self, raw: bytes) -> tuple:
        width = (len(raw) - 4) // 2          # IPv4's 4 bytes, or IPv6's 16 (the C loop's keys)
        sport, dport = _H.unpack_from(raw, 2 * width)[0], _H.unpack_from(raw, 2 * width + 2)[0]
        pair = self[raw] = ((self.addresses[raw[:width]], sport), (self.addresses[raw[width:2 * width]], dport))
        return pair


class _Reading:
    """What one file's packet loop keeps: the output, the link type, the address texts."""

    def __init__(self, out: Packets, link: int):
        self.out, self.link = out, link
        self.addresses = _Addresses()
        self.endpoints = _Endpoints(self.addresses)

    def native_loop(self, data: bytes, form: int, divisor, offset: int = 0):
        """loop(pos) -> the first record from pos on that the C loop leaves to this module (it reads
        the plain packets before it: capture.c); None without the C extension or for timestamps
        the C loop does not compute as Python does (a Decimal divisor, an offset beyond int64)."""
        native = _native.records
        if native is None or type(divisor) is not float or not -2**63 <= offset < 2**63:
            return None
        out, scan = self.out, native.scan_packets

        def loop(pos: int) -> int:
            pos, out.packets, out.first_time = scan(data, pos, out.packets, out.first_time, form, self.link, divisor,
                                                    offset, Segment, self.endpoints, out.segments)
            return pos
        return loop


def _tcp(data: bytes, width: int, tcp: int, end: int, carried: int, addresses, index: int, time: float):
    """The Segment of a TCP header at data[tcp:end] after an IP header whose last fields are the two
    addresses, width bytes each; or _HAND_OVER."""
    if end - tcp < 20:
        return _HAND_OVER
    header = (data[tcp + 12] >> 4) * 4
    if header < 20 or header > end - tcp:
        return _HAND_OVER
    sport, dport, seq = _TCP.unpack_from(data, tcp)
    flags = _H.unpack_from(data, tcp + 12)[0] & 0x1FF
    payload = data[tcp + header:end]
    src = (addresses[data[tcp - 2 * width:tcp - width]], sport)
    dst = (addresses[data[tcp - width:tcp]], dport)
    return Segment(index, time, src, dst, seq, flags, payload, max(len(payload), carried - header))


def _segment(data: bytes, start: int, end: int, link: int, addresses, index: int, time: float):
    """The Segment of the packet data[start:end], None for a packet that is not TCP, or _HAND_OVER."""
    if link == _ETHERNET:
        if end - start < 14:
            return _HAND_OVER
        kind, ip = data[start + 12:start + 14], start + 14
    elif link in _RAW and end > start:
        kind, ip = (_IPV4 if data[start] >> 4 == 4 else _IPV6), start
    else:
        return _HAND_OVER
    if kind == _IPV4:
        if end - ip < 20 or data[ip] != 0x45 or data[ip + 9] != 6:
            return _HAND_OVER
        total = _H.unpack_from(data, ip + 2)[0]
        if total < 40:
            return _HAND_OVER
        if _H.unpack_from(data, ip + 6)[0] & 0x3FFF:
            return None                 # a fragment: not reassembled, as on the dpkt path
        return _tcp(data, 4, ip + 20, min(end, ip + total), total - 20, addresses, index, time)
    if kind == _IPV6:
        if end - ip < 40 or data[ip] >> 4 != 6 or data[ip + 6] != 6:
            return _HAND_OVER
        carried = _H.unpack_from(data, ip + 4)[0]
        if carried < 20:
            return _HAND_OVER
        return _tcp(data, 16, ip + 40, min(end, ip + 40 + carried), carried, addresses, index, time)
    return _HAND_OVER


# An Ethernet II header's type, then a 20-byte IPv4 header and a TCP header, from byte 12 of the packet
# (addresses and ports are read by _Endpoints): the common packet, read in one call.
_ETHERNET_IPV4_TCP = struct.Struct(">2sBxH2xHxB2x8xHHI4xBB")


def _add(reading: _Reading, data: bytes, start: int, end: int, stamp) -> None:
    """One packet record: counted, its segment (if TCP) appended; odd packets go to the dpkt path."""
    out = reading.out
    out.packets += 1
    time = float(stamp)
    if out.first_time is None:
        out.first_time = time
    if reading.link == _ETHERNET and end - start >= 54:
        kind, v_hl, total, fragment, proto, sport, dport, seq, off, flags = _ETHERNET_IPV4_TCP.unpack_from(data, start + 12)
        if kind == _IPV4 and v_hl == 0x45 and proto == 6 and total >= 40 and not fragment & 0x3FFF:
            header, stop = (off >> 4) * 4, min(end, start + 14 + total)
            if 20 <= header <= stop - start - 34:
                src, dst = reading.endpoints[data[start + 26:start + 38]]
                payload = data[start + 34 + header:stop]
                out.segments.append(Segment(out.packets, time, src, dst, seq, (off & 1) << 8 | flags, payload,
                                            max(len(payload), total - 20 - header)))
                return
    segment = _segment(data, start, end, reading.link, reading.addresses, out.packets, time)
    if segment is _HAND_OVER:
        add_segment(out, time, reading.link, data[start:end])
    elif segment is not None:
        out.segments.append(segment)


def _pcap_records(reader, data: bytes, pos: int, out: Packets) -> int:
    """Read the libpcap records from pos; returns where dpkt must go on (len(data) when done)."""
    little = reader._Reader__ph is dpkt.pcap.LEPktHdr
    record = _LE_RECORD if little else _BE_RECORD
    divisor, reading, size = reader._divisor, _Reading(out, reader.datalink()), len(data)
    native_loop = reading.native_loop(data, 0 if little else 1, divisor)
    while pos < size:
        if native_loop is not None:
            pos = native_loop(pos)
            if pos >= size:
                break
        if size - pos < 16:
            return pos
        seconds, fraction, caplen, _ = record.unpack_from(data, pos)
        start = pos + 16
        if caplen > size - start:
            return pos
        pos = start + caplen
        _add(reading, data, start, pos, seconds + fraction / divisor)
    return pos


def _pcapng_blocks(reader, data: bytes, pos: int, out: Packets) -> int:
    """Read the pcapng blocks from pos; returns where dpkt must go on (len(data) when done)."""
    little = reader._Reader__le
    block, epb = (_LE_BLOCK, _LE_EPB) if little else (_BE_BLOCK, _BE_EPB)
    epb_class = dpkt.pcapng.EnhancedPacketBlockLE if little else dpkt.pcapng.EnhancedPacketBlock
    divisor, offset, size = reader._divisor, reader._tsoffset, len(data)
    reading = _Reading(out, reader.datalink())
    native_loop = reading.native_loop(data, 2 if little else 3, divisor, offset)
    while size - pos >= 8:
        if native_loop is not None:
            pos = native_loop(pos)
            if size - pos < 8:
                break
        kind, length = block.unpack_from(data, pos)
        if length < 12 or length > size - pos:
            return pos
        if kind == _EPB:
            if length < _PCAPNG_MIN_EPB:
                return pos
            _, high, low, caplen, _ = epb.unpack_from(data, pos + 8)
            stamp = offset + (((high << 32) | low) / divisor)
            if 32 + (caplen + 3) // 4 * 4 == length and block.unpack_from(data, pos + length - 8)[1] == length:
                _add(reading, data, pos + 28, pos + 28 + caplen, stamp)
            else:                       # options, or lengths that disagree: dpkt's block class decides
                try:
                    packet = epb_class(data[pos:pos + length]).pkt_data
                except (dpkt.dpkt.Error, struct.error, ValueError):
                    return pos
                _add(reading, packet, 0, len(packet), stamp)
        elif kind == 2:                 # the obsolete Packet Block: dpkt reads the rest
            return pos
        pos += length
    return size


def read_segments_fast(path) -> Packets:
    """``packets.read_segments``, faster: the same segments and problems."""
    require(*_NEEDS_DPKT)
    with open_capture(path) as (handle, reader):
        out = Packets([], 0, None, [])
        start = handle.tell()
        try:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)   # no copy of the file
        except (OSError, ValueError):    # not a regular file (a pipe): dpkt reads it all
            return read_packets(reader, handle, out)
        with data:
            if isinstance(reader, dpkt.pcap.Reader) and reader._Reader__ph in (dpkt.pcap.PktHdr, dpkt.pcap.LEPktHdr):
                stop = _pcap_records(reader, data, start, out)
            elif isinstance(reader, dpkt.pcapng.Reader):
                stop = _pcapng_blocks(reader, data, start, out)
            else:
                stop = start
            size = len(data)
        if stop < size:                 # an odd record: dpkt reads on from it, and words what is wrong
            handle.seek(stop)
            read_packets(reader, handle, out)
        return out
