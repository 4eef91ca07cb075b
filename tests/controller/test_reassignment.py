"""AlterPartitionReassignments and ListPartitionReassignments as Kafka 4.3.1's
ReplicationControlManager does them: the PartitionChangeRecord with adding and removing
replicas, completion once the leader's AlterPartition puts every adding replica in the ISR
(the removed leader hands over: NEW_LEADER_ELECTED), cancelling, and the refusals."""
from kafkawire.messages.alter_partition_reassignments_request import (AlterPartitionReassignmentsRequest,
                                                                      ReassignablePartition, ReassignableTopic)
from kafkawire.messages.create_topics_request import (CreatableReplicaAssignment, CreatableTopic,
                                                      CreateTopicsRequest)
from kafkawire.messages.list_partition_reassignments_request import (ListPartitionReassignmentsRequest,
                                                                     ListPartitionReassignmentsTopics)
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, run
from .test_alter_partition import alter
from .test_brokers import call, new_records, register_unfenced, start


def reassign(*targets, allow_rf_change=True):
    """targets: (topic, partition, replicas or None)"""
    topics = {}
    for name, pid, replicas in targets:
        topics.setdefault(name, []).append(ReassignablePartition(partition_index=pid, replicas=replicas))
    return AlterPartitionReassignmentsRequest(timeout_ms=5000, allow_replication_factor_change=allow_rf_change,
                                              topics=[ReassignableTopic(name=n, partitions=p) for n, p in topics.items()])


def outcome(response):
    return [(t.name, p.partition_index, Errors.for_code(p.error_code).name, p.error_message)
            for t in response.responses for p in t.partitions]


async def setup():
    quorum, leader, running = await start(mv=30)
    for b in (1, 2, 3, 4):
        await register_unfenced(quorum, leader, b)
    created = await call(leader, 19, CreateTopicsRequest(timeout_ms=5000, topics=[CreatableTopic(
        name="t", num_partitions=-1, replication_factor=-1,
        assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2]),
                     CreatableReplicaAssignment(partition_index=1, broker_ids=[2, 3])])]))
    assert created.topics[0].error_code == 0
    return quorum, leader, running, created.topics[0].topic_id


def test_a_reassignment_adds_then_completes_when_the_isr_catches_up():
    async def go():
        quorum, leader, running, topic_id = await setup()
        async with running:
            mark = quorum.end_offset
            response = await leader.handlers()[45].handle(Ctx(1), reassign(("t", 0, [3, 2])))
            assert outcome(response) == [("t", 0, "NONE", None)]
            (_, record), = new_records(quorum, mark)
            m = record.message
            # target first, then the replicas being removed; the ISR and leader unchanged (no replica leaves yet,
            # so no leader epoch bump: leader -2)
            assert (m.replicas, m.removing_replicas, m.adding_replicas, m.isr, m.leader) == ([3, 2, 1], [1], [3], None, -2)
            partition = leader.image.topics_by_id[topic_id].partitions[0]
            assert (partition.leader_epoch, partition.partition_epoch) == (0, 1)

            listed = await leader.handlers()[46].handle(Ctx(0), ListPartitionReassignmentsRequest(timeout_ms=5000))
            assert [(t.name, [(p.partition_index, p.replicas, p.adding_replicas, p.removing_replicas)
                               for p in t.partitions]) for t in listed.topics] == [("t", [(0, [3, 2, 1], [3], [1])])]
            named = await leader.handlers()[46].handle(Ctx(0), ListPartitionReassignmentsRequest(
                timeout_ms=5000, topics=[ListPartitionReassignmentsTopics(name="t", partition_indexes=[1])]))
            assert named.topics == []                   # partition 1 is not moving

            mark = quorum.end_offset
            answer = await alter(leader, 1, topic_id, 0, [1, 2, 3])     # the leader: broker 3 caught up
            assert answer.topics[0].partitions[0].error_code == Errors.NEW_LEADER_ELECTED
            (_, record), = new_records(quorum, mark)
            m = record.message
            assert (m.replicas, m.removing_replicas, m.adding_replicas, m.isr, m.leader) == ([3, 2], [], [], [2, 3], 3)
            partition = leader.image.topics_by_id[topic_id].partitions[0]
            assert (partition.replicas, partition.isr, partition.leader) == ((3, 2), (2, 3), 3)
            assert len(partition.directories) == 2
            listed = await leader.handlers()[46].handle(Ctx(0), ListPartitionReassignmentsRequest(timeout_ms=5000))
            assert listed.topics == []
    run(go())


