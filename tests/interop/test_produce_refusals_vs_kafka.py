"""Bad Produce, Fetch, ListOffsets and OffsetForLeaderEpoch input judged by a real Apache Kafka 4.3.1 broker (issue 29: "bad input
... gets Kafka's errors"): the same raw requests go to a Kafka 4.3.1 combined node and to the
session's kafkawire node, each holding the same topics and records, and must be answered alike,
field for field: the error code, its message, the record errors, the offsets and watermarks
answered (a time of the broker's clock inside a message masked). Each case is a request of its
own, so that a refusal of a whole request is seen as such. One Kafka JVM."""
from __future__ import annotations

import re
import struct
import time
import zlib

import pytest
from crc32c import crc32c

from kafkawire.messages.add_partitions_to_txn_request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kafkawire.messages.alter_partition_reassignments_request import (AlterPartitionReassignmentsRequest,
                                                                      ReassignablePartition, ReassignableTopic)
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.broker_registration_request import BrokerRegistrationRequest, Feature, Listener
from kafkawire.messages.create_topics_request import (CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
                                                      CreateTopicsRequest)
from kafkawire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic
from kafkawire.messages.end_txn_request import EndTxnRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.messages.offset_for_leader_epoch_request import (OffsetForLeaderEpochRequest, OffsetForLeaderPartition,
                                                                OffsetForLeaderTopic)
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.messages.unregister_broker_request import UnregisterBrokerRequest
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch, build_control_batch
from kafkawire.storage.state_files import random_uuid, uuid_to_kafka
from tests.broker.wire import call
from tests.interop.kafka_procs import KafkaNode

# What the entry point does for an installed kafkawire; harmless on top of it (same name).
pytest_plugins = ["kafkawire.testing.pytest_plugin"]

WAIT_S = 60
PRODUCE_VERSION = 12           # the newest that names topics (v13 names them by id)
TOPICS = {"refusals": {}, "refusals-compact": {"cleanup.policy": "compact"},
          "refusals-small": {"max.message.bytes": "300"}, "refusals-trimmed": {}, "refusals-txn": {}}
NOW = int(time.time() * 1000)
GOOD = build_batch([(b"k", b"v", [], NOW)])


def legacy_message(key: bytes, value: bytes) -> bytes:
    """One magic 1 message (offset 0) as a pre-0.11 producer sends it."""
    body = struct.pack(">bbq", 1, 0, NOW) + struct.pack(">i", len(key)) + key + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


def corrupted(data: bytes) -> bytes:
    flipped = bytearray(data)
    flipped[-1] ^= 0xFF
    return bytes(flipped)


# name: (acks, [(topic, partition, records)])
PRODUCE_CASES = {
    "acks 2, a known partition, an unknown partition and topic": (2, [
        ("refusals", 0, GOOD), ("refusals", 7, GOOD), ("refusals-unknown", 0, GOOD)]),
    "a CRC that does not match": (1, [("refusals", 0, corrupted(GOOD))]),
    "a truncated batch": (1, [("refusals", 0, GOOD[:-3])]),
    "over the topic's max.message.bytes": (1, [("refusals-small", 0, build_batch([(b"k", b"x" * 400, [], NOW)]))]),
    "records without a key on a compacted topic": (1, [("refusals-compact", 0, build_batch(
        [(None, b"a", [], NOW), (b"k", b"b", [], NOW), (None, b"c", [], NOW)]))]),
    "a timestamp two hours ahead": (1, [("refusals", 0, build_batch([(b"k", b"v", [], NOW + 7_200_000)]))]),
    "a base offset other than 0": (1, [("refusals", 0, build_batch([(b"k", b"v", [], NOW)], base_offset=7))]),
    "a control batch from a client": (1, [("refusals", 0, build_control_batch(0, b"\x00\x00\x00\x00\x00\x00"))]),
    "two batches in one partition": (1, [("refusals", 0, GOOD + GOOD)]),
    "a batch then a truncated one": (1, [("refusals", 0, GOOD + GOOD[:-3])]),
    "no batch": (1, [("refusals", 0, b"")]),
    "a magic 1 message set": (1, [("refusals", 0, legacy_message(b"k", b"v"))]),
    "a producer id with a negative sequence": (1, [("refusals", 0, build_batch(
        [(b"k", b"v", [], NOW)], producer_id=5, producer_epoch=0, base_sequence=-1))]),
    "a negative partition": (1, [("refusals", -1, GOOD)]),
    "a transactional batch without a transactional id": (1, [("refusals", 0, build_batch(
        [(b"k", b"v", [], NOW)], producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True))]),
}

