"""Memory of a one-node combined kafkawire (kafkawire.testing.EmbeddedBroker, `kafkawire
server-start` in its own process) per hosted partition and per client connection (issue 29,
"memory per partition and per connection bounded and stated").

    PYTHONPATH=$PWD .venv/bin/python benchmarks/broker_memory.py [--partitions 1000,4000] [--connections 1000]

The node's resident memory (VmRSS of its process) is read when it is idle, after each step of
partitions (topics of 100 partitions created through CreateTopics, then one 1-record batch
produced to every partition, so each log has a segment, its indexes and its state open), and
with the given number of idle client connections open (each has sent one ApiVersions and read
its answer; they stay open until the figure is read). The differences divided by the count are
the figures (what Python's allocator keeps included). The node's open file descriptors are
counted at each step too.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import socket
import struct
import sys
import time

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.framing import encode_request_frame
from kafkawire.records import build_batch
from kafkawire.testing import EmbeddedBroker

PER_TOPIC = 100


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def settled_rss(pid: int, seconds: float = 3.0) -> int:
    """The node's RSS once it has stopped moving by more than 1% for a second (its background
    work after a step: checkpoints, metadata publishing), at most ``seconds`` more."""
    last, deadline = rss_bytes(pid), time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = rss_bytes(pid)
        if abs(now - last) < last / 100:
            return now
        last = now
    return last


async def add_partitions(bootstrap: str, first_topic: int, topics: int) -> None:
    host, port = bootstrap.rsplit(":", 1)
    address = (host, int(port))
    names = [f"mem-{i}" for i in range(first_topic, first_topic + topics)]
    async with NetworkClient(client_id="broker-memory", request_timeout_ms=120_000) as client:
        for name in names:
            answer = await client.send(address, CreateTopicsRequest(timeout_ms=60_000, topics=[CreatableTopic(
                name=name, num_partitions=PER_TOPIC, replication_factor=1, assignments=[],
                configs=[CreatableTopicConfig(name="segment.bytes", value=str(1 << 20))])]))
            assert answer.topics[0].error_code == 0, answer
        batch = build_batch([(b"k", b"v" * 100, [], int(time.time() * 1000))])
        for name in names:
            deadline = time.monotonic() + 120
            while True:
                answer = await client.send(address, ProduceRequest(acks=1, timeout_ms=30_000, topic_data=[
                    TopicProduceData(name=name, partition_data=[PartitionProduceData(index=p, records=batch)
                                                                for p in range(PER_TOPIC)])]), api_version=9)
                errors = {p.error_code for p in answer.responses[0].partition_responses}
                if errors == {0}:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"produce to {name}: errors {errors}")
                await asyncio.sleep(0.1)


def open_connections(bootstrap: str, count: int) -> list[socket.socket]:
    """``count`` connections, each having sent ApiVersions v3 and read its whole answer."""
    host, port = bootstrap.rsplit(":", 1)
    frame = encode_request_frame(ApiVersionsRequest(client_software_name="mem", client_software_version="1"), 3, 1)
    sockets = []
    for _ in range(count):
        s = socket.create_connection((host, int(port)), timeout=30)
        s.sendall(frame)
        size = struct.unpack(">i", _read(s, 4))[0]
        _read(s, size)
        sockets.append(s)
    return sockets


def _read(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise RuntimeError("the broker closed a connection")
        data += chunk
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", default="1000,4000", help="cumulative partition counts, comma-separated")
    parser.add_argument("--connections", type=int, default=1000)
    args = parser.parse_args()
    steps = [int(n) for n in args.partitions.split(",")]
    print(f"python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.1f}")
    with EmbeddedBroker() as broker:
        pid = broker.pid
        idle = settled_rss(pid)
        print(f"idle node: RSS {idle / 2**20:.1f} MiB, {open_fds(pid)} open files")
        made, before = 0, idle
        for target in steps:
            topics = (target - made) // PER_TOPIC
            started = time.monotonic()
            asyncio.run(add_partitions(broker.bootstrap_servers, made // PER_TOPIC, topics))
            made += topics * PER_TOPIC
            now = settled_rss(pid)
            print(f"{made} partitions ({time.monotonic() - started:.1f} s to create and write): RSS "
                  f"{now / 2**20:.1f} MiB; {(now - before) / (topics * PER_TOPIC) / 1024:.1f} KiB a partition over "
                  f"the step, {(now - idle) / made / 1024:.1f} KiB over the idle node; {open_fds(pid)} open files")
            before = now
        sockets = open_connections(broker.bootstrap_servers, args.connections)
        with_connections = settled_rss(pid)
        print(f"{args.connections} idle connections: RSS {with_connections / 2**20:.1f} MiB; "
              f"{(with_connections - before) / args.connections / 1024:.1f} KiB a connection; {open_fds(pid)} open files")
        for s in sockets:
            s.close()
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
