"""server.properties for a KRaft node: the keys kafkawire reads, with Kafka's names, types and defaults.

``load_server_config(path)`` / ``parse_server_config(text)`` read Java properties syntax (the
JavaProperties parser of kafkawire.storage.state_files) into a frozen ``ServerConfig``.

Types follow Kafka's ConfigDef: INT is a Java int, LONG a Java long, BOOLEAN is "true" or
"false" in any case, LIST is comma-separated with whitespace around commas ignored, STRING is
trimmed. Each default below names the Kafka class that defines it (Kafka 4.x trunk:
QuorumConfig, KRaftConfigs, MetadataLogConfig, SocketServerConfigs, ServerLogConfigs,
ReplicationConfigs). A wrong value raises ConfigError naming the key, the value and the rule;
a key kafkawire does not read is logged, as Kafka's AbstractConfig.logUnused does, not refused.
Cross-key rules are the KRaft subset of KafkaConfig.validateValues.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from kafkawire.storage.state_files import JavaProperties

# The value types and parsers (kafkawire.net.config_values) and the table of keys
# (kafkawire.net.config_keys); the public names are re-exported here, where the modules reading
# server.properties have always found them.
from .config_keys import KNOWN_KEYS, REQUIRED
from .config_listeners import validate_broker_listeners
from .config_values import (CLIENT_TELEMETRY_EXPORTER, DEFAULT_SECURITY_PROTOCOL_MAP, INT_MAX, PROMETHEUS_REPORTER,
                            ConfigError, Endpoint, QuorumVoter, java_int, parse_listeners, parse_security_protocol_map, parse_voters)

__all__ = ["ConfigError", "Endpoint", "QuorumVoter", "ServerConfig", "parse_server_config",
           "load_server_config", "parse_listeners", "parse_voters", "KNOWN_KEYS", "java_int",
           "PROMETHEUS_REPORTER", "CLIENT_TELEMETRY_EXPORTER"]

log = logging.getLogger(__name__)

# Keys that ServerConfig holds in another form (resolved against other keys).
_LISTENER_LIMIT = re.compile(r"^listener\.name\.([^.]+)\.(max\.connections|max\.connection\.creation\.rate)$")
_DERIVED = {"listeners", "advertised.listeners", "listener.security.protocol.map", "inter.broker.listener.name",
            "metadata.log.dir", "log.dirs", "log.dir"}


@dataclass(frozen=True)
class ServerConfig:
    """A KRaft node's server.properties, parsed and checked (``parse_server_config``): one attribute
    per key kafkawire reads (``node_id``, ``process_roles``, ``controller_quorum_voters``,
    listeners, log dirs, timeouts, security), each with Kafka's default.
    """
    node_id: int
    process_roles: tuple[str, ...]
    controller_quorum_voters: tuple[QuorumVoter, ...]
    controller_quorum_bootstrap_servers: tuple[tuple[str, int], ...]
    controller_quorum_auto_join_enable: bool
    controller_quorum_election_timeout_ms: int
    controller_quorum_fetch_timeout_ms: int
    controller_quorum_election_backoff_max_ms: int
    controller_quorum_request_timeout_ms: int
    controller_quorum_retry_backoff_ms: int
    controller_quorum_append_linger_ms: int
    listeners: tuple[Endpoint, ...]
    advertised_listeners: tuple[Endpoint, ...]       # listeners when advertised.listeners is unset
    controller_listener_names: tuple[str, ...]
    listener_security_protocol_map: tuple[tuple[str, str], ...]
    inter_broker_listener_name: str | None             # as set (None: unset); see inter_broker_listener
    security_inter_broker_protocol: str
    metadata_log_dir: str                            # the first log dir when metadata.log.dir is unset
    log_dirs: tuple[str, ...]
    metadata_log_segment_bytes: int
    metadata_log_segment_ms: int
    metadata_max_retention_bytes: int
    metadata_max_retention_ms: int
    metadata_log_max_record_bytes_between_snapshots: int
    metadata_log_max_snapshot_interval_ms: int
    metadata_max_idle_interval_ms: int
    broker_session_timeout_ms: int
    socket_request_max_bytes: int
    connections_max_idle_ms: int
    queued_max_request_bytes: int
    max_connections: int
    max_connections_per_ip: int
    max_connections_per_ip_overrides: tuple[tuple[str, int], ...]
    max_connection_creation_rate: int
    connection_failed_authentication_delay_ms: int
    connections_max_reauth_ms: int      # read per listener and mechanism from ListenerSecurity.max_reauth_ms
    metric_reporters: tuple[str, ...]
    metrics_num_samples: int
    metrics_sample_window_ms: int
    metrics_jmx_include: str            # regular expressions on MBean names (kafkawire.broker.partition_metrics)
    metrics_jmx_exclude: str
    kafkawire_metrics_prometheus_listener: tuple[str | None, int]    # (host, None for every interface; port)
    broker_heartbeat_interval_ms: int = 2000
    unclean_leader_election_interval_ms: int = 300_000
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    auto_create_topics_enable: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    message_max_bytes: int = 1024 * 1024 + 12
    fetch_max_bytes: int = 55 * 1024 * 1024
    max_incremental_fetch_session_cache_slots: int = 1000
    telemetry_max_bytes: int = 1024 * 1024
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    controller_quota_window_num: int = 11
    controller_quota_window_size_seconds: int = 1
    replication_quota_window_num: int = 11
    replication_quota_window_size_seconds: int = 1
    alter_log_dirs_replication_quota_window_num: int = 11
    alter_log_dirs_replication_quota_window_size_seconds: int = 1
    log_segment_bytes: int = 1024 * 1024 * 1024
    log_message_timestamp_type: str = "CreateTime"
    log_message_timestamp_before_max_ms: int = (1 << 63) - 1
    log_message_timestamp_after_max_ms: int = 3_600_000
    compression_type: str = "producer"
    min_insync_replicas: int = 1
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = INT_MAX
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    offset_metadata_max_bytes: int = 4096
    offsets_retention_minutes: int = 7 * 24 * 60
    offsets_retention_check_interval_ms: int = 600_000
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_max_size: int = INT_MAX
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")
    group_consumer_assignment_interval_ms: int = 1000
    group_consumer_migration_policy: str = "bidirectional"
    group_consumer_regex_refresh_interval_ms: int = 600_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_min_assignment_interval_ms: int = 0
    group_consumer_max_assignment_interval_ms: int = 15_000
    group_streams_session_timeout_ms: int = 45_000
    group_streams_min_session_timeout_ms: int = 45_000
    group_streams_max_session_timeout_ms: int = 60_000
    group_streams_heartbeat_interval_ms: int = 5000
    group_streams_min_heartbeat_interval_ms: int = 5000
    group_streams_max_heartbeat_interval_ms: int = 15_000
    group_streams_max_size: int = INT_MAX
    group_streams_num_standby_replicas: int = 0
    group_streams_max_standby_replicas: int = 2
    group_streams_initial_rebalance_delay_ms: int = 3000
    group_streams_assignment_interval_ms: int = 1000
    group_streams_min_assignment_interval_ms: int = 0
    group_streams_max_assignment_interval_ms: int = 15_000
    group_share_session_timeout_ms: int = 45_000
    group_share_min_session_timeout_ms: int = 45_000
    group_share_max_session_timeout_ms: int = 60_000
    group_share_heartbeat_interval_ms: int = 5000
    group_share_min_heartbeat_interval_ms: int = 5000
    group_share_max_heartbeat_interval_ms: int = 15_000
    group_share_max_size: int = 200
    group_share_assignment_interval_ms: int = 1000
    group_share_min_assignment_interval_ms: int = 0
    group_share_max_assignment_interval_ms: int = 15_000
    group_share_initialize_retry_interval_ms: int = 30_000
    group_share_delivery_count_limit: int = 5
    group_share_max_delivery_count_limit: int = 10
    group_share_min_delivery_count_limit: int = 2
    group_share_record_lock_duration_ms: int = 30_000
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    group_share_partition_max_record_locks: int = 2000
    group_share_max_partition_max_record_locks: int = 4000
    group_share_min_partition_max_record_locks: int = 100
    group_share_max_share_sessions: int = 2000
    group_share_assignors: tuple[str, ...] = ("simple",)
    share_fetch_purgatory_purge_interval_requests: int = 1000
    group_share_persister_class_name: str = "org.apache.kafka.server.share.persister.DefaultStatePersister"
    producer_id_expiration_ms: int = 86_400_000
    producer_id_expiration_check_interval_ms: int = 600_000
    transaction_max_timeout_ms: int = 900_000
    transaction_two_phase_commit_enable: bool = False
    unstable_api_versions_enable: bool = False
    transaction_partition_verification_enable: bool = True
    cordoned_log_dirs: tuple[str, ...] = ()          # as written; "*": every log directory (KIP-1066)
    add_partitions_to_txn_retry_backoff_max_ms: int = 100
    add_partitions_to_txn_retry_backoff_ms: int = 20
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_segment_bytes: int = 100 * 1024 * 1024
    transaction_state_log_min_isr: int = 2
    transactional_id_expiration_ms: int = 7 * 24 * 3600 * 1000
    share_coordinator_state_topic_num_partitions: int = 50
    share_coordinator_state_topic_replication_factor: int = 3
    share_coordinator_state_topic_min_isr: int = 2
    share_coordinator_state_topic_segment_bytes: int = 100 * 1024 * 1024
    share_coordinator_snapshot_update_records_per_snapshot: int = 500
    share_coordinator_state_topic_prune_interval_ms: int = 5 * 60 * 1000
    share_coordinator_cold_partition_snapshot_interval_ms: int = 5 * 60 * 1000
    share_coordinator_write_timeout_ms: int = 5000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    kafkawire_gc_freeze_after_ms: int = 50           # 0: never (kafkawire.raft.node.gc_pauses)
    kafkawire_quorum_append_queue_max_ms: int = 40   # 0: no time bound (kafkawire.raft.node.driver_appends)
    log_retention_ms: int | None = None
    log_retention_minutes: int | None = None
    log_retention_hours: int = 168
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300_000
    log_roll_ms: int | None = None
    log_roll_hours: int = 168
    log_roll_jitter_ms: int | None = None
    log_roll_jitter_hours: int = 0
    log_index_size_max_bytes: int = 10 * 1024 * 1024
    log_index_interval_bytes: int = 4096
    log_flush_interval_messages: int = (1 << 63) - 1
    log_flush_interval_ms: int | None = None
    log_flush_scheduler_interval_ms: int = (1 << 63) - 1
    log_segment_delete_delay_ms: int = 60_000
    log_cleanup_policy: tuple[str, ...] = ("delete",)
    log_flush_offset_checkpoint_interval_ms: int = 60_000
    log_flush_start_offset_checkpoint_interval_ms: int = 60_000
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    replica_lag_time_max_ms: int = 30_000
    broker_rack: str | None = None
    replica_selector_class: str | None = None
    log_initial_task_delay_ms: int = 30_000
    log_cleaner_enable: bool = True
    log_cleaner_threads: int = 1
    log_cleaner_backoff_ms: int = 15_000
    log_cleaner_io_max_bytes_per_second: float = 1.7976931348623157e308
    log_cleaner_dedupe_buffer_size: int = 128 * 1024 * 1024
    log_cleaner_io_buffer_size: int = 512 * 1024
    log_cleaner_io_buffer_load_factor: float = 0.9
    log_cleaner_delete_retention_ms: int = 86_400_000
    log_cleaner_min_compaction_lag_ms: int = 0
    log_cleaner_max_compaction_lag_ms: int = (1 << 63) - 1
    log_cleaner_min_cleanable_ratio: float = 0.5
    num_replica_fetchers: int = 1
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_backoff_ms: int = 1000
    replica_socket_timeout_ms: int = 30_000
    offsets_commit_timeout_ms: int = 5000
    delegation_token_secret_key: str | None = None     # None or empty: delegation tokens disabled
    delegation_token_max_lifetime_ms: int = 7 * 24 * 3600 * 1000
    delegation_token_expiry_time_ms: int = 24 * 3600 * 1000
    delegation_token_expiry_check_interval_ms: int = 3_600_000
    request_timeout_ms: int = 30_000
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    unknown_keys: tuple[str, ...] = field(default=())
    # listener.name.<listener>.max.connections / .max.connection.creation.rate: (LISTENER, key, value)
    listener_connection_limits: tuple[tuple[str, str, int], ...] = field(default=())
    # (key, value as written) of the KNOWN_KEYS server.properties sets: Kafka's staticBrokerConfigs,
    # what DescribeConfigs names STATIC_BROKER_CONFIG
    static_settings: tuple[tuple[str, str], ...] = field(default=())
    # every (key, value) of server.properties as written, the keys kafkawire does not read too:
    # Kafka's KafkaConfig.originals, what a dynamic config change is checked against
    # (kafkawire.metadata.dynamic_reconfiguration)
    properties: tuple[tuple[str, str], ...] = field(default=(), compare=False, hash=False, repr=False)
    # Listener security (kafkawire.net.security): listener name -> ListenerSecurity, the
    # ClientSecurity of the raft client (towards the first controller listener) and of a broker's
    # clients towards other brokers (the inter-broker listener), the AuthorizerSettings (None: no
    # authorizer). Resolved at load; a ConfigError found then is kept and raised by the accessors
    # below when the node starts, as Kafka checks these when it builds its listeners.
    listener_security: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    controller_client_security: object = field(default=None, compare=False, hash=False, repr=False)
    inter_broker_client_security: object = field(default=None, compare=False, hash=False, repr=False)
    authorizer: object = field(default=None, compare=False, hash=False, repr=False)

    def security_of(self, listener: str):
        """The listener's ListenerSecurity (None if it is not a listener); raises its ConfigError."""
        return _raise_deferred(self.listener_security.get(listener.upper()))

    def raft_client_security(self):
        """The ClientSecurity of the node's connections to controllers; raises its ConfigError."""
        return _raise_deferred(self.controller_client_security)

    def inter_broker_security(self):
        """The ClientSecurity of a broker's connections to other brokers (None: no inter-broker
        listener, or not a broker); raises its ConfigError."""
        return _raise_deferred(self.inter_broker_client_security)

    def authorizer_settings(self):
        """AuthorizerSettings, or None without authorizer.class.name; raises its ConfigError."""
        return _raise_deferred(self.authorizer)

    @property
    def prometheus_listener(self) -> tuple[str | None, int] | None:
        """(host, port) of the Prometheus endpoint, or None unless metric.reporters names
        kafkawire.metrics.PrometheusReporter."""
        if PROMETHEUS_REPORTER not in self.metric_reporters:
            return None
        return self.kafkawire_metrics_prometheus_listener

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    @property
    def is_broker(self) -> bool:
        return "broker" in self.process_roles

    @property
    def inter_broker_listener(self) -> str | None:
        """The listener brokers connect to each other on (Kafka's interBrokerListenerName):
        ``inter.broker.listener.name``, else the listener named as ``security.inter.broker.protocol``
        (parse_server_config checked it is a broker listener); None on a controller-only node."""
        if not self.is_broker:
            return None
        return self.inter_broker_listener_name or self.security_inter_broker_protocol

    def listener(self, name: str) -> Endpoint | None:
        return next((e for e in self.listeners if e.listener_name == name.upper()), None)

    @property
    def controller_endpoints(self) -> tuple[Endpoint, ...]:
        """The controller listeners as advertised (KafkaConfig.effectiveAdvertisedControllerListeners)."""
        advertised = {e.listener_name: e for e in self.advertised_listeners}
        plain = {e.listener_name: e for e in self.listeners}
        return tuple(advertised.get(n) or plain[n] for n in self.controller_listener_names
                     if n in advertised or n in plain)

    @property
    def all_log_dirs(self) -> tuple[str, ...]:
        """log.dirs plus metadata.log.dir, sorted (StorageTool.configToLogDirectories)."""
        return tuple(sorted(set(self.log_dirs) | {self.metadata_log_dir}))