def garbled_gzip() -> bytes:
    """A gzip batch whose compressed records are not gzip (its CRC made right again)."""
    data = bytearray(build_batch([(b"k", b"v" * 50, [], NOW)], compression_type=1))
    data[61:] = b"\x00" * (len(data) - 61)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def garbled_record() -> bytes:
    """An uncompressed batch whose record's key length runs past the record (its CRC made right)."""
    data = bytearray(build_batch([(b"k", b"v", [], NOW)]))
    data[65] = 0x7E                 # the key length varint: 63
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


PRODUCE_CASES.update({
    "a record whose key runs past it": (1, [("refusals", 0, garbled_record())]),
    "acks 2 and no batch": (2, [("refusals", 0, b"")]),
    "a gzip batch that does not decompress": (1, [("refusals", 0, garbled_gzip())]),
    "a producer's LogAppendTime": (1, [("refusals", 0, build_batch([(b"k", b"v", [], NOW)], timestamp_type=1))]),
})
# __transaction_state exists on both once prepare_transactions has run (PRODUCE_CASES run after it).
PRODUCE_CASES["a client's batch to an internal topic"] = (1, [("__transaction_state", 0, GOOD)])
PRODUCE_CASES.update({f"v{version}: {case}": (acks, parts, version) for version in (3, 8) for case, (acks, parts) in [
    (case, PRODUCE_CASES[case]) for case in ("acks 2, a known partition, an unknown partition and topic",
                                             "a CRC that does not match", "a base offset other than 0",
                                             "records without a key on a compacted topic", "two batches in one partition",
                                             "a record whose key runs past it")]})
