"""The broker's AlterPartition sender: Kafka's DefaultAlterPartitionManager.

    sender = AlterPartitionSender(broker_id, send=send_to_controller, broker_epoch=lambda: lifecycle.broker_epoch)
    sender.submit(topic_id, partition_index, change, on_done)   # on_done(change, (leader_epoch, isr,
                                                                #   partition_epoch) or Errors)

One change per partition waits at a time (a second one for the same partition is refused with
OPERATION_NOT_ATTEMPTED, as Kafka's manager refuses it); at most one request is in flight, carrying
every change waiting then (v3: topic ids, each ISR member with its broker epoch, the partition
epoch). A partition's answer completes its change. A top-level error (STALE_BROKER_EPOCH,
NOT_CONTROLLER, ...) or a controller out of reach keeps the changes waiting and sends them again
after 50 ms, as Kafka's manager retries until the controller answers.
"""
from __future__ import annotations

import asyncio
import logging
import uuid

from kafkawire.messages.alter_partition_request import AlterPartitionRequest, BrokerState, PartitionData, TopicData
from kafkawire.net import background
from kafkawire.protocol.error_codes import Errors

__all__ = ["AlterPartitionSender", "RETRY_BACKOFF_MS"]

log = logging.getLogger(__name__)
RETRY_BACKOFF_MS = 50
REQUEST_TIMEOUT_MS = 30_000
VALID_RECOVERY_STATES = (0, 1)


class AlterPartitionSender:
    """The changes waiting for the controller, and the one request in flight."""

    def __init__(self, broker_id: int, *, send, broker_epoch):
        self.broker_id = broker_id
        self.send = send                        # (request, timeout_ms) -> response, to the active controller
        self.broker_epoch = broker_epoch
        self.unsent: dict[tuple[uuid.UUID, int], tuple] = {}     # (topic id, partition) -> (change, on_done)
        self.in_flight = False
        self.tasks: set[asyncio.Task] = set()
        self._closed = False

    def submit(self, topic_id: uuid.UUID, index: int, change, on_done) -> None:
        key = (topic_id, index)
        if key in self.unsent:
            on_done(change, Errors.OPERATION_NOT_ATTEMPTED)
            return
        self.unsent[key] = (change, on_done)
        self._maybe_send()

    def _maybe_send(self) -> None:
        if self.unsent and not self.in_flight and not self._closed:
            self.in_flight = True
            self._spawn(self._send(dict(self.unsent)))

    def _spawn(self, coroutine) -> None:
        background.start(coroutine, "Sending AlterPartition to the controller", keep=self.tasks, logger=log)

    def build(self, items: dict) -> AlterPartitionRequest:
        """buildRequest: the waiting changes grouped by topic id."""
        topics: dict[uuid.UUID, TopicData] = {}
        for (topic_id, index), (change, _) in items.items():
            topic = topics.setdefault(topic_id, TopicData(topic_id=topic_id))
            topic.partitions.append(PartitionData(
                partition_index=index, leader_epoch=change.leader_epoch, partition_epoch=change.partition_epoch,
                leader_recovery_state=0,
                new_isr_with_epochs=[BrokerState(broker_id=b, broker_epoch=e) for b, e in change.isr_with_epochs]))
        return AlterPartitionRequest(broker_id=self.broker_id, broker_epoch=self.broker_epoch(),
                                     topics=list(topics.values()))

    async def _send(self, items: dict) -> None:
        request = self.build(items)
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_MS / 1000 + 1):
                response = await self.send(request, REQUEST_TIMEOUT_MS)
            error = self.on_response(response, items)
        except asyncio.CancelledError:
            raise
        except Exception as exc:        # NoLeader, transport errors, a timeout: Kafka's channel retries
            log.warning("AlterPartition could not reach the controller: %s", exc)
            error = Errors.NETWORK_EXCEPTION
        self.in_flight = False
        if error == Errors.NONE:
            self._maybe_send()
        elif not self._closed:
            asyncio.get_running_loop().call_later(RETRY_BACKOFF_MS / 1000, self._maybe_send)

    def on_response(self, response, items: dict) -> Errors:
        """handleAlterPartitionResponse: each partition answered completes its change."""
        error = Errors.for_code(response.error_code)
        if error != Errors.NONE:
            log.warning("Controller returned an unexpected top-level error when handling AlterPartition "
                        "request: %s", error.name)
            return error
        answers = {}
        for topic in response.topics:
            for p in topic.partitions:
                answers[(topic.topic_id, p.partition_index)] = p
        for key, (change, on_done) in items.items():
            p = answers.get(key)
            if p is None:
                log.warning("Partition %s-%d was sent but not included in the response", *key)
                continue
            if self.unsent.get(key, (None,))[0] is change:
                del self.unsent[key]
            on_done(change, _result(p))
        return Errors.NONE

    def close(self) -> None:
        self._closed = True
        for task in self.tasks:
            task.cancel()


def _result(p):
    """(leader epoch, ISR, partition epoch) of a partition's answer, or its error."""
    code = Errors.for_code(p.error_code)
    if code != Errors.NONE:
        return code
    if p.leader_recovery_state not in VALID_RECOVERY_STATES:
        log.error("Controller returned an invalid leader recovery state (%d)", p.leader_recovery_state)
        return Errors.UNKNOWN_SERVER_ERROR
    return p.leader_epoch, list(p.isr), p.partition_epoch
