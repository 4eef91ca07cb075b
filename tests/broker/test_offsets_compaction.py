"""``__consumer_offsets`` compacted on a running node, in process: a combined node (controller and
broker on one event loop of its own thread, kafkawire server-start's pieces) with one offsets
partition and a cleaner that backs off 50 ms. Offsets are committed over and over through the
wire, one offset deleted (OffsetDelete: a tombstone), the partition's log rolled between rounds,
and the cleaner left to run: the log then holds one record per key, the latest commit of each and
the tombstone (which Kafka's cleaner keeps in its first pass, until ``delete.retention.ms`` after
the cleaning), and OffsetFetch still answers the latest offsets.
"""
from __future__ import annotations

import asyncio

import pytest

from kafkawire.broker.group_records import decode_record
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.offset_commit_request import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                      OffsetCommitRequestTopic)
from kafkawire.messages.offset_delete_request import (OffsetDeleteRequest, OffsetDeleteRequestPartition,
                                                      OffsetDeleteRequestTopic)
from kafkawire.messages.offset_fetch_request import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kafkawire.net.client import NetworkClient
from kafkawire.net.config import parse_server_config

from tests.node.threaded_combined_node import ThreadedCombinedNode, started

OFFSETS = ("__consumer_offsets", 0)
TOPIC, GROUP, OTHER = "compacted-offsets", "compacting-group", "other-group"
ROUNDS, ROUNDS_PER_SEGMENT = 12, 3


async def wait_for(predicate, what: str, seconds: float = 30) -> None:
    for _ in range(int(seconds * 100)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"gave up waiting: {what}")


def _config(directory, controller_port: int, broker_port: int):
    return parse_server_config(f"""
node.id=1
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=CONTROLLER://127.0.0.1:{controller_port},PLAINTEXT://127.0.0.1:{broker_port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={directory}/data
controller.quorum.election.timeout.ms=200
broker.heartbeat.interval.ms=200
offsets.topic.num.partitions=1
offsets.topic.replication.factor=1
log.cleaner.backoff.ms=50
""")


class Node(ThreadedCombinedNode):
    """The combined node on a loop of its own thread, with the requests these tests send."""

    async def send(self, request, version):
        async with NetworkClient(request_timeout_ms=15_000) as client:
            return await client.send(("127.0.0.1", self.broker_port), request, api_version=version)


@pytest.fixture
def node(tmp_path):
    with started(Node(lambda controller_port, broker_port: _config(tmp_path, controller_port, broker_port))) as combined:
        yield combined


def commit(group: str, offsets: dict) -> OffsetCommitRequest:
    """A simple group's commit (no member, generation -1) of {partition: offset} of TOPIC."""
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequestTopic(name=TOPIC, partitions=[OffsetCommitRequestPartition(
            partition_index=p, committed_offset=o, committed_metadata="") for p, o in offsets.items()])])


def offsets_log_records(broker) -> list:
    """(key, value) of every record in the offsets partition's log, in offset order."""
    return [(bytes(r.key), None if r.value is None else bytes(r.value))
            for batch in broker.partitions[OFFSETS].log.batches() for r in batch]


async def _commit_rounds_and_clean(node) -> tuple[int, list, object]:
    """The commits, rolls and deletion; once the cleaner cleaned all of them: (the offsets written,
    the records left in the log, OffsetFetch's answer for both groups)."""
    created = await node.send(CreateTopicsRequest(timeout_ms=10_000, topics=[
        CreatableTopic(name=TOPIC, num_partitions=3, replication_factor=1)]), 7)
    assert created.topics[0].error_code == 0
    for _ in range(1000):             # the first FindCoordinator creates __consumer_offsets
        found = await node.send(FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), 4)
        if found.coordinators[0].error_code == 0 and (TOPIC, 0) in node.broker.partitions:
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("no group coordinator")
    await wait_for(lambda: node.broker.group_apis.store.loaded, "the offsets partition loaded")
    partition = node.broker.partitions[OFFSETS]
    for n in range(1, ROUNDS + 1):
        for group in (GROUP, OTHER):
            offsets = {0: 10 * n, 1: 10 * n + 1, 2: 10 * n + 2}
            if group == OTHER and n > ROUNDS // 2:
                del offsets[2]                                    # deleted at half way, not committed again
            answer = await node.send(commit(group, offsets), 8)
            assert {p.error_code for t in answer.topics for p in t.partitions} == {0}
        if n == ROUNDS // 2:        # mid-log, so that later commits make its segment dirty enough to clean
            deleted = await node.send(OffsetDeleteRequest(group_id=OTHER, topics=[OffsetDeleteRequestTopic(
                name=TOPIC, partitions=[OffsetDeleteRequestPartition(partition_index=2)])]), 0)
            assert (deleted.error_code, deleted.topics[0].partitions[0].error_code) == (0, 0)
        if n % ROUNDS_PER_SEGMENT == 0:
            partition.log.roll()       # while the cleaner may be cleaning the segments rolled before
    end = partition.log.log_end_offset
    partition.log.roll()              # everything committed now in segments the cleaner may clean
    cleaner = node.broker.log_manager.cleaner
    await wait_for(lambda: cleaner.checkpoints.get(OFFSETS, 0) >= end, "the cleaner to clean __consumer_offsets")
    fetched = await node.send(OffsetFetchRequest(groups=[
        OffsetFetchRequestGroup(group_id=g, topics=[OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0, 1, 2])])
        for g in (GROUP, OTHER)], require_stable=False), 8)
    return end, offsets_log_records(node.broker), fetched


def test_consumer_offsets_keeps_the_latest_commit_per_key_and_the_tombstone_once_cleaned(node):
    written, records, fetched = node.call(_commit_rounds_and_clean(node))
    decoded = [decode_record(key, value) for key, value in records]
    keys = [key for key, _ in records]
    assert len(keys) == len(set(keys)), "a key left twice in the cleaned log"
    kept = {(k.group, k.topic, k.partition): None if v is None else v.offset
            for kind, k, v in (d for d in decoded if d is not None) if kind == "offset"}
    latest = 10 * ROUNDS
    assert kept == {(GROUP, TOPIC, 0): latest, (GROUP, TOPIC, 1): latest + 1, (GROUP, TOPIC, 2): latest + 2,
                    (OTHER, TOPIC, 0): latest, (OTHER, TOPIC, 1): latest + 1, (OTHER, TOPIC, 2): None}
    assert written == 2 * 3 * ROUNDS - ROUNDS // 2 + 1          # a record per committed partition, the tombstone
    assert len(records) == len(kept) == 6                         # nothing but the latest of each key
    answers = {(g.group_id, p.partition_index): (p.error_code, p.committed_offset)
               for g in fetched.groups for t in g.topics for p in t.partitions}
    assert answers == {(GROUP, 0): (0, latest), (GROUP, 1): (0, latest + 1), (GROUP, 2): (0, latest + 2),
                       (OTHER, 0): (0, latest), (OTHER, 1): (0, latest + 1), (OTHER, 2): (0, -1)}
