"""ElectLeaders as Kafka 4.3.1's ReplicationControlManager.electLeaders: a preferred election
moves leadership back to the first replica, and the refusals."""
import random
import uuid
from types import SimpleNamespace

from kafkawire.controller.leader_election import preferred_stays_unavailable
from kafkawire.controller.partition_change import build_change
from kafkawire.controller.replication import _OnlineDirectories
from kafkawire.messages.elect_leaders_request import ElectLeadersRequest, TopicPartitions
from kafkawire.metadata.registrations import LOST, MIGRATING, UNASSIGNED, PartitionRegistration, directory_ints
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, run
from .test_brokers import new_records
from .test_reassignment import reassign, setup

DIRS = [uuid.UUID(int=0xD1 << 64 | i) for i in range(3)]


def results(response):
    return [(t.topic, p.partition_id, Errors.for_code(p.error_code).name, p.error_message)
            for t in response.replica_election_results for p in t.partition_result]


def test_a_preferred_election_makes_the_first_replica_the_leader():
    async def go():
        quorum, leader, running, topic_id = await setup()          # t-0 on [1, 2] led by 1, t-1 on [2, 3]
        async with running:
            await leader.handlers()[45].handle(Ctx(1), reassign(("t", 0, [2, 1])))     # a reorder: 1 still leads
            assert leader.image.topics_by_id[topic_id].partitions[0].leader == 1
            mark = quorum.end_offset
            named = ElectLeadersRequest(election_type=0, timeout_ms=5000, topic_partitions=[
                TopicPartitions(topic="t", partitions=[0, 1, 7]), TopicPartitions(topic="missing", partitions=[0])])
            response = await leader.handlers()[43].handle(Ctx(2), named)
            assert response.error_code == 0
            assert results(response) == [
                ("t", 0, "NONE", None),
                ("t", 1, "ELECTION_NOT_NEEDED", "Leader election not needed for topic partition."),
                ("t", 7, "UNKNOWN_TOPIC_OR_PARTITION", "No such partition as t-7"),
                ("missing", 0, "UNKNOWN_TOPIC_OR_PARTITION", "No such topic as missing"),
            ]
            (_, record), = new_records(quorum, mark)
            assert (record.type_name, record.message.leader) == ("PartitionChangeRecord", 2)
            everything = await leader.handlers()[43].handle(Ctx(2), ElectLeadersRequest(
                election_type=0, timeout_ms=5000, topic_partitions=None))
            assert results(everything) == [] and [t.topic for t in everything.replica_election_results] == ["t"]
            unknown = await leader.handlers()[43].handle(Ctx(2), ElectLeadersRequest(
                election_type=5, timeout_ms=5000, topic_partitions=[TopicPartitions(topic="t", partitions=[0])]))
            assert (unknown.error_code, results(unknown)) == (
                Errors.INVALID_REQUEST, [("t", 0, "INVALID_REQUEST", "Unknown election type 5")])
    run(go())


def test_a_refusal_encodes_at_every_version_with_the_top_level_error_from_v1():
    """ElectLeadersRequest.getErrorResponse: v0 has no top-level ErrorCode, so a follower's
    NOT_CONTROLLER is said per partition only (a top-level one would not encode at v0 and the
    connection was closed: tests/node/test_every_api_version.py found it)."""
    from kafkawire.controller.admin_apis import _elect_leaders_error
    from kafkawire.controller.errors import not_controller
    from kafkawire.messages.elect_leaders_response import ElectLeadersResponse
    request = ElectLeadersRequest(topic_partitions=[TopicPartitions(topic="t", partitions=[0, 1])])
    for version in (0, 1, 2):
        response = _elect_leaders_error(request, not_controller(2), version)
        decoded = ElectLeadersResponse.decode(response.encode(version), version)
        assert decoded.error_code == (int(Errors.NOT_CONTROLLER) if version >= 1 else 0)
        assert results(decoded) == [("t", p, "NOT_CONTROLLER", "The active controller appears to be node 2.")
                                    for p in (0, 1)]


def _random_partition(rng: random.Random) -> PartitionRegistration:
    """Any partition a preferred election may meet: ISRs empty or not, ELR and last known ELR,
    reassignments in progress, leaders in and out of the ISR."""
    replicas = tuple(rng.sample(range(0, 6), rng.randint(1, 4)))
    isr = tuple(r for r in replicas if rng.random() < 0.6)
    elr = tuple(r for r in replicas if r not in isr and rng.random() < 0.3)
    last_known = tuple(rng.sample(replicas, rng.choice((0, 0, 0, 1))))
    adding = tuple(r for r in replicas[1:] if rng.random() < 0.1)
    removing = tuple(r for r in replicas[1:] if r not in adding and rng.random() < 0.1)
    leader = rng.choice(isr + (-1, rng.choice(replicas))) if isr else rng.choice((-1, rng.choice(replicas)))
    directories = [rng.choice([*DIRS, UNASSIGNED, MIGRATING, LOST]) for _ in replicas]
    return PartitionRegistration(replicas=replicas, directory_ids=directory_ints(directories), isr=isr,
                                 removing_replicas=removing, adding_replicas=adding, leader=leader,
                                 leader_recovery_state=rng.choice((0, 0, 1)), leader_epoch=3, partition_epoch=5,
                                 elr=elr, last_known_elr=last_known)


def test_the_preferred_refusal_told_without_the_builder_is_the_builders():
    """preferred_stays_unavailable says True only where build_change (preferred, the partition's
    own ISR, nothing else asked) makes no record, on random partitions, brokers and settings;
    and it says so for the usual case, a preferred replica out of the ISR."""
    rng = random.Random(2843)
    told = 0
    for _ in range(6000):
        partition = _random_partition(rng)
        brokers = {b: SimpleNamespace(directories=tuple(rng.sample(DIRS, rng.randint(0, 2))))
                   for b in range(0, 6) if rng.random() < 0.9}
        online = _OnlineDirectories(SimpleNamespace(brokers=brokers))
        active = {b: rng.random() < 0.8 for b in range(-1, 6)}

        def acceptable(r):
            return active[r] and online.has_online_dir(r, partition)

        elr = rng.random() < 0.5
        change = build_change(partition, target_isr=list(partition.isr), acceptable_leader=acceptable,
                              min_isr=rng.randint(1, 3), elr_enabled=elr, unclean=False,
                              metadata_version=rng.choice((12, 27)) if not elr else 27,
                              default_dir=lambda r: UNASSIGNED, preferred=True)
        if preferred_stays_unavailable(partition, acceptable):
            told += 1
            assert change is None, (partition, brokers, active, change)
    assert told > 200, told          # (271 with this seed)
    usual = PartitionRegistration(replicas=(1, 2, 3), directory_ids=directory_ints([UNASSIGNED] * 3), isr=(2, 3),
                                  removing_replicas=(), adding_replicas=(), leader=2, leader_recovery_state=0,
                                  leader_epoch=3, partition_epoch=5)
    assert preferred_stays_unavailable(usual, lambda r: True)
