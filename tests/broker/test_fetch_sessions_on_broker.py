"""Fetch sessions (KIP-227) on the session-scoped embedded broker (kafkawire.testing's
``kafkawire_broker``), with raw Fetch v16 requests on one connection: a full fetch with epoch 0
gets a session id and both partitions; an incremental fetch naming only the partition whose
offset moved is answered with that partition alone; an incremental fetch with no change is
answered empty; epoch -1 closes the session, after which its id is FETCH_SESSION_ID_NOT_FOUND.
The rules themselves are checked sans-I/O in test_fetch_session.py."""
from __future__ import annotations

import asyncio
import time

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch

# As in test_embedded_broker.py: what the installed entry point does, harmless on top of it.
pytest_plugins = ["kafkawire.testing.pytest_plugin"]

TOPIC = "fetch-sessions"
WAIT_S = 30


async def _create_topic(call) -> object:
    created = await call(CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=TOPIC, num_partitions=2, replication_factor=1, assignments=[], configs=[])]), 7)
    assert created.topics[0].error_code == Errors.NONE
    deadline = time.monotonic() + WAIT_S
    while True:         # the broker leads both partitions once it has the topic's records
        metadata = await call(MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)],
                                              allow_auto_topic_creation=False), 12)
        partitions = metadata.topics[0].partitions
        if len(partitions) == 2 and all(p.error_code == Errors.NONE and p.leader_id >= 0 for p in partitions):
            return created.topics[0].topic_id
        assert time.monotonic() < deadline, "the broker did not lead the new topic's partitions"
        await asyncio.sleep(0.05)


def _fetch(topic_id, session_id, epoch, offsets: dict) -> FetchRequest:
    return FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=session_id, session_epoch=epoch,
                        topics=[FetchTopic(topic_id=topic_id, partitions=[
                            FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 16)
                            for p, o in offsets.items()])] if offsets else [])


def _answered(response) -> dict:
    """partition -> values of the records answered."""
    return {p.partition_index: [r.value for b in iter_batches(p.records or b"") for r in b]
            for t in response.responses for p in t.partitions}


async def _session_round_trip(bootstrap: str) -> None:
    host, port = bootstrap.rsplit(":", 1)
    client = NetworkClient(client_id="test-fetch-sessions", request_timeout_ms=15_000)

    async def call(request, version):
        return await client.send((host, int(port)), request, api_version=version, timeout_ms=15_000)

    async def produce(partition, value):
        response = await call(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name=TOPIC, partition_data=[PartitionProduceData(index=partition, records=build_batch([(b"k", value)]))])]),
            9)
        assert response.responses[0].partition_responses[0].error_code == Errors.NONE

    try:
        topic_id = await _create_topic(call)
        await produce(0, b"p0-first")
        await produce(1, b"p1-first")
        full = await call(_fetch(topic_id, 0, 0, {0: 0, 1: 0}), 16)
        assert full.error_code == Errors.NONE and full.session_id > 0
        assert _answered(full) == {0: [b"p0-first"], 1: [b"p1-first"]}
        session = full.session_id

        await produce(0, b"p0-second")
        moved = await call(_fetch(topic_id, session, 1, {0: 1, 1: 1}), 16)
        assert (moved.error_code, moved.session_id, _answered(moved)) == (Errors.NONE, session, {0: [b"p0-second"]})
        unchanged = await call(_fetch(topic_id, session, 2, {0: 2}), 16)
        assert (unchanged.error_code, unchanged.session_id, _answered(unchanged)) == (Errors.NONE, session, {})

        closed = await call(_fetch(topic_id, session, -1, {0: 2, 1: 1}), 16)
        assert (closed.error_code, closed.session_id, sorted(_answered(closed))) == (Errors.NONE, 0, [0, 1])
        gone = await call(_fetch(topic_id, session, 3, {}), 16)
        assert (gone.error_code, gone.responses) == (Errors.FETCH_SESSION_ID_NOT_FOUND, [])
    finally:
        await client.close()


def test_a_session_is_created_answered_incrementally_and_closed(kafkawire_broker):
    asyncio.run(_session_round_trip(kafkawire_broker.bootstrap_servers))
