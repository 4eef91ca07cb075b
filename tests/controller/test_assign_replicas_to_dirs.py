"""AssignReplicasToDirs (API 73) as Kafka 4.3.1's handleAssignReplicasToDirs answers a broker with
several log directories: the replica's directory set by a PartitionChangeRecord (v2 at
4.3-IV0, Directories only), nothing written when it is already there, per-partition errors,
and a replica assigned to an offline directory leaving the ISR and leadership."""
import uuid

from kafkawire.messages.assign_replicas_to_dirs_request import (AssignReplicasToDirsRequest, DirectoryData,
                                                                PartitionData, TopicData)
from kafkawire.metadata.registrations import UNASSIGNED
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, run
from .test_brokers import call, create, new_records, register_unfenced, start


def request(leader, broker_id, directory, topic_id, pids, epoch=None):
    return AssignReplicasToDirsRequest(
        broker_id=broker_id, broker_epoch=leader.image.brokers[broker_id].epoch if epoch is None else epoch,
        directories=[DirectoryData(id=directory, topics=[TopicData(
            topic_id=topic_id, partitions=[PartitionData(partition_index=p) for p in pids])])])


async def assign(leader, *args, **kwargs):
    return await leader.handlers()[73].handle(Ctx(0), request(leader, *args, **kwargs))


def errors(response):
    return [p.error_code for d in response.directories for t in d.topics for p in t.partitions]


def test_a_two_directory_broker_places_its_replicas_and_a_repeat_writes_nothing():
    async def go():
        quorum, leader, running = await start(30)
        async with running:
            dirs = [uuid.uuid4(), uuid.uuid4()]
            await register_unfenced(quorum, leader, 1, log_dirs=dirs)
            await register_unfenced(quorum, leader, 2)
            topic_id = await create(leader, "jbod", partitions=2, rf=2)
            parts = leader.image.topics_by_id[topic_id].partitions
            slot = {pid: list(p.replicas).index(1) for pid, p in parts.items()}
            assert all(p.directories[slot[pid]] == UNASSIGNED for pid, p in parts.items())   # two dirs: unassigned
            mark = quorum.end_offset
            response = await assign(leader, 1, dirs[1], topic_id, [0, 1])
            assert (response.error_code, errors(response)) == (0, [0, 0])
            records = new_records(quorum, mark)
            assert [(r.type_name, r.version) for _, r in records] == [("PartitionChangeRecord", 2)] * 2
            for _, r in records:
                m = r.message
                expected = list(parts[m.partition_id].directories)
                expected[slot[m.partition_id]] = dirs[1]
                assert (m.directories, m.leader, m.isr, m.eligible_leader_replicas) == (expected, -2, None, None)
            now = leader.image.topics_by_id[topic_id].partitions
            assert all(p.directories[slot[pid]] == dirs[1] for pid, p in now.items())
            mark = quorum.end_offset
            again = await assign(leader, 1, dirs[1], topic_id, [0, 1])
            assert errors(again) == [0, 0] and new_records(quorum, mark) == []
    run(go())


def test_refusals_per_partition_and_for_the_request():
    async def go():
        quorum, leader, running = await start(30)
        async with running:
            dirs = [uuid.uuid4(), uuid.uuid4()]
            await register_unfenced(quorum, leader, 1, log_dirs=dirs)
            await register_unfenced(quorum, leader, 2)
            topic_id = await create(leader, "jbod", partitions=1, rf=1)
            holder = leader.image.topics_by_id[topic_id].partitions[0].replicas[0]
            other = 2 if holder == 1 else 1
            mark = quorum.end_offset
            assert errors(await assign(leader, 1, dirs[0], uuid.uuid4(), [0])) == [Errors.UNKNOWN_TOPIC_ID]
            assert errors(await assign(leader, 1, dirs[0], topic_id, [7])) == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
            assert errors(await assign(leader, other, dirs[0], topic_id, [0])) == [Errors.NOT_LEADER_OR_FOLLOWER]
            stale = await assign(leader, 1, dirs[0], topic_id, [0], epoch=0)
            assert (stale.error_code, stale.directories) == (Errors.STALE_BROKER_EPOCH, [])
            assert new_records(quorum, mark) == []
    run(go())


def test_a_replica_assigned_to_an_offline_directory_leaves_the_isr_and_leadership():
    async def go():
        quorum, leader, running = await start(30)
        async with running:
            dirs = [uuid.uuid4(), uuid.uuid4()]
            await register_unfenced(quorum, leader, 1, log_dirs=dirs)
            await register_unfenced(quorum, leader, 2)
            await register_unfenced(quorum, leader, 3)
            topic_id = await create(leader, "jbod", partitions=3, rf=3)
            led = [pid for pid, p in leader.image.topics_by_id[topic_id].partitions.items() if p.leader == 1]
            assert led, "the placer gives every broker a leadership"
            lost = uuid.uuid4()                 # not a directory broker 1 registered: offline
            mark = quorum.end_offset
            response = await assign(leader, 1, lost, topic_id, led)
            assert errors(response) == [0] * len(led)
            names = [r.type_name for _, r in new_records(quorum, mark)]
            assert names == ["PartitionChangeRecord"] * (2 * len(led))      # the directory, then the ISR
            for pid in led:
                p = leader.image.topics_by_id[topic_id].partitions[pid]
                assert p.leader != 1 and 1 not in p.isr and lost in p.directories
    run(go())


def test_a_heartbeats_offline_directory_moves_leadership_off_its_replicas_and_unlists_it():
    """handleDirectoriesOffline: the replicas of broker 1 assigned to the failed directory leave
    the ISR and leadership, those in its other directory keep theirs, and the registration lists
    the directory left online (a BrokerRegistrationChangeRecord v2); a repeat writes nothing."""
    from .harness import heartbeat

    async def go():
        quorum, leader, running = await start(30)
        async with running:
            dirs = [uuid.uuid4(), uuid.uuid4()]
            epoch = await register_unfenced(quorum, leader, 1, log_dirs=dirs)
            await register_unfenced(quorum, leader, 2)
            await register_unfenced(quorum, leader, 3)
            topic_id = await create(leader, "jbod", partitions=6, rf=3)
            parts = leader.image.topics_by_id[topic_id].partitions
            failed = [pid for pid in parts if pid % 2 == 0]
            await assign(leader, 1, dirs[0], topic_id, failed)
            await assign(leader, 1, dirs[1], topic_id, [pid for pid in parts if pid % 2 == 1])
            mark = quorum.end_offset
            beat = heartbeat(1, epoch, quorum.end_offset)
            beat.offline_log_dirs = [dirs[0], uuid.uuid4()]          # an id it never registered is ignored
            assert (await call(leader, 63, beat)).error_code == 0
            records = new_records(quorum, mark)
            assert [r.type_name for _, r in records][-1] == "BrokerRegistrationChangeRecord"
            changed = {r.message.partition_id for _, r in records if r.type_name == "PartitionChangeRecord"}
            assert changed == set(failed)
            last = records[-1][1]
            assert (last.version, last.message.log_dirs) == (2, [dirs[1]])
            now = leader.image.topics_by_id[topic_id].partitions
            for pid, p in now.items():
                assert (1 in p.isr) == (pid not in failed) and (p.leader != 1 or pid not in failed), (pid, p)
            assert list(leader.image.brokers[1].directories) == [dirs[1]]
            mark = quorum.end_offset
            again = heartbeat(1, epoch, quorum.end_offset)
            again.offline_log_dirs = [dirs[0]]
            assert (await call(leader, 63, again)).error_code == 0 and new_records(quorum, mark) == []
    run(go())
