"""Kafka 4.3's group configs (GroupConfig): the dynamic configs of one group, set with
IncrementalAlterConfigs on a GROUP resource (``kafka-configs --entity-type groups``) and kept
in the metadata log as ConfigRecords of resource type 32.

The controller validates a group's whole set of configs after a change as Kafka's
ControllerConfigurationValidator does (``validate_group_configs``): the name (no default
group), no null values, known names, each value's type and validator, then the broker's bounds
(GroupCoordinatorConfig's min/max settings: ``GroupBounds``); a broker's coordinator reads a
group's effective values, clamped to its own bounds as Kafka's GroupConfig.evaluate does
(``effective_consumer_timeouts``).

kafkawire reads the bounds from server.properties (group.consumer.*, group.share.*,
group.streams.*), as Kafka's controller and brokers do.
"""
from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass

from .config_def import ConfigKey, ConfigValueError, check_range, parse_type
from .topic_config_synonyms import dynamic_broker_configs

__all__ = ["cached_by_configs", "GROUP_CONFIG_KEYS", "BROKER_SYNONYMS", "FROM_BROKER_VALUES", "GroupBounds", "GroupNameError",
           "validate_group_configs", "effective_consumer_timeouts", "effective_assignment_interval",
           "effective_share_configs",
           "effective_streams_configs", "by_duration_ns",
           "with_dynamic_streams_assignment_interval", "BrokerAssignmentInterval"]

log = logging.getLogger(__name__)

CONSUMER_SESSION, CONSUMER_HEARTBEAT = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
CONSUMER_ASSIGNMENT = "consumer.assignment.interval.ms"
STREAMS_SESSION, STREAMS_HEARTBEAT = "streams.session.timeout.ms", "streams.heartbeat.interval.ms"
STREAMS_STANDBYS, STREAMS_INITIAL_DELAY = "streams.num.standby.replicas", "streams.initial.rebalance.delay.ms"
STREAMS_ASSIGNMENT = "streams.assignment.interval.ms"
SHARE_SESSION, SHARE_HEARTBEAT = "share.session.timeout.ms", "share.heartbeat.interval.ms"
SHARE_LOCK_DURATION, SHARE_DELIVERY_LIMIT = "share.record.lock.duration.ms", "share.delivery.count.limit"
SHARE_RECORD_LOCKS, SHARE_ASSIGNMENT = "share.partition.max.record.locks", "share.assignment.interval.ms"


class GroupNameError(ValueError):
    """InvalidRequestException: the resource names no group."""


