"""DescribeShareGroupOffsets' lag without I/O (kafkawire.broker.share_offsets and share_lag), as
Kafka 4.3.1's GroupCoordinatorService computes it: the leader's latest offset (ListOffsets,
latest, read_uncommitted) wherever the partition is led, less the start offset and the
delivery-complete count; a summary that failed is no offset information, a latest offset that
failed is the partition's error; an unreachable leader is asked again with Kafka's backoff.
AlterShareGroupOffsets passes the start offset on as it is, as Kafka's coordinator does."""
from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

from kafkawire.broker import share_lag
from kafkawire.broker.share_offsets import ShareOffsets
from kafkawire.messages.list_offsets_response import (ListOffsetsPartitionResponse, ListOffsetsResponse,
                                                      ListOffsetsTopicResponse)
from kafkawire.net.client import AuthenticationFailed, Disconnected, RequestTimedOut
from kafkawire.protocol.error_codes import Errors

HERE, OTHER = 1, 2
TOPIC_ID = uuid.UUID(int=7)
# partition: its leader (-1: none)
LEADERS = {0: HERE, 1: OTHER, 2: -1, 3: OTHER, 4: OTHER}


def summary(start=-1, complete=-1, epoch=3, code=Errors.NONE):
    return SimpleNamespace(error_code=code, start_offset=start, delivery_complete_count=complete,
                           leader_epoch=epoch, state_epoch=1)


SUMMARIES = {0: summary(start=4, complete=2), 1: summary(start=10, complete=5), 2: summary(start=0, complete=0),
             3: summary(code=Errors.COORDINATOR_NOT_AVAILABLE), 4: summary(start=-1)}


def answer(offsets: dict) -> ListOffsetsResponse:
    return ListOffsetsResponse(topics=[ListOffsetsTopicResponse(name="queue", partitions=[
        ListOffsetsPartitionResponse(partition_index=p, offset=o, timestamp=-1) for p, o in offsets.items()])])


class Peers:
    """The inter-broker pool: each send takes the next of ``outcomes`` (an exception is raised)."""

    def __init__(self, *outcomes):
        self.outcomes, self.sent = list(outcomes), []

    def client(self):
        return self

    async def send(self, endpoint, request):
        self.sent.append((endpoint, request))
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def offsets_of(peers: Peers, own_high_watermark: int = 9):
    own: list = []

    async def list_offsets(ctx, request):
        own.append(request)
        return answer({p.partition_index: own_high_watermark for t in request.topics for p in t.partitions})

    async def summary_many(group_id, keys):
        return {k: SUMMARIES[k[1]] for k in keys}

    async def summary_of(group_id, topic_id, index):
        return Errors.NONE, SUMMARIES[index]

    async def initialize(group_id, topic_id, index, state_epoch, start):
        initialized.append((index, state_epoch, start))
        return Errors.NONE
    initialized: list = []

    topic = SimpleNamespace(id=TOPIC_ID, name="queue",
                            partitions={p: SimpleNamespace(leader=leader) for p, leader in LEADERS.items()})
    image = SimpleNamespace(topics_by_name={"queue": topic}, topics_by_id={TOPIC_ID: topic})
    roles = SimpleNamespace(endpoint_of=lambda n: ("other", 9092) if n == OTHER else None)
    led_here = SimpleNamespace(log=SimpleNamespace(log_start_offset=3, log_end_offset=own_high_watermark))
    broker = SimpleNamespace(node_id=HERE, image=lambda: image, fetch_api=SimpleNamespace(list_offsets=list_offsets),
                             replica_roles=roles, partitions={("queue", 0): led_here})
    share = SimpleNamespace(broker=broker, apis=SimpleNamespace(store=SimpleNamespace(
        coordinator_error=lambda g: Errors.NONE)), groups=SimpleNamespace(groups={}),
        partitions={}, keeper=SimpleNamespace(known=set(), persister=SimpleNamespace(
            summary_many=summary_many, summary=summary_of, initialize=initialize, peers=peers)))
    offsets = ShareOffsets(share)
    offsets.initialized = initialized
    slept: list = []

    async def sleep(seconds):
        slept.append(seconds)
    offsets.latest.sleep = sleep
    return offsets, own, slept


