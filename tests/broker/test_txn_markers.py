"""WriteTxnMarkers (27) and the produce path's transaction checks on the broker
(kafkawire.broker.txn_markers, txn_verification), as Kafka 4.3.1's
KafkaApis.handleWriteTxnMarkersRequest / ReplicaManager.handleProduceAppend answer: in process
against LeaderPartitions (per-partition errors, the answer grouped by producer id, the
listeners, the cluster permission, KIP-890 verification), then raw transactional Produce,
WriteTxnMarkers and a read_committed Fetch and ListOffsets through the wire on the session's
embedded broker (kafkawire.testing)."""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.replica_state import LeaderReplicas
from kafkawire.broker.replication import Replication
from kafkawire.broker.producer_state import VERIFICATION_OFF
from kafkawire.broker.log_config import TopicConfigs
from kafkawire.net.config import parse_server_config
from kafkawire.broker.txn_markers import TxnMarkersApi
from kafkawire.broker.txn_verification import transaction_checks
from kafkawire.broker.validation import validate_produce
from kafkawire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from kafkawire.messages.write_txn_markers_request import (WritableTxnMarker, WritableTxnMarkerTopic,
                                                          WriteTxnMarkersRequest)
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

TOPIC_ID = uuid.UUID(int=11)
NOW = 1_800_000_000_000
NODE = 1


def txn_batch(pid: int, seq: int = 0, epoch: int = 0, *, transactional: bool = True, timestamp: int = NOW) -> bytes:
    return build_batch([(b"k", b"v", [], timestamp)], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       is_transactional=transactional)


def append(partition: LeaderPartition, data: bytes, guard=VERIFICATION_OFF) -> int:
    validated = validate_produce(data, topic_partition=partition.name, max_message_bytes=1 << 20,
                                 log_append_time=False, now_ms=NOW)
    return partition.append(validated, now_ms=NOW, guard=guard)[0]


@pytest.fixture
def broker(tmp_path):
    """orders-0 led here; orders-1 a replica here led by node 2; orders-2 on other nodes only."""
    partition = LeaderPartition.open(str(tmp_path), "orders", 0, TOPIC_ID, leader_epoch=0, segment_bytes=1 << 20,
                                     now_ms=NOW)
    topic = SimpleNamespace(name="orders", id=TOPIC_ID, partitions={
        0: SimpleNamespace(leader=NODE, isr=[NODE], replicas=[NODE]),
        1: SimpleNamespace(leader=2, isr=[2, NODE], replicas=[2, NODE]),
        2: SimpleNamespace(leader=2, isr=[2], replicas=[2, 3])})
    image = SimpleNamespace(topics_by_name={"orders": topic}, topics_by_id={TOPIC_ID: topic}, configs={})
    appended = []
    config = parse_server_config(f"process.roles=broker,controller\nnode.id={NODE}\ncontroller.listener.names=CONTROLLER\n"
                                 "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
                                 "controller.quorum.bootstrap.servers=127.0.0.1:9093\n")
    fake = SimpleNamespace(node_id=NODE, image=lambda: image, partitions={("orders", 0): partition},
                           config=config, topic_configs=TopicConfigs(config), authorizer=None,
                           txn_marker_listeners=[], txn_verifier=None, data_appended=lambda: appended.append(1),
                           send_to_controller=None, lifecycle=None)
    fake.replication = Replication(fake)
    fake.txn_markers = TxnMarkersApi(fake)
    yield fake
    partition.close()


def marker(pid: int, partitions, *, commit: bool = True, epoch: int = 0, coordinator_epoch: int = 0,
           topic: str = "orders") -> WritableTxnMarker:
    return WritableTxnMarker(producer_id=pid, producer_epoch=epoch, transaction_result=commit,
                             coordinator_epoch=coordinator_epoch,
                             topics=[WritableTxnMarkerTopic(name=topic, partition_indexes=list(partitions))])


def write(broker, *markers):
    return asyncio.run(broker.txn_markers.write_txn_markers(WriteTxnMarkersRequest(markers=list(markers))))


