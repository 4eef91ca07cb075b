"""The node's CPU per produced record on the path a Produce request takes through it, with the
request's size fixed (issue 29): a KafkaServer in this process reads each request from its socket
(framing, decoding), checks its batch (validate_produce, the C record check) and appends it to a
LeaderPartition's log (Log.append, the segment write), then answers; a client in another process
sends ``--requests`` identical ProduceRequests v9 of one batch of ``--records`` records of 100 B,
one after another on one connection, after 20 to warm up. The figure is this process's thread CPU
per million records (what broker_throughput.py's produce figure measures, without the sizes its
producers choose under load, nor the metadata and quotas of a whole broker).

    PYTHONPATH=. .venv/bin/python benchmarks/produce_request_path.py [--requests 400] [--records 5000] [--runs 5]

To compare two trees, run it from each in turn (interleaved) and compare the medians.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.validation import validate_produce
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.messages.produce_response import (PartitionProduceResponse, ProduceResponse,
                                                 TopicProduceResponse)
from kafkawire.net.loop import run
from kafkawire.net.server import KafkaServer
from kafkawire.protocol.framing import encode_request
from kafkawire.records.builder import build_batch

sys.path.insert(0, __file__.rpartition("/")[0])
from request_path import CLIENT  # noqa: E402  (one request, its whole answer, again)

WARM_UP = 20


def produce_handler(partition: LeaderPartition):
    async def produce(ctx, request):
        now_ms = int(time.time() * 1000)
        answers = []
        for topic in request.topic_data:
            parts = []
            for p in topic.partition_data:
                validated = validate_produce(p.records, topic_partition="bench-0", max_message_bytes=1 << 24,
                                             log_append_time=False, now_ms=now_ms)
                base, _ = partition.append(validated, now_ms=now_ms)
                parts.append(PartitionProduceResponse(index=p.index, base_offset=base))
            answers.append(TopicProduceResponse(name=topic.name, partition_responses=parts))
        return ProduceResponse(responses=answers)
    return produce


async def one_run(requests: int, records: int) -> float:
    """The server thread's CPU seconds per million records."""
    now_ms = int(time.time() * 1000)
    batch = build_batch([(None, b"0123456789abcdef" * 6 + b"0123", (), now_ms)] * records)
    frame = encode_request(ProduceRequest(acks=1, timeout_ms=30000, topic_data=[TopicProduceData(
        name="bench", partition_data=[PartitionProduceData(index=0, records=batch)])]), 9, 1)
    with tempfile.TemporaryDirectory() as log_dir:
        frame_file = f"{log_dir}/request"
        with open(frame_file, "wb") as out:
            out.write(frame)
        partition = LeaderPartition.open(f"{log_dir}/log", "bench", 0, uuid.UUID(int=1), leader_epoch=3, segment_bytes=1 << 30)
        async with KafkaServer({0: produce_handler(partition)}, max_request_bytes=1 << 26) as server:
            client = await asyncio.create_subprocess_exec(
                sys.executable, "-c", CLIENT, str(server.port), str(requests), str(WARM_UP), frame_file,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            try:
                async with asyncio.timeout(600):
                    assert (await client.stdout.readline()).strip() == b"warm"
                    cpu = time.thread_time()
                    client.stdin.write(b"go\n")
                    await client.stdin.drain()
                    assert (await client.stdout.readline()).strip() == b"done"
                    cpu = time.thread_time() - cpu
                    await client.wait()
            finally:
                if client.returncode is None:
                    client.kill()
        assert partition.log.log_end_offset == (WARM_UP + requests) * records
        partition.log.close()
    return cpu / (requests * records) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = [run(one_run(args.requests, args.records)) for _ in range(args.runs)]
    print(f"server CPU {statistics.median(runs):.3f} s per million records produced (min {min(runs):.3f}, "
          f"max {max(runs):.3f}), {args.requests} requests of {args.records} records x {args.runs} runs")


if __name__ == "__main__":
    main()
