"""The transaction coordinator through the wire, on the session's embedded broker
(kafkawire.testing, which sets transaction.state.log.replication.factor=1 as Kafka's one-broker
setups do): FindCoordinator(TRANSACTION) creates __transaction_state and then names this
broker, InitProducerId hands out a producer id for a transactional id, AddPartitionsToTxn,
DescribeTransactions and ListTransactions see the transaction, EndTxn answers; then Kafka
clients' transactional producers (kafka-python, confluent-kafka) with read_committed consumers,
which need the partition side of transactions (markers, read_committed fetch) too."""
from __future__ import annotations

import pytest

from kafkawire.messages.add_partitions_to_txn_request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.describe_transactions_request import DescribeTransactionsRequest
from kafkawire.messages.end_txn_request import EndTxnRequest
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.messages.list_transactions_request import ListTransactionsRequest
from kafkawire.protocol.error_codes import Errors

from .test_leader_epoch_apis import call, wait_until

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

TOPIC = "txn-coordinator-wire"       # not "txn-wire": wt-txnlog's test on the same broker uses it
# Kafka 4.3.1's ranges: InitProducerId (v6 is unstable), AddPartitionsToTxn, AddOffsetsToTxn,
# EndTxn, TxnOffsetCommit, DescribeTransactions, ListTransactions.
KAFKA_RANGES = {22: (0, 5), 24: (0, 5), 25: (0, 4), 26: (0, 5), 28: (0, 5), 65: (0, 0), 66: (0, 2)}


def create_topic(node, name: str, partitions: int = 1) -> None:
    call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])]))


def coordinator_found(node, txn_id: str) -> bool:
    found = call(node, FindCoordinatorRequest(key_type=1, coordinator_keys=[txn_id]), api_version=4).coordinators[0]
    assert found.error_code in (Errors.NONE, Errors.COORDINATOR_NOT_AVAILABLE)
    return found.error_code == Errors.NONE


def init_producer_id(node, txn_id: str):
    holder = []

    def answered():
        r = call(node, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000), api_version=4)
        assert r.error_code in (Errors.NONE, Errors.COORDINATOR_LOAD_IN_PROGRESS), Errors.for_code(r.error_code)
        holder[:] = [r]
        return r.error_code == Errors.NONE
    wait_until(answered, "InitProducerId")
    return holder[0].producer_id, holder[0].producer_epoch


def test_the_coordinator_apis_through_the_wire(kafkawire_broker):
    node = kafkawire_broker
    advertised = {k.api_key: (k.min_version, k.max_version) for k in call(node, ApiVersionsRequest(
        client_software_name="kafkawire-tests", client_software_version="1")).api_keys}
    assert {key: advertised.get(key) for key in KAFKA_RANGES} == KAFKA_RANGES
    create_topic(node, TOPIC, 2)
    wait_until(lambda: coordinator_found(node, "coordinator-wire-tx"), "the transaction coordinator")
    pid, epoch = init_producer_id(node, "coordinator-wire-tx")
    assert epoch == 0
    added = call(node, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="coordinator-wire-tx", v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnTopic(name=TOPIC, partitions=[0, 1]),
                             AddPartitionsToTxnTopic(name="no-such-topic", partitions=[0])]), api_version=3)
    codes = {(t.name, p.partition_index): p.partition_error_code for t in added.results_by_topic_v3_and_below
             for p in t.results_by_partition}
    assert codes == {(TOPIC, 0): Errors.OPERATION_NOT_ATTEMPTED, (TOPIC, 1): Errors.OPERATION_NOT_ATTEMPTED,
                     ("no-such-topic", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    added = call(node, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="coordinator-wire-tx", v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnTopic(name=TOPIC, partitions=[0, 1])]), api_version=3)
    assert {p.partition_error_code for t in added.results_by_topic_v3_and_below for p in t.results_by_partition} \
        == {Errors.NONE}
    described, = call(node, DescribeTransactionsRequest(transactional_ids=["coordinator-wire-tx"])).transaction_states
    assert (described.error_code, described.transaction_state, described.producer_id, described.producer_epoch,
            [(t.topic, sorted(t.partitions)) for t in described.topics]) == (
        Errors.NONE, "Ongoing", pid, 0, [(TOPIC, [0, 1])])
    listed = call(node, ListTransactionsRequest(state_filters=["Ongoing"], producer_id_filters=[pid]))
    assert [(s.transactional_id, s.transaction_state) for s in listed.transaction_states] == [("coordinator-wire-tx", "Ongoing")]
    ended = call(node, EndTxnRequest(transactional_id="coordinator-wire-tx", producer_id=pid, producer_epoch=epoch,
                                     committed=False), api_version=4)
    assert ended.error_code == Errors.NONE