def results(response) -> dict:
    return {(m.producer_id, t.name, p.partition_index): p.error_code
            for m in response.markers for t in m.topics for p in t.partitions}


def test_markers_are_written_where_led_and_each_other_partition_gets_kafkas_error(broker):
    """onlinePartition: not hosted UNKNOWN_TOPIC_OR_PARTITION; a replica led elsewhere
    NOT_LEADER_OR_FOLLOWER; the led one gets the marker, and the listeners hear of it."""
    partition = broker.partitions[("orders", 0)]
    append(partition, txn_batch(7))
    heard = []
    broker.txn_marker_listeners.append(lambda *args: heard.append(args))
    response = write(broker, marker(7, [0, 1, 2, 9], commit=False, coordinator_epoch=3), marker(8, [0], topic="nope"))
    assert results(response) == {(7, "orders", 0): Errors.NONE, (7, "orders", 1): Errors.NOT_LEADER_OR_FOLLOWER,
                                 (7, "orders", 2): Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                 (7, "orders", 9): Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                 (8, "nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert heard == [("orders", 0, 7, 0, False, 3)]
    assert partition.log.log_end_offset == 2 and partition.last_stable_offset() == 2
    assert [(e.producer_id, e.first_offset, e.last_offset) for e in partition.log.segments[0].txn_index.entries()] \
        == [(7, 0, 1)]


def test_two_markers_of_one_producer_share_one_result_as_kafkas_map_does(broker):
    response = write(broker, marker(7, [0]), marker(7, [2]))
    assert [(m.producer_id, [(t.name, [p.partition_index for p in t.partitions]) for t in m.topics])
            for m in response.markers] == [(7, [("orders", [0, 2])])]


def test_a_fenced_coordinator_and_an_old_producer_epoch_are_refused(broker, caplog):
    """Logged as Kafka's ReplicaManager logs the coordinator's failed append: the old producer
    epoch at INFO, the fenced coordinator at ERROR."""
    caplog.set_level(logging.DEBUG, "kafkawire.broker.produce")
    partition = broker.partitions[("orders", 0)]
    append(partition, txn_batch(7, epoch=2))
    heard = []
    broker.txn_marker_listeners.append(lambda *args: heard.append(args))
    assert results(write(broker, marker(7, [0], epoch=1))) == {(7, "orders", 0): Errors.INVALID_PRODUCER_EPOCH}
    assert results(write(broker, marker(7, [0], epoch=2, coordinator_epoch=5))) == {(7, "orders", 0): Errors.NONE}
    append(partition, txn_batch(7, seq=1, epoch=2))
    assert results(write(broker, marker(7, [0], epoch=2, coordinator_epoch=4))) \
        == {(7, "orders", 0): Errors.TRANSACTION_COORDINATOR_FENCED}
    assert heard == [("orders", 0, 7, 2, True, 5)]
    assert [(r.levelno, r.getMessage().split(":")[0]) for r in caplog.records if r.name == "kafkawire.broker.produce"] \
        == [(logging.INFO, "append to partition orders-0 (topic id AAAAAAAAAAAAAAAAAAAACw) refused with "
                           "INVALID_PRODUCER_EPOCH"),
            (logging.ERROR, "append to partition orders-0 (topic id AAAAAAAAAAAAAAAAAAAACw) refused with "
                            "TRANSACTION_COORDINATOR_FENCED")]


def test_a_listener_that_raises_does_not_stop_the_others_or_the_answer(broker):
    heard = []

    def broken(*args):
        raise RuntimeError("boom")
    broker.txn_marker_listeners += [broken, lambda *args: heard.append(args)]
    assert results(write(broker, marker(7, [0]))) == {(7, "orders", 0): Errors.NONE}
    assert heard == [("orders", 0, 7, 0, True, 0)]


def test_on_a_log_append_time_topic_the_marker_says_log_append_time(broker):
    """LogValidator stamps the marker batch as any batch of a LogAppendTime topic."""
    broker.image().configs[(TOPIC_RESOURCE, "orders")] = {"message.timestamp.type": "LogAppendTime"}
    assert results(write(broker, marker(7, [0]))) == {(7, "orders", 0): Errors.NONE}
    [batch] = iter_batches(broker.partitions[("orders", 0)].read(0, 1 << 20, min_one_batch=True))
    assert (batch.is_control, batch.timestamp_type) == (True, 1)


def test_fewer_in_sync_replicas_than_min_insync_replicas_is_not_enough_replicas(broker, caplog):
    caplog.set_level(logging.DEBUG, "kafkawire.broker.produce")
    broker.image().configs[(TOPIC_RESOURCE, "orders")] = {"min.insync.replicas": "2"}
    broker.image().topics_by_name["orders"].partitions[0] = SimpleNamespace(leader=NODE, isr=[NODE], replicas=[NODE, 2])
    assert results(write(broker, marker(7, [0]))) == {(7, "orders", 0): Errors.NOT_ENOUGH_REPLICAS}
    assert [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "kafkawire.broker.produce"] == [
        (logging.ERROR, "append to partition orders-0 (topic id AAAAAAAAAAAAAAAAAAAACw) refused with "
                        f"NOT_ENOUGH_REPLICAS: 1 in-sync replica(s) [{NODE}], fewer than the min.insync.replicas of 2")]


def test_min_insync_replicas_is_at_most_the_replication_factor_as_kafkas_effective_min_isr(broker):
    """Partition.effectiveMinIsr: min.insync.replicas=2 on a partition of one replica allows the marker."""
    broker.image().configs[(TOPIC_RESOURCE, "orders")] = {"min.insync.replicas": "2"}
    assert results(write(broker, marker(7, [0]))) == {(7, "orders", 0): Errors.NONE}


def follow(broker, isr):
    """orders-0 gets a follower (node 2); ``isr`` its committed ISR as the leader knows it."""
    partition = broker.partitions[("orders", 0)]
    partition.replicas = LeaderReplicas(NODE, max_lag_ms=30_000, broker_epoch=lambda b: 5)
    partition.replicas.make_leader(replicas=[NODE, 2], isr=list(isr), leader_epoch=0, partition_epoch=0,
                                   log_end_offset=partition.log.log_end_offset, now_ms=NOW, is_new_leader=True)
    partition.store_high_watermark(partition.log.log_end_offset)
    broker.image().topics_by_name["orders"].partitions[0] = SimpleNamespace(leader=NODE, isr=[NODE, 2],
                                                                            replicas=[NODE, 2])
    broker.image().configs[(TOPIC_RESOURCE, "orders")] = {"min.insync.replicas": "2"}
    return partition


def test_the_min_isr_check_uses_the_partitions_own_isr_not_the_images(broker):
    """The leader's committed ISR (shrunk to the leader alone, the image not yet told) is under
    min.insync.replicas=2: NOT_ENOUGH_REPLICAS, and nothing is appended."""
    partition = follow(broker, isr=[NODE])
    assert results(write(broker, marker(7, [0]))) == {(7, "orders", 0): Errors.NOT_ENOUGH_REPLICAS}
    assert partition.log.log_end_offset == 0


def test_a_marker_is_answered_once_the_followers_have_it_else_request_timed_out(broker):
    """ReplicaManager.appendRecords with requiredAcks -1: the answer (and the listeners) wait for
    the high watermark; without the follower's fetch REQUEST_TIMED_OUT after request.timeout.ms."""
    partition = follow(broker, isr=[NODE, 2])
    told = []
    broker.txn_marker_listeners.append(lambda *args: told.append(args))

    async def go():
        answer = asyncio.ensure_future(broker.txn_markers.write_txn_markers(WriteTxnMarkersRequest(
            markers=[marker(7, [0])])))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not answer.done() and told == [], "answered before the follower had the marker"
        end_offset = partition.log.log_end_offset
        broker.replication.follower_fetched(partition, 2, 5, end_offset, 0, end_offset)
        return await asyncio.wait_for(answer, 5)
    assert results(asyncio.run(go())) == {(7, "orders", 0): Errors.NONE} and len(told) == 1
    object.__setattr__(broker.config, "request_timeout_ms", 30)
    assert results(write(broker, marker(8, [0]))) == {(8, "orders", 0): Errors.REQUEST_TIMED_OUT}
    assert len(told) == 1


class Authorizer:
    def __init__(self, allowed: set):
        self.allowed = allowed
        self.asked = []

    def authorize(self, principal, host, operation, resource_type, name):
        self.asked.append((operation, resource_type, name))
        return operation in self.allowed


@pytest.mark.parametrize("allowed, code", [(set(), Errors.CLUSTER_AUTHORIZATION_FAILED), ({9}, Errors.NONE),
                                           ({7}, Errors.NONE)], ids=["neither", "CLUSTER_ACTION", "ALTER"])
def test_the_wire_entry_needs_alter_or_cluster_action_on_the_cluster(broker, allowed, code):
    """KafkaApis: ALTER on the cluster, else CLUSTER_ACTION; refused, every partition is
    CLUSTER_AUTHORIZATION_FAILED (WriteTxnMarkersRequest.getErrorResponse) and nothing is written."""
    broker.authorizer = Authorizer(allowed)
    ctx = SimpleNamespace(principal="User:client", peer=("127.0.0.1", 5000))
    request = WriteTxnMarkersRequest(markers=[marker(7, [0, 1])])
    response = asyncio.run(broker.txn_markers.handle(ctx, request))
    assert results(response)[(7, "orders", 0)] == code
    assert broker.authorizer.asked[0] == (7, 4, "kafka-cluster")
    assert broker.partitions[("orders", 0)].log.log_end_offset == (1 if code == Errors.NONE else 0)


# -- the produce path's transaction checks --

def produce_request(records: bytes, transactional_id: str | None = "tx"):
    return SimpleNamespace(transactional_id=transactional_id, topic_data=[SimpleNamespace(
        name="orders", partition_data=[SimpleNamespace(index=0, records=records)])])


def checks(broker, request, version: int = 9):
    return asyncio.run(transaction_checks(broker, request, version, lambda t: t.name, NOW))


def test_transactional_records_without_a_transactional_id_are_refused():
    refusal = checks(SimpleNamespace(txn_verifier=None), produce_request(txn_batch(7), None)).refusal("orders", 0)
    assert refusal[0] == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_the_verifier_is_asked_before_a_batch_opens_a_transaction_and_not_while_it_is_open(broker):
    """KIP-890: the first batch of a transaction gets a guard and the verifier's word; the
    partition then opens the transaction; the next batch needs no verification."""
    asked = []

    async def verifier(transactional_id, producer_id, producer_epoch, partitions, *, produce_version):
        asked.append((transactional_id, producer_id, producer_epoch, partitions, produce_version))
        return {p: Errors.NONE for p in partitions}
    broker.txn_verifier = verifier
    partition = broker.partitions[("orders", 0)]
    first = checks(broker, produce_request(txn_batch(7)))
    assert first.refusal("orders", 0) is None and asked == [("tx", 7, 0, [("orders", 0)], 9)]
    append(partition, txn_batch(7), guard=first.guard("orders", 0))
    assert partition.last_stable_offset() == 0
    second = checks(broker, produce_request(txn_batch(7, seq=1)))
    assert len(asked) == 1 and second.guard("orders", 0) is VERIFICATION_OFF
    append(partition, txn_batch(7, seq=1), guard=second.guard("orders", 0))


@pytest.mark.parametrize("version, answer, code, message", [
    (9, Errors.INVALID_TXN_STATE, Errors.INVALID_TXN_STATE, "Partition was not added to the transaction"),
    (9, Errors.NOT_COORDINATOR, Errors.NOT_ENOUGH_REPLICAS,
     "Unable to verify the partition has been added to the transaction. Underlying error: NOT_COORDINATOR"),
    (11, Errors.CONCURRENT_TRANSACTIONS, Errors.NOT_ENOUGH_REPLICAS,
     "Unable to verify the partition has been added to the transaction. Underlying error: CONCURRENT_TRANSACTIONS"),
    (12, Errors.CONCURRENT_TRANSACTIONS, Errors.CONCURRENT_TRANSACTIONS,
     Errors.CONCURRENT_TRANSACTIONS.message),
], ids=["not added", "retriable", "concurrent before v12", "concurrent from v12"])
def test_a_verification_error_is_the_partitions_answer_as_replica_manager_translates_it(broker, version, answer, code,
                                                                                        message):
    async def verifier(transactional_id, producer_id, producer_epoch, partitions, *, produce_version):
        assert produce_version == version
        return {p: answer for p in partitions}
    broker.txn_verifier = verifier
    assert checks(broker, produce_request(txn_batch(7)), version).refusal("orders", 0) == (code, message)


# -- through the wire, on the session's embedded broker --

def open_transaction(node, transactional_id: str, topic: str, fallback_pid: int) -> tuple[int, int]:
    """(producer id, epoch) for raw transactional batches to ``topic``-0: with a transaction
    coordinator on the node (AddPartitionsToTxn advertised), InitProducerId and the partition
    added, so that the produce path's KIP-890 verification lets them through; without one (no
    verification), ``fallback_pid`` and epoch 0."""
    from kafkawire.messages.add_partitions_to_txn_request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
    from kafkawire.messages.api_versions_request import ApiVersionsRequest
    from kafkawire.messages.init_producer_id_request import InitProducerIdRequest

    from .test_leader_epoch_apis import call, wait_until
    advertised = {k.api_key for k in call(node, ApiVersionsRequest(
        client_software_name="kafkawire-tests", client_software_version="1")).api_keys}
    if 24 not in advertised:
        return fallback_pid, 0
    from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest

    def coordinator_found() -> bool:           # the first one makes __transaction_state, as in Kafka
        found = call(node, FindCoordinatorRequest(key_type=1, coordinator_keys=[transactional_id]), api_version=4)
        return found.coordinators[0].error_code == Errors.NONE
    wait_until(coordinator_found, "the transaction coordinator")
    holder = []

    def initialized() -> bool:
        answer = call(node, InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=60_000),
                      api_version=4)
        holder[:] = [(answer.producer_id, answer.producer_epoch)]
        return answer.error_code == Errors.NONE
    wait_until(initialized, "InitProducerId from the transaction coordinator")
    pid, epoch = holder[0]

    def added() -> bool:
        answer = call(node, AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=transactional_id, v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch, v3_and_below_topics=[AddPartitionsToTxnTopic(name=topic, partitions=[0])]),
            api_version=3)
        return {p.partition_error_code for t in answer.results_by_topic_v3_and_below
                for p in t.results_by_partition} == {Errors.NONE}
    wait_until(added, "the partition added to the transaction")
    return pid, epoch