@dataclass(frozen=True)
class GroupBounds:
    """The broker settings a group's configs are checked against (GroupCoordinatorConfig and
    ShareGroupConfig), with Kafka's defaults."""
    consumer_session_timeout_ms: int = 45_000
    consumer_min_session_timeout_ms: int = 45_000
    consumer_max_session_timeout_ms: int = 60_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_min_heartbeat_interval_ms: int = 5_000
    consumer_max_heartbeat_interval_ms: int = 15_000
    consumer_min_assignment_interval_ms: int = 0
    consumer_max_assignment_interval_ms: int = 15_000
    streams_session_timeout_ms: int = 45_000
    streams_min_session_timeout_ms: int = 45_000
    streams_max_session_timeout_ms: int = 60_000
    streams_heartbeat_interval_ms: int = 5_000
    streams_min_heartbeat_interval_ms: int = 5_000
    streams_max_heartbeat_interval_ms: int = 15_000
    streams_num_standby_replicas: int = 0
    streams_max_standby_replicas: int = 2
    streams_initial_rebalance_delay_ms: int = 3_000
    streams_assignment_interval_ms: int = 1_000
    streams_min_assignment_interval_ms: int = 0
    streams_max_assignment_interval_ms: int = 15_000
    share_session_timeout_ms: int = 45_000
    share_min_session_timeout_ms: int = 45_000
    share_max_session_timeout_ms: int = 60_000
    share_heartbeat_interval_ms: int = 5_000
    share_min_heartbeat_interval_ms: int = 5_000
    share_max_heartbeat_interval_ms: int = 15_000
    share_min_assignment_interval_ms: int = 0
    share_max_assignment_interval_ms: int = 15_000
    share_record_lock_duration_ms: int = 30_000
    share_min_record_lock_duration_ms: int = 15_000
    share_max_record_lock_duration_ms: int = 60_000
    share_delivery_count_limit: int = 5
    share_min_delivery_count_limit: int = 2
    share_max_delivery_count_limit: int = 10
    share_partition_max_record_locks: int = 2_000
    share_min_partition_max_record_locks: int = 100
    share_max_partition_max_record_locks: int = 4_000

    @classmethod
    def of(cls, config) -> GroupBounds:
        """From a node's ServerConfig (its ``group_consumer_*``, ``group_share_*`` and
        ``group_streams_*`` attributes)."""
        return cls(**{field: getattr(config, "group_" + field) for field in cls.__dataclass_fields__})

    def defaults(self) -> dict[str, int]:
        """extractGroupConfigMap: the broker-level values a group's unset configs take."""
        return {CONSUMER_SESSION: self.consumer_session_timeout_ms, CONSUMER_HEARTBEAT: self.consumer_heartbeat_interval_ms,
                SHARE_SESSION: self.share_session_timeout_ms, SHARE_HEARTBEAT: self.share_heartbeat_interval_ms,
                SHARE_LOCK_DURATION: self.share_record_lock_duration_ms,
                SHARE_DELIVERY_LIMIT: self.share_delivery_count_limit,
                SHARE_RECORD_LOCKS: self.share_partition_max_record_locks,
                STREAMS_SESSION: self.streams_session_timeout_ms, STREAMS_HEARTBEAT: self.streams_heartbeat_interval_ms,
                STREAMS_STANDBYS: self.streams_num_standby_replicas,
                STREAMS_INITIAL_DELAY: self.streams_initial_rebalance_delay_ms}


def _int(default: int, at_least: int) -> ConfigKey:
    return ConfigKey("INT", str(default), at_least=at_least)


# GroupConfig's ConfigDef, in its order (the order ConfigDef.parse reports a bad value in).
GROUP_CONFIG_KEYS: dict[str, ConfigKey] = {
    CONSUMER_SESSION: _int(45_000, 1),
    CONSUMER_HEARTBEAT: _int(5_000, 1),
    CONSUMER_ASSIGNMENT: _int(1_000, 0),
    "share.session.timeout.ms": _int(45_000, 1),
    "share.heartbeat.interval.ms": _int(5_000, 1),
    "share.record.lock.duration.ms": _int(30_000, 1_000),
    "share.delivery.count.limit": _int(5, 2),
    "share.partition.max.record.locks": _int(2_000, 100),
    "share.auto.offset.reset": ConfigKey("STRING", "latest"),
    "share.isolation.level": ConfigKey("STRING", "read_uncommitted", one_of=("read_committed", "read_uncommitted")),
    "share.renew.acknowledge.enable": ConfigKey("BOOLEAN", "true"),
    "share.assignment.interval.ms": _int(1_000, 0),
    "streams.session.timeout.ms": _int(45_000, 1),
    "streams.heartbeat.interval.ms": _int(5_000, 1),
    "streams.num.standby.replicas": _int(0, 0),
    "streams.initial.rebalance.delay.ms": _int(3_000, 0),
    "streams.assignment.interval.ms": _int(1_000, 0),
}

# GroupConfig.ALL_GROUP_CONFIG_SYNONYMS: the broker setting each one stands in for (KafkaConfig's
# default of each is the group config's), none for the three share settings without one.
BROKER_SYNONYMS: dict[str, str] = {
    name: "group." + name for name in GROUP_CONFIG_KEYS
    if name not in ("share.auto.offset.reset", "share.isolation.level", "share.renew.acknowledge.enable")}
# GroupCoordinatorConfig.extractGroupConfigMap: the configs whose unset value is the broker's.
FROM_BROKER_VALUES = frozenset(GroupBounds().defaults())

