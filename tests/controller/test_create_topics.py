"""CreateTopics on the active controller: the records Kafka writes, and its refusals."""
import random
import uuid

from kafkawire.controller.placement import InvalidReplicationFactor, place
from kafkawire.messages.create_topics_request import (CreatableReplicaAssignment, CreatableTopic,
                                                      CreatableTopicConfig, CreateTopicsRequest)
from kafkawire.messages.create_topics_response import CreateTopicsResponse
from kafkawire.metadata import decode_metadata_record
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, FakeQuorum, Running, add_controller, broker_request, heartbeat, run, until


def topic(name, partitions=-1, rf=-1, configs=(), assignments=()):
    return CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf,
                          configs=[CreatableTopicConfig(name=k, value=v) for k, v in configs],
                          assignments=[CreatableReplicaAssignment(partition_index=i, broker_ids=list(b))
                                       for i, b in assignments])


def scenario(requests, *, brokers=(), fenced=(), mv=29):
    """Start an active controller with ``brokers`` registered (those in ``fenced`` stay fenced),
    send ``requests``; return (responses, records written by them, controller)."""
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1, mv=mv)

    async def go():
        async with Running(leader):
            quorum.elect(1)
            await until(lambda: leader.is_active() and (leader.registration.registered() or mv < 15), "activation")
            for b in brokers:
                reply = await leader.handlers()[62].handle(Ctx(0), broker_request(b, log_dirs=[uuid.UUID(int=1000 + b)]))
                if b not in fenced:
                    await leader.handlers()[63].handle(Ctx(0), heartbeat(b, reply.broker_epoch, quorum.end_offset))
            mark = len(quorum.entries)
            responses = [await leader.handlers()[19].handle(Ctx(0), r) for r in requests]
            records = [decode_metadata_record(v) for _, _, v in quorum.entries[mark:]]
            return responses, [r for r in records if r.type_name != "NoOpRecord"]
    responses, records = run(go())
    return responses, records, leader


def results(response):
    return [(t.name, Errors.for_code(t.error_code).name, t.error_message) for t in response.topics]


def test_a_topic_is_a_topic_record_its_configs_and_a_partition_record_per_partition():
    request = CreateTopicsRequest(topics=[topic("orders", 3, 2, configs=[("segment.bytes", "104857600"),
                                                                          ("cleanup.policy", "compact"),
                                                                          ("compression.type", "producer")])])
    (response,), records, leader = scenario([request], brokers=(1, 2, 3))
    (result,) = response.topics
    assert (result.name, result.error_code, result.error_message) == ("orders", 0, None)
    assert [(r.type_name, r.version) for r in records] == (
        [("TopicRecord", 0)] + [("ConfigRecord", 0)] * 3 + [("PartitionRecord", 2)] * 3)
    assert records[0].message.topic_id == result.topic_id and records[0].message.name == "orders"
    # ConfigRecords in Kafka's HashMap order (__consumer_offsets in the reference logs has these three).
    assert [r.message.name for r in records[1:4]] == ["compression.type", "cleanup.policy", "segment.bytes"]
    assert all((r.message.resource_type, r.message.resource_name) == (2, "orders") for r in records[1:4])
    leaders = []
    for pid, r in enumerate(records[4:]):
        m = r.message
        assert (m.partition_id, m.topic_id, len(m.replicas), m.isr, m.leader, m.leader_epoch, m.partition_epoch) == (
            pid, result.topic_id, 2, m.replicas, m.replicas[0], 0, 0)
        assert m.directories == [uuid.UUID(int=1000 + b) for b in m.replicas]
        assert m.eligible_leader_replicas is None and m.last_known_elr is None
        leaders.append(m.leader)
    assert len(set(leaders)) == 3                  # leaders striped over the brokers
    assert leader.image.topics_by_name["orders"].id == result.topic_id
    assert leader.image.configs[(2, "orders")]["cleanup.policy"] == "compact"


