"""Retention, segment roll, DeleteRecords and the checkpoint files of the broker's partition logs,
in process with fake clocks (no node, no sleeping): kafkawire.broker.retention decides as Kafka's
UnifiedLog.deleteOldSegments, kafkawire.broker.log_config resolves the settings as Kafka's
LogConfig/KafkaConfig, kafkawire.broker.log_manager applies them and writes the checkpoints as
Kafka's LogManager/ReplicaManager, kafkawire.storage.log rolls as Kafka's LogSegment.shouldRoll,
and kafkawire.broker.delete_records answers as Kafka's KafkaApis/Partition.deleteRecordsOnLeader.
"""
from __future__ import annotations

import asyncio
import dataclasses
import os
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.broker.delete_records import DeleteRecordsApi
from kafkawire.broker.log_config import LogSettings, TopicConfigs, log_settings
from kafkawire.broker.state_writes import StateWrites
from kafkawire.broker.log_manager import LogManager
from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.retention import SegmentView, segments_to_delete
from kafkawire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic
from kafkawire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch
from kafkawire.storage.log import Log
from kafkawire.storage.state_files import read_checkpoint

HOUR = 3_600_000
NOW = 1_000 * HOUR

CONFIG = parse_server_config("process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
                             "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
                             "controller.quorum.bootstrap.servers=127.0.0.1:9093\n")


def decide(segments, *, start=0, end=None, hw=None, now=NOW, **settings):
    end = end if end is not None else segments[-1].base_offset + 10
    return segments_to_delete(segments, log_start_offset=start, log_end_offset=end,
                              high_watermark=end if hw is None else hw, settings=LogSettings(**settings), now_ms=now)


# -- the decision (UnifiedLog.deleteOldSegments) --

def test_time_retention_deletes_the_oldest_expired_segments_and_stops_at_the_first_young_one():
    """Kafka's rule: by each segment's largest timestamp, from the oldest, stopping at the first
    segment that is not expired even when a later one is."""
    segments = [SegmentView(0, 100, NOW - 10 * HOUR), SegmentView(10, 100, NOW - 9 * HOUR),
                SegmentView(20, 100, NOW - HOUR), SegmentView(30, 100, NOW - 9 * HOUR), SegmentView(40, 100, NOW)]
    decision = decide(segments, retention_ms=5 * HOUR)
    assert (decision.count, decision.roll_first, decision.log_start_offset) == (2, False, 20)
    assert decide(segments, retention_ms=-1).nothing                   # -1: no time limit
    assert decide(segments, retention_ms=9 * HOUR).count == 1          # strictly more than retention.ms


def test_size_retention_deletes_while_the_log_stays_at_least_retention_bytes():
    segments = [SegmentView(0, 300, NOW), SegmentView(10, 300, NOW), SegmentView(20, 300, NOW), SegmentView(30, 50, NOW)]
    assert decide(segments, retention_bytes=650).count == 1            # 950 - 300 = 650 >= 650; - 300 more < 650
    assert decide(segments, retention_bytes=350).count == 2
    assert decide(segments, retention_bytes=951).nothing               # below retention.bytes: nothing
    assert decide(segments, retention_bytes=-1).nothing


def test_nothing_at_or_above_the_high_watermark_is_deleted():
    segments = [SegmentView(0, 100, 0), SegmentView(10, 100, 0), SegmentView(20, 100, 0)]
    assert decide(segments, end=30, hw=15, retention_ms=HOUR).count == 1      # the second holds offsets >= 15


def test_an_expired_active_segment_goes_too_after_a_roll_but_an_empty_one_never():
    """As Kafka's deleteSegments: when every segment goes, a new empty active segment is rolled
    first, and the log starts at the log end."""
    segments = [SegmentView(0, 100, 0), SegmentView(10, 100, 0)]
    decision = decide(segments, end=20, retention_ms=HOUR)
    assert (decision.count, decision.roll_first, decision.log_start_offset) == (2, True, 20)
    empty_active = [SegmentView(0, 100, 0), SegmentView(10, 0, 0)]
    decision = decide(empty_active, end=10, retention_ms=HOUR)
    assert (decision.count, decision.roll_first, decision.log_start_offset) == (1, False, 10)