# (config, the GroupBounds fields of its lowest and highest value): validateValues' order, the
# broker settings named in the message are group.share.{min,max}.<the config without "share.">.
_SHARE_BOUNDS = (
    (SHARE_HEARTBEAT, "share_min_heartbeat_interval_ms", "share_max_heartbeat_interval_ms"),
    (SHARE_SESSION, "share_min_session_timeout_ms", "share_max_session_timeout_ms"),
    (SHARE_LOCK_DURATION, "share_min_record_lock_duration_ms", "share_max_record_lock_duration_ms"),
    (SHARE_DELIVERY_LIMIT, "share_min_delivery_count_limit", "share_max_delivery_count_limit"),
    (SHARE_RECORD_LOCKS, "share_min_partition_max_record_locks", "share_max_partition_max_record_locks"),
)


def _share_bound_names(key: str) -> tuple[str, str]:
    rest = key.removeprefix("share.")
    return f"group.share.min.{rest}", f"group.share.max.{rest}"


# ShareGroupAutoOffsetResetStrategy: earliest, latest, or by_duration:<a java.time.Duration text,
# not negative>. Duration.parse: letters in either case, a sign before the whole and before each
# number, a fraction of up to 9 digits on the seconds only, at least one part.
_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?"
                       r"(?:([-+]?)(\d+)(?:[.,](\d{0,9}))?S)?)?", re.IGNORECASE)


def validate_group_configs(name: str, configs: dict[str, str | None], bounds: GroupBounds) -> None:
    """ControllerConfigurationValidator's GROUP case for a group's configs after a change:
    GroupNameError (INVALID_REQUEST) or ConfigValueError (INVALID_CONFIG), with Kafka's messages."""
    if not name:
        raise GroupNameError("Default group resources are not allowed.")
    nulls = [key for key, value in configs.items() if value is None]
    if nulls:
        raise ConfigValueError(f"Null value not supported for group configs: {','.join(nulls)}")
    for key in configs:
        if key not in GROUP_CONFIG_KEYS:
            raise ConfigValueError(f"Unknown group config name: {key}")
    values = {key: int(value) for key, value in bounds.defaults().items()}
    for key, config_key in GROUP_CONFIG_KEYS.items():      # ConfigDef.parse: in definition order
        if key in configs:
            values[key] = parsed = parse_type(key, config_key, configs[key])
            check_range(key, config_key, parsed)
            if key == "share.auto.offset.reset":
                _check_auto_offset_reset(parsed)
        else:
            values.setdefault(key, int(config_key.default) if config_key.type == "INT" else config_key.default)
    _check_bounds(values, configs, bounds)


def _check_auto_offset_reset(value: str) -> None:
    """AutoOffsetResetStrategy.fromString (exact, lower-case names), then the share group's subset."""
    if value in ("earliest", "latest") or by_duration_ns(value) is not None:
        return
    raise ConfigValueError(f"Invalid value {value} for configuration share.auto.offset.reset: Invalid value "
                           f"`{value}` for configuration share.auto.offset.reset. The value must be either "
                           "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")


def by_duration_ns(value: str) -> int | None:
    """The duration of a ``by_duration:<java.time.Duration text>`` share.auto.offset.reset, in
    nanoseconds (as Duration.parse reads it); None for any other value or a negative duration."""
    if not value.startswith("by_duration:"):
        return None
    text = value.removeprefix("by_duration:")
    match = _DURATION.fullmatch(text)
    if match is None or text.upper().endswith("T"):
        return None
    sign, days, hours, minutes, seconds_sign, seconds, fraction = match.groups()
    if days is None and hours is None and minutes is None and seconds is None:
        return None
    total = sum(int(part or 0) * scale for part, scale in ((days, 86_400), (hours, 3_600), (minutes, 60))) * 10**9
    if seconds is not None:
        second_part = int(seconds) * 10**9 + int((fraction or "0").ljust(9, "0"))
        total += -second_part if seconds_sign == "-" else second_part
    total = -total if sign == "-" else total
    return total if total >= 0 else None