def test_kafka_python_transactional_producer_and_read_committed_consumer(kafkawire_broker):
    """A committed transaction's records are read by a read_committed consumer, an aborted one's are not."""
    kafka = pytest.importorskip("kafka")
    topic = "txn-kafka-python"
    create_topic(kafkawire_broker, topic)
    producer = kafka.KafkaProducer(bootstrap_servers=kafkawire_broker.bootstrap_servers,
                                   transactional_id="kafka-python-tx", max_block_ms=20_000)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"committed")
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic, b"aborted")
        producer.flush()                    # in the log before the abort (not dropped by the client)
        producer.abort_transaction()
    finally:
        producer.close(timeout=5)
    tp = kafka.TopicPartition(topic, 0)
    consumer = kafka.KafkaConsumer(bootstrap_servers=kafkawire_broker.bootstrap_servers,
                                   isolation_level="read_committed", enable_auto_commit=False)
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        # read_committed: the last stable offset, past both markers once the abort's is written
        # (abort_transaction returns before the coordinator writes it, in Kafka too)
        end = 4
        wait_until(lambda: consumer.end_offsets([tp])[tp] == end, "the abort marker")
        values = []
        wait_until(lambda: values.extend(r.value for rs in consumer.poll(timeout_ms=200).values() for r in rs)
                   or consumer.position(tp) >= end, "the read_committed consumer at the end")
        assert values == [b"committed"]
    finally:
        consumer.close()


def test_kafka_python_offsets_committed_with_the_transaction(kafkawire_broker):
    """send_offsets_to_transaction (AddOffsetsToTxn, TxnOffsetCommit): the group's offset is the
    committed transaction's, and an aborted transaction's offset never becomes it."""
    kafka = pytest.importorskip("kafka")
    topic, group = "txn-offsets", "txn-offsets-group"
    create_topic(kafkawire_broker, topic)
    tp = kafka.TopicPartition(topic, 0)
    producer = kafka.KafkaProducer(bootstrap_servers=kafkawire_broker.bootstrap_servers,
                                   transactional_id="kafka-python-offsets-tx", max_block_ms=20_000)
    try:
        producer.init_transactions()
        for offset, commit in ((5, True), (9, False)):
            producer.begin_transaction()
            producer.send_offsets_to_transaction({tp: kafka.structs.OffsetAndMetadata(offset, "", -1)}, group)
            producer.commit_transaction() if commit else producer.abort_transaction()
    finally:
        producer.close(timeout=5)
    consumer = kafka.KafkaConsumer(bootstrap_servers=kafkawire_broker.bootstrap_servers, group_id=group,
                                   enable_auto_commit=False)
    try:
        assert consumer.committed(tp) == 5
    finally:
        consumer.close()


def test_confluent_kafka_transactional_producer_and_read_committed_consumer(kafkawire_broker):
    ck = pytest.importorskip("confluent_kafka")
    topic = "txn-confluent"
    create_topic(kafkawire_broker, topic)
    producer = ck.Producer({"bootstrap.servers": kafkawire_broker.bootstrap_servers,
                            "transactional.id": "confluent-tx"})
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce(topic, b"committed")
    producer.commit_transaction(20)
    producer.begin_transaction()
    producer.produce(topic, b"aborted")
    producer.flush(20)                      # in the log before the abort (not purged by the client)
    producer.abort_transaction(20)
    consumer = ck.Consumer({"bootstrap.servers": kafkawire_broker.bootstrap_servers, "group.id": "txn-confluent",
                            "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        values = []

        def at_end() -> bool:
            values.extend(m.value() for m in consumer.consume(10, 0.2) if m.error() is None)
            position, = consumer.position([ck.TopicPartition(topic, 0)])
            return position.offset >= 4               # past both transactions and their markers
        wait_until(at_end, "the read_committed consumer at the end")
        assert values == [b"committed"]
    finally:
        consumer.close()
