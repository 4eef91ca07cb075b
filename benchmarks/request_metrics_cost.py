"""What kafka.network's request metrics (kafkawire.net.request_metrics) cost a request: the
requests/s of a small request (Metadata v12 of one topic, answered from memory) to a KafkaServer
on 127.0.0.1, one connection, ``--pipeline`` requests in flight, and the added work alone (the
moments taken, the error codes counted, the request recorded) per request.

Run by hand (not part of the tests), from the worktree, and the same file against the code
before the metrics (PYTHONPATH of an older tree) to compare:

    .venv/bin/python benchmarks/request_metrics_cost.py [--requests 20000] [--runs 5] [--pipeline 8]

Each figure is the median of ``--runs``, with min-max.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import struct
import time

from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.metadata_response import MetadataResponse, MetadataResponsePartition, MetadataResponseTopic
from kafkawire.net.server import KafkaServer
from kafkawire.protocol.framing import encode_request

METADATA, VERSION = 3, 12


async def answer(ctx, request):
    return MetadataResponse(topics=[MetadataResponseTopic(name=t.name, partitions=[
        MetadataResponsePartition(partition_index=0)]) for t in request.topics])


async def requests_per_second(count: int, pipeline: int) -> float:
    frame = encode_request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), VERSION, 1)
    async with KafkaServer({METADATA: answer}, max_in_flight_per_connection=pipeline) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        started = time.perf_counter()
        for _ in range(count // pipeline):
            writer.write(frame * pipeline)
            for _ in range(pipeline):
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                await reader.readexactly(size)
        elapsed = time.perf_counter() - started
        writer.close()
    return (count // pipeline) * pipeline / elapsed


def added_work_ns(count: int) -> float | None:
    """The request metrics' own steps for one request, as the connection runs them; None
    without them (the code before)."""
    try:
        from kafkawire.net.request_metrics import HANDLED, STARTED, RequestMetrics, now, request_times
    except ImportError:
        return None
    metrics = RequestMetrics()
    response = MetadataResponse(topics=[MetadataResponseTopic(name="t", partitions=[
        MetadataResponsePartition(partition_index=0)])])
    started = time.perf_counter()
    for _ in range(count):
        times = request_times(now())
        times[STARTED] = now()
        times[HANDLED] = now()
        metrics.count_errors(METADATA, "Metadata", VERSION, response)
        ready = now()
        metrics.completed(METADATA, "Metadata", VERSION, times, ready, now())
    return (time.perf_counter() - started) / count * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pipeline", type=int, default=8)
    args = parser.parse_args()
    rates = [asyncio.run(requests_per_second(args.requests, args.pipeline)) for _ in range(args.runs)]
    print(f"{statistics.median(rates):9.0f} requests/s (min {min(rates):.0f}, max {max(rates):.0f}), "
          f"{1e6 / statistics.median(rates):.1f} us per request, pipeline {args.pipeline}")
    costs = [added_work_ns(args.requests) for _ in range(args.runs)]
    if costs[0] is not None:
        print(f"request metrics' own work: {statistics.median(costs):.0f} ns per request "
              f"(min {min(costs):.0f}, max {max(costs):.0f})")


if __name__ == "__main__":
    main()
