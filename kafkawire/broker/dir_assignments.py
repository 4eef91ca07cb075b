"""The broker's side of AssignReplicasToDirs (API 73, KIP-858): Kafka's AssignmentsManager.

    assignments = DirAssignments(node_id, send=send_to_controller, broker_epoch=lambda: epoch, image=image)
    assignments.submit(topic_id, 0, directory_id)      # the replica's log is in that directory
    assignments.start()                                # the sending task, on the running loop
    assignments.close()

Whenever the metadata's directory of one of this broker's replicas is not the directory its log
is in (a new partition the controller left UNASSIGNED, a replica moved by AlterReplicaLogDirs),
the broker tells the active controller (ReplicaManager.maybeUpdateTopicAssignment). Assignments
wait in ``ready`` (the latest per partition wins); one request at a time carries at most 2250
of them (AssignReplicasToDirsRequest.MAX_ASSIGNMENTS_PER_REQUEST), each still valid against the
image when sent (the topic and partition exist, this broker is a replica). A failed request, or a
partition answered with an error, goes back to ``ready`` and is sent again after a backoff of
100 ms doubling up to 10 s (Kafka's STANDARD_BACKOFF, without its 2% jitter). An assignment may
carry a callback run when the controller accepts it (AlterReplicaLogDirs' swap waits for it,
kafkawire.broker.log_dir_copy), as Kafka's Assignment's successCallback.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Awaitable, Callable

from kafkawire.messages.assign_replicas_to_dirs_request import (AssignReplicasToDirsRequest, DirectoryData,
                                                                PartitionData, TopicData)
from kafkawire.net.client import TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.contract import NoLeader, NotLeader

__all__ = ["DirAssignments", "MAX_ASSIGNMENTS_PER_REQUEST"]

log = logging.getLogger(__name__)
MAX_ASSIGNMENTS_PER_REQUEST = 2250
FIRST_BACKOFF_MS, MAX_BACKOFF_MS = 100, 10_000
REQUEST_TIMEOUT_MS = 5000


class DirAssignments:
    """Queued replica-to-directory assignments and the task that sends them."""

    def __init__(self, node_id: int, *, send: Callable[[object, int], Awaitable[object]],
                 broker_epoch: Callable[[], int], image: Callable):
        self.node_id = node_id
        self.send = send
        self.broker_epoch = broker_epoch
        self.image = image
        self.ready: dict[tuple[uuid.UUID, int], uuid.UUID] = {}
        self.inflight: dict[tuple[uuid.UUID, int], uuid.UUID] = {}     # sent, not answered yet
        # run when the controller accepts that directory for that partition (Assignment.successCallback)
        self.on_accepted: dict[tuple[uuid.UUID, int], tuple[uuid.UUID, Callable[[], None]]] = {}
        self.sent = 0                       # assignments the controller accepted
        self.failures = 0                   # consecutive failed rounds (the backoff's exponent)
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None

    def submit(self, topic_id: uuid.UUID, partition: int, directory_id: uuid.UUID, *,
               on_accepted: Callable[[], None] | None = None) -> None:
        """Queue an assignment (not again while the same one waits or is in flight: the metadata
        names the new directory only once the controller's record is committed); ``on_accepted``
        runs once the controller answers NONE for it (a move's swap waits for that)."""
        key = (topic_id, partition)
        if on_accepted is not None:
            self.on_accepted[key] = (directory_id, on_accepted)
        if self.ready.get(key) != directory_id and self.inflight.get(key) != directory_id:
            self.ready[(topic_id, partition)] = directory_id
            self._wake.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.ready:
                if await self._send_once():
                    self.failures = 0
                    continue
                self.failures += 1
                delay = min(FIRST_BACKOFF_MS * 2 ** min(self.failures - 1, 16), MAX_BACKOFF_MS)
                await asyncio.sleep(delay / 1000)

    def _take_batch(self) -> dict:
        """Up to MAX_ASSIGNMENTS_PER_REQUEST valid assignments, taken out of ``ready`` (invalid ones dropped)."""
        image = self.image()
        batch: dict = {}
        for key in list(self.ready):
            if len(batch) >= MAX_ASSIGNMENTS_PER_REQUEST:
                break
            directory_id = self.ready.pop(key)
            topic = None if image is None else image.topics_by_id.get(key[0])
            registration = None if topic is None else topic.partitions.get(key[1])
            if registration is not None and self.node_id in registration.replicas:
                batch[key] = directory_id
            elif self.on_accepted.get(key, (None,))[0] == directory_id:
                del self.on_accepted[key]       # never accepted now (Kafka drops an invalid one unsent)
        return batch

    async def _send_once(self) -> bool:
        try:
            return await self._send_batch()
        except asyncio.CancelledError:
            raise
        except Exception:        # a bug: logged, and the batch sent again after the backoff, not a dead sender
            log.exception("Sending AssignReplicasToDirs to the controller failed")
            for key, directory_id in self.inflight.items():
                self.ready.setdefault(key, directory_id)
            return False
        finally:
            self.inflight = {}

    async def _send_batch(self) -> bool:
        """One request; False when it, or one of its partitions, failed (those are queued again)."""
        epoch = self.broker_epoch()
        if epoch < 0:
            return False
        batch = self._take_batch()
        if not batch:
            return True
        self.inflight = dict(batch)
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_MS / 1000 + 1):
                response = await self.send(_request(self.node_id, epoch, batch), REQUEST_TIMEOUT_MS)
        except (NoLeader, NotLeader, TransportError, TimeoutError, OSError) as exc:
            return self._requeue(batch, f"{type(exc).__name__}: {exc}")
        if response.error_code != Errors.NONE:
            return self._requeue(batch, Errors.for_code(response.error_code).name)
        failed = {}
        for directory in response.directories:
            for topic in directory.topics:
                for p in topic.partitions:
                    key = (topic.topic_id, p.partition_index)
                    if key not in batch:
                        continue
                    directory_id = batch.pop(key)
                    if p.error_code == Errors.NONE:
                        self.sent += 1
                        self._accepted(key, directory_id)
                    else:
                        failed[key] = directory_id
                        log.error("assigning %s-%d to directory %s: %s", key[0], key[1], directory_id,
                                  Errors.for_code(p.error_code).name)
        failed.update(batch)                # no answer for these: sent again
        for key, directory_id in failed.items():
            self.ready.setdefault(key, directory_id)     # a newer assignment queued meanwhile wins
        return not failed

    def _accepted(self, key, directory_id) -> None:
        if self.on_accepted.get(key, (None,))[0] != directory_id:
            return
        _, callback = self.on_accepted.pop(key)
        try:
            callback()
        except Exception:        # a bug of the caller: logged, the sender goes on
            log.exception("the callback of the assignment of %s-%d to %s failed", key[0], key[1], directory_id)

    def _requeue(self, batch: dict, why: str) -> bool:
        log.info("broker %d: AssignReplicasToDirs of %d assignments failed (%s); retrying after a backoff",
                 self.node_id, len(batch), why)
        for key, directory_id in batch.items():
            self.ready.setdefault(key, directory_id)
        return False


def _request(node_id: int, epoch: int, batch: dict) -> AssignReplicasToDirsRequest:
    by_dir: dict = {}
    for (topic_id, index), directory_id in batch.items():
        by_dir.setdefault(directory_id, {}).setdefault(topic_id, []).append(index)
    return AssignReplicasToDirsRequest(broker_id=node_id, broker_epoch=epoch, directories=[
        DirectoryData(id=directory_id, topics=[
            TopicData(topic_id=topic_id, partitions=[PartitionData(partition_index=i) for i in indexes])
            for topic_id, indexes in topics.items()])
        for directory_id, topics in by_dir.items()])