def test_compacted_topics_lose_segments_only_below_the_log_start_offset():
    """cleanup.policy=compact (e.g. __consumer_offsets): neither time nor size deletes; a log start
    offset moved past whole segments still deletes them, as Kafka's; compact,delete deletes."""
    segments = [SegmentView(0, 100, 0), SegmentView(10, 100, 0), SegmentView(20, 100, 0)]
    compact = dict(retention_ms=HOUR, retention_bytes=1, cleanup_policy=("compact",))
    assert decide(segments, **compact).nothing
    assert decide(segments, start=15, **compact).count == 1
    assert decide(segments, start=15, retention_ms=HOUR, cleanup_policy=()).count == 1
    assert decide(segments, end=25, hw=20, retention_ms=HOUR, cleanup_policy=("compact", "delete")).count == 2


def test_the_log_start_offset_pass_deletes_segments_wholly_below_it():
    segments = [SegmentView(0, 100, NOW), SegmentView(10, 100, NOW), SegmentView(20, 100, NOW)]
    decision = decide(segments, start=20, retention_ms=-1)
    assert (decision.count, decision.log_start_offset) == (2, 20)
    assert decide(segments, start=19, retention_ms=-1).count == 1


# -- the settings (LogConfig, KafkaConfig) --

def config(**keys) -> object:
    return dataclasses.replace(CONFIG, **keys)


def test_retention_time_is_ms_then_minutes_then_hours_and_negative_is_unlimited():
    assert log_settings(None, "t", CONFIG).retention_ms == 168 * HOUR
    assert log_settings(None, "t", config(log_retention_hours=2, log_retention_minutes=3)).retention_ms == 180_000
    assert log_settings(None, "t", config(log_retention_minutes=3, log_retention_ms=7)).retention_ms == 7
    assert log_settings(None, "t", config(log_retention_ms=-5)).retention_ms == -1
    assert log_settings(None, "t", config(log_roll_hours=2)).segment_ms == 2 * HOUR
    assert log_settings(None, "t", config(log_roll_hours=2, log_roll_ms=9)).segment_ms == 9


def test_the_topics_config_wins_then_this_brokers_dynamic_then_every_brokers_then_the_file():
    image = MetadataImage()
    image.configs.update({(TOPIC_RESOURCE, "t"): {"retention.bytes": "500", "cleanup.policy": "compact,delete"},
                          (BROKER_RESOURCE, "1"): {"log.retention.minutes": "1"},
                          (BROKER_RESOURCE, ""): {"log.retention.ms": "9", "log.roll.hours": "3",
                                                  "log.segment.delete.delay.ms": "5"}})
    s = log_settings(image, "t", config(log_retention_bytes=7))
    assert (s.retention_bytes, s.delete, s.compact) == (500, True, True)
    assert s.retention_ms == 9                  # a dynamic log.retention.ms wins over log.retention.minutes
    # log.roll.hours is not reconfigurable: Kafka's broker drops a dynamic value of it (DynamicBrokerConfig)
    assert (s.segment_ms, s.file_delete_delay_ms) == (168 * HOUR, 5)
    assert log_settings(image, "other", CONFIG).retention_bytes == -1


def test_the_settings_parse_with_kafkas_bounds():
    base = ("process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
            "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
            "controller.quorum.bootstrap.servers=127.0.0.1:9093\n")
    c = parse_server_config(base + "log.retention.minutes=5\nlog.cleanup.policy=compact\n")
    assert (c.log_retention_minutes, c.log_retention_ms, c.log_cleanup_policy) == (5, None, ("compact",))
    for bad in ("log.roll.hours=0", "log.index.size.max.bytes=3", "log.cleanup.policy=forever",
                "log.retention.check.interval.ms=0"):
        with pytest.raises(ConfigError):
            parse_server_config(base + bad + "\n")


# -- the roll (LogSegment.shouldRoll) --

def batch(timestamp: int) -> bytes:
    return build_batch([(b"k", b"v", [], timestamp)])


def test_segment_ms_rolls_by_the_first_batchs_timestamp(tmp_path):
    """The new data's largest timestamp more than segment.ms past the active segment's first
    batch's: a new segment, whatever the wall clock says."""
    log_ = Log(tmp_path / "t-0", segment_ms=HOUR, clock=lambda: 0)
    log_.append(batch(NOW), assign_offsets=True)
    log_.append(batch(NOW + HOUR), assign_offsets=True)
    assert len(log_.segments) == 1
    log_.append(batch(NOW + HOUR + 1), assign_offsets=True)
    assert [s.base_offset for s in log_.segments] == [0, 2]
    log_.close()


