"""Reading a capture as a library: ``read_capture(path)`` gives every Kafka frame in it, decoded,
and the requests paired with their responses (``Capture.exchanges``). ``kafkawire pcap`` is this
plus formatting."""
from __future__ import annotations

import gc
import os
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

from kafkawire._native import FORCED_PURE

from .check import check_frame
from .kafka import DEFAULT_PORTS, Frame, Report, decode_frames, kafka_frames
from .packets import read_segments
from .streams import reassemble

__all__ = ["Capture", "Exchange", "read_capture", "collector_paused"]


@dataclass
class Exchange:
    """A request and the response that answers it (same TCP stream, same correlation id); the
    response is None when the capture holds none."""
    request: Frame
    response: Frame | None = None


@dataclass
class Capture:
    """What ``read_capture`` found: ``frames`` in packet order (requests and responses, each with
    its ``status``: decoded, unknown, unpaired or bad), and ``problems``, sentences about the file
    and the streams (truncation, TCP gaps, frames cut short)."""
    path: str
    frames: list[Frame] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    fast: bool = False      # read the fast way (read_capture's ``fast``)

    def exchanges(self) -> list[Exchange]:
        """Every request with its response, in the order of the requests. A response whose
        request is not in the capture (status "unpaired") is in ``frames`` only."""
        out: list[Exchange] = []
        waiting: dict[tuple[int, int | None], Exchange] = {}
        for f in self.frames:
            if f.role == "request":
                exchange = Exchange(f)
                out.append(exchange)
                if f.correlation_id is not None:
                    waiting[(f.stream, f.correlation_id)] = exchange
            elif f.status != "unpaired":
                exchange = waiting.pop((f.stream, f.correlation_id), None)
                if exchange is not None:
                    exchange.response = f
        return out


def read_capture(path, *, ports=None, check: bool = False, fast: bool | None = None) -> Capture:
    """Read the Kafka traffic of a pcap or pcapng file (tcpdump, dumpcap, Wireshark).

    ``ports``: the Kafka ports, a collection of ints; by default 9092, 9093, 9094, 19092 and
    29092 and, besides, any connection whose first bytes parse as a Kafka request. ``check``
    also encodes every decoded frame again and sets ``Frame.check`` to "identical" or
    "differs" (with ``Frame.difference``). A frame that cannot be decoded never raises: its
    status and ``problem`` say why. Raises CaptureError (a ValueError) when the file cannot be
    opened or is not a capture at all.

    ``fast`` (the default unless KAFKAWIRE_PURE=1) reads the packets without a dpkt object per
    packet (fast_packets) and checks record batches without record objects (fast_check); False
    reads the first way, which stays as the oracle: both give the same frames and problems.
    """
    fast = not FORCED_PURE if fast is None else fast
    any_port = ports is None
    ports = DEFAULT_PORTS if ports is None else tuple(ports)
    with collector_paused() if fast else nullcontext():
        if fast:
            from .fast_packets import read_segments_fast as read
        else:
            read = read_segments
        packets = read(path)
        report = Report(problems=list(packets.problems))
        first = packets.first_time or 0.0
        times = {s.index: s.time - first for s in packets.segments}
        directions = reassemble(packets.segments, fast)
        del packets         # the segments' payloads, a copy of the capture's TCP bytes, are in the runs now
        frames = kafka_frames(directions, times, ports, any_port, report)
        del directions      # and the runs' bytes in the frames: freed before decoding makes more
        decode_frames(frames)
        if check:
            bad_batch = None
            if fast:
                from .fast_check import first_bad_batch_fast as bad_batch
            for f in frames:
                check_frame(f, bad_batch)
    return Capture(os.fspath(path), frames, report.problems, fast)


@contextmanager
def collector_paused():
    """A capture becomes a few objects per packet and many per decoded frame, none of them in a
    cycle; the cyclic collector's passes over that growing heap took more time than the rest
    (`kafkawire pcap` keeps it paused while it formats the frames too)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
