"""Retention and compaction of followed replicas, in process on a real Broker with a stand-in metadata
image and a fake clock (no node, no fetcher traffic: the follower's log is written as its fetcher
writes it). Kafka's LogManager runs retention (UnifiedLog.deleteOldSegments) and its LogCleaner
compacts on every log of the directory, leader or follower, each bounded by the replica's own high
watermark (retention) and last stable offset (compaction); a follower's truncation aborts a cleaning
of its log and takes the cleaner checkpoint down to its active segment (LogManager.truncateTo); a
restarted follower's log starts where log-start-offset-checkpoint says.
"""
from __future__ import annotations

import asyncio
import os

from kafkawire.metadata.image import TOPIC_RESOURCE
from kafkawire.records.builder import build_batch
from kafkawire.storage.state_files import EpochEntry, read_offset_checkpoint

from .test_replica_roles import image_with, make_broker

HOUR = 3_600_000
NOW = 1_000 * HOUR


def follow(tmp_path, **topic_configs):
    """A broker following t-0 (the leader offline, -1: no fetcher runs, the tests write the follower's
    log as its fetcher would), the topic's configs as given, the clock at NOW."""
    broker, state = make_broker(tmp_path)
    image = image_with(-1, 1)
    image.configs = {(TOPIC_RESOURCE, "t"): {k.replace("_", "."): v for k, v in topic_configs.items()}}
    state["image"] = image
    broker.log_manager.clock = lambda: NOW
    broker.on_metadata()
    return broker, broker.replica_roles.followers[("t", 0)]


def copy_segments(follower, *segments, epoch: int = 1) -> None:
    """Append as follower, one segment per item: a list of (key, timestamp) records, one batch each;
    the log rolled after each item but the last (as the leader's segments were)."""
    for i, records in enumerate(segments):
        for key, ts in records:
            offset = follower.log.log_end_offset
            follower.append(build_batch([(key.encode(), str(offset).encode(), [], ts)], base_offset=offset,
                                        partition_leader_epoch=epoch))
        if i + 1 < len(segments):
            follower.log.roll()


def retention(broker, follower) -> int:
    """One retention pass, once the producer snapshots and epoch checkpoints queued are on disk (a pass
    skips a log with some pending, for its next run)."""
    broker.state_writes.wait(follower.log.directory)
    return broker.log_manager.cleanup_logs()


def cleaner_round(broker, follower) -> bool:
    """One round of the log cleaner (its retention of compacted logs too, hence the settled writes)."""
    broker.state_writes.wait(follower.log.directory)
    return asyncio.run(broker.log_manager.cleaner.clean_once())


def bases(follower) -> list[int]:
    return [s.base_offset for s in follower.log.segments]


def keys(follower) -> list[tuple[int, str]]:
    return [(r.offset, bytes(r.key).decode()) for b in follower.log.batches() for r in b]


def stop(broker) -> None:
    async def close():
        broker.log_manager.shutdown()
        await broker.replica_roles.close()
    asyncio.run(close())
    broker.state_writes.close()


OLD = NOW - 3 * HOUR


def test_time_retention_trims_a_follower_without_its_leader_and_never_above_its_high_watermark(tmp_path):
    """retention.ms=1h, three expired segments and a young active one; the leader's log start stays 0.
    Kafka deletes the expired segments wholly below the follower's own high watermark, and the log
    start (and the leader epoch cache's first entry) moves to the first segment left."""
    broker, follower = follow(tmp_path, retention_ms=str(HOUR))
    copy_segments(follower, [("a", OLD), ("b", OLD)], [("c", OLD), ("d", OLD)], [("e", OLD)])
    follower.log.roll()
    copy_segments(follower, [("f", NOW)], epoch=2)
    assert bases(follower) == [0, 2, 4, 5]
    follower.update_from_leader(high_watermark=3, log_start_offset=0)
    assert retention(broker, follower) == 1            # [2, 4) holds offset 3 >= the high watermark
    assert (bases(follower), follower.log.log_start_offset) == ([2, 4, 5], 2)
    assert follower.epochs.entries == [EpochEntry(1, 2), EpochEntry(2, 5)]
    follower.update_from_leader(high_watermark=6, log_start_offset=0)
    assert retention(broker, follower) == 2            # the young active segment stays
    assert (bases(follower), follower.log.log_start_offset) == ([5], 5)
    assert follower.epochs.entries == [EpochEntry(2, 5)]
    assert keys(follower) == [(5, "f")]
    stop(broker)