def _bounded(key: str, value: int, low, high, low_name, high_name) -> None:
    if low is not None and value < low:
        raise ConfigValueError(f"{key} must be greater than or equal to {low_name}")
    if high is not None and value > high:
        raise ConfigValueError(f"{key} must be less than or equal to {high_name}")


def _check_bounds(values: dict, configs: dict, bounds: GroupBounds) -> None:
    """GroupConfig.validateValues, in its order."""
    b = bounds
    _bounded(CONSUMER_HEARTBEAT, values[CONSUMER_HEARTBEAT], b.consumer_min_heartbeat_interval_ms,
             b.consumer_max_heartbeat_interval_ms, "group.consumer.min.heartbeat.interval.ms",
             "group.consumer.max.heartbeat.interval.ms")
    _bounded(CONSUMER_SESSION, values[CONSUMER_SESSION], b.consumer_min_session_timeout_ms,
             b.consumer_max_session_timeout_ms, "group.consumer.min.session.timeout.ms",
             "group.consumer.max.session.timeout.ms")
    if CONSUMER_ASSIGNMENT in configs:       # validated only when the group sets it (KAFKA-20337)
        _bounded(CONSUMER_ASSIGNMENT, values[CONSUMER_ASSIGNMENT], b.consumer_min_assignment_interval_ms,
                 b.consumer_max_assignment_interval_ms, "group.consumer.min.assignment.interval.ms",
                 "group.consumer.max.assignment.interval.ms")
    for key, low, high in _SHARE_BOUNDS:
        _bounded(key, values[key], getattr(b, low), getattr(b, high), *_share_bound_names(key))
    if SHARE_ASSIGNMENT in configs:
        _bounded(SHARE_ASSIGNMENT, values[SHARE_ASSIGNMENT], b.share_min_assignment_interval_ms,
                 b.share_max_assignment_interval_ms, *_share_bound_names(SHARE_ASSIGNMENT))
    _bounded(STREAMS_HEARTBEAT, values[STREAMS_HEARTBEAT], b.streams_min_heartbeat_interval_ms,
             b.streams_max_heartbeat_interval_ms, "group.streams.min.heartbeat.interval.ms",
             "group.streams.max.heartbeat.interval.ms")
    _bounded(STREAMS_SESSION, values[STREAMS_SESSION], b.streams_min_session_timeout_ms,
             b.streams_max_session_timeout_ms, "group.streams.min.session.timeout.ms",
             "group.streams.max.session.timeout.ms")
    _bounded(STREAMS_STANDBYS, values[STREAMS_STANDBYS], None, b.streams_max_standby_replicas, None,
             "group.streams.max.standby.replicas")
    if STREAMS_ASSIGNMENT in configs:
        _bounded(STREAMS_ASSIGNMENT, values[STREAMS_ASSIGNMENT], b.streams_min_assignment_interval_ms,
                 b.streams_max_assignment_interval_ms, "group.streams.min.assignment.interval.ms",
                 "group.streams.max.assignment.interval.ms")
    for kind in ("consumer", "share", "streams"):
        session, heartbeat = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
        if values[session] <= values[heartbeat]:
            raise ConfigValueError(f"{session} must be greater than {heartbeat}")


def cached_by_configs(cache: dict, group_id: str, configs: dict[str, str], compute):
    """``compute()`` for the group's ``configs``, kept in ``cache`` (group id -> (configs seen,
    value)) until they change: a broker asks at every heartbeat."""
    seen = tuple(sorted(configs.items()))   # a copy: an image may change its dicts in place
    cached = cache.get(group_id)
    if cached is None or cached[0] != seen:
        cached = cache[group_id] = (seen, compute())
    return cached[1]