UNKNOWN_TOPIC_ID = random_uuid()
# name: ([(topic, partition, fetch offset, current leader epoch)], the request's other fields).
# refusals-trimmed holds offsets 1 and 2 (its log start 1, its end 3). Both partitions lead at
# epoch 0, so no epoch is older: Kafka reads any negative one as none (no FENCED_LEADER_EPOCH);
# refusals-fenced (below) leads at epoch 1, for the older epoch.
FETCH_CASES = {
    "past the log end": ([("refusals", 0, 100, -1)], {}),
    "an unknown partition and topic": ([("refusals", 9, 0, -1), ("refusals-unknown", 0, 0, -1)], {}),
    "a newer leader epoch": ([("refusals", 0, 0, 5)], {}),
    "a negative offset": ([("refusals", 0, -5, -1)], {}),
    "below the log start": ([("refusals-trimmed", 0, 0, -1)], {}),
    "one past the log end": ([("refusals-trimmed", 0, 4, -1)], {}),
    "exactly the log end": ([("refusals-trimmed", 0, 3, -1)], {}),
    "exactly the log start": ([("refusals-trimmed", 0, 1, -1)], {}),
    "a partition the topic lacks": ([("refusals-trimmed", 1, 0, -1)], {}),
    "an unknown topic id (v13)": ([(UNKNOWN_TOPIC_ID, 0, 0, -1)], {"version": 13}),
    "a negative leader epoch other than -1": ([("refusals-trimmed", 0, 1, -2)], {}),
    "an unknown (newer) leader epoch": ([("refusals-trimmed", 0, 1, 1)], {}),
    "the current leader epoch": ([("refusals-trimmed", 0, 1, 0)], {}),
    "max_bytes 0": ([("refusals-trimmed", 0, 1, -1), ("refusals", 0, 0, -1)], {"max_bytes": 0}),
    "partition_max_bytes 0": ([("refusals-trimmed", 0, 1, -1), ("refusals", 0, 0, -1)], {"partition_max_bytes": 0}),
    "read committed": ([("refusals-trimmed", 0, 1, -1)], {"isolation_level": 1}),
    "read committed, an aborted and an open transaction": ([("refusals-txn", 0, 0, -1)], {"isolation_level": 1}),
    "read uncommitted, an aborted and an open transaction": ([("refusals-txn", 0, 0, -1)], {}),
    "read committed from the open transaction": ([("refusals-txn", 0, 2, -1)], {"isolation_level": 1}),
    "read committed from the abort marker": ([("refusals-txn", 0, 3, -1)], {"isolation_level": 1}),
    "a replica id that is no replica (v12)": ([("refusals-trimmed", 0, 1, -1)], {"replica_id": 5}),
    "a replica state that is no replica (v15)": ([("refusals-trimmed", 0, 1, -1)], {"version": 15, "replica_id": 5}),
    "a known topic id (v13)": ([("refusals-trimmed", 0, 1, -1)], {"version": 13}),
    "a consumer at v15": ([("refusals-trimmed", 0, 1, -1)], {"version": 15}),
}
# name: (version, [(topic, partition, timestamp, current leader epoch)])
LIST_OFFSETS_CASES = {
    "an unknown partition and topic": (8, [("refusals", 9, -1, -1), ("refusals-unknown", 0, -1, -1)]),
    "a newer leader epoch": (8, [("refusals", 0, -1, 5)]),
    "an older leader epoch": (8, [("refusals", 0, -1, 0)]),
    "an unknown special timestamp": (8, [("refusals", 0, -6, -1)]),
    "the earliest local timestamp before v8": (7, [("refusals", 0, -4, -1)]),
}
# refusals-fenced-0 leads at epoch 1 (bump_leader_epoch), its record (offset 0) of epoch 0.
FENCED_TOPIC = "refusals-fenced"
IDLE_BROKER = 7          # a broker registered with the controller that never runs (fenced)
FETCH_CASES.update({
    "an older (fenced) leader epoch": ([(FENCED_TOPIC, 0, 0, 0)], {}),
    "the leader epoch after a bump": ([(FENCED_TOPIC, 0, 0, 1)], {}),
})
LIST_OFFSETS_CASES.update({
    "an older (fenced) leader epoch after a bump": (8, [(FENCED_TOPIC, 0, -1, 0)]),
    "the leader epoch after a bump": (8, [(FENCED_TOPIC, 0, -1, 1)]),
})
# name: [(topic, partition, current leader epoch, leader epoch asked for)]
OFFSET_FOR_LEADER_EPOCH_CASES = {
    "an older (fenced) current leader epoch": [(FENCED_TOPIC, 0, 0, 0)],
    "the current leader epoch, asking for the one before": [(FENCED_TOPIC, 0, 1, 0)],
    "the current leader epoch, asking for it": [(FENCED_TOPIC, 0, 1, 1)],
    "a newer current leader epoch": [(FENCED_TOPIC, 0, 2, 0)],
}
BROKER_TIME = re.compile(r"-?[0-9]{13,}")     # a time of the broker's clock, or a bound from it


def prepare(address: str) -> None:
    """TOPICS created and one record in refusals-0 (once the broker leads it)."""
    answer = call(address, CreateTopicsRequest(timeout_ms=30_000, topics=[CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=[],
        configs=[CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])
        for name, configs in TOPICS.items()]))
    assert {(t.name, t.error_code) for t in answer.topics} == {(name, Errors.NONE) for name in TOPICS}, answer
    deadline = time.monotonic() + WAIT_S
    while (first := produce(address, 1, [("refusals", 0, GOOD)])[0])[2] == Errors.NOT_LEADER_OR_FOLLOWER:
        assert time.monotonic() < deadline, f"refusals-0 has no leader at {address} within {WAIT_S} s"
        time.sleep(0.1)         # the broker has not applied its leadership yet
    assert first[2:4] == (Errors.NONE, 0), first
    for _ in range(3):
        assert produce(address, 1, [("refusals-trimmed", 0, GOOD)])[0][2] == Errors.NONE
    trimmed = call(address, DeleteRecordsRequest(timeout_ms=30_000, topics=[DeleteRecordsTopic(
        name="refusals-trimmed", partitions=[DeleteRecordsPartition(partition_index=0, offset=1)])]), 2)
    assert [(p.error_code, p.low_watermark) for t in trimmed.topics for p in t.partitions] == [(Errors.NONE, 1)], trimmed
    prepare_transactions(address)


