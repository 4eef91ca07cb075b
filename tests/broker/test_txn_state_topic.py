"""The transaction coordinator with its logs, without a node (kafkawire.broker.txn_apis on a
stand-in broker whose partitions are real logs in a temporary directory, and a stand-in for the
partition side's WriteTxnMarkers that appends the markers and calls the marker listeners, as
kafkawire.broker.txn_markers does): loading __transaction_state (COORDINATOR_LOAD_IN_PROGRESS
until loaded), a restart in PrepareCommit completing the markers, TxnOffsetCommit's offsets
pending until the COMMIT marker (UNSTABLE_OFFSET_COMMIT for require_stable) and dropped on ABORT,
and both read back after a restart."""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
import uuid
from types import SimpleNamespace

from kafkawire.broker.group_apis import GroupApis
from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.txn_apis import TxnApis
from kafkawire.messages.add_offsets_to_txn_request import AddOffsetsToTxnRequest
from kafkawire.messages.add_partitions_to_txn_request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kafkawire.messages.describe_transactions_request import DescribeTransactionsRequest
from kafkawire.messages.end_txn_request import EndTxnRequest
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.messages.offset_commit_request import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                      OffsetCommitRequestTopic)
from kafkawire.messages.offset_fetch_request import OffsetFetchRequest, OffsetFetchRequestTopic
from kafkawire.messages.txn_offset_commit_request import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                          TxnOffsetCommitRequestTopic)
from kafkawire.messages.write_txn_markers_response import (WritableTxnMarkerPartitionResult, WritableTxnMarkerResult,
                                                           WritableTxnMarkerTopicResult, WriteTxnMarkersResponse)
from kafkawire.net.config import ServerConfig
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_control_batch
from kafkawire.records.control import ControlRecordType, encode_end_txn_marker

TOPICS = {"__transaction_state": 1, "__consumer_offsets": 1, "t": 2}
IDS = {name: uuid.UUID(int=i + 1) for i, name in enumerate(TOPICS)}
TX, GROUP = "tx", "g"
WAIT_STEPS = 2000          # event-loop turns a wait may take (each a few microseconds)


def defaults() -> dict:
    return {f.name: f.default for f in dataclasses.fields(ServerConfig) if f.default is not dataclasses.MISSING}


class MarkerWriter:
    """The partition side: appends each marker to the partition's log and tells the listeners."""

    def __init__(self, broker):
        self.broker = broker
        self.failing = False
        self.written = []

    async def write_txn_markers(self, request):
        if self.failing:
            raise ConnectionError("partition side down")
        results = []
        for m in request.markers:
            topics = []
            for t in m.topics:
                for p in t.partition_indexes:
                    self._append(t.name, p, m)
                topics.append(WritableTxnMarkerTopicResult(name=t.name, partitions=[
                    WritableTxnMarkerPartitionResult(partition_index=p, error_code=Errors.NONE)
                    for p in t.partition_indexes]))
            results.append(WritableTxnMarkerResult(producer_id=m.producer_id, topics=topics))
        return WriteTxnMarkersResponse(markers=results)

    def _append(self, topic, partition, m):
        kind = ControlRecordType.COMMIT if m.transaction_result else ControlRecordType.ABORT
        data = build_control_batch(kind, encode_end_txn_marker(m.coordinator_epoch), producer_id=m.producer_id,
                                   producer_epoch=m.producer_epoch)
        self.broker.partitions[(topic, partition)].log.append(data, assign_offsets=True, leader_epoch=0)
        self.written.append((topic, partition, m.producer_id, m.producer_epoch, m.transaction_result))
        for listener in self.broker.txn_marker_listeners:
            listener(topic, partition, m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch)