def test_a_raw_transaction_aborted_by_write_txn_markers_is_hidden_from_read_committed_through_the_wire(
        kafkawire_broker):
    """Transactional Produce (no coordinator yet: verification off), then WriteTxnMarkers (v1,
    Kafka 4.3.1 serves 1-2) aborting it: read_committed ListOffsets and Fetch stop at the open
    transaction, then see the whole log with the aborted transaction listed."""
    from kafkawire.messages.api_versions_request import ApiVersionsRequest
    from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
    from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
    from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
    from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData

    from .test_leader_epoch_apis import call, wait_until
    node, topic = kafkawire_broker, "txn-wire"
    advertised = {k.api_key: (k.min_version, k.max_version) for k in call(node, ApiVersionsRequest(
        client_software_name="kafkawire-tests", client_software_version="1")).api_keys}
    assert advertised[27] == (1, 2)
    created = call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1, assignments=[], configs=[])]))
    assert created.topics[0].error_code == Errors.NONE

    def produce(records: bytes, transactional_id: str | None) -> int:
        response = call(node, ProduceRequest(transactional_id=transactional_id, acks=1, timeout_ms=5000, topic_data=[
            TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=0, records=records)])]),
            api_version=9)
        return response.responses[0].partition_responses[0].error_code
    wait_until(lambda: produce(build_batch([(b"k", b"first")]), None) == Errors.NONE,
               "the new topic's leader to take a produce")                      # offset 0
    pid, epoch = open_transaction(node, "wire-tx", topic, 987_654)
    assert produce(txn_batch(pid, epoch=epoch, timestamp=int(time.time() * 1000)), "wire-tx") == Errors.NONE  # 1
    assert produce(build_batch([(b"k", b"plain")]), None) == Errors.NONE               # offset 2

    def latest(isolation_level: int) -> int:
        response = call(node, ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[
            ListOffsetsTopic(name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]),
            api_version=5)
        return response.topics[0].partitions[0].offset

    def fetch_committed():
        response = call(node, FetchRequest(max_wait_ms=0, min_bytes=0, isolation_level=1, topics=[FetchTopic(
            topic=topic, partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]),
            api_version=12)
        return response.responses[0].partitions[0]
    assert (latest(0), latest(1)) == (3, 1)
    before = fetch_committed()
    assert (before.high_watermark, before.last_stable_offset, before.aborted_transactions) == (3, 1, [])
    assert [b.last_offset for b in iter_batches(bytes(before.records))] == [0]      # below the open transaction
    answer = call(node, WriteTxnMarkersRequest(markers=[marker(pid, [0], commit=False, epoch=epoch, topic=topic)]),
                  api_version=1)
    assert results(answer) == {(pid, topic, 0): Errors.NONE}
    after = fetch_committed()
    assert (after.high_watermark, after.last_stable_offset) == (4, 4) and latest(1) == 4
    assert [(a.producer_id, a.first_offset) for a in after.aborted_transactions] == [(pid, 1)]


def test_a_failed_index_write_is_a_storage_error_and_leaves_the_lso_where_it_was(broker, monkeypatch):
    """UnifiedLog.append writes the aborted transaction's index entry before completing it: if
    the write fails, the transaction still holds the LSO (read_committed never sees its data)."""
    partition = broker.partitions[("orders", 0)]
    append(partition, txn_batch(7))

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(partition.log.segments[0].txn_index, "append", full_disk)
    assert results(write(broker, marker(7, [0], commit=False))) == {(7, "orders", 0): Errors.KAFKA_STORAGE_ERROR}
    append(partition, txn_batch(8, transactional=False))      # the high watermark moves on
    assert partition.last_stable_offset() == 0


def test_a_partition_named_twice_in_one_marker_gets_one_marker(broker):
    request = WriteTxnMarkersRequest(markers=[WritableTxnMarker(producer_id=7, producer_epoch=0, topics=[
        WritableTxnMarkerTopic(name="orders", partition_indexes=[0, 0]),
        WritableTxnMarkerTopic(name="orders", partition_indexes=[0])])])
    asyncio.run(broker.txn_markers.write_txn_markers(request))
    assert broker.partitions[("orders", 0)].log.log_end_offset == 1


def test_kafka_pythons_read_committed_consumer_skips_the_aborted_records(kafkawire_broker):
    """The judge of issue 29: a read_committed consumer (kafka-python) never shows an aborted
    record and shows a committed one, reading over both markers."""
    kafka = pytest.importorskip("kafka")
    from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
    from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData

    from .test_leader_epoch_apis import call, wait_until
    node, topic, now = kafkawire_broker, "txn-wire-client", int(time.time() * 1000)
    call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1, assignments=[], configs=[])]))

    def produce(records: bytes, transactional_id: str | None = None) -> int:
        response = call(node, ProduceRequest(transactional_id=transactional_id, acks=1, timeout_ms=5000, topic_data=[
            TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=0, records=records)])]),
            api_version=9)
        return response.responses[0].partition_responses[0].error_code

    def batch(values, pid=-1, epoch=-1, transactional=False) -> bytes:
        return build_batch([(b"k", v, [], now) for v in values], producer_id=pid, producer_epoch=epoch,
                           base_sequence=0 if pid >= 0 else -1, is_transactional=transactional)
    wait_until(lambda: produce(batch([b"plain-1"])) == Errors.NONE, "the new topic's leader to take a produce")
    aborting = open_transaction(node, "txnlog-client-aborted", topic, 555_001)
    committing = open_transaction(node, "txnlog-client-committed", topic, 555_002)
    assert produce(batch([b"aborted-1", b"aborted-2"], *aborting, True), "txnlog-client-aborted") == Errors.NONE
    assert produce(batch([b"committed"], *committing, True), "txnlog-client-committed") == Errors.NONE
    answer = call(node, WriteTxnMarkersRequest(markers=[
        marker(aborting[0], [0], commit=False, epoch=aborting[1], topic=topic),
        marker(committing[0], [0], commit=True, epoch=committing[1], topic=topic)]))
    assert set(results(answer).values()) == {Errors.NONE}
    assert produce(batch([b"plain-2"])) == Errors.NONE
    consumer = kafka.KafkaConsumer(bootstrap_servers=node.bootstrap_servers, isolation_level="read_committed",
                                   auto_offset_reset="earliest", enable_auto_commit=False, group_id=None)
    try:
        consumer.assign([kafka.TopicPartition(topic, 0)])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [m.value for m in records]
    finally:
        consumer.close()
    assert got == [b"plain-1", b"committed", b"plain-2"]