def test_reordering_in_sync_replicas_completes_at_once():
    async def go():
        quorum, leader, running, topic_id = await setup()
        async with running:
            mark = quorum.end_offset
            response = await leader.handlers()[45].handle(Ctx(1), reassign(("t", 0, [2, 1])))
            assert outcome(response) == [("t", 0, "NONE", None)]
            (_, record), = new_records(quorum, mark)
            assert (record.message.replicas, record.message.leader, record.message.adding_replicas) == ([2, 1], -2, None)
    run(go())


def test_cancelling_reverts_to_the_original_replicas():
    async def go():
        quorum, leader, running, topic_id = await setup()
        async with running:
            await leader.handlers()[45].handle(Ctx(1), reassign(("t", 0, [3, 4])))
            partition = leader.image.topics_by_id[topic_id].partitions[0]
            assert (partition.replicas, partition.adding_replicas, partition.removing_replicas) == ((3, 4, 1, 2),
                                                                                                    (3, 4), (1, 2))
            mark = quorum.end_offset
            response = await leader.handlers()[45].handle(Ctx(1), reassign(("t", 0, None)))
            assert outcome(response) == [("t", 0, "NONE", None)]
            (_, record), = new_records(quorum, mark)
            assert (record.message.replicas, record.message.adding_replicas, record.message.removing_replicas) == (
                [1, 2], [], [])
            again = await leader.handlers()[45].handle(Ctx(1), reassign(("t", 0, None)))
            assert outcome(again) == [("t", 0, "NO_REASSIGNMENT_IN_PROGRESS", None)]
    run(go())


def test_refusals():
    async def go():
        quorum, leader, running, topic_id = await setup()
        async with running:
            mark = quorum.end_offset
            response = await leader.handlers()[45].handle(Ctx(1), reassign(
                ("missing", 0, [1]), ("t", 7, [1]), ("t", 0, []), ("t", 1, [9, 1])))
            assert outcome(response) == [
                ("missing", 0, "UNKNOWN_TOPIC_OR_PARTITION", "Unable to find a topic named missing."),
                ("t", 7, "UNKNOWN_TOPIC_OR_PARTITION", "Unable to find partition t:7."),
                ("t", 0, "INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes an empty replica list."),
                ("t", 1, "INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes broker 9, but no such "
                                                       "broker is registered."),
            ]
            fixed = await leader.handlers()[45].handle(Ctx(1), reassign(("t", 0, [1, 2, 3]), allow_rf_change=False))
            assert outcome(fixed) == [("t", 0, "INVALID_REPLICATION_FACTOR", "The replication factor is changed from 2 to 3")]
            assert new_records(quorum, mark) == []
    run(go())


def test_the_records_directories_keep_the_staying_replicas_and_give_a_new_one_its_brokers():
    """The directories a start and a cancel write (compared as the registration's ints, made
    UUIDs only for the record): a replica that stays keeps its directory, a new one gets its
    broker's only directory, the cancel keeps the staying replicas' own (in the order the revert
    leaves them: the replicas less the adding one)."""
    async def go():
        quorum, leader, running, topic_id = await setup()
        async with running:
            before = leader.image.topics_by_id[topic_id].partitions[0].directories        # replicas 1, 2
            broker_3 = leader.image.brokers[3].directories
            assert len(broker_3) == 1 and broker_3[0] not in before
            mark = quorum.end_offset
            await leader.handlers()[45].handle(Ctx(1), reassign(("t", 0, [3, 2])))
            (_, record), = new_records(quorum, mark)
            assert record.message.replicas == [3, 2, 1]
            assert record.message.directories == [broker_3[0], before[1], before[0]]
            mark = quorum.end_offset
            await leader.handlers()[45].handle(Ctx(1), reassign(("t", 0, None)))
            (_, record), = new_records(quorum, mark)
            assert (record.message.replicas, record.message.directories) == ([2, 1], [before[1], before[0]])
            assert leader.image.topics_by_id[topic_id].partitions[0].directories == (before[1], before[0])
    run(go())