class StandInBroker:
    node_id = 1
    unfenced = True

    def __init__(self, log_dir, ids):
        self.config = SimpleNamespace(**defaults(), node_id=self.node_id)
        self.log_dir = str(log_dir)
        self._image = SimpleNamespace(
            topics_by_name={name: SimpleNamespace(name=name, id=IDS[name], partitions={
                i: SimpleNamespace(leader=1, leader_epoch=0) for i in range(count)}) for name, count in TOPICS.items()},
            brokers={}, finalized_features={"transaction.version": 2})
        self._image.topics_by_id = {t.id: t for t in self._image.topics_by_name.values()}
        self.partitions = {(name, i): LeaderPartition.open(self.log_dir, name, i, IDS[name], leader_epoch=0)
                           for name, count in TOPICS.items() for i in range(count)}
        self.producer_ids = SimpleNamespace(generate=lambda: next(ids))
        self.txn_marker_listeners = []
        self.txn_markers = MarkerWriter(self)
        self.group_apis = GroupApis(self)
        self.txn_apis = TxnApis(self)
        self.txn_apis.install()
        self.txn_apis.handlers()

    def image(self):
        return self._image

    def data_appended(self):
        pass

    async def load(self):
        self.group_apis.store.on_metadata()
        self.txn_apis.on_metadata()
        await until(lambda: self.group_apis.store.loaded and self.txn_apis.store.loaded)

    def close(self):
        self.txn_apis.close()
        self.group_apis.close()
        for p in self.partitions.values():
            p.close()


async def until(condition):
    for _ in range(WAIT_STEPS):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition not reached")


def ctx(version):
    return SimpleNamespace(api_version=version)


async def init(broker, version=4):
    r = await broker.txn_apis.init_producer_id(ctx(version), InitProducerIdRequest(
        transactional_id=TX, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
    return r.error_code, r.producer_id, r.producer_epoch


async def add(broker, pid, epoch, partitions=(0,)):
    r = await broker.txn_apis.add_partitions_to_txn(ctx(3), AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TX, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnTopic(name="t", partitions=list(partitions))]))
    return {p.partition_index: p.partition_error_code for t in r.results_by_topic_v3_and_below
            for p in t.results_by_partition}


async def end(broker, pid, epoch, committed):
    return (await broker.txn_apis.end_txn(ctx(4), EndTxnRequest(
        transactional_id=TX, producer_id=pid, producer_epoch=epoch, committed=committed))).error_code


async def describe(broker):
    r = await broker.txn_apis.describe_transactions(ctx(0), DescribeTransactionsRequest(transactional_ids=[TX]))
    s, = r.transaction_states
    return s.error_code, s.transaction_state, s.producer_id


def test_load_in_progress_then_restart_in_prepare_commit_writes_the_markers(tmp_path):
    """Before __transaction_state is loaded InitProducerId is COORDINATOR_LOAD_IN_PROGRESS; a
    node stopped while its markers could not be written comes back in PrepareCommit and, once
    loaded, writes the COMMIT markers and CompleteCommit."""
    async def go():
        ids = itertools.count(1000)
        broker = StandInBroker(tmp_path, ids)
        assert (await init(broker))[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
        await broker.load()
        assert broker.txn_verifier == broker.txn_apis.verify     # installed at the first metadata change
        code, pid, epoch = await init(broker)
        assert (code, epoch) == (Errors.NONE, 0)
        assert await add(broker, pid, epoch, (0, 1)) == {0: Errors.NONE, 1: Errors.NONE}
        broker.txn_markers.failing = True
        assert await end(broker, pid, epoch, True) == Errors.NONE
        assert await describe(broker) == (Errors.NONE, "PrepareCommit", pid)
        broker.close()

        again = StandInBroker(tmp_path, ids)
        await again.load()
        await until(lambda: again.txn_apis.coordinator.txns[TX].state == "CompleteCommit")
        assert sorted(again.txn_markers.written) == [("t", 0, pid, 0, True), ("t", 1, pid, 0, True)]
        assert (await init(again))[1:] == (pid, 1)
        again.close()
    asyncio.run(go())


async def txn_offset_commit(broker, pid, epoch, offset):
    r = await broker.txn_apis.txn_offset_commit_api.txn_offset_commit(ctx(3), TxnOffsetCommitRequest(
        transactional_id=TX, group_id=GROUP, producer_id=pid, producer_epoch=epoch, topics=[
            TxnOffsetCommitRequestTopic(name="t", partitions=[TxnOffsetCommitRequestPartition(
                partition_index=0, committed_offset=offset, committed_leader_epoch=-1, committed_metadata="")])]))
    return r.topics[0].partitions[0].error_code


async def fetched(broker, require_stable):
    r = await broker.group_apis.offset_apis.offset_fetch(ctx(7), OffsetFetchRequest(
        group_id=GROUP, topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0])], require_stable=require_stable))
    p = r.topics[0].partitions[0]
    return p.error_code, p.committed_offset


