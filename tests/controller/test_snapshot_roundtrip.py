"""snapshot_records -> a new controller's on_snapshot_loaded -> the same metadata, and the
same snapshot again; a follower that replayed the log agrees with the leader."""
import uuid

from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.metadata import decode_metadata_record
from kafkawire.raft.types import OffsetAndEpoch

from .harness import Ctx, FakeQuorum, Running, add_controller, broker_request, heartbeat, run, until


def busy_cluster():
    """Two controllers, three brokers (one fenced again), two topics with configs."""
    quorum = FakeQuorum()
    leader, follower = add_controller(quorum, 1), add_controller(quorum, 2)

    async def go():
        async with Running(leader, follower):
            quorum.elect(1)
            await until(lambda: leader.is_active() and follower.registration.registered(), "registrations")
            call = lambda key, req: leader.handlers()[key].handle(Ctx(0), req)
            for b in (1, 2, 3):
                reply = await call(62, broker_request(b, log_dirs=[uuid.uuid4()]))
                await call(63, heartbeat(b, reply.broker_epoch, quorum.end_offset))
            await call(19, CreateTopicsRequest(topics=[
                CreatableTopic(name="orders", num_partitions=4, replication_factor=3,
                               configs=[CreatableTopicConfig(name="retention.ms", value="1000")]),
                CreatableTopic(name="audit", num_partitions=1, replication_factor=2)]))
            await call(63, heartbeat(3, leader.image.brokers[3].epoch, quorum.end_offset, want_fence=True))
    run(go())
    return quorum, leader, follower


def test_a_snapshot_rebuilds_the_same_metadata_and_the_same_snapshot():
    quorum, leader, follower = busy_cluster()
    records = leader.snapshot_records()
    names = [decode_metadata_record(v).type_name for v in records]
    assert names[0] == "FeatureLevelRecord" and "NoOpRecord" not in names
    # Kafka's section order: features, brokers, controllers, topics (topic then its partitions), configs.
    order = ["FeatureLevelRecord", "RegisterBrokerRecord", "RegisterControllerRecord", "TopicRecord", "ConfigRecord"]
    firsts = [names.index(n) for n in order]
    assert firsts == sorted(firsts)
    assert names.count("RegisterBrokerRecord") == 3 and names.count("PartitionRecord") == 5

    quorum2 = FakeQuorum()
    restored = add_controller(quorum2, 3)
    restored.on_snapshot_loaded(OffsetAndEpoch(quorum.epoch, quorum.end_offset), records)
    assert restored.applied_offset == quorum.end_offset - 1
    assert restored.snapshot_records() == records
    a, b = leader.image, restored.image
    assert (a.metadata_version, a.finalized_features, a.brokers, a.controllers, a.configs) == (
        b.metadata_version, b.finalized_features, b.brokers, b.controllers, b.configs)
    assert {n: (t.id, t.partitions) for n, t in a.topics_by_name.items()} == \
        {n: (t.id, t.partitions) for n, t in b.topics_by_name.items()}
    assert b.brokers[3].fenced and not b.brokers[1].fenced
    # The broker record offsets come back as the snapshot's last offset, as Kafka replays them.
    assert set(restored.state.register_broker_offsets.values()) == {quorum.end_offset - 1}


def test_a_follower_replaying_the_log_holds_what_the_leader_holds():
    quorum, leader, follower = busy_cluster()
    assert follower.snapshot_records() == leader.snapshot_records()
    assert follower.applied_offset == leader.applied_offset == quorum.end_offset - 1
    assert follower.state.problems == [] and leader.state.problems == []