def describe(offsets, partitions=tuple(LEADERS), topics=("queue",)):
    group = asyncio.run(offsets.describe_group("g", [(t, list(partitions)) for t in topics]))
    return [(t.topic_name, {p.partition_index: (p.start_offset, p.leader_epoch, p.lag, p.error_code)
                            for p in t.partitions}) for t in group.topics]


def test_the_lag_of_a_partition_led_by_another_broker_comes_from_its_leaders_latest_offset():
    peers = Peers(answer({1: 30}))
    offsets, own, slept = offsets_of(peers)
    assert describe(offsets, topics=("gone", "queue")) == [
        ("queue", {0: (4, 3, 9 - 4 - 2, 0),                 # led here: its own ListOffsets, in process
                   1: (10, 3, 30 - 10 - 5, 0),              # led by node 2: asked over the network
                   2: (0, 0, -1, Errors.LEADER_NOT_AVAILABLE),  # no leader: the lag's error, as Kafka's
                   3: (-1, 0, -1, 0),                       # the summary failed: no information, no error
                   4: (-1, 3, -1, 0)}),                     # no state
        ("gone", {0: (-1, 0, -1, 0), 1: (-1, 0, -1, 0), 2: (-1, 0, -1, 0), 3: (-1, 0, -1, 0), 4: (-1, 0, -1, 0)})]
    (endpoint, request), = peers.sent
    assert endpoint == ("other", 9092) and (request.replica_id, request.isolation_level) == (-1, 0)
    assert [(p.partition_index, p.timestamp, p.current_leader_epoch) for p in request.topics[0].partitions] == [
        (1, -1, -1)]                                       # latest, the partitions needing a lag only
    assert [[p.partition_index for p in r.topics[0].partitions] for r in own] == [[0]] and slept == []


def test_a_leaders_partition_error_or_silence_is_the_partitions_error():
    refused = answer({1: -1})
    refused.topics[0].partitions[0].error_code = Errors.NOT_LEADER_OR_FOLLOWER
    offsets, _, _ = offsets_of(Peers(refused))
    assert describe(offsets, partitions=[1])[0][1] == {1: (0, 0, -1, Errors.NOT_LEADER_OR_FOLLOWER)}
    offsets, _, _ = offsets_of(Peers(answer({})))
    assert describe(offsets, partitions=[1])[0][1] == {1: (0, 0, -1, Errors.UNKNOWN_TOPIC_OR_PARTITION)}


def test_an_unreachable_leader_is_asked_again_with_kafkas_backoff_then_its_partitions_fail():
    peer = ("other", 9092)
    offsets, _, slept = offsets_of(Peers(Disconnected(peer, "gone"), RequestTimedOut(peer, "slow"), answer({1: 12})))
    assert describe(offsets, partitions=[1])[0][1] == {1: (10, 3, 12 - 10 - 5, 0)}
    assert len(slept) == 2 and 1.6 <= slept[0] <= 2.4 and 3.2 <= slept[1] <= 4.8     # 2 s, 4 s, 20% jitter

    offsets, _, slept = offsets_of(Peers(*[RequestTimedOut(peer, "slow")] * (share_lag.RETRIES + 1)))
    assert describe(offsets, partitions=[1])[0][1] == {1: (0, 0, -1, Errors.REQUEST_TIMED_OUT)}
    assert len(slept) == share_lag.RETRIES and 24 <= slept[-1] <= 30                 # the 30 s cap with jitter, never past it

    offsets, _, slept = offsets_of(Peers(AuthenticationFailed(peer, "no")))         # not retried
    assert describe(offsets, partitions=[1])[0][1] == {1: (0, 0, -1, Errors.UNKNOWN_SERVER_ERROR)} and slept == []


def test_an_altered_start_offset_goes_to_the_share_coordinator_as_it_is_even_past_the_log():
    offsets, _, _ = offsets_of(Peers())
    topic = offsets.broker.image().topics_by_name["queue"]
    for start in (1_000, 0, -1):          # partition 0 is led here, its log 3-9: not clamped to it
        assert asyncio.run(offsets._alter_partition("g", topic, 0, start)) == (Errors.NONE, None)
    # with the next state epoch (the summary's 1, plus one), which fences the leader's older state
    assert offsets.initialized == [(0, 2, 1_000), (0, 2, 0), (0, 2, -1)]