async def one_transaction(broker, offset, committed):
    code, pid, epoch = await init(broker)
    assert code == Errors.NONE
    add_offsets = await broker.txn_apis.add_offsets_to_txn(ctx(3), AddOffsetsToTxnRequest(
        transactional_id=TX, producer_id=pid, producer_epoch=epoch, group_id=GROUP))
    assert add_offsets.error_code == Errors.NONE
    assert await txn_offset_commit(broker, pid, epoch, offset) == Errors.NONE
    assert await fetched(broker, True) == (Errors.UNSTABLE_OFFSET_COMMIT, -1)
    assert await end(broker, pid, epoch, committed) == Errors.NONE
    await until(lambda: broker.txn_apis.coordinator.txns[TX].state in ("CompleteCommit", "CompleteAbort"))


def test_txn_offset_commit_is_committed_by_the_commit_marker_and_dropped_on_abort(tmp_path):
    """TxnOffsetCommit's offset is pending (require_stable: UNSTABLE_OFFSET_COMMIT) until the
    COMMIT marker reaches __consumer_offsets; an aborted one never shows; a restart reads the
    same from the log (transactional batches and their markers)."""
    async def go():
        ids = itertools.count(2000)
        broker = StandInBroker(tmp_path, ids)
        await broker.load()
        await one_transaction(broker, 42, committed=True)
        assert await fetched(broker, True) == (Errors.NONE, 42)
        await one_transaction(broker, 50, committed=False)
        assert await fetched(broker, True) == (Errors.NONE, 42)
        offsets = broker.partitions[("__consumer_offsets", 0)]
        batches = list(iter_batches(offsets.log.read(0, 1 << 20, min_one_batch=True).data))
        assert [(b.is_transactional, b.is_control) for b in batches if b.is_transactional] == [
            (True, False), (True, True), (True, False), (True, True)]
        broker.close()

        again = StandInBroker(tmp_path, ids)
        await again.load()
        assert await fetched(again, True) == (Errors.NONE, 42)
        again.close()
    asyncio.run(go())


async def offset_commit(broker, offset):
    r = await broker.group_apis.offset_apis.offset_commit(ctx(8), OffsetCommitRequest(
        group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=[OffsetCommitRequestTopic(
            name="t", partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                               committed_metadata="")])]))
    return r.topics[0].partitions[0].error_code


def test_a_coordinator_made_leader_loads_up_to_the_log_end_not_the_high_watermark(tmp_path):
    """A follower made leader after a restart may have a high watermark of 0 while its log holds
    the ISR's records (Kafka's loaders read to the log end): the ongoing transaction and the
    committed offsets are known after the load, not forgotten (a forgotten transaction is never
    timed out, and its partitions' last stable offset never moves again)."""
    async def go():
        broker = StandInBroker(tmp_path, itertools.count(1000))
        await broker.load()
        code, pid, epoch = await init(broker)
        assert await add(broker, pid, epoch) == {0: Errors.NONE}
        assert await offset_commit(broker, 42) == Errors.NONE
        broker.close()

        again = StandInBroker(tmp_path, itertools.count(2000))
        for topic in ("__consumer_offsets", "__transaction_state"):
            again.partitions[(topic, 0)].store_high_watermark(0)
        await again.load()
        assert await describe(again) == (Errors.NONE, "Ongoing", pid)
        assert await fetched(again, False) == (Errors.NONE, 42)
        assert await end(again, pid, epoch, False) == Errors.NONE
        again.close()
    asyncio.run(go())
