"""A group's dynamic configs (kafkawire/metadata/group_configs.py): GroupConfig's names, types
and validators, the broker's bounds, and the values a coordinator uses (clamped as Kafka's
GroupConfig.evaluate clamps them). The controller's answers are in
tests/controller/test_admin_apis.py."""
import logging

import pytest

from kafkawire.metadata.config_def import ConfigValueError
from kafkawire.metadata.group_configs import (GROUP_CONFIG_KEYS, GroupBounds, GroupNameError,
                                              effective_consumer_timeouts, effective_share_configs,
                                              effective_streams_configs, validate_group_configs)
from kafkawire.metadata.image import GROUP_RESOURCE, SUPPORTED_CONFIGS
from kafkawire.net.config import parse_server_config

BOUNDS = GroupBounds()


def test_the_names_are_the_ones_kafkas_image_lets_in():
    assert set(GROUP_CONFIG_KEYS) == SUPPORTED_CONFIGS[GROUP_RESOURCE]


@pytest.mark.parametrize("configs, message", [
    ({"consumer.heartbeat.interval.ms": "4999"},
     "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"),
    ({"consumer.assignment.interval.ms": "15001"},
     "consumer.assignment.interval.ms must be less than or equal to group.consumer.max.assignment.interval.ms"),
    ({"share.delivery.count.limit": "11"},
     "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit"),
    ({"streams.num.standby.replicas": "3"},
     "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"),
    ({"share.isolation.level": "serializable"},
     "Invalid value serializable for configuration share.isolation.level: String must be one of: read_committed, "
     "read_uncommitted"),
    ({"share.renew.acknowledge.enable": "yes"},
     "Invalid value yes for configuration share.renew.acknowledge.enable: Expected value to be either true or false"),
    ({"consumer.session.timeout.ms": "x", "share.session.timeout.ms": "y"},      # ConfigDef's order: the first
     "Invalid value x for configuration consumer.session.timeout.ms: Not a number of type INT"),
    ({"consumer.heartbeat.interval.ms": None}, "Null value not supported for group configs: consumer.heartbeat.interval.ms"),
])
def test_refused_values_carry_kafkas_messages(configs, message):
    with pytest.raises(ConfigValueError) as caught:
        validate_group_configs("g", configs, BOUNDS)
    assert str(caught.value) == message


def test_session_must_exceed_heartbeat_within_wide_bounds():
    wide = GroupBounds(consumer_min_session_timeout_ms=1, consumer_min_heartbeat_interval_ms=1)
    with pytest.raises(ConfigValueError, match="^consumer.session.timeout.ms must be greater than "
                                               "consumer.heartbeat.interval.ms$"):
        validate_group_configs("g", {"consumer.session.timeout.ms": "3000", "consumer.heartbeat.interval.ms": "3000"},
                               wide)
    validate_group_configs("g", {"consumer.session.timeout.ms": "3001", "consumer.heartbeat.interval.ms": "3000"}, wide)


@pytest.mark.parametrize("value, ok", [
    ("earliest", True), ("latest", True), ("none", False), ("LATEST", False), ("by_duration", False),
    ("by_duration:PT1H", True), ("by_duration:p1dt2h3m4.5s", True), ("by_duration:-PT1H", False),
    ("by_duration:PT-1S", False), ("by_duration:P1DT-1H", True), ("by_duration:P", False),
    ("by_duration:PT", False), ("by_duration:P1DT", False), ("by_duration:1H", False),
])
def test_share_auto_offset_reset_takes_kafkas_strategies(value, ok):
    configs = {"share.auto.offset.reset": value}
    if ok:
        validate_group_configs("g", configs, BOUNDS)
    else:
        with pytest.raises(ConfigValueError, match="The value must be either 'earliest', 'latest' or of the format"):
            validate_group_configs("g", configs, BOUNDS)


def test_the_default_group_is_not_a_resource():
    with pytest.raises(GroupNameError, match="^Default group resources are not allowed.$"):
        validate_group_configs("", {}, BOUNDS)


def test_a_coordinator_uses_the_groups_values_clamped_to_its_bounds(caplog):
    assert effective_consumer_timeouts("g", None, BOUNDS) == (45_000, 5_000)
    assert effective_consumer_timeouts("g", {"consumer.session.timeout.ms": "50000",
                                             "consumer.heartbeat.interval.ms": "6000"}, BOUNDS) == (50_000, 6_000)
    with caplog.at_level(logging.WARNING, logger="kafkawire.metadata.group_configs"):
        # set when the bounds were wider: clamped to this broker's
        assert effective_consumer_timeouts("g", {"consumer.session.timeout.ms": "90000"}, BOUNDS) == (60_000, 5_000)
    assert "outside this broker's bounds" in caplog.text
    narrow = GroupBounds(consumer_min_session_timeout_ms=1, consumer_max_heartbeat_interval_ms=60_000,
                         consumer_session_timeout_ms=30_000, consumer_heartbeat_interval_ms=3_000)
    # clamping left the session not above the heartbeat: Kafka warns and uses them
    with caplog.at_level(logging.WARNING, logger="kafkawire.metadata.group_configs"):
        assert effective_consumer_timeouts("g", {"consumer.session.timeout.ms": "20000",
                                                 "consumer.heartbeat.interval.ms": "20000"}, narrow) == (20_000, 20_000)
    assert "is not greater than consumer.heartbeat.interval.ms" in caplog.text


