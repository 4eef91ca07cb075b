"""The transaction coordinator's markers (Kafka's TransactionMarkerChannelManager and
TransactionMarkerRequestCompletionHandler): after a PrepareCommit/PrepareAbort is written, a
WriteTxnMarkers request for the transaction's partitions goes to the partitions' leader, which
is this broker (one node leads everything): it is called in process, ``write(request)`` ->
WriteTxnMarkersResponse. Then CompleteCommit/CompleteAbort is written.

    sender = MarkerSender(write=broker_write, leader_known=lambda topic, partition: ...)
    sender.coordinator = coordinator          # its ``complete(metadata, epoch, transit)``
    sender.send(metadata, coordinator_epoch, committed, complete_transit)

Per partition, as Kafka's completion handler: NONE, UNSUPPORTED_FOR_MESSAGE_FORMAT and
UNSUPPORTED_VERSION take the partition out of the transaction; UNKNOWN_TOPIC_OR_PARTITION,
NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT and
KAFKA_STORAGE_ERROR are tried again (after ``retry_backoff_ms``); INVALID_PRODUCER_EPOCH and
TRANSACTION_COORDINATOR_FENCED give the transaction up (a newer producer or coordinator owns it).
A partition whose topic is gone (no leader in the metadata) is skipped, as Kafka skips it.
Kafka treats any other error as a bug and stops; here it is logged as an error and the partition
is taken out, so the transactional id does not stay stuck. A failed write of the request itself
(an exception) is tried again. Any other unexpected exception while sending (a bug, a failed
CompleteX write) is logged as an error and the whole send tried again after a backoff, as
Kafka's channel manager keeps a transaction's markers queued until they are written or the
transaction is removed: here until ``cancel`` (its coordinator partition unloaded) or a newer
``send`` for the same transactional id; otherwise the transaction would stay in PrepareX for good.
Kafka's broker stops on such a failure (its send thread's unhandled exception is fatal); here a
failure that repeats backs off as Kafka's clients do between retries (ExponentialBackoff of
``retry_backoff_ms``, doubled each failure in a row up to ``RETRY_BACKOFF_MAX_MS``, retry.backoff.max.ms's
default, with 20% jitter), so a bug that fails every send logs a line a second, not ten.
"""
from __future__ import annotations

import asyncio
import logging
import random

from kafkawire.messages.write_txn_markers_request import (WritableTxnMarker, WritableTxnMarkerTopic,
                                                          WriteTxnMarkersRequest)
from kafkawire.net import background
from kafkawire.net.backoff import ExponentialBackoff
from kafkawire.protocol.error_codes import Errors

__all__ = ["MarkerSender", "RETRY_BACKOFF_MAX_MS", "RETRY_BACKOFF_MS"]

log = logging.getLogger(__name__)
RETRY_BACKOFF_MS = 100
RETRY_BACKOFF_MAX_MS = 1000         # CommonClientConfigs.DEFAULT_RETRY_BACKOFF_MAX_MS
_DONE = frozenset((Errors.NONE, Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT, Errors.UNSUPPORTED_VERSION))
_RETRIABLE = frozenset((Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_ENOUGH_REPLICAS,
                        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT, Errors.KAFKA_STORAGE_ERROR))
_FENCED = frozenset((Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED))


class _GiveUp(Exception):
    pass


def marker_request(metadata, coordinator_epoch: int, committed: bool, partitions) -> WriteTxnMarkersRequest:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return WriteTxnMarkersRequest(markers=[WritableTxnMarker(
        producer_id=metadata.producer_id, producer_epoch=metadata.producer_epoch, transaction_result=committed,
        coordinator_epoch=coordinator_epoch, transaction_version=metadata.client_tv,
        topics=[WritableTxnMarkerTopic(name=t, partition_indexes=p) for t, p in by_topic.items()])])


