"""The coordinator's markers (kafkawire.broker.txn_marker_sender) with Kafka's per-partition rules
(TransactionMarkerRequestCompletionHandler): done partitions leave the transaction, retriable
errors are sent again, a fenced producer or coordinator gives the transaction up, a partition
whose topic is gone is skipped, a failed write is tried again; CompleteX is written after; any
other failure of the send is logged and the send tried again, until it is cancelled."""
from __future__ import annotations

import asyncio
import logging
import random

import pytest

from kafkawire.broker.txn_marker_sender import RETRY_BACKOFF_MAX_MS, RETRY_BACKOFF_MS, MarkerSender
from kafkawire.broker.txn_state import PREPARE_COMMIT, TransactionMetadata
from kafkawire.messages.write_txn_markers_response import (WritableTxnMarkerPartitionResult, WritableTxnMarkerResult,
                                                           WritableTxnMarkerTopicResult, WriteTxnMarkersResponse)
from kafkawire.protocol.error_codes import Errors

STEPS = 2000


class Coordinator:
    def __init__(self, failures=0):
        self.completed = []
        self.failures = failures                # complete raises this many times first

    def complete(self, metadata, epoch, transit):
        if self.failures:
            self.failures -= 1
            raise OSError("the __transaction_state write failed")
        self.completed.append((metadata.transactional_id, epoch, transit))
        return Errors.NONE


def answer(request, codes):
    m, = request.markers
    return WriteTxnMarkersResponse(markers=[WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
        WritableTxnMarkerTopicResult(name=t.name, partitions=[WritableTxnMarkerPartitionResult(
            partition_index=p, error_code=codes.get((t.name, p), Errors.NONE)) for p in t.partition_indexes])
        for t in m.topics])])


def run(script, *, known=lambda topic, partition: True, partitions=(("t", 0), ("t", 1)), complete_failures=0):
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
        coordinator = Coordinator(complete_failures)
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


def errors_logged(caplog):
    return [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_an_unexpected_failure_is_logged_once_and_the_send_tried_again(caplog):
    calls = []

    def known_after_one_failure(topic, partition):
        calls.append((topic, partition))
        if len(calls) == 1:
            raise RuntimeError("metadata cache bug")
        return True
    sent, completed, metadata = run([{}], known=known_after_one_failure)
    assert sent == [[("t", 0), ("t", 1)]] and completed == [("tx", 3, "complete")] and metadata.partitions == set()
    failures = errors_logged(caplog)
    assert len(failures) == 1 and "metadata cache bug" in failures[0].getMessage()


def test_a_failed_complete_is_written_again(caplog):
    sent, completed, _ = run([{}], complete_failures=2)
    assert len(sent) == 1 and completed == [("tx", 3, "complete")]
    assert len(errors_logged(caplog)) == 2


def test_a_cancelled_transaction_is_not_tried_again():
    calls = []

    def always_failing(topic, partition):
        calls.append((topic, partition))
        raise RuntimeError("metadata cache bug")

    async def go():
        coordinator = Coordinator()
        sender = MarkerSender(write=None, leader_known=always_failing, retry_backoff_ms=0)
        sender.coordinator = coordinator
        metadata = TransactionMetadata("tx", 5, producer_epoch=2, state=PREPARE_COMMIT, partitions={("t", 0)})
        sender.send(metadata, 3, True, "complete")
        task = sender.tasks["tx"]
        for _ in range(STEPS):
            if len(calls) >= 2:
                break
            await asyncio.sleep(0)
        assert len(calls) >= 2                  # retried after the first failure
        sender.cancel("tx")
        for _ in range(STEPS):
            if task.done():
                break
            await asyncio.sleep(0)
        tried = len(calls)
        for _ in range(10):
            await asyncio.sleep(0)
        return task, tried, sender, coordinator
    task, tried, sender, coordinator = asyncio.run(go())
    assert task.cancelled() and len(calls) == tried and not sender.tasks and coordinator.completed == []


def test_a_send_failing_every_time_backs_off_longer_each_failure_up_to_the_cap(caplog):
    """A bug that fails every send: the waits double from retry_backoff_ms up to
    RETRY_BACKOFF_MAX_MS (Kafka's ExponentialBackoff, 20% jitter), one error line per wait naming
    it, the traceback only on the first."""
    waits: list[float] = []

    async def sleep(seconds):
        waits.append(seconds * 1000)
        await asyncio.sleep(0)

    def always_failing(topic, partition):
        raise RuntimeError("metadata cache bug")

    async def go():
        sender = MarkerSender(write=None, leader_known=always_failing, sleep=sleep, rng=random.Random(5))
        sender.coordinator = Coordinator()
        sender.send(TransactionMetadata("tx", 5, producer_epoch=2, state=PREPARE_COMMIT, partitions={("t", 0)}),
                    3, True, "complete")
        for _ in range(STEPS):
            if len(waits) >= 8:
                break
            await asyncio.sleep(0)
        sender.close()
    caplog.set_level(logging.ERROR)
    asyncio.run(go())
    first = waits[:8]
    assert len(first) == 8
    for failures, wait in enumerate(first):
        term = min(RETRY_BACKOFF_MS * 2 ** failures, RETRY_BACKOFF_MAX_MS)
        assert 0.8 * term - 1 <= wait <= min(1.2 * term, RETRY_BACKOFF_MAX_MS)      # (- 1: Kafka truncates to ms)
    assert first[3] > 4 * first[0] and first[-1] >= 0.8 * RETRY_BACKOFF_MAX_MS     # grown, then held at the cap
    lines = errors_logged(caplog)[:8]
    assert [f"retrying in {int(w)} ms" in r.getMessage() for r, w in zip(lines, first)] == [True] * 8
    assert [bool(r.exc_info) for r in lines] == [True] + [False] * 7 and lines[0].exc_info[0] is RuntimeError