def prepare_transactions(address: str) -> None:
    """refusals-txn-0: a record (offset 0), an aborted transaction's (1), an open transaction's
    (2), the abort marker (3); waits for the marker (written after EndTxn is answered)."""
    assert produce(address, 1, [("refusals-txn", 0, GOOD)])[0][2] == Errors.NONE
    producers = {}
    for transactional_id in ("refusals-aborted", "refusals-open"):
        deadline = time.monotonic() + WAIT_S
        while (found := call(address, FindCoordinatorRequest(key_type=1, coordinator_keys=[transactional_id]), 4)
               ).coordinators[0].error_code != Errors.NONE:
            assert time.monotonic() < deadline, f"no transaction coordinator at {address} within {WAIT_S} s: {found}"
            time.sleep(0.1)         # __transaction_state is being created
        while (init := call(address, InitProducerIdRequest(transactional_id=transactional_id,
                                                           transaction_timeout_ms=600_000), 4)).error_code in (
                Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS):
            assert time.monotonic() < deadline, f"no transaction coordinator at {address} within {WAIT_S} s"
            time.sleep(0.1)         # __transaction_state is being loaded
        assert init.error_code == Errors.NONE, init
        producers[transactional_id] = init.producer_id, init.producer_epoch
        added = call(address, AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=transactional_id, v3_and_below_producer_id=init.producer_id,
            v3_and_below_producer_epoch=init.producer_epoch,
            v3_and_below_topics=[AddPartitionsToTxnTopic(name="refusals-txn", partitions=[0])]), 3)
        assert [p.partition_error_code for t in added.results_by_topic_v3_and_below
                for p in t.results_by_partition] == [Errors.NONE], added
        batch = build_batch([(b"k", b"v", [], NOW)], producer_id=init.producer_id, producer_epoch=init.producer_epoch,
                            base_sequence=0, is_transactional=True)
        assert produce(address, 1, [("refusals-txn", 0, batch)], transactional_id=transactional_id)[0][2] == Errors.NONE
    producer_id, epoch = producers["refusals-aborted"]
    ended = call(address, EndTxnRequest(transactional_id="refusals-aborted", producer_id=producer_id,
                                        producer_epoch=epoch, committed=False), 4)
    assert ended.error_code == Errors.NONE, ended
    deadline = time.monotonic() + WAIT_S
    while (answer := fetch(address, [("refusals-txn", 0, 0, -1)]))[0][3] != 4:
        assert time.monotonic() < deadline, f"no abort marker in refusals-txn-0 at {address} within {WAIT_S} s: {answer}"
        time.sleep(0.1)


def bump_leader_epoch(address: str, controller: str) -> None:
    """refusals-fenced-0, one record, its leader epoch bumped from 0 to 1 on a node of one broker:
    created on this broker and IDLE_BROKER (registered, fenced: the ISR is this broker), then
    reassigned to this broker alone; a reassignment that drops a replica bumps the leader epoch
    (Kafka's PartitionChangeBuilder). IDLE_BROKER is unregistered again afterwards."""
    metadata = call(address, MetadataRequest(topics=[], allow_auto_topic_creation=False), 12)
    [node] = [b.node_id for b in metadata.brokers]
    register_idle_broker(address, controller, metadata.cluster_id)
    answer = call(address, CreateTopicsRequest(timeout_ms=30_000, topics=[CreatableTopic(
        name=FENCED_TOPIC, num_partitions=-1, replication_factor=-1, configs=[],
        assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[node, IDLE_BROKER])])]))
    assert [(t.name, t.error_code) for t in answer.topics] == [(FENCED_TOPIC, Errors.NONE)], answer
    deadline = time.monotonic() + WAIT_S
    while (first := produce(address, 1, [(FENCED_TOPIC, 0, GOOD)])[0])[2] == Errors.NOT_LEADER_OR_FOLLOWER:
        assert time.monotonic() < deadline, f"{FENCED_TOPIC}-0 has no leader at {address} within {WAIT_S} s"
        time.sleep(0.1)
    assert first[2:4] == (Errors.NONE, 0), first
    moved = call(address, AlterPartitionReassignmentsRequest(topics=[ReassignableTopic(
        name=FENCED_TOPIC, partitions=[ReassignablePartition(partition_index=0, replicas=[node])])]), 0)
    assert [(p.error_code, p.error_message) for t in moved.responses for p in t.partitions] == [(Errors.NONE, None)], \
        moved
    while (answer := fetch(address, [(FENCED_TOPIC, 0, 0, 1)]))[0][2] != Errors.NONE:
        assert time.monotonic() < deadline, f"{FENCED_TOPIC}-0 not at leader epoch 1 at {address}: {answer}"
        time.sleep(0.1)         # the broker has not applied the new epoch yet
    unregistered = call(address, UnregisterBrokerRequest(broker_id=IDLE_BROKER), 0)
    assert unregistered.error_code == Errors.NONE, unregistered