def test_size_retention_trims_a_follower_below_its_high_watermark(tmp_path):
    broker, follower = follow(tmp_path, retention_bytes="1")
    copy_segments(follower, [("a", NOW)], [("b", NOW)], [("c", NOW)], [("d", NOW)])
    follower.update_from_leader(high_watermark=2, log_start_offset=0)
    assert retention(broker, follower) == 2
    assert (bases(follower), follower.log.log_start_offset) == ([2, 3], 2)
    stop(broker)


def test_the_leaders_log_start_moves_the_followers_and_its_retention_pass_deletes_the_segments_below(tmp_path):
    """maybeIncrementLogStartOffset(LeaderOffsetIncremented) moves only the log start (and the epoch
    cache's first entry); deleteLogStartOffsetBreachedSegments at the next pass, whatever the retention
    limits, renames the segments wholly below it .deleted (removed file.delete.delay.ms later)."""
    broker, follower = follow(tmp_path, retention_ms="-1")
    copy_segments(follower, [("a", OLD)], [("b", OLD)], [("c", OLD), ("d", OLD)])
    follower.update_from_leader(high_watermark=4, log_start_offset=3)
    assert (bases(follower), follower.log.log_start_offset) == ([0, 1, 2], 3)
    assert follower.epochs.entries == [EpochEntry(1, 3)]
    assert retention(broker, follower) == 2
    assert bases(follower) == [2] and keys(follower) == [(3, "d")]
    assert "00000000000000000000.log.deleted" in os.listdir(follower.log.directory)
    stop(broker)


def test_a_restarted_follower_starts_its_log_where_its_checkpoint_says(tmp_path):
    """Retention deletes the follower's first segment, then the leader's log start (as a DeleteRecords
    left it) moves it inside the next: the log start is checkpointed and comes back at restart
    (LogManager.loadLogs reads log-start-offset-checkpoint for every log of the directory)."""
    broker, follower = follow(tmp_path, retention_ms=str(HOUR))
    copy_segments(follower, [("a", OLD)], [("b", NOW), ("c", NOW), ("d", NOW)])
    follower.update_from_leader(high_watermark=4, log_start_offset=0)
    assert retention(broker, follower) == 1
    follower.update_from_leader(high_watermark=4, log_start_offset=2)      # inside the active segment
    assert (bases(follower), follower.log.log_start_offset) == ([1], 2)
    stop(broker)
    assert read_offset_checkpoint(os.path.join(tmp_path, "log-start-offset-checkpoint")) == {("t", 0): 2}
    again, follower = follow(tmp_path)
    assert (follower.log.log_start_offset, follower.high_watermark) == (2, 4)
    assert keys(follower)[0] == (2, "c")
    stop(again)


def test_a_compacted_follower_is_cleaned_up_to_its_own_high_watermark(tmp_path):
    """cleanup.policy=compact: the cleaner compacts the follower's log below its last stable offset (its
    high watermark here) and checkpoints it; a later high watermark lets the next round go further."""
    broker, follower = follow(tmp_path, cleanup_policy="compact")
    copy_segments(follower, [("a", NOW), ("b", NOW), ("a", NOW)], [("b", NOW), ("a", NOW), ("b", NOW)],
                  [("a", NOW), ("c", NOW), ("a", NOW)], [("z", NOW)])
    follower.update_from_leader(high_watermark=6, log_start_offset=0)
    cleaner = broker.log_manager.cleaner
    assert cleaner_round(broker, follower) is True
    assert keys(follower) == [(4, "a"), (5, "b"), (6, "a"), (7, "c"), (8, "a"), (9, "z")]
    assert cleaner.checkpoints[("t", 0)] == 6
    assert read_offset_checkpoint(os.path.join(tmp_path, "cleaner-offset-checkpoint")) == {("t", 0): 6}
    follower.update_from_leader(high_watermark=10, log_start_offset=0)
    assert cleaner_round(broker, follower) is True
    assert keys(follower) == [(5, "b"), (7, "c"), (8, "a"), (9, "z")]
    assert cleaner.checkpoints[("t", 0)] == 9
    stop(broker)