def test_without_timestamps_segment_ms_counts_from_when_the_segment_was_made(tmp_path):
    now = [0]
    log_ = Log(tmp_path / "t-0", segment_ms=HOUR, clock=lambda: now[0])
    log_.append(batch(-1), assign_offsets=True)
    now[0] = HOUR
    log_.append(batch(-1), assign_offsets=True)
    assert len(log_.segments) == 1
    now[0] = HOUR + 1
    log_.append(batch(-1), assign_offsets=True)
    assert [s.base_offset for s in log_.segments] == [0, 2]
    log_.close()


def test_a_full_offset_index_rolls_the_segment(tmp_path):
    """segment.index.bytes=16: two offset index entries; index.interval.bytes=1 indexes each batch."""
    log_ = Log(tmp_path / "t-0", max_index_size=16, index_interval_bytes=1)
    for _ in range(5):
        log_.append(batch(NOW), assign_offsets=True)
    assert [s.base_offset for s in log_.segments] == [0, 2, 4]
    log_.close()


# -- the log manager: retention applied, .deleted files, checkpoints --

class FakeBroker:
    def __init__(self, log_dir, image=None, **keys):
        self.config = config(**keys)
        self.topic_configs = TopicConfigs(self.config)
        self.state_writes = StateWrites()
        self.node_id = 1
        self.log_dir = str(log_dir)
        self.partitions = {}
        self.replica_roles = SimpleNamespace(followers={})
        self._image = image or MetadataImage()
        self.now = [NOW]
        self.log_manager = LogManager(self, clock=lambda: self.now[0])

    def image(self):
        return self._image

    def open(self, topic: str, index: int = 0, topic_id=uuid.UUID(int=7), *, leader_epoch: int = 0,
             background_writes: bool = False):
        options = self.log_manager.open_options(self._image, topic, index, topic_id)
        directory = os.path.join(self.log_dir, f"{topic}-{index}")
        if os.path.isdir(directory):                  # as Broker.open_partition: leftovers go first
            self.log_manager.remove_stray_files(directory, f"{topic}-{index}")
        partition = LeaderPartition.open(self.log_dir, topic, index, topic_id, leader_epoch=leader_epoch,
                                         state_writes=self.state_writes if background_writes else None, **options)
        self.log_manager.opened(partition)
        self.partitions[(topic, index)] = partition
        return partition

    def close(self):
        self.log_manager.shutdown()
        for partition in self.partitions.values():
            partition.close()
        self.partitions.clear()


def checkpoint(broker, name) -> list[list[str]]:
    return read_checkpoint(os.path.join(broker.log_dir, name), fields=3)


def test_retention_renames_segments_deleted_then_removes_them_after_file_delete_delay(tmp_path):
    broker = FakeBroker(tmp_path, log_retention_hours=1, log_segment_delete_delay_ms=60_000)
    p = broker.open("t")
    for ts in (NOW - 3 * HOUR, NOW - 2 * HOUR, NOW):
        p.log.append(batch(ts), assign_offsets=True)
        p.log.roll()
    assert broker.log_manager.cleanup_logs() == 2
    assert p.log.log_start_offset == 2
    names = sorted(os.listdir(p.log.directory))
    assert "00000000000000000000.log.deleted" in names and "00000000000000000001.timeindex.deleted" in names
    broker.now[0] += 59_999
    assert broker.log_manager.delete_due_files() == 0
    broker.now[0] += 1
    assert broker.log_manager.delete_due_files() == 6
    assert not [n for n in os.listdir(p.log.directory) if n.endswith(".deleted")]
    broker.close()


def test_the_checkpoint_files_have_kafkas_format_and_the_log_start_comes_back_from_it(tmp_path):
    """version 0, the entry count, then `topic partition offset` lines; the log start offset
    checkpoint lists only the logs that start past their first segment; at a restart the log
    starts where the checkpoint says, and leftover .deleted files are removed."""
    broker = FakeBroker(tmp_path)
    p = broker.open("t")
    broker.open("u")
    for _ in range(4):
        p.log.append(batch(NOW), assign_offsets=True)
    p.maybe_increment_log_start_offset(3)           # as a DeleteRecords leaves it
    broker.log_manager.checkpoint_high_watermarks()
    assert sorted(checkpoint(broker, "replication-offset-checkpoint")) == [["t", "0", "4"], ["u", "0", "0"]]
    with open(os.path.join(tmp_path, "replication-offset-checkpoint")) as f:
        assert f.read().split("\n")[:2] == ["0", "2"]
    broker.log_manager.checkpoint_recovery_points()
    # the recovery point moved up with the log start (UnifiedLog.updateLogStartOffset)
    assert sorted(checkpoint(broker, "recovery-point-offset-checkpoint")) == [["t", "0", "3"], ["u", "0", "0"]]
    open(os.path.join(p.log.directory, "00000000000000000000.log.deleted"), "wb").close()
    broker.close()                                  # a clean stop: recovery points at the log ends
    assert sorted(checkpoint(broker, "recovery-point-offset-checkpoint")) == [["t", "0", "4"], ["u", "0", "0"]]
    assert checkpoint(broker, "log-start-offset-checkpoint") == [["t", "0", "3"]]
    again = FakeBroker(tmp_path)
    assert again.open("t").log.log_start_offset == 3
    assert not [n for n in os.listdir(os.path.join(tmp_path, "t-0")) if n.endswith(".deleted")]
    again.close()