def test_verification_switched_off_and_on_again_for_this_broker_through_the_wire(kafkawire_broker):
    """transaction.partition.verification.enable set false for this broker by
    IncrementalAlterConfigs (kafka-configs --entity-type brokers --entity-name 1): a transactional
    batch (Produce v9) to a partition never added to its transaction is appended unverified, as
    Kafka appends it; the setting deleted again, the next such batch is INVALID_TXN_STATE (the
    coordinator's TRANSACTION_ABORTABLE as a v9 client is told it)."""
    from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
    from kafkawire.messages.end_txn_request import EndTxnRequest
    from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                      IncrementalAlterConfigsRequest)
    from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData

    from .test_leader_epoch_apis import call, wait_until

    def now() -> int:
        return int(time.time() * 1000)
    node, topic, other, txn_id = kafkawire_broker, "txn-verification-switch", "txn-verification-added", \
        "verification-switch-tx"
    call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[]) for name in (topic, other)]))

    def produce(records: bytes, transactional_id: str | None = None) -> int:
        response = call(node, ProduceRequest(transactional_id=transactional_id, acks=1, timeout_ms=5000, topic_data=[
            TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=0, records=records)])]),
            api_version=9)
        return response.responses[0].partition_responses[0].error_code

    def set_verification(value: str | None) -> None:
        answer = call(node, IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=4, resource_name="1", configs=[AlterableConfig(
                name="transaction.partition.verification.enable", config_operation=0 if value else 1,
                value=value)])]), api_version=1)
        assert [r.error_code for r in answer.responses] == [Errors.NONE], answer
    wait_until(lambda: produce(build_batch([(b"k", b"plain")])) == Errors.NONE, "the new topic's leader")
    pid, epoch = open_transaction(node, txn_id, other, 0)          # the transaction has the other topic only
    assert produce(txn_batch(pid, epoch=epoch, timestamp=now()), txn_id) == Errors.INVALID_TXN_STATE
    set_verification("false")
    try:
        wait_until(lambda: produce(txn_batch(pid, epoch=epoch, timestamp=now()), txn_id) == Errors.NONE,
                   "the unverified append")
    finally:
        set_verification(None)
    answer = call(node, WriteTxnMarkersRequest(markers=[marker(pid, [0], commit=False, epoch=epoch, topic=topic)]),
                  api_version=1)                                  # the hanging transaction ends
    assert results(answer) == {(pid, topic, 0): Errors.NONE}
    wait_until(lambda: produce(txn_batch(pid, seq=1, epoch=epoch, timestamp=now()), txn_id) == Errors.INVALID_TXN_STATE,
               "verification on again")
    ended = call(node, EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=False),
                 api_version=3)
    assert ended.error_code == Errors.NONE