def test_record_versions_follow_the_metadata_version():
    request = CreateTopicsRequest(topics=[topic("t", 1, 1)])
    for mv, version, has_dirs in ((14, 0, False), (20, 1, True), (29, 2, True)):
        (_,), records, _ = scenario([request], brokers=(1,), mv=mv)
        partition = records[-1]
        assert partition.version == version
        assert (partition.message.directories is not None and partition.message.directories != []) == has_dirs


def test_defaults_validate_only_duplicates_names_and_existing_topics():
    first = CreateTopicsRequest(topics=[topic("exists")])
    check = CreateTopicsRequest(topics=[topic("dup"), topic("dup"), topic("exists"), topic("bad name"),
                                        topic("a.b"), topic("fine"), topic("__cluster_metadata"), topic(""),
                                        topic("x" * 250), topic("..")], validate_only=True)
    (created, checked), records, leader = scenario([first, check], brokers=(1,))
    assert results(created) == [("exists", "NONE", None)]
    assert [r.type_name for r in records] == ["TopicRecord", "PartitionRecord"]     # only the first request wrote
    assert results(checked) == [
        ("exists", "TOPIC_ALREADY_EXISTS", "Topic 'exists' already exists."),
        ("bad name", "INVALID_TOPIC_EXCEPTION", "Topic name is invalid: 'bad name' contains one or more characters "
                                               "other than ASCII alphanumerics, '.', '_' and '-'"),
        ("a.b", "NONE", None),
        ("fine", "NONE", None),
        ("", "INVALID_TOPIC_EXCEPTION", "Topic name is invalid: the empty string is not allowed"),
        ("x" * 250, "INVALID_TOPIC_EXCEPTION", "Topic name is invalid: the length of '" + "x" * 250 + "' is longer "
                                               "than the max allowed length 249"),
        ("..", "INVALID_TOPIC_EXCEPTION", "Topic name is invalid: '..' is not allowed"),
        ("dup", "INVALID_REQUEST", "Duplicate topic name."),
        ("__cluster_metadata", "INVALID_REQUEST", "Creation of internal topic __cluster_metadata is prohibited."),
    ]
    assert "fine" not in leader.image.topics_by_name and "a.b" not in leader.image.topics_by_name


def test_names_that_collide_in_metrics_are_refused():
    (_, second), _, _ = scenario([CreateTopicsRequest(topics=[topic("a_b")]),
                                  CreateTopicsRequest(topics=[topic("a.b")])], brokers=(1,))
    assert results(second) == [("a.b", "INVALID_TOPIC_EXCEPTION", "Topic 'a.b' collides with existing topic: a_b")]


def test_replication_factor_and_partition_refusals():
    requests = [CreateTopicsRequest(topics=[topic("t1", 1, 2)]), CreateTopicsRequest(topics=[topic("t2", 1, 0)]),
                CreateTopicsRequest(topics=[topic("t3", 0, 1)])]
    responses, records, _ = scenario(requests, brokers=(1,))
    assert [results(r)[0][1:] for r in responses] == [
        ("INVALID_REPLICATION_FACTOR", "Unable to replicate the partition 2 time(s): The target replication factor "
                                       "of 2 cannot be reached because only 1 broker(s) are registered or some "
                                       "brokers have all their log directories cordoned."),
        ("INVALID_REPLICATION_FACTOR", "Replication factor must be larger than 0, or -1 to use the default value."),
        ("INVALID_PARTITIONS", "Number of partitions was set to an invalid non-positive value."),
    ]
    assert records == []


def test_without_unfenced_brokers_nothing_can_be_placed():
    request = CreateTopicsRequest(topics=[topic("t", 3, 1)])
    for brokers, fenced in (((), ()), ((1, 2), (1, 2))):
        (response,), records, _ = scenario([request], brokers=brokers, fenced=fenced)
        assert results(response) == [("t", "INVALID_REPLICATION_FACTOR", "Unable to replicate the partition 1 "
                                                                         "time(s): All brokers are currently fenced, "
                                                                         "or have all their log directories "
                                                                         "cordoned.")]
        assert records == []


