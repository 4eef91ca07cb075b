"""Issue 29, "bad input and overload ... never a traceback or a dead node": a node of its own
flooded by connections producing 128 KB batches back to back (acks=1) and
others fetching the whole log again and again with 8 MB answers, while a probe asks for Metadata
on its own connection. Every produce is answered NONE, every fetch NONE, every probe is
answered, the node is alive afterwards and its log holds no traceback and no ERROR line.
Nothing here is timed beyond the bound on each wait (the machine is shared)."""
from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import build_batch

# What the entry point does for an installed kafkawire; harmless on top of it (same name).
pytest_plugins = ["kafkawire.testing.pytest_plugin"]

TOPIC, PARTITIONS = "flooded", 4
PRODUCERS, FETCHERS = 12, 4
REQUESTS_PER_PRODUCER = 25          # 12 x 25 x 128 KB: about 38 MB written in all
READERS_AFTER_S = 1.0                # the fetchers and the probe go on this long after the last write
TIMEOUT_MS = 60_000                  # each request's bound on a loaded machine


def address(node) -> tuple[str, int]:
    host, port = node.bootstrap_servers.rsplit(":", 1)
    return host, int(port)


async def produce_flood(peer, batch: bytes, answers: Counter) -> None:
    async with NetworkClient(client_id="flood-producer", request_timeout_ms=TIMEOUT_MS) as client:
        for n in range(REQUESTS_PER_PRODUCER):
            answer = await client.send(peer, ProduceRequest(acks=1, timeout_ms=30_000, topic_data=[TopicProduceData(
                name=TOPIC, partition_data=[PartitionProduceData(index=n % PARTITIONS, records=batch)])]),
                api_version=9)
            answers[Errors(answer.responses[0].partition_responses[0].error_code).name] += 1


async def fetch_flood(peer, topic_id, done: asyncio.Event, answers: Counter) -> None:
    async with NetworkClient(client_id="flood-fetcher", request_timeout_ms=TIMEOUT_MS) as client:
        while not done.is_set():
            answer = await client.send(peer, FetchRequest(
                replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=8 << 20, isolation_level=0, session_id=0,
                session_epoch=-1, topics=[FetchTopic(topic_id=topic_id, partitions=[
                    FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=2 << 20, current_leader_epoch=-1)
                    for p in range(PARTITIONS)])]), api_version=13)
            answers.update(Errors(p.error_code).name for t in answer.responses for p in t.partitions)


async def probe(peer, done: asyncio.Event, answered: list) -> None:
    async with NetworkClient(client_id="flood-probe", request_timeout_ms=TIMEOUT_MS) as client:
        while not done.is_set():
            answer = await client.send(peer, MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)]), 12)
            answered.append(answer.topics[0].error_code)
            await asyncio.sleep(0.2)


async def flood(peer) -> tuple[Counter, Counter, list]:
    async with NetworkClient(client_id="flood-setup", request_timeout_ms=TIMEOUT_MS) as client:
        created = await client.send(peer, CreateTopicsRequest(timeout_ms=30_000, topics=[CreatableTopic(
            name=TOPIC, num_partitions=PARTITIONS, replication_factor=1, assignments=[], configs=[])]))
        assert created.topics[0].error_code == Errors.NONE, created
        deadline = time.monotonic() + 30
        while True:             # the new partitions' logs opened: each leader answers
            meta = await client.send(peer, MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)]), 12)
            if all(p.leader_id == 1 for p in meta.topics[0].partitions) and len(meta.topics[0].partitions) == 4:
                break
            assert time.monotonic() < deadline, meta
            await asyncio.sleep(0.05)
    topic_id = meta.topics[0].topic_id
    batch = build_batch([(b"k%d" % i, b"v" * 1000, [], int(time.time() * 1000)) for i in range(128)])
    produced, fetched, probes, done = Counter(), Counter(), [], asyncio.Event()
    readers = [asyncio.ensure_future(fetch_flood(peer, topic_id, done, fetched)) for _ in range(FETCHERS)]
    readers.append(asyncio.ensure_future(probe(peer, done, probes)))
    try:
        await asyncio.gather(*(produce_flood(peer, batch, produced) for _ in range(PRODUCERS)))
        await asyncio.sleep(READERS_AFTER_S)
    finally:
        done.set()
        await asyncio.gather(*readers)
    return produced, fetched, probes


def test_a_flood_of_produce_and_fetch_is_served_and_the_node_lives_on(kafkawire_broker_per_test):
    node = kafkawire_broker_per_test
    started = time.monotonic()
    produced, fetched, probes = asyncio.run(flood(address(node)))
    print(f"flood: {sum(produced.values())} produce answers, {sum(fetched.values())} partition fetch answers, "
          f"{len(probes)} probes in {time.monotonic() - started:.1f} s")
    assert produced == Counter({"NONE": PRODUCERS * REQUESTS_PER_PRODUCER})
    assert set(fetched) == {"NONE"} and sum(fetched.values()) >= FETCHERS * PARTITIONS
    assert probes and set(probes) == {Errors.NONE}
    assert node.process.poll() is None, node.log_tail(40)
    log = open(node.node_log, errors="replace").read()
    assert "Traceback" not in log and " ERROR " not in log, log[-3000:]