def load_server_config(path) -> ServerConfig:
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except OSError as e:
        raise ConfigError("config file", str(path), f"cannot be read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ConfigError("config file", str(path), f"is not UTF-8 (byte {e.start})") from None
    return parse_server_config(text)


def parse_server_config(text: str) -> ServerConfig:
    """Parse server.properties text into a ServerConfig. Raises ConfigError, naming the key and
    Kafka's reason, for a value Kafka would refuse or a required key that is missing.
    """
    try:
        props = JavaProperties.parse(text).items
    except ValueError as e:
        raise ConfigError("config file", None, f"is not valid Java properties syntax: {e}") from None
    from kafkawire.net import security      # lazy: a cycle (security raises this module's ConfigError)
    limits = _listener_connection_limits(props)
    unknown = tuple(k for k in props if k not in KNOWN_KEYS and not security.is_security_key(k)
                    and not _LISTENER_LIMIT.match(k))
    if unknown:
        # Kafka's AbstractConfig.logUnused wording, one line a key; kafkawire reads only KNOWN_KEYS.
        for key in unknown:
            log.warning("The configuration '%s' was supplied but isn't a known config.", key)

    raw, values = {}, {}
    for key in KNOWN_KEYS.values():        # in table order, so the first bad key is the one reported
        if key.name in props:
            raw[key.name] = props[key.name]
        elif key.default is REQUIRED:
            raise ConfigError(key.name, None, "is required (no default) in KRaft mode")
        else:
            raw[key.name] = key.default
        if key.parse is not None and raw[key.name] is not None:
            values[key.name] = key.parse(key.name, raw[key.name])

    controller_names = values["controller.listener.names"]
    explicit_map = "listener.security.protocol.map" in values
    if explicit_map:
        protocols = values["listener.security.protocol.map"]
    else:
        protocols = parse_security_protocol_map("listener.security.protocol.map", DEFAULT_SECURITY_PROTOCOL_MAP)
        if not _names_secured_listener(controller_names, raw["listeners"]):
            # Kafka maps controller listeners to PLAINTEXT without an explicit map only when no
            # listener is named for SSL or SASL (AbstractKafkaConfig.effectiveListenerSecurityProtocolMap):
            # a secured cluster must say what its controller listener's protocol is.
            for name in controller_names:
                protocols.setdefault(name, "PLAINTEXT")
    listeners = parse_listeners("listeners", raw["listeners"], protocols)
    advertised = (parse_listeners("advertised.listeners", raw["advertised.listeners"], protocols)
                  if raw["advertised.listeners"] is not None else listeners)
    log_dirs = values.get("log.dirs") or values["log.dir"]

    # Keys whose parsed value is the field as is: the field is the key with dots as underscores.
    plain = {key.name.replace(".", "_"): values.get(key.name) for key in KNOWN_KEYS.values() if key.name not in _DERIVED}
    config = ServerConfig(
        **plain,
        listeners=listeners,
        advertised_listeners=advertised,
        listener_security_protocol_map=tuple(protocols.items()),
        inter_broker_listener_name=values.get("inter.broker.listener.name"),
        metadata_log_dir=values.get("metadata.log.dir") or log_dirs[0],
        log_dirs=log_dirs,
        unknown_keys=unknown,
        listener_connection_limits=limits,
        static_settings=tuple((k, v) for k, v in props.items() if k in KNOWN_KEYS),
        properties=tuple(props.items()),
        listener_security={e.listener_name: _deferred(security.resolve_listener_security, props, e.listener_name,
                                                      e.security_protocol)
                           for e in listeners},
        authorizer=_deferred(security.authorizer_settings, props),
    )
    _validate(config, raw)
    return security.with_client_security(config, props)


def _listener_connection_limits(props: dict) -> tuple[tuple[str, str, int], ...]:
    """The listener-prefixed connection limits (Kafka's ListenerConnectionQuota): INT atLeast(0),
    as their broker-wide keys; the listener name as Kafka normalises it (upper case)."""
    limits = []
    for key, value in props.items():
        m = _LISTENER_LIMIT.match(key)
        if m:
            limits.append((m.group(1).upper(), m.group(2), KNOWN_KEYS[m.group(2)].parse(key, value)))
    return tuple(limits)


def _deferred(resolve, *args):
    """``resolve(*args)``, or the ConfigError it raised (kept for when the node starts)."""
    try:
        return resolve(*args)
    except ConfigError as exc:
        return exc


def _raise_deferred(value):
    if isinstance(value, ConfigError):
        raise value
    return value


# (key, bound key, side): GroupCoordinatorConfig's requires, in its order. "min": key >= bound;
# "max": key <= bound; "less": key < bound.
_GROUP_BOUNDS = (
    ("group.consumer.max.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "min"),
    ("group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "min"),
    ("group.consumer.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", "max"),
    ("group.consumer.max.session.timeout.ms", "group.consumer.min.session.timeout.ms", "min"),
    ("group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "min"),
    ("group.consumer.session.timeout.ms", "group.consumer.max.session.timeout.ms", "max"),
    ("group.consumer.max.assignment.interval.ms", "group.consumer.min.assignment.interval.ms", "min"),
    ("group.consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms", "min"),
    ("group.consumer.assignment.interval.ms", "group.consumer.max.assignment.interval.ms", "max"),
    ("group.consumer.heartbeat.interval.ms", "group.consumer.session.timeout.ms", "less"),
    ("group.share.max.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "min"),
    ("group.share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "min"),
    ("group.share.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms", "max"),
    ("group.share.max.session.timeout.ms", "group.share.min.session.timeout.ms", "min"),
    ("group.share.session.timeout.ms", "group.share.min.session.timeout.ms", "min"),
    ("group.share.session.timeout.ms", "group.share.max.session.timeout.ms", "max"),
    ("group.share.heartbeat.interval.ms", "group.share.session.timeout.ms", "less"),
    ("group.share.max.assignment.interval.ms", "group.share.min.assignment.interval.ms", "min"),
    ("group.share.assignment.interval.ms", "group.share.min.assignment.interval.ms", "min"),
    ("group.share.assignment.interval.ms", "group.share.max.assignment.interval.ms", "max"),
    ("group.streams.max.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "min"),
    ("group.streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "min"),
    ("group.streams.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms", "max"),
    ("group.streams.max.session.timeout.ms", "group.streams.min.session.timeout.ms", "min"),
    ("group.streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "min"),
    ("group.streams.session.timeout.ms", "group.streams.max.session.timeout.ms", "max"),
    ("group.streams.heartbeat.interval.ms", "group.streams.session.timeout.ms", "less"),
    ("group.streams.max.assignment.interval.ms", "group.streams.min.assignment.interval.ms", "min"),
    ("group.streams.assignment.interval.ms", "group.streams.min.assignment.interval.ms", "min"),
    ("group.streams.assignment.interval.ms", "group.streams.max.assignment.interval.ms", "max"),
    ("group.streams.num.standby.replicas", "group.streams.max.standby.replicas", "max"),
    # ShareGroupConfig.validate (KafkaConfig makes it after GroupCoordinatorConfig)
    ("group.share.max.delivery.count.limit", "group.share.delivery.count.limit", "min"),
    ("group.share.delivery.count.limit", "group.share.min.delivery.count.limit", "min"),
    ("group.share.max.partition.max.record.locks", "group.share.partition.max.record.locks", "min"),
    ("group.share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "min"),
    ("group.share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "min"),
    ("group.share.max.record.lock.duration.ms", "group.share.record.lock.duration.ms", "min"),
    ("group.share.max.share.sessions", "group.share.max.size", "min"),
)


def _validate_group_bounds(c: ServerConfig, raw: dict) -> None:
    def value(key):
        return getattr(c, key.replace(".", "_"))
    for key, bound, side in _GROUP_BOUNDS:
        if side == "min" and value(key) < value(bound):
            raise ConfigError(key, raw[key], f"must be greater than or equal to {bound}")
        if side == "max" and value(key) > value(bound):
            raise ConfigError(key, raw[key], f"must be less than or equal to {bound}")
        if side == "less" and value(key) >= value(bound):
            raise ConfigError(key, raw[key], f"must be less than {bound}")


_SECURED_PROTOCOL_NAMES = ("SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _names_secured_listener(controller_names, raw_listeners) -> bool:
    """Whether a controller listener name, or a listener's name in `listeners`, is SSL or SASL_*."""
    listener_names = [entry.split(":", 1)[0].strip().upper() for entry in (raw_listeners or "").split(",")
                      if entry.strip()]
    return any(name in _SECURED_PROTOCOL_NAMES for name in [*controller_names, *listener_names])


def _validate(c: ServerConfig, raw: dict) -> None:
    """The KRaft rules of KafkaConfig.validateValues that involve more than one key."""
    _validate_group_bounds(c, raw)
    if c.log_roll_jitter_ms is not None and c.log_roll_jitter_ms < 0:
        raise ConfigError("log.roll.jitter.ms", raw["log.roll.jitter.ms"], "must be greater than or equal to 0")
    if c.replica_fetch_wait_max_ms > c.replica_socket_timeout_ms:
        raise ConfigError("replica.socket.timeout.ms", raw["replica.socket.timeout.ms"],
                          "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent "
                          "unnecessary socket timeouts")
    names = [e.listener_name for e in c.listeners]
    if len(set(names)) != len(names):
        raise ConfigError("listeners", raw["listeners"], "must give each listener a different name")
    ports = {}
    for e in c.listeners:
        if e.port and (e.port, ":" in (e.host or "")) in ports:
            raise ConfigError("listeners", raw["listeners"], f"must give each listener a different port "
                                                             f"({e.port} is used twice)")
        ports[(e.port, ":" in (e.host or ""))] = e
    for e in c.advertised_listeners:
        if e.host == "0.0.0.0":
            raise ConfigError("advertised.listeners", raw["advertised.listeners"] or raw["listeners"],
                              "cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.")
    if c.connections_max_idle_ms >= 0 and c.connection_failed_authentication_delay_ms >= c.connections_max_idle_ms:
        raise ConfigError("connection.failed.authentication.delay.ms", raw["connection.failed.authentication.delay.ms"],
                          f"should always be less than connections.max.idle.ms={c.connections_max_idle_ms} to "
                          f"prevent failed authentication responses from timing out")
    if not c.controller_quorum_voters and not c.controller_quorum_bootstrap_servers:
        raise ConfigError("controller.quorum.voters", raw["controller.quorum.voters"],
                          "is empty and so is controller.quorum.bootstrap.servers: one of them must name "
                          "the controllers")
    in_listeners = [n for n in c.controller_listener_names if n in names]
    if c.is_controller:
        if c.controller_quorum_voters and c.node_id not in {v.node_id for v in c.controller_quorum_voters}:
            raise ConfigError("controller.quorum.voters", raw["controller.quorum.voters"],
                              f"must include this controller's node.id {c.node_id} "
                              f"(process.roles contains 'controller')")
        if not in_listeners:
            raise ConfigError("controller.listener.names", raw["controller.listener.names"],
                              "must contain at least one value appearing in the 'listeners' configuration "
                              "when running the KRaft controller role")
        if not c.is_broker:
            extra = [n for n in names if n not in c.controller_listener_names]
            if extra:
                raise ConfigError("listeners", raw["listeners"],
                                  f"must only contain KRaft controller listeners from controller.listener.names "
                                  f"when process.roles=controller; {', '.join(extra)} is not one")
    else:
        _validate_broker_only(c, raw, in_listeners)
    validate_broker_listeners(c, raw)
    if c.is_broker:
        _validate_cordoned_log_dirs(c, raw)


def _validate_cordoned_log_dirs(c: ServerConfig, raw: dict) -> None:
    """KafkaConfig.validateCordonedLogDirs (a node with the broker role), its messages."""
    cordoned = c.cordoned_log_dirs
    if "*" in cordoned and len(cordoned) != 1:
        raise ConfigError("cordoned.log.dirs", raw["cordoned.log.dirs"],
                          "requirement failed: When cordoned.log.dirs is set to *, it must not contain other values")
    missing = [d for d in cordoned if d != "*" and d not in c.log_dirs]
    if missing:
        raise ConfigError("cordoned.log.dirs", raw["cordoned.log.dirs"],
                          f"requirement failed: All entries in cordoned.log.dirs must be present in log.dirs or "
                          f"log.dir. Missing entries : {', '.join(missing)}")


def _validate_broker_only(c: ServerConfig, raw: dict, in_listeners: list[str]) -> None:
    """KafkaConfig.validateValues for process.roles=broker, in Kafka's order and with its messages."""
    voter_ids = sorted(v.node_id for v in c.controller_quorum_voters)
    if c.node_id in voter_ids:
        # Kafka prints voterIds.asScala.toSet: Scala's Set(...) up to four ids, a HashSet(...) beyond
        # (whose hash order is not reproduced: the ids come sorted, as a HashMap's small keys iterate).
        scala_set = "Set" if len(voter_ids) <= 4 else "HashSet"
        raise ConfigError("controller.quorum.voters", raw["controller.quorum.voters"],
                          f"If process.roles contains just the 'broker' role, the node id {c.node_id} must not be "
                          f"included in the set of voters controller.quorum.voters="
                          f"{scala_set}({', '.join(map(str, voter_ids))})")
    if in_listeners:
        raise ConfigError("controller.listener.names", raw["controller.listener.names"],
                          "must not contain a value appearing in the 'listeners' configuration when running "
                          "KRaft with just the broker role")
    protocols = dict(c.listener_security_protocol_map)
    for name in c.controller_listener_names:
        if name not in protocols:
            raise ConfigError("controller.listener.names", raw["controller.listener.names"],
                              f"Controller listener with name {name} defined in controller.listener.names not found "
                              f"in listener.security.protocol.map  (an explicit security mapping for each controller "
                              f"listener is required if listener.security.protocol.map is non-empty, or if there are "
                              f"security protocols other than PLAINTEXT in use)")
    if c.controller_quorum_auto_join_enable:
        raise ConfigError("controller.quorum.auto.join.enable", raw["controller.quorum.auto.join.enable"],
                          "is only supported when process.roles contains the 'controller' role")
    if len(c.controller_listener_names) > 1:
        log.warning("controller.listener.names has multiple entries; only the first will be used since "
                    "process.roles=broker: [%s]", ", ".join(c.controller_listener_names))