def test_a_consumer_offsets_marker_is_not_leader_while_the_group_coordinator_loads_it_and_sent_again(tmp_path):
    """KafkaApis hands a ``__consumer_offsets`` marker to the group coordinator, whose runtime
    refuses it while it loads the partition (COORDINATOR_LOAD_IN_PROGRESS, answered
    NOT_LEADER_OR_FOLLOWER): nothing is written, and the transaction coordinator's MarkerSender,
    which retries that error as TransactionMarkerChannelManager does, writes it once loaded: one
    marker in the log, the pending offset committed. Before, the marker was written at once."""
    from kafkawire.broker.txn_marker_sender import MarkerSender

    from .test_coordinator_replication import pending_txn_offset, replicated_broker
    from .test_txn_state_topic import TX, fetched, until

    async def go():
        broker = replicated_broker(tmp_path, isr=(1,))          # the leader alone in sync: no wait
        broker.txn_markers = TxnMarkersApi(broker)
        broker.topic_configs = SimpleNamespace(produce_settings=lambda image, topic: SimpleNamespace(
            min_insync_replicas=1, log_append_time=False))
        await broker.load()
        producer_id, epoch = await pending_txn_offset(broker, 50)
        store, key = broker.group_apis.store, ("__consumer_offsets", 0)
        partition = broker.partitions.pop(key)
        store.on_metadata()                                      # led elsewhere: unloaded
        broker.partitions[key] = partition                       # led here again

        answers = []

        async def write(request):
            response = await broker.txn_markers.write_txn_markers(request)
            answers.append(results(response)[(producer_id, *key)])
            return response
        completed = []
        sender = MarkerSender(write=write, leader_known=lambda topic, index: True, retry_backoff_ms=1)
        sender.coordinator = SimpleNamespace(complete=lambda *args: completed.append(args) or Errors.NONE)
        sender.send(SimpleNamespace(transactional_id=TX, producer_id=producer_id, producer_epoch=epoch, client_tv=0,
                                    partitions={key}), 0, True, None)        # its first try runs before the load
        store.on_metadata()
        assert 0 in store.loading and 0 not in store.loaded
        end = partition.log.log_end_offset
        response = await broker.txn_markers.write_txn_markers(WriteTxnMarkersRequest(markers=[
            marker(producer_id, [0], epoch=epoch, topic="__consumer_offsets")]))
        assert results(response) == {(producer_id, *key): Errors.NOT_LEADER_OR_FOLLOWER}
        assert partition.log.log_end_offset == end
        await until(lambda: completed)
        assert answers[0] == Errors.NOT_LEADER_OR_FOLLOWER and answers[-1] == Errors.NONE, answers
        assert sum(batch.is_control for batch in iter_batches(partition.log.read(0, 1 << 20).data)) == 1
        assert await fetched(broker, True) == (Errors.NONE, 50)
        broker.close()
    asyncio.run(go())


def test_min_insync_replicas_set_for_this_broker_alone_refuses_an_acks_all_write(broker):
    """The per-broker dynamic layer (issue 29): min.insync.replicas=2 set for node 1 only (the
    cluster default and server.properties say 1) makes a write to a two-replica partition whose
    ISR is the leader alone NOT_ENOUGH_REPLICAS, as Kafka's broker answers."""
    broker.image().configs[(BROKER_RESOURCE, str(NODE))] = {"min.insync.replicas": "2"}
    broker.image().configs[(BROKER_RESOURCE, "")] = {"min.insync.replicas": "1"}
    broker.image().topics_by_name["orders"].partitions[0] = SimpleNamespace(leader=NODE, isr=[NODE], replicas=[NODE, 2])
    assert results(write(broker, marker(7, [0]))) == {(7, "orders", 0): Errors.NOT_ENOUGH_REPLICAS}
