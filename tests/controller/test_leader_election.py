"""ElectLeaders as Kafka 4.3.1's ReplicationControlManager.electLeaders: a preferred election
moves leadership back to the first replica, and the refusals."""
from kafkawire.messages.elect_leaders_request import ElectLeadersRequest, TopicPartitions
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, run
from .test_brokers import new_records
from .test_reassignment import reassign, setup


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
