"""flush.messages, flush.ms and index.interval.bytes (the broker's log.flush.interval.messages,
log.flush.interval.ms else log.flush.scheduler.interval.ms, and log.index.interval.bytes), as Kafka
4.3.1 applies them: UnifiedLog.append flushes once the offsets unflushed reach flush.messages; the
LogManager's flusher (every log.flush.scheduler.interval.ms) flushes a log whose last flush is
flush.ms or more ago; a segment adds an index entry once more than index.interval.bytes were
appended since its last one, the interval fixed when the segment is made. All three at the topic
and broker levels, dynamically too. In process: the clock is injected, nothing waits for time."""
from __future__ import annotations

import uuid

from kafkawire.broker.log_config import log_settings
from kafkawire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from kafkawire.storage.flush_stats import LOG_FLUSHES
from kafkawire.storage.log import NEVER, Log

from .test_log_retention import CONFIG, HOUR, NOW, FakeBroker, batch, checkpoint, config
from .test_topic_config import image_with


def test_an_append_flushes_once_the_unflushed_offsets_reach_flush_messages(tmp_path):
    with Log(tmp_path / "t-0", flush_messages=3) as log_:
        before = LOG_FLUSHES.count
        log_.append(batch(NOW), assign_offsets=True)
        log_.append(batch(NOW), assign_offsets=True)
        assert (log_.unflushed_messages, LOG_FLUSHES.count - before) == (2, 0)
        log_.append(batch(NOW), assign_offsets=True)
        assert (log_.flushed_offset, log_.unflushed_messages, LOG_FLUSHES.count - before) == (3, 0, 1)
        log_.truncate_to(1)
        assert log_.flushed_offset == 1


def test_by_default_an_append_never_flushes(tmp_path):
    with Log(tmp_path / "t-0") as log_:
        before = LOG_FLUSHES.count
        for _ in range(50):
            log_.append(batch(NOW), assign_offsets=True)
        assert (log_.flush_messages, log_.flushed_offset, LOG_FLUSHES.count - before) == (NEVER, 0, 0)


def index_entries(log_: Log) -> int:
    return log_.active_segment.offset_index.entries


def test_a_segment_indexes_a_batch_once_more_than_index_interval_bytes_came_since_the_last_entry(tmp_path):
    """Each batch is 70 bytes, and the check comes before the batch counts (LogSegment.append): at
    4096 (Kafka's default and kafkawire's) the 60th and 119th batches get entries (4130 > 4096
    bytes before each); at 0 every batch but the first; at 139 every other batch from the third."""
    size = len(batch(NOW))
    counts = {}
    for interval in (4096, 0, 2 * size - 1):
        with Log(tmp_path / f"i{interval}-0", index_interval_bytes=interval) as log_:
            for _ in range(120):
                log_.append(batch(NOW), assign_offsets=True)
            counts[interval] = index_entries(log_)
    assert size == 70
    assert counts == {4096: 2, 0: 119, 2 * size - 1: 59}


def test_the_broker_file_then_dynamic_broker_then_topic_levels_resolve_as_kafkas_log_config():
    defaults = log_settings(None, "t", CONFIG)
    assert (defaults.index_interval_bytes, defaults.flush_messages, defaults.flush_ms) == (4096, NEVER, NEVER)
    file_config = config(log_index_interval_bytes=100, log_flush_interval_messages=5,
                         log_flush_scheduler_interval_ms=HOUR)
    from_file = log_settings(None, "t", file_config)
    assert (from_file.index_interval_bytes, from_file.flush_messages, from_file.flush_ms) == (100, 5, HOUR)
    assert log_settings(None, "t", config(log_flush_interval_ms=7, log_flush_scheduler_interval_ms=HOUR)).flush_ms == 7
    dynamic = image_with({(BROKER_RESOURCE, ""): {"log.index.interval.bytes": "200", "log.flush.interval.ms": "9"},
                          (BROKER_RESOURCE, "1"): {"log.flush.interval.messages": "6"}})
    resolved = log_settings(dynamic, "t", file_config)
    assert (resolved.index_interval_bytes, resolved.flush_messages, resolved.flush_ms) == (200, 6, 9)
    topic = image_with({(TOPIC_RESOURCE, "t"): {"index.interval.bytes": "0", "flush.messages": "1", "flush.ms": "3"}})
    resolved = log_settings(topic, "t", file_config)
    assert (resolved.index_interval_bytes, resolved.flush_messages, resolved.flush_ms) == (0, 1, 3)


def test_the_log_manager_hands_them_to_the_log_and_a_change_to_the_open_log(tmp_path):
    broker = FakeBroker(tmp_path, log_index_interval_bytes=100, log_flush_interval_messages=5)
    partition = broker.open("t", topic_id=uuid.UUID(int=3))
    assert (partition.log.index_interval_bytes, partition.log.flush_messages) == (100, 5)
    broker._image = image_with({(TOPIC_RESOURCE, "t"): {"index.interval.bytes": "0", "flush.messages": "1"}})
    broker.log_manager.configure(partition, broker._image)
    assert (partition.log.index_interval_bytes, partition.log.flush_messages) == (0, 1)
    partition.log.append(batch(NOW), assign_offsets=True)
    assert partition.log.unflushed_messages == 0
    broker.log_manager.checkpoint_recovery_points()       # the flush moved the recovery point, as Kafka's
    assert checkpoint(broker, "recovery-point-offset-checkpoint") == [["t", "0", "1"]]
    partition.log.roll()
    assert partition.log.active_segment.index_interval_bytes == 0      # the segments made from now on
    broker.close()


def test_the_flusher_flushes_a_log_whose_last_flush_is_flush_ms_ago(tmp_path):
    broker = FakeBroker(tmp_path, image=image_with({(TOPIC_RESOURCE, "t"): {"flush.ms": "1000"}}))
    timed, untimed = broker.open("t", topic_id=uuid.UUID(int=3)), broker.open("u", topic_id=uuid.UUID(int=4))
    for partition in (timed, untimed):
        partition.log.append(batch(NOW), assign_offsets=True)
    assert broker.log_manager.flush_dirty_logs() == 0          # flushed at open, 0 ms ago
    broker.now[0] += 1000
    assert broker.log_manager.flush_dirty_logs() == 1          # "u" keeps flush.ms at Long.MAX_VALUE
    assert (timed.log.unflushed_messages, untimed.log.unflushed_messages) == (0, 1)
    assert broker.log_manager.recovery_points[("t", 0)] == 1
    broker.now[0] += 1000
    assert broker.log_manager.flush_dirty_logs() == 0          # nothing unflushed
    broker.close()


def test_an_append_of_several_batches_indexes_each_as_recovery_rebuilds_them(tmp_path):
    """LogSegment.append checks the interval before each batch of a chunk (a follower's fetch, a
    produce of several batches): the entries written are the ones recovery rebuilds from the file."""
    chunk = b"".join(batch(NOW + i) for i in range(6))
    with Log(tmp_path / "t-0", index_interval_bytes=len(batch(NOW))) as log_:
        log_.append(chunk, assign_offsets=True)
        log_.append(chunk, assign_offsets=True)
        segment = log_.active_segment
        appended = (segment.offset_index.to_bytes(), segment.time_index.to_bytes())
        segment.recover()
        assert (segment.offset_index.to_bytes(), segment.time_index.to_bytes()) == appended
        assert segment.offset_index.entries == 5        # every other batch from the third
