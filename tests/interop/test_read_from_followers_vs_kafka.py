"""Reading from followers (KIP-392) judged by a real Apache Kafka 4.3.1 broker: one combined
kafkawire node (id 1, rack ``rack-kafkawire``) and one Kafka broker on it (id 2, rack ``rack-kafka``),
both with ``replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector``.
Partition ``kafka-leads`` (replicas [2, 1]) is led by Kafka and followed by kafkawire,
``kafkawire-leads`` (replicas [1, 2]) the other way round, each with the same records. The same
consumer requests go to Kafka and to kafkawire in the same role and must be answered alike: the
leader's preferred read replica (no records) for a client in the follower's rack, its records for
a client in its own rack; a follower's records below its high watermark for Fetch v11+, nothing at
its log end, OFFSET_OUT_OF_RANGE past it, UNKNOWN_LEADER_EPOCH for a newer leader epoch,
NOT_LEADER_OR_FOLLOWER for Fetch v10 and for ListOffsets (the leader epoch checked first).
Leader discovery (KIP-951) likewise: a Produce v10+ to the follower, and another replica's Fetch v16
there, are refused naming the current leader and its epoch; the Produce answer carries the leader's
endpoint (its address and rack), the follower's Fetch answer none. And
Kafka's Java consumer (ConsoleConsumer) with ``client.rack`` set to kafkawire's rack reads every
record of Kafka's partition: Kafka's leader sends that client to kafkawire and serves it none, so
kafkawire served them. One broker JVM and one tool JVM."""
from __future__ import annotations

from kafkawire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.fetch_request import ReplicaState
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import free_ports
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch

from tests.broker.wire import call
from tests.interop.kafka_on_kafkawire import KafkaOnKafkawire

WAIT_S = 60
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
RACKS = {1: "rack-kafkawire", 2: "rack-kafka"}
RECORDS = 12            # _try_produce: three batches of four


def _try_produce(target, topic: str) -> bool:
    """Three acks=1 produces of four records, once the leader accepts them (its metadata may lag
    the topic's creation)."""
    for n in range(3):
        records = build_batch([(b"k%d-%d" % (n, i), b"v" * (40 + i)) for i in range(4)])
        response = call(target, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name=topic, partition_data=[PartitionProduceData(index=0, records=records)])]), 9)
        if response.responses[0].partition_responses[0].error_code != Errors.NONE:
            return False
    return True


def _fetch(target, topic: str, *, version=12, offset=0, rack="", epoch=-1, committed=False):
    request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, rack_id=rack,
                           isolation_level=1 if committed else 0, session_id=0, session_epoch=-1,
                           topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                               partition=0, fetch_offset=offset, partition_max_bytes=1 << 20,
                               current_leader_epoch=epoch)])])
    return call(target, request, version).responses[0].partitions[0]


def _seen(data, leader: int) -> tuple:
    """An answer with what may differ between both implementations' logs left out: the record
    values instead of the batch bytes, the preferred replica as "the other broker"."""
    preferred = {-1: "none", 3 - leader: "the follower"}.get(data.preferred_read_replica, data.preferred_read_replica)
    values = [bytes(r.value) for batch in iter_batches(data.records or b"") for r in batch]
    return (Errors.for_code(data.error_code).name, data.high_watermark, data.last_stable_offset,
            data.log_start_offset, preferred, values, data.aborted_transactions)