def test_a_followers_open_transaction_bounds_its_compaction(tmp_path):
    """The follower's producer state replays the leader's transactional batches: an open transaction at
    offset 3 makes it the last stable offset, below which alone the cleaner cleans (without it, the
    a at offset 3 would replace the one at 2)."""
    broker, follower = follow(tmp_path, cleanup_policy="compact")
    copy_segments(follower, [("a", NOW), ("a", NOW), ("a", NOW)])
    follower.log.roll()
    follower.append(build_batch([(b"a", b"3", [], NOW)], base_offset=3, partition_leader_epoch=1, producer_id=42,
                                producer_epoch=1, base_sequence=0, is_transactional=True))
    copy_segments(follower, [("b", NOW), ("b", NOW)], [("a", NOW)])
    follower.update_from_leader(high_watermark=6, log_start_offset=0)
    assert follower.partition.last_stable_offset() == 3
    assert cleaner_round(broker, follower) is True
    assert keys(follower) == [(2, "a"), (3, "a"), (4, "b"), (5, "b"), (6, "a")]
    assert broker.log_manager.cleaner.checkpoints[("t", 0)] == 3
    stop(broker)


def test_compact_delete_followers_get_retention_from_the_cleaner(tmp_path):
    broker, follower = follow(tmp_path, cleanup_policy="compact,delete", retention_ms=str(HOUR))
    copy_segments(follower, [("a", OLD)], [("b", OLD)], [("c", NOW)])
    follower.update_from_leader(high_watermark=3, log_start_offset=0)
    assert retention(broker, follower) == 0          # the retention task leaves compacted logs
    cleaner_round(broker, follower)
    assert follower.log.log_start_offset == 2
    stop(broker)


def test_a_follower_truncation_aborts_its_cleaning_and_takes_the_checkpoint_down(tmp_path):
    """LogManager.truncateTo below the active segment, while the cleaner's thread waits for its swap:
    the cleaning stops, not swapped (the segments it replaces are cut) nor the log marked uncleanable,
    and no checkpoint moves; a truncation below the checkpoint takes it down to the new
    active segment (maybeTruncateCleanerCheckpointToActiveSegmentBaseOffset)."""
    broker, follower = follow(tmp_path, cleanup_policy="compact")
    copy_segments(follower, [("a", NOW), ("a", NOW)], [("a", NOW), ("a", NOW)], [("z", NOW)])
    follower.update_from_leader(high_watermark=5, log_start_offset=0)
    cleaner = broker.log_manager.cleaner
    swap = cleaner._swap

    async def truncated_first(new_base, old_bases):
        follower.truncate_to(3)                # a diverging epoch: the log ends at 3, its active segment at 2
        return await swap(new_base, old_bases)
    cleaner._swap = truncated_first
    assert cleaner_round(broker, follower) is True
    assert keys(follower) == [(0, "a"), (1, "a"), (2, "a")]
    assert cleaner.uncleanable == {} and ("t", 0) not in cleaner.checkpoints      # doneCleaning of an abort
    assert not [n for n in os.listdir(follower.log.directory) if ".cleaned" in n]

    cleaner._swap = swap
    follower.update_from_leader(high_watermark=3, log_start_offset=0)
    cleaner.checkpoints[("t", 0)] = 3                   # as a finished cleaning leaves it
    follower.truncate_to(2)                             # to the active segment's base: nothing to stop
    assert cleaner.checkpoints[("t", 0)] == 3
    follower.truncate_fully_and_start_at(1)             # out of range: the log starts again at 1
    assert cleaner.checkpoints[("t", 0)] == 1
    assert read_offset_checkpoint(os.path.join(tmp_path, "cleaner-offset-checkpoint")) == {("t", 0): 1}
    stop(broker)