def register_idle_broker(address: str, controller: str, cluster_id: str) -> None:
    """IDLE_BROKER registered with the controller at ``controller``, supporting the features the
    broker at ``address`` supports (ApiVersions v4 lists them all); it never heartbeats, so it
    stays fenced."""
    versions = call(address, ApiVersionsRequest(client_software_name="kafkawire-tests", client_software_version="1"), 4)
    answer = call(controller, BrokerRegistrationRequest(
        broker_id=IDLE_BROKER, cluster_id=cluster_id, incarnation_id=random_uuid(), rack=None,
        listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=1, security_protocol=0)],
        features=[Feature(name=f.name, min_supported_version=f.min_version, max_supported_version=f.max_version)
                  for f in versions.supported_features], log_dirs=[random_uuid()]), 4)
    assert answer.error_code == Errors.NONE, answer


def masked(text):
    return None if text is None else BROKER_TIME.sub("<now>", text)


def produce(address: str, acks: int, parts: list, version: int = PRODUCE_VERSION,
            transactional_id: str | None = None) -> list[tuple]:
    by_topic: dict[str, list] = {}
    for topic, partition, records in parts:
        by_topic.setdefault(topic, []).append(PartitionProduceData(index=partition, records=records))
    answer = call(address, ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=5000, topic_data=[
        TopicProduceData(name=t, partition_data=p) for t, p in by_topic.items()]), version)
    return sorted((t.name, p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset,
                   masked(p.error_message),
                   [(e.batch_index, masked(e.batch_index_error_message)) for e in p.record_errors])
                  for t in answer.responses for p in t.partition_responses)


def fetch(address: str, parts: list, version: int = 12, max_bytes: int = 1 << 20, partition_max_bytes: int = 1 << 20,
          isolation_level: int = 0, replica_id: int = -1) -> list[tuple]:
    """parts' topics are names, or ids (uuids): from version 13 a name is sent as the broker's id
    for it, and answered as the name; a replica id goes in the replica state from version 15."""
    ids = topic_ids(address, [t for t, *_ in parts if isinstance(t, str)]) if version >= 13 else {}
    names = {topic_id: name for name, topic_id in ids.items()}
    by_topic: dict[object, list] = {}
    for topic, partition, offset, epoch in parts:
        by_topic.setdefault(ids.get(topic, topic), []).append(FetchPartition(
            partition=partition, fetch_offset=offset, current_leader_epoch=epoch, log_start_offset=-1,
            partition_max_bytes=partition_max_bytes))
    topics = [FetchTopic(topic_id=t, partitions=p) if version >= 13 else FetchTopic(topic=t, partitions=p)
              for t, p in by_topic.items()]
    replica = {"replica_state": ReplicaState(replica_id=replica_id)} if version >= 15 else {"replica_id": replica_id}
    answer = call(address, FetchRequest(**replica, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes,
                                        isolation_level=isolation_level, session_id=0, session_epoch=-1, rack_id="",
                                        forgotten_topics_data=[], topics=topics), version)
    return sorted((t.topic or names.get(t.topic_id, str(t.topic_id)), p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset,
                   p.log_start_offset, len(p.records or b""), aborted(p.aborted_transactions))
                  for t in answer.responses for p in t.partitions) + [("top level", answer.error_code)]


