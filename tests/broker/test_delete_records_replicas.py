"""DeleteRecords on a partition with followers (kafkawire.broker.delete_records and
delayed_delete_records, Kafka's DelayedDeleteRecords), without a node: a LeaderPartition on a
real log, kafkawire.broker.replication's leader side, its follower (node 2) played by calls. The
answer waits until the low watermark (Partition.lowWatermarkIfLeader: the least log start offset
of the replicas on live brokers, in the ISR or not) reached the requested offset and is that low
watermark; REQUEST_TIMED_OUT at the request's timeout; a follower on a fenced broker does not hold
it back; a leadership lost meanwhile is NOT_LEADER_OR_FOLLOWER."""
from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

from kafkawire.broker.delete_records import DeleteRecordsApi
from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.replica_state import LeaderReplicas
from kafkawire.broker.replication import Replication
from kafkawire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch

from .test_log_retention import CONFIG

TOPIC, FOLLOWER, FOLLOWER_EPOCH, NOW = "t", 2, 7, 1_800_000_000_000


class StandInBroker:
    node_id = 1
    lifecycle = None
    send_to_controller = None

    def __init__(self, tmp_path, *, follower_fenced=False):
        self.config = CONFIG
        self.follower = SimpleNamespace(epoch=FOLLOWER_EPOCH, fenced=follower_fenced, in_controlled_shutdown=False)
        topic = SimpleNamespace(partitions={0: SimpleNamespace(leader=1)})
        self._image = SimpleNamespace(topics_by_name={TOPIC: topic}, brokers={FOLLOWER: self.follower}, configs={})
        self.log_manager = SimpleNamespace(settings=lambda image, name: SimpleNamespace(compact=False, delete=True))
        self.partition = LeaderPartition.open(str(tmp_path), TOPIC, 0, uuid.uuid4(), leader_epoch=0, now_ms=NOW)
        self.partitions = {(TOPIC, 0): self.partition}
        self.replication = Replication(self)
        for _ in range(5):
            self.partition.log.append(build_batch([(b"k", b"v")]), assign_offsets=True)
        self.partition.replicas = LeaderReplicas(1, max_lag_ms=30_000, broker_epoch=lambda b: FOLLOWER_EPOCH)
        self.partition.replicas.make_leader(replicas=[1, FOLLOWER], isr=[1, FOLLOWER], leader_epoch=0,
                                            partition_epoch=0, log_end_offset=5, now_ms=NOW, is_new_leader=True)
        self.partition.store_high_watermark(5)
        self.fetch(log_start_offset=0)

    def image(self):
        return self._image

    def data_appended(self):
        pass

    def fetch(self, *, log_start_offset: int) -> None:
        """The follower fetches from the log end with its log start offset."""
        self.replication.follower_fetched(self.partition, FOLLOWER, FOLLOWER_EPOCH, 5, log_start_offset, 5)


async def delete(broker, offset, timeout_ms=5000):
    request = DeleteRecordsRequest(timeout_ms=timeout_ms, topics=[DeleteRecordsTopic(name=TOPIC, partitions=[
        DeleteRecordsPartition(partition_index=0, offset=offset)])])
    response = await DeleteRecordsApi(broker).delete_records(None, request)
    r = response.topics[0].partitions[0]
    return r.error_code, r.low_watermark


async def settle():
    for _ in range(20):
        await asyncio.sleep(0)


def test_the_answer_waits_for_the_followers_log_start_and_is_the_low_watermark(tmp_path):
    async def go():
        broker = StandInBroker(tmp_path)
        answer = asyncio.ensure_future(delete(broker, 3))
        await settle()
        assert not answer.done(), "answered before the follower's log start reached the offset"
        assert broker.partition.log.log_start_offset == 3          # the leader's moved at once
        broker.fetch(log_start_offset=2)
        await settle()
        assert not answer.done()
        broker.fetch(log_start_offset=4)                           # beyond it: the low watermark is 3
        assert await asyncio.wait_for(answer, 5) == (Errors.NONE, 3)
        assert await delete(broker, 1) == (Errors.NONE, 3)         # already reached: at once
    asyncio.run(go())


def test_the_answer_is_request_timed_out_with_the_low_watermark_of_the_moment(tmp_path):
    async def go():
        broker = StandInBroker(tmp_path)
        assert await delete(broker, 4, timeout_ms=30) == (Errors.REQUEST_TIMED_OUT, 0)
    asyncio.run(go())


def test_a_follower_on_a_fenced_broker_does_not_hold_the_low_watermark_back(tmp_path):
    async def go():
        broker = StandInBroker(tmp_path, follower_fenced=True)
        assert await delete(broker, 4) == (Errors.NONE, 4)
    asyncio.run(go())


def test_a_leadership_lost_while_waiting_is_not_leader_or_follower(tmp_path):
    async def go():
        broker = StandInBroker(tmp_path)
        answer = asyncio.ensure_future(delete(broker, 4))
        await settle()
        broker.replication.deletes.step_down({})
        assert await asyncio.wait_for(answer, 5) == (Errors.NOT_LEADER_OR_FOLLOWER, -1)
    asyncio.run(go())
