"""The share-partition leader's use of the share coordinator, as Kafka 4.3.1's SharePartition
uses its persister: a share-partition's state is read when the leader first serves it
(``load``: start offset, state epoch and the in-flight records' states and delivery counts) and
written after each durable change, each write carrying the batches that changed, as Kafka's
SharePartition writes them (``write_changes``: acknowledgements, which are answered only once
the write succeeded; ``write_soon``: a member's releases, lock timeouts, the log start moving,
written in the background), one write at a time per share-partition so the coordinator sees
them in order. An acknowledgement's or release's change is a transition
(kafkawire.broker.share_partition): committed when its write succeeds, rolled back when it fails,
as Kafka's rollbackOrProcessStateUpdates does; other changes a failed write took are written
with the next one.

    keeper = ShareStateKeeper(share_apis)
    code = await keeper.load((group, topic_id, index), partition, settings)
    codes = await keeper.write_changes({key: changed_offsets})     # {key: error code of its write}

The group coordinator initializes a share-partition before it assigns it
(kafkawire.broker.share_group_init), so a consumer finds its state; one the coordinator has no
state for (a client fetching a partition it was not assigned) is not initialized here: the
coordinator refuses the read (INVALID_REQUEST) and the fetch answers UNKNOWN_SERVER_ERROR for
it with the coordinator's message, as Kafka's leader does. A start offset of -1 is resolved as
before the coordinator existed: the leader's old checkpoint (kafkawire.broker.share_checkpoint),
else ``share.auto.offset.reset``; it is written at once. A write refused with
FENCED_STATE_EPOCH or FENCED_LEADER_EPOCH drops the share-partition here (read again next time).
A failed read or write is answered with Kafka's mapping of its error (``persister_error``).
"""
from __future__ import annotations

import asyncio
import logging
import time

from kafkawire.net import background
from kafkawire.protocol.error_codes import Errors

from .share_errors import FENCED, persister_error
from .share_partition import SharePartition
from .share_persister import SharePersister

__all__ = ["ShareStateKeeper", "persister_error"]

log = logging.getLogger(__name__)


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
        if code != Errors.NONE:
            log.warning("Reading the state of share-partition %s failed: %s", key, Errors.for_code(code).name)
            return persister_error(code)
        state_epoch, start, batches = state
        resolved = start == -1
        if resolved:
            code, start = self.share.initial_start(key, partition)
            if code != Errors.NONE:                   # nothing kept: resolved again at the next fetch
                return code
            batches = []
        # a start past the log end is kept, as Kafka's SharePartition keeps it (an altered offset:
        # the records before it are not delivered)
        sp = SharePartition.restored(start, batches, partition.leader_epoch, settings.max_record_locks)
        sp.dirty = resolved
        self.share.partitions[key] = sp
        self.state_epochs[key] = state_epoch
        self.known.add(key)
        if resolved:
            self.write_soon([key])
        return Errors.NONE

    async def _write(self, key, changed=()) -> int:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            sp = self.share.partitions.get(key)
            if sp is None:
                return Errors.NONE
            group_id, topic_id, index = key
            batches, taken = sp.take_changes(changed)
            code = await self.persister.write(group_id, topic_id, index, sp.leader_epoch,
                                              self.state_epochs.get(key, 0), sp.start_offset, batches,
                                              sp.delivery_complete_count())
            if code == Errors.NONE:
                sp.commit(changed)
                return code
            sp.rollback(changed, int(time.time() * 1000), self.share.settings(group_id))
            sp.give_back(taken)
        if code in FENCED and self.share.partitions.get(key) is sp:
            del self.share.partitions[key]            # another leader or state epoch moved on: read again
        else:
            log.warning("Writing the state of share-partition %s failed: %s", key, Errors.for_code(code).name)
        return persister_error(code)

    async def write_changes(self, changes: dict) -> dict:
        """Write each share-partition of ``changes`` ({key: the offsets of its transition}) that
        has a change: {key: error code}."""
        wanted = {k: c for k, c in changes.items() if c or getattr(self.share.partitions.get(k), "dirty", False)}
        codes = await asyncio.gather(*(self._write(k, c) for k, c in wanted.items()))
        return dict(zip(wanted, codes))

    def write_soon(self, keys, changes: dict | None = None) -> None:
        """Write the changed ones of ``keys`` (with their transitions' offsets in ``changes``) in
        the background (nobody waits for the answer)."""
        changes = changes or {}
        for key in dict.fromkeys(keys):
            sp = self.share.partitions.get(key)
            changed = changes.get(key, ())
            if sp is not None and (sp.dirty or changed):
                background.start(self._write(key, changed), f"Writing the state of share-partition {key}",
                                 keep=self._background, logger=log)

    def forget(self, key) -> None:
        """The share-partition's state is deleted at the share coordinator: nothing kept here."""
        self.state_epochs.pop(key, None)
        self.known.discard(key)

    def close(self) -> None:
        for task in list(self._background) + list(self._loading.values()):
            task.cancel()
        self.persister.close_soon()
