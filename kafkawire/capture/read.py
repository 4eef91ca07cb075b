"""Reading a capture as a library: ``read_capture(path)`` gives every Kafka frame in it, decoded,
and the requests paired with their responses (``Capture.exchanges``). ``kafkawire pcap`` is this
plus formatting."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from .check import check_frame
from .kafka import DEFAULT_PORTS, Frame, Report, decode_frames, kafka_frames
from .packets import read_segments
from .streams import reassemble

__all__ = ["Capture", "Exchange", "read_capture"]


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


def read_capture(path, *, ports=None, check: bool = False) -> Capture:
    """Read the Kafka traffic of a pcap or pcapng file (tcpdump, dumpcap, Wireshark).

    ``ports``: the Kafka ports, a collection of ints; by default 9092, 9093, 9094, 19092 and
    29092 and, besides, any connection whose first bytes parse as a Kafka request. ``check``
    also encodes every decoded frame again and sets ``Frame.check`` to "identical" or
    "differs" (with ``Frame.difference``). A frame that cannot be decoded never raises: its
    status and ``problem`` say why. Raises CaptureError (a ValueError) when the file cannot be
    opened or is not a capture at all.
    """
    any_port = ports is None
    ports = DEFAULT_PORTS if ports is None else tuple(ports)
    packets = read_segments(path)
    report = Report(problems=list(packets.problems))
    times = {s.index: s.time - (packets.first_time or 0.0) for s in packets.segments}
    frames = kafka_frames(reassemble(packets.segments), times, ports, any_port, report)
    decode_frames(frames)
    if check:
        for f in frames:
            check_frame(f)
    return Capture(os.fspath(path), frames, report.problems)
