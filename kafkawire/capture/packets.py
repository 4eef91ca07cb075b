"""TCP segments out of a pcap or pcapng file, read with dpkt.

dpkt reads both container formats and the link, IP and TCP headers; what is left to us is what
a conformance tool needs and dpkt does not say: where a capture is cut short (a truncated file,
a snapshot length shorter than the packet) and which packets are not TCP at all.
"""
from __future__ import annotations

import ipaddress
import struct
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kafkawire._extras import lazy_module, require

# dpkt is the extra ``pcap``, imported when a capture is read: the rest of kafkawire.capture (TCP
# streams, Kafka frames, the checks) imports this module's types and works without it.
_NEEDS_DPKT = ("dpkt", "pcap", "reading pcap files")
dpkt = lazy_module(*_NEEDS_DPKT)

TCP_FIN, TCP_SYN, TCP_RST, TCP_ACK = 0x01, 0x02, 0x04, 0x10
_LINK_ETHERNET, _LINK_NULL, _LINK_LOOP, _LINK_SLL, _LINK_SLL2 = 1, 0, 108, 113, 276
_LINK_RAW = (12, 14, 101)


class CaptureError(ValueError):
    """The file cannot be read as a capture at all."""


@dataclass
class Segment:
    index: int          # packet number, 1-based, as tshark counts
    time: float         # seconds since the epoch
    src: tuple          # (address text, port)
    dst: tuple
    seq: int
    flags: int
    payload: bytes      # the bytes captured
    length: int         # the bytes the segment carried (more than payload if the snapshot cut it)


@dataclass
class Packets:
    segments: list      # Segment, in capture order
    packets: int        # every packet read, TCP or not
    first_time: float | None
    problems: list      # str: what could not be read, and where


@contextmanager
def open_capture(path: Path):
    """(file, dpkt reader) of a pcap or pcapng file; CaptureError naming the file when it is neither."""
    require(*_NEEDS_DPKT)
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise CaptureError(f"{path}: cannot open: {exc.strerror or exc}") from None
    with handle:
        try:
            reader = dpkt.pcap.UniversalReader(handle)
        except (ValueError, dpkt.dpkt.Error, struct.error) as exc:
            raise CaptureError(f"{path}: neither pcap nor pcapng ({exc})") from None
        yield handle, reader


def read_segments(path: Path) -> Packets:
    with open_capture(path) as (handle, reader):
        return read_packets(reader, handle, Packets([], 0, None, []))


def read_packets(reader, handle, out: Packets) -> Packets:
    """Every packet the reader gives from where its file (handle) is, added to out."""
    link = reader.datalink()
    packets = iter(reader)
    while True:
        offset = handle.tell()
        try:
            time, data = next(packets)
        except StopIteration:
            break
        except (dpkt.dpkt.Error, struct.error, ValueError) as exc:
            out.problems.append(f"after packet {out.packets}, at byte {offset} of the file: the capture file is "
                                f"truncated or corrupt ({type(exc).__name__}: {exc or 'no more data'}); "
                                f"the rest is not read")
            break
        out.packets += 1
        if out.first_time is None:
            out.first_time = float(time)
        add_segment(out, float(time), link, data)
    return out


def add_segment(out: Packets, time: float, link: int, data: bytes) -> None:
    """The TCP segment of packet number out.packets, if it is one, or the problem with its headers."""
    try:
        segment = _tcp_segment(out.packets, time, link, data)
    except (dpkt.dpkt.Error, struct.error, ValueError, IndexError) as exc:
        out.problems.append(f"packet {out.packets}: headers cut short or malformed ({exc}); skipped")
        return
    if segment is not None:
        out.segments.append(segment)


def _network_layer(link: int, data: bytes):
    if link == _LINK_ETHERNET:
        return dpkt.ethernet.Ethernet(data).data
    if link in (_LINK_NULL, _LINK_LOOP):
        return dpkt.loopback.Loopback(data).data
    if link == _LINK_SLL:
        return dpkt.sll.SLL(data).data
    if link == _LINK_SLL2:
        return dpkt.sll2.SLL2(data).data
    if link in _LINK_RAW and data:
        return dpkt.ip.IP(data) if data[0] >> 4 == 4 else dpkt.ip6.IP6(data)
    return None


def _tcp_segment(index: int, time: float, link: int, data: bytes) -> Segment | None:
    ip = _network_layer(link, data)
    if isinstance(ip, dpkt.ip.IP):
        if ip.p != dpkt.ip.IP_PROTO_TCP or ip.mf or ip.offset:
            return None             # not TCP, or an IP fragment (not reassembled)
        carried = ip.len - ip.hl * 4
        src, dst = ipaddress.IPv4Address(ip.src), ipaddress.IPv4Address(ip.dst)
    elif isinstance(ip, dpkt.ip6.IP6):
        if ip.nxt != dpkt.ip.IP_PROTO_TCP:
            return None
        carried = ip.plen
        src, dst = ipaddress.IPv6Address(ip.src), ipaddress.IPv6Address(ip.dst)
    else:
        return None
    tcp = ip.data if isinstance(ip.data, dpkt.tcp.TCP) else dpkt.tcp.TCP(bytes(ip.data))
    payload = bytes(tcp.data)
    length = max(len(payload), carried - tcp.off * 4)
    return Segment(index, time, (str(src), tcp.sport), (str(dst), tcp.dport), tcp.seq, tcp.flags, payload, length)
