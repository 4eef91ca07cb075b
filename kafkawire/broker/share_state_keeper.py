"""The share-partition leader's use of the share coordinator, as Kafka 4.3.1's SharePartition
uses its persister: a share-partition's state is read when the leader first serves it
(``load``: start offset, state epoch and the in-flight records' states and delivery counts) and
written after each durable change (``write_dirty``: acknowledgements, which are answered only
once the write succeeded; ``write_soon``: releases, lock timeouts past the delivery limit, the
log start moving, written in the background), one write at a time per share-partition so the
coordinator sees them in order.

    keeper = ShareStateKeeper(share_apis)
    code = await keeper.load((group, topic_id, index), partition, settings)
    codes = await keeper.write_dirty(keys)          # {key: error code of its write}

The group coordinator initializes a share-partition before it assigns it
(kafkawire.broker.share_group_init), so a consumer finds its state; one the coordinator has no
state for (a client fetching a partition it was not assigned) is still initialized here, as a
fallback Kafka's leader does not have (state epoch 0, start offset -1: docs/differences.md).
A start offset of -1 is resolved as
before the coordinator existed: the leader's old checkpoint (kafkawire.broker.share_checkpoint),
else ``share.auto.offset.reset``; it is written at once. A write refused with
FENCED_STATE_EPOCH or FENCED_LEADER_EPOCH drops the share-partition here (read again next time).
"""
from __future__ import annotations

import asyncio
import logging

from kafkawire.protocol.error_codes import Errors

from .share_partition import ACKNOWLEDGED, ARCHIVED, SharePartition
from .share_persister import SharePersister

__all__ = ["ShareStateKeeper"]

log = logging.getLogger(__name__)
UNINITIALIZED = Errors.INVALID_REQUEST        # the coordinator's answer to a read of no state
FENCED = {int(Errors.FENCED_STATE_EPOCH), int(Errors.FENCED_LEADER_EPOCH)}


class ShareStateKeeper:
    def __init__(self, share):
        self.share = share                       # kafkawire.broker.share_apis.ShareApis
        self.persister = SharePersister(share.broker)
        self.state_epochs: dict[tuple, int] = {}
        self.known: set = set()                  # the share-partitions with state this broker read or set
        self._loading: dict[tuple, asyncio.Future] = {}
        self._locks: dict[tuple, asyncio.Lock] = {}
        self._background: set = set()

    def needs_load(self, key, partition) -> bool:
        sp = self.share.partitions.get(key)
        return sp is None or sp.leader_epoch != partition.leader_epoch

    async def load(self, key, partition, settings) -> int:
        """Read the share-partition's state into ``share.partitions`` (once for concurrent callers)."""
        pending = self._loading.get(key)
        if pending is None:
            pending = self._loading[key] = asyncio.ensure_future(self._load(key, partition, settings))
            pending.add_done_callback(lambda _: self._loading.pop(key, None))
        return await asyncio.shield(pending)

    async def _load(self, key, partition, settings) -> int:
        group_id, topic_id, index = key
        code, state = await self.persister.read(group_id, topic_id, index, partition.leader_epoch)
        if code == UNINITIALIZED:
            code = await self.persister.initialize(group_id, topic_id, index, 0, -1)
            if code == Errors.NONE:
                code, state = await self.persister.read(group_id, topic_id, index, partition.leader_epoch)
        if code != Errors.NONE:
            log.warning("Reading the state of share-partition %s failed: %s", key, Errors.for_code(code).name)
            return code
        state_epoch, start, batches = state
        resolved = start == -1
        if resolved:
            start, batches = self.share.initial_start(key, partition), []
        sp = SharePartition.restored(min(start, partition.log.log_end_offset), batches, partition.leader_epoch,
                                     settings.max_record_locks)
        sp.dirty = resolved
        self.share.partitions[key] = sp
        self.state_epochs[key] = state_epoch
        self.known.add(key)
        if resolved:
            self.write_soon([key])
        return Errors.NONE

    async def _write(self, key) -> int:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            sp = self.share.partitions.get(key)
            if sp is None:
                return Errors.NONE
            sp.dirty = False
            group_id, topic_id, index = key
            # the delivery-complete count: records acknowledged or archived above the start offset
            complete = sum(1 for e in sp.entries.values() if e.state in (ACKNOWLEDGED, ARCHIVED))
            code = await self.persister.write(group_id, topic_id, index, sp.leader_epoch,
                                              self.state_epochs.get(key, 0), sp.start_offset, sp.durable_batches(),
                                              complete)
        if code in FENCED and self.share.partitions.get(key) is sp:
            del self.share.partitions[key]            # another leader or state epoch moved on: read again
        elif code != Errors.NONE:
            sp.dirty = True                           # written again with the next change
            log.warning("Writing the state of share-partition %s failed: %s", key, Errors.for_code(code).name)
        return code

    async def write_dirty(self, keys) -> dict:
        """Write the changed share-partitions of ``keys``: {key: error code}."""
        dirty = [k for k in dict.fromkeys(keys) if getattr(self.share.partitions.get(k), "dirty", False)]
        codes = await asyncio.gather(*(self._write(k) for k in dirty))
        return dict(zip(dirty, codes))

    def write_soon(self, keys) -> None:
        """Write the changed ones of ``keys`` in the background (nobody waits for the answer)."""
        for key in dict.fromkeys(keys):
            sp = self.share.partitions.get(key)
            if sp is not None and sp.dirty:
                task = asyncio.ensure_future(self._write(key))
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    def forget(self, key) -> None:
        """The share-partition's state is deleted at the share coordinator: nothing kept here."""
        self.state_epochs.pop(key, None)
        self.known.discard(key)

    def close(self) -> None:
        for task in list(self._background) + list(self._loading.values()):
            task.cancel()
        self.persister.close_soon()