def test_manual_assignments():
    good = CreateTopicsRequest(topics=[topic("m", assignments=[(0, (2, 1)), (1, (1, 2))])])
    bad = [
        (topic("b1", 1, -1, assignments=[(0, (1,))]),
         ("INVALID_REQUEST", "A manual partition assignment was specified, but numPartitions was not set to -1.")),
        (topic("b2", assignments=[(0, (1, 9))]),
         ("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes broker 9, but no such broker is "
                                        "registered.")),
        (topic("b3", assignments=[(0, (1, 1))]),
         ("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes the broker 1 more than once.")),
        (topic("b4", assignments=[(0, (1,)), (1, (1, 2))]),
         ("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes a partition with 2 replica(s), but "
                                        "this is not consistent with previous partitions, which have 1 replica(s).")),
        (topic("b5", assignments=[(1, (1,))]),
         ("INVALID_REPLICA_ASSIGNMENT", "partitions should be a consecutive 0-based integer sequence")),
        (topic("b6", assignments=[(0, (3,))]),
         ("INVALID_REPLICA_ASSIGNMENT", "All brokers specified in the manual partition assignment for partition 0 "
                                        "are fenced or in controlled shutdown.")),
    ]
    requests = [good] + [CreateTopicsRequest(topics=[t]) for t, _ in bad]
    responses, records, _ = scenario(requests, brokers=(1, 2, 3), fenced=(3,))
    assert results(responses[0]) == [("m", "NONE", None)]
    assert [(r.message.replicas, r.message.leader) for r in records if r.type_name == "PartitionRecord"] == [
        ([2, 1], 2), ([1, 2], 1)]
    assert [results(r)[0][1:] for r in responses[1:]] == [expected for _, expected in bad]


def test_topic_config_refusals():
    requests = [CreateTopicsRequest(topics=[topic("c1", configs=[("no.such.config", "1")])]),
                CreateTopicsRequest(topics=[topic("c2", configs=[("retention.ms", None)])])]
    responses, records, _ = scenario(requests, brokers=(1,))
    assert [results(r)[0][1:] for r in responses] == [
        ("INVALID_CONFIG", "Unknown topic config name: no.such.config"),
        ("INVALID_CONFIG", "Null value not supported for topic configs: retention.ms")]
    assert records == []


def test_a_follower_answers_not_controller_for_every_topic():
    quorum = FakeQuorum()
    add_controller(quorum, 1)
    follower = add_controller(quorum, 2)
    quorum.elect(1)
    request = CreateTopicsRequest(topics=[topic("a"), topic("b")])
    response = run(follower.handlers()[19].handle(Ctx(0), request))
    assert results(response) == [("a", "NOT_CONTROLLER", "The active controller appears to be node 1."),
                                 ("b", "NOT_CONTROLLER", "The active controller appears to be node 1.")]


def test_the_response_encodes_in_every_version_kafka_4_serves():
    (response,), _, _ = scenario([CreateTopicsRequest(topics=[topic("v")])], brokers=(1,))
    for version in range(2, 8):
        decoded = CreateTopicsResponse.decode(response.encode(version), version)
        assert decoded.topics[0].name == "v" and decoded.topics[0].error_code == 0
    assert CreateTopicsResponse.decode(response.encode(7), 7).topics[0].topic_id == response.topics[0].topic_id


def test_placement_puts_leaders_on_unfenced_brokers_and_spreads_them():
    rng = random.Random(7)
    placements = place(6, 3, [1, 2, 3], [4], rng)
    assert all(len(set(p)) == 3 and p[0] in (1, 2, 3) for p in placements)
    assert {p[0] for p in placements} == {1, 2, 3}
    assert place(2, 4, [1, 2, 3], [4], rng)[0][3] == 4      # fenced brokers only when needed
    try:
        place(1, -1, [1], [], rng)
    except InvalidReplicationFactor as exc:
        assert str(exc) == "Invalid replication factor -1: the replication factor must be positive."
    else:
        raise AssertionError("a negative replication factor was placed")
