"""segment.jitter.ms (the broker's log.roll.jitter.ms / log.roll.jitter.hours), as Kafka 4.3.1 applies
it: each segment draws a jitter when it is made or opened (LogSegment.open with
LogConfig.randomSegmentJitter: a random 31-bit int modulo min(segment.jitter.ms, segment.ms)), and
LogSegment.shouldRoll rolls it once its age is more than segment.ms less that jitter (LogConfig's
maxSegmentMs, which a compacted topic's max.compaction.lag.ms lowers). In process: the jitter and
the clock are injected, nothing waits for time."""
from __future__ import annotations

import dataclasses
import random
import uuid

import pytest

from kafkawire.broker.log_config import log_settings
from kafkawire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.records.builder import build_batch
from kafkawire.storage.log import Log, random_segment_jitter

from .test_log_retention import CONFIG, HOUR, NOW, FakeBroker
from .test_topic_config import image_with

MINUTE = 60_000


def batch(timestamp: int) -> bytes:
    return build_batch([(b"k", b"v", [], timestamp)])


class Jitters:
    """An injected jitter source: hands out ``values`` in turn and records the bounds asked for."""
    def __init__(self, *values):
        self.values, self.bounds = list(values), []

    def __call__(self, bound: int) -> int:
        self.bounds.append(bound)
        return self.values.pop(0)


def test_each_segment_rolls_at_segment_ms_less_its_own_jitter(tmp_path):
    jitters = Jitters(10 * MINUTE, 0, 0)
    log_ = Log(tmp_path / "t-0", segment_ms=HOUR, segment_jitter_ms=30 * MINUTE, jitter=jitters, clock=lambda: 0)
    log_.append(batch(NOW), assign_offsets=True)
    log_.append(batch(NOW + 50 * MINUTE), assign_offsets=True)           # 50 min: not more than 60 - 10
    assert len(log_.segments) == 1
    log_.append(batch(NOW + 50 * MINUTE + 1), assign_offsets=True)       # rolls 10 minutes early
    assert [s.base_offset for s in log_.segments] == [0, 2]
    start = NOW + 50 * MINUTE + 1                                        # the new segment's jitter is 0
    log_.append(batch(start + HOUR), assign_offsets=True)
    assert len(log_.segments) == 2
    log_.append(batch(start + HOUR + 1), assign_offsets=True)
    assert len(log_.segments) == 3 and jitters.bounds == [30 * MINUTE] * 3
    log_.close()


def test_without_timestamps_the_jitter_comes_off_the_segments_age(tmp_path):
    now = [0]
    log_ = Log(tmp_path / "t-0", segment_ms=HOUR, segment_jitter_ms=HOUR, jitter=Jitters(HOUR - 1, 0),
               clock=lambda: now[0])
    log_.append(batch(-1), assign_offsets=True)
    now[0] = 1
    log_.append(batch(-1), assign_offsets=True)          # 1 ms old: not more than 60 min less (60 min - 1 ms)
    now[0] = 2
    log_.append(batch(-1), assign_offsets=True)          # 2 ms old: rolls
    now[0] = 3
    log_.append(batch(-1), assign_offsets=True)          # the new segment is 1 ms old, its jitter 0
    assert [s.base_offset for s in log_.segments] == [0, 2]
    log_.close()


def test_a_jitter_is_drawn_for_every_segment_opened_at_start_and_none_without_segment_jitter_ms(tmp_path):
    with Log(tmp_path / "t-0", segment_jitter_ms=5, jitter=Jitters(1, 2)) as log_:
        log_.append(batch(NOW), assign_offsets=True)
        log_.roll()
    reopened = Jitters(3, 4)
    Log(tmp_path / "t-0", segment_jitter_ms=7, jitter=reopened).close()
    assert reopened.bounds == [7, 7]
    Log(tmp_path / "t-1", jitter=Jitters()).close()      # segment_jitter_ms 0: no draw (an empty Jitters raises)


def test_the_random_draw_is_kafkas_31_bit_int_modulo_the_bound():
    random.seed(29)
    assert {random_segment_jitter(3) for _ in range(200)} == {0, 1, 2}
    assert all(0 <= random_segment_jitter(1 << 40) < 1 << 31 for _ in range(200))


def test_segment_jitter_ms_resolves_as_kafkas_log_config():
    """The topic's segment.jitter.ms, else log.roll.jitter.ms set for this broker, for every broker,
    then the file's log.roll.jitter.ms, else its log.roll.jitter.hours; the bound is at most segment.ms."""
    assert log_settings(None, "t", CONFIG).roll_jitter_bound_ms == 0
    hours = dataclasses.replace(CONFIG, log_roll_jitter_hours=2)
    assert log_settings(None, "t", hours).segment_jitter_ms == 2 * HOUR
    both = dataclasses.replace(hours, log_roll_jitter_ms=5)
    assert log_settings(None, "t", both).segment_jitter_ms == 5
    image = image_with({(BROKER_RESOURCE, ""): {"log.roll.jitter.ms": "7"}})
    assert log_settings(image, "t", both).segment_jitter_ms == 7
    image = image_with({(BROKER_RESOURCE, ""): {"log.roll.jitter.ms": "7"},
                        (TOPIC_RESOURCE, "t"): {"segment.jitter.ms": str(3 * HOUR), "segment.ms": str(HOUR)}})
    settings = log_settings(image, "t", both)
    assert (settings.segment_jitter_ms, settings.roll_jitter_bound_ms, settings.roll_ms) == (3 * HOUR, HOUR, HOUR)


def test_a_compacted_topic_rolls_by_max_compaction_lag_ms_too():
    image = image_with({(TOPIC_RESOURCE, "t"): {"cleanup.policy": "compact", "max.compaction.lag.ms": "60000",
                                                "segment.ms": str(HOUR)}})
    assert log_settings(image, "t", CONFIG).roll_ms == 60_000
    deleted = image_with({(TOPIC_RESOURCE, "t"): {"max.compaction.lag.ms": "60000", "segment.ms": str(HOUR)}})
    assert log_settings(deleted, "t", CONFIG).roll_ms == HOUR


def test_the_log_manager_hands_the_jitter_bound_to_the_log_and_a_config_change_to_new_segments(tmp_path):
    broker = FakeBroker(tmp_path, log_roll_jitter_ms=20 * MINUTE, log_roll_ms=HOUR)
    partition = broker.open("t", topic_id=uuid.UUID(int=3))
    assert (partition.log.segment_ms, partition.log.segment_jitter_ms) == (HOUR, 20 * MINUTE)
    broker._image = image_with({(TOPIC_RESOURCE, "t"): {"segment.jitter.ms": "0"}})
    broker.log_manager.configure(partition, broker._image)
    assert partition.log.segment_jitter_ms == 0
    broker.close()


def test_a_negative_log_roll_jitter_ms_is_refused_as_kafkaconfig_refuses_it():
    text = ("process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
            "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
            "controller.quorum.bootstrap.servers=127.0.0.1:9093\n")
    with pytest.raises(ConfigError, match="log.roll.jitter.ms.*must be greater than or equal to 0"):
        parse_server_config(text + "log.roll.jitter.ms=-1\n")
    with pytest.raises(ConfigError, match="log.roll.jitter.hours"):
        parse_server_config(text + "log.roll.jitter.hours=-1\n")
    assert parse_server_config(text + "log.roll.jitter.hours=2\n").log_roll_jitter_hours == 2