def test_bounds_come_from_the_nodes_settings():
    config = parse_server_config(
        "process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
        "group.consumer.min.session.timeout.ms=10000\ngroup.consumer.session.timeout.ms=20000\n")
    bounds = GroupBounds.of(config)
    assert bounds == GroupBounds(consumer_session_timeout_ms=20_000, consumer_min_session_timeout_ms=10_000)


def test_streams_bounds_come_from_the_nodes_settings_and_bound_a_groups_configs():
    config = parse_server_config(
        "process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
        "group.streams.min.session.timeout.ms=10000\ngroup.streams.session.timeout.ms=20000\n"
        "group.streams.max.standby.replicas=4\ngroup.streams.num.standby.replicas=1\n")
    bounds = GroupBounds.of(config)
    assert bounds == GroupBounds(streams_session_timeout_ms=20_000, streams_min_session_timeout_ms=10_000,
                                 streams_max_standby_replicas=4, streams_num_standby_replicas=1)
    # what the default bounds refuse, this node's wider ones let in
    validate_group_configs("g", {"streams.session.timeout.ms": "12000", "streams.num.standby.replicas": "4"}, bounds)
    with pytest.raises(ConfigValueError, match="^streams.session.timeout.ms must be greater than or equal to "
                                               "group.streams.min.session.timeout.ms$"):
        validate_group_configs("g", {"streams.session.timeout.ms": "12000"}, BOUNDS)
    with pytest.raises(ConfigValueError, match="^streams.assignment.interval.ms must be less than or equal to "
                                               "group.streams.max.assignment.interval.ms$"):
        validate_group_configs("g", {"streams.assignment.interval.ms": "16000"}, BOUNDS)
    # a group without configs takes the broker's values, the standby count among them
    assert effective_streams_configs("g", None, bounds) == {
        "streams.session.timeout.ms": 20_000, "streams.heartbeat.interval.ms": 5_000,
        "streams.num.standby.replicas": 1, "streams.initial.rebalance.delay.ms": 3_000,
        "streams.assignment.interval.ms": 1_000}


def test_a_streams_coordinator_uses_the_groups_values_clamped_to_its_bounds(caplog):
    own = {"streams.session.timeout.ms": "90000", "streams.heartbeat.interval.ms": "6000",
           "streams.num.standby.replicas": "5", "streams.initial.rebalance.delay.ms": "0",
           "streams.assignment.interval.ms": "20000"}
    with caplog.at_level(logging.WARNING, logger="kafkawire.metadata.group_configs"):
        # set when the bounds were wider: each clamped to this broker's (the delay has no bound)
        assert effective_streams_configs("g", own, BOUNDS) == {
            "streams.session.timeout.ms": 60_000, "streams.heartbeat.interval.ms": 6_000,
            "streams.num.standby.replicas": 2, "streams.initial.rebalance.delay.ms": 0,
            "streams.assignment.interval.ms": 15_000}
    assert "streams.num.standby.replicas=5 is outside this broker's bounds [0, 2]; using 2" in caplog.text


def test_share_bounds_come_from_the_nodes_settings_and_a_groups_configs_are_clamped_to_them(caplog):
    """group.share.* (GroupCoordinatorConfig, ShareGroupConfig): the controller checks a group's
    share configs against them, a broker clamps an older group's to its own (GroupConfig.evaluate)
    and gives a group without configs its own values."""
    config = parse_server_config(
        "process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
        "group.share.min.session.timeout.ms=10000\ngroup.share.session.timeout.ms=20000\n"
        "group.share.max.delivery.count.limit=20\ngroup.share.delivery.count.limit=8\n"
        "group.share.min.record.lock.duration.ms=5000\ngroup.share.record.lock.duration.ms=10000\n"
        "group.share.partition.max.record.locks=300\n")
    bounds = GroupBounds.of(config)
    assert bounds == GroupBounds(share_session_timeout_ms=20_000, share_min_session_timeout_ms=10_000,
                                 share_max_delivery_count_limit=20, share_delivery_count_limit=8,
                                 share_min_record_lock_duration_ms=5_000, share_record_lock_duration_ms=10_000,
                                 share_partition_max_record_locks=300)
    validate_group_configs("g", {"share.session.timeout.ms": "12000", "share.delivery.count.limit": "15"}, bounds)
    with pytest.raises(ConfigValueError, match="^share.delivery.count.limit must be less than or equal to "
                                               "group.share.max.delivery.count.limit$"):
        validate_group_configs("g", {"share.delivery.count.limit": "15"}, BOUNDS)
    with pytest.raises(ConfigValueError, match="^share.record.lock.duration.ms must be greater than or equal to "
                                               "group.share.min.record.lock.duration.ms$"):
        validate_group_configs("g", {"share.record.lock.duration.ms": "6000"}, BOUNDS)
    assert effective_share_configs("g", None, bounds) == {
        "share.heartbeat.interval.ms": 5_000, "share.session.timeout.ms": 20_000,
        "share.record.lock.duration.ms": 10_000, "share.delivery.count.limit": 8,
        "share.partition.max.record.locks": 300}
    own = {"share.session.timeout.ms": "12000", "share.delivery.count.limit": "15",
           "share.record.lock.duration.ms": "6000"}
    with caplog.at_level(logging.WARNING, logger="kafkawire.metadata.group_configs"):
        assert effective_share_configs("g", own, BOUNDS) == {
            "share.heartbeat.interval.ms": 5_000, "share.session.timeout.ms": 45_000,
            "share.record.lock.duration.ms": 15_000, "share.delivery.count.limit": 10,
            "share.partition.max.record.locks": 2_000}
    assert "share.delivery.count.limit=15 is outside this broker's bounds [2, 10]; using 10" in caplog.text
