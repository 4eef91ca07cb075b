"""The coordinator's markers (kafkawire.broker.txn_marker_sender) with Kafka's per-partition rules
(TransactionMarkerRequestCompletionHandler): done partitions leave the transaction, retriable
errors are sent again, a fenced producer or coordinator gives the transaction up, a partition
whose topic is gone is skipped, a failed write is tried again; CompleteX is written after."""
from __future__ import annotations

import asyncio

import pytest

from kafkawire.broker.txn_marker_sender import MarkerSender
from kafkawire.broker.txn_state import PREPARE_COMMIT, TransactionMetadata
from kafkawire.messages.write_txn_markers_response import (WritableTxnMarkerPartitionResult, WritableTxnMarkerResult,
                                                           WritableTxnMarkerTopicResult, WriteTxnMarkersResponse)
from kafkawire.protocol.error_codes import Errors

STEPS = 2000


class Coordinator:
    def __init__(self):
        self.completed = []

    def complete(self, metadata, epoch, transit):
        self.completed.append((metadata.transactional_id, epoch, transit))
        return Errors.NONE


def answer(request, codes):
    m, = request.markers
    return WriteTxnMarkersResponse(markers=[WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
        WritableTxnMarkerTopicResult(name=t.name, partitions=[WritableTxnMarkerPartitionResult(
            partition_index=p, error_code=codes.get((t.name, p), Errors.NONE)) for p in t.partition_indexes])
        for t in m.topics])])


def run(script, *, known=lambda topic, partition: True, partitions=(("t", 0), ("t", 1))):
    """Send one transaction's markers; ``script``: per write, {partition: code} or an exception."""
    sent = []

    async def write(request):
        m, = request.markers
        sent.append(sorted((t.name, p) for t in m.topics for p in t.partition_indexes))
        step = script[min(len(sent), len(script)) - 1]
        if isinstance(step, Exception):
            raise step
        return answer(request, step)

    async def go():
        coordinator = Coordinator()
        sender = MarkerSender(write=write, leader_known=known, retry_backoff_ms=0)
        sender.coordinator = coordinator
        metadata = TransactionMetadata("tx", 5, producer_epoch=2, state=PREPARE_COMMIT, partitions=set(partitions))
        sender.send(metadata, 3, True, "complete")
        for _ in range(STEPS):
            if not sender.tasks:
                break
            await asyncio.sleep(0)
        assert not sender.tasks
        return coordinator.completed, metadata
    completed, metadata = asyncio.run(go())
    return sent, completed, metadata


def test_all_written_then_complete():
    sent, completed, metadata = run([{}])
    assert sent == [[("t", 0), ("t", 1)]] and completed == [("tx", 3, "complete")] and metadata.partitions == set()


@pytest.mark.parametrize("code", [Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                  Errors.NOT_ENOUGH_REPLICAS, Errors.REQUEST_TIMED_OUT, Errors.KAFKA_STORAGE_ERROR])
def test_retriable_partitions_are_sent_again(code):
    sent, completed, _ = run([{("t", 1): code}, {}])
    assert sent == [[("t", 0), ("t", 1)], [("t", 1)]] and len(completed) == 1


@pytest.mark.parametrize("code", [Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED])
def test_a_fenced_marker_gives_the_transaction_up(code):
    sent, completed, metadata = run([{("t", 0): code}])
    assert len(sent) == 1 and completed == [] and metadata.partitions


def test_unsupported_partitions_leave_the_transaction():
    sent, completed, _ = run([{("t", 0): Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT}])
    assert len(sent) == 1 and len(completed) == 1


def test_a_deleted_topic_is_skipped_and_a_failed_write_is_tried_again():
    sent, completed, _ = run([ConnectionError("down"), {}], known=lambda topic, partition: partition == 0)
    assert sent == [[("t", 0)], [("t", 0)]] and len(completed) == 1