def _leader_hints(target, at: dict, leader: int, topic: str, topic_id) -> dict:
    """KIP-951's fields in the follower's answers to a Produce v10 and v13 (by topic id) and to the
    leader's own Fetch v16 (another replica's fetch there): the error, the current leader ("the
    leader" when it is), its epoch, and each endpoint as (node, whether it is that broker's address,
    whether it is that broker's rack)."""
    def named(broker_id):
        return "the leader" if broker_id == leader else broker_id

    def seen(response, p):
        endpoints = [(named(e.node_id), (e.host, e.port) == at.get(e.node_id), e.rack == RACKS.get(e.node_id))
                     for e in response.node_endpoints]
        return (Errors.for_code(p.error_code).name, named(p.current_leader.leader_id), p.current_leader.leader_epoch,
                endpoints)
    answers = {}
    for version in (10, 13):
        response = call(target, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name=topic if version < 13 else "", topic_id=topic_id, partition_data=[PartitionProduceData(
                index=0, records=build_batch([(b"k", b"v")]))])]), version)
        answers[f"produce v{version}"] = seen(response, response.responses[0].partition_responses[0])
    request = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                           session_epoch=-1, replica_state=ReplicaState(replica_id=leader, replica_epoch=-1),
                           topics=[FetchTopic(topic_id=topic_id, partitions=[FetchPartition(
                               partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    response = call(target, request, 16)
    answers["another replica's fetch v16"] = seen(response, response.responses[0].partitions[0])
    return answers


def _list_offsets_error(target, topic: str, epoch: int = -1) -> str:
    response = call(target, ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=topic, partitions=[
        ListOffsetsPartition(partition_index=0, timestamp=-1, current_leader_epoch=epoch)])]), 7)
    return Errors.for_code(response.topics[0].partitions[0].error_code).name


def test_kafkawire_answers_follower_reads_and_preferred_replicas_as_kafka_does(kafka_libs, tmp_path):
    port, = free_ports(1)
    cluster = KafkaOnKafkawire(tmp_path, controllers=1, brokers=1, controller_properties={
        "process.roles": "broker,controller", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "replica.fetch.backoff.ms": "200", "offsets.topic.replication.factor": "1",
        "broker.rack": RACKS[1], "replica.selector.class": SELECTOR},
        broker_properties={"broker.rack": RACKS[2], "replica.selector.class": SELECTOR})
    cluster.quorum.node_properties[1] = {"listeners": f"PLAINTEXT://127.0.0.1:{port},"
                                                      f"CONTROLLER://127.0.0.1:{cluster.quorum.ports[1]}"}
    try:
        cluster.start(timeout_s=120)
        cluster.wait_until(lambda: set(cluster.describe_cluster()) == {1, 2}, WAIT_S, "both brokers unfenced")
        response = call(("127.0.0.1", port), CreateTopicsRequest(timeout_ms=10_000, topics=[
            CreatableTopic(name=name, num_partitions=-1, replication_factor=-1,
                           assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=replicas)])
            for name, replicas in (("kafka-leads", [2, 1]), ("kafkawire-leads", [1, 2]))]))
        assert [t.error_code for t in response.topics] == [Errors.NONE, Errors.NONE]
        topic_ids = {t.name: t.topic_id for t in response.topics}
        host, kafka_port = cluster.brokers[2].broker_address.rsplit(":", 1)
        at = {1: ("127.0.0.1", port), 2: (host, int(kafka_port))}
        topics = {2: "kafka-leads", 1: "kafkawire-leads"}           # leader -> its topic
        for leader, topic in topics.items():
            cluster.wait_until(lambda: _try_produce(at[leader], topic), WAIT_S, f"broker {leader} to lead {topic}")
        for leader, topic in topics.items():       # the follower knows the high watermark one fetch later
            cluster.wait_until(lambda: _fetch(at[3 - leader], topic).high_watermark == RECORDS, WAIT_S,
                               f"the follower of {topic} to know the high watermark")

        cases = {
            "leader, client in the follower's rack": ("leader", lambda b: {"rack": RACKS[3 - b]}),
            "leader, client in its own rack": ("leader", lambda b: {"rack": RACKS[b]}),
            "follower, v12": ("follower", lambda b: {"rack": RACKS[b]}),
            "follower, read_committed": ("follower", lambda b: {"committed": True}),
            "follower, at its log end": ("follower", lambda b: {"offset": RECORDS}),
            "follower, past its log end": ("follower", lambda b: {"offset": RECORDS + 1}),
            "follower, a newer leader epoch": ("follower", lambda b: {"epoch": 5}),
            "follower, v10": ("follower", lambda b: {"version": 10}),
        }
        for name, (role, fields) in cases.items():
            answers = {}
            for leader, topic in topics.items():
                broker = leader if role == "leader" else 3 - leader
                answers[broker] = _seen(_fetch(at[broker], topic, **fields(broker)), leader)
            assert answers[1] == answers[2], f"{name}: kafkawire {answers[1]} vs Kafka {answers[2]}"
            print(f"{name}: {answers[2][:5]} {len(answers[2][5])} records")
        assert _seen(_fetch(at[2], "kafka-leads", rack=RACKS[1]), 2)[4] == "the follower"     # not vacuous
        # Kafka's Java consumer in kafkawire's rack reads Kafka's partition: every record from kafkawire,
        # as Kafka's leader names kafkawire (in sync, holding every offset) to that client and serves it none
        result = cluster.tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
                              cluster.bootstrap_servers(), "--topic", "kafka-leads", "--partition", "0",
                              "--offset", "earliest", "--max-messages", str(RECORDS), "--timeout-ms", "30000",
                              "--command-property", f"client.rack={RACKS[1]}", timeout=120)
        assert len(result.stdout.splitlines()) == RECORDS, (result.stdout[-2000:], result.stderr[-3000:])
        # KIP-951: the follower names the leader (and, to a producer, its endpoint on this listener)
        hints = {leader: _leader_hints(at[3 - leader], at, leader, topic, topic_ids[topic])
                 for leader, topic in topics.items()}
        assert hints[1] == hints[2], f"leader hints: kafkawire {hints[2]} vs Kafka {hints[1]}"
        print(f"leader hints: {hints[1]}")
        assert hints[2]["produce v10"][:2] == ("NOT_LEADER_OR_FOLLOWER", "the leader")        # not vacuous
        assert hints[2]["produce v10"][3] == [("the leader", True, True)]
        for epoch, error in ((-1, "NOT_LEADER_OR_FOLLOWER"), (5, "UNKNOWN_LEADER_EPOCH")):    # the epoch first
            assert _list_offsets_error(at[1], "kafka-leads", epoch) == \
                _list_offsets_error(at[2], "kafkawire-leads", epoch) == error
    finally:
        cluster.stop()