def effective_consumer_timeouts(group_id: str, configs: dict[str, str] | None,
                                bounds: GroupBounds) -> tuple[int, int]:
    """(session timeout, heartbeat interval) of a consumer group: its own configs, each clamped to
    this broker's bounds (GroupConfig.evaluate, with a WARN for a clamped value, and one when
    clamping left the session not above the heartbeat), else the broker's settings."""
    session, heartbeat = bounds.consumer_session_timeout_ms, bounds.consumer_heartbeat_interval_ms
    if not configs:
        return session, heartbeat
    b = bounds
    own_session = _clamped(group_id, CONSUMER_SESSION, configs.get(CONSUMER_SESSION), session,
                           b.consumer_min_session_timeout_ms, b.consumer_max_session_timeout_ms)
    own_heartbeat = _clamped(group_id, CONSUMER_HEARTBEAT, configs.get(CONSUMER_HEARTBEAT), heartbeat,
                             b.consumer_min_heartbeat_interval_ms, b.consumer_max_heartbeat_interval_ms)
    if own_session <= own_heartbeat:        # Kafka warns and uses them all the same
        log.warning("group %s: the effective %s (%d) is not greater than %s (%d): check that this broker's "
                    "min/max bounds for the session timeout and the heartbeat interval do not overlap",
                    group_id, CONSUMER_SESSION, own_session, CONSUMER_HEARTBEAT, own_heartbeat)
    return own_session, own_heartbeat


def effective_assignment_interval(kind: str, group_id: str, configs: dict[str, str] | None, bounds: GroupBounds,
                                  default: int) -> int:
    """A consumer or share group's (``kind``) interval between target assignments
    (consumerGroupAssignmentIntervalMs, shareGroupAssignmentIntervalMs): its own
    ``<kind>.assignment.interval.ms`` clamped to this broker's bounds (with a WARN), else
    ``default``, the broker's ``group.<kind>.assignment.interval.ms``."""
    key = f"{kind}.assignment.interval.ms"
    return _clamped(group_id, key, (configs or {}).get(key), default,
                    getattr(bounds, f"{kind}_min_assignment_interval_ms"),
                    getattr(bounds, f"{kind}_max_assignment_interval_ms"))