def test_a_zero_retention_time_refuses_to_start_as_kafka(tmp_path):
    from kafkawire.broker.broker import BrokerStartError
    with pytest.raises(BrokerStartError, match="log.retention.ms must be unlimited"):
        FakeBroker(tmp_path, log_retention_ms=0)


# -- DeleteRecords (Partition.deleteRecordsOnLeader) --

def delete_records(broker, topic: str, *offsets, index: int = 0):
    request = DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsTopic(name=topic, partitions=[
        DeleteRecordsPartition(partition_index=index, offset=o) for o in offsets])])
    response = asyncio.run(DeleteRecordsApi(broker).delete_records(None, request))
    return [(r.error_code, r.low_watermark) for t in response.topics for r in t.partitions]


def led_image(*topics, leader=1, configs=None):
    image = SimpleNamespace(configs=configs or {}, topics_by_name={
        name: SimpleNamespace(partitions={0: SimpleNamespace(leader=leader)}) for name in topics})
    return image


def test_delete_records_moves_the_log_start_offset_up_to_the_high_watermark(tmp_path):
    broker = FakeBroker(tmp_path, image=led_image("t", "__consumer_offsets", "c",
                                                  configs={(TOPIC_RESOURCE, "c"): {"cleanup.policy": "compact"}}))
    p = broker.open("t")
    for _ in range(5):
        p.log.append(batch(NOW), assign_offsets=True)
    assert delete_records(broker, "t", 2) == [(Errors.NONE, 2)]
    assert delete_records(broker, "t", 1) == [(Errors.NONE, 2)]          # below the start: the start
    assert delete_records(broker, "t", 6) == [(Errors.OFFSET_OUT_OF_RANGE, -1)]
    assert delete_records(broker, "t", -2) == [(Errors.OFFSET_OUT_OF_RANGE, -1)]
    assert delete_records(broker, "t", -1) == [(Errors.NONE, 5)]         # -1: the high watermark
    assert delete_records(broker, "t", 0, index=3) == [(Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)]
    assert delete_records(broker, "gone", 0) == [(Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)]
    assert delete_records(broker, "__consumer_offsets", 0) == [(Errors.INVALID_TOPIC_EXCEPTION, -1)]
    broker.open("c")
    assert delete_records(broker, "c", 0) == [(Errors.POLICY_VIOLATION, -1)]
    broker._image.topics_by_name["t"].partitions[0].leader = 2
    assert delete_records(broker, "t", 5) == [(Errors.NOT_LEADER_OR_FOLLOWER, -1)]
    broker.close()


def test_a_dynamic_producer_id_expiration_reaches_the_open_logs_producer_state(tmp_path):
    """DynamicProducerStateManagerConfig: producer.id.expiration.ms set for every broker, then for
    this one, is what an open partition's producer state expires by from the next publish."""
    broker = FakeBroker(tmp_path, producer_id_expiration_ms=86_400_000)
    p = broker.open("t")
    assert p.producers.expiration_ms == 86_400_000
    for configs, expected in (({(BROKER_RESOURCE, ""): {"producer.id.expiration.ms": "60000"}}, 60_000),
                              ({(BROKER_RESOURCE, ""): {"producer.id.expiration.ms": "60000"},
                                (BROKER_RESOURCE, "1"): {"producer.id.expiration.ms": "1000"}}, 1000),
                              ({}, 86_400_000)):
        broker._image = led_image("t", configs=configs)
        broker.log_manager.configure(p, broker._image)
        assert p.producers.expiration_ms == expected
    broker.close()
