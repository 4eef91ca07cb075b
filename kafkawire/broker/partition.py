"""One partition this broker leads: its log under ``log.dirs/<topic>-<partition>`` (Kafka's
layout, with ``partition.metadata`` naming the topic id) and what a leader decides about it.

    partition = LeaderPartition.open(log_dir, "orders", 0, topic_id, leader_epoch=3, segment_bytes=...)
    base, append_time = partition.append(validate_produce(...))
    data = partition.read(fetch_offset, max_bytes, min_one_batch=True)

With one replica (this slice) the in-sync replicas are the leader alone, so the high watermark
is the log end offset: a batch is visible to consumers and acknowledged for acks=all as soon as
it is in the log, as Kafka's Partition.maybeIncrementLeaderHW finds with an ISR of one. Appends
reach the page cache, not the disk (Kafka's defaults, flush.messages and flush.ms unset, do
the same: durability comes from replicas); a clean stop flushes.

Opening recovers the log as kafkawire.storage.Log does (a torn or corrupt tail is cut). A
directory whose partition.metadata names another topic id is a deleted topic's left-over:
it is renamed to ``<topic>-<partition>.<uuid>-delete`` (Kafka's name for a log waiting to be
deleted) and a fresh log starts.
"""
from __future__ import annotations

import logging
import os
import uuid

from kafkawire.net.metadata_topic import EpochCache, batches_below
from kafkawire.storage.log import Log
from kafkawire.storage.segment import ReadResult
from kafkawire.storage.state_files import StateFileError, read_partition_metadata, write_partition_metadata

from .validation import ValidatedAppend

__all__ = ["LeaderPartition", "partition_dir_name"]

log = logging.getLogger(__name__)
PARTITION_METADATA = "partition.metadata"


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


class LeaderPartition:
    """A partition led here: the log, the leader epoch from the metadata, the epochs in the log."""

    def __init__(self, log_: Log, topic: str, partition: int, topic_id: uuid.UUID, leader_epoch: int):
        self.log = log_
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.leader_epoch = leader_epoch
        self.epochs = EpochCache(log_)

    @classmethod
    def open(cls, log_dir: str, topic: str, partition: int, topic_id: uuid.UUID, *, leader_epoch: int,
             **log_options) -> LeaderPartition:
        """``log_options``: keywords of kafkawire.storage.log.Log (``segment_bytes``, ``segment_ms``, ...)."""
        directory = os.path.join(log_dir, partition_dir_name(topic, partition))
        _set_aside_if_another_topic(directory, topic_id)
        log_ = Log(directory, **log_options)
        for report in log_.recovery_reports:
            if report.truncated:
                log.warning("%s: recovery cut the log: %s", directory, report)
        path = os.path.join(directory, PARTITION_METADATA)
        if not os.path.exists(path):
            write_partition_metadata(path, topic_id)
        return cls(log_, topic, partition, topic_id, leader_epoch)

    @property
    def name(self) -> str:
        return partition_dir_name(self.topic, self.partition)

    # -- what consumers see --

    def high_watermark(self) -> int:
        """One replica: everything in the log is in every in-sync replica."""
        return self.log.log_end_offset

    def append(self, validated: ValidatedAppend) -> int:
        """Append the batch at the log end, stamped with the leader epoch; its base offset."""
        first, _ = self.log.append(validated.data, assign_offsets=True, leader_epoch=self.leader_epoch)
        return first

    def read(self, offset: int, max_bytes: int, *, min_one_batch: bool) -> bytes:
        """Whole stored batches from the one holding ``offset`` (the bytes as on disk, not
        re-encoded), up to ``max_bytes`` but one batch at least when ``min_one_batch``, below the
        high watermark. Raises kafkawire.storage.log.OffsetOutOfRangeError outside the log."""
        result: ReadResult = self.log.read(offset, max_bytes, min_one_batch=min_one_batch)
        return batches_below(result.data, self.high_watermark())

    def close(self) -> None:
        self.log.flush()
        self.log.close()


def _set_aside_if_another_topic(directory: str, topic_id: uuid.UUID) -> None:
    path = os.path.join(directory, PARTITION_METADATA)
    if not os.path.exists(path):
        return
    try:
        found = read_partition_metadata(path)
    except (StateFileError, OSError) as exc:
        log.warning("%s: %s; the directory is set aside", path, exc)
        found = None
    if found == topic_id:
        return
    aside = f"{directory}.{uuid.uuid4().hex}-delete"
    log.warning("%s holds topic id %s, not %s (a deleted topic's log): renamed to %s", directory, found,
                topic_id, aside)
    os.rename(directory, aside)