def aborted(transactions):
    """The aborted transactions' first offsets (their producer ids are each broker's own)."""
    return None if transactions is None else [t.first_offset for t in transactions]


def topic_ids(address: str, names: list[str]) -> dict[str, object]:
    answer = call(address, MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names],
                                           allow_auto_topic_creation=False), 12)
    assert all(t.error_code == Errors.NONE for t in answer.topics), answer
    return {t.name: t.topic_id for t in answer.topics}


def list_offsets(address: str, version: int, parts: list) -> list[tuple]:
    by_topic: dict[str, list] = {}
    for topic, partition, timestamp, epoch in parts:
        by_topic.setdefault(topic, []).append(ListOffsetsPartition(
            partition_index=partition, timestamp=timestamp, current_leader_epoch=epoch))
    answer = call(address, ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        ListOffsetsTopic(name=t, partitions=p) for t, p in by_topic.items()]), version)
    return sorted((t.name, p.partition_index, p.error_code, p.timestamp, p.offset, p.leader_epoch)
                  for t in answer.topics for p in t.partitions)


def offset_for_leader_epoch(address: str, parts: list) -> list[tuple]:
    by_topic: dict[str, list] = {}
    for topic, partition, current, epoch in parts:
        by_topic.setdefault(topic, []).append(OffsetForLeaderPartition(
            partition=partition, current_leader_epoch=current, leader_epoch=epoch))
    answer = call(address, OffsetForLeaderEpochRequest(replica_id=-1, topics=[
        OffsetForLeaderTopic(topic=t, partitions=p) for t, p in by_topic.items()]), 4)
    return sorted((t.topic, p.partition, p.error_code, p.leader_epoch, p.end_offset)
                  for t in answer.topics for p in t.partitions)


@pytest.fixture(scope="module")
def addresses(kafka_libs, tmp_path_factory, kafkawire_broker):
    """(Kafka's broker address, kafkawire's), both prepared alike."""
    node = KafkaNode(tmp_path_factory.mktemp("kafka-refusals") / "node", 1, "broker,controller")
    try:
        node.format(uuid_to_kafka(random_uuid()), "--standalone")
        node.start()
        node.wait_ready()
        for address, controller in ((node.broker_address, node.controller_address),
                                    (kafkawire_broker.bootstrap_servers, f"127.0.0.1:{kafkawire_broker.controller_port}")):
            prepare(address)
            bump_leader_epoch(address, controller)
        yield node.broker_address, kafkawire_broker.bootstrap_servers
    finally:
        node.kill()


@pytest.mark.parametrize("case", PRODUCE_CASES)
def test_a_bad_produce_is_answered_as_kafkas_broker_answers_it(addresses, case):
    acks, parts, *version = PRODUCE_CASES[case]
    kafkas, ours = (produce(address, acks, parts, *version) for address in addresses)
    assert ours == kafkas


@pytest.mark.parametrize("case", FETCH_CASES)
def test_a_bad_fetch_is_answered_as_kafkas_broker_answers_it(addresses, case):
    parts, options = FETCH_CASES[case]
    kafkas, ours = (fetch(address, parts, **options) for address in addresses)
    assert ours == kafkas


@pytest.mark.parametrize("case", LIST_OFFSETS_CASES)
def test_a_bad_list_offsets_is_answered_as_kafkas_broker_answers_it(addresses, case):
    version, parts = LIST_OFFSETS_CASES[case]
    kafkas, ours = (list_offsets(address, version, parts) for address in addresses)
    assert ours == kafkas


@pytest.mark.parametrize("case", OFFSET_FOR_LEADER_EPOCH_CASES)
def test_a_bad_offset_for_leader_epoch_is_answered_as_kafkas_broker_answers_it(addresses, case):
    kafkas, ours = (offset_for_leader_epoch(address, OFFSET_FOR_LEADER_EPOCH_CASES[case]) for address in addresses)
    assert ours == kafkas