def _clamped(group_id: str, key: str, value: str | None, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        return default           # the controller validated it: only a log older than the rule holds this
    if low <= number <= high:
        return number
    clamped = min(max(number, low), high)
    log.warning("group %s: %s=%d is outside this broker's bounds [%d, %d]; using %d", group_id, key, number,
                low, high, clamped)
    return clamped


def effective_share_configs(group_id: str, configs: dict[str, str] | None, bounds: GroupBounds) -> dict[str, int]:
    """A share group's session timeout, heartbeat interval, record lock duration, delivery count
    limit and record locks per share-partition (by their group config names): its own configs,
    clamped to this broker's bounds as GroupConfig.evaluate does (with a WARN), else the broker's
    ``group.share.*`` settings."""
    b, own = bounds, configs or {}
    defaults = b.defaults()
    values = {key: _clamped(group_id, key, own.get(key), defaults[key], getattr(b, low), getattr(b, high))
              for key, low, high in _SHARE_BOUNDS}
    if (SHARE_SESSION in own or SHARE_HEARTBEAT in own) and values[SHARE_SESSION] <= values[SHARE_HEARTBEAT]:
        log.warning("group %s: the effective %s (%d) is not greater than %s (%d): check that this broker's "
                    "min/max bounds for the session timeout and the heartbeat interval do not overlap",
                    group_id, SHARE_SESSION, values[SHARE_SESSION], SHARE_HEARTBEAT, values[SHARE_HEARTBEAT])
    return values


def effective_streams_configs(group_id: str, configs: dict[str, str] | None, bounds: GroupBounds) -> dict[str, int]:
    """A streams group's session timeout, heartbeat interval, standby count, initial rebalance delay
    and assignment interval (by their group config names): its own configs, clamped to this
    broker's bounds as GroupConfig.evaluate does (the standby count to its maximum only; the delay
    not at all), else the broker's ``group.streams.*`` settings."""
    b, own = bounds, configs or {}
    values = {
        STREAMS_SESSION: _clamped(group_id, STREAMS_SESSION, own.get(STREAMS_SESSION), b.streams_session_timeout_ms,
                                  b.streams_min_session_timeout_ms, b.streams_max_session_timeout_ms),
        STREAMS_HEARTBEAT: _clamped(group_id, STREAMS_HEARTBEAT, own.get(STREAMS_HEARTBEAT),
                                    b.streams_heartbeat_interval_ms, b.streams_min_heartbeat_interval_ms,
                                    b.streams_max_heartbeat_interval_ms),
        STREAMS_STANDBYS: _clamped(group_id, STREAMS_STANDBYS, own.get(STREAMS_STANDBYS),
                                   b.streams_num_standby_replicas, 0, b.streams_max_standby_replicas),
        STREAMS_INITIAL_DELAY: _clamped(group_id, STREAMS_INITIAL_DELAY, own.get(STREAMS_INITIAL_DELAY),
                                        b.streams_initial_rebalance_delay_ms, 0, 2**31 - 1),
        STREAMS_ASSIGNMENT: _clamped(group_id, STREAMS_ASSIGNMENT, own.get(STREAMS_ASSIGNMENT),
                                     b.streams_assignment_interval_ms, b.streams_min_assignment_interval_ms,
                                     b.streams_max_assignment_interval_ms),
    }
    if (STREAMS_SESSION in own or STREAMS_HEARTBEAT in own) and values[STREAMS_SESSION] <= values[STREAMS_HEARTBEAT]:
        log.warning("group %s: the effective %s (%d) is not greater than %s (%d): check that this broker's "
                    "min/max bounds for the session timeout and the heartbeat interval do not overlap",
                    group_id, STREAMS_SESSION, values[STREAMS_SESSION], STREAMS_HEARTBEAT, values[STREAMS_HEARTBEAT])
    return values


def with_dynamic_streams_assignment_interval(bounds: GroupBounds, value: str | None) -> GroupBounds:
    """``bounds`` with a dynamic broker config ``group.streams.assignment.interval.ms`` (``value``:
    this node's, else the cluster default's, else None) in place of the static one, clamped to the
    static min/max with a WARN as GroupCoordinatorConfig.clampDynamicConfigs does. A value that is
    not an int (kafkawire's broker forwards broker configs unchecked) is ignored with a WARN."""
    clamped = _dynamic_interval("group.streams.assignment.interval.ms", value, bounds.streams_assignment_interval_ms,
                                bounds.streams_min_assignment_interval_ms, bounds.streams_max_assignment_interval_ms)
    return dataclasses.replace(bounds, streams_assignment_interval_ms=clamped)


def _dynamic_interval(name: str, value: str | None, static: int, low: int, high: int) -> int:
    if value is None:
        return static
    try:
        number = int(value.strip())
    except ValueError:
        log.warning("ignoring the dynamic %s %r: not an int", name, value)
        return static
    clamped = min(max(number, low), high)
    if clamped != number:
        log.warning("%s=%d is outside this broker's bounds [%d, %d]; using %d", name, number, low, high, clamped)
    return clamped


class BrokerAssignmentInterval:
    """``group.<kind>.assignment.interval.ms`` (consumer or share) as a broker applies it, one of
    GroupCoordinatorConfig's reconfigurable settings: the dynamic broker config of this node, else
    the cluster default's (``kafka-configs --entity-type brokers``), clamped to the static
    ``group.<kind>.{min,max}.assignment.interval.ms`` with a WARN (clampDynamicConfigs), else the
    static setting. ``interval(image)``; worked out again only when the dynamic value changes."""

    def __init__(self, kind: str, config):
        self.name = f"group.{kind}.assignment.interval.ms"
        self.static = getattr(config, f"group_{kind}_assignment_interval_ms")
        self.low = getattr(config, f"group_{kind}_min_assignment_interval_ms")
        self.high = getattr(config, f"group_{kind}_max_assignment_interval_ms")
        self.node = str(config.node_id)
        self._seen: tuple[str | None, int] = (None, self.static)

    def interval(self, image) -> int:
        value = None
        if image is not None:
            value = dynamic_broker_configs(image, self.node).get(self.name)
            if value is None:
                value = dynamic_broker_configs(image, "").get(self.name)
        if value != self._seen[0]:
            self._seen = (value, _dynamic_interval(self.name, value, self.static, self.low, self.high))
        return self._seen[1]