class MarkerSender:
    def __init__(self, *, write, leader_known, retry_backoff_ms: int = RETRY_BACKOFF_MS, sleep=asyncio.sleep,
                 rng=random):
        self.write = write                      # async (WriteTxnMarkersRequest) -> WriteTxnMarkersResponse
        self.leader_known = leader_known        # (topic, partition) -> bool
        self.retry_backoff_ms = retry_backoff_ms
        # the wait after an unexpected failure of a whole send, by failures in a row
        self.failure_backoff = ExponentialBackoff(retry_backoff_ms, 2, RETRY_BACKOFF_MAX_MS, 0.2, rng)
        self.sleep = sleep                      # async (seconds): a test passes one that does not wait
        self.coordinator = None
        self.tasks: dict[str, asyncio.Task] = {}
        self._failures = 0                      # failed writes in a row: only the first is a warning

    def send(self, metadata, coordinator_epoch: int, committed: bool, complete) -> None:
        previous = self.tasks.get(metadata.transactional_id)
        if previous is not None:
            previous.cancel()
        task = background.start(self._run_until_sent(metadata, coordinator_epoch, committed, complete),
                                f"Sending the transaction markers of {metadata.transactional_id}", logger=log)
        self.tasks[metadata.transactional_id] = task
        task.add_done_callback(lambda t, key=metadata.transactional_id: self._forget(key, t))

    def cancel(self, transactional_id: str) -> None:
        """removeMarkersForTxn: the transaction's markers are no longer sent (its coordinator
        partition unloaded); it is not completed here, the new coordinator completes it."""
        task = self.tasks.pop(transactional_id, None)
        if task is not None:
            log.info("Removing the pending markers of %s: its coordinator partition is no longer led here",
                     transactional_id)
            task.cancel()

    def _forget(self, key: str, task: asyncio.Task) -> None:
        if self.tasks.get(key) is task:     # not replaced by a newer send meanwhile
            del self.tasks[key]

    async def _run_until_sent(self, metadata, coordinator_epoch: int, committed: bool, complete) -> None:
        """``_run`` until it ends, again after a backoff each time it raises, longer each failure
        in a row (``failure_backoff``): only a cancel (``cancel``, a newer ``send``, ``close``)
        stops it, during the backoff or a write. Each failure is logged once, here, with the wait
        before the next try; its traceback only the first time in a row."""
        failures = 0
        while True:
            try:
                return await self._run(metadata, coordinator_epoch, committed, complete)
            except Exception as exc:        # noqa: BLE001 -- CancelledError is no Exception: a cancel still ends it
                failures += 1
                wait_ms = self.failure_backoff.backoff_ms(failures - 1)
                log.error("Sending the transaction markers of %s failed (failure %d in a row), retrying in %d ms: %r",
                          metadata.transactional_id, failures, wait_ms, exc, exc_info=failures == 1)
            await self.sleep(wait_ms / 1000)

    async def _run(self, metadata, coordinator_epoch: int, committed: bool, complete) -> None:
        try:
            while metadata.partitions:
                self._skip_deleted(metadata)
                if metadata.partitions and not await self._write_once(metadata, coordinator_epoch, committed):
                    await self.sleep(self.retry_backoff_ms / 1000)
        except _GiveUp:
            return
        while self.coordinator.complete(metadata, coordinator_epoch, complete) == Errors.COORDINATOR_NOT_AVAILABLE:
            await self.sleep(self.retry_backoff_ms / 1000)

    def _skip_deleted(self, metadata) -> None:
        gone = [tp for tp in metadata.partitions if not self.leader_known(*tp)]
        for tp in gone:
            log.info("Couldn't find leader endpoint for partition %s-%d while trying to send transaction markers for "
                     "%s, it is likely deleted already and hence can be skipped", tp[0], tp[1],
                     metadata.transactional_id)
            metadata.partitions.discard(tp)

    async def _write_once(self, metadata, coordinator_epoch: int, committed: bool) -> bool:
        """One WriteTxnMarkers for the partitions left: whether all of them are done."""
        request = marker_request(metadata, coordinator_epoch, committed, metadata.partitions)
        try:
            response = await self.write(request)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:        # the partition side failed: try again, as after a disconnect
            self._failures += 1
            (log.warning if self._failures == 1 else log.debug)(
                "writing the markers of %s failed, retrying (failure %d): %r", metadata.transactional_id,
                self._failures, exc)
            return False
        self._failures = 0
        for marker in response.markers:
            for topic in marker.topics:
                for p in topic.partitions:
                    self._on_partition(metadata, (topic.name, p.partition_index), p.error_code)
        return not metadata.partitions

    def _on_partition(self, metadata, tp: tuple[str, int], code: int) -> None:
        if code in _DONE:
            metadata.partitions.discard(tp)
        elif code in _RETRIABLE:
            log.info("Sending %s's transaction marker for partition %s-%d has failed with error %s, retrying",
                     metadata.transactional_id, tp[0], tp[1], Errors.for_code(code).name)
        elif code in _FENCED:
            log.info("Sending %s's transaction marker for partition %s-%d has permanently failed with error %s; "
                     "cancel sending any more transaction markers", metadata.transactional_id, tp[0], tp[1],
                     Errors.for_code(code).name)
            raise _GiveUp()
        else:
            log.error("Unexpected error %s while sending txn marker for %s to %s-%d; the partition is skipped",
                      Errors.for_code(code).name, metadata.transactional_id, tp[0], tp[1])
            metadata.partitions.discard(tp)

    def close(self) -> None:
        for task in self.tasks.values():
            task.cancel()
